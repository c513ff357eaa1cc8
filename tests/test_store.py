"""The tournament database: commits per game, resume rules, void games, what a killed run leaves behind."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from protocol.messages import TimeControl
from protocol.rules import BLACK, WHITE
from referee.record import BotInfo, GameRecord, GameSettings, Termination
from referee.run.schedule import Format, ScheduledGame, make_schedule
from referee.run.store import DB_NAME, RunStore, StoreError, StoreReader

FINGERPRINT = {"bots": ["a", "b", "c"], "time_control": {"base_ms": 1000}, "size": "4x4"}


def schedule(games: int = 2) -> list[ScheduledGame]:
    return make_schedule(["a", "b", "c"], Format.ROUND_ROBIN, games, [("a1a2",)])


def record(game: ScheduledGame, termination: Termination = Termination.NORMAL, result: str = "1-0") -> GameRecord:
    now = datetime.now(UTC)
    scored = termination.is_scored
    return GameRecord(
        game_id=game.game_id,
        black=BotInfo(name=game.black, command=["x"]),
        white=BotInfo(name=game.white, command=["y"]),
        settings=GameSettings(width=4, height=4, time_control=TimeControl(base_ms=1000), opening=list(game.opening)),
        result=result if scored else "*",  # type: ignore[arg-type]
        winner=(BLACK if result == "1-0" else WHITE) if scored else None,
        termination=termination,
        reason="test",
        black_score=10 if scored else None,
        white_score=9.5 if scored else None,
        final_position="x",
        started_at=now,
        finished_at=now,
    )


def sound_record(game: ScheduledGame, result: str = "1-0") -> GameRecord:
    """A record that checks out (referee.run.audit): the opening played, then the losing side crashes."""
    from protocol.rules import Move, Position

    position = Position(4, 4)
    for move in game.opening:
        position.push(Move.parse(move))
    loser = WHITE if result == "1-0" else BLACK
    return record(game, Termination.CRASH, result).model_copy(
        update={"loser": loser, "black_score": None, "white_score": None, "final_position": position.to_string()}
    )


def test_a_new_tournament_stores_its_schedule_and_every_game_pending(tmp_path: Path) -> None:
    games = schedule()
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, games)
        assert store.scheduled() == {g.number: g for g in games}
        assert store.pending() == [g.number for g in games]
        assert (len(list(store.finished())), len(store.scheduled())) == (0, 6)
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_finished_game_is_committed_at_once_and_survives_reopening(tmp_path: Path) -> None:
    games = schedule()
    store = RunStore(tmp_path / DB_NAME)
    store.start(FINGERPRINT, games)
    store.record_game(1, record(games[0]))
    # Another connection sees it before this one is closed: it was committed, not buffered.
    with sqlite3.connect(tmp_path / DB_NAME) as other:
        assert other.execute("SELECT status, result FROM games WHERE number = 1").fetchone() == ("done", "1-0")
    store.close()
    with RunStore(tmp_path / DB_NAME) as again:
        again.start(FINGERPRINT, games)
        assert again.pending() == [2, 3, 4, 5, 6]
        assert list(again.finished()) == [(1, games[0].black, games[0].white, "1-0", "normal", None, None)]
        assert [json.loads(r)["game_id"] for r in again.records()] == ["g0001"]


@pytest.mark.parametrize("folder", ["run #3", "what?", "100%", "a b"])
def test_a_run_in_a_folder_whose_name_means_something_in_a_uri_is_read_back(tmp_path: Path, folder: str) -> None:
    games = schedule()
    path = tmp_path / folder / DB_NAME
    path.parent.mkdir()
    with RunStore(path) as store:
        store.start(FINGERPRINT, games)
        store.record_game(1, record(games[0]))
    # The read-only view (the report, the live page, `alternator export`) opens it by a file: URI.
    with StoreReader(path) as reader:
        assert [json.loads(r)["game_id"] for r in reader.records()] == ["g0001"]
    assert not (tmp_path / "run ").exists() and not (tmp_path / "what").exists()  # no database made elsewhere


def test_a_game_left_running_by_an_older_killed_referee_is_pending_again(tmp_path: Path) -> None:
    # Earlier referees marked each game `running` at its start; one killed then left such rows behind.
    games = schedule()
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, games)
        store.record_game(3, record(games[2]))
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("UPDATE games SET status = 'running' WHERE number = 2")
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, games)
        assert store.pending() == [1, 2, 4, 5, 6]
        assert store._db.execute("SELECT status FROM games WHERE number = 2").fetchone()[0] == "pending"


@pytest.mark.parametrize("termination", [Termination.VOID, Termination.ABORTED])
def test_void_and_aborted_games_are_logged_never_scored_and_stay_pending(
    tmp_path: Path, termination: Termination
) -> None:
    games = schedule()
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, games)
        store.record_game(1, record(games[0], termination))
        assert store.pending()[0] == 1
        assert store._db.execute("SELECT COUNT(*) FROM void_games").fetchone()[0] == 1
        assert list(store.finished()) == []


def test_a_forfeit_is_a_finished_game(tmp_path: Path) -> None:
    games = schedule()
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, games)
        store.record_game(2, record(games[1], Termination.CRASH, "0-1"))
        assert list(store.finished()) == [(2, games[1].black, games[1].white, "0-1", "crash", None, None)]


def test_resuming_with_other_settings_is_an_error_naming_what_changed(tmp_path: Path) -> None:
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, schedule())
        store.record_game(1, record(schedule()[0]))
    changed = {**FINGERPRINT, "time_control": {"base_ms": 2000}}
    with RunStore(tmp_path / DB_NAME) as store, pytest.raises(StoreError) as caught:
        store.start(changed, schedule())
    message = str(caught.value)
    assert "time_control.base_ms: was 1000, now 2000" in message
    assert "size" not in message
    assert "--out DIR" in message


def test_more_games_per_pairing_adds_games_and_keeps_the_finished_ones(tmp_path: Path) -> None:
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, schedule(2))
        store.record_game(1, record(schedule(2)[0]))
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, schedule(4))
        assert len(store.scheduled()) == 12
        assert store.pending() == list(range(2, 13))


def test_fewer_games_per_pairing_is_an_error(tmp_path: Path) -> None:
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, schedule(4))
    with RunStore(tmp_path / DB_NAME) as store, pytest.raises(StoreError, match=r"more games \(12\) than"):
        store.start(FINGERPRINT, schedule(2))


def test_a_changed_schedule_is_an_error_naming_the_game(tmp_path: Path) -> None:
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, schedule())
    other = make_schedule(["a", "b", "c"], Format.ROUND_ROBIN, 2, [("b1b2",)])
    with RunStore(tmp_path / DB_NAME) as store, pytest.raises(StoreError, match="game 1 was scheduled as"):
        store.start(FINGERPRINT, other)


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).write_text("not a database, " * 100)
    with pytest.raises(StoreError, match="cannot open the tournament database"):
        RunStore(tmp_path / DB_NAME)


def test_one_referee_at_a_time_per_output_directory(tmp_path: Path) -> None:
    busy = rf"pid {os.getpid()}\) is using this output directory"
    with RunStore(tmp_path / DB_NAME), pytest.raises(StoreError, match=busy):
        RunStore(tmp_path / DB_NAME)
    with RunStore(tmp_path / DB_NAME) as store:  # released on close
        store.start(FINGERPRINT, schedule())


def test_a_run_stopped_before_any_game_does_not_bind_the_directory(tmp_path: Path) -> None:
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, schedule())
    changed = {**FINGERPRINT, "time_control": {"base_ms": 2000}}
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(changed, schedule(4))  # nothing was recorded: the new settings take the directory
        assert len(store.scheduled()) == len(schedule(4))
        assert json.loads(store.get_meta("fingerprint") or "{}") == changed


def test_a_game_is_committed_once_whoever_reports_it(tmp_path: Path) -> None:
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, schedule())
        game = schedule()[0]
        assert store.record_game(1, record(game)) is True
        assert store.record_game(1, record(game)) is False  # idempotent by game number
        assert len(list(store.finished())) == 1
        assert store._db.execute("SELECT seq FROM games WHERE number = 1").fetchone()[0] == 1
        assert store.find_record(game.game_id) is not None


# -- the cost of a save, the layout of old databases, resume at size ---------------------------------------

SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE games (
    number INTEGER PRIMARY KEY, pairing INTEGER NOT NULL, round INTEGER NOT NULL, black TEXT NOT NULL,
    white TEXT NOT NULL, opening TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done')),
    result TEXT, termination TEXT, record TEXT, finished_at TEXT, seq INTEGER
);
CREATE TABLE void_games (
    id INTEGER PRIMARY KEY AUTOINCREMENT, number INTEGER NOT NULL REFERENCES games(number),
    termination TEXT NOT NULL, reason TEXT NOT NULL, record TEXT, at TEXT NOT NULL
);
"""


