"""Real tournaments with real bot processes: both formats, openings, concurrency, reuse, resume, kill -9, Ctrl-C.

Bots are the instant test bot (tests/bots/testbot.py; `slow MS` makes a game last long enough to be
interrupted) and the sample bots, on 3x3 and 4x4 boards so that every game takes well under a second.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from protocol.messages import TimeControl
from referee.cli import main
from referee.outputs.events import Event, encode_event, parse_event
from referee.record import GameRecord, Termination
from referee.run.config import RunPlan, parse_config, resolve_plan
from referee.run.rundir import RunDirectory
from referee.run.runner import GAMES_FILE, Runner
from referee.run.schedule import make_schedule
from referee.run.store import DB_NAME
from tests.conftest import descendants, reap_orphans

REPO = Path(__file__).resolve().parent.parent
TESTBOT = REPO / "tests" / "bots" / "testbot.py"


def bot_config(name: str, *args: str) -> dict[str, Any]:
    return {"name": name, "command": [sys.executable, str(TESTBOT), *args]}


def make_plan(tmp_path: Path, bots: list[dict[str, Any]], **settings: Any) -> RunPlan:
    data = {"bots": bots, "size": "4x4", "time_control": "5+0.1", "games": 2, "concurrency": 2, **settings}
    config = parse_config(data, source="test")
    return resolve_plan(config, base_dir=tmp_path, source="test", default_out=tmp_path / "out")


def read_games(out: Path) -> list[GameRecord]:
    """The records of games.jsonl (in the order the games finished), in game order."""
    lines = (out / GAMES_FILE).read_text(encoding="utf-8").splitlines()
    return sorted((GameRecord.model_validate_json(line) for line in lines), key=lambda record: record.game_id)


def done_count(out: Path) -> int:
    try:
        with sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone()[0])
    except sqlite3.Error:
        return 0  # not created yet


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


# -- in-process tournaments -----------------------------------------------------------------------


async def test_round_robin_with_openings_and_two_games_at_once(tmp_path: Path) -> None:
    bots = [bot_config("a"), bot_config("b"), bot_config("c")]
    plan = make_plan(tmp_path, bots, games=4, openings={"plies": 2, "seed": 3})
    events: list[Event] = []
    summary = await Runner(plan, on_event=events.append).run()

    assert (summary.games_total, summary.games_done, summary.played_now) == (12, 12, 12)
    assert not summary.interrupted
    records = read_games(plan.out_dir)
    schedule = make_schedule(["a", "b", "c"], plan.format, 4, plan.openings)
    assert [r.game_id for r in records] == [g.game_id for g in schedule]
    for record, game in zip(records, schedule, strict=True):
        assert (record.black.name, record.white.name) == (game.black, game.white)
        assert record.settings.opening == list(game.opening)
        assert len(game.opening) == 2
        assert record.termination is Termination.NORMAL
    # Each opening was played twice by every pair, colours swapped.
    openings = Counter((frozenset((g.black, g.white)), g.opening) for g in schedule)
    assert set(openings.values()) == {2}

    standings = json.loads((plan.out_dir / "standings.json").read_text())
    assert {bot["name"]: bot["games"] for bot in standings["bots"]} == {"a": 8, "b": 8, "c": 8}
    assert (plan.out_dir / "standings.csv").exists() and (plan.out_dir / "standings.md").exists()

    # Processes were reused: each bot ran in at most one process per worker slot.
    logs: dict[str, set[str | None]] = {}
    for record in records:
        for side in (record.black, record.white):
            logs.setdefault(side.name, set()).add(side.stderr_log)
    assert all(1 <= len(paths) <= plan.concurrency for paths in logs.values()), logs

    kinds = [event.type for event in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    counts = Counter(kinds)
    assert (counts["run_started"], counts["game_started"], counts["game_finished"]) == (1, 12, 12)
    # At most one standings update a second (the Elo fit is kept off the timing path), and one after the last game.
    assert 1 <= counts["standings_updated"] <= 12 and counts["run_finished"] == 1
    updates = [event for event in events if event.type == "standings_updated"]
    assert updates[0].games_done == 1 and updates[-1].games_done == 12
    assert {event.slot for event in events if event.type == "game_started"} == {0, 1}
    for event in events:
        assert parse_event(encode_event(event)) == event


async def test_game_pairs_are_played_back_to_back_so_a_round_robin_starts_fewer_bots(tmp_path: Path) -> None:
    # Eight bots, more than a slot keeps running: each game pair's second game is played where its first was, by
    # the same two processes, so the run starts at most about one bot a pair (28 pairs; 36-37 starts before).
    names = [f"b{n}" for n in range(8)]
    plan = make_plan(tmp_path / "two", [bot_config(name) for name in names], games=2, concurrency=2)
    summary = await Runner(plan).run()
    assert summary.games_done == 56
    records = read_games(plan.out_dir)
    started = {side.stderr_log for record in records for side in (record.black, record.white)}
    assert len(started) <= 28, len(started)
    # One game at a time: the pairs in order, each pair's games one after the other; the numbers are the schedule's.
    plan = make_plan(tmp_path / "one", [bot_config(name) for name in names[:3]], games=4, concurrency=1)
    await Runner(plan).run()
    lines = (plan.out_dir / GAMES_FILE).read_text(encoding="utf-8").splitlines()
    finished = [GameRecord.model_validate_json(line).game_id for line in lines]
    assert finished == ["g0001", "g0004", "g0002", "g0005", "g0003", "g0006", "g0007", "g0010", "g0008", "g0011",
                        "g0009", "g0012"]  # fmt: skip


async def test_gauntlet_of_sample_bots_on_a_tiny_board(tmp_path: Path) -> None:
    bots = [{"name": "greedy", "command": "greedy"}, {"name": "random", "command": "random"}, bot_config("t")]
    plan = make_plan(tmp_path, bots, format="gauntlet", size=3, games=2)
    summary = await Runner(plan).run()
    assert summary.games_done == 4
    pairs = Counter(frozenset((r.black.name, r.white.name)) for r in read_games(plan.out_dir))
    assert pairs == {frozenset(("greedy", "random")): 2, frozenset(("greedy", "t")): 2}


async def test_a_crashing_bot_is_restarted_and_a_healthy_one_reused(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, [bot_config("good"), bot_config("crasher", "crash", "3")], games=3, concurrency=1)
    summary = await Runner(plan).run()
    assert summary.games_done == 3
    records = read_games(plan.out_dir)
    assert all(r.termination is Termination.CRASH for r in records)
    assert all((r.black if r.loser == "black" else r.white).name == "crasher" for r in records)
    crasher_logs = {(r.black if r.black.name == "crasher" else r.white).stderr_log for r in records}
    good_logs = {(r.black if r.black.name == "good" else r.white).stderr_log for r in records}
    assert (len(crasher_logs), len(good_logs)) == (3, 1)
    standings = json.loads((plan.out_dir / "standings.json").read_text())
    crasher = next(bot for bot in standings["bots"] if bot["name"] == "crasher")
    assert crasher["losses_by_kind"]["crash"] == 3


async def test_a_void_game_is_played_again_and_never_scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import referee.play.loop as play_module
    from tests.test_match import first_game_void

    calls: list[str] = []
    monkeypatch.setattr(play_module, "run_game", first_game_void(calls))
    plan = make_plan(tmp_path, [bot_config("a"), bot_config("b")], games=2, concurrency=1)
    events: list[Event] = []
    summary = await Runner(plan, on_event=events.append).run()
    assert (summary.games_done, summary.void_games) == (2, 1)
    assert calls == ["g0001", "g0001", "g0002"]
    assert [r.game_id for r in read_games(plan.out_dir)] == ["g0001", "g0002"]
    finished = [e for e in events if e.type == "game_finished"]
    assert [(e.number, e.scored) for e in finished] == [(1, False), (1, True), (2, True)]
    with sqlite3.connect(plan.out_dir / DB_NAME) as db:
        assert db.execute("SELECT number, termination, reason FROM void_games").fetchall() == [
            (1, "void", "referee bug")
        ]


def test_the_command_line_runs_resumes_and_writes_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = [
        "tournament", "--bot", f"a=python {TESTBOT}", "--bot", f"b=python {TESTBOT}", "--size", "3",
        "--games", "2", "--concurrency", "2", "--out", str(out), "--events", str(tmp_path / "events.jsonl"),
    ]  # fmt: skip
    assert main(argv) == 0
    first = capsys.readouterr()
    assert "Bot" in first.out and "files:" in first.out
    assert "Score of a vs b: " in first.out and "Ptnml(0-2): [" in first.out  # two bots: the match statistics
    assert "tournament complete: 2 games (2 played now)" in first.err
    events = [parse_event(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert events[0].type == "run_started"
    assert events[-1].type == "run_finished" and events[-1].games_done == 2

    assert main(argv) == 0  # again: nothing is missing, nothing is played twice
    again = capsys.readouterr()
    assert "tournament complete: 2 games (0 played now)" in again.err
    assert "nothing was left to play" in again.err and "nothing was left" not in first.err
    assert len(read_games(out)) == 2

    # Events on stdout: then stdout holds only JSON lines, and the standings table goes to stderr.
    assert main([*argv[:-1], "-", "--games", "3"]) == 0
    piped = capsys.readouterr()
    streamed = [parse_event(line) for line in piped.out.splitlines()]
    assert [e.type for e in streamed if e.type != "standings_updated"] == [
        "run_started", "game_started", "game_finished", "run_finished",
    ]  # fmt: skip
    assert "files:" in piped.err


def test_a_directory_of_an_older_alternator_keeps_its_database_name_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before matches and tournaments shared one runner, a run's database was `tournament.db` (and its lock
    `tournament.lock`): such a directory is resumed, read and reported under its own names, never forked into a
    second database."""
    out = tmp_path / "out"
    argv = [
        "tournament", "--bot", f"a=python {TESTBOT}", "--bot", f"b=python {TESTBOT}", "--size", "3",
        "--games", "2", "--concurrency", "1", "--out", str(out),
    ]  # fmt: skip
    assert main(argv) == 0
    assert (out / "run.db").is_file() and (out / "run.lock").is_file() and not (out / "tournament.db").exists()
    (out / "run.db").rename(out / "tournament.db")  # the directory as an older alternator left it
    (out / "run.lock").rename(out / "tournament.lock")
    capsys.readouterr()

    assert main([*argv[:-2], "--games", "3", "--out", str(out)]) == 0  # one more game
    resumed = capsys.readouterr()
    assert "tournament complete: 3 games (1 played now)" in resumed.err
    assert not (out / "run.db").exists() and not (out / "run.lock").exists()
    assert len(read_games(out)) == 3
    with RunDirectory.open(out) as run:
        assert run.source == "tournament.db" and run.count() == 3


