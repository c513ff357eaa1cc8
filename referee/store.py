"""The run database of a match or a tournament: the schedule and every finished game, in SQLite, committed
game by game.

One file, `tournament.db` (the name predates matches using it too), in the output directory, in WAL mode.
Each write is one small transaction,
committed before the tournament moves on, so killing the referee (even with `kill -9`) loses at most the
games in progress. With `synchronous=NORMAL` a WAL commit is not fsynced, but it is in the OS's hands:
it survives the death of the process, though not a power cut (then the last few games are played again).

A commit takes ~35 us (median), but a WAL checkpoint on a busy machine can take tens of milliseconds
(see benchmarks/bench_tournament_throughput.py), so the tournament writes from a worker thread, one
write at a time: a stall on the trio thread would be charged to bots whose moves arrive meanwhile.

A game is `pending` until it finishes normally or by forfeit (`done`). A void game (the referee's own
failure) is kept in `void_games` for the record and the game stays pending, so it is played again. A game
a stop interrupts is `release`d, pending again with nothing recorded, and a game left `running` by a
killed referee is pending again on the next start.

Commits are idempotent by game number: a game already done is never stored (or counted) twice, whoever
reports it again (a worker that was thought lost, a cluster node). Every done game gets `seq`, its place
in commit order, so the SPRT's verdict can be replayed from the database alone (see referee.sprt).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from protocol.rules import Result
from referee.record import GameRecord
from referee.schedule import ScheduledGame

DB_NAME = "tournament.db"
LOCK_NAME = "tournament.lock"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS games (
    number INTEGER PRIMARY KEY,
    pairing INTEGER NOT NULL,
    round INTEGER NOT NULL,
    black TEXT NOT NULL,
    white TEXT NOT NULL,
    opening TEXT NOT NULL,          -- JSON list of moves
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done')),
    result TEXT,
    termination TEXT,
    record TEXT,                    -- the GameRecord as JSON
    finished_at TEXT,
    seq INTEGER                     -- commit order of done games, from 1
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


class StoreError(Exception):
    """The database cannot be used for this tournament; the message says why and what to do."""


def damaged_database(path: Path, error: sqlite3.DatabaseError | OSError) -> StoreError:
    """The error for a database that cannot be read: games.jsonl beside it still holds the games.

    (A disk already full when the run starts fails the same calls: that is said instead.)
    """
    if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or isinstance(error, OSError):
        return StoreError(
            f"the disk holding {path.parent} is full ({error}); free some space and run the same command (the games"
            " recorded are safe)"
        )
    return StoreError(
        f"{path}: cannot open the tournament database ({error}). {path.with_name('games.jsonl')} still holds"
        " every game recorded: run the same command with --rebuild-db to rebuild the database from it"
        " (the damaged file is kept beside it), or choose another output directory"
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class RunStore:
    """The database of one match or tournament. Not thread-safe: use it from one thread at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _lock_directory(path.with_name(LOCK_NAME))
        try:
            # autocommit mode (isolation_level=None): every transaction is an explicit BEGIN ... COMMIT
            # check_same_thread=False: the tournament writes from worker threads, one at a time (its lock).
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(games)")}
            if "seq" not in columns:  # a database from before commit order was kept
                self._db.execute("ALTER TABLE games ADD COLUMN seq INTEGER")
        except sqlite3.DatabaseError as error:
            self._lock.close()
            raise damaged_database(path, error) from None

    def close(self) -> None:
        self._db.close()
        self._lock.close()  # releases the lock

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- meta ---------------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # -- the schedule --------------------------------------------------------------------------------

    def scheduled(self) -> dict[int, ScheduledGame]:
        rows = self._db.execute("SELECT number, pairing, round, black, white, opening FROM games ORDER BY number")
        return {
            row[0]: ScheduledGame(row[0], row[1], row[2], row[3], row[4], tuple(json.loads(row[5]))) for row in rows
        }

    def start(self, fingerprint: dict[str, Any], schedule: list[ScheduledGame]) -> None:
        """Create the tournament, or check that this one can resume it; StoreError explains a mismatch.

        Compatible means: the same fingerprint (bots, board, komi, time control, openings source), and every
        game already scheduled is scheduled again identically. More games per pairing simply adds games.
        """
        from referee.config import describe_changes

        stored = self.get_meta("fingerprint")
        if stored is not None and json.loads(stored) != fingerprint and not self.anything_recorded():
            # Stopped before any game was recorded: nothing to keep, so the directory is not bound to it.
            with self._transaction():
                self._db.execute("DELETE FROM games")
                self._db.execute("DELETE FROM meta")
            stored = None
        if stored is not None:
            old = json.loads(stored)
            if old != fingerprint:
                was, now = old.get("kind", "tournament"), fingerprint.get("kind", "tournament")
                if was != now:
                    raise StoreError(
                        f"{self.path.parent} holds a {was}, not a {now}: the two are never mixed in one directory;"
                        " choose another output directory (--out DIR)"
                    )
                changes = "; ".join(describe_changes(old, fingerprint))
                raise StoreError(
                    f"{self.path.parent} holds a {was} with other settings ({changes}). To resume it, run with"
                    f" the same settings; for a new {now}, choose another output directory (--out DIR)."
                )
        existing = self.scheduled()
        wanted = {game.number: game for game in schedule}
        for number, game in existing.items():
            if number not in wanted:
                raise StoreError(
                    f"{self.path.parent} holds a tournament with more games ({len(existing)}) than this config"
                    f" schedules ({len(schedule)}); raise the games per pairing to at least what it was, or choose"
                    " another output directory (--out DIR)"
                )
            if wanted[number] != game:
                raise StoreError(
                    f"{self.path.parent}: game {number} was scheduled as {game.black} vs {game.white}"
                    f" from {list(game.opening)}, and is now {wanted[number].black} vs {wanted[number].white} from"
                    f" {list(wanted[number].opening)}; resume with the original settings, or choose another output"
                    " directory (--out DIR)"
                )
        with self._transaction():
            if stored is None:
                self._db.execute(
                    "INSERT INTO meta (key, value) VALUES ('fingerprint', ?), ('schema_version', ?), ('created_at', ?)",
                    (json.dumps(fingerprint, sort_keys=True), str(SCHEMA_VERSION), _now()),
                )
            self._db.executemany(
                "INSERT OR IGNORE INTO games (number, pairing, round, black, white, opening) VALUES (?, ?, ?, ?, ?, ?)",
                [(g.number, g.pairing, g.round, g.black, g.white, json.dumps(list(g.opening))) for g in schedule],
            )
            # Games a killed referee left running were lost with it: play them again.
            self._db.execute("UPDATE games SET status = 'pending' WHERE status = 'running'")

    # -- games --------------------------------------------------------------------------------------

    def game_ids(self) -> list[str]:
        """The game ids of every done game (what games.jsonl should hold)."""
        rows = self._db.execute("SELECT record FROM games WHERE status = 'done' AND record IS NOT NULL")
        return [str(json.loads(row[0])["game_id"]) for row in rows]

    def pending(self) -> list[int]:
        rows = self._db.execute("SELECT number FROM games WHERE status != 'done' ORDER BY number")
        return [row[0] for row in rows]

    def mark_running(self, number: int) -> None:
        with self._transaction():
            self._db.execute("UPDATE games SET status = 'running' WHERE number = ?", (number,))

    def anything_recorded(self) -> bool:
        """Whether any game, done or void, was ever stored."""
        done = self._db.execute("SELECT 1 FROM games WHERE status = 'done' LIMIT 1").fetchone()
        return done is not None or self._db.execute("SELECT 1 FROM void_games LIMIT 1").fetchone() is not None

    def record_game(self, number: int, record: GameRecord) -> bool:
        """Store a finished game; True when it counts now. A scored game is done (once: a game already done is
        left alone and False returned); a void or aborted one is logged and stays pending."""
        data = record.model_dump_json()
        with self._transaction():
            if record.termination.is_scored:
                cursor = self._db.execute(
                    "UPDATE games SET status = 'done', result = ?, termination = ?, record = ?, finished_at = ?,"
                    " seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM games) WHERE number = ? AND status != 'done'",
                    (record.result, str(record.termination), data, _now(), number),
                )
                return cursor.rowcount == 1
            else:
                self._db.execute(
                    "INSERT INTO void_games (number, termination, reason, record, at) VALUES (?, ?, ?, ?, ?)",
                    (number, str(record.termination), record.reason, data, _now()),
                )
                self._db.execute("UPDATE games SET status = 'pending' WHERE number = ? AND status != 'done'", (number,))
        return False

    def release(self, number: int) -> None:
        """A game that did not finish (interrupted): pending again."""
        with self._transaction():
            self._db.execute("UPDATE games SET status = 'pending' WHERE number = ? AND status = 'running'", (number,))

    def finished(self) -> Iterator[tuple[int, str, str, Result, str, float | None, float | None]]:
        """(number, black, white, result, termination, black and white off-turn CPU ms) of every done game, in
        commit order (the CPU figures are read from the records: null where not measured)."""
        rows = self._db.execute(
            "SELECT number, black, white, result, termination,"
            " json_extract(record, '$.black.off_turn_cpu_ms'), json_extract(record, '$.white.off_turn_cpu_ms')"
            " FROM games WHERE status = 'done' ORDER BY COALESCE(seq, number), number"
        )
        for row in rows:
            yield (row[0], row[1], row[2], row[3], row[4], row[5], row[6])

    def records(self) -> Iterator[str]:
        """The JSON record of every done game, in game order."""
        for (data,) in self._db.execute("SELECT record FROM games WHERE status = 'done' ORDER BY number"):
            yield str(data)

    def find_record(self, game_id: str) -> str | None:
        """The JSON record of game `game_id` (a done game, else its last void or aborted try), or None."""
        for query in (
            "SELECT record FROM games WHERE status = 'done' AND json_extract(record, '$.game_id') = ?",
            "SELECT record FROM void_games WHERE json_extract(record, '$.game_id') = ? ORDER BY id DESC",
        ):
            row = self._db.execute(query, (game_id,)).fetchone()
            if row is not None and row[0] is not None:
                return str(row[0])
        return None

    # -- plumbing -----------------------------------------------------------------------------------

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


def _lock_directory(path: Path) -> TextIO:
    """Hold an exclusive lock on `path` while the store is open: one referee per output directory.

    The kernel drops the lock when the process dies, even by kill -9, so a stale lock cannot block a resume.
    """
    handle = path.open("a+", encoding="utf-8")
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the user must not run two referees in one directory
        return handle
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
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