def filled(path: Path, games: list[ScheduledGame], done: int) -> list[GameRecord]:
    """A store of `games` whose first `done` are done (one transaction); their records."""
    records = [record(game, result=("1-0", "0-1", "1/2-1/2")[game.number % 3]) for game in games[:done]]
    with RunStore(path) as store:
        store.start(FINGERPRINT, games)
        assert store.record_games([(g.number, r) for g, r in zip(games, records, strict=False)]) == done
    return records


def steps_of_a_save(path: Path, game: ScheduledGame) -> int:
    """The SQLite virtual-machine steps one save takes: what it reads, whatever the machine's speed."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    with RunStore(path) as store:
        store._db.set_progress_handler(count, 1)
        assert store.record_game(game.number, record(game)) is True
    return steps[0]


def test_a_save_reads_the_same_whatever_the_number_of_games_stored(tmp_path: Path) -> None:
    games = schedule(400)  # 1,200 games
    filled(tmp_path / "few.db", games, 10)
    filled(tmp_path / "many.db", games, 1000)
    few, many = steps_of_a_save(tmp_path / "few.db", games[10]), steps_of_a_save(tmp_path / "many.db", games[1000])
    assert few == many, (few, many)
    with sqlite3.connect(tmp_path / "many.db") as db:  # the next seq: a search of its index, not a scan
        plan = " ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN SELECT MAX(seq) FROM games"))
        assert "games_by_seq" in plan and "SCAN games" not in plan


def test_a_database_of_schema_1_is_migrated_on_open_keeping_order_and_records(tmp_path: Path) -> None:
    games = schedule()
    path = tmp_path / DB_NAME
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA_1)
        db.execute("INSERT INTO meta VALUES ('fingerprint', ?), ('schema_version', '1')", (json.dumps(FINGERPRINT),))
        for game in games:
            db.execute(
                "INSERT INTO games (number, pairing, round, black, white, opening) VALUES (?, ?, ?, ?, ?, ?)",
                (game.number, game.pairing, game.round, game.black, game.white, json.dumps(list(game.opening))),
            )
        # Committed in the order 3, 1 (seq), game 5 void once.
        for seq, number in enumerate((3, 1), 1):
            data = record(games[number - 1]).model_dump_json()
            db.execute(
                "UPDATE games SET status = 'done', result = '1-0', termination = 'normal', record = ?, seq = ?"
                " WHERE number = ?",
                (data, seq, number),
            )
        db.execute(
            "INSERT INTO void_games (number, termination, reason, record, at) VALUES (5, 'void', 'x', ?, 'now')",
            (record(games[4], Termination.VOID).model_dump_json(),),
        )
    with RunStore(path) as store:
        store.start(FINGERPRINT, games)
        assert [game[0] for game in store.finished()] == [3, 1]
        assert store.game_ids() == [games[2].game_id, games[0].game_id]  # commit order
        assert store.find_record(games[2].game_id) is not None
        assert store.find_record(games[4].game_id) is not None  # its void try
        assert store.pending() == [2, 4, 5, 6]
        assert store.record_game(2, record(games[1])) is True
        assert [game[0] for game in store.finished()] == [3, 1, 2]
        assert store.get_meta("schema_version") == "2"
    with sqlite3.connect(path) as db:
        assert "record" not in {row[1] for row in db.execute("PRAGMA table_info(games)")}


def test_a_store_of_50000_games_resumes_with_the_same_standings(tmp_path: Path) -> None:
    from referee.run.config import parse_config, resolve_plan
    from referee.run.runner import Runner
    from referee.stats.standings import ScoredGame, compute_standings

    bots = [{"name": name, "command": "random"} for name in ("a", "b", "c", "d", "e")]
    data = {"bots": bots, "games": 5000, "size": "4x4", "time_control": "10+0"}  # 10 pairings: 50,000 games
    plan = resolve_plan(parse_config(data, source="test"), base_dir=tmp_path, source="test", default_out=tmp_path)
    schedule_ = make_schedule(plan.bot_names, plan.format, plan.games_per_pairing, plan.openings)
    assert len(schedule_) == 50_000
    outcomes = [sound_record(schedule_[0], "1-0"), sound_record(schedule_[0], "0-1"), sound_record(schedule_[0], "1-0")]
    games, expected = [], []
    named: dict[tuple[int, str, str], GameRecord] = {}  # an outcome with its players' names: 60 of them
    for game in schedule_:
        key = ((game.number * 7) % 3, game.black, game.white)
        if key not in named:
            outcome = outcomes[key[0]]
            black, white = (
                outcome.black.model_copy(update={"name": game.black}),
                outcome.white.model_copy(update={"name": game.white}),
            )
            named[key] = outcome.model_copy(update={"black": black, "white": white})
        outcome = named[key]
        games.append((game.number, outcome.model_copy(update={"game_id": game.game_id})))
        expected.append(ScoredGame(game.black, game.white, outcome.result, outcome.termination))
    texts = [game.model_dump_json() for _, game in games]
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(plan.fingerprint, schedule_)
        assert store.record_games(games, texts) == 50_000
    (tmp_path / "games.jsonl").write_text("".join(text + "\n" for text in texts))  # the run's second copy

    import trio

    summary = trio.run(Runner(plan).run)
    assert summary.games_done == 50_000 and summary.played_now == 0 and summary.ended == "completed"
    assert summary.standings == compute_standings(expected, plan.bot_names)
    assert len((tmp_path / "games.jsonl").read_text().splitlines()) == 50_000


def test_the_anchor_is_kept_beside_the_title_and_may_change_on_a_resume(tmp_path: Path) -> None:
    from referee.run.rundir import RunDirectory
    from referee.stats.standings import Anchor

    games = schedule()
    with RunStore(tmp_path / DB_NAME) as store:
        store.start({**FINGERPRINT, "anchor": "a=1500"}, games)
        store.record_game(1, record(games[0]))
    with RunStore(tmp_path / DB_NAME) as store:
        store.start({**FINGERPRINT, "anchor": "b=2000.5"}, games)  # another anchor: no other settings, no error
        assert (store.fingerprint() or {})["anchor"] == "b=2000.5"
    with RunDirectory.open(tmp_path) as run:
        assert run.anchor == Anchor(name="b", rating=2000.5)
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, games)  # and none: the ratings go back to the field mean
        assert "anchor" not in (store.fingerprint() or {})


def count_audit_reads(store: RunStore) -> list[int]:
    """The first game of every read of the stored records' audit rows `store` makes from now on (a comparison of
    the two copies reads them), in a list that fills as it reads."""
    starts: list[int] = []
    read_rows = store.audit_rows

    def counted(start: int = 0) -> Any:
        starts.append(start)
        return read_rows(start)

    store.audit_rows = counted  # type: ignore[method-assign]
    return starts


def test_within_a_run_games_jsonl_is_compared_from_where_the_last_comparison_ended(tmp_path: Path) -> None:
    from referee.run.recovery import sync_games_file
    from tests.report_games import synthesize_stored_tournament

    records = synthesize_stored_tournament(tmp_path, 60, seed=2, done=50)
    with RunStore(tmp_path / DB_NAME) as store:
        starts = count_audit_reads(store)
        assert sync_games_file(tmp_path, store, quiet=True).notes == []  # the start: the whole run compared
        assert starts == [0] and store.verified is not None and store.verified[2] == 50
        for number in (51, 52):  # the runner commits each game, then appends its line
            assert store.record_game(number, records[number - 1]) is True
            with (tmp_path / "games.jsonl").open("a", encoding="utf-8") as file:
                file.write(records[number - 1].model_dump_json() + "\n")
        assert sync_games_file(tmp_path, store, quiet=True).notes == []  # the end: only the two new games
        assert starts == [0, 50] and store.verified[2] == 52
        assert store.digests_intact()
    # A new run compares the whole file again (it may have been changed between runs), and finds a forgery.
    lines = (tmp_path / "games.jsonl").read_bytes().splitlines()
    forged = json.loads(lines[10])
    forged["moves"][0]["elapsed_ms"] += 1.0
    lines[10] = json.dumps(forged, separators=(",", ":")).encode()
    (tmp_path / "games.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with RunStore(tmp_path / DB_NAME) as store:
        notes = sync_games_file(tmp_path, store, quiet=True).notes
        assert len(notes) == 1 and "line 11 (game g0011) is damaged or forged" in notes[0]


def test_a_run_closed_with_both_copies_in_agreement_is_not_compared_again_until_a_file_changes(
    tmp_path: Path,
) -> None:
    from referee.run.recovery import sync_games_file
    from tests.report_games import synthesize_stored_tournament

    synthesize_stored_tournament(tmp_path, 20, seed=4)

    def opened() -> tuple[RunStore, list[int]]:
        store = RunStore(tmp_path / DB_NAME)
        return store, count_audit_reads(store)

    store, starts = opened()
    assert store.trusted is None  # closed without a comparison (a run killed, a copy): compared whole
    assert sync_games_file(tmp_path, store, quiet=True).notes == [] and starts == [0]
    store.close()  # both copies found in agreement: the lock file is stamped with their identities
    for _ in range(2):
        store, starts = opened()
        assert store.trusted == 20
        assert sync_games_file(tmp_path, store, quiet=True).notes == [] and starts == []  # no record read
        store.close()
    # A byte changed in games.jsonl, its size and times kept as a careful forger would: the change time is not.
    path = tmp_path / "games.jsonl"
    data = bytearray(path.read_bytes())
    at = data.index(b'"elapsed_ms":', len(data) // 2) + len(b'"elapsed_ms":')
    data[at] = ord("7") if data[at] != ord("7") else ord("8")
    times = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    store, starts = opened()
    assert store.trusted is None
    notes = sync_games_file(tmp_path, store, quiet=True).notes
    assert starts == [0] and len(notes) == 1 and "is damaged or forged" in notes[0]
    assert sync_games_file(tmp_path, store, quiet=True).notes == []  # the rewritten file compared whole (the end)
    store.close()
    # The database written by another program: compared whole again.
    store, starts = opened()
    assert store.trusted == 20
    store.close()
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("UPDATE records SET record = record WHERE number = 1")
    store, starts = opened()
    assert store.trusted is None
    store.close()


def test_a_page_damaged_under_the_records_is_named_before_anything_is_read_from_it_or_written(tmp_path: Path) -> None:
    """The whole file's check runs beside the comparison of the two copies; its answer comes first, and nothing is
    repaired or rewritten from a file it finds damaged."""
    from referee.run.recovery import check_nothing_lost, sync_games_file
    from tests.report_games import synthesize_stored_tournament

    synthesize_stored_tournament(tmp_path, 30, seed=5)
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        page = int(db.execute("PRAGMA page_size").fetchone()[0])
        root = int(db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'records'").fetchone()[0])
    db.close()
    data = bytearray((tmp_path / DB_NAME).read_bytes())
    data[(root - 1) * page] = 0x42  # the records' b-tree page is no page type SQLite knows
    (tmp_path / DB_NAME).write_bytes(bytes(data))
    lines = (tmp_path / "games.jsonl").read_bytes()
    with RunStore(tmp_path / DB_NAME) as store, pytest.raises(StoreError, match="the tournament database is damaged"):
        check_nothing_lost(tmp_path, store, rebuild_hint="--rebuild-db")
    with RunStore(tmp_path / DB_NAME) as store, pytest.raises(StoreError, match="the tournament database is damaged"):
        sync_games_file(tmp_path, store, quiet=True)
    with RunStore(tmp_path / DB_NAME) as store, pytest.raises(StoreError, match="the tournament database is damaged"):
        store.set_meta("title", "x")
    RunStore(tmp_path / DB_NAME).close()  # closed before its check answered: nothing is left running
    assert (tmp_path / "games.jsonl").read_bytes() == lines


def test_text_that_is_not_utf8_is_read_leniently_wherever_it_comes(tmp_path: Path) -> None:
    """A damaged byte in a small column is read as U+FFFD (the checks then name it), in every chunk of a long read."""
    games = make_schedule(["a", "b", "c"], Format.ROUND_ROBIN, 1400, [])
    with RunStore(tmp_path / DB_NAME) as store:
        store.start(FINGERPRINT, games)
        for game in games[:3]:
            store.record_game(game.number, record(game))
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        for number in (2, 3000):  # in the first chunk read, and in a later one
            db.execute("UPDATE games SET white = CAST(X'61ff62' AS TEXT) WHERE number = ?", (number,))
        db.execute("UPDATE games SET result = CAST(X'31ff30' AS TEXT) WHERE number = 3")
    db.close()
    with RunStore(tmp_path / DB_NAME) as store:
        scheduled = store.scheduled()
        assert len(scheduled) == len(games) and scheduled[2].white == scheduled[3000].white == "a\ufffdb"
        assert [scheduled[n] for n in (1, 4, 2999, 4200)] == [games[n - 1] for n in (1, 4, 2999, 4200)]
        assert [game.white for game in store.done_games()] == [games[0].white, "a\ufffdb", games[2].white]
        assert [row.result for row in store.audit_rows()] == ["1-0", "1-0", "1\ufffd0"]
