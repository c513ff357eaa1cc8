"""games.jsonl as the second copy of a tournament's games: reading it back, and rebuilding the database from it.

Its lines are read by the one policy of `referee.rundir` (a torn last line is no game; a damaged line is
named): here a damaged line is an error, since a rebuild must not silently drop a game.

The database (`tournament.db`) is a tournament's state, and `games.jsonl` (its games in commit order) is
rewritten from it whenever a run starts or ends and the file does not already hold exactly its games
(`sync_games_file`). If the database is lost (deleted, truncated to 0 bytes, corrupt), that rewrite would
destroy the only other copy of the games, so a run first checks that the file holds no game the database
lacks (`check_nothing_lost`), and `rebuild_database` puts the file's games back into a fresh database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from referee.files import write_text_atomic
from referee.record import GameRecord, Termination
from referee.rundir import RunReadError, line_game_ids, read_lines
from referee.schedule import ScheduledGame

GAMES_FILE = "games.jsonl"


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


def read_games_file(path: Path) -> GamesFile:
    """The records in a games.jsonl (none when there is no file), by the one line policy of referee.rundir: a
    torn last line is left out, any other line that is not a record is a RecoveryError naming it."""
    records = []
    torn = False
    try:
        for line in read_lines(path):
            torn = line.torn
            if line.damaged:
                raise RecoveryError(
                    f"{path}: line {line.number} is not a game record ({line.problem}); remove or repair that line"
                )
            if line.record is not None:
                records.append(line.record)
    except RunReadError as error:
        raise RecoveryError(str(error)) from None
    return GamesFile(records, torn_tail=torn)


def check_nothing_lost(out_dir: Path, known_game_ids: Iterable[str], *, rebuild_hint: str) -> None:
    """LostGamesError when games.jsonl in `out_dir` holds scored games whose ids are not in `known_game_ids`.

    Called before games.jsonl is rewritten from the database. `rebuild_hint` says how to rebuild (the
    command line), for the message.
    """
    path = out_dir / GAMES_FILE
    known = set(known_game_ids)
    try:
        missing = [game_id for game_id in scored_game_ids(path, known) if game_id not in known]
    except RecoveryError as error:
        raise LostGamesError(f"{error}. Nothing was changed") from None
    if missing:
        raise LostGamesError(
            f"{path} holds {len(missing)} game(s) that {out_dir / 'tournament.db'} does not (the database is empty,"
            f" new or was replaced), so nothing was changed and no game was played. To rebuild the database from"
            f" {GAMES_FILE}: {rebuild_hint}"
        )


def scored_game_ids(path: Path, known: set[str] | None = None) -> list[str]:
    """The ids of the scored games in a games.jsonl, read cheaply (it runs at every start; the file may be large).

    The file is streamed, and a line whose id (taken from the start of the line) is in `known` is not parsed:
    only the others are, to see whether they are scored. A torn last line is left out (the one line policy of
    referee.rundir); any other line that is not a record's JSON is a RecoveryError naming it.
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


def games_file_in_sync(out_dir: Path, game_ids: list[str]) -> bool:
    """Whether games.jsonl holds exactly these games, in this order, and nothing else (no torn or damaged line,
    no duplicate): then it need not be rewritten. Streamed, reading only each line's id."""
    path = out_dir / GAMES_FILE
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
            if size and (file.seek(size - 1), file.read(1))[1] != b"\n":
                return False  # a torn last line
        expected = iter(game_ids)
        for _, game_id, _ in line_game_ids(path):
            if game_id is None or game_id != next(expected, None):
                return False
        return next(expected, None) is None
    except (OSError, RunReadError):
        return False


def sync_games_file(out_dir: Path, store: _Records) -> None:
    """games.jsonl from the database, in commit order: no duplicates, no half line from a killed run. Left as it
    is when it already holds exactly that (a 50,000-game run's file is 575 MB: rewriting it at every start and
    end would cost seconds)."""
    if not games_file_in_sync(out_dir, store.game_ids()):
        write_text_atomic(out_dir / GAMES_FILE, (data + "\n" for data in store.records()))


class _Records(Protocol):
    def game_ids(self) -> list[str]: ...

    def records(self) -> Iterator[str]: ...


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
    """Fill a new, empty `store` with the schedule and every game of out_dir/games.jsonl; the games restored."""
    games = read_games_file(out_dir / GAMES_FILE)
    matched = match_to_schedule(games.records, schedule)
    store.start(fingerprint, schedule)
    store.record_games(matched)
    return len(matched)
