"""The record of one game: who played, under which settings, every move with its time, and the result.

Records are pydantic models with a published JSON Schema (`referee/schema/game_record.json`), written
one file per game by `alternator match` and one line per game to `games.jsonl` by tournaments, and
re-checked move by move by `alternator replay`.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from protocol.messages import TimeControl
from protocol.rules import Color, Result
from referee.play.adjudication import Adjudication

RECORD_VERSION: Literal[1] = 1


class Termination(enum.StrEnum):
    """How a game ended. Everything but NORMAL, VOID and ABORTED is a forfeit by `GameRecord.loser`."""

    NORMAL = "normal"  # two consecutive passes; scored from the board
    TIME = "time"  # the bot's clock (or its per-move limit) ran out
    ILLEGAL_MOVE = "illegal_move"  # an illegal or malformed move
    PROTOCOL = "protocol"  # malformed JSON, unknown or out-of-turn message, over-long line, failed handshake
    CRASH = "crash"  # the bot exited or closed its output
    UNRESPONSIVE = "unresponsive"  # the bot stopped answering pings
    VOID = "void"  # the referee's own failure: never scored, played again
    ABORTED = "aborted"  # stopped by the user (Ctrl-C): not scored

    @property
    def is_forfeit(self) -> bool:
        return self not in (Termination.NORMAL, Termination.VOID, Termination.ABORTED)

    @property
    def is_scored(self) -> bool:
        return self not in (Termination.VOID, Termination.ABORTED)


class BotInfo(BaseModel):
    """One side of a game: what the bot said about itself and how it was started."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The name the arena knows the bot by.")
    command: list[str] = Field(description="The command line that started it.")
    announced_name: str | None = Field(default=None, description="The name the bot gave in its hello.")
    author: str | None = Field(default=None, description="The author the bot gave in its hello.")
    version: str | None = Field(default=None, description="The version the bot gave in its hello.")
    stderr_log: str | None = Field(default=None, description="Path of the capped log of the bot's stderr.")
    sandbox: bool = Field(
        default=False, description="Whether it ran in the sandbox (no network, read-only filesystem but /tmp)."
    )
    memory_mb: int | None = Field(
        default=None,
        description="Its memory limit in MiB (null: none); `containment` says how it was held"
        " (a memory cgroup on resident memory, or the address space).",
    )
    run_command: list[str] | None = Field(
        default=None,
        description="The command line actually run when it differs from `command`: `command` wrapped in the"
        " sandbox and the memory limit (null: `command` itself).",
    )
    max_processes: int | None = Field(
        default=None, description="Its limit on processes and threads at once (null: none, or not recorded)."
    )
    ponder: bool = Field(default=True, description="Whether it could run during its opponent's turns (--no-ponder).")
    cpu_limit_s: float | None = Field(
        default=None, description="The CPU seconds per game it was allowed, all its processes (null: no limit)."
    )
    containment: str | None = Field(
        default=None,
        description="What held its processes: cgroups (v2, v1) or /proc tracking, subreaper, death signal,"
        " process limit, and how a memory limit was held.",
    )
    cores: list[int] | None = Field(default=None, description="The cores it was pinned to (--cpu-affinity).")
    options: dict[str, OptionValue] | None = Field(
        default=None, description="The option values it was sent in new_game (null: it declared no options)."
    )
    cpu_ms: float | None = Field(
        default=None, description="CPU time of all its processes during its own turns in this game (null: unknown)."
    )
    off_turn_cpu_ms: float | None = Field(
        default=None,
        description="CPU time of all its processes during its opponent's turns in this game (pondering, or"
        " stealing the opponent's CPU; null: unknown).",
    )


OptionValue = bool | int | float | str


class SideControls(BaseModel):
    """What one side is held to besides the game's settings: time odds, node and depth limits, option values."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    time_control: TimeControl | None = Field(
        default=None, description="This side's own time control (time odds; null: the game's `time_control`)."
    )
    nodes: int | None = Field(default=None, ge=1, description="Nodes per move this side may search (null: no limit).")
    depth: int | None = Field(default=None, ge=1, description="Plies per move this side may search (null: no limit).")
    options: dict[str, OptionValue] = Field(
        default_factory=dict, description="The option values chosen for this bot (its declared defaults for the rest)."
    )


class GameSettings(BaseModel):
    """Everything that decides how a game is played, apart from the bots."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    width: int = Field(default=8, ge=2, le=26, description="Board files (a, b, ...).")
    height: int = Field(default=8, ge=2, le=26, description="Board ranks (1, 2, ...).")
    komi: float = Field(default=3.5, description="Points added to White's score.")
    time_control: TimeControl
    opening: list[str] = Field(
        default_factory=list, description="Moves played from the empty board before the bots take over."
    )
    margin_ms: int = Field(default=0, ge=0, description="Grace added to every deadline before a bot loses on time.")
    black_controls: SideControls | None = Field(
        default=None, description="Black's own time control, limits and options (null: none of them)."
    )
    white_controls: SideControls | None = Field(
        default=None, description="White's own time control, limits and options (null: none of them)."
    )
    adjudication: Adjudication | None = Field(
        default=None, description="How games may be ended before they are played out (null: never)."
    )

    def controls(self, color: Color) -> SideControls:
        """The side's own controls (empty when it has none)."""
        controls = self.black_controls if color == "black" else self.white_controls
        return controls if controls is not None else SideControls()

    def time_control_for(self, color: Color) -> TimeControl:
        """The time control that side's clock follows."""
        return self.controls(color).time_control or self.time_control

    @property
    def limit_bound(self) -> bool:
        """Whether a node or depth limit applies to either side."""
        sides = (self.black_controls, self.white_controls)
        return any(side is not None and (side.nodes is not None or side.depth is not None) for side in sides)


