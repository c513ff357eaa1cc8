"""The HTML report: what it reads from an output directory, what it embeds, and `alternator report`.

The page itself is tested in a real browser in tests/test_report_browser.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.cli import main
from referee.outputs.report import (
    ReportError,
    build_report,
    decode_chunks,
    game_detail,
    load_run,
    los,
    summary_data,
    write_report,
)
from referee.stats.standings import ScoredGame, compute_standings
from tests.report_games import synthesize_tournament


def embedded(page: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary and the game lines a report page carries."""
    summary = re.search(r'<script type="application/json" id="summary">(.*?)</script>', page, re.S)
    games = re.search(r'<script type="text/plain" id="game-data"[^>]*>(.*?)</script>', page, re.S)
    assert summary is not None and games is not None
    return json.loads(summary.group(1)), decode_chunks(games.group(1))


def test_a_tournament_report_embeds_standings_and_every_game(tmp_path: Path) -> None:
    records = synthesize_tournament(tmp_path, 40, seed=3)
    page = build_report(load_run(tmp_path))
    summary, lines = embedded(page)
    assert summary["kind"] == "tournament"
    assert len(lines) == len(summary["games"]) == 40
    expected = compute_standings(
        [ScoredGame(r.black.name, r.white.name, r.result, r.termination) for r in records],
        ["alpha", "beta", "gamma", "delta"],
    )
    rows = summary["standings"]["rows"]
    assert [(r["name"], r["w"], r["d"], r["l"], r["points"]) for r in rows] == [
        (b.name, b.wins, b.draws, b.losses, b.points) for b in expected.bots
    ]
    forfeits = sum(1 for r in records if r.termination.is_forfeit)
    assert forfeits > 0  # the synthetic games include forfeits, so the losses by kind are exercised
    assert sum(sum(r["lossKinds"].values()) for r in rows) == sum(b.losses for b in expected.bots)
    # Each game's line replays to the record's final position with the engine.
    for record, line in zip(records, lines, strict=True):
        assert line["m"] == " ".join(m.move for m in record.moves)
        assert line["x"] == str(record.termination)


def test_nothing_in_the_data_can_end_the_script_element(tmp_path: Path) -> None:
    records = synthesize_tournament(tmp_path, 60, seed=5)
    assert any("<boom>" in line for r in records for line in r.stderr_tail)
    page = build_report(load_run(tmp_path))
    # The only </script> tags are the four the page is made of.
    assert page.count("</script>") == 4
    assert "<boom>" not in page
    _, lines = embedded(page)
    assert any("<boom> & done" in " ".join(line["tail"]) for line in lines)


def test_the_page_has_no_external_reference(tmp_path: Path) -> None:
    synthesize_tournament(tmp_path, 5)
    page = build_report(load_run(tmp_path))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "default-src 'none'" in page  # the page forbids itself any request


def test_a_match_report_follows_match_json_and_draws_the_sprt(tmp_path: Path) -> None:
    records = synthesize_tournament(tmp_path / "src", 8, seed=2, bots=("new", "base"))
    for number, record in enumerate(records, start=1):
        (tmp_path / f"game-{number:03d}.json").write_text(record.model_dump_json())
    sprt = {
        "elo0": 0,
        "elo1": 5,
        "alpha": 0.05,
        "beta": 0.05,
        "llr": 0.1,
        "lower_bound": -2.94,
        "upper_bound": 2.94,
        "verdict": None,
    }
    match = {"first": "new", "second": "base", "sprt": sprt, "records": [f"game-{n:03d}.json" for n in range(1, 9)]}
    (tmp_path / "match.json").write_text(json.dumps(match))
    summary = summary_data(load_run(tmp_path))
    assert summary["kind"] == "match"
    assert summary["bots"] == ["new", "base"]
    h2h = summary["headToHead"]
    assert len(h2h["llrCurve"]) == h2h["llrAt"][-1] == 4  # one LLR per finished pair
    assert h2h["sprt"]["upper_bound"] == pytest.approx(2.944, abs=1e-3)


