"""Protocol v1: every message between the referee and a bot, as pydantic models.

One JSON object per line in each direction, told apart by its `type` tag. `RefereeMessage` and
`BotMessage` are the discriminated unions of each direction; `parse_bot_line` and
`parse_referee_line` validate a raw line in one call. Messages from bots are validated strictly
(unknown fields and wrong types are errors); bots must ignore fields they do not know in messages
from the referee, so later versions of the referee may add fields. PROTOCOL.md is the prose form;
the JSON Schemas in `protocol/schema/` are generated from these models (`alternator schema --write`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from protocol.framing import MAX_LINE_BYTES
from protocol.options import OPTION_NAME_PATTERN, Option, OptionError, OptionType
from protocol.rules import Color, Result
from protocol.version import PROTOCOL_VERSION

__all__ = [
    "BOT_MESSAGE",
    "MAX_LINE_BYTES",
    "PROTOCOL_VERSION",
    "REFEREE_MESSAGE",
    "SCHEMA_DIRECTIONS",
    "BotHello",
    "BotMessage",
    "GameOver",
    "Hello",
    "Info",
    "MoveReply",
    "NewGame",
    "OptionDeclaration",
    "Ping",
    "Pong",
    "Quit",
    "Ready",
    "RefereeMessage",
    "TimeControl",
    "Turn",
    "TurnClocks",
    "encode",
    "json_schemas",
    "parse_bot_line",
    "parse_referee_line",
]

MOVE_PATTERN = r"^(pass|[a-z][1-9][0-9]?[a-z][1-9][0-9]?)$"
MoveText = Annotated[
    str,
    Field(
        pattern=MOVE_PATTERN,
        description="A move in RULES.md notation: `pass`, or pit then root like `d5d4`.",
        max_length=8,
    ),
]
Milliseconds = Annotated[int, Field(ge=0, description="A duration in whole milliseconds.")]
Text = Annotated[str, Field(max_length=4096)]
GameId = Annotated[str, Field(min_length=1, max_length=128, description="The game this message is about.")]


class _FromReferee(BaseModel):
    # Forward compatible: a bot that parses these models must not fail on fields added later.
    model_config = ConfigDict(extra="allow", frozen=True)


class _FromBot(BaseModel):
    # NaN and Infinity are not JSON (RFC 8259) even though some encoders write them.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class TimeControl(BaseModel):
    """How much time each side has. Exactly one of the three forms applies.

    - Fischer: `base_ms` for the game plus `increment_ms` after each move (`moves_per_period` null).
    - Periods: `base_ms` for every `moves_per_period` moves, then the clock is filled up again by `base_ms`.
    - Fixed time per move: `move_time_ms` for each move, no game clock (`base_ms` null).
    """

    # Sent to bots inside `new_game`: open to fields a later referee may add, like every referee message.
    model_config = ConfigDict(extra="allow", frozen=True)

    base_ms: Milliseconds | None = Field(description="Time on each clock at the start (null: no game clock).")
    increment_ms: Milliseconds = Field(
        default=0, description="Time added to the mover's clock after each of its moves."
    )
    moves_per_period: int | None = Field(
        default=None,
        ge=1,
        description="With `base_ms`: the clock is filled up again by `base_ms` after this many moves.",
    )
    move_time_ms: Milliseconds | None = Field(
        default=None, description="A fixed limit for every single move (null: none)."
    )

    @model_validator(mode="after")
    def _one_form(self) -> TimeControl:
        clock = self.base_ms is not None
        per_move = self.move_time_ms is not None
        if clock == per_move or (per_move and (self.increment_ms or self.moves_per_period is not None)):
            raise ValueError(
                "a time control is exactly one of three forms: Fischer (base_ms and increment_ms), periods"
                " (base_ms, moves_per_period and increment_ms) or a fixed time per move (move_time_ms alone)"
            )
        return self


class TurnClocks(BaseModel):
    """Both clocks when a turn starts, as the referee measures them."""

    model_config = ConfigDict(extra="allow", frozen=True)

    black_ms: Milliseconds | None = Field(description="Black's remaining game time (null: no game clock).")
    white_ms: Milliseconds | None = Field(description="White's remaining game time (null: no game clock).")
    increment_ms: Milliseconds = Field(description="Added to the mover's clock after this move.")
    move_limit_ms: Milliseconds | None = Field(
        description="The most this move may take, when a fixed per-move limit applies (null otherwise)."
    )
    moves_to_go: int | None = Field(
        ge=1,
        description="Moves the mover must make before its clock is filled up again, this one included "
        "(periods only; null otherwise).",
    )


# -- referee -> bot -------------------------------------------------------------------------------


class Hello(_FromReferee):
    """The first message: the referee's protocol version. The bot answers with `BotHello`."""

    type: Literal["hello"] = Field(description="Always `hello`.")
    protocol: int = Field(description="The protocol version the referee speaks.")
    referee: str = Field(description="The referee's name and version, for logs.")


