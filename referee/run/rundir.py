"""The one reader of a run's output directory: its games in commit order, a game by id, the games counted.

Every reader of a match or tournament — the report, `replay`, `serve`, recovery and the end-of-run text — reads
it through `RunDirectory`, so they all see the same games in the same order. The database (`run.db`, or
`tournament.db` in an older run's directory, referee/run/store.py) is the truth: when it is there, the games
come from it, streamed in commit order (never all held at once), and `games.jsonl` is not read. A directory
without one (a copy of games.jsonl alone, or a match from before matches had a database, with its game-NNN.json
files) is read from those files.

One policy for the lines of games.jsonl (`read_lines`): a last line without its newline that is not a
record is a *torn* line, the append a killed referee did not finish: it never was a committed game and is
left out silently. Any other line that is not a record is *damaged*: readers that show the run (report,
replay, serve) leave it out and say which line; recovery, which would write the file's games into a new
database, refuses it (`DamagedLineError`), naming the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from protocol.rules import Result, result_points
from referee.outputs.viewerline import line_text
from referee.record import GameRecord, Termination
from referee.run.store import DB_NAME, DoneGame, StoreError, StoreReader, database_path, record_digest
from referee.stats.sprt import CountedGame, MatchStatistics, SprtParameters, count_in_order
from referee.stats.standings import Anchor, parse_anchor

GAMES_FILE = "games.jsonl"
MATCH_FILE = "match.json"
READ_BUFFER = 1 << 20
"""games.jsonl is read in 1 MiB blocks: its lines (11.5 KB) read through the default 8 KiB buffer cost four times
as much (50,000 games: 0.66 s, against 0.15 s)."""


class RunReadError(Exception):
    """The directory cannot be read as a run; the message says why and what to do."""


class DamagedLineError(RunReadError):
    """A line of games.jsonl (not a torn last line) is not a game record."""


@dataclass(frozen=True)
class Line:
    """One line of games.jsonl: its record, or why it is not one."""

    number: int
    record: GameRecord | None
    problem: str | None = None  # a damaged line: what is wrong with it
    torn: bool = False  # the last line, cut short: no game, and no problem either

    @property
    def damaged(self) -> bool:
        return self.record is None and not self.torn


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(the line)"
    return f"{where}: {first['msg']}"


def _open_games_file(path: Path) -> BinaryIO | None:
    """games.jsonl opened for reading, or None when there is none (RunReadError: it cannot be read)."""
    try:
        return path.open("rb", buffering=READ_BUFFER)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise RunReadError(f"{path}: cannot be read: {error.strerror}") from None


def read_lines(path: Path) -> Iterator[Line]:
    """The lines of a games.jsonl, one at a time, by the one policy (see the module docstring): a torn last
    line comes marked `torn` (no game, no problem), a damaged line with its problem. Nothing when there is
    no file."""
    file = _open_games_file(path)
    if file is None:
        return
    with file:
        number = 0
        for raw in file:
            number += 1
            if not raw.strip():
                continue
            torn = not raw.endswith(b"\n")
            try:
                yield Line(number, GameRecord.model_validate_json(raw))
            except ValidationError as error:
                if torn:  # a killed referee's unfinished append: never a committed game
                    yield Line(number, None, torn=True)
                    return
                yield Line(number, None, _problem(error))


def line_game_ids(path: Path) -> Iterator[tuple[int, str | None, bytes]]:
    """(line number, game id or None, the line) of every complete line of a games.jsonl, read cheaply: the id
    is taken from the start of the line, where every record has it (`{"record_version":1,"game_id":...`)."""
    file = _open_games_file(path)
    if file is None:
        return
    with file:
        for number, raw in enumerate(file, 1):
            if not raw.endswith(b"\n") or not raw.strip():
                continue  # torn (or empty): never a committed game
            yield number, id_at_start(raw), raw


MAX_NAMED = 20
"""Lines of games.jsonl named one by one when they disagree with the database; beyond, they are counted."""


class CopyCheck:
    """games.jsonl, the second copy of the games, against the database's digest of each record
    (referee.run.store.record_digest), a line at a time from where the last look left off (`advance`).

    Each complete line is hashed and its game looked up by id (an index search): no record is read from the
    database, and nothing is kept per line, so a follower (`serve`) checks each line once as the run appends it,
    and the report checks 50,000 lines in about a second. A line that differs from the database's copy (damaged,
    or forged: consistent in itself, its moves replaying to its result) or holds a game the database does not
    count is named; the database's copy is the one counted and shown, and the next start of the run sets the line
    aside (referee.run.recovery). The database commits a game before the line is appended, so a line read is always
    one the database can answer for."""

    def __init__(self, out_dir: Path, store: StoreReader) -> None:
        self.path = out_dir / GAMES_FILE
        self.db_name = database_path(out_dir).name
        self.store = store
        self.offset = 0
        self.line = 0
        self.identity: tuple[int, int] | None = None
        self.found = 0
        self._ahead: list[tuple[int, str, bytes | None]] = []  # the next games in commit order: (seq, id, digest)
        self._next = 1  # the seq of the game the next line should hold

    def advance(self) -> list[str]:
        """The problems of the lines completed since the last look (from the start when the file was replaced)."""
        try:
            stat = self.path.stat()
        except OSError:
            return []
        identity = (stat.st_ino, stat.st_dev)
        if identity != self.identity or stat.st_size < self.offset:
            self.identity, self.offset, self.line = identity, 0, 0
            self._ahead, self._next = [], 1
        if stat.st_size == self.offset or not self.store.has_digests():
            return []
        problems = []
        try:
            with self.path.open("rb", buffering=READ_BUFFER) as file:
                file.seek(self.offset)
                for raw in file:
                    if not raw.endswith(b"\n"):
                        break  # being written (or torn): the next look
                    self.offset += len(raw)
                    self.line += 1
                    problem = self._check(self.line, raw[:-1])
                    if problem is not None:
                        self.found += 1
                        if self.found <= MAX_NAMED:
                            problems.append(problem)
        except OSError as error:
            return [f"{self.path}: cannot be read to compare it with {self.db_name} ({error.strerror})"]
        if self.found > MAX_NAMED:
            problems.append(
                f"{GAMES_FILE}: {self.found} lines disagree with {self.db_name} in all ({MAX_NAMED} named); run the"
                " same"
                " match or tournament command to compare the two copies and set the bad lines aside"
            )
        return problems

    def _check(self, number: int, line: bytes) -> str | None:
        if not line.strip():
            return None
        where = f"{GAMES_FILE} line {number}"
        game_id = id_at_start(line)
        if game_id is None:  # written by something else than the arena (another JSON layout)?
            try:
                data = json.loads(line)
            except ValueError:
                data = None
            game_id = data.get("game_id") if isinstance(data, dict) else None
            if not isinstance(game_id, str):
                return f"{where} is not a game record; it is not counted"
        found = self._expected(game_id) or self.store.copy_of(game_id)
        if found is None or found[1] != "done":
            try:
                termination = Termination(json.loads(line).get("termination"))
            except (ValueError, TypeError, AttributeError):
                return f"{where} is not a game record; it is not counted"
            if not termination.is_scored:
                return None  # a void game's line (older versions wrote them): the database keeps it aside
            return (
                f"{where} holds game {game_id}, which {self.db_name} does not count (a line damaged, forged or"
                " copied from"
                " another run): it is not counted; run the same match or tournament command to have it set aside"
            )
        seq, _, digest = found
        if digest is None or record_digest(line) == digest:
            return None
        kept = self.store.record_at(seq) if seq is not None else None
        if kept is None or record_digest(kept) != digest:
            return (
                f"{self.db_name}: the copy of game {game_id} does not match its digest (damaged); run the same match or"
                f" tournament command to repair it from {where}"
            )
        return (
            f"{where} (game {game_id}) differs from {self.db_name}'s copy: damaged or forged. {self.db_name}'s copy"
            " is the one"
            " counted and shown; run the same match or tournament command to set the line aside"
        )

    def _expected(self, game_id: str) -> tuple[int | None, str, bytes | None] | None:
        """The game the line should hold, in commit order, when it is `game_id` (the usual case: the digests are
        read a thousand at a time, not looked up line by line); None otherwise (then looked up by id)."""
        if not self._ahead:
            self._ahead = self.store.digests_from(self._next, 1000)[::-1]
        if self._ahead and self._ahead[-1][1] == game_id:
            seq, _, digest = self._ahead.pop()
            self._next = seq + 1
            return seq, "done", digest
        return None


ID_PREFIX = b'{"record_version":1,"game_id":"'
"""How every record's JSON begins: its game id comes next, so it is read without parsing the record."""


