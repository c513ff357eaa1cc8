"""The one reader of a run (referee/run/rundir.py): the database first, one policy for torn and damaged lines, the
games the SPRT counted; and what every reader shows of a time control and of a run in progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol.messages import TimeControl
from referee.record import GameRecord, Termination
from referee.run.recovery import RecoveryError, read_games_file, rebuild_database
from referee.run.rundir import RunDirectory, RunReadError, read_lines
from referee.run.schedule import Format, make_schedule
from referee.run.store import DB_NAME, RunStore
from referee.stats.sprt import SprtParameters, count_in_order
from tests.report_games import synthesize_tournament

FINGERPRINT = {"kind": "match", "bots": [{"name": "new"}, {"name": "base"}], "sprt": {
    "elo0": 0.0, "elo1": 5.0, "alpha": 0.05, "beta": 0.05}}  # fmt: skip


def match_records(out: Path, games: int) -> list[GameRecord]:
    """Records of a two-bot schedule (new Black in odd games), written to games.jsonl in game order."""
    schedule = make_schedule(["new", "base"], Format.ROUND_ROBIN, games, [()])
    records = synthesize_tournament(out, games, seed=4, bots=("new", "base"))
    fitted = []
    for game, record in zip(schedule, records, strict=True):
        black = record.black.model_copy(update={"name": game.black})
        white = record.white.model_copy(update={"name": game.white})
        fitted.append(record.model_copy(update={"game_id": game.game_id, "black": black, "white": white}))
    (out / "games.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in fitted))
    return fitted


def test_the_database_is_the_truth_and_gives_the_games_in_commit_order(tmp_path: Path) -> None:
    records = match_records(tmp_path, 6)
    schedule = make_schedule(["new", "base"], Format.ROUND_ROBIN, 6, [()])
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, schedule)
        for number in (2, 1, 4, 3, 6):  # committed out of game order; game 5 not done
            store.record_game(number, records[number - 1])
    (tmp_path / "games.jsonl").write_text("not even json\n")  # the database wins: this file is not read
    with RunDirectory.open(tmp_path) as run:
        assert run.source == DB_NAME and run.kind == "match" and run.bots == ["new", "base"]
        assert run.sprt == SprtParameters(0.0, 5.0, 0.05, 0.05)
        assert [r.game_id for r in run.records()] == ["g0002", "g0001", "g0004", "g0003", "g0006"]
        assert run.count() == 5 and run.total() == 6 and run.errors == []
        found = run.record("g0004")
        assert found is not None and found.game_id == "g0004"
        assert run.record("g0005") is None
        at = run.record_at(2)
        assert at is not None and at.game_id == "g0001"
        counted = run.counted()
        assert [(game.number, game.pair) for game in counted] == [(2, 0), (1, 0), (4, 1), (3, 1), (6, 2)]
        statistics, order = count_in_order(counted, run.sprt)
        assert order == [2, 1, 4, 3, 6] and sum(statistics.pairs) == 2  # game 6 waits for game 5


def test_a_torn_last_line_is_no_game_and_no_problem(tmp_path: Path) -> None:
    match_records(tmp_path, 4)
    with (tmp_path / "games.jsonl").open("a") as file:
        file.write('{"record_version":1,"game_id":"g0005","bla')  # a killed referee's half line
    lines = list(read_lines(tmp_path / "games.jsonl"))
    assert [line.torn for line in lines] == [False] * 4 + [True] and not any(line.damaged for line in lines)
    with RunDirectory.open(tmp_path) as run:
        assert run.source == "games.jsonl" and run.count() == 4 and run.errors == []
    assert read_games_file(tmp_path / "games.jsonl").torn_tail


def test_a_damaged_line_is_left_out_and_named_by_readers_and_refused_by_recovery(tmp_path: Path) -> None:
    records = match_records(tmp_path, 4)
    text = (tmp_path / "games.jsonl").read_text().splitlines()
    text[1] = text[1][:50] + "}"  # a line cut in the middle, with its newline: damaged, not torn
    (tmp_path / "games.jsonl").write_text("\n".join(text) + "\n")
    with RunDirectory.open(tmp_path) as run:
        assert [r.game_id for r in run.records()] == [records[0].game_id, *(r.game_id for r in records[2:])]
        assert len(run.errors) == 1 and run.errors[0].startswith("games.jsonl line 2: not a game record")
    with pytest.raises(RecoveryError, match=r"line 2 is not a game record"):
        read_games_file(tmp_path / "games.jsonl")
    schedule = make_schedule(["new", "base"], Format.ROUND_ROBIN, 4, [()])
    with RunStore(tmp_path / "rebuilt.db") as store, pytest.raises(RecoveryError, match="line 2"):
        rebuild_database(store, tmp_path, FINGERPRINT, schedule)


def test_a_missing_or_damaged_database(tmp_path: Path) -> None:
    with pytest.raises(RunReadError, match="no such directory"):
        RunDirectory.open(tmp_path / "nowhere")
    with pytest.raises(RunReadError, match=r"neither run\.db nor games\.jsonl"):
        RunDirectory.open(tmp_path)
    match_records(tmp_path, 2)
    with RunDirectory.open(tmp_path) as run:  # no database: games.jsonl holds the games
        assert run.source == "games.jsonl" and run.count() == 2
    (tmp_path / DB_NAME).write_text("this is not a database " * 100)
    with RunDirectory.open(tmp_path) as run:  # a damaged one: said, and games.jsonl read instead
        assert run.source == "games.jsonl" and run.count() == 2
        assert run.errors and "cannot open the tournament database" in run.errors[0]
    (tmp_path / "games.jsonl").unlink()
    with pytest.raises(RunReadError, match="cannot open the tournament database"):
        RunDirectory.open(tmp_path)


def test_40_60_plus_1_is_described_the_same_everywhere(tmp_path: Path) -> None:
    import io
    from datetime import UTC, datetime

    from referee.outputs.display import RunDisplay
    from referee.outputs.events import RunStarted
    from referee.outputs.livefeed import LiveFeed
    from referee.outputs.report import summary_data
    from referee.record import GameSettings
    from referee.timing.clock import describe_time_control, parse_time_control

    control = parse_time_control("40/60+1")
    assert describe_time_control(control) == "40/60+1"
    # the terminal
    out = io.StringIO()
    RunDisplay(out, live=False)(
        RunStarted(
            type="run_started",
            time=datetime.now(UTC),
            kind="match",
            format="round-robin",
            bots=["a", "b"],
            games_total=2,
            games_done=0,
            concurrency=1,
            out_dir="x",
            width=8,
            height=8,
            komi=3.5,
            time_control=control,
        )
    )
    assert "time control 40/60+1;" in out.getvalue()
    # the live feed (and so the live page)
    feed = LiveFeed(tmp_path)
    feed.game_started("g0001", "a", "b", GameSettings(time_control=control))
    feed.close()
    assert json.loads((tmp_path / "live.jsonl").read_text())["tc"] == "40/60+1"
    # the report
    record = synthesize_tournament(tmp_path / "r", 1)[0]
    settings = record.settings.model_copy(update={"time_control": control})
    (tmp_path / "r" / "games.jsonl").write_text(record.model_copy(update={"settings": settings}).model_dump_json())
    with RunDirectory.open(tmp_path / "r") as run:
        summary = summary_data(run)
    assert summary["settings"]["tc"] == "40/60+1"


def test_the_live_state_shows_the_sprt_while_the_run_goes_on(tmp_path: Path) -> None:
    from referee.outputs.serve import LiveState

    records = match_records(tmp_path, 8)
    (tmp_path / "games.jsonl").unlink()
    schedule = make_schedule(["new", "base"], Format.ROUND_ROBIN, 8, [()])
    with RunStore(tmp_path / DB_NAME) as store:  # a run going on: no match.json yet
        store.start(FINGERPRINT, schedule)
        for record in records[:4]:
            store.record_game(int(record.game_id[1:]), record)
        state = LiveState(tmp_path)
        state.load()
        h2h = state.summary["headToHead"]
        assert h2h["sprt"]["elo1"] == 5 and len(h2h["llrCurve"]) == 2 and h2h["games"] == 4
        for record in records[4:6]:
            store.record_game(int(record.game_id[1:]), record)
        state.load()  # only the new games are read
        assert state.summary["headToHead"]["games"] == 6 and state.summary["gameCount"] == 6
        detail = state.detail(5)
        assert detail is not None
        line = json.loads(detail)
        assert line["n"] == 5 and line["id"] == records[4].game_id  # the fifth committed, from its stored line


def test_the_live_feed_stays_short(tmp_path: Path) -> None:
    from referee.outputs.livefeed import LiveFeed
    from referee.record import GameSettings, MoveRecord

    feed = LiveFeed(tmp_path, max_bytes=4096)
    feed.run_started("match")
    settings = GameSettings(time_control=TimeControl(base_ms=1000, increment_ms=0))
    move = MoveRecord.model_validate({"color": "black", "move": "a1a2", "elapsed_ms": 1.0, "clock_ms": 900})
    for number in range(1, 40):
        feed.game_started(f"g{number:04d}", "a", "b", settings, number=number)
        for _ in range(5):
            feed.move(f"g{number:04d}", move)
        if number < 39:
            feed.game_finished(f"g{number:04d}", result="1-0", termination=str(Termination.NORMAL), reason="x")
    feed.close()
    assert (tmp_path / "live.jsonl").stat().st_size <= 4096 + 400
    lines = [json.loads(line) for line in (tmp_path / "live.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "run_started" and lines[0]["continued"] is True
    started = [line["id"] for line in lines if line["type"] == "game_started"]
    assert "g0039" in started  # the game in progress survives the rewrite, with its moves
    assert sum(1 for line in lines if line.get("id") == "g0039" and line["type"] == "move") == 5