class PlayedMove(Protocol):
    """A move as those who follow a game see it (`on_move`): a `MoveRecord`, or a `MoveFields` as a play worker
    sent it (not built into a model: that would cost more than the rest of the move's way to the page)."""

    @property
    def color(self) -> str: ...
    @property
    def move(self) -> str: ...
    @property
    def elapsed_ms(self) -> float: ...
    @property
    def clock_ms(self) -> int | None: ...
    @property
    def latency_ms(self) -> float | None: ...
    @property
    def infos(self) -> list[dict[str, Any]]: ...
    @property
    def infos_dropped(self) -> int: ...
    @property
    def cpu_ms(self) -> float | None: ...
    @property
    def opponent_cpu_ms(self) -> float | None: ...


class MoveFields(NamedTuple):
    """A move's fields in `MoveRecord` order, as a play worker sends them (`referee.play.loop.encode_move`)."""

    color: str
    move: str
    elapsed_ms: float
    clock_ms: int | None
    latency_ms: float | None
    infos: list[dict[str, Any]]
    infos_dropped: int
    cpu_ms: float | None
    opponent_cpu_ms: float | None


class MoveRecord(BaseModel):
    """One move as the referee saw it."""

    model_config = ConfigDict(extra="forbid")

    color: Color = Field(description="The side that made the move.")
    move: str = Field(description="The move in RULES.md notation.")
    elapsed_ms: float = Field(description="Time charged, from writing the turn line to the complete reply line.")
    clock_ms: int | None = Field(description="The mover's remaining game time after the move (null: no game clock).")
    latency_ms: float | None = Field(
        default=None,
        description="The referee's own measured lateness during the move (its monitor's late wake-ups, its reader's"
        " scheduling delay), not charged to the bot; a loss on time needs an overrun larger than this (null: not"
        " measured).",
    )
    infos: list[dict[str, Any]] = Field(
        default_factory=list, description="The bot's last info messages for this move (at most 16 are kept)."
    )
    infos_dropped: int = Field(
        default=0, ge=0, description="Info messages sent for this move before the kept ones, counted but not kept."
    )
    cpu_ms: float | None = Field(
        default=None, description="CPU time of all the mover's processes during this move (null: not measured)."
    )
    opponent_cpu_ms: float | None = Field(
        default=None,
        description="CPU time of all the waiting bot's processes during this move (null: not measured).",
    )


class GameRecord(BaseModel):
    """A whole game, enough to replay and audit it."""

    model_config = ConfigDict(extra="forbid")

    record_version: Literal[1] = Field(default=RECORD_VERSION, description="The version of this record format.")
    game_id: str = Field(description="The id the bots were told in new_game.")
    black: BotInfo
    white: BotInfo
    settings: GameSettings
    moves: list[MoveRecord] = Field(default_factory=list, description="The bots' moves after the opening, in order.")
    result: Result = Field(description="1-0: Black won; 0-1: White won; 1/2-1/2: draw; *: void or aborted.")
    winner: Color | None = Field(description="The winner, or null for a draw, a void or an aborted game.")
    termination: Termination
    reason: str = Field(description="Why the game ended, for people.")
    loser: Color | None = Field(default=None, description="The side that forfeited (null unless a forfeit).")
    black_score: float | None = Field(description="Black's tree total at the end (null when not scored).")
    white_score: float | None = Field(description="White's tree total plus komi at the end (null when not scored).")
    overrun_ms: float | None = Field(
        default=None,
        description="On a loss on time: how far past its allowance (its clock or per-move limit, the safety margin"
        " not counted) the bot was.",
    )
    referee_lag_ms: float | None = Field(
        default=None,
        description="On a game voided because the host was late: its measured delay in the move (the referee's own"
        " lateness plus how long the host kept the bot off a CPU while it was ready to run), larger than the bot's"
        " overrun (`overrun_ms`), so the loss on time could not be shown to be the bot's.",
    )
    stderr_tail: list[str] = Field(default_factory=list, description="The last lines of the offender's stderr.")
    final_position: str = Field(description="The final position string (Position.to_string).")
    started_at: datetime = Field(description="When the game started (new_game sent), with its time zone.")
    finished_at: datetime = Field(description="When it ended, with its time zone.")
    worker: str | None = Field(
        default=None,
        description="The Dask worker that played the game, whose clock timed it (null: played by the referee's"
        " own process).",
    )
    limit_bound: bool = Field(
        default=False, description="Whether a node or depth limit applied (`settings.black_controls`/`white_controls`)."
    )
    adjudicated: str | None = Field(
        default=None,
        description="How the game was ended before the bots played it out: solver (the exact solver proved the"
        " result), resign or draw (both bots' scores agreed); null: played out.",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What the referee noticed that changes no result, e.g. an info reporting more nodes than the"
        " bot's node limit.",
    )

    def all_moves(self) -> list[str]:
        """The opening followed by the bots' moves: the full game from the empty board."""
        return [*self.settings.opening, *(m.move for m in self.moves)]


def game_record_schema() -> dict[str, Any]:
    """The JSON Schema of a game record (published by `alternator schema game_record`)."""
    schema = GameRecord.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Alternator game record v{RECORD_VERSION}",
        "description": (
            "One game as the referee saw it: the bots, the settings, every move with its time, the result."
            " Written by `alternator match` (one file per game) and by tournaments (one line per game"
            " in games.jsonl); checked by `alternator replay`."
        ),
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }
