"""A match: two bots play a series of games, alternating colours, each game written to a JSON record.

The bot processes are started once and reused from game to game; a process that a fault left
`broken` (a crash, a protocol error, a late move that would poison the next game) is restarted
before its next game. Records are written atomically as each game ends, so a match stopped by
Ctrl-C keeps every finished game, and the game it was playing is written as aborted.

Games come in pairs: games 2k-1 and 2k start from the same opening (the k-th of `openings`, or the
fixed opening of the settings) with colours swapped. After each pair the match counts the pairs by
the first bot's score (the pentanomial) and, when asked, runs the SPRT of `referee.sprt` on them,
stopping as soon as it has a verdict. `match.json` (`MatchSummary`) sums the match up for programs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import trio
from pydantic import BaseModel, ConfigDict, Field

from protocol.rules import Position
from referee.botspec import BotSpec
from referee.display import off_turn_cpu_s, side_name, tally
from referee.exceptions import find_exception, single_exception
from referee.files import write_text_atomic
from referee.game import run_game
from referee.process import BotHost, BotProcess
from referee.record import GameRecord, GameSettings, MoveRecord, Termination
from referee.sprt import (
    PENTANOMIAL_OUTCOMES,
    EloEstimate,
    SprtParameters,
    SprtStatus,
    elo_estimate,
    pentanomial,
    sprt_status,
)

MAX_VOID_GAMES = 3
"""A void game (the referee's own failure) is played again, but not forever."""


class MatchError(Exception):
    """The match cannot go on for a reason that is not a bot's fault; the message says what to do."""


class MatchObserver(Protocol):
    """What a match reports as it goes (`referee.display.MatchDisplay` shows it to a person)."""

    def game_started(self, number: int, total: int, black: str, white: str) -> None: ...

    def move_played(self, move: MoveRecord, position: Position) -> None: ...

    def game_finished(self, number: int, record: GameRecord, path: Path | None) -> None: ...

    def pair_finished(self, games: int, pairs: tuple[int, ...], sprt: SprtStatus | None) -> None: ...


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
    return find_exception(error, KeyboardInterrupt) is not None


def first_points(records: Sequence[GameRecord], first: str) -> list[float]:
    """The points (1, 1/2, 0) of bot `first` in each scored game, in order: game 1, 2, ... (void and
    aborted games are left out, and a void game's replay has its number)."""
    points = []
    for record in records:
        if not record.termination.is_scored:
            continue
        if record.winner is None:
            points.append(0.5)
        else:
            points.append(1.0 if side_name(record, record.winner) == first else 0.0)
    return points


@dataclass
class Match:
    """Two bots, at most `games` games, alternating colours: game 1 has `first` as Black.

    Game pair k (games 2k-1 and 2k, k from 1) starts from `openings[(k-1) % len(openings)]`, or from
    `settings.opening` when there are no `openings`. With `sprt`, the match stops after the first pair
    that gives the test a verdict. `records` and `paths` grow as games end, so they hold the finished
    games even when `run` is interrupted.
    """

    first: BotSpec
    second: BotSpec
    settings: GameSettings
    games: int
    out_dir: Path
    match_id: str = "match"
    observer: MatchObserver | None = None
    openings: Sequence[tuple[str, ...]] = ()
    sprt: SprtParameters | None = None
    records: list[GameRecord] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    void_games: int = 0
    sprt_state: SprtStatus | None = None

    def settings_for(self, number: int) -> GameSettings:
        """The settings of game `number`: the opening of its pair."""
        if not self.openings:
            return self.settings
        opening = self.openings[((number - 1) // 2) % len(self.openings)]
        return self.settings.model_copy(update={"opening": list(opening)})

    @property
    def points(self) -> list[float]:
        """The first bot's points in each scored game so far."""
        return first_points(self.records, self.first.name)

    @property
    def pairs(self) -> tuple[int, int, int, int, int]:
        """The finished game pairs counted by the first bot's score in them: 0, 1/2, 1, 3/2, 2 points."""
        return pentanomial(self.points)

    @property
    def decided(self) -> bool:
        """Whether the SPRT has a verdict (the match stops at the pair that gives it one)."""
        return self.sprt_state is not None and self.sprt_state.verdict is not None

    @property
    def log_dir(self) -> Path:
        return self.out_dir / "logs"

    async def run(self) -> list[GameRecord]:
        """Play every game; BotStartError when a bot cannot be started, MatchError when the referee keeps failing."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # The hosts' tasks only end when told to: the nursery's group can only hold the body's exception.
        with single_exception():
            async with trio.open_nursery() as nursery:
                hosts = (BotHost(self.first, self.log_dir, nursery), BotHost(self.second, self.log_dir, nursery))
                try:
                    await self._play_all(hosts)
                finally:
                    with trio.CancelScope(shield=True):
                        for host in hosts:
                            await host.close()
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
            if number % 2 == 0:
                self._pair_finished(number)
                if self.decided:
                    return
            number, retry = number + 1, 0

    def _pair_finished(self, number: int) -> None:
        pairs = self.pairs
        if self.sprt is not None:
            self.sprt_state = sprt_status(self.sprt, pairs)
        if self.observer is not None:
            self.observer.pair_finished(number, pairs, self.sprt_state)

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
        settings = self.settings_for(number)
        started_at = datetime.now(UTC)
        path = self._record_path(number, retry)
        try:
            record = await run_game(game_id, black, white, settings, on_move=on_move)
        except BaseException as error:
            reason = "stopped by the user (Ctrl-C)" if is_interrupt(error) else f"stopped: {type(error).__name__}"
            record = aborted_record(game_id, black, white, settings, moves, started_at, reason)
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


# --- the summary: match.json ---------------------------------------------------------------------------------

SUMMARY_VERSION: Literal[1] = 1
SUMMARY_FILE = "match.json"

Ended = Literal["completed", "sprt", "interrupted", "error"]


class OpeningsUsed(BaseModel):
    """Where the games started from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["none", "fixed", "random", "file"] = Field(
        description="none: the empty board; fixed: one opening for every game (settings.opening);"
        " random: seeded random placements; file: one opening per line of a file. Random and file openings"
        " start a pair of games each, with colours swapped."
    )
    plies: int | None = Field(default=None, description="random: the placements in each opening.")
    seed: str | None = Field(default=None, description="random: the seed (the same seed gives the same openings).")
    file: str | None = Field(default=None, description="file: the path of the openings file.")
    count: int = Field(default=0, ge=0, description="How many different openings the match could use.")


class MatchScore(BaseModel):
    """The score of the scored games (void and aborted games are not counted)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    games: int = Field(ge=0, description="Scored games.")
    first_points: float = Field(ge=0, description="Points of the first bot (win 1, draw 1/2).")
    second_points: float = Field(ge=0, description="Points of the second bot.")
    wins: int = Field(ge=0, description="Games the first bot won.")
    draws: int = Field(ge=0, description="Drawn games.")
    losses: int = Field(ge=0, description="Games the first bot lost.")
    first_forfeits: int = Field(ge=0, description="Games the first bot lost by a fault (time, crash, ...).")
    second_forfeits: int = Field(ge=0, description="Games the second bot lost by a fault.")
    pairs: list[int] = Field(
        min_length=5,
        max_length=5,
        description="The pentanomial: finished game pairs (games 2k-1 and 2k, one opening, colours swapped)"
        " in which the first bot scored 0, 1/2, 1, 3/2 and 2 points.",
    )


class EloSummary(BaseModel):
    """The first bot's Elo advantage over the second, from its mean score over the game pairs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score: float | None = Field(description="The first bot's mean score per game in finished pairs (null: none).")
    elo: float | None = Field(description="-400 log10(1/score - 1); null when the score is 0 or 1 or there is none.")
    lower: float | None = Field(description="Lower end of the 95% interval (null: unbounded or unknown).")
    upper: float | None = Field(description="Upper end of the 95% interval (null: unbounded or unknown).")


class SprtSummary(BaseModel):
    """The sequential probability ratio test: GSPRT, logistic Elo, on the pentanomial (see referee/sprt.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    elo0: float = Field(description="H0: the first bot is elo0 Elo stronger (or less).")
    elo1: float = Field(description="H1: the first bot is elo1 Elo stronger.")
    alpha: float = Field(description="The chance of accepting H1 when H0 holds.")
    beta: float = Field(description="The chance of accepting H0 when H1 holds.")
    llr: float = Field(description="The log-likelihood ratio of H1 against H0 after the last finished pair.")
    lower_bound: float = Field(description="ln(beta / (1 - alpha)): H0 is accepted at or below it.")
    upper_bound: float = Field(description="ln((1 - beta) / alpha): H1 is accepted at or above it.")
    verdict: Literal["H0", "H1"] | None = Field(description="The hypothesis accepted, or null when undecided.")


class MatchSummary(BaseModel):
    """match.json in a match's output directory: who played, the score, the Elo estimate and the SPRT."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary_version: Literal[1] = Field(description="The version of this format.")
    first: str = Field(description="The first bot (Black in odd games): the one the score, Elo and SPRT are for.")
    second: str = Field(description="The second bot (Black in even games).")
    settings: GameSettings = Field(
        description="The settings of every game; `opening` is the fixed opening (empty when openings vary)."
    )
    openings: OpeningsUsed
    max_games: int = Field(ge=1, description="The games asked for (--games): the most the match would play.")
    ended: Ended = Field(
        description="completed: every game was played; sprt: the SPRT reached a verdict first; interrupted:"
        " stopped by Ctrl-C; error: the match could not go on (see the output)."
    )
    score: MatchScore
    elo: EloSummary
    sprt: SprtSummary | None = Field(description="The SPRT, when the match ran one (--sprt).")
    off_turn_cpu_s: dict[str, float] = Field(
        default_factory=dict,
        description="Per bot: CPU seconds all its processes used during its opponent's turns (pondering, or taking"
        " the opponent's CPU), over the games that measured it.",
    )
    records: list[str] = Field(description="The game record files, relative to this file, in playing order.")
    started_at: datetime = Field(description="When the match started, with its time zone.")
    finished_at: datetime = Field(description="When it ended, with its time zone.")


def match_summary(match: Match, *, ended: Ended, openings: OpeningsUsed, started_at: datetime) -> MatchSummary:
    """The summary of `match` as it stands (after `run`, or after it was stopped)."""
    first, second = tally(match.records, match.first.name), tally(match.records, match.second.name)
    pairs = match.pairs
    estimate: EloEstimate = elo_estimate(pairs, PENTANOMIAL_OUTCOMES)
    state = match.sprt_state
    if state is None and match.sprt is not None:
        state = sprt_status(match.sprt, pairs)
    sprt = None
    if state is not None:
        p = state.parameters
        sprt = SprtSummary(
            elo0=p.elo0,
            elo1=p.elo1,
            alpha=p.alpha,
            beta=p.beta,
            llr=state.llr,
            lower_bound=p.lower_bound,
            upper_bound=p.upper_bound,
            verdict=None if state.verdict is None else state.verdict.value,
        )
    return MatchSummary(
        summary_version=SUMMARY_VERSION,
        first=match.first.name,
        second=match.second.name,
        settings=match.settings,
        openings=openings,
        max_games=match.games,
        ended=ended,
        score=MatchScore(
            games=first.wins + first.draws + first.losses,
            first_points=first.points,
            second_points=second.points,
            wins=first.wins,
            draws=first.draws,
            losses=first.losses,
            first_forfeits=first.forfeits,
            second_forfeits=second.forfeits,
            pairs=list(pairs),
        ),
        elo=EloSummary(score=estimate.score, elo=estimate.elo, lower=estimate.lower, upper=estimate.upper),
        sprt=sprt,
        off_turn_cpu_s=off_turn_cpu_s(match.records),
        records=[path.name for path in match.paths],
        started_at=started_at,
        finished_at=datetime.now(UTC),
    )


def write_summary(summary: MatchSummary, out_dir: Path) -> Path:
    """Write `match.json` into `out_dir`; MatchError when it cannot be written."""
    path = out_dir / SUMMARY_FILE
    try:
        write_text_atomic(path, summary.model_dump_json(indent=2) + "\n")
    except OSError as error:
        raise MatchError(
            f"cannot write the match summary {path}: {error.strerror or error}; choose another --out"
        ) from None
    return path


def match_summary_schema() -> dict[str, Any]:
    """The published JSON Schema of match.json (`referee/schema/match_summary.json`)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Alternator match summary v{SUMMARY_VERSION}",
        "description": (
            "match.json in the output directory of `alternator match`: the bots, the settings and openings,"
            " the score with its pentanomial, the Elo estimate and the SPRT state and verdict."
        ),
        **{k: v for k, v in MatchSummary.model_json_schema().items() if k not in ("title", "description")},
    }