def test_a_torn_line_is_left_out_and_named(tmp_path: Path) -> None:
    synthesize_tournament(tmp_path, 3)
    with (tmp_path / "games.jsonl").open("a") as file:
        file.write('{"record_version": 1, "game_id": "g9')  # a killed writer's half line
    run = load_run(tmp_path)
    assert len(list(run.records())) == 3
    assert run.errors == []  # a torn last line is no game and no problem: a killed writer's half line
    with (tmp_path / "games.jsonl").open("a") as file:
        file.write('"}\n{"game_id": "damaged"}\n')
    run = load_run(tmp_path)
    assert len(list(run.records())) == 3
    assert len(run.errors) == 2 and "games.jsonl line 4" in run.errors[0] and "games.jsonl line 5" in run.errors[1]


def test_los() -> None:
    assert los(0, 0) is None
    assert los(5, 5) == pytest.approx(0.5)
    assert los(10, 0) == pytest.approx(0.9992, abs=1e-4)
    assert los(0, 10) == pytest.approx(1 - 0.9992, abs=1e-4)


def test_game_detail_is_compact_and_complete(tmp_path: Path) -> None:
    record = synthesize_tournament(tmp_path, 1, seed=9)[0]
    detail = game_detail(7, record)
    assert detail["n"] == 7
    assert len(detail["t"]) == len(record.moves) == len(detail["c"])
    assert detail["t"][0] == round(record.moves[0].elapsed_ms * 10)
    assert detail["bs"] == record.black_score and detail["ws"] == record.white_score


def test_a_viewer_line_holds_each_move_s_figures_in_its_own_units_and_none_where_none_was_measured(
    tmp_path: Path,
) -> None:
    from referee.outputs.viewerline import game_line

    record = synthesize_tournament(tmp_path, 1, seed=9)[0]
    first, second, third = record.moves[:3]
    moves = [
        first.model_copy(update={"elapsed_ms": 12.34, "cpu_ms": 1.25, "latency_ms": 0.0123, "infos": []}),
        second.model_copy(
            update={"elapsed_ms": 0.05, "cpu_ms": None, "latency_ms": None, "infos": [{"depth": 1}, {"depth": 2}]}
        ),
        third.model_copy(update={"elapsed_ms": 7.0, "cpu_ms": 0.0, "latency_ms": 2.0, "infos_dropped": 3}),
    ]
    line = game_line(record.model_copy(update={"moves": moves}))
    assert line["m"] == " ".join(move.move for move in moves)
    assert line["c"] == "".join("b" if move.color == "black" else "w" for move in moves)
    assert line["t"] == [123, 0, 70]  # tenths of a millisecond
    assert line["u"] == [12, None, 0] and line["lt"] == [12, None, 2000]  # the lag in microseconds
    assert line["i"][0] == [1, {"depth": 2}, 2]  # the last info of the second move, of two sent
    assert len(line["i"]) == 1 + bool(third.infos)
    unmeasured = [move.model_copy(update={"cpu_ms": None, "latency_ms": None}) for move in moves]
    line = game_line(record.model_copy(update={"moves": unmeasured}))
    assert line["u"] is None and line["lt"] is None


def test_the_tables_read_a_line_as_json_does_but_for_its_infos(tmp_path: Path) -> None:
    from referee.outputs.viewerline import figures_of, line_text

    record = synthesize_tournament(tmp_path, 1, seed=9)[0]
    whole = json.loads(line_text(record))
    assert whole["i"] and figures_of(line_text(record)) == {key: value for key, value in whole.items() if key != "i"}
    # An info that holds the keys that follow the infos: the line is cut where its own keys are, or parsed whole.
    moves = [move.model_copy(update={"infos": [{"pv": ["a1"], "r": "x", "i": [1]}]}) for move in record.moves]
    odd = line_text(record.model_copy(update={"moves": moves}))
    assert {k: v for k, v in figures_of(odd).items() if k != "i"} == {
        k: v for k, v in json.loads(odd).items() if k != "i"
    }
    reordered = json.dumps({"r": whole["r"], **whole})  # laid out otherwise: parsed whole
    assert figures_of(reordered) == json.loads(reordered)


def test_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no such directory"):
        load_run(tmp_path / "missing")
    with pytest.raises(ReportError, match=r"neither run\.db nor games\.jsonl"):
        load_run(tmp_path)


def test_report_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    synthesize_tournament(tmp_path, 12)
    assert main(["report", str(tmp_path)]) == 0
    assert (tmp_path / "report.html").stat().st_size > 10_000
    assert "report: " in capsys.readouterr().out
    target = tmp_path / "elsewhere" / "r.html"
    assert main(["report", str(tmp_path), "-o", str(target)]) == 0
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such directory" in err


