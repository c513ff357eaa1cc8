"""The ladder's database: entries, their versions, every game, the ratings after each game, faults and tokens.

One SQLite file, `ladder.db`, in the ladder's directory, in WAL mode: the truth a ladder resumes from. The
running ladder and the organiser's commands (`add`, `update`, `suspend`...) and the leaderboard server all open
it; each write is one short transaction, so they never see half of a change. The running ladder sees entries
added, updated or suspended by polling it between games (`playable`).

An entry (a name) has versions: `update` adds a version rated afresh and retires the old one, which keeps its
rating, games and history. Only the current version of an active entry plays. Each game is stored with the
record JSON (the arena's record format: `alternator replay`/`report` read it through games.jsonl beside it),
the ratings of both versions after it (`history`), and W-D-L and the fault counter on each version, in one
transaction: a killed ladder loses at most the games in progress.

Every SQL of the ladder is in this module.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from referee.ladder.rating import Rating
from referee.record import GameRecord
from referee.run.botspec import BotSpec

__all__ = [
    "DB_NAME",
    "PROVISIONAL_RD",
    "EntryRow",
    "FaultRow",
    "GameRow",
    "LadderError",
    "LadderStore",
    "VersionRow",
]

DB_NAME = "ladder.db"
SCHEMA_VERSION = 1
PROVISIONAL_RD = 110.0
"""An active entry whose RD is above this is `provisional` on the leaderboard (its rank is not settled yet)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    name TEXT PRIMARY KEY,
    owner TEXT,                         -- the participant who uploaded it; NULL: the organiser's
    status TEXT NOT NULL CHECK (status IN ('active', 'suspended', 'retired')),
    reason TEXT,                        -- why it is suspended
    created_at TEXT NOT NULL,
    version INTEGER                     -- the current version's id
);
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY,
    entry TEXT NOT NULL REFERENCES entries(name),
    number INTEGER NOT NULL,
    spec TEXT NOT NULL,                 -- BotSpec JSON
    source TEXT NOT NULL,               -- what the organiser or participant gave
    created_at TEXT NOT NULL,
    retired_at TEXT,
    rating REAL NOT NULL,
    rd REAL NOT NULL,
    volatility REAL NOT NULL,
    games INTEGER NOT NULL DEFAULT 0,
    wins INTEGER NOT NULL DEFAULT 0,
    draws INTEGER NOT NULL DEFAULT 0,
    losses INTEGER NOT NULL DEFAULT 0,
    faults INTEGER NOT NULL DEFAULT 0,  -- faults in a row (a clean game resets it)
    last_seq INTEGER,                   -- seq of its last game
    UNIQUE (entry, number)
);
CREATE TABLE IF NOT EXISTS games (
    seq INTEGER PRIMARY KEY,
    game_id TEXT NOT NULL UNIQUE,
    black INTEGER NOT NULL,             -- version ids
    white INTEGER NOT NULL,
    result TEXT NOT NULL,
    termination TEXT NOT NULL,
    reason TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS games_black ON games(black, seq);
CREATE INDEX IF NOT EXISTS games_white ON games(white, seq);
CREATE TABLE IF NOT EXISTS history (
    version INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    rating REAL NOT NULL,
    rd REAL NOT NULL,
    PRIMARY KEY (version, seq)
);
CREATE TABLE IF NOT EXISTS faults (
    id INTEGER PRIMARY KEY,
    entry TEXT NOT NULL,
    version INTEGER NOT NULL,
    at TEXT NOT NULL,
    reason TEXT NOT NULL,
    stderr TEXT                         -- the bot's last stderr lines, or its log's path
);
CREATE INDEX IF NOT EXISTS faults_entry ON faults(entry, id);
CREATE TABLE IF NOT EXISTS playing (
    game_id TEXT PRIMARY KEY,
    black TEXT NOT NULL,
    white TEXT NOT NULL,
    started_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    participant TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""


class LadderError(Exception):
    """A change the ladder refuses (an unknown or existing name...); the message says what to do."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class VersionRow:
    id: int
    entry: str
    number: int
    spec_json: str
    source: str
    created_at: str
    retired_at: str | None
    rating: float
    rd: float
    volatility: float
    games: int
    wins: int
    draws: int
    losses: int
    faults: int
    last_seq: int | None

    @functools.cached_property
    def spec(self) -> BotSpec:
        """The bot, parsed when asked (a leaderboard of a thousand entries never needs it)."""
        return BotSpec.model_validate_json(self.spec_json)

    @property
    def key(self) -> str:
        """The name the version plays under (in records and logs): `NAME.vN`."""
        return version_key(self.entry, self.number)

    @property
    def glicko(self) -> Rating:
        return Rating(self.rating, self.rd, self.volatility)


@dataclass(frozen=True)
class EntryRow:
    name: str
    owner: str | None
    status: str  # active, suspended, retired
    reason: str | None
    created_at: str
    version: VersionRow | None

    @property
    def shown_status(self) -> str:
        """The status on the leaderboard: `provisional` for an active entry whose rating is not settled yet."""
        if self.status == "active" and self.version is not None and self.version.rd > PROVISIONAL_RD:
            return "provisional"
        return self.status


@dataclass(frozen=True)
class GameRow:
    seq: int
    game_id: str
    black: str
    white: str
    result: str
    termination: str
    reason: str
    finished_at: str


@dataclass(frozen=True)
class FaultRow:
    entry: str
    version: int
    at: str
    reason: str
    stderr: str | None


def version_key(name: str, number: int) -> str:
    return f"{name}.v{number}"


_VERSION_COLUMNS = (
    "id, entry, number, spec, source, created_at, retired_at, rating, rd, volatility, games, wins, draws, losses,"
    " faults, last_seq"
)


def _entry(row: tuple[Any, ...]) -> EntryRow:
    return EntryRow(row[0], row[1], row[2], row[3], row[4], _version(row[5:]))


def _version(row: tuple[Any, ...]) -> VersionRow:
    return VersionRow(*row)


class LadderStore:
    """The ladder's database, opened by the ladder, its commands and its server alike (thread-safe: one lock)."""

    def __init__(self, directory: Path, *, create: bool = True) -> None:
        self.directory = directory
        self.path = directory / DB_NAME
        if not self.path.exists() and not create:
            raise LadderError(
                f"{directory}: no ladder here ({DB_NAME} is missing); start one with `alternator ladder {directory}`"
            )
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        with self._lock:
            self._db.executescript(_SCHEMA)  # IF NOT EXISTS: every opener may run it (it commits on its own)
        with self._write():
            found = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if found is None:
                self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif int(found[0]) > SCHEMA_VERSION:
                raise LadderError(
                    f"{self.path} was written by a newer arena (schema {found[0]}); upgrade alternator to use it"
                )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> LadderStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ------------------------------------------------------------------------------

    class _Transaction:
        def __init__(self, store: LadderStore) -> None:
            self.store = store

        def __enter__(self) -> sqlite3.Connection:
            self.store._lock.acquire()
            self.store._db.execute("BEGIN IMMEDIATE")
            return self.store._db

        def __exit__(self, kind: object, error: object, trace: object) -> None:
            try:
                self.store._db.execute("COMMIT" if kind is None else "ROLLBACK")
            finally:
                self.store._lock.release()

    def _write(self) -> LadderStore._Transaction:
        return LadderStore._Transaction(self)

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- settings ----------------------------------------------------------------------------------

    def setting(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def set_setting(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    @property
    def paused(self) -> bool:
        return self.setting("paused") == "1"

    def set_paused(self, paused: bool) -> None:
        self.set_setting("paused", "1" if paused else "0")

    def next_game_number(self) -> int:
        """A new game number, never given before (kept in the database: a restart does not reuse one)."""
        with self._write() as db:
            row = db.execute("SELECT value FROM meta WHERE key='next_game'").fetchone()
            number = int(row[0]) if row else 1
            db.execute("INSERT OR REPLACE INTO meta VALUES ('next_game', ?)", (str(number + 1),))
        return number

    # -- entries -----------------------------------------------------------------------------------

    def add_entry(self, name: str, spec: BotSpec, source: str, *, owner: str | None = None) -> VersionRow:
        """A new entry with its first version; LadderError if the name is taken (`update` replaces a version)."""
        with self._write() as db:
            if db.execute("SELECT 1 FROM entries WHERE name=?", (name,)).fetchone():
                raise LadderError(
                    f"there is already an entry {name!r}; `alternator ladder DIR update {name} BOT` gives it a new"
                    " version, or choose another name"
                )
            db.execute("INSERT INTO entries VALUES (?, ?, 'active', NULL, ?, NULL)", (name, owner, _now()))
            return self._new_version(db, name, 1, spec, source)

    def update_entry(self, name: str, spec: BotSpec, source: str) -> VersionRow:
        """A new version of `name`, rated afresh; the old one is retired and kept. A retired entry is active again."""
        with self._write() as db:
            row = db.execute("SELECT version FROM entries WHERE name=?", (name,)).fetchone()
            if row is None:
                raise LadderError(f"no entry {name!r}; add it with `alternator ladder DIR add {name} BOT`")
            number = db.execute("SELECT MAX(number) FROM versions WHERE entry=?", (name,)).fetchone()[0] or 0
            db.execute("UPDATE versions SET retired_at=? WHERE entry=? AND retired_at IS NULL", (_now(), name))
            version = self._new_version(db, name, number + 1, spec, source)
            db.execute("UPDATE entries SET status='active', reason=NULL WHERE name=?", (name,))
            return version

    def _new_version(self, db: sqlite3.Connection, name: str, number: int, spec: BotSpec, source: str) -> VersionRow:
        spec = spec.model_copy(update={"name": version_key(name, number)})
        fresh = Rating()
        cursor = db.execute(
            "INSERT INTO versions (entry, number, spec, source, created_at, rating, rd, volatility)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (name, number, spec.model_dump_json(), source, _now(), fresh.rating, fresh.rd, fresh.volatility),
        )
        version_id = cursor.lastrowid
        db.execute("UPDATE entries SET version=? WHERE name=?", (version_id, name))
        found = db.execute(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE id=?", (version_id,)).fetchone()
        return _version(found)

    def _set_status(self, name: str, status: str, reason: str | None, *, allowed: tuple[str, ...]) -> None:
        with self._write() as db:
            row = db.execute("SELECT status FROM entries WHERE name=?", (name,)).fetchone()
            if row is None:
                raise LadderError(f"no entry {name!r}; `alternator ladder DIR list` shows the entries")
            if row[0] not in allowed:
                raise LadderError(f"entry {name!r} is {row[0]}; it cannot be made {status}")
            db.execute("UPDATE entries SET status=?, reason=? WHERE name=?", (status, reason, name))
            if status == "active":
                db.execute("UPDATE versions SET faults=0 WHERE id=(SELECT version FROM entries WHERE name=?)", (name,))

    def retire(self, name: str) -> None:
        self._set_status(name, "retired", None, allowed=("active", "suspended"))

    def suspend(self, name: str, reason: str) -> None:
        self._set_status(name, "suspended", reason, allowed=("active", "suspended"))

    def enable(self, name: str) -> None:
        """An entry suspended (or retired) plays again, its fault count cleared."""
        self._set_status(name, "active", None, allowed=("suspended", "retired", "active"))

    def entries(self) -> list[EntryRow]:
        """Every entry with its current version, best rating first."""
        rows = self._read(
            f"SELECT e.name, e.owner, e.status, e.reason, e.created_at, {', '.join('v.' + c.strip() for c in _VERSION_COLUMNS.split(','))}"  # noqa: E501
            " FROM entries e JOIN versions v ON v.id = e.version ORDER BY v.rating DESC, e.name"
        )
        return [_entry(row) for row in rows]

    def entry(self, name: str) -> EntryRow | None:
        for entry in self._entries_named(name):
            return entry
        return None

    def _entries_named(self, name: str) -> Iterator[EntryRow]:
        rows = self._read(
            f"SELECT e.name, e.owner, e.status, e.reason, e.created_at, {', '.join('v.' + c.strip() for c in _VERSION_COLUMNS.split(','))}"  # noqa: E501
            " FROM entries e JOIN versions v ON v.id = e.version WHERE e.name=?",
            (name,),
        )
        for row in rows:
            yield _entry(row)

    def versions(self, name: str) -> list[VersionRow]:
        rows = self._read(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE entry=? ORDER BY number", (name,))
        return [_version(row) for row in rows]

    def version(self, version_id: int) -> VersionRow | None:
        rows = self._read(f"SELECT {_VERSION_COLUMNS} FROM versions WHERE id=?", (version_id,))
        return _version(rows[0]) if rows else None

    def playable(self) -> list[VersionRow]:
        """The current versions of the active entries: what the ladder pairs."""
        rows = self._read(
            f"SELECT {', '.join('v.' + c.strip() for c in _VERSION_COLUMNS.split(','))} FROM entries e"
            " JOIN versions v ON v.id = e.version WHERE e.status='active'"
        )
        return [_version(row) for row in rows]

    def owned(self, owner: str) -> list[str]:
        return [row[0] for row in self._read("SELECT name FROM entries WHERE owner=? ORDER BY name", (owner,))]

    # -- games -------------------------------------------------------------------------------------

    def game_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM games")[0][0])

    def last_seq(self) -> int:
        return int(self._read("SELECT COALESCE(MAX(seq), 0) FROM games")[0][0])

    def record_game(
        self,
        record: GameRecord,
        black: VersionRow,
        white: VersionRow,
        ratings: tuple[Rating, Rating],
        faults: tuple[bool, bool],
        text: str,
    ) -> int:
        """Store a scored game, both versions' new ratings and W-D-L, and their fault counters; its seq."""
        points = {"1-0": (1, 0), "0-1": (0, 1)}.get(record.result)
        with self._write() as db:
            seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM games").fetchone()[0])
            db.execute(
                "INSERT INTO games VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    seq,
                    record.game_id,
                    black.id,
                    white.id,
                    record.result,
                    str(record.termination),
                    record.reason,
                    record.finished_at.isoformat(timespec="seconds"),
                    text,
                ),
            )
            for index, (version, rating, fault) in enumerate(zip((black, white), ratings, faults, strict=True)):
                won = points is not None and points[index] == 1
                lost = points is not None and points[index] == 0
                db.execute(
                    "UPDATE versions SET rating=?, rd=?, volatility=?, games=games+1, wins=wins+?, draws=draws+?,"
                    " losses=losses+?, faults=CASE WHEN ? THEN faults+1 ELSE 0 END, last_seq=? WHERE id=?",
                    (
                        rating.rating,
                        rating.rd,
                        rating.volatility,
                        int(won),
                        int(points is None),
                        int(lost),
                        int(fault),
                        seq,
                        version.id,
                    ),
                )
                db.execute("INSERT INTO history VALUES (?, ?, ?, ?)", (version.id, seq, rating.rating, rating.rd))
            db.execute("DELETE FROM playing WHERE game_id=?", (record.game_id,))
        return seq

    def records(self, start: int = 0) -> Iterator[str]:
        """The record JSON of every game after seq `start`, in order (read in pages: never all held at once)."""
        last = start
        while True:
            rows = self._read("SELECT seq, record FROM games WHERE seq > ? ORDER BY seq LIMIT 500", (last,))
            if not rows:
                return
            for seq, text in rows:
                last = seq
                yield text

    def record(self, game_id: str) -> str | None:
        rows = self._read("SELECT record FROM games WHERE game_id=?", (game_id,))
        return rows[0][0] if rows else None

    def recent_games(self, limit: int, *, entry: str | None = None) -> list[GameRow]:
        """The last `limit` games (of `entry`'s versions, if given), newest first."""
        select = (
            "SELECT g.seq, g.game_id, b.entry || '.v' || b.number, w.entry || '.v' || w.number, g.result,"
            " g.termination, g.reason, g.finished_at FROM games g"
            " JOIN versions b ON b.id = g.black JOIN versions w ON w.id = g.white"
        )
        if entry is None:
            rows = self._read(select + " ORDER BY g.seq DESC LIMIT ?", (limit,))
        else:
            rows = self._read(
                select + " WHERE g.seq IN (SELECT seq FROM (SELECT g2.seq FROM games g2 JOIN versions v ON"
                " v.id IN (g2.black, g2.white) WHERE v.entry=? ORDER BY g2.seq DESC LIMIT ?)) ORDER BY g.seq DESC",
                (entry, limit),
            )
        return [GameRow(*row) for row in rows]

    def all_games(self) -> Iterator[GameRow]:
        """Every game in order, read a page at a time (never all held at once)."""
        last = 0
        while True:
            rows = self._read(
                "SELECT g.seq, g.game_id, b.entry || '.v' || b.number, w.entry || '.v' || w.number, g.result,"
                " g.termination, g.reason, g.finished_at FROM games g JOIN versions b ON b.id = g.black"
                " JOIN versions w ON w.id = g.white WHERE g.seq > ? ORDER BY g.seq LIMIT 1000",
                (last,),
            )
            if not rows:
                return
            for row in rows:
                last = row[0]
                yield GameRow(*row)

    def game_entries(self, game_id: str) -> tuple[str, str] | None:
        """The entries of a game's two versions (black's, white's), or None when there is no such game."""
        rows = self._read(
            "SELECT b.entry, w.entry FROM games g JOIN versions b ON b.id = g.black JOIN versions w ON w.id = g.white"
            " WHERE g.game_id=?",
            (game_id,),
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def recent_pairs(self, limit: int) -> list[tuple[int, int]]:
        """(black version, white version) of the last `limit` games, oldest first."""
        rows = self._read("SELECT black, white FROM games ORDER BY seq DESC LIMIT ?", (limit,))
        return [(int(b), int(w)) for b, w in reversed(rows)]

    def results(self) -> list[tuple[int, int, str]]:
        """(black version, white version, result) of every game (the pairing's totals)."""
        return [(int(b), int(w), str(r)) for b, w, r in self._read("SELECT black, white, result FROM games")]

    def history(self, version_id: int) -> list[tuple[int, float, float]]:
        """(seq, rating, rd) after each game of the version."""
        rows = self._read("SELECT seq, rating, rd FROM history WHERE version=? ORDER BY seq", (version_id,))
        return [(int(s), float(r), float(d)) for s, r, d in rows]

    def trends(self, version_ids: list[int], window: int) -> dict[int, float]:
        """Each version's rating change over its last `window` games (from its rating before them; a version with
        fewer games: from the starting rating)."""
        trends: dict[int, float] = {}
        with self._lock:
            for version_id in version_ids:
                now = self._db.execute(
                    "SELECT rating FROM history WHERE version=? ORDER BY seq DESC LIMIT 1", (version_id,)
                ).fetchone()
                if now is None:
                    continue
                before = self._db.execute(
                    "SELECT rating FROM history WHERE version=? ORDER BY seq DESC LIMIT 1 OFFSET ?",
                    (version_id, window),
                ).fetchone()
                trends[version_id] = float(now[0]) - (float(before[0]) if before else Rating().rating)
        return trends

    # -- faults and games in progress --------------------------------------------------------------

    def add_fault(self, version: VersionRow, reason: str, stderr: str | None, *, suspend_after: int) -> bool:
        """Note a fault of `version` (a start failure: not a game); suspend its entry at `suspend_after` faults
        in a row. Whether the entry was suspended now."""
        with self._write() as db:
            db.execute("INSERT INTO faults (entry, version, at, reason, stderr) VALUES (?, ?, ?, ?, ?)",
                       (version.entry, version.id, _now(), reason, stderr))  # fmt: skip
            db.execute("UPDATE versions SET faults=faults+1 WHERE id=?", (version.id,))
            return self._maybe_suspend(db, version, suspend_after)

    def note_game_fault(self, version: VersionRow, reason: str, stderr: str | None, *, suspend_after: int) -> bool:
        """Note a fault in a scored game (its counter was raised by `record_game`); suspend at `suspend_after`."""
        with self._write() as db:
            db.execute("INSERT INTO faults (entry, version, at, reason, stderr) VALUES (?, ?, ?, ?, ?)",
                       (version.entry, version.id, _now(), reason, stderr))  # fmt: skip
            return self._maybe_suspend(db, version, suspend_after)

    def _maybe_suspend(self, db: sqlite3.Connection, version: VersionRow, suspend_after: int) -> bool:
        faults = db.execute("SELECT faults FROM versions WHERE id=?", (version.id,)).fetchone()[0]
        row = db.execute("SELECT status, version FROM entries WHERE name=?", (version.entry,)).fetchone()
        if faults < suspend_after or row is None or row[0] != "active" or row[1] != version.id:
            return False
        last = db.execute(
            "SELECT reason FROM faults WHERE version=? ORDER BY id DESC LIMIT 1", (version.id,)
        ).fetchone()[0]
        reason = f"{faults} faults in a row; the last: {last}"
        db.execute("UPDATE entries SET status='suspended', reason=? WHERE name=?", (reason, version.entry))
        return True

    def faults(self, entry: str, limit: int = 20) -> list[FaultRow]:
        rows = self._read(
            "SELECT entry, version, at, reason, stderr FROM faults WHERE entry=? ORDER BY id DESC LIMIT ?",
            (entry, limit),
        )
        return [FaultRow(*row) for row in rows]

    def set_playing(self, game_id: str, black: str, white: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO playing VALUES (?, ?, ?, ?)", (game_id, black, white, _now()))

    def end_playing(self, game_id: str | None = None) -> None:
        """A game no longer in progress (all of them with None: the ladder starts or stops)."""
        with self._write() as db:
            if game_id is None:
                db.execute("DELETE FROM playing")
            else:
                db.execute("DELETE FROM playing WHERE game_id=?", (game_id,))

    def playing(self) -> list[tuple[str, str, str, str]]:
        rows = self._read("SELECT game_id, black, white, started_at FROM playing ORDER BY started_at")
        return [(str(g), str(b), str(w), str(s)) for g, b, w, s in rows]

    # -- tokens ------------------------------------------------------------------------------------

    def set_token_hash(self, participant: str, digest: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)", (participant, digest, _now()))

    def token_hashes(self) -> list[tuple[str, str]]:
        return [(str(p), str(h)) for p, h in self._read("SELECT participant, hash FROM tokens")]
