"""games.jsonl read back, the check that nothing it holds is lost, and the database rebuilt from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.record import Termination
from referee.run.recovery import (
    GAMES_FILE,
    LostGamesError,
    RecoveryError,
    check_nothing_lost,
    match_to_schedule,
    read_games_file,
    rebuild_database,
    scored_game_ids,
    set_aside,
)
from referee.run.schedule import Format, make_schedule
from referee.run.store import DB_NAME, RunStore
from tests.test_store import FINGERPRINT, record, schedule, sound_record


def write_games(out: Path, *records: str, tail: str = "") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / GAMES_FILE
    path.write_text("".join(line + "\n" for line in records) + tail, encoding="utf-8")
    return path


def test_reading_tolerates_a_torn_last_line_and_names_a_damaged_one(tmp_path: Path) -> None:
    games = schedule()
    lines = [record(g).model_dump_json() for g in games[:3]]
    assert read_games_file(tmp_path / "none.jsonl").records == []
    path = write_games(tmp_path, *lines, tail=lines[0][:40])
    read = read_games_file(path)
    assert [r.game_id for r in read.records] == [g.game_id for g in games[:3]] and read.torn_tail
    path = write_games(tmp_path, *lines, tail=lines[2])  # complete but for its newline
    assert len(read_games_file(path).records) == 4 and not read_games_file(path).torn_tail
    write_games(tmp_path, lines[0], '{"not": "a record"}', lines[1])
    with pytest.raises(RecoveryError, match=r"games.jsonl: line 2 is not a game record"):
        read_games_file(path)


def test_games_the_database_lacks_stop_the_rewrite(tmp_path: Path) -> None:
    games = schedule()
    write_games(tmp_path, *(record(g).model_dump_json() for g in games[:2]))
    check_nothing_lost(tmp_path, [games[0].game_id, games[1].game_id], rebuild_hint="x")
    with pytest.raises(LostGamesError) as error:
        check_nothing_lost(tmp_path, [games[0].game_id], rebuild_hint="alternator tournament T --rebuild-db")
    message = str(error.value)
    assert "holds 1 game(s) beyond the 1 that" in message and "line 2 (game g0002, " in message
    assert "Nothing was changed and no game was played" in message
    assert "(each is checked first): alternator tournament T --rebuild-db;" in message
    assert "does not check out" in message  # record() is no real game: its moves do not give its result
    # The database holding no game at all is said as such.
    with pytest.raises(LostGamesError, match=r"holds 2 game\(s\) but .* holds none \(the database is empty, new"):
        check_nothing_lost(tmp_path, [], rebuild_hint="x")
    # A void game in the file (an older version wrote them) is not a game to keep.
    write_games(tmp_path, record(games[0], Termination.VOID).model_dump_json())
    check_nothing_lost(tmp_path, [], rebuild_hint="x")


def test_records_must_fit_the_schedule_they_are_rebuilt_into() -> None:
    games = schedule()
    assert [n for n, _ in match_to_schedule([record(games[1]), record(games[0])], games)] == [1, 2]
    swapped = record(games[0]).model_copy(update={"game_id": games[1].game_id})
    with pytest.raises(RecoveryError, match=r"game g0002 was .* but this tournament schedules"):
        match_to_schedule([swapped], games)
    other = make_schedule(["a", "b"], Format.ROUND_ROBIN, 1, [()])
    with pytest.raises(RecoveryError, match=r"game g0003 is not in this tournament's schedule \(1 games\)"):
        match_to_schedule([record(games[2])], other)


def test_a_database_is_rebuilt_from_games_jsonl(tmp_path: Path) -> None:
    games = schedule()
    results = ["1-0", "0-1", "1-0"]
    write_games(tmp_path, *(sound_record(g, r).model_dump_json() for g, r in zip(games[:3], results, strict=True)))
    db = tmp_path / DB_NAME
    db.write_bytes(b"")  # what a full disk or a careless `> run.db` leaves
    kept = set_aside(db)
    assert kept is not None and kept.name.startswith(f"{DB_NAME}.broken-") and not db.exists()
    with RunStore(db) as store:
        assert rebuild_database(store, tmp_path, FINGERPRINT, games) == 3
    with RunStore(db) as store:
        store.start(FINGERPRINT, games)  # resumes: the same settings
        assert [n for n, *_ in store.finished()] == [1, 2, 3]
        assert [r for _, _, _, r, *_ in store.finished()] == ["1-0", "0-1", "1-0"]
        assert len(store.pending()) == len(games) - 3


def test_the_check_at_every_start_reads_only_ids_and_skips_a_torn_last_line(tmp_path: Path) -> None:
    games = schedule()
    lines = [record(g).model_dump_json() for g in games[:2]]
    path = write_games(tmp_path, *lines, record(games[2], Termination.VOID).model_dump_json(), tail=lines[0][:50])
    assert scored_game_ids(path) == [games[0].game_id, games[1].game_id]
    assert scored_game_ids(tmp_path / "missing.jsonl") == []
    write_games(tmp_path, lines[0], "{torn", lines[1])
    with pytest.raises(RecoveryError, match="line 2 is not a game record"):
        scored_game_ids(path)
    with pytest.raises(LostGamesError, match=r"line 2 is not a game record; remove or repair that line\. Nothing"):
        check_nothing_lost(tmp_path, [g.game_id for g in games], rebuild_hint="x")
