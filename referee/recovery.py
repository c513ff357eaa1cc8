"""games.jsonl as the second copy of a tournament's games: reading it back, and rebuilding the database from it.

The database (`tournament.db`) is a tournament's state, and `games.jsonl` is rewritten from it whenever a
run starts or ends. If the database is lost (deleted, truncated to 0 bytes, corrupt), that rewrite would
destroy the only other copy of the games, so a run first checks that the file holds no game the database
lacks (`check_nothing_lost`), and `rebuild_database` puts the file's games back into a fresh database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from referee.record import GameRecord
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
    """The records in a games.jsonl (none when there is no file); RecoveryError names a damaged line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return GamesFile([], torn_tail=False)
    except OSError as error:
        raise RecoveryError(f"{path}: cannot be read: {error.strerror}") from None
    lines = data.split(b"\n")
    torn_tail = bool(lines[-1].strip())  # a complete file ends with a newline
    records = []
    for number, line in enumerate(lines[:-1], 1):
        if not line.strip():
            continue
        try:
            records.append(GameRecord.model_validate_json(line))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(the line)"
            raise RecoveryError(
                f"{path}: line {number} is not a game record ({where}: {first['msg']}); remove or repair that line"
            ) from None
    if torn_tail:
        with contextlib.suppress(ValidationError):
            records.append(GameRecord.model_validate_json(lines[-1]))
            torn_tail = False  # complete after all, only its newline missing
    return GamesFile(records, torn_tail=torn_tail)


def check_nothing_lost(out_dir: Path, known_game_ids: Iterable[str], *, rebuild_hint: str) -> None:
    """LostGamesError when games.jsonl in `out_dir` holds scored games whose ids are not in `known_game_ids`.

    Called before games.jsonl is rewritten from the database. `rebuild_hint` says how to rebuild (the
    command line), for the message.
    """
    path = out_dir / GAMES_FILE
    known = set(known_game_ids)
    try:
        missing = [r for r in read_games_file(path).records if r.termination.is_scored and r.game_id not in known]
    except RecoveryError as error:
        raise LostGamesError(
            f"{error}. The database does not hold every game of {path}, so nothing was changed"
        ) from None
    if missing:
        raise LostGamesError(
            f"{path} holds {len(missing)} game(s) that {out_dir / 'tournament.db'} does not (the database is empty,"
            f" new or was replaced), so nothing was changed and no game was played. To rebuild the database from"
            f" {GAMES_FILE}: {rebuild_hint}"
        )


class _Store(Protocol):
    def start(self, fingerprint: dict[str, Any], schedule: list[ScheduledGame]) -> None: ...

    def record_game(self, number: int, record: GameRecord) -> Any: ...


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
    for number, record in matched:
        store.record_game(number, record)
    return len(matched)