class NewGame(_FromReferee):
    """A game starts; the bot answers `ready`. A bot process may play many games, one at a time."""

    type: Literal["new_game"] = Field(description="Always `new_game`.")
    game_id: GameId = Field(description="Identifies the game in every later message about it.")
    color: Color = Field(description="The colour this bot plays. Black moves first.")
    width: int = Field(ge=2, le=26, description="Board files (a, b, ...).")
    height: int = Field(ge=2, le=26, description="Board ranks (1, 2, ...).")
    komi: float = Field(description="Points added to White's score.")
    time_control: TimeControl = Field(
        description="This bot's own time control (the clock in `turn` follows it; with time odds the opponent's"
        " may differ: `opponent_time_control`)."
    )
    opponent: str = Field(description="The opponent's name.")
    opponent_time_control: TimeControl | None = Field(
        default=None, description="The opponent's time control (null: the same as `time_control`)."
    )
    options: dict[str, bool | int | float | str] | None = Field(
        default=None,
        description="The value of every option the bot declared in its hello, for this game: the one the user"
        " chose, else the declared default (null when the bot declared none).",
    )
    nodes: int | None = Field(
        default=None,
        ge=1,
        description="Search at most this many nodes per move (null: no node limit). A bot that honours it plays"
        " the same moves however fast the machine is.",
    )
    depth: int | None = Field(
        default=None, ge=1, description="Search at most this many plies deep per move (null: no depth limit)."
    )


class Turn(_FromReferee):
    """The bot must move. The whole history is given, so a bot may keep no state between turns."""

    type: Literal["turn"] = Field(description="Always `turn`.")
    game_id: GameId
    moves: list[MoveText] = Field(description="Every move of the game so far, from the empty board, in order.")
    clock: TurnClocks = Field(description="Both clocks as this turn starts.")


class GameOver(_FromReferee):
    """The game has ended (normally or by forfeit). No answer is expected."""

    type: Literal["game_over"] = Field(description="Always `game_over`.")
    game_id: GameId
    result: Result = Field(
        description="1-0: Black won; 0-1: White won; 1/2-1/2: draw; *: no result (the game was void)."
    )
    winner: Color | None = Field(description="The winner, or null for a draw or a void game.")
    reason: str = Field(description="Why the game ended, for people.")
    black_score: float | None = Field(description="Black's final score (null when the game was not scored).")
    white_score: float | None = Field(description="White's final score with komi (null when not scored).")
    termination: str | None = Field(
        default=None,
        description="How the game ended, as a code: normal (two passes), time, illegal_move, protocol, crash, "
        "unresponsive, void or aborted; null when the referee does not say. Later versions may add codes.",
    )


class Ping(_FromReferee):
    """The bot must answer `pong` with the same id at once, even while thinking."""

    type: Literal["ping"] = Field(description="Always `ping`.")
    id: int = Field(ge=0, description="Echoed in the `pong`.")


class Quit(_FromReferee):
    """The bot must exit promptly (it is killed after a short grace period)."""

    type: Literal["quit"] = Field(description="Always `quit`.")


# -- bot -> referee -------------------------------------------------------------------------------


class OptionDeclaration(_FromBot):
    """One option a bot offers (like UCI's `option`): the referee checks the user's value against it."""

    name: Annotated[str, Field(pattern=OPTION_NAME_PATTERN)] = Field(
        description="The option's name: a letter, then up to 63 letters, digits, `_`, `.` or `-`."
    )
    type: OptionType = Field(description="int, float, bool, string, or choice (one of `choices`).")
    default: bool | int | float | Annotated[str, Field(max_length=1024)] = Field(
        description="The value used when the user chooses none; must fit the type, bounds and choices."
    )
    min: float | None = Field(default=None, description="int and float options: the smallest value allowed.")
    max: float | None = Field(default=None, description="int and float options: the largest value allowed.")
    choices: list[Annotated[str, Field(max_length=256)]] | None = Field(
        default=None, max_length=256, description="choice options: the values allowed."
    )
    description: Annotated[str, Field(max_length=512)] = Field(default="", description="What it does, for people.")

    @model_validator(mode="after")
    def _consistent(self) -> OptionDeclaration:
        self.option()  # a declaration that does not hold together is the bot's protocol error
        return self

    def option(self) -> Option:
        """The declaration as the `protocol.options.Option` the referee checks values with (ValueError if bad)."""
        try:
            return Option.from_declaration(self.model_dump(exclude_none=True))
        except OptionError as error:
            raise ValueError(str(error)) from None


class BotHello(_FromBot):
    """The bot's answer to `hello`: who it is and which protocol version it speaks."""

    type: Literal["hello"] = Field(description="Always `hello`.")
    protocol: int = Field(description="The protocol version the bot speaks; must be the referee's.")
    name: Annotated[str, Field(min_length=1, max_length=64)] = Field(description="The bot's name, for people.")
    author: Annotated[str, Field(max_length=128)] = Field(default="", description="Who wrote the bot.")
    version: Annotated[str, Field(max_length=64)] = Field(default="", description="The bot's own version.")
    options: list[OptionDeclaration] | None = Field(
        default=None,
        max_length=64,
        description="The options the bot offers (null or absent: none); their values come in `new_game`.",
    )

    @model_validator(mode="after")
    def _unique_options(self) -> BotHello:
        names = [option.name for option in self.options or ()]
        if len(names) != len(set(names)):
            raise ValueError(f"options: a name is declared twice ({', '.join(sorted(names))})")
        return self

    def declared_options(self) -> list[Option]:
        """The bot's options as `protocol.options.Option`s (empty when it declared none)."""
        return [declaration.option() for declaration in self.options or ()]


class Ready(_FromBot):
    """The answer to `new_game`."""

    type: Literal["ready"] = Field(description="Always `ready`.")
    game_id: GameId = Field(description="The `game_id` of the `new_game` being answered.")


class MoveReply(_FromBot):
    """The answer to `turn`.

    `move` is any string here on purpose: text that is not a move (`"x"`, `"d5-d4"`) is judged by the
    rules engine and loses as an illegal move, like a well-formed move the rules forbid, not as a
    protocol error. A value that is not a string at all is a protocol error.
    """

    type: Literal["move"] = Field(description="Always `move`.")
    move: str = Field(
        description="The move in RULES.md notation: `pass`, or pit then root like `d5d4` (lower case, no space)."
    )


class Info(_FromBot):
    """What the bot is thinking, sent any number of times before its move; kept in the game record."""

    type: Literal["info"] = Field(description="Always `info`.")
    depth: Annotated[int, Field(ge=0)] | None = Field(default=None, description="The search depth reached, in moves.")
    score: float | None = Field(default=None, description="The bot's evaluation, from its own point of view.")
    nodes: Annotated[int, Field(ge=0)] | None = Field(default=None, description="Positions searched so far.")
    pv: list[MoveText] | None = Field(default=None, max_length=256, description="The principal variation.")
    text: Text | None = Field(default=None, description="Anything else, for people (at most 4096 characters).")


