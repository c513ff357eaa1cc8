"""Run events: one JSON object per line (`alternator match|tournament --events FILE`), for other programs.

A program can follow a match or a tournament without parsing the human display: `run_started`
(with `kind`: match or tournament), then a `game_started` and a `game_finished` for every game (a void
one is played again: it gets another pair), in a two-bot run a `statistics_updated` after every finished
game pair (score, Elo, nElo, LOS, pentanomial, LLR), a `standings_updated` at most once a second while
scored games finish and after the last one, `host_busy` when a busy host makes the run play fewer games at
once or pause (and when it is back to full speed), and `run_finished` at the end (also after Ctrl-C, with
`interrupted` true). Every event has a
`type` tag and a `time`. The JSON Schema of the union is published as `referee/schema/events.json`
(regenerate with `alternator schema --write` after changing the models; a test fails when it drifts).

Version 2 names a run's first and last events for runs (`run_started`, `run_finished`): version 1, written by
alternator before matches and tournaments shared one runner, called them `tournament_started` and
`tournament_finished`. `parse_event` reads both, so event files of older runs still parse.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from protocol.messages import TimeControl
from protocol.rules import Result
from referee.record import Termination
from referee.stats.head_to_head import Ended, HeadToHead
from referee.stats.standings import Standings
from referee.timing.latency import LatencySummary


def now() -> datetime:
    return datetime.now(UTC)


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    time: datetime = Field(description="When it happened (UTC, ISO 8601).")


class StandingRow(BaseModel):
    """A bot's line in `standings_updated` (the full standings are in standings.json)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: int
    name: str
    games: int
    points: float
    score_pct: float | None
    elo: float | None


class RunStarted(_Event):
    type: Literal["run_started"]
    kind: Literal["match", "tournament"] = Field(description="Which command runs it.")
    format: str = Field(description="round-robin, gauntlet, pairings, swiss, knockout or adaptive.")
    bots: list[str]
    games_total: int = Field(
        description="Games in the schedule (a format that pairs from results: as many as it expects)."
    )
    games_done: int = Field(description="Games already played (non-zero when resuming).")
    concurrency: int
    out_dir: str
    width: int
    height: int
    komi: float
    time_control: TimeControl


class RunNotice(_Event):
    """Something the run decided that a person should read: a latecomer's games scheduled, a bot retired or
    suspended (with the reason)."""

    type: Literal["notice"]
    text: str


class GameStarted(_Event):
    type: Literal["game_started"]
    number: int = Field(description="The game's number in the schedule, from 1.")
    game_id: str
    black: str
    white: str
    opening: list[str]
    slot: int = Field(description="The worker slot playing it, from 0.")


class GameFinished(_Event):
    type: Literal["game_finished"]
    number: int
    game_id: str
    black: str
    white: str
    result: Result
    termination: Termination
    reason: str
    moves: int = Field(description="Moves the bots played (the opening not included).")
    duration_s: float
    scored: bool = Field(description="False for a void or aborted game, which is played again.")
    games_done: int
    games_total: int
    stderr_tail: list[str] = Field(
        default_factory=list, description="On a forfeit: the last lines of the offender's stderr (as in the record)."
    )
    stderr_log: str | None = Field(default=None, description="On a forfeit: the path of the offender's stderr log.")
    worker: str | None = Field(default=None, description="The Dask worker that played it (null: played here).")


class StandingsUpdated(_Event):
    type: Literal["standings_updated"]
    games_done: int
    games_total: int
    standings: list[StandingRow] = Field(description="In rank order.")


class StatisticsUpdated(_Event):
    """After every finished game pair of a two-bot run."""

    type: Literal["statistics_updated"]
    games_done: int
    statistics: HeadToHead


class HostBusy(_Event):
    """The host made games void (it, not a bot, was late): the run plays fewer games at once, pauses, or is back to
    full speed. Sent at each change and every 10 s while it backs off (`referee.run.backoff`)."""

    type: Literal["host_busy"]
    games_at_once: int = Field(description="Games started at once from now on (0 new ones while paused).")
    concurrency: int = Field(description="Games at once at full speed.")
    paused: bool = Field(description="No new game starts until the host is calm again.")
    paused_s: float = Field(description="How long the current pause has lasted (0: not paused).")
    waited_s: float = Field(description="Time paused in this run so far, the current pause included.")
    pressure_pct: float | None = Field(description="The host's CPU pressure (PSI some avg10), null: not known.")
    lateness_ms: float | None = Field(description="How late the referee's own timers ran, null: not measured.")
    voids: int = Field(description="Games void for the host's lateness in this run so far.")
    status: str = Field(description="One line for a person: 'host busy: 2 → 1 game at once; paused 3 min; ...'.")


class RunFinished(_Event):
    type: Literal["run_finished"]
    interrupted: bool = Field(description="True when stopped (Ctrl-C) before every game was played.")
    ended: Ended = Field(
        description="completed: every game played; sprt: the SPRT's verdict; interrupted: stopped by a signal;"
        " error: could not go on (void games); incomplete: games left to play (run again)."
    )
    games_done: int
    games_total: int
    elapsed_s: float
    out_dir: str
    standings: list[StandingRow]
    statistics: HeadToHead | None = Field(description="Two-bot runs: the statistics over the counted games.")
    latency: LatencySummary | None = Field(
        default=None,
        description="The referee's measured lateness per move over this run's games (p50, p99, max) and the games"
        " voided because the host was late, with a warning when they are more than a few percent.",
    )
    host_wait_s: float = Field(0.0, description="Time the run was paused for a busy host (`host_busy`).")


Event = Annotated[
    RunStarted | RunNotice | GameStarted | GameFinished | StatisticsUpdated | StandingsUpdated | HostBusy | RunFinished,
    Field(discriminator="type"),
]
EVENT: TypeAdapter[Event] = TypeAdapter(Event)


def standing_rows(standings: Standings) -> list[StandingRow]:
    return [
        StandingRow(
            rank=bot.rank, name=bot.name, games=bot.games, points=bot.points, score_pct=bot.score_pct, elo=bot.elo
        )
        for bot in standings.bots
    ]


OLD_TYPES = {"tournament_started": "run_started", "tournament_finished": "run_finished"}
"""Version 1's names of the events version 2 renamed."""


def parse_event(line: str | bytes) -> Event:
    """Validate one line of an events file (version 2, or version 1: its old names read as the new ones)."""
    try:
        return EVENT.validate_json(line)
    except ValidationError:
        data = json.loads(line)
        if not isinstance(data, dict) or data.get("type") not in OLD_TYPES:
            raise
        return EVENT.validate_python({**data, "type": OLD_TYPES[data["type"]]})


def encode_event(event: BaseModel) -> str:
    return event.model_dump_json() + "\n"


def events_json_schema() -> dict[str, Any]:
    """The published JSON Schema of one line of `--events` output (what `referee/schema/events.json` holds)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Alternator run event v2",
        "description": "One JSON object per line of `alternator match|tournament --events FILE`, told apart by `type`.",
        **EVENT.json_schema(),
    }