def test_a_bot_that_cannot_start_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["tournament", "--bot", "random", "--bot", "x=./no-such-bot", "--out", str(tmp_path)])
    assert code == 2
    assert "bot 'x': the program" in capsys.readouterr().err


def test_an_events_file_that_cannot_be_written_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "no-such-folder" / "events.jsonl"
    code = main(["tournament", "--bot", "random", "--bot", "greedy", "--out", str(tmp_path), "--events", str(events)])
    assert code == 2
    assert "--events: cannot write" in (err := capsys.readouterr().err)
    assert "give a file in an existing folder, or - for standard output" in err
    assert not (tmp_path / DB_NAME).exists()  # refused before any game


# -- a referee in a subprocess: kill -9, Ctrl-C, resume ----------------------------------------------


def referee_command(out: Path, *extra: str) -> list[str]:
    slow = f"python {TESTBOT} slow 30"  # about 0.3 s a game on 4x4: slow enough to interrupt
    return [
        sys.executable, "-m", "referee", "tournament", "--bot", f"a={slow}", "--bot", f"b={slow}",
        "--bot", f"c={slow}", "--size", "4", "--games", "4", "--tc", "10+0", "--concurrency", "2",
        "--out", str(out), *extra,
    ]  # fmt: skip


def start_referee(out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        referee_command(out, *extra), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the bot processes through /proc")
def test_a_referee_killed_with_sigkill_resumes_and_plays_each_game_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    referee = start_referee(out)
    bots: list[int] = []
    try:
        wait_until(lambda: done_count(out) >= 3, 30, "three finished games")
        bots = descendants(referee.pid)
        assert bots, "the referee has bot processes running"
        referee.send_signal(signal.SIGKILL)
        referee.communicate(timeout=10)
        # The referee cannot clean up after kill -9: its bots see their stdin close and exit by themselves.
        wait_until(lambda: not any(alive(pid) for pid in bots), 5, "the orphaned bots to exit on EOF")
        reap_orphans(wait_s=5)  # this test process, a subreaper, inherits them
    finally:
        if referee.poll() is None:
            referee.kill()
            referee.communicate()
        for pid in bots:
            if alive(pid):
                os.killpg(pid, signal.SIGKILL)  # each bot leads its own process group
    done_before = done_count(out)
    assert 3 <= done_before < 12

    code, _, err = finish(start_referee(out, "--events", str(tmp_path / "events.jsonl")))
    assert code == 0, err
    assert f"tournament complete: 12 games ({12 - done_before} played now)" in err
    records = read_games(out)
    assert sorted(r.game_id for r in records) == [f"g{n:04d}" for n in range(1, 13)]
    events = [parse_event(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    started = events[0]
    assert started.type == "run_started" and started.games_done == done_before
    played = [e.number for e in events if e.type == "game_finished"]
    assert len(played) == len(set(played)) == 12 - done_before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the bot processes through /proc")
def test_ctrl_c_stops_cleanly_and_the_tournament_resumes_only_when_compatible(tmp_path: Path) -> None:
    out = tmp_path / "out"
    referee = start_referee(out)
    try:
        wait_until(lambda: done_count(out) >= 2, 30, "two finished games")
        bots = descendants(referee.pid)
        referee.send_signal(signal.SIGINT)
        code, _, err = finish(referee)
    finally:
        if referee.poll() is None:
            referee.kill()
            referee.communicate()
    assert code == 130, err
    assert "To resume, run the same command again" in err
    assert not [pid for pid in bots if alive(pid)], "Ctrl-C left bot processes running"
    done = done_count(out)
    standings = json.loads((out / "standings.json").read_text())
    assert sum(bot["games"] for bot in standings["bots"]) == 2 * done
    assert len(read_games(out)) == done

    code, _, err = finish(subprocess.Popen(
        [*referee_command(out), "--tc", "20+0"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ))  # fmt: skip
    assert code == 2
    assert "holds a tournament with other settings:\n  time_control.base_ms: was 10000, now 20000\nTo resume" in err
    assert "--out DIR" in err

    # More games per pairing is compatible: the finished games are kept, only the missing ones are played.
    code, _, err = finish(start_referee(out, "--games", "5"))
    assert code == 0, err
    assert f"tournament complete: 15 games ({15 - done} played now)" in err
    assert sorted(r.game_id for r in read_games(out)) == [f"g{n:04d}" for n in range(1, 16)]


def test_the_progress_display_redraws_one_line_on_a_terminal_and_writes_plain_lines_elsewhere() -> None:
    import io

    from referee.outputs.display import RunDisplay as TournamentDisplay
    from referee.outputs.events import GameFinished, GameStarted, RunStarted, StandingRow, StandingsUpdated, now

    events: list[Event] = [
        RunStarted(
            type="run_started", time=now(), kind="tournament", format="round-robin", bots=["a", "b"],
            games_total=2, games_done=0, concurrency=1, out_dir="out", width=4, height=4, komi=3.5,
            time_control=TimeControl(base_ms=1000),
        ),
        GameStarted(type="game_started", time=now(), number=1, game_id="g0001", black="a", white="b", opening=[],
                    slot=0),
        GameFinished(
            type="game_finished", time=now(), number=1, game_id="g0001", black="a", white="b", result="1-0",
            termination=Termination.NORMAL, reason="black wins by 2.5", moves=9, duration_s=0.1, scored=True,
            games_done=1, games_total=2,
        ),
        StandingsUpdated(
            type="standings_updated", time=now(), games_done=1, games_total=2,
            standings=[StandingRow(rank=1, name="a", games=1, points=1, score_pct=100, elo=10),
                       StandingRow(rank=2, name="b", games=1, points=0, score_pct=0, elo=-10)],
        ),
    ]  # fmt: skip
    terminal, log = io.StringIO(), io.StringIO()
    for stream, live in ((terminal, True), (log, False)):
        display = TournamentDisplay(stream, live=live)
        for event in events:
            display(event)
    last_status = terminal.getvalue().rsplit("\r\x1b[K", 1)[1]
    assert last_status.startswith("1/2 games, 0:00 elapsed, ~0:00 left, leader a 1/1")
    assert "\n" not in last_status  # redrawn in place, not scrolled
    assert "[1/2] game 1 a (black) - b (white): 1-0 black wins by 2.5\n" in terminal.getvalue()
    assert "\r" not in log.getvalue()
    assert "4x4 board, komi 3.5, time control 1; 1 at once" in log.getvalue().splitlines()[0]
    assert log.getvalue().splitlines()[1] == "[1/2] game 1 a (black) - b (white): 1-0 black wins by 2.5"


async def test_a_two_bot_tournament_with_an_sprt_table_stops_at_the_verdict(tmp_path: Path) -> None:
    bots: list[dict[str, Any]] = [
        {"name": "greedy", "command": "greedy"},
        {"name": "random", "command": [sys.executable, "-m", "sample_bots.random", "--seed", "1"]},
    ]
    sprt = {"elo0": 0, "elo1": 200, "alpha": 0.1, "beta": 0.1}
    plan = make_plan(tmp_path, bots, games=40, sprt=sprt, openings={"plies": 2, "seed": 1})
    events: list[Event] = []
    summary = await Runner(plan, on_event=events.append).run()
    assert summary.ended == "sprt" and summary.games_done < 40
    assert summary.statistics is not None and summary.statistics.sprt is not None
    assert summary.statistics.sprt.verdict is not None and summary.statistics.sprt.verdict.value == "H1"
    standings = json.loads((plan.out_dir / "standings.json").read_text())
    h2h = standings["head_to_head"]
    assert (h2h["first"], h2h["second"], h2h["sprt"]["verdict"]) == ("greedy", "random", "H1")
    assert h2h["games"] == summary.games_done == len(read_games(plan.out_dir))
    updates = [e for e in events if e.type == "statistics_updated"]
    assert len(updates) == sum(h2h["pentanomial"]) and updates[-1].statistics.llr == h2h["llr"]
    assert events[-1].type == "run_finished" and events[-1].ended == "sprt"


def test_an_sprt_table_needs_two_bots_and_an_even_number_of_games(tmp_path: Path) -> None:
    from referee.run.config import ConfigError

    three = [bot_config("a"), bot_config("b"), bot_config("c")]
    with pytest.raises(ConfigError, match="sprt: the SPRT compares two bots; this config has 3"):
        make_plan(tmp_path, three, sprt={})
    with pytest.raises(ConfigError, match="games: 3 with the SPRT: give an even number"):
        make_plan(tmp_path, three[:2], sprt={}, games=3)


def test_an_events_file_of_version_1_still_parses() -> None:
    """Events version 1 named a run's first and last events `tournament_started` and `tournament_finished`."""
    from referee.outputs.events import parse_event

    old = (
        '{"type":"tournament_finished","time":"2026-11-20T10:00:00Z","interrupted":false,"ended":"completed",'
        '"games_done":2,"games_total":2,"elapsed_s":1.5,"out_dir":"out","standings":[],"statistics":null}'
    )
    event = parse_event(old)
    assert event.type == "run_finished" and event.games_done == 2
    with pytest.raises(ValueError):
        parse_event('{"type":"tournament_begun","time":"2026-11-20T10:00:00Z"}')
