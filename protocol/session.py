"""The bot session as a state machine: which message a bot may send when, and what a violation is (sans I/O).

In the manner of h11's `_state.py`: one declarative table (`BOT_MAY_SEND`) says, for every state of a
session, which bot message is allowed and which state it leads to; `REFEREE_MAY_SEND` does the same for
what the referee writes; `VIOLATION` says, per state, how an unexpected message is described. A `Session`
follows one bot process from its first line to its last. It knows nothing of pipes, processes or clocks:
the channel (`referee.play.process.BotChannel`) tells it what was sent and received, and it answers with the
next state or a `ProtocolViolation` (the bot's fault). It owns the session's error state: after a violation,
an unusable pipe or a wait the referee gave up on, `broken` is true and stays true (restart the bot), and
nothing outside the session sets it.

Messages are read by their `type` tag and, for a few checks, one field (`protocol`, `game_id`, `id`), so
plain objects with those attributes do as well as the pydantic models of `protocol.messages`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Protocol

__all__ = [
    "BOT_MAY_SEND",
    "REFEREE_MAY_SEND",
    "VIOLATION",
    "BotSays",
    "ProtocolViolation",
    "Session",
    "SessionError",
    "State",
]


class State(enum.Enum):
    """Where a session is. BROKEN and CLOSED are final: restart the bot."""

    # Looked up in the tables below at every message: hashed by identity, in C (members are singletons and compare
    # by identity; Enum's own __hash__ is a Python function).
    __hash__ = object.__hash__

    NEW = "new"  # the process has started; the referee has not written hello yet
    AWAITING_HELLO = "awaiting hello"  # hello written; the bot's hello expected
    IDLE = "idle"  # between games
    AWAITING_PONG = "awaiting pong"  # idle, and a ping written whose pong is awaited (a health check)
    AWAITING_READY = "awaiting ready"  # new_game written; ready expected
    BETWEEN_TURNS = "between turns"  # in a game, the bot's opponent is to move (or the bot, not yet told)
    ON_TURN = "on turn"  # turn written; one move expected
    BROKEN = "broken"  # a violation, an unusable pipe, or an answer the referee stopped waiting for
    CLOSED = "closed"  # quit written, or the pipes are gone


LIVE = frozenset(State) - {State.BROKEN, State.CLOSED}

# -- the tables ---------------------------------------------------------------------------------------------

# For each state: the bot messages allowed in it and the state each leads to. Anything else is a violation.
BOT_MAY_SEND: Mapping[State, Mapping[str, State]] = {
    State.NEW: {},
    State.AWAITING_HELLO: {"hello": State.IDLE},
    State.IDLE: {"info": State.IDLE, "pong": State.IDLE},
    State.AWAITING_PONG: {"info": State.AWAITING_PONG, "pong": State.AWAITING_PONG},  # the awaited one: IDLE
    State.AWAITING_READY: {"ready": State.BETWEEN_TURNS, "info": State.AWAITING_READY, "pong": State.AWAITING_READY},
    State.BETWEEN_TURNS: {"info": State.BETWEEN_TURNS, "pong": State.BETWEEN_TURNS},
    State.ON_TURN: {"move": State.BETWEEN_TURNS, "info": State.ON_TURN, "pong": State.ON_TURN},
    State.BROKEN: {},
    State.CLOSED: {},
}

# For each state: what the referee may write in it and the state that follows (None: the state is kept).
# `ping` and `game_over` are allowed in every live state; `quit` in every state.
REFEREE_MAY_SEND: Mapping[State, Mapping[str, State | None]] = {
    State.NEW: {"hello": State.AWAITING_HELLO},
    State.AWAITING_HELLO: {},
    State.IDLE: {"new_game": State.AWAITING_READY, "ping": State.AWAITING_PONG},
    State.AWAITING_PONG: {"new_game": State.AWAITING_READY},
    State.AWAITING_READY: {},
    State.BETWEEN_TURNS: {"turn": State.ON_TURN},
    State.ON_TURN: {},
    State.BROKEN: {},
    State.CLOSED: {},
}

_IDLE_VIOLATION = "sent {kind!r} when it was not asked for anything: {quote}"

# How a message that the table does not allow is described (`kind`: its type; `quote`: the line, if known).
VIOLATION: Mapping[State, str] = {
    State.NEW: "sent {kind!r} before the referee's hello: {quote}",
    State.AWAITING_HELLO: "answered hello with {kind!r}; expected its own 'hello'",
    State.IDLE: _IDLE_VIOLATION,
    State.AWAITING_PONG: _IDLE_VIOLATION,
    State.AWAITING_READY: "answered new_game with {kind!r}; expected 'ready'",
    State.BETWEEN_TURNS: _IDLE_VIOLATION,
    State.ON_TURN: "sent {kind!r} during its turn; expected 'move' (or 'info', 'pong')",
    State.BROKEN: "sent {kind!r} after the session broke: {quote}",
    State.CLOSED: "sent {kind!r} after the session ended: {quote}",
}


class BotSays(Protocol):
    """What the session reads of a bot message: its tag (and `protocol`, `game_id` or `id` where they apply)."""

    @property
    def type(self) -> str: ...


class ProtocolViolation(Exception):
    """The bot broke the protocol (its fault: it forfeits). `reason` is for people."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SessionError(Exception):
    """The referee tried to write something the protocol does not allow now: a bug in the referee."""


