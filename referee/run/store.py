"""The run database of a match or a tournament: the schedule and every finished game, in SQLite, committed
game by game.

One file, `run.db` (`tournament.db` in directories of older versions, still read and resumed), in the output
directory, in WAL mode.
Each write is one small transaction,
committed before the tournament moves on, so killing the referee (even with `kill -9`) loses at most the
games in progress. With `synchronous=NORMAL` a WAL commit is not fsynced, but it is in the OS's hands:
it survives the death of the process, though not a power cut (then the last few games are played again).

A commit takes ~35 us (median), but a WAL checkpoint on a busy machine can take tens of milliseconds
(see benchmarks/bench_tournament_throughput.py), so the tournament writes from a worker thread, one
write at a time: a stall on the trio thread would be charged to bots whose moves arrive meanwhile.

A game is `pending` until it finishes normally or by forfeit (`done`): nothing is written when it starts, so a
game a stop interrupts, or a killed referee loses, is simply still pending (one commit a game, not two: marking
each game `running` at its start cost a transaction a game and was never read). A void game (the referee's own
failure) is kept in `void_games` for the record and the game stays pending, so it is played again. A game left
`running` by an older referee is pending again on the next start.

Commits are idempotent by game number: a game already done is never stored (or counted) twice, whoever
reports it again (a worker that was thought lost, a cluster node). Every done game gets `seq`, its place
in commit order, so the SPRT's verdict can be replayed from the database alone (see referee.stats.sprt).

Layout (schema 2): `games` holds only small columns (the schedule, the status, the result, `seq` and the
figures resume needs), `records` the record JSON (~11.5 KB a game) by game number. So a save costs the same
at game 50,000 as at game 1 (the next `seq` is an index search, not a scan of every stored record), and a
resume reads a few bytes per game, never a record. Beside each record is its viewer line
(referee.outputs.viewerline), made once at the save, which the report and the live page read instead of the record.
A database of schema 1 (the records inside `games`) is
migrated when it is first opened for writing (a reader opening it migrates it when no run holds it).

Every read of a run's database goes through this module (`StoreReader`, read-only, for the readers of a
running or finished run: the report, `replay`, `serve`; `RunStore` for the runner): no other module has SQL
against these tables.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from protocol.rules import Result
from referee.outputs.files import UnsafeOutputError, open_output, refuse_link
from referee.outputs.viewerline import line_text
from referee.record import GameRecord
from referee.run.schedule import ScheduledGame

DB_NAME = "run.db"
LOCK_NAME = "run.lock"
OLD_DB_NAME = "tournament.db"
OLD_LOCK_NAME = "tournament.lock"
"""A run's database and lock in directories made before matches and tournaments shared one runner: such a
directory keeps its names (an older alternator may still open it), and every reader and writer finds them."""


def database_path(out_dir: Path) -> Path:
    """The run's database in `out_dir`: `run.db`, or `tournament.db` in a directory an older alternator made."""
    old = out_dir / OLD_DB_NAME
    return old if not (out_dir / DB_NAME).exists() and old.exists() else out_dir / DB_NAME


def lock_path(out_dir: Path) -> Path:
    """The lock file that goes with the run's database (`database_path`): `run.lock` or `tournament.lock`."""
    return out_dir / (OLD_LOCK_NAME if database_path(out_dir).name == OLD_DB_NAME else LOCK_NAME)


SCHEMA_VERSION = 2

_META = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


def _games_table(name: str) -> str:
    return f"""
CREATE TABLE IF NOT EXISTS {name} (
    number INTEGER PRIMARY KEY,
    pairing INTEGER NOT NULL,
    round INTEGER NOT NULL,
    black TEXT NOT NULL,
    white TEXT NOT NULL,
    opening TEXT NOT NULL,          -- JSON list of moves
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done')),
    result TEXT,
    termination TEXT,
    finished_at TEXT,
    seq INTEGER,                    -- commit order of done games, from 1
    game_id TEXT,                   -- of the done game's record
    black_cpu_ms REAL,              -- the record's black.off_turn_cpu_ms (the standings show it)
    white_cpu_ms REAL,
    digest BLOB                     -- of the done game's record (record_digest): its line of games.jsonl must match
);
"""


_SCHEMA = (
    _games_table("games")
    + """
CREATE UNIQUE INDEX IF NOT EXISTS games_by_seq ON games (seq);
CREATE INDEX IF NOT EXISTS games_by_id ON games (game_id);
CREATE TABLE IF NOT EXISTS records (
    number INTEGER PRIMARY KEY,     -- games.number of a done game
    record TEXT NOT NULL,           -- the GameRecord as JSON
    line TEXT,                      -- the viewer's compact line (outputs.viewerline); null: migrated, made on read
    line_crc INTEGER,               -- CRC-32 of line's UTF-8: a damaged line is found at the start (null: older)
    record_crc INTEGER              -- CRC-32 of record's UTF-8: which copy is damaged when games.jsonl's differs
);
CREATE TABLE IF NOT EXISTS void_games (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    number INTEGER NOT NULL REFERENCES games(number),
    termination TEXT NOT NULL,
    reason TEXT NOT NULL,
    record TEXT,
    at TEXT NOT NULL
);
"""
)


class DoneGame(NamedTuple):
    """A done game as the store's small columns give it, without its record: what counting needs."""

    number: int
    round: int
    black: str
    white: str
    result: Result
    termination: str
    black_cpu_ms: float | None
    white_cpu_ms: float | None
    game_id: str


class PoolChange(NamedTuple):
    """How the bots of a resumed tournament differ from those it was started with (`RunStore.start`)."""

    field: list[str]
    """Every bot the run has had: the stored order, then the latecomers."""
    added: list[str]
    retired: list[str]


class AuditRow(NamedTuple):
    """A done game's small columns and its record's bytes, as the comparison with games.jsonl reads them."""

    number: int
    seq: int
    game_id: str
    result: str
    termination: str
    black_cpu_ms: float | None
    white_cpu_ms: float | None
    record: bytes | None
    line: bytes | None  # the viewer line
    line_crc: int | None  # its checksum as saved (None: saved before checksums)
    record_crc: int | None  # the record's checksum as saved (None: saved before checksums)
    digest: bytes | None = None  # the record's digest as saved (record_digest; None: saved before digests)

    @property
    def line_intact(self) -> bool:
        return self.line_crc is None or (self.line is not None and line_crc(self.line) == self.line_crc)

    @property
    def record_intact(self) -> bool | None:
        """Whether the record's bytes are those saved (None: no checksum was saved, from an older alternator)."""
        if self.record_crc is None:
            return None
        return self.record is not None and line_crc(self.record) == self.record_crc


