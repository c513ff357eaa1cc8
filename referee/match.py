"""A match: two bots play a series of games, alternating colours, each game written to a JSON record.

The bot processes are started once and reused from game to game; a process that a fault left
`broken` (a crash, a protocol error, a late move that would poison the next game) is restarted
before its next game. Records are written atomically as each game ends, so a match stopped by
Ctrl-C keeps every finished game, and the game it was playing is written as aborted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import trio

from protocol.rules import Position
from referee.botspec import BotSpec
from referee.files import write_text_atomic
from referee.game import run_game
from referee.process import BotHost, BotProcess
from referee.record import GameRecord, GameSettings, MoveRecord, Termination

MAX_VOID_GAMES = 3
"""A void game (the referee's own failure) is played again, but not forever."""


class MatchError(Exception):
    """The match cannot go on for a reason that is not a bot's fault; the message says what to do."""


class MatchObserver(Protocol):
    """What a match reports as it goes (`referee.display.MatchDisplay` shows it to a person)."""

    def game_started(self, number: int, total: int, black: str, white: str) -> None: ...

    def move_played(self, move: MoveRecord, position: Position) -> None: ...

    def game_finished(self, number: int, record: GameRecord, path: Path | None) -> None: ...


def write_record(record: GameRecord, path: Path) -> None:
    """Write one record as indented JSON; MatchError when the folder cannot be written."""
    try:
        write_text_atomic(path, record.model_dump_json(indent=2) + "\n")
    except OSError as error:
        raise MatchError(
            f"cannot write the game record {path}: {error.strerror or error}; choose another --out"
        ) from None


def unique_names(first: BotSpec, second: BotSpec) -> tuple[BotSpec, BotSpec]:
    """Two bots with the same name (random against random) get `-1` and `-2` so records tell them apart."""
    if first.name != second.name:
        return first, second
    base = first.name[:62]
    return first.model_copy(update={"name": f"{base}-1"}), second.model_copy(update={"name": f"{base}-2"})


def aborted_record(
    game_id: str,
    black: BotProcess,
    white: BotProcess,
    settings: GameSettings,
    moves: list[MoveRecord],
    started_at: datetime,
    reason: str,
) -> GameRecord:
    """The record of a game stopped before its end: the moves so far, no result."""
    position = Position.from_moves(
        [*settings.opening, *(m.move for m in moves)], settings.width, settings.height, settings.komi
    )
    return GameRecord(
        game_id=game_id,
        black=black.info(),
        white=white.info(),
        settings=settings,
        moves=moves,
        result="*",
        winner=None,
        termination=Termination.ABORTED,
        reason=reason,
        black_score=None,
        white_score=None,
        final_position=position.to_string(),
        started_at=started_at,
        finished_at=datetime.now(UTC),
    )


def is_interrupt(error: BaseException) -> bool:
    """Ctrl-C, alone or inside the exception groups that trio's nurseries raise."""
    if isinstance(error, KeyboardInterrupt):
        return True
    if isinstance(error, BaseExceptionGroup):
        return error.subgroup(KeyboardInterrupt) is not None
    return False


@dataclass
class Match:
    """Two bots, `games` games, alternating colours: game 1 has `first` as Black.

    `records` and `paths` grow as games end, so they hold the finished games even when `run`
    is interrupted.
    """

    first: BotSpec
    second: BotSpec
    settings: GameSettings
    games: int
    out_dir: Path
    match_id: str = "match"
    observer: MatchObserver | None = None
    records: list[GameRecord] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    void_games: int = 0

    @property
    def log_dir(self) -> Path:
        return self.out_dir / "logs"

    async def run(self) -> list[GameRecord]:
        """Play every game; BotStartError when a bot cannot be started, MatchError when the referee keeps failing."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            async with trio.open_nursery() as nursery:
                hosts = (BotHost(self.first, self.log_dir, nursery), BotHost(self.second, self.log_dir, nursery))
                try:
                    await self._play_all(hosts)
                finally:
                    with trio.CancelScope(shield=True):
                        for host in hosts:
                            await host.close()
        except BaseExceptionGroup as group:
            # The hosts' tasks only end when told to: the group holds the body's one exception.
            if len(group.exceptions) == 1:
                inner = group.exceptions[0]
                raise inner from inner.__cause__
            raise
        return self.records

    async def _play_all(self, hosts: tuple[BotHost, BotHost]) -> None:
        number, retry = 1, 0
        while number <= self.games:
            black, white = hosts if number % 2 == 1 else hosts[::-1]
            record = await self._play(number, retry, await black.ready(), await white.ready())
            if record.termination is Termination.VOID:
                self.void_games += 1
                retry += 1
                if self.void_games >= MAX_VOID_GAMES:
                    raise MatchError(
                        f"the referee failed in {self.void_games} games (last: {record.reason});"
                        f" the match is stopped: please report this with the records in {self.out_dir}"
                    )
                # The referee lost track of the game: start both bots afresh before playing it again.
                for host in hosts:
                    await host.close()
                continue
            number, retry = number + 1, 0

    def _record_path(self, number: int, retry: int) -> Path:
        stem = f"game-{number:03d}" + (f"-retry{retry}" if retry else "")
        return self.out_dir / f"{stem}.json"

    async def _play(self, number: int, retry: int, black: BotProcess, white: BotProcess) -> GameRecord:
        """Play game `number` (its `retry`-th replay after void games); write its record, even when stopped."""
        game_id = f"{self.match_id}-{number}" + (f"r{retry}" if retry else "")
        moves: list[MoveRecord] = []

        def on_move(move: MoveRecord, position: Position) -> None:
            moves.append(move)
            if self.observer is not None:
                self.observer.move_played(move, position)

        if self.observer is not None:
            self.observer.game_started(number, self.games, black.spec.name, white.spec.name)
        started_at = datetime.now(UTC)
        path = self._record_path(number, retry)
        try:
            record = await run_game(game_id, black, white, self.settings, on_move=on_move)
        except BaseException as error:
            reason = "stopped by the user (Ctrl-C)" if is_interrupt(error) else f"stopped: {type(error).__name__}"
            record = aborted_record(game_id, black, white, self.settings, moves, started_at, reason)
            write_record(record, path)
            self.records.append(record)
            self.paths.append(path)
            raise
        write_record(record, path)
        self.records.append(record)
        self.paths.append(path)
        if self.observer is not None:
            self.observer.game_finished(number, record, path)
        return record