class Session:
    """One bot process's protocol session: the state, the pings written, and whether it is broken."""

    __slots__ = ("_pinged", "_return_to", "awaited_ping", "game_id", "protocol_version", "reason", "state")

    def __init__(self, protocol_version: int) -> None:
        self.protocol_version = protocol_version
        self.state = State.NEW
        self.game_id: str | None = None
        """The game of the last new_game written (ready must name it)."""
        self.awaited_ping: int | None = None
        """In AWAITING_PONG: the ping whose pong returns the session to IDLE."""
        self.reason: str | None = None
        """Why the session broke or closed (None while it is live)."""
        self._pinged = 0
        self._return_to = State.IDLE

    @property
    def broken(self) -> bool:
        """True once the session cannot be used again: the bot must be restarted."""
        return self.state not in LIVE

    @property
    def closed(self) -> bool:
        """True once nothing more can be exchanged (quit written, or the pipes are gone)."""
        return self.state is State.CLOSED

    @property
    def last_ping(self) -> int:
        """The id of the last ping written (0: none)."""
        return self._pinged

    # -- what the referee writes ----------------------------------------------------------------------------

    def sent(self, kind: str, *, game_id: str | None = None, ping_id: int | None = None) -> None:
        """Note that the referee wrote a message of type `kind`; SessionError if the protocol forbids it now.

        `game_id` goes with new_game, `ping_id` with ping. game_over ends a game from any live state (a forfeit
        can come mid-turn); quit ends the session. Writing to a broken session is allowed for game_over and
        quit and ping only (harmless: the write itself says whether the bot still reads).
        """
        state = self.state
        if kind == "quit":
            self._close("quit")
            return
        if kind == "game_over":
            if state in LIVE and state is not State.NEW and state is not State.AWAITING_HELLO:
                self.state, self.game_id = State.IDLE, None
            return
        if kind == "ping":
            if ping_id is None or ping_id <= self._pinged:
                raise SessionError(f"ping ids must count up: {ping_id} after {self._pinged}")
            if state is not State.NEW:  # a ping to a broken session is harmless (the write may fail)
                self._pinged = ping_id
                if state in (State.IDLE, State.AWAITING_PONG):  # a health check awaits its newest ping
                    self.state, self.awaited_ping, self._return_to = State.AWAITING_PONG, ping_id, State.IDLE
                return
        allowed = REFEREE_MAY_SEND[state]
        if kind not in allowed:
            raise SessionError(f"the referee may not write {kind!r} in state {state.value!r}")
        if kind == "new_game":
            if game_id is None:
                raise SessionError("new_game needs its game_id")
            self.game_id = game_id
        next_state = allowed[kind]
        if next_state is not None:
            self.state = next_state

    # -- what the bot writes ---------------------------------------------------------------------------------

    def received(self, message: BotSays, *, quote: str | Callable[[], str] = "", before_turn: bool = False) -> None:
        """Check one message from the bot against the state; ProtocolViolation (and BROKEN) if not allowed. `quote`
        shows the line in the reason (a function: made only for a violation). `before_turn`: the bot wrote it
        before the turn it is read during reached it (its write's time says so): judged as between turns."""
        kind = message.type
        state = self.state
        judged = State.BETWEEN_TURNS if before_turn and state is State.ON_TURN else state
        next_state = BOT_MAY_SEND[judged].get(kind)
        if next_state is None:
            shown = quote() if callable(quote) else quote
            raise self.violation(VIOLATION[judged].format(kind=kind, quote=shown))
        if judged is not state:
            next_state = state  # an info or a pong written between turns: the turn still awaits its move
        if kind == "pong":
            ping_id: int = getattr(message, "id", 0)
            if ping_id > self._pinged:
                raise self.violation(f"answered ping {ping_id}, which was never sent")
            if state is State.AWAITING_PONG and ping_id == self.awaited_ping:
                next_state, self.awaited_ping = self._return_to, None
        elif kind == "hello":
            version = getattr(message, "protocol", self.protocol_version)
            if version != self.protocol_version:
                raise self.violation(f"speaks protocol {version}, the referee speaks {self.protocol_version}")
        elif kind == "ready":
            game_id = getattr(message, "game_id", None)
            if game_id != self.game_id:
                raise self.violation(f"answered new_game with ready for game {game_id!r}; expected {self.game_id!r}")
        self.state = next_state

    # -- what breaks it --------------------------------------------------------------------------------------

    def violation(self, reason: str) -> ProtocolViolation:
        """The bot broke the protocol (a bad line, a message out of turn): BROKEN; returns the error to raise."""
        self._break(reason)
        return ProtocolViolation(reason)

    def gave_up(self, reason: str) -> None:
        """The referee stopped waiting for an answer (a deadline) or stopped trusting the pipe (its own error).

        An answer may still be on its way and would be read as the answer to the next message: BROKEN.
        """
        self._break(reason)

    def gone(self, reason: str) -> None:
        """The bot's output ended or its input closed: nothing more can be exchanged (CLOSED)."""
        self._close(reason)

    def _break(self, reason: str) -> None:
        if self.state is not State.CLOSED:
            self.state = State.BROKEN
        if self.reason is None:
            self.reason = reason

    def _close(self, reason: str) -> None:
        self.state = State.CLOSED
        if self.reason is None:
            self.reason = reason