def test_write_report_refuses_an_unwritable_target(tmp_path: Path) -> None:
    synthesize_tournament(tmp_path, 2)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises((ReportError, OSError)):
        write_report(tmp_path, blocker / "report.html")


def run_arena(command: str, *bots: str, out: Path) -> subprocess.CompletedProcess[str]:
    """`alternator COMMAND BOTS...` as a user runs it: two games, one at a time, into `out`."""
    argv = [sys.executable, "-m", "referee", command, *bots, "--games", "2", "--concurrency", "1", "--out", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def test_a_real_match_writes_its_report_and_live_feed(tmp_path: Path) -> None:
    out = tmp_path / "m"
    done = run_arena("match", "--black", "random", "--white", "greedy", out=out)
    assert done.returncode == 0, done.stderr
    assert f"report: {out / 'report.html'}" in done.stdout
    _, lines = embedded((out / "report.html").read_text())
    assert len(lines) == 2
    records = list(load_run(out).records())  # from the database
    feed = [json.loads(line) for line in (out / "live.jsonl").read_text().splitlines()]
    kinds = [e["type"] for e in feed]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("game_started") == kinds.count("game_finished") == 2
    # Games may run side by side: each game's moves, in order, are its record's.
    for record in records:
        moves = [e["move"] for e in feed if e["type"] == "move" and e["id"] == record.game_id]
        assert moves == [m.move for m in record.moves]


def test_the_feed_follows_a_runners_events_and_the_live_state_follows_the_feed(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from protocol.messages import TimeControl
    from referee.outputs.livefeed import LiveFeed
    from referee.outputs.serve import LiveState

    record = synthesize_tournament(tmp_path / "src", 1, seed=4)[0]
    feed = LiveFeed(tmp_path)
    state = LiveState(tmp_path)
    control = TimeControl(base_ms=10_000, increment_ms=100)
    feed.on_event(SimpleNamespace(type="run_started", kind="match", width=8, height=8, komi=3.5, time_control=control))
    feed.on_event(SimpleNamespace(type="game_started", game_id="g1", black="alpha", white="beta", opening=[]))
    game = SimpleNamespace(game_id="g1")
    feed.on_moves(game, list(zip(record.moves[:3], range(1, 4), strict=True)))
    feed.on_moves(game, list(zip(record.moves[3:5], range(4, 6), strict=True)))  # a batch at a time
    feed.flush()  # moves go out in batches: at most 50 ms after the last write, or at the runner's tick
    state.read_feed()
    assert state.kind == "match"  # the page says what it follows before match.json exists
    state.load()
    assert state.summary["kind"] == "match" and state.summary["games"] == []
    live = state.live["g1"]
    assert live["m"].split() == [m.move for m in record.moves[:5]]
    assert live["tc"] == "10+0.1" and live["k2"] == [m.clock_ms for m in record.moves[:5]]
    feed.on_moves(game, [(move, ply) for ply, move in enumerate(record.moves[5:], start=6)])
    feed.flush()
    state.read_feed()
    assert len(state.live["g1"]["t"]) == len(record.moves)
    feed.on_event(SimpleNamespace(type="game_finished", game_id="g1"))
    state.read_feed()
    assert state.live == {}
    # A busy host holds the run back: the page shows the runner's status line until the host is calm again.
    status = "host busy: 2 → 1 game at once; paused 3 s (at most 30 min); CPU pressure 48 %"
    busy = SimpleNamespace(type="host_busy", games_at_once=1, concurrency=2, paused=True, status=status)
    feed.on_event(busy)
    state.read_feed()
    state.load()
    assert state.host == status and state.summary["host"] == status
    feed.on_event(SimpleNamespace(type="host_busy", games_at_once=2, concurrency=2, paused=False, status="calm"))
    state.read_feed()
    state.load()
    assert state.host == "" and state.summary["host"] == ""
    feed.on_event(SimpleNamespace(type="game_started", game_id="g2", black="alpha", white="beta", opening=["d5d4"]))
    feed.on_event(SimpleNamespace(type="run_finished"))  # a run that ends takes its games with it
    feed.close()
    state.read_feed()
    assert state.live == {}
    # A half-written line waits for the rest.
    with (tmp_path / "live.jsonl").open("a") as file:
        file.write('{"type": "game_started", "id": "g3", "b": "x", "w": "y", "W": 8, "H": 8, "k": 3.5')
    state.read_feed()
    assert state.live == {}
    with (tmp_path / "live.jsonl").open("a") as file:
        file.write("}\n")
    state.read_feed()
    assert list(state.live) == ["g3"]
    # A new run (or a resumed one) starts the feed afresh: the live view forgets the old run's games.
    again = LiveFeed(tmp_path)
    again.run_started("tournament")
    again.close()
    assert (tmp_path / "live.jsonl").read_text().count("\n") == 1
    state.read_feed()
    assert state.live == {}


def test_cpu_and_latency_figures_where_records_carry_them(tmp_path: Path) -> None:
    records = synthesize_tournament(tmp_path, 4, bots=("alpha", "beta"))
    # Newer records carry these fields; set them the way a record read from such a file would have them.
    for record in records:
        object.__setattr__(record.black, "cpu_ms", 1500.0)
        object.__setattr__(record.black, "off_turn_cpu_ms", 250.0)
        for move in record.moves:
            object.__setattr__(move, "cpu_ms", 2.5)
            object.__setattr__(move, "latency_ms", 0.125)
    with (tmp_path / "games.jsonl").open("w") as file:
        file.writelines(record.model_dump_json() + "\n" for record in records)
    rows = {row["name"]: row for row in summary_data(load_run(tmp_path))["standings"]["rows"]}
    blacks = [r.black.name for r in records]
    assert rows["alpha"]["cpuS"] == 1.5 * blacks.count("alpha")
    assert rows["alpha"]["offCpuS"] == 0.25 * blacks.count("alpha")
    assert rows["alpha"]["lagMs"] == 0.125
    detail = game_detail(1, records[0])
    assert detail["u"] == [25] * len(records[0].moves)
    assert detail["lt"] == [125] * len(records[0].moves)  # microseconds
    plain = synthesize_tournament(tmp_path / "plain", 2)
    assert game_detail(1, plain[0])["u"] is None
    assert summary_data(load_run(tmp_path / "plain"))["standings"]["rows"][0]["cpuS"] is None


def test_a_match_with_games_jsonl_and_its_sprt_in_statistics(tmp_path: Path) -> None:
    from referee.stats.sprt import SprtParameters, pentanomial, sprt_status

    records = synthesize_tournament(tmp_path, 10, seed=6, bots=("new", "base"))
    sprt = {"elo0": 0, "elo1": 10, "alpha": 0.05, "beta": 0.05, "verdict": None}
    (tmp_path / "match.json").write_text(json.dumps({"first": "new", "second": "base", "statistics": {"sprt": sprt}}))
    run = load_run(tmp_path)
    assert run.kind == "match" and run.bots == ["new", "base"] and len(list(run.records())) == 10
    data = summary_data(run)["headToHead"]
    points = [
        {"1-0": 1.0, "0-1": 0.0}.get(r.result, 0.5)
        if r.black.name == "new"
        else {"1-0": 0.0, "0-1": 1.0}.get(r.result, 0.5)
        for r in records
    ]
    parameters = SprtParameters(elo0=0, elo1=10, alpha=0.05, beta=0.05)
    assert len(data["llrCurve"]) == 5
    assert data["llrCurve"][-1] == pytest.approx(sprt_status(parameters, pentanomial(points)).llr, abs=1e-4)
    assert data["llrCurve"][1] == pytest.approx(sprt_status(parameters, pentanomial(points[:4])).llr, abs=1e-4)


def test_a_real_tournament_writes_its_report_and_live_feed(tmp_path: Path) -> None:
    out = tmp_path / "t"
    done = run_arena("tournament", "--bot", "random", "--bot", "greedy", out=out)
    assert done.returncode == 0, done.stderr
    assert f"report: {out / 'report.html'}" in done.stdout + done.stderr
    summary, lines = embedded((out / "report.html").read_text())
    assert summary["kind"] == "tournament" and len(lines) == 2
    feed = [json.loads(line) for line in (out / "live.jsonl").read_text().splitlines()]
    assert feed[0]["type"] == "run_started" and feed[-1]["type"] == "run_finished"
    assert sum(1 for e in feed if e["type"] == "game_finished") == 2
    assert sum(1 for e in feed if e["type"] == "move") == sum(len(line["t"]) for line in lines)


def test_serve_says_when_it_cannot_listen(tmp_path: Path) -> None:
    import socket

    synthesize_tournament(tmp_path, 1)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "referee", "serve", str(tmp_path), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "choose another --port" in done.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "referee", "serve", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 2 and "no such directory" in missing.stderr


def test_the_feed_writes_a_move_line_as_json_would_and_in_batches(tmp_path: Path) -> None:
    import json
    import time

    from protocol.rules import Color
    from referee.outputs.livefeed import FLUSH_INTERVAL_S, LiveFeed
    from referee.record import MoveRecord

    feed = LiveFeed(tmp_path)
    feed.run_started("match")
    info = {"depth": 3, "score": -1.5, "pv": ["a1b1"], "text": 'quote " and é'}
    moves = [
        MoveRecord(color=Color.BLACK, move="b3b4", elapsed_ms=1.25, clock_ms=None, latency_ms=0.1, infos=[info]),
        MoveRecord(color=Color.WHITE, move="pass", elapsed_ms=0.04, clock_ms=59_000, latency_ms=None, infos_dropped=2),
    ]
    for move in moves:
        feed.move('odd "id"', move)
    assert (tmp_path / "live.jsonl").read_text().count("\n") == 1  # the moves wait for the batch
    time.sleep(FLUSH_INTERVAL_S)
    feed.move('odd "id"', moves[1])  # past the interval: the batch is written
    lines = [json.loads(line) for line in (tmp_path / "live.jsonl").read_text().splitlines()][1:]
    assert len(lines) == 3
    for line in lines:
        assert line.pop("at") > 0
    assert lines[0] == {
        "type": "move",
        "id": 'odd "id"',
        "move": "b3b4",
        "color": "black",
        "t": 12,
        "clock": None,
        "info": info,
        "count": 1,
    }
    assert lines[1] == {
        "type": "move",
        "id": 'odd "id"',
        "move": "pass",
        "color": "white",
        "t": 0,
        "clock": 59_000,
        "info": None,
        "count": 2,
    }
    feed.close()


def test_the_live_figures_keep_nothing_per_game_and_agree_with_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import referee.outputs.report as report_module
    from referee.outputs.report import RunFigures

    monkeypatch.setattr(report_module, "SCORE_POINTS", 10)  # few points, so that 300 games drop some
    monkeypatch.setattr(report_module, "PROGRESS_POINTS", 4)
    synthesize_tournament(tmp_path, 300, seed=4)
    figures = {}
    for keep in (True, False):
        with load_run(tmp_path) as run:
            counted = RunFigures(run, keep_games=keep)
            for row, text in run.lines():
                counted.add_text(row, text)
            figures[keep] = (counted, counted.summary(live=not keep))
    (live, live_summary), (_, report_summary) = figures[False], figures[True]
    assert live.rows == [] and live.results == []  # nothing kept per game
    assert live_summary["games"] == [] and live_summary["gameCount"] == report_summary["gameCount"] == 300
    assert len(report_summary["games"]) == 300
    assert live_summary["standings"] == report_summary["standings"]  # the same tables, times per move included
    assert live_summary["terminationsUsed"] == sorted(
        {report_summary["terminations"][g[4]] for g in report_summary["games"]}
    )
    progress = live_summary["progress"]
    marks = progress["scoreAt"]
    assert len(marks) <= 2 * 10 + 1 and marks == sorted(set(marks)) and marks[-1] == 300
    assert len(progress["eloAt"]) <= 2 * 4 + 1 and progress["eloAt"][-1] == 300
    full = report_summary["progress"]
    for name in report_summary["standings"]["order"]:
        assert progress["score"][name][-1] == full["score"][name][-1]  # the last point: the whole run
        assert progress["elo"][name][-1] == pytest.approx(full["elo"][name][-1], abs=0.2)
        at_marks = dict(zip(full["scoreAt"], full["score"][name], strict=True))
        for mark, value in zip(marks, progress["score"][name], strict=True):
            if mark in at_marks:  # a point both took: the same score
                assert value == at_marks[mark]