def id_at_start(raw: bytes | str) -> str | None:
    """The game id at the start of a record's JSON (a games.jsonl line, or a record as stored), or None."""
    if isinstance(raw, str):
        raw = raw[:512].encode()  # the id is near the start: the rest of a record need not be encoded
    if raw.startswith(ID_PREFIX):
        end = raw.find(b'"', len(ID_PREFIX))
        if end > 0:
            return raw[len(ID_PREFIX) : end].decode("utf-8", "replace")
    return None


@dataclass(frozen=True)
class ScoredRow:
    """A scored game as the standings and the head-to-head count it (no moves)."""

    number: int
    round: int
    black: str
    white: str
    result: Result
    termination: Termination
    black_cpu_ms: float | None
    white_cpu_ms: float | None


@dataclass
class RunDirectory:
    """A run's output directory, read-only. Use as a context manager (it may hold the database open)."""

    out_dir: Path
    kind: str = "tournament"  # "match" or "tournament"
    bots: list[str] = field(default_factory=list)
    sprt: SprtParameters | None = None
    title: str | None = None
    anchor: Anchor | None = None  # the rating scale's anchor the run was given (--anchor)
    settings: dict[str, Any] = field(default_factory=dict)
    match_summary: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)  # lines or files left out, for the reader to show
    _store: StoreReader | None = None
    _files: list[Path] | None = None  # an old match's game-NNN.json files
    _copy_check: CopyCheck | None = None

    @classmethod
    def open(cls, out_dir: Path, *, kind: str | None = None) -> RunDirectory:
        """The run in `out_dir`; RunReadError when it holds none (`kind`: what the caller knows it is)."""
        if not out_dir.is_dir():
            raise RunReadError(f"{out_dir}: no such directory; give the output directory of a match or tournament")
        run = cls(out_dir)
        match_file = out_dir / MATCH_FILE
        if match_file.exists():
            run.match_summary = _read_match_summary(match_file)
        database = database_path(out_dir)
        if database.is_file():
            try:
                run._store = StoreReader(database)
                fingerprint = run._store.fingerprint() or {}
            except StoreError as error:
                if not (out_dir / GAMES_FILE).is_file():
                    raise RunReadError(str(error)) from None
                run._store = None  # a damaged database: games.jsonl holds the same games
                run.errors.append(f"{database.name}: {error}; read {GAMES_FILE} instead")
                fingerprint = {}
            run._configure(fingerprint)
        elif (out_dir / GAMES_FILE).is_file():
            run._configure({})
        else:
            files = sorted(out_dir.glob("game-*.json"))
            if not files and run.match_summary is None:
                raise RunReadError(
                    f"{out_dir}: neither {DB_NAME} nor {GAMES_FILE} nor {MATCH_FILE} is there; give the output"
                    " directory of a match or tournament (its --out)"
                )
            run._files = files
            run._configure({"kind": "match"})
        if kind is not None and run.match_summary is None and not run._store:
            run.kind = kind
        if not run.bots:
            run.bots = run._bots_from_records()
        return run

    def _configure(self, fingerprint: dict[str, Any]) -> None:
        summary = self.match_summary
        self.kind = str(fingerprint.get("kind") or ("match" if summary is not None else "tournament"))
        self.bots = [str(bot["name"]) for bot in fingerprint.get("bots", []) if isinstance(bot, dict)]
        if not self.bots and summary is not None and "first" in summary:
            self.bots = [str(summary["first"]), str(summary["second"])]
        if not self.bots:
            self.bots = _field_of(self.out_dir)
        sprt = fingerprint.get("sprt")
        if sprt is None and summary is not None:
            sprt = summary.get("sprt") or (summary.get("statistics") or {}).get("sprt")
        if isinstance(sprt, dict):
            self.sprt = SprtParameters(
                elo0=float(sprt["elo0"]), elo1=float(sprt["elo1"]), alpha=float(sprt["alpha"]), beta=float(sprt["beta"])
            )
        title = fingerprint.get("title")
        self.title = str(title) if title else None
        anchor = fingerprint.get("anchor")
        if anchor:
            try:
                self.anchor = parse_anchor(str(anchor))
            except ValueError as error:
                self.errors.append(f"the stored anchor: {error}; ratings relative to the field mean")
        self.settings = {
            key: fingerprint[key] for key in ("size", "komi", "time_control", "format") if key in fingerprint
        }

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> RunDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def source(self) -> str:
        """Where the games are read from: the database (run.db, or tournament.db in an older run's directory),
        games.jsonl or game-*.json."""
        if self._store is not None:
            return self._store.path.name
        return "game-*.json" if self._files is not None else GAMES_FILE

    @property
    def _database(self) -> Path:
        """The run's database file (`tournament.db` in an older run's directory), for messages."""
        return self._store.path if self._store is not None else database_path(self.out_dir)

    @property
    def from_database(self) -> bool:
        """Whether the games are read from the run's database."""
        return self._store is not None

    @property
    def two_bots(self) -> bool:
        return len(self.bots) == 2

    # -- the games -----------------------------------------------------------------------------------

    def count(self) -> int:
        """The games done (scored) so far."""
        if self._store is not None:
            return self._store.done_count()
        return sum(1 for _ in self.records())

    def total(self) -> int | None:
        """The games scheduled, when the database says (None: not known)."""
        return self._store.total_count() if self._store is not None else None

    def records(self, start: int = 0) -> Iterator[GameRecord]:
        """Every scored game from the `start`th on (0: all), in commit order, one at a time."""
        for _, record in self.games(start):
            yield record

    def games(self, start: int = 0) -> Iterator[tuple[ScoredRow, GameRecord]]:
        """Every scored game from the `start`th on (0: all), in commit order, one at a time: its row (as the
        standings and the SPRT count it) and its record."""
        if self._store is not None:
            for game, data in self._store.done_with_records(start):
                record = self._parsed(data, game.game_id)
                yield self._checked(game, record), record
            return
        seen = 0
        for record in self._file_records():
            if record.termination.is_scored and record.result != "*":
                seen += 1
                if seen > start:
                    yield _row_of_record(record, seen), record

    def lines(self, start: int = 0) -> Iterator[tuple[ScoredRow, str]]:
        """Every scored game from the `start`th on, in commit order, as its viewer line (referee.outputs.viewerline):
        from the database, where each is kept beside its record; made from the record where it is not."""
        if self._store is not None:
            for game, line, data in self._store.done_with_lines(start):
                yield (
                    self._checked(game),
                    line if line is not None else line_text(self._parsed(data or "", game.game_id)),
                )
            return
        for row, record in self.games(start):
            yield row, line_text(record)

    def page(
        self,
        offset: int,
        limit: int,
        *,
        bot: str | None = None,
        result: str | None = None,
        termination: str | None = None,
    ) -> tuple[int, list[tuple[int, str]]]:
        """One page of the scored games in commit order, filtered (a bot in either colour, a result, a
        termination: each when given): (how many match, [(its number in commit order, its viewer line)] from the
        `offset`th match on, at most `limit`). From the database only the page's lines are read; a directory
        without one is streamed."""
        if self._store is not None:
            total, rows = self._store.page_of_done(offset, limit, bot=bot, result=result, termination=termination)
            return total, [
                (seq, line if line is not None else line_text(self._parsed(data or "", None)))
                for seq, _black, _white, _result, _termination, line, data in rows
            ]
        total, page = 0, []
        for row, text in self.lines():
            if (
                (bot is None or bot in (row.black, row.white))
                and (result is None or row.result == result)
                and (termination is None or str(row.termination) == termination)
            ):
                total += 1
                if offset < total <= offset + limit:
                    page.append((row.number, text))
        return total, page

    def check_games_file(self) -> None:
        """Compare games.jsonl with the database (`CopyCheck`), from where the last call left off; what disagrees
        is named in `errors`. Nothing to do when the games are read from games.jsonl itself."""
        if self._store is None:
            return
        if self._copy_check is None:
            self._copy_check = CopyCheck(self.out_dir, self._store)
        for problem in self._copy_check.advance():
            if problem.startswith(f"{GAMES_FILE}: ") and " lines disagree with " in problem:
                self.errors[:] = [error for error in self.errors if " lines disagree with " not in error]
            self._note(problem)

    def line_at(self, seq: int) -> str | None:
        """The viewer line of the `seq`th scored game in commit order (from 1), or None."""
        if self._store is not None:
            found = self._store.line_at(seq)
            if found is None:
                return None
            line, data = found
            return line if line is not None else line_text(self._parsed(data or "", None))
        record = self.record_at(seq)
        return None if record is None else line_text(record)

    def record(self, game_id: str) -> GameRecord | None:
        """Game `game_id` (a scored game, else its last void or aborted try in the database), or None."""
        if self._store is not None:
            data = self._store.find_record(game_id)
            return None if data is None else self._parsed(data, game_id)
        for record in self._file_records():
            if record.game_id == game_id:
                return record
        return None

    def record_at(self, seq: int) -> GameRecord | None:
        """The `seq`th scored game in commit order (from 1), or None."""
        if self._store is not None:
            data = self._store.record_at(seq)
            return None if data is None else self._parsed(data, None)
        return next(iter(self.records(seq - 1)), None) if seq >= 1 else None

    def game_ids(self) -> list[str]:
        if self._store is not None:
            return self._store.game_ids()
        return [record.game_id for record in self.records()]

    def scored(self) -> Iterator[ScoredRow]:
        """Every scored game in commit order, without its moves (from the database: no record is read)."""
        if self._store is not None:
            yield from map(self._checked, self._store.done_games())
            return
        for row, _ in self.games():
            yield row

    def counted(self) -> list[CountedGame]:
        """The scored games of a two-bot run as the SPRT counts them: in commit order, with their pair and the
        first bot's points (referee.stats.sprt.PairCounter then counts them as the runner did)."""
        return list(self.counted_games())

    def counted_games(self) -> Iterator[CountedGame]:
        """`counted`, one game at a time: a run's games are never all held at once."""
        if self.two_bots:
            first = self.bots[0]
            for row in self.scored():
                yield counted_game(row, first)

    def _file_records(self) -> Iterator[GameRecord]:
        if self._files is not None:
            for path in self._files:
                try:
                    yield GameRecord.model_validate_json(path.read_bytes())
                except (OSError, ValidationError, ValueError) as error:
                    self._note(f"{path.name}: {first_line(error)}; left out")
            return
        for line in read_lines(self.out_dir / GAMES_FILE):
            if line.torn:
                continue
            if line.record is None:
                self._note(f"{GAMES_FILE} line {line.number}: not a game record ({line.problem}); left out")
            else:
                yield line.record

    def _checked(self, game: DoneGame, record: GameRecord | None = None) -> ScoredRow:
        """A done game's row as the database gives it, when it is one a run writes; else (a changed byte) the row
        is made from the game's record, the damage named in `errors`."""
        problem = None
        if game.result not in ("1-0", "0-1", "1/2-1/2"):
            problem = f"its result is {game.result!r}"
        elif game.termination not in _SCORED:
            problem = f"its termination is {game.termination!r}"
        elif self.bots and (game.black not in self.bots or game.white not in self.bots):
            problem = f"its players are {game.black!r} and {game.white!r}, not bots of this run"
        if problem is None:
            return _row(game)
        if record is None:
            data = self._store.find_record(game.game_id) if self._store is not None else None
            if data is None:
                raise RunReadError(
                    f"{self._database}: game {game.game_id} is damaged ({problem}) and has no record."
                    " Run the"
                    " same match or tournament command: it repairs or sets aside each damaged game"
                )
            record = self._parsed(data, game.game_id)
        self._note(
            f"{self._database.name}: game {game.game_id} is damaged ({problem}); counted from its record. Run the same"
            " match or"
            " tournament command to repair the database (each copy is checked)"
        )
        row = _row_of_record(record, game.number)
        return ScoredRow(game.number, game.round, *astuple_tail(row))

    def _parsed(self, data: str, game_id: str | None) -> GameRecord:
        """A record read from the database; when it is damaged, the same game's line of games.jsonl (the damage
        named in `errors`), or RunReadError naming it when that copy is no good either."""
        try:
            return GameRecord.model_validate_json(data)
        except ValidationError as error:
            problem = _problem(error)
        game_id = game_id or id_at_start(data)
        for _, found_id, raw in line_game_ids(self.out_dir / GAMES_FILE):
            if found_id is not None and found_id == game_id:
                try:
                    record = GameRecord.model_validate_json(raw)
                except ValidationError:
                    continue
                self._note(
                    f"{self._database.name}: the record of game {game_id} is damaged ({problem}); shown from"
                    f" {GAMES_FILE}. Run the same match or tournament command to repair the database (each copy is"
                    " checked)"
                )
                return record
        raise RunReadError(
            f"{self._database}: the record of game {game_id or '?'} is damaged ({problem}), and"
            f" {GAMES_FILE}"
            " has no good copy of it. Run the same match or tournament command: it names what is damaged and repairs"
            " or sets aside each game"
        )

    def _note(self, text: str) -> None:
        if text not in self.errors:
            self.errors.append(text)

    def _bots_from_records(self) -> list[str]:
        names: dict[str, None] = {}
        for row in self.scored():
            names.setdefault(row.black, None)
            names.setdefault(row.white, None)
        return list(names)


def counted_statistics(out_dir: Path) -> MatchStatistics | None:
    """The head-to-head of the two-bot run in `out_dir` as its database holds it, counted as the runner counts
    (referee.stats.sprt.count_in_order over the games in commit order): what the end-of-run text prints, so it is the
    report's and the live page's figures by construction. None for a run of more bots, or one not readable."""
    try:
        with RunDirectory.open(out_dir) as run:
            if not run.two_bots or not run.from_database:
                return None
            return count_in_order(run.counted_games(), run.sprt)[0]
    except (RunReadError, StoreError):
        return None


def counted_game(row: ScoredRow, first: str) -> CountedGame:
    """A scored game as the SPRT counts it: its pair (games 2k-1 and 2k of a two-bot schedule are pair k-1) and
    the first bot's points."""
    return CountedGame(row.number, row.round // 2, points(row.result, for_black=row.black == first))


_SCORED = {str(termination): termination for termination in Termination if termination.is_scored}
"""A scored termination by its stored text (a dict look-up: `Termination(text)` costs ~1 us a game)."""


def astuple_tail(row: ScoredRow) -> tuple[str, str, Result, Termination, float | None, float | None]:
    return row.black, row.white, row.result, row.termination, row.black_cpu_ms, row.white_cpu_ms


def _row(game: DoneGame) -> ScoredRow:
    return ScoredRow(
        game.number,
        game.round,
        game.black,
        game.white,
        game.result,
        _SCORED[game.termination],  # `_checked` found it there
        game.black_cpu_ms,
        game.white_cpu_ms,
    )


def _row_of_record(record: GameRecord, index: int) -> ScoredRow:
    number = _number_of(record.game_id, index)
    return ScoredRow(
        number,
        number - 1,  # a two-bot schedule numbers its games round by round: games 2k-1 and 2k are pair k-1
        record.black.name,
        record.white.name,
        record.result,
        record.termination,
        record.black.off_turn_cpu_ms,
        record.white.off_turn_cpu_ms,
    )


def points(result: str, *, for_black: bool = True) -> float:
    """The points a result gives Black (or White): 1, 1/2 or 0 (protocol.rules.result_points)."""
    black = result_points(result)
    return black if for_black else 1.0 - black


def _number_of(game_id: str, default: int) -> int:
    digits = game_id.lstrip("g")
    return int(digits) if digits.isdigit() else default


def _read_match_summary(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RunReadError(
            f"{path}: cannot read the match summary ({error}); run the match again to rewrite it"
        ) from None
    if not isinstance(summary, dict):
        raise RunReadError(f"{path}: not a match summary (a JSON object was expected)")
    return summary


def _field_of(out_dir: Path) -> list[str]:
    """The bots of a tournament in the order its standings.json lists them ([] when there is none)."""
    try:
        standings = json.loads((out_dir / "standings.json").read_text(encoding="utf-8"))
        return [str(bot["name"]) for bot in standings["bots"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def format_summary_of(out_dir: Path) -> dict[str, Any] | None:
    """What the run's format adds to its standings (Swiss tie-breaks, a knockout bracket, an adaptive verdict), as
    the runner last wrote it to standings.json; None for the other formats or when there is none yet."""
    try:
        standings = json.loads((out_dir / "standings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    summary = standings.get("format_summary") if isinstance(standings, dict) else None
    return summary if isinstance(summary, dict) else None
