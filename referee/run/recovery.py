"""games.jsonl as the second copy of a tournament's games: the two copies compared, damage named and repaired
from the good copy, and the database rebuilt from the file.

Its lines are read by the one policy of `referee.run.rundir` (a torn last line is no game; a damaged line is
named): here a damaged line is an error, since a rebuild must not silently drop a game.

The database (`run.db`; `tournament.db` in an older run's directory) is a run's state, and `games.jsonl` (its
games in commit order) is rewritten from it whenever a run starts or ends and the file does not already hold
exactly its games (`sync_games_file`). If the database is lost (deleted, truncated to 0 bytes, corrupt), that
rewrite would destroy the only other copy of the games, so a run first checks that the file holds no game the
database lacks (`check_nothing_lost`), and `rebuild_database` puts the file's games back into a fresh database.

Neither copy is trusted alone. `sync_games_file` compares them game by game: a record whose bytes are the
same in both, and whose small columns (result, termination, CPU) agree with it, is trusted as it is (50,000
games: 1.1 s; 2.4 s when each line was read through an 8 KiB buffer and its columns found byte by byte); any other
is audited (referee.run.audit: its moves replayed, its result recomputed, ~0.4 ms) before
it is written out or repaired from. A damaged copy is repaired from the good one and named (file, game, line);
what no good copy backs is set aside in quarantine.jsonl, named, and the game played again — never silently
dropped, and a good line of games.jsonl is never replaced by a bad record. A rebuild audits every line and
refuses a damaged or forged one by its line number, under the run's lock taken before anything is moved.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from referee.outputs.files import append_line, write_text_atomic
from referee.outputs.terminal import printable
from referee.record import GameRecord, Termination
from referee.run.audit import RecordCheckError, check_record
from referee.run.rundir import ID_PREFIX, READ_BUFFER, RunReadError, id_at_start, line_game_ids, read_lines
from referee.run.schedule import ScheduledGame
from referee.run.store import AuditRow, RunStore, StoreError, database_path, lock_directory, record_digest

GAMES_FILE = "games.jsonl"
QUARANTINE_FILE = "quarantine.jsonl"
"""Where copies that cannot be trusted are set aside (one JSON object a line: where it was, why, its bytes)."""


class RecoveryError(Exception):
    """games.jsonl cannot be used as asked; the message says why and what to do."""


class LostGamesError(RecoveryError):
    """games.jsonl holds games the database does not: rewriting it from the database would lose them."""


@dataclass(frozen=True)
class GamesFile:
    """What games.jsonl holds."""

    records: list[GameRecord]
    torn_tail: bool
    """Its last line was cut short (a referee killed while appending it): that game is not counted."""
    torn_line: str | None = None
    """That line, named for the user: "line 49 (game g0049)"."""


def _db(out_dir: Path) -> str:
    """The name of the run's database in `out_dir`, for messages (`run.db`, or an older run's `tournament.db`)."""
    return database_path(out_dir).name


def read_games_file(path: Path, *, audit: bool = False) -> GamesFile:
    """The records in a games.jsonl (none when there is no file), by the one line policy of referee.run.rundir: a
    torn last line is left out (and named in `torn_line`), any other line that is not a record is a
    RecoveryError naming it. `audit`: every scored record is also replayed (referee.run.audit), and one that does
    not check out is a RecoveryError naming its line."""
    records = []
    torn = False
    torn_line: str | None = None
    try:
        for line in read_lines(path):
            torn = line.torn
            if line.damaged:
                raise RecoveryError(
                    f"{path}: line {line.number} is not a game record ({line.problem}); remove or repair that line"
                )
            if line.torn:
                torn_line = f"line {line.number}" + _game_of_torn_line(path, line.number)
            if line.record is not None:
                if audit and line.record.termination.is_scored:
                    try:
                        check_record(line.record)
                    except RecordCheckError as error:
                        raise RecoveryError(
                            f"{path}: line {line.number} (game {line.record.game_id}) does not check out: {error};"
                            " it is damaged or was forged: remove or repair that line"
                        ) from None
                records.append(line.record)
    except RunReadError as error:
        raise RecoveryError(str(error)) from None
    return GamesFile(records, torn_tail=torn, torn_line=torn_line)


def _game_of_torn_line(path: Path, number: int) -> str:
    """ " (game g0049)" for a torn line whose id survived (it is at the line's start), else ""."""
    try:
        with path.open("rb", buffering=READ_BUFFER) as file:
            for index, raw in enumerate(file, 1):
                if index == number:
                    game_id = id_at_start(raw)
                    return f" (game {game_id})" if game_id else ""
    except OSError:
        pass
    return ""


def check_nothing_lost(out_dir: Path, known_game_ids: Iterable[str] | RunStore, *, rebuild_hint: str) -> None:
    """LostGamesError when games.jsonl in `out_dir` holds scored games whose ids are not in `known_game_ids` (or not
    done in the store given instead: then a file that holds exactly its games is found in one pass, whose answer
    `sync_games_file` reuses).

    Called before games.jsonl is rewritten from the database. `rebuild_hint` says how to rebuild (the
    command line), for the message, which describes the disagreement as what it is: a database that holds no
    game at all beside a file that holds some (empty, new or replaced), or games added to the file beyond a
    database that holds others (named, and whether they check out).
    """
    path = out_dir / GAMES_FILE
    if isinstance(known_game_ids, RunStore):
        try:
            in_sync = _in_sync(path, known_game_ids)
        finally:  # the database's own check, which ran meanwhile, answers first (its damage, not the comparison's)
            known_game_ids.wait_intact()
        if in_sync:
            return  # the file holds exactly the database's games, byte for byte
        known_game_ids = known_game_ids.game_ids() + known_game_ids.damaged_ids()
    known = set(known_game_ids)
    try:
        missing = [game_id for game_id in scored_game_ids(path, known) if game_id not in known]
    except RecoveryError as error:
        raise LostGamesError(f"{error}. Nothing was changed") from None
    if not missing:
        return
    database = database_path(out_dir)
    if not known:
        raise LostGamesError(
            f"{path} holds {len(missing)} game(s) but {database} holds none (the database is empty, new or was"
            f" replaced), so nothing was changed and no game was played. To rebuild the database from"
            f" {GAMES_FILE}: {rebuild_hint}"
        )
    audits = _audit_lines(path, set(missing))
    named = "; ".join(audits[:5]) + (f"; and {len(audits) - 5} more" if len(audits) > 5 else "")
    raise LostGamesError(
        f"{path} holds {len(missing)} game(s) beyond the {len(known)} that {database} holds: {named}. The database"
        " passed its integrity check, so these lines were added to the file by something else than this run (a"
        " copy from another directory, an edit) or the database is an older copy. Nothing was changed and no game"
        f" was played. To count those games (each is checked first): {rebuild_hint}; to play them again instead,"
        f" remove those lines from {GAMES_FILE}"
    )


def _audit_lines(path: Path, game_ids: set[str]) -> list[str]:
    """ "line 49 (game g0049, checks out)" for each line holding one of `game_ids`."""
    found = []
    for number, game_id, raw in line_game_ids(path):
        if game_id in game_ids:
            _record, problem = audit_text(raw, game_id)
            found.append(f"line {number} (game {game_id}, " + ("checks out)" if problem is None else f"{problem})"))
    return found


def scored_game_ids(path: Path, known: set[str] | None = None) -> list[str]:
    """The ids of the scored games in a games.jsonl, read cheaply (it runs at every start; the file may be large).

    The file is streamed, and a line whose id (taken from the start of the line) is in `known` is not parsed:
    only the others are, to see whether they are scored. A torn last line is left out (the one line policy of
    referee.run.rundir); any other line that is not a record's JSON is a RecoveryError naming it.
    """
    ids = []
    try:
        for number, game_id, raw in line_game_ids(path):
            if game_id is not None and known is not None and game_id in known:
                ids.append(game_id)
                continue
            try:
                data = json.loads(raw)
                found, termination = data["game_id"], Termination(data["termination"])
            except (ValueError, KeyError, TypeError):
                raise RecoveryError(f"{path}: line {number} is not a game record; remove or repair that line") from None
            if termination.is_scored:
                ids.append(str(found))
    except RunReadError as error:
        raise RecoveryError(str(error)) from None
    return ids


def audit_text(raw: bytes | str, game_id: str | None = None) -> tuple[GameRecord | None, str | None]:
    """A copy of a record, audited: (the record, None) when it is one, of a scored game (`game_id`'s when given),
    whose moves replay to its result; else (the record or None, what is wrong)."""
    try:
        record = GameRecord.model_validate_json(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the line"
        return None, f"not a game record ({where}: {first['msg']})"
    if game_id is not None and record.game_id != game_id:
        return record, f"it holds game {record.game_id}, not {game_id}"
    if not record.termination.is_scored:
        return record, f"it is a {record.termination.value} game, not a scored one"
    try:
        check_record(record)
    except RecordCheckError as error:
        return record, f"it does not check out: {error}"
    return record, None


def _agrees(row: AuditRow, record: GameRecord) -> str | None:
    """None when the database's small columns say what the record says; else the first disagreement."""
    pairs = (
        ("game_id", row.game_id, record.game_id),
        ("result", row.result, record.result),
        ("termination", row.termination, str(record.termination)),
        ("black_cpu_ms", row.black_cpu_ms, record.black.off_turn_cpu_ms),
        ("white_cpu_ms", row.white_cpu_ms, record.white.off_turn_cpu_ms),
    )
    for name, column, value in pairs:
        if column != value:
            return f"its {name} column is {column!r} but its record says {value!r}"
    return None


_VALUE = re.compile(rb'"[^"]*"|[^,}]*')
"""A value as `_field` takes it: a string to its closing quote, else up to the next comma or brace."""


def _field(raw: bytes, key: bytes, occurrence: int = -1) -> bytes | None:
    """The raw value of a key in a record's JSON, found without parsing it (the last, or the first, occurrence:
    the top-level fields come after the moves; black's CPU before white's). Only a pre-check: a mismatch sends
    the record to the full audit."""
    needle = b'"' + key + b'":'
    at = raw.rfind(needle) if occurrence < 0 else raw.find(needle)
    if occurrence == 1 and at >= 0:
        at = raw.find(needle, at + 1)
    if at < 0:
        return None
    found = _VALUE.match(raw, at + len(needle))
    return None if found is None else found.group()


@functools.lru_cache(maxsize=64)
def _json_bytes(text: str) -> bytes:
    """A small column's text as its record's JSON has it (results and terminations: a handful of values)."""
    return json.dumps(text).encode()


_OUTCOME = re.compile(rb'"result":("[^"]*"|[^,}]*),"winner":(?:"[^"]*"|[^,}]*),"termination":("[^"]*"|[^,}]*)')
"""The result and the termination as a record lays them out, found in one step from the result's key."""


def _outcome(raw: bytes) -> tuple[bytes | None, bytes | None]:
    """(result, termination) as `_field` finds them (the last of each key), in one step where the record is laid
    out as the arena writes it (no later "termination" key), else field by field."""
    found = _OUTCOME.match(raw, max(0, raw.rfind(b'"result":')))
    if found is not None and raw.find(b'"termination":', found.end()) < 0:
        return found.group(1), found.group(2)
    return _field(raw, b"result"), _field(raw, b"termination")


_CPU_KEY = b'"off_turn_cpu_ms":'


def _columns_agree(row: AuditRow, raw: bytes) -> bool:
    """The cheap check of the small columns against a record both copies agree on (no parsing: ~6 us)."""
    if not raw.startswith(ID_PREFIX + row.game_id.encode() + b'"'):
        return False
    result, termination = _outcome(raw)
    if result != _json_bytes(row.result) or termination != _json_bytes(row.termination):
        return False
    black = raw.find(_CPU_KEY)  # black's comes first, white's next (as `_field` finds them)
    white = raw.find(_CPU_KEY, black + 1) if black >= 0 else -1
    if white < 0:
        return False
    for at, value in ((black, row.black_cpu_ms), (white, row.white_cpu_ms)):
        found = _VALUE.match(raw, at + len(_CPU_KEY))
        text = b"" if found is None else found.group()
        if value is None or text == b"null":
            if (value is None) != (text == b"null"):
                return False
            continue
        try:
            if float(text) != value:
                return False
        except ValueError:
            return False
    return True


@dataclass
class Reconciled:
    """What `sync_games_file` found and did, for the user: each damage named, where the copies went."""

    notes: list[str] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)  # games played again: no good copy was left
    rewritten: bool = False


def sync_games_file(out_dir: Path, store: RunStore, *, quiet: bool = False) -> Reconciled:
    """games.jsonl from the database, in commit order: no duplicates, no half line from a killed run, no damaged
    copy. Left as it is when it already holds exactly the database's games, byte for byte, and the database's
    small columns agree with them (a 50,000-game run's file is 575 MB: rewriting it at every start and end would
    cost seconds). Otherwise every game whose two copies differ is audited, the good copy kept, the damaged one
    repaired and named (on stderr unless `quiet`, and in the result), and the file rewritten, streamed.

    StoreError when the database cannot be read (its records' pages damaged): the file is then left alone.
    """
    found = Reconciled()
    try:
        _sync(out_dir, store, found)
    finally:
        if not quiet:
            for note in found.notes:
                print(printable(f"warning: {note}"), file=sys.stderr)
    return found


def _sync(out_dir: Path, store: RunStore, found: Reconciled) -> None:
    import sqlite3

    path = out_dir / GAMES_FILE
    store.wait_intact()  # the database's own check first: nothing is repaired from, or written out of, a damaged file
    try:
        for number, broken in store.broken_rows():
            _repair_row(out_dir, store, number, broken, found)
        if _in_sync(path, store):
            _check_digests(out_dir, store, found)
            return
        lines = _index_lines(path)
        by_id: dict[str, list[int]] = {}
        for line_number, (game_id, _, torn, _) in lines.items():
            if game_id is not None and not torn:
                by_id.setdefault(game_id, []).append(line_number)
        done = store.done_numbers()
        done_ids = {game_id for _, game_id in done}
        # The lines no done game claims (damaged past their id, torn, extra), read before the file is replaced.
        left = {
            number: (entry, _read_at(path, entry[1]))
            for number, entry in lines.items()
            if entry[0] not in done_ids or entry[2]
        }

        def texts() -> Iterator[str]:
            for number, game_id in done:
                row = store.audit_row(number)
                if row is None:
                    continue
                text = _reconcile_game(out_dir, store, row, lines, by_id.get(game_id, []), found)
                if text is not None:
                    yield text.decode("utf-8", "replace") + "\n"

        store.verified = None  # compared whole again next time
        write_text_atomic(path, texts())
        found.rewritten = True
        if found.requeued:
            store.renumber()
        _check_digests(out_dir, store, found)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as error:
        raise StoreError(
            f"{database_path(out_dir)}: the tournament database is damaged ({error}); {path} was left as it is. Run the"
            " same command with --rebuild-db to rebuild the database from it (each of its games is checked)"
        ) from None
    for number, ((game_id, _, torn, problem), raw) in sorted(left.items()):
        if torn:
            found.notes.append(
                f"{path}: its last line (line {number}{f', game {game_id}' if game_id else ''}) was cut short (a run"
                " killed while writing it); "
                + (
                    "the database holds that game: written whole from it"
                    if game_id in done_ids
                    else "that game was never committed: it is not counted and will be played"
                )
            )
        elif problem is not None or game_id is None:
            what = problem or "is not a game record"
            found.notes.append(f"{path}: line {number} {what}; set aside in {QUARANTINE_FILE}")
            _quarantine(out_dir, f"{GAMES_FILE} line {number}", game_id, what, raw)
        else:
            _, audit = audit_text(raw, game_id)
            if audit is None:  # a scored game the database does not hold (check_nothing_lost stops that at a start)
                found.notes.append(
                    f"{path}: line {number} holds game {game_id}, which {_db(out_dir)} does not; set aside in"
                    f" {QUARANTINE_FILE}"
                )
                _quarantine(out_dir, f"{GAMES_FILE} line {number}", game_id, f"not in {_db(out_dir)}", raw)
            # else: a void game's line (older versions wrote them) or a forged extra: the database does not count it
            elif "not a scored one" not in audit:
                found.notes.append(f"{path}: line {number} (game {game_id}) {audit}; set aside in {QUARANTINE_FILE}")
                _quarantine(out_dir, f"{GAMES_FILE} line {number}", game_id, audit, raw)


def _check_digests(out_dir: Path, store: RunStore, found: Reconciled) -> None:
    """The digests of the records (which readers compare games.jsonl with, referee.run.rundir) as saved, checked by
    their CRC in a few milliseconds; else made again from the records, which have just been found to be the
    file's lines (a database from before the digests gets them here, once; a damaged digest is named)."""
    if store.digests_intact():
        return
    fresh, damaged = [], []
    for row in store.audit_rows():
        if row.record is not None:
            digest = record_digest(row.record)
            fresh.append((row.number, digest))
            if row.digest is not None and row.digest != digest:
                damaged.append(row.game_id)
    store.set_digests(fresh)
    if damaged:
        shown = ", ".join(damaged[:5]) + (f" and {len(damaged) - 5} more" if len(damaged) > 5 else "")
        found.notes.append(
            f"{database_path(out_dir)}: the digest of game {shown} was damaged; made again from its record, which is"
            f" {GAMES_FILE}'s line"
        )


def _in_sync(path: Path, store: RunStore) -> bool:
    """The fast path: every done game's record is byte for byte the file's line at its place, its small columns
    agree with it, and the file holds nothing else (no torn, damaged or extra line). One pass over both (1.1 s at
    50,000 games), remembered until the file or the database changes."""
    try:
        stat = path.stat()
    except OSError:
        return False
    seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns, store.changes())
    if store.agreed == seen:
        return True
    if _compare(path, store):
        store.agreed = seen
        return True
    return False