class StoreError(Exception):
    """The database cannot be used for this tournament; the message says why and what to do."""


def damaged_database(path: Path, error: sqlite3.DatabaseError | UnicodeDecodeError | OSError) -> StoreError:
    """The error for a database that cannot be read: games.jsonl beside it still holds the games.

    (A disk already full when the run starts fails the same calls: that is said instead.)
    """
    if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or isinstance(error, OSError):
        return StoreError(
            f"the disk holding {path.parent} is full ({error}); free some space and run the same command (the games"
            " recorded are safe)"
        )
    if isinstance(error, UnicodeDecodeError):  # SQLite's message quotes the damaged bytes of its schema
        error = sqlite3.DatabaseError("the database is damaged: its schema holds bytes that are not text")
    return StoreError(
        f"{path}: cannot open the tournament database ({error}). {path.with_name('games.jsonl')} still holds"
        " every game recorded: run the same command with --rebuild-db to rebuild the database from it"
        " (the damaged file is kept beside it), or choose another output directory"
    )


_EXPECTED_COLUMNS: dict[str, list[tuple[Any, ...]]] = {
    "meta": [("key", "TEXT", 0, None, 1), ("value", "TEXT", 1, None, 0)],
    "games": [
        ("number", "INTEGER", 0, None, 1),
        ("pairing", "INTEGER", 1, None, 0),
        ("round", "INTEGER", 1, None, 0),
        ("black", "TEXT", 1, None, 0),
        ("white", "TEXT", 1, None, 0),
        ("opening", "TEXT", 1, None, 0),
        ("status", "TEXT", 1, "'pending'", 0),
        ("result", "TEXT", 0, None, 0),
        ("termination", "TEXT", 0, None, 0),
        ("finished_at", "TEXT", 0, None, 0),
        ("seq", "INTEGER", 0, None, 0),
        ("game_id", "TEXT", 0, None, 0),
        ("black_cpu_ms", "REAL", 0, None, 0),
        ("white_cpu_ms", "REAL", 0, None, 0),
        ("digest", "BLOB", 0, None, 0),
    ],
    "records": [("number", "INTEGER", 0, None, 1), ("record", "TEXT", 1, None, 0), ("line", "TEXT", 0, None, 0)],
    "void_games": [
        ("id", "INTEGER", 0, None, 1),
        ("number", "INTEGER", 1, None, 0),
        ("termination", "TEXT", 1, None, 0),
        ("reason", "TEXT", 1, None, 0),
        ("record", "TEXT", 0, None, 0),
        ("at", "TEXT", 1, None, 0),
    ],
}
"""The columns of each table of schema 2 as `PRAGMA table_info` gives them (name, type, not null, default, key):
a byte changed in the schema's text that still parses (a type, a default) shows as a difference here."""
_STATUS_CHECK = "CHECK (status IN ('pending', 'running', 'done'))"


def check_integrity(db: sqlite3.Connection, path: Path) -> None:
    """StoreError naming the damage when the database is damaged.

    SQLite's own `PRAGMA quick_check` of the whole file (every page, every b-tree, every record's format:
    0.3 to 1 s at 50,000 games, 800 MB), its `integrity_check` of the small tables (their indexes too: 0.1 s)
    and the schema's columns against the expected ones. Damage inside a record's text passes these (SQLite keeps
    no checksums): the comparison with games.jsonl at every start (referee.run.recovery) finds it.
    """
    _raise_if_damaged(path, _whole_file_problems(db), _table_problems(db))


def _whole_file_problems(db: sqlite3.Connection) -> list[str]:
    return [str(row[0]) for row in db.execute("PRAGMA quick_check(5)")]


def _table_problems(db: sqlite3.Connection) -> list[str]:
    problems = []
    for table in ("meta", "games", "void_games"):
        if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone():
            problems += [str(row[0]) for row in db.execute(f"PRAGMA integrity_check({table})")]
    if _layout(db) == 2:
        for table, expected in _EXPECTED_COLUMNS.items():
            found = [tuple(row[1:]) for row in db.execute(f"PRAGMA table_info({table})")]
            if found and found[: len(expected)] != expected[: len(found)]:
                wrong = next((f for f, e in zip(found, expected, strict=False) if f != e), found[len(expected) :])
                problems.append(f"the schema of table {table} is not the arena's (column {wrong})")
        sql = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'games'").fetchone()
        if sql is not None and "CHECK" in str(sql[0]) and _STATUS_CHECK not in str(sql[0]):
            problems.append("the schema of table games is not the arena's (its status check)")
    return [problem for problem in problems if problem not in _NO_PROBLEM]


_NO_PROBLEM = ("ok", "CHECK constraint failed in games")
"""What SQLite's checks say of a sound database. A status no run writes fails the games table's CHECK: `broken_rows`
finds it, and it is repaired from games.jsonl."""


def _raise_if_damaged(path: Path, whole_file: list[str], tables: list[str]) -> None:
    problems = [problem for problem in (*whole_file, *tables) if problem not in _NO_PROBLEM][:5]
    if problems:
        raise StoreError(
            f"{path}: the tournament database is damaged ({'; '.join(problems)})."
            f" {path.with_name('games.jsonl')} still holds every game recorded: run the same command with"
            " --rebuild-db to rebuild the database from it (each of its games is checked; the damaged file is kept"
            " beside it), or choose another output directory"
        )


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to a run's database (text that is not UTF-8 read leniently)."""
    # as_uri: a '#', '?' or '%' in the run's path is escaped, not taken for a part of the URI
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    db.text_factory = _lenient_text
    return db


class _WholeFileCheck:
    """`check_integrity`'s `PRAGMA quick_check` of the whole file, on a read-only connection of its own, in a thread:
    SQLite runs it without Python's lock, so a start compares games.jsonl with the records meanwhile (on two cores
    the check's 0.3 s at 50,000 games are hidden in the comparison's 1.1 s). `RunStore.wait_intact` takes its
    answer: before anything is written, and before the comparison's own answer is acted on."""

    def __init__(self, path: Path) -> None:
        self.problems: list[str] = []
        self.error: sqlite3.Error | UnicodeDecodeError | None = None
        self._db = _connect_read_only(path)
        self._thread = threading.Thread(target=self._run, name="alternator-quick-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.problems = _whole_file_problems(self._db)
        except (sqlite3.Error, UnicodeDecodeError) as error:
            self.error = error

    def result(self) -> list[str]:
        """The problems found (sqlite3.DatabaseError: the file could not be read through)."""
        self._thread.join()
        self._db.close()  # here, not in the thread: `cancel` never interrupts a connection being closed
        if self.error is not None:
            raise self.error
        return self.problems

    def cancel(self) -> None:
        self._db.interrupt()
        self._thread.join()
        self._db.close()


def line_crc(line: str | bytes) -> int:
    """The checksum kept beside a viewer line or a record (its UTF-8's CRC-32: ~1 us a line, ~3 us a record)."""
    return zlib.crc32(line.encode() if isinstance(line, str) else line)


def record_digest(text: str | bytes) -> bytes:
    """The digest kept beside each done game (`games.digest`): the first 16 bytes of the SHA-256 of its record's
    UTF-8 (~15 us a record). games.jsonl's line of the game must have the same: a line that differs, damaged or
    forged (consistent in itself, its moves replaying to its result), is found by hashing the file's lines and
    looking each game up, without reading a record from the database; and a forger cannot make a line that
    differs but matches, as one could a CRC."""
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).digest()[:16]


