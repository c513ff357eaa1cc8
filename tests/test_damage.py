"""A damaged or forged output directory, end to end through the command line: the damage named, repaired from the
good copy or set aside, never a traceback, never a good line of games.jsonl replaced by a bad one.

Each test plays a small real tournament (two sample bots on 4x4), then damages its files as a failing disk, an
editor or an attacker would, and runs the commands a user runs next.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from referee.cli import main
from referee.run.recovery import QUARANTINE_FILE
from referee.run.runner import GAMES_FILE
from referee.run.store import DB_NAME, LOCK_NAME, RunStore
from tests.test_run_faults import tournament


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tournament of 4 games, played once for the module (copied by each test)."""
    out = tmp_path_factory.mktemp("finished") / "t"
    assert tournament(out, games=4) == 0
    (out / "live.jsonl").unlink()
    return out


def copy_of(finished: Path, tmp_path: Path) -> Path:
    import shutil

    out = tmp_path / "t"
    shutil.copytree(finished, out)
    return out


def lines(out: Path) -> list[bytes]:
    return (out / GAMES_FILE).read_bytes().splitlines()


def quarantined(out: Path) -> list[dict[str, str]]:
    path = out / QUARANTINE_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def change_move(text: str) -> str:
    """The record with its first move replaced by another legal-looking one: valid JSON, no longer the game."""
    record = json.loads(text)
    first = record["moves"][0]["move"]
    record["moves"][0]["move"] = "pass" if first != "pass" else "a1b1"
    return json.dumps(record, separators=(",", ":"))