def _compare(path: Path, store: RunStore) -> bool:
    """Whether games.jsonl holds exactly the database's games, byte for byte. Within one run (the lock held, the
    runner only appending), a file compared whole before is compared from where that comparison ended: the
    games committed since, not the whole run again (the end of a run costs what its new games cost)."""
    try:
        stat = path.stat()
        identity = (stat.st_ino, stat.st_dev)
        offset, count = 0, 0
        trusted = store.trusted
        if trusted is not None and store.verified is None:
            store.trusted = None  # once: what the run writes next is compared as usual
            if trusted == store.done_count():  # the last run compared them, and neither file changed since
                store.mark_verified(identity, stat.st_size, trusted)
                return True
        if store.verified is not None and store.verified[0] == identity and stat.st_size >= store.verified[1]:
            offset, count = store.verified[1], store.verified[2]
        with path.open("rb", buffering=READ_BUFFER) as file:
            file.seek(offset)
            for row in store.audit_rows(count):
                record = row.record
                if record is None:
                    return False
                # The line at this place must be the record and its newline: as many bytes are read (a line of
                # another length differs there), no copy of either (11.5 KB a game).
                raw = file.read(len(record) + 1)
                if not raw.endswith(b"\n") or not raw.startswith(record) or b"\n" in record:
                    return False
                if not _columns_agree(row, record) or not row.line_intact:
                    return False
                count += 1
            end = file.tell()
            if not all(not extra.strip() for extra in file):
                return False
    except OSError:  # no file (it is written, if empty), or none that can be read
        return False
    store.mark_verified(identity, end, count)
    return True