def digests_crc(digests: Iterable[bytes | None], start: int = 0) -> int:
    """The CRC-32 of the done games' digests in commit order, one after the other (a missing one counts as
    none): kept in `meta` (`digests_crc`), extended at each save, so that a start checks every digest in a few
    milliseconds (a byte changed in one no longer matches) without hashing a record."""
    crc = start
    for digest in digests:
        if digest is not None:
            crc = zlib.crc32(digest, crc)
    return crc


def _lenient_text(data: bytes) -> str:
    """SQLite text as str, a byte that is not UTF-8 (damage) shown as U+FFFD: the checks that follow name it,
    where the default decoding would raise from the middle of a query."""
    return data.decode("utf-8", "replace")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


_SHOWN = ("title", "anchor")
"""Settings kept in `meta` beside the fingerprint, not in it: shown by every reader, free to change on a resume."""


class _Reads:
    """The queries of a run's database, shared by the runner's `RunStore` and the read-only `StoreReader`."""

    path: Path
    _db: sqlite3.Connection

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def fingerprint(self) -> dict[str, Any] | None:
        """The settings the run was started with (kind, bots, sprt, title, ...), None before it was started."""
        stored = self.get_meta("fingerprint")
        if stored is None:
            return None
        shown = {key: value for key in _SHOWN if (value := self.get_meta(key)) is not None}
        return {**_settings(stored, self.path), **shown}

    def scheduled(self) -> dict[int, ScheduledGame]:
        rows = self._small_rows("SELECT number, pairing, round, black, white, opening FROM games ORDER BY number")
        openings: dict[str, tuple[str, ...]] = {}  # each opening is played by two games at least: parsed once
        games = {}
        for number, pairing, game_round, black, white, text in rows:
            opening = openings.get(text)
            if opening is None:
                opening = openings[text] = tuple(json.loads(text))
            games[number] = ScheduledGame(number, pairing, game_round, black, white, opening)
        return games

    def game_ids(self) -> list[str]:
        """The game ids of every done game in commit order (what games.jsonl holds)."""
        rows = self._db.execute("SELECT game_id FROM games WHERE status = 'done' ORDER BY seq")
        return [str(row[0]) for row in rows]

    def pending(self) -> list[int]:
        rows = self._db.execute("SELECT number FROM games WHERE status != 'done' ORDER BY number")
        return [row[0] for row in rows]

    def done_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone()[0])

    def total_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM games").fetchone()[0])

    def done_games(self) -> Iterator[DoneGame]:
        """Every done game in commit order, from the small columns (no record is read)."""
        rows = self._small_rows(
            "SELECT number, round, black, white, result, termination, black_cpu_ms, white_cpu_ms, game_id"
            " FROM games WHERE status = 'done' ORDER BY seq"
        )
        return map(DoneGame._make, rows)

    def _small_rows(self, sql: str, parameters: Sequence[Any] = (), chunk: int = 1024) -> Iterator[Any]:
        """The rows of a query over every game, one at a time (`RunStore` reads them faster, `chunk` at a time)."""
        return iter(self._db.execute(sql, parameters))

    def finished(self) -> Iterator[tuple[int, str, str, Result, str, float | None, float | None]]:
        """(number, black, white, result, termination, black and white off-turn CPU ms) of every done game, in
        commit order (the CPU figures null where not measured)."""
        for game in self.done_games():
            yield (game.number, game.black, game.white, game.result, game.termination, *game[6:8])

    def records(self) -> Iterator[str]:
        """The JSON record of every done game, in commit order (games.jsonl's order)."""
        for _, data in self.done_with_records():
            yield data

    def done_with_records(self, start: int = 0) -> Iterator[tuple[DoneGame, str]]:
        """Every done game from the `start`th committed on (0: all), in commit order, with its record's JSON; one
        row at a time (a run of 50,000 games is never all in memory)."""
        rows = self._db.execute(
            "SELECT games.number, games.round, games.black, games.white, games.result, games.termination,"
            " games.black_cpu_ms, games.white_cpu_ms, games.game_id, records.record"
            " FROM games JOIN records ON records.number = games.number"
            " WHERE games.status = 'done' AND games.seq > ? ORDER BY games.seq",
            (start,),
        )
        for row in rows:
            yield DoneGame(*row[:9]), str(row[9])

    def done_with_lines(self, start: int = 0) -> Iterator[tuple[DoneGame, str | None, str | None]]:
        """Every done game from the `start`th committed on, in commit order, with its viewer line (and, where a
        migrated game has none, or its line does not match the checksum saved with it, its record's JSON
        instead); one row at a time."""
        checksum = "records.line_crc" if "line_crc" in _columns(self._db, "records") else "NULL"
        rows = self._db.execute(
            "SELECT games.number, games.round, games.black, games.white, games.result, games.termination,"
            f" games.black_cpu_ms, games.white_cpu_ms, games.game_id, records.line, {checksum}"
            " FROM games JOIN records ON records.number = games.number"
            " WHERE games.status = 'done' AND games.seq > ? ORDER BY games.seq",
            (start,),
        )
        for row in rows:
            line, saved = row[9], row[10]
            if line is None or (saved is not None and line_crc(line) != saved):  # damaged: made from the record
                record = self._db.execute("SELECT record FROM records WHERE number = ?", (row[0],)).fetchone()
                yield DoneGame(*row[:9]), None, None if record is None else str(record[0])
            else:
                yield DoneGame(*row[:9]), line, None

    def line_at(self, seq: int) -> tuple[str | None, str | None] | None:
        """The viewer line (or, without one, the record's JSON) of the `seq`th game committed, or None."""
        row = self._db.execute(
            "SELECT records.line, CASE WHEN records.line IS NULL THEN records.record END"
            " FROM games JOIN records ON records.number = games.number WHERE games.seq = ?",
            (seq,),
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def page_of_done(
        self,
        offset: int,
        limit: int,
        *,
        bot: str | None = None,
        result: str | None = None,
        termination: str | None = None,
    ) -> tuple[int, list[tuple[int, str, str, str, str, str | None, str | None]]]:
        """One page of the done games in commit order, those of `bot` (either colour), `result` and `termination`
        only when given: (how many games match, [(seq, black, white, result, termination, viewer line or None,
        the record's JSON where the line is missing or damaged)] from the `offset`th match, at most `limit`).

        What it reads does not grow with the run but by the rows skipped: the matching games' small columns
        (an index search by seq, no record) are counted and skipped, and only the page's lines are read."""
        where, parameters = ["status = 'done'"], []
        if bot is not None:
            where.append("(black = ? OR white = ?)")
            parameters += [bot, bot]
        if result is not None:
            where.append("result = ?")
            parameters.append(result)
        if termination is not None:
            where.append("termination = ?")
            parameters.append(termination)
        condition = " AND ".join(where)
        total = int(self._db.execute(f"SELECT COUNT(*) FROM games WHERE {condition}", parameters).fetchone()[0])
        rows = self._db.execute(
            f"SELECT number, seq, black, white, result, termination FROM games WHERE {condition}"
            " ORDER BY seq LIMIT ? OFFSET ?",
            [*parameters, max(0, limit), max(0, offset)],
        ).fetchall()
        checksum = "line_crc" if "line_crc" in _columns(self._db, "records") else "NULL"
        page = []
        for number, seq, black, white, won, how in rows:
            found = self._db.execute(f"SELECT line, {checksum} FROM records WHERE number = ?", (number,)).fetchone()
            line, saved = (None, None) if found is None else found
            data = None
            if line is None or (saved is not None and line_crc(line) != saved):  # damaged: made from the record
                line = None
                record = self._db.execute("SELECT record FROM records WHERE number = ?", (number,)).fetchone()
                data = None if record is None else str(record[0])
            page.append((int(seq), str(black), str(white), str(won), str(how), line, data))
        return total, page

    def copy_of(self, game_id: str) -> tuple[int | None, str, bytes | None] | None:
        """(seq, status, digest) of game `game_id` (an index search), or None when the database has no such game."""
        row = self._db.execute(
            "SELECT seq, status, digest FROM games WHERE game_id = ? ORDER BY status = 'done' DESC LIMIT 1", (game_id,)
        ).fetchone()
        return None if row is None else (row[0], str(row[1]), None if row[2] is None else bytes(row[2]))

    def digests_from(self, seq: int, count: int) -> list[tuple[int, str, bytes | None]]:
        """(seq, game id, digest) of up to `count` done games from the `seq`th committed on, in commit order."""
        rows = self._db.execute(
            "SELECT seq, game_id, digest FROM games WHERE seq >= ? ORDER BY seq LIMIT ?", (seq, count)
        ).fetchall()
        return [(int(row[0]), str(row[1]), None if row[2] is None else bytes(row[2])) for row in rows]

    def has_digests(self) -> bool:
        """Whether the database keeps a digest of each record (an older one does not until a run resumes it)."""
        return "digest" in _columns(self._db, "games")

    def record_at(self, seq: int) -> str | None:
        """The JSON record of the `seq`th game committed (from 1), or None."""
        row = self._db.execute(
            "SELECT records.record FROM games JOIN records ON records.number = games.number WHERE games.seq = ?",
            (seq,),
        ).fetchone()
        return None if row is None else str(row[0])

    def find_record(self, game_id: str) -> str | None:
        """The JSON record of game `game_id` (a done game, else its last void or aborted try), or None."""
        row = self._db.execute(
            "SELECT records.record FROM games JOIN records ON records.number = games.number"
            " WHERE games.game_id = ? AND games.status = 'done'",
            (game_id,),
        ).fetchone()
        if row is None:
            row = self._db.execute(  # void tries are few: a scan of them is cheap
                "SELECT record FROM void_games WHERE json_extract(record, '$.game_id') = ? ORDER BY id DESC",
                (game_id,),
            ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def void_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM void_games").fetchone()[0])

    def audit_rows(self, start: int = 0) -> Iterator[AuditRow]:
        """Every done game from the `start`th committed on (0: all), in commit order, with its small columns and
        its record's bytes (None: no record row), for the comparison with games.jsonl (referee.run.recovery)."""
        rows = self._small_rows(
            f"SELECT {self._audit_columns()} FROM games LEFT JOIN records ON records.number = games.number"
            " WHERE games.status = 'done' AND games.seq > ? ORDER BY games.seq",
            (start,),
            chunk=64,  # 64 records (~0.9 MB) at a time
        )
        return map(AuditRow._make, rows)  # the columns in AuditRow's order: no Python step per row but this

    def _audit_columns(self) -> str:
        digest = "CAST(games.digest AS BLOB)" if self.has_digests() else "NULL"
        return (
            "games.number, games.seq, games.game_id, games.result, games.termination, games.black_cpu_ms,"
            " games.white_cpu_ms, CAST(records.record AS BLOB), CAST(records.line AS BLOB), records.line_crc,"
            f" records.record_crc, {digest}"
        )

    def done_numbers(self) -> list[tuple[int, str]]:
        """(number, game id) of every done game, in commit order (a few bytes a game)."""
        rows = self._db.execute("SELECT number, game_id FROM games WHERE status = 'done' ORDER BY seq")
        return [(int(row[0]), str(row[1])) for row in rows]

    def audit_row(self, number: int) -> AuditRow | None:
        """One done game's small columns and record bytes (as `audit_rows` gives them), or None."""
        row = self._db.execute(
            f"SELECT {self._audit_columns()} FROM games LEFT JOIN records ON records.number = games.number"
            " WHERE games.status = 'done' AND games.number = ?",
            (number,),
        ).fetchone()
        return None if row is None else AuditRow._make(row)

    def damaged_ids(self) -> list[str]:
        """The game ids of the rows `broken_rows` names (their copy in games.jsonl is not a game lost)."""
        return [f"g{number:04d}" for number, _ in self.broken_rows()]

    def broken_rows(self) -> list[tuple[int, str]]:
        """(number, what is wrong) of every game whose small columns no run could have written: a status that is
        not one, a done game without its place in commit order or its result. (Damage: a byte changed.)"""
        rows = self._db.execute(
            "SELECT number, status, seq, result, game_id FROM games NOT INDEXED"
            " WHERE status NOT IN ('pending', 'running', 'done')"
            " OR (status = 'done' AND (seq IS NULL OR result IS NULL OR game_id IS NULL))"
        )
        broken = []
        for number, status, seq, result, game_id in rows:
            if status not in ("pending", "running", "done"):
                broken.append((int(number), f"its status is {status!r}"))
            else:
                missing = [
                    name for name, value in (("seq", seq), ("result", result), ("game_id", game_id)) if value is None
                ]
                broken.append((int(number), f"it is done but has no {', '.join(missing)}"))
        return broken


class StoreReader(_Reads):
    """A read-only view of a run's database, for readers of a run that may be going on (no lock is taken).

    A database of schema 1 is migrated first when no run holds it; StoreError when it cannot be read.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise StoreError(f"{path}: no such database")
        try:
            self._db = self._open()
            check_integrity(self._db, path)
            if _layout(self._db) == 1 or "line" not in _columns(self._db, "records"):
                self._db.close()
                RunStore(path).close()  # migrates (StoreError when a run of an older alternator holds it)
                self._db = self._open()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as error:  # the latter: SQLite's message quoting damage
            raise damaged_database(path, error) from None

    def _open(self) -> sqlite3.Connection:
        db = _connect_read_only(self.path)
        db.execute("PRAGMA busy_timeout=5000")
        return db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunStore(_Reads):
    """The database of one match or tournament. Not thread-safe: use it from one thread at a time."""

    def __init__(self, path: Path, *, lock: TextIO | None = None) -> None:
        """`lock`: the directory's lock, already taken (`lock_directory`) by a caller that must hold it before the
        database is opened (a rebuild, which moves the old database aside first); the store releases it."""
        self.path = path
        self._chain: int | None = None  # the digests' CRC, as last committed (None: read it from meta)
        self.verified: tuple[tuple[int, int], int, int] | None = None
        """games.jsonl's (inode, device), how many of its bytes and how many done games were last found to agree
        (referee.run.recovery): the next comparison in this run starts there."""
        self.agreed: tuple[int, ...] | None = None
        """games.jsonl's identity (inode, size, mtime) and `changes()` when it was last found to hold exactly the
        database's games (referee.run.recovery): not compared again while neither changed."""
        path.parent.mkdir(parents=True, exist_ok=True)
        before = ""
        if lock is None:
            lock, before = _lock_directory(path.parent)
        self._lock = lock
        self.trusted: int | None = _stamped(before, path)
        """The done games of a run that closed having found both copies in agreement, when neither file has been
        written since (their identity and change times as it stamped them): their comparison is not needed."""
        self._verified_at: tuple[int, list[int] | None] | None = None  # changes() and games.jsonl's identity then
        self._whole_file: _WholeFileCheck | None = None  # the integrity check still running (`wait_intact`)
        self._table_problems: list[str] = []
        try:
            # autocommit mode (isolation_level=None): every transaction is an explicit BEGIN ... COMMIT
            # check_same_thread=False: the tournament writes from worker threads, one at a time (its lock).
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.text_factory = _lenient_text
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            if self.trusted is None:  # unchanged since a run checked it, compared both copies and closed it
                self._check_integrity()
            self._db.executescript(_META)
            if _layout(self._db) == 1:
                self._migrate()
            self._db.executescript(_SCHEMA)
            if "line" not in _columns(self._db, "records"):  # a schema 2 database from before the viewer lines
                self._db.execute("ALTER TABLE records ADD COLUMN line TEXT")
            for checksum in ("line_crc", "record_crc"):  # a database from before the checksums
                if checksum not in _columns(self._db, "records"):
                    self._db.execute(f"ALTER TABLE records ADD COLUMN {checksum} INTEGER")
            if "digest" not in _columns(self._db, "games"):  # from before the digests: filled at the next comparison
                self._db.execute("ALTER TABLE games ADD COLUMN digest BLOB")
        except (sqlite3.DatabaseError, UnicodeDecodeError) as error:  # the latter: SQLite's message quoting damage
            self._close_quietly()
            raise damaged_database(path, error) from None
        except StoreError:
            self._close_quietly()
            raise

    def _check_integrity(self) -> None:
        """`check_integrity`: the small tables and the schema now, the whole file in a thread (`_WholeFileCheck`)
        whose answer `wait_intact` takes; at once when the database is to be migrated or has no tables yet (a first
        write comes next) or the small tables are damaged already."""
        self._table_problems = _table_problems(self._db)
        columns = _columns(self._db, "records") | _columns(self._db, "games")
        current = _layout(self._db) == 2 and {"line", "line_crc", "record_crc", "digest", "seq"} <= columns
        try:
            self._whole_file = _WholeFileCheck(self.path)
        except sqlite3.Error:
            check_integrity(self._db, self.path)  # no second connection: the whole file now, as it always was
            return
        if not current or self._table_problems:
            self.wait_intact()

    def wait_intact(self) -> None:
        """StoreError when the database was found damaged when it was opened (`check_integrity`); waits for the
        whole file's check, if it is still running. Every write waits for it, and so does everything the start does
        after comparing games.jsonl with the records (referee.run.recovery), so nothing is ever written to, or read
        from, a damaged file but that comparison's reads (which it answers for: its damage comes first)."""
        check, self._whole_file = self._whole_file, None
        if check is None:
            return
        try:
            problems = check.result()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as error:
            raise damaged_database(self.path, error) from None
        _raise_if_damaged(self.path, problems, self._table_problems)

    def _close_quietly(self) -> None:
        if self._whole_file is not None:
            self._whole_file.cancel()
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self._db.close()
        self._lock.close()

    def _small_rows(self, sql: str, parameters: Sequence[Any] = (), chunk: int = 1024) -> Iterator[Any]:
        """`_Reads._small_rows`, `chunk` rows at a time with their text decoded by SQLite itself: a value costs
        ~0.3 us less than through `_lenient_text` (a 50,000-game killed run's start decodes 550,000: ~0.15 s). Where a
        chunk holds text that is not UTF-8 (damage), the rows from there are read again leniently. (This store is used
        from one thread at a time: its connection decodes so only while a chunk is fetched.)"""
        given = 0
        try:
            self._db.text_factory = str
            cursor = self._db.execute(sql, parameters)
            while rows := cursor.fetchmany(chunk):
                self._db.text_factory = _lenient_text  # while the caller has the rows, and may query
                yield from rows
                given += len(rows)
                self._db.text_factory = str
            return
        except sqlite3.OperationalError as error:
            if "decode" not in str(error):
                raise
        finally:
            self._db.text_factory = _lenient_text
        yield from itertools.islice(self._db.execute(sql, parameters), given, None)

    def changes(self) -> int:
        """How many rows this connection has changed since it opened: a change of the database."""
        return self._db.total_changes

    def _migrate(self) -> None:
        """Schema 1 to 2: the records move out of `games` into `records`, the figures resume needs into columns,
        and `seq` gets a unique index (done games of a database older than `seq` get it in game order)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(games)")}
        seq = "seq" if "seq" in columns else "NULL"
        with self._transaction():
            self._db.execute(_games_table("games_v2"))  # not executescript: it would commit
            self._db.execute(
                "INSERT INTO games_v2 (number, pairing, round, black, white, opening, status, result, termination,"
                " finished_at, seq, game_id, black_cpu_ms, white_cpu_ms)"
                " SELECT number, pairing, round, black, white, opening, status, result, termination, finished_at,"
                f" CASE WHEN status = 'done' THEN ROW_NUMBER() OVER (PARTITION BY status = 'done'"
                f" ORDER BY COALESCE({seq}, number), number) END,"
                " CASE WHEN status = 'done' THEN json_extract(record, '$.game_id') END,"
                " json_extract(record, '$.black.off_turn_cpu_ms'), json_extract(record, '$.white.off_turn_cpu_ms')"
                " FROM games"
            )
            self._db.execute("CREATE TABLE IF NOT EXISTS records (number INTEGER PRIMARY KEY, record TEXT NOT NULL)")
            self._db.execute(
                "INSERT INTO records (number, record) SELECT number, record FROM games"
                " WHERE status = 'done' AND record IS NOT NULL"
            )
            self._db.execute("DROP TABLE games")
            self._db.execute("ALTER TABLE games_v2 RENAME TO games")
            self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

    def mark_verified(self, identity: tuple[int, int], end: int, count: int) -> None:
        """games.jsonl (`identity`, its first `end` bytes) was found to hold exactly the first `count` done games
        (referee.run.recovery): the next comparison in this run starts there, and if nothing changes before the
        store closes, the next run need not compare them again (`close`)."""
        self.verified = (identity, end, count)
        self._verified_at = (self.changes(), _identity(self.path.with_name("games.jsonl")))

    def close(self) -> None:
        """Close the database; then, when the last comparison of the two copies found them in agreement and
        neither has changed since, stamp the lock file with both files' identities (`_stamped` reads it)."""
        verified, at = self.verified, self._verified_at
        unchanged = verified is not None and at is not None and at[0] == self.changes()
        if self._whole_file is not None:  # opened and closed before its check answered: it is not needed now
            self._whole_file.cancel()
            self._whole_file = None
        self._db.close()
        try:
            games = self.path.with_name("games.jsonl")
            if unchanged and verified is not None and at is not None and _identity(games) == at[1]:
                stamp = {**_files_now(self.path), "count": verified[2]}
                self._lock.write(_STAMP + json.dumps(stamp) + "\n")
                self._lock.flush()
        except OSError:
            pass  # no stamp: the next run compares the copies whole
        finally:
            self._lock.close()  # releases the lock

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the schedule --------------------------------------------------------------------------------

    def start(
        self,
        fingerprint: dict[str, Any],
        schedule: list[ScheduledGame] | None,
        *,
        pool: bool = False,
        latecomers: bool = True,
    ) -> PoolChange:
        """Create the tournament, or check that this one can resume it; StoreError explains a mismatch.

        Compatible means: the same fingerprint (bots, board, komi, time control, openings source), and every
        game already scheduled is scheduled again identically. More games per pairing simply adds games.
        `schedule` None: the games are added as they are scheduled (`add_games`), and the caller's scheduler
        checks the stored ones. `pool`: the bots may differ from the stored ones by name (latecomers and retired
        bots; a bot of both must be the same), and the stored fingerprint keeps every bot the run has had;
        `latecomers` False: a new bot is refused (a format whose field is fixed once started).
        """
        from referee.run.config import describe_changes

        fingerprint = dict(fingerprint)
        change = PoolChange([bot["name"] for bot in fingerprint.get("bots", []) if isinstance(bot, dict)], [], [])
        # The event's title and the rating scale's anchor: shown, never compared (a run may be renamed, re-anchored).
        shown = {key: fingerprint.pop(key, None) for key in _SHOWN}
        stored = self.get_meta("fingerprint")
        if stored is not None and _settings(stored, self.path) != fingerprint and not self.anything_recorded():
            # Stopped before any game was recorded: nothing to keep, so the directory is not bound to it.
            with self._transaction():
                self._db.execute("DELETE FROM records")
                self._db.execute("DELETE FROM games")
                self._db.execute("DELETE FROM meta")
            stored = None
        if stored is not None:
            old = _settings(stored, self.path)
            if pool and old.get("kind", "tournament") == fingerprint.get("kind"):
                change, fingerprint = _pool_change(old, fingerprint, self.path.parent)
                if change.added and not latecomers:
                    raise StoreError(
                        f"{self.path.parent} holds a {fingerprint.get('format')} tournament whose field is fixed once"
                        f" it has started: {', '.join(change.added)} cannot join it. Play them in another tournament"
                        " (--out DIR), or leave them out to resume this one"
                    )
                old = {**old, "bots": fingerprint["bots"]}  # compared by name in _pool_change
            if old != fingerprint:
                was, now = old.get("kind", "tournament"), fingerprint.get("kind", "tournament")
                if was != now:
                    raise StoreError(
                        f"{self.path.parent} holds a {was}, not a {now}: the two are never mixed in one directory;"
                        " choose another output directory (--out DIR)"
                    )
                changes = "".join(f"\n  {change}" for change in describe_changes(old, fingerprint))
                raise StoreError(
                    f"{self.path.parent} holds a {was} with other settings:{changes}\nTo resume it, run with the"
                    f" same settings; for a new {now}, choose another output directory (--out DIR). (If you changed"
                    f" none, {self.path.name} is damaged: --rebuild-db rebuilds it from games.jsonl.)"
                )
        existing = self.scheduled() if schedule is not None else {}
        wanted = {game.number: game for game in schedule or []}
        for number, game in existing.items():
            if number not in wanted:
                raise StoreError(
                    f"{self.path.parent} holds a tournament with more games ({len(existing)}) than this config"
                    f" schedules ({len(wanted)}); raise the games per pairing to at least what it was, or choose"
                    " another output directory (--out DIR)"
                )
            if wanted[number] != game:
                raise StoreError(
                    f"{self.path.parent}: game {number} was scheduled as {game.black} vs {game.white}"
                    f" from {list(game.opening)}, and is now {wanted[number].black} vs {wanted[number].white} from"
                    f" {list(wanted[number].opening)}; resume with the original settings, or choose another output"
                    f" directory (--out DIR). (The settings are the same, so {self.path.name} is damaged, or was"
                    " written by an alternator that scheduled differently: --rebuild-db rebuilds it from games.jsonl.)"
                )
        with self._transaction():
            if stored is None or (change.added or change.retired):
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('fingerprint', ?), ('schema_version', ?)",
                    (json.dumps(fingerprint, sort_keys=True), str(SCHEMA_VERSION)),
                )
                self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('created_at', ?)", (_now(),))
            for key, value in shown.items():
                if value is not None:
                    self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))
                else:
                    self._db.execute("DELETE FROM meta WHERE key = ?", (key,))
            self._insert(schedule or [])
            # Games a killed referee left running were lost with it: play them again.
            self._db.execute("UPDATE games SET status = 'pending' WHERE status = 'running'")
        return change

    def _insert(self, games: Sequence[ScheduledGame]) -> None:
        self._db.executemany(
            "INSERT OR IGNORE INTO games (number, pairing, round, black, white, opening) VALUES (?, ?, ?, ?, ?, ?)",
            [(g.number, g.pairing, g.round, g.black, g.white, json.dumps(list(g.opening))) for g in games],
        )

    def add_games(self, games: Sequence[ScheduledGame]) -> None:
        """Record games as they are scheduled (a format that pairs from results), in one transaction."""
        if games:
            with self._transaction():
                self._insert(games)

    def set_meta(self, key: str, value: str) -> None:
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    # -- games --------------------------------------------------------------------------------------

    def anything_recorded(self) -> bool:
        """Whether any game, done or void, was ever stored."""
        done = self._db.execute("SELECT 1 FROM games WHERE status = 'done' LIMIT 1").fetchone()
        return done is not None or self._db.execute("SELECT 1 FROM void_games LIMIT 1").fetchone() is not None

    def record_game(self, number: int, record: GameRecord, text: str | None = None, line: str | None = None) -> bool:
        """Store a finished game; True when it counts now. A scored game is done (once: a game already done is
        left alone and False returned); a void or aborted one is logged and stays pending.

        The cost does not grow with the games stored: the next `seq` is the last entry of its index, the game
        is found by its number and the record appended to `records`. `text`: the record's JSON, if the caller
        has it already (it writes the same line to games.jsonl); `line`: its viewer line (`line_text`), likewise."""
        if record.termination.is_scored:
            texts = None if text is None else [text]
            return self.record_games([(number, record)], texts, None if line is None else [line]) == 1
        with self._transaction():
            self._db.execute(
                "INSERT INTO void_games (number, termination, reason, record, at) VALUES (?, ?, ?, ?, ?)",
                (number, str(record.termination), record.reason, text or record.model_dump_json(), _now()),
            )
            self._db.execute("UPDATE games SET status = 'pending' WHERE number = ? AND status != 'done'", (number,))
        return False

    def record_games(
        self,
        games: list[tuple[int, GameRecord]],
        texts: Sequence[str] | None = None,
        lines: Sequence[str] | None = None,
    ) -> int:
        """Store many scored games in one transaction (rebuilding a database); how many counted now. `texts` and
        `lines`: their records' JSON and viewer lines, one per game, when the caller has them already."""
        counted = 0
        with self._transaction():
            chain = self._digests_crc()
            for index, (number, record) in enumerate(games):
                if not record.termination.is_scored:
                    continue
                text = record.model_dump_json() if texts is None else texts[index]
                digest = record_digest(text)
                cursor = self._db.execute(
                    "UPDATE games SET status = 'done', result = ?, termination = ?, finished_at = ?, game_id = ?,"
                    " black_cpu_ms = ?, white_cpu_ms = ?, digest = ?,"
                    " seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM games) WHERE number = ? AND status != 'done'",
                    (
                        record.result,
                        str(record.termination),
                        _now(),
                        record.game_id,
                        record.black.off_turn_cpu_ms,
                        record.white.off_turn_cpu_ms,
                        digest,
                        number,
                    ),
                )
                if cursor.rowcount == 1:
                    line = line_text(record) if lines is None else lines[index]
                    self._db.execute(
                        "INSERT OR REPLACE INTO records (number, record, line, line_crc, record_crc)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (number, text, line, line_crc(line), line_crc(text)),
                    )
                    chain = digests_crc([digest], chain)
                    counted += 1
            if counted:
                self._set_digests_crc(chain)
        if counted:
            self._chain = chain  # committed
        return counted

    def restore_game(self, number: int, record: GameRecord, text: str) -> None:
        """Put a game back as done from a record checked elsewhere (a damaged row or record repaired from
        games.jsonl): its small columns from the record, its place in commit order kept where it had one."""
        with self._transaction():
            self._db.execute(
                "UPDATE games SET status = 'done', result = ?, termination = ?, finished_at = COALESCE(finished_at, ?),"
                " game_id = ?, black_cpu_ms = ?, white_cpu_ms = ?,"
                " seq = COALESCE(seq, (SELECT COALESCE(MAX(seq), 0) + 1 FROM games)) WHERE number = ?",
                (
                    record.result,
                    str(record.termination),
                    _now(),
                    record.game_id,
                    record.black.off_turn_cpu_ms,
                    record.white.off_turn_cpu_ms,
                    number,
                ),
            )
            line = line_text(record)
            self._db.execute("UPDATE games SET digest = ? WHERE number = ?", (record_digest(text), number))
            self._db.execute(
                "INSERT OR REPLACE INTO records (number, record, line, line_crc, record_crc) VALUES (?, ?, ?, ?, ?)",
                (number, text, line, line_crc(line), line_crc(text)),
            )
            self._set_digests_crc(digests_crc(self._digests()))

    def requeue(self, number: int) -> None:
        """A done game none of whose copies can be trusted: pending again (played again), its record removed (the
        caller has set it aside). `renumber` then closes the gap it leaves in commit order."""
        with self._transaction():
            self._db.execute(
                "UPDATE games SET status = 'pending', result = NULL, termination = NULL, finished_at = NULL,"
                " seq = NULL, game_id = NULL, black_cpu_ms = NULL, white_cpu_ms = NULL, digest = NULL WHERE number = ?",
                (number,),
            )
            self._db.execute("DELETE FROM records WHERE number = ?", (number,))
            self._set_digests_crc(digests_crc(self._digests()))

    def renumber(self) -> None:
        """Commit order without gaps again (1, 2, 3, ...: readers page by it), order kept. Two steps: the unique
        index on seq."""
        with self._transaction():
            self._db.execute(
                "UPDATE games SET seq = -ranked.k FROM (SELECT number, ROW_NUMBER() OVER (ORDER BY seq) AS k"
                " FROM games WHERE seq IS NOT NULL) AS ranked WHERE games.number = ranked.number"
            )
            self._db.execute("UPDATE games SET seq = -seq WHERE seq < 0")

    # -- the digests of the records ---------------------------------------------------------------------

    def _digests(self) -> Iterator[bytes | None]:
        for (digest,) in self._db.execute("SELECT digest FROM games WHERE status = 'done' ORDER BY seq"):
            yield None if digest is None else bytes(digest)

    def _digests_crc(self) -> int:
        """The CRC of the digests as this store last wrote it (read from `meta` once: this process is the one
        writer, under the directory's lock)."""
        if self._chain is None:
            stored = self.get_meta("digests_crc")
            self._chain = int(stored) if stored is not None and stored.isdigit() else digests_crc(self._digests())
        return self._chain

    def _set_digests_crc(self, crc: int) -> None:
        self._chain = None  # read again should the transaction roll back
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('digests_crc', ?)", (str(crc),))

    def digests_intact(self) -> bool:
        """Whether every done game's digest is as saved, and every one is there: the digests read in commit order
        (a few bytes a game, no record) against their CRC kept in `meta` (a few milliseconds at 50,000 games)."""
        missing = self._db.execute("SELECT 1 FROM games WHERE status = 'done' AND digest IS NULL LIMIT 1").fetchone()
        return missing is None and self.get_meta("digests_crc") == str(digests_crc(self._digests()))

    def set_digests(self, digests: Iterable[tuple[int, bytes]]) -> None:
        """Write the digests of done games ((number, digest), each from a record that was checked: a database from
        before the digests, or one whose digests were damaged), then their CRC, in one transaction."""
        with self._transaction():
            self._db.executemany("UPDATE games SET digest = ? WHERE number = ?", [(d, n) for n, d in digests])
            self._set_digests_crc(digests_crc(self._digests()))

    # -- plumbing -----------------------------------------------------------------------------------

    def _transaction(self) -> _Transaction:
        self.wait_intact()  # nothing is written to a damaged file
        return _Transaction(self._db)