class Pong(_FromBot):
    """The answer to `ping`."""

    type: Literal["pong"] = Field(description="Always `pong`.")
    id: int = Field(description="The `id` of the `ping` being answered.")


RefereeMessage = Annotated[Hello | NewGame | Turn | GameOver | Ping | Quit, Field(discriminator="type")]
BotMessage = Annotated[BotHello | Ready | MoveReply | Info | Pong, Field(discriminator="type")]

REFEREE_MESSAGE: TypeAdapter[RefereeMessage] = TypeAdapter(RefereeMessage)
BOT_MESSAGE: TypeAdapter[BotMessage] = TypeAdapter(BotMessage)


_MOVE_HEAD = b'{"type":"move","move":"'
_MOVE_TAIL = b'"}'
_MOVE_TEXT_MAX = 32
_REPLIES: dict[bytes, MoveReply] = {}
"""Move lines already parsed, in the form nearly every bot writes them (`parse_bot_line`): a reply is immutable."""
_REPLIES_MAX = 1 << 12


def parse_bot_line(line: bytes | str) -> BotMessage:
    """Validate one line from a bot; pydantic.ValidationError says what is wrong.

    Invalid JSON, invalid UTF-8, a value that is not an object, an unknown `type`, a missing, extra
    or mistyped field are all errors (`error.errors()[0]["type"]` tells which). A trailing newline is fine.
    """
    if type(line) is bytes and line.startswith(_MOVE_HEAD) and line.endswith(_MOVE_TAIL):
        # The reply of every move, in the compact form most bots write: letters and digits quoted as they are mean
        # the same text in JSON, so validation could only say what is read here (a test holds the two equal).
        reply = _REPLIES.get(line)
        if reply is not None:
            return reply
        text = line[len(_MOVE_HEAD) : -len(_MOVE_TAIL)]
        if len(text) <= _MOVE_TEXT_MAX and text.isalnum():
            if len(_REPLIES) >= _REPLIES_MAX:
                _REPLIES.clear()
            reply = _REPLIES[line] = MoveReply.model_construct(type="move", move=text.decode("ascii"))
            return reply
    return BOT_MESSAGE.validate_json(line, strict=True)


def parse_referee_line(line: bytes | str) -> RefereeMessage:
    """Validate one line from the referee (for tests and Python bots that want the models)."""
    return REFEREE_MESSAGE.validate_json(line)


def encode(message: BaseModel) -> bytes:
    """One message as a line: compact JSON, no nulls dropped, newline-terminated."""
    return message.model_dump_json().encode() + b"\n"


SCHEMA_DIRECTIONS = ("referee_to_bot", "bot_to_referee")
_SCHEMA_TITLES = {
    "referee_to_bot": "Alternator protocol v1: a message from the referee to a bot",
    "bot_to_referee": "Alternator protocol v1: a message from a bot to the referee",
}


def json_schemas() -> dict[str, dict[str, Any]]:
    """The published JSON Schemas (draft 2020-12), one per direction, keyed by `SCHEMA_DIRECTIONS`."""
    adapters: dict[str, TypeAdapter[Any]] = {"referee_to_bot": REFEREE_MESSAGE, "bot_to_referee": BOT_MESSAGE}
    schemas = {}
    for direction, adapter in adapters.items():
        schema: dict[str, Any] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": _SCHEMA_TITLES[direction],
            "description": f"Protocol version {PROTOCOL_VERSION}. One such object per line, at most "
            f"{MAX_LINE_BYTES} bytes with its newline. See PROTOCOL.md.",
        }
        schema.update(adapter.json_schema())
        schemas[direction] = schema
    return schemas