def _index_lines(path: Path) -> dict[int, tuple[str | None, int, bool, str | None]]:
    """line number -> (game id, offset, torn, problem) for every non-empty line: the id as the line begins (so a
    line damaged further on is still matched to its game), and the problem of a line that is not JSON of a
    record at all (None: the line will be audited where it is compared)."""
    lines: dict[int, tuple[str | None, int, bool, str | None]] = {}
    try:
        file = path.open("rb", buffering=READ_BUFFER)
    except FileNotFoundError:
        return lines
    with file:
        offset = 0
        for number, raw in enumerate(file, 1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            torn = not raw.endswith(b"\n")
            game_id = id_at_start(raw)
            problem = None
            if not torn and game_id is None:
                problem = "is not a game record (it does not begin as one)"
            lines[number] = (game_id, start, torn, problem)
    return lines


def _read_at(path: Path, offset: int) -> bytes:
    with path.open("rb") as file:
        file.seek(offset)
        return file.readline().rstrip(b"\n")


def _reconcile_game(
    out_dir: Path,
    store: RunStore,
    row: AuditRow,
    lines: dict[int, tuple[str | None, int, bool, str | None]],
    mine: list[int],
    found: Reconciled,
) -> bytes | None:
    """The copy of one done game to write out (None: requeued), after the two copies are compared. `mine`: the
    numbers of the file's lines that begin as this game's."""
    path = out_dir / GAMES_FILE
    number = mine[-1] if mine else None  # a game appended twice: the last copy (as match_to_schedule counts)
    line = None if number is None else _read_at(path, lines[number][1])
    where = f"{path} line {number}"
    if row.record is not None and line == row.record and _columns_agree(row, row.record) and row.line_intact:
        return row.record
    db_record, db_problem = (
        (None, "its record is missing") if row.record is None else audit_text(row.record, row.game_id)
    )
    if db_problem is None and row.record_intact is False:  # it replays, but it is not what was saved
        db_problem = "its bytes do not match the checksum saved with them"
    elif db_problem is None and row.record_intact is None and line is not None and line != row.record:
        # Saved before checksums, and both replay: which one is damaged cannot be told, so the line of games.jsonl
        # is kept (never replaced by a copy that differs from it), and the database takes it.
        _, line_problem = audit_text(line, row.game_id)
        if line_problem is None:
            db_problem = f"it differs from {where}, and no checksum says which is right: the line is kept"
    if db_record is not None and db_problem is None and row.record is not None:
        columns = _agrees(row, db_record) or (
            None if row.line_intact else "its viewer line does not match its checksum"
        )
        if columns is not None:  # the record is good, its small columns or its viewer line are not: made again
            found.notes.append(
                f"{database_path(out_dir)}: game {row.game_id}: {columns} (damaged); repaired from its record, which"
                " checks out"
            )
            store.restore_game(row.number, db_record, row.record.decode())
        if line is None:
            found.notes.append(
                f"{path}: game {row.game_id} was missing; written from {_db(out_dir)}, whose copy checks out"
            )
        elif line != row.record:
            line_record, line_problem = audit_text(line, row.game_id)
            what = "damaged"
            if line_problem is None and line_record != db_record:
                # Both replay, but they differ (a time, a reason, a name): not the record the run wrote.
                line_problem = f"it differs from {_db(out_dir)}'s copy ({_first_difference(line_record, db_record)})"
                what = "damaged or forged (its moves replay to its result, but it is not the game the run saved)"
            if line_problem is not None:
                found.notes.append(
                    f"{where} (game {row.game_id}) is {what} ({line_problem}); rewritten from {_db(out_dir)}, whose"
                    " copy"
                    f" checks out (the line is kept in {QUARANTINE_FILE}, and never counted)"
                )
                _quarantine(out_dir, f"{GAMES_FILE} line {number}", row.game_id, line_problem, line)
        return row.record
    # The database's copy is damaged: the file's, if it checks out, repairs it.
    line_record, line_problem = (None, "no line") if line is None else audit_text(line, row.game_id)
    if line_record is not None and line_problem is None and line is not None:
        found.notes.append(
            f"{database_path(out_dir)}: game {row.game_id} is damaged ({db_problem}); repaired from {where}, which"
            " checks"
            f" out (the damaged copy is kept in {QUARANTINE_FILE})"
        )
        if row.record is not None:
            _quarantine(out_dir, f"{_db(out_dir)} game {row.number}", row.game_id, str(db_problem), row.record)
        store.restore_game(row.number, line_record, line.decode())
        return line
    found.notes.append(
        f"game {row.game_id}: no copy can be trusted ({_db(out_dir)}: {db_problem}; {GAMES_FILE}: "
        + (f"line {number}: {line_problem}" if line is not None else "no line")
        + f"): both are set aside in {QUARANTINE_FILE}, and the game will be played again"
    )
    if row.record is not None:
        _quarantine(out_dir, f"{_db(out_dir)} game {row.number}", row.game_id, str(db_problem), row.record)
    if line is not None:
        _quarantine(out_dir, f"{GAMES_FILE} line {number}", row.game_id, str(line_problem), line)
    store.requeue(row.number)
    found.requeued.append(row.number)
    return None


def _first_difference(mine: GameRecord | None, theirs: GameRecord) -> str:
    """Where two records of one game differ, as a field path: "moves.12.elapsed_ms"."""
    if mine is None:
        return "not a record"

    def walk(a: Any, b: Any, where: str) -> str | None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                found = walk(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
                if found:
                    return found
            return None
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                found = walk(x, y, f"{where}.{index}")
                if found:
                    return found
            return None
        return None if a == b else (where or "the record")

    return walk(mine.model_dump(mode="json"), theirs.model_dump(mode="json"), "") or "its bytes"


def _repair_row(out_dir: Path, store: RunStore, number: int, problem: str, found: Reconciled) -> None:
    """A game row no run could have written (its status damaged): done again from games.jsonl's copy when that
    checks out, else pending (played again). Named either way."""
    game_id = f"g{number:04d}"
    path = out_dir / GAMES_FILE
    line: bytes | None = None
    where = ""
    for line_number, found_id, raw in line_game_ids(path):
        if found_id == game_id:
            line, where = raw.rstrip(b"\n"), f"{path} line {line_number}"
    record, line_problem = (None, "no line") if line is None else audit_text(line, game_id)
    if record is not None and line_problem is None and line is not None:
        store.restore_game(number, record, line.decode())
        found.notes.append(f"{database_path(out_dir)}: game {game_id}: {problem} (damaged); repaired from {where}")
    else:
        store.requeue(number)
        store.renumber()
        found.requeued.append(number)
        found.notes.append(
            f"{database_path(out_dir)}: game {game_id}: {problem} (damaged), and {GAMES_FILE} has no good copy of it"
            f" ({line_problem}): it will be played again"
        )


def _quarantine(out_dir: Path, source: str, game_id: str | None, problem: str, raw: bytes) -> None:
    """Set a copy that cannot be trusted aside in quarantine.jsonl, with where it was and why."""
    entry = {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source,
        "game_id": game_id,
        "problem": problem,
        "text": raw.decode("utf-8", "backslashreplace"),
    }
    append_line(out_dir / QUARANTINE_FILE, json.dumps(entry) + "\n")


class _Store(Protocol):
    def start(self, fingerprint: dict[str, Any], schedule: list[ScheduledGame] | None) -> object: ...

    def record_games(self, games: list[tuple[int, GameRecord]]) -> int: ...


def match_to_schedule(records: Sequence[GameRecord], schedule: Sequence[ScheduledGame]) -> list[tuple[int, GameRecord]]:
    """(schedule number, record) for every scored record; RecoveryError when one does not fit this schedule.

    A record fits when the schedule has a game with its id, between the same bots with the same colours,
    from the same opening: otherwise it was played with other settings and cannot count here.
    """
    by_id = {game.game_id: game for game in schedule}
    matched: dict[int, GameRecord] = {}
    for record in records:
        if not record.termination.is_scored:
            continue
        game = by_id.get(record.game_id)
        if game is None:
            raise RecoveryError(
                f"{GAMES_FILE}: game {record.game_id} is not in this tournament's schedule ({len(schedule)} games);"
                " rebuild with the settings the games were played with (the same bots, games, openings)"
            )
        played = (record.black.name, record.white.name, tuple(record.settings.opening))
        if played != (game.black, game.white, game.opening):
            raise RecoveryError(
                f"{GAMES_FILE}: game {record.game_id} was {played[0]} (black) vs {played[1]} (white) from"
                f" {list(played[2])}, but this tournament schedules {game.black} vs {game.white} from"
                f" {list(game.opening)}; rebuild with the settings the games were played with"
            )
        matched[game.number] = record  # a game recorded twice (appended by two runs): the last copy counts
    return sorted(matched.items())


def set_aside(path: Path) -> Path | None:
    """Rename a damaged database (and its WAL files) out of the way, keeping it for inspection; its new name."""
    if not path.exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.broken-{stamp}")
    path.rename(target)
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.rename(target.with_name(target.name + suffix))
    return target


def rebuild_database(store: _Store, out_dir: Path, fingerprint: dict[str, Any], schedule: list[ScheduledGame]) -> int:
    """Fill a new, empty `store` with the schedule and every game of out_dir/games.jsonl, each audited first (a
    RecoveryError names a line that does not check out); the games restored."""
    games = read_games_file(out_dir / GAMES_FILE, audit=True)
    matched = match_to_schedule(games.records, schedule)
    store.start(fingerprint, schedule)
    store.record_games(matched)
    return len(matched)


@dataclass(frozen=True)
class Rebuilt:
    restored: int
    kept: Path | None  # where the old database was put
    torn_line: str | None  # a torn last line left out ("line 49 (game g0049)"): that game will be played


def rebuild_from_games_file(
    out_dir: Path, fingerprint: dict[str, Any], schedule_for: Callable[[Sequence[GameRecord]], list[ScheduledGame]]
) -> Rebuilt:
    """`--rebuild-db`: a new database from games.jsonl; `schedule_for(records)` is the run's schedule given the
    recorded games (a format that pairs from results replays them; RecoveryError if it cannot).

    The run's lock is taken first (a live run in the directory refuses the rebuild before anything is touched),
    then every line is read and audited and checked against the schedule, so a refusal (a live run, other
    settings, a damaged or forged line) leaves the directory as it was.
    """
    if not (out_dir / GAMES_FILE).exists():
        raise StoreError(f"--rebuild-db: {out_dir / GAMES_FILE} does not exist: there is nothing to rebuild from")
    lock = lock_directory(out_dir)
    try:
        try:
            games = read_games_file(out_dir / GAMES_FILE, audit=True)
            schedule = schedule_for(games.records)
            match_to_schedule(games.records, schedule)
        except RecoveryError as error:
            raise StoreError(f"--rebuild-db: {error}; nothing was changed") from None
        kept = set_aside(database_path(out_dir))
    except BaseException:
        lock.close()
        raise
    with RunStore(database_path(out_dir), lock=lock) as store:
        return Rebuilt(rebuild_database(store, out_dir, fingerprint, schedule), kept, games.torn_line)