def _stamped(before: str, path: Path) -> int | None:
    """The done games a stamp of the lock file vouches for, when the database (with its WAL) and games.jsonl are
    exactly as the run that wrote it left them; else None (compare the copies)."""
    for line in before.splitlines()[1:]:
        if line.startswith(_STAMP):
            try:
                stamp = json.loads(line[len(_STAMP) :])
                count = stamp.pop("count")
            except (ValueError, KeyError, TypeError, AttributeError):
                return None
            now = _files_now(path)
            if isinstance(count, int) and stamp == now and now["db"] is not None and now["games"] is not None:
                return count
    return None


def _pool_change(old: dict[str, Any], new: dict[str, Any], where: Path) -> tuple[PoolChange, dict[str, Any]]:
    """Compare a tournament's bots by name: (the change, the fingerprint to store and compare: `new` with the
    retired bots kept after the current ones). A bot in both must be the same (StoreError names the change)."""
    from referee.run.config import describe_changes

    old_bots = {bot["name"]: bot for bot in old.get("bots", [])}
    new_bots = {bot["name"]: bot for bot in new.get("bots", [])}
    for name in old_bots.keys() & new_bots.keys():
        if old_bots[name] != new_bots[name]:
            changes = "; ".join(describe_changes(old_bots[name], new_bots[name], name))
            raise StoreError(
                f"{where} holds a tournament where bot {name!r} had other settings ({changes}). To resume it, give"
                f" {name} its settings back (or give the changed bot another name: it then joins as a latecomer and"
                f" {name} retires); for a new tournament, choose another output directory (--out DIR)."
            )
    added = [name for name in new_bots if name not in old_bots]
    retired = [name for name in old_bots if name not in new_bots]
    field = [*old_bots, *added]
    merged = {**new, "bots": [*(new_bots.get(name) or old_bots[name] for name in field)]}
    return PoolChange(field, added, retired), merged