def test_a_record_damaged_in_the_database_is_named_and_repaired_from_games_jsonl(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    before = lines(out)
    with sqlite3.connect(out / DB_NAME) as db:  # a flipped byte inside a record: the JSON still parses
        text = db.execute("SELECT record FROM records WHERE number = 2").fetchone()[0]
        db.execute("UPDATE records SET record = ? WHERE number = 2", (change_move(text),))
    capsys.readouterr()
    assert tournament(out, games=4) == 0
    err = capsys.readouterr().err
    assert f"{out / DB_NAME}: game g0002 is damaged (it does not check out: " in err
    assert f"repaired from {out / GAMES_FILE} line 2, which checks out" in err
    assert lines(out) == before  # the good line was not replaced by the damaged record
    assert [entry["source"] for entry in quarantined(out)] == [f"{DB_NAME} game 2"]
    with sqlite3.connect(out / DB_NAME) as db:  # the database holds the good copy again
        assert db.execute("SELECT record FROM records WHERE number = 2").fetchone()[0].encode() == before[1]
    assert main(["replay", str(out), "g0002"]) == 0


def test_a_damaged_line_of_games_jsonl_is_named_and_rewritten_from_the_database(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    before = lines(out)
    damaged = [*before]
    damaged[2] = change_move(before[2].decode()).encode()
    (out / GAMES_FILE).write_bytes(b"\n".join(damaged) + b"\n")
    capsys.readouterr()
    assert tournament(out, games=4) == 0
    err = capsys.readouterr().err
    assert f"{out / GAMES_FILE} line 3 (game g0003) is damaged (it does not check out: " in err
    assert lines(out) == before
    assert [entry["source"] for entry in quarantined(out)] == [f"{GAMES_FILE} line 3"]


def test_a_damaged_result_column_is_repaired_from_the_record(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    with sqlite3.connect(out / DB_NAME) as db:
        result = db.execute("SELECT result FROM games WHERE number = 1").fetchone()[0]
        db.execute("UPDATE games SET result = ? WHERE number = 1", ("0-1" if result == "1-0" else "1-0",))
        db.execute("PRAGMA ignore_check_constraints = 1")  # as a changed byte would, past the schema's check
        db.execute("UPDATE games SET status = 'dxne' WHERE number = 4")  # a status no run writes
    capsys.readouterr()
    assert tournament(out, games=4) == 0
    err = capsys.readouterr().err
    assert f"{out / DB_NAME}: game g0001: its result column is" in err and "repaired from its record" in err
    assert f"{out / DB_NAME}: game g0004: its status is 'dxne' (damaged); repaired from {out / GAMES_FILE}" in err
    assert "(0 played now)" in err or "nothing was left to play" in err
    with sqlite3.connect(out / DB_NAME) as db:
        assert db.execute("SELECT result FROM games WHERE number = 1").fetchone()[0] == result
        assert db.execute("SELECT status FROM games WHERE number = 4").fetchone()[0] == "done"


def test_a_game_with_no_good_copy_is_set_aside_and_played_again(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    before = lines(out)
    with sqlite3.connect(out / DB_NAME) as db:  # each copy damaged its own way
        db.execute("UPDATE records SET record = ? WHERE number = 1", (change_move(before[0].decode()),))
    (out / GAMES_FILE).write_bytes(b"\n".join([before[0][:-30] + b"#" + before[0][-29:], *before[1:]]) + b"\n")
    capsys.readouterr()
    assert tournament(out, games=4) == 0
    err = capsys.readouterr().err
    assert "game g0001: no copy can be trusted" in err and "the game will be played again" in err
    assert "1 played now" in err or "(1 played now)" in err
    assert {entry["source"] for entry in quarantined(out)} == {f"{DB_NAME} game 1", f"{GAMES_FILE} line 1"}
    after = lines(out)
    assert after[:3] == before[1:] and len(after) == 4  # the others untouched; g0001 played again, last
    assert json.loads(after[3])["game_id"] == "g0001" and main(["replay", str(out), "g0001"]) == 0


def test_a_damaged_sqlite_header_is_one_clear_line_and_rebuild_restores_every_game(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    before = lines(out)
    data = bytearray((out / DB_NAME).read_bytes())
    data[20] ^= 0xFF  # the reserved bytes per page: SQLite reads every page differently
    (out / DB_NAME).write_bytes(bytes(data))
    capsys.readouterr()
    assert tournament(out, games=4) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{out / DB_NAME}" in err and "--rebuild-db" in err
    assert lines(out) == before
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) in (0, 2)
    assert "Traceback" not in capsys.readouterr().err
    assert tournament(out, "--rebuild-db", games=4) == 0
    assert "rebuilt" in capsys.readouterr().err and lines(out) == before


def test_rebuild_beside_a_live_run_is_refused_before_anything_is_moved(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    with RunStore(out / DB_NAME):  # a live run holds the directory
        capsys.readouterr()
        assert tournament(out, "--rebuild-db", games=4) == 2
        err = capsys.readouterr().err
        assert "another alternator run" in err
        assert (out / DB_NAME).is_file() and not list(out.glob(f"{DB_NAME}.broken-*"))


def test_rebuild_refuses_a_forged_line_by_its_number(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    before = lines(out)
    record = json.loads(before[2])
    record["result"], record["winner"] = ("0-1", "white") if record["result"] == "1-0" else ("1-0", "black")
    (out / GAMES_FILE).write_bytes(b"\n".join([*before[:2], json.dumps(record).encode(), before[3]]) + b"\n")
    (out / DB_NAME).unlink()
    capsys.readouterr()
    assert tournament(out, "--rebuild-db", games=4) == 2
    err = capsys.readouterr().err
    assert f"--rebuild-db: {out / GAMES_FILE}: line 3 (game g0003) does not check out: after" in err
    assert "nothing was changed" in err and not (out / DB_NAME).exists()


def test_an_extra_line_beside_a_healthy_database_is_described_as_such(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    before = lines(out)
    with sqlite3.connect(out / DB_NAME) as db:  # the database an older copy: it lacks the last game
        db.execute("DELETE FROM records WHERE number = 4")
        db.execute("UPDATE games SET status = 'pending', seq = NULL, result = NULL, game_id = NULL WHERE number = 4")
    capsys.readouterr()
    assert tournament(out, games=4) == 2
    err = capsys.readouterr().err
    assert "the database is empty, new or was replaced" not in err
    assert f"{out / GAMES_FILE} holds 1 game(s) beyond the 3 that {out / DB_NAME} holds: line 4 (game g0004," in err
    assert lines(out) == before


def test_a_torn_last_line_is_named_with_its_game(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    before = lines(out)
    (out / GAMES_FILE).write_bytes(b"\n".join(before[:3]) + b"\n" + before[3][:100])
    (out / DB_NAME).unlink()
    capsys.readouterr()
    assert tournament(out, "--rebuild-db", games=4) == 0
    err = capsys.readouterr().err
    assert "3 game(s), each checked" in err and "its last line, line 4 (game g0004), was cut short" in err
    assert len(lines(out)) == 4  # g0004 played again


def test_a_torn_line_after_a_commit_is_named_and_written_whole(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = copy_of(finished, tmp_path)
    before = lines(out)
    (out / GAMES_FILE).write_bytes(b"\n".join(before[:3]) + b"\n" + before[3][:100])
    capsys.readouterr()
    assert tournament(out, games=4) == 0
    err = capsys.readouterr().err
    assert f"{out / GAMES_FILE}: its last line (line 4, game g0004) was cut short" in err
    assert "the database holds that game: written whole from it" in err and lines(out) == before


@pytest.mark.parametrize("name", [LOCK_NAME, "live.jsonl", GAMES_FILE])
def test_a_symlink_planted_in_the_output_directory_is_never_written_through(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    out = copy_of(finished, tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if name == GAMES_FILE:  # games.jsonl is appended to when a game is played: one more game per pairing
        (out / name).unlink()
    else:
        (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(victim)
    capsys.readouterr()
    tournament(out, games=5)
    err = capsys.readouterr().err
    assert victim.read_text() == "precious\n"
    assert f"{out / name} is a symbolic link, a hard link or not a regular file" in err or name == GAMES_FILE
    assert "Traceback" not in err


def forge(text: bytes) -> bytes:
    """The record with a move's time changed: consistent in itself (its moves replay to its result), and not the
    game the run saved: what a careful forger writes."""
    record = json.loads(text)
    record["moves"][0]["elapsed_ms"] += 1.0
    return json.dumps(record, separators=(",", ":")).encode()


def test_a_consistent_forgery_in_games_jsonl_is_named_on_open_and_set_aside_on_resume(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from referee.record import GameRecord
    from referee.run.audit import check_record
    from referee.run.rundir import RunDirectory

    out = copy_of(finished, tmp_path)
    before = lines(out)
    forged = [*before]
    forged[1] = forge(before[1])
    check_record(GameRecord.model_validate_json(forged[1]))  # it replays to its result: no audit refuses it
    extra = json.loads(before[3])
    extra["game_id"] = "g0005"  # a game this run never played, whole and consistent
    (out / GAMES_FILE).write_bytes(b"\n".join([*forged, json.dumps(extra).encode()]) + b"\n")
    # A reader (report, serve) names both at once, without reading a record from the database.
    with RunDirectory.open(out) as run:
        run.check_games_file()
        assert run.errors == [
            f"{GAMES_FILE} line 2 (game g0002) differs from {DB_NAME}'s copy: damaged or forged. {DB_NAME}'s copy is"
            " the one counted and shown; run the same match or tournament command to set the line aside",
            f"{GAMES_FILE} line 5 holds game g0005, which {DB_NAME} does not count (a line damaged, forged or copied"
            " from another run): it is not counted; run the same match or tournament command to have it set aside",
        ]
        assert run.count() == 4
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: games.jsonl line 2 (game g0002) differs from run.db's copy: damaged or forged" in err
    page = (out / "report.html").read_text()
    assert "line 2 (game g0002) differs from" in page and "line 5 holds game g0005" in page
    # The resume names the forgery, keeps it aside and never counts it; the file holds the run's games again.
    (out / GAMES_FILE).write_bytes(b"\n".join(forged) + b"\n")
    assert tournament(out, games=4) == 0
    err = capsys.readouterr().err
    assert f"{out / GAMES_FILE} line 2 (game g0002) is damaged or forged (its moves replay to its result" in err
    assert "differs from run.db's copy (moves.0.elapsed_ms)" in err and "never counted" in err
    assert lines(out) == before
    assert [entry["source"] for entry in quarantined(out)] == [f"{GAMES_FILE} line 2"]
    with RunDirectory.open(out) as run:
        run.check_games_file()
        assert run.errors == []


def test_damaged_or_missing_digests_are_named_and_made_again_on_resume(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from referee.run.rundir import RunDirectory

    out = copy_of(finished, tmp_path)
    with sqlite3.connect(out / DB_NAME) as db:  # a changed byte in one digest
        digest = db.execute("SELECT digest FROM games WHERE number = 3").fetchone()[0]
        db.execute("UPDATE games SET digest = ? WHERE number = 3", (bytes([digest[0] ^ 1]) + digest[1:],))
    with RunDirectory.open(out) as run:  # the reader sees the database's copy does not match its own digest
        run.check_games_file()
        assert run.errors == [
            f"{DB_NAME}: the copy of game g0003 does not match its digest (damaged); run the same match or tournament"
            f" command to repair it from {GAMES_FILE} line 3"
        ]
    capsys.readouterr()
    assert tournament(out, games=4) == 0
    err = capsys.readouterr().err
    assert f"{out / DB_NAME}: the digest of game g0003 was damaged; made again from its record" in err
    with RunStore(out / DB_NAME) as store:
        assert store.digests_intact()
    # A database from before the digests: they are made at its next start, silently, and then checked.
    with sqlite3.connect(out / DB_NAME) as db:
        db.execute("UPDATE games SET digest = NULL")
        db.execute("DELETE FROM meta WHERE key = 'digests_crc'")
    with RunDirectory.open(out) as run:
        run.check_games_file()
        assert run.errors == []  # nothing to compare with yet
    assert tournament(out, games=4) == 0
    assert "warning" not in capsys.readouterr().err
    with RunStore(out / DB_NAME) as store:
        assert store.digests_intact()