def _settings(stored: str, path: Path) -> dict[str, Any]:
    """The stored fingerprint; StoreError when it is not a JSON object (damaged)."""
    try:
        settings = json.loads(stored)
    except ValueError:
        settings = None
    if not isinstance(settings, dict):
        raise StoreError(
            f"{path}: the tournament database is damaged (its settings are not readable)."
            f" {path.with_name('games.jsonl')} still holds every game recorded: run the same command with --rebuild-db"
            " to rebuild the database from it"
        )
    return settings


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _layout(db: sqlite3.Connection) -> int:
    """1 when the records are inside `games` (schema 1, migrated on open), else 2 (or a new database)."""
    return 1 if "record" in _columns(db, "games") else 2


def lock_directory(out_dir: Path) -> TextIO:
    """Hold an exclusive lock on the run's lock file (`lock_path`) while the store is open: one referee per output
    directory.

    The kernel drops the lock when the process dies, even by kill -9, so a stale lock cannot block a resume.
    The lock file is opened without following a symlink (one planted there would have its target truncated).
    """
    return _lock_directory(out_dir)[0]


def _lock_directory(out_dir: Path) -> tuple[TextIO, str]:
    """`lock_directory`, and what the lock file held before (the last run's stamp, `RunStore.close`)."""
    path = lock_path(out_dir)
    database = database_path(out_dir).name
    try:
        for name in (database, database + "-wal", database + "-shm", "logs"):
            refuse_link(out_dir / name)  # SQLite opens them by name, following links; the bots' logs go in logs/
        handle = open_output(path, "a+")
    except UnsafeOutputError as error:
        raise StoreError(str(error)) from None
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the user must not run two referees in one directory
        return handle, ""
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().strip() or "?"
        handle.close()
        raise StoreError(
            f"{path.parent}: another alternator run (pid {owner}) is using this output directory;"
            " wait for it to finish or stop it, or choose another output directory (--out DIR)"
        ) from None
    handle.seek(0)
    before = handle.read(4096)
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle, before


_STAMP = "verified "


def _identity(path: Path) -> list[int] | None:
    """A file's identity and last change as the kernel keeps them: (device, inode, size, mtime, ctime in ns); the
    change time cannot be set back by a program, so a file written in any way since has another."""
    try:
        info = path.stat()
    except OSError:
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _files_now(db_path: Path) -> dict[str, Any]:
    games = db_path.with_name("games.jsonl")
    wal = db_path.with_name(db_path.name + "-wal")
    return {"db": _identity(db_path), "wal": _identity(wal), "games": _identity(games)}


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
