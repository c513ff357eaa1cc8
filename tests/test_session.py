"""The bot-session state machine with plain message objects: every state against every bot message, the
referee's own writes, and what breaks a session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from protocol.session import BOT_MAY_SEND, ProtocolViolation, Session, SessionError, State


@dataclass(frozen=True)
class Msg:
    """A bot message as the session sees it: a tag and the few fields it checks."""

    type: str
    id: int = 0
    protocol: int = 1
    game_id: str = "g"


def state_of(session: Session) -> State:
    """The session's state, read afresh (so that type narrowing does not carry over from an earlier check)."""
    return session.state


KINDS = ("hello", "ready", "move", "info", "pong")


def session_in(state: State) -> Session:
    """A session walked to `state` through the protocol; ping 1 is written (and, past IDLE, answered)."""
    session = Session(1)
    if state is State.NEW:
        return session
    session.sent("hello")
    if state is State.AWAITING_HELLO:
        return session
    session.received(Msg("hello"))
    session.sent("ping", ping_id=1)
    if state is State.AWAITING_PONG:
        return session
    session.received(Msg("pong", id=1))
    steps: list[tuple[State, Callable[[], None]]] = [
        (State.AWAITING_READY, lambda: session.sent("new_game", game_id="g")),
        (State.BETWEEN_TURNS, lambda: session.received(Msg("ready"))),
        (State.ON_TURN, lambda: session.sent("turn")),
    ]
    for reached, step in steps:
        if session.state is state:
            break
        step()
        assert session.state is reached
    assert session.state is state
    return session


# Hand-written expectations (not derived from the table): the state a message leads to, or the violation.
EXPECTED: dict[tuple[State, str], State | str] = {
    (State.NEW, "hello"): "sent 'hello' before the referee's hello",
    (State.NEW, "ready"): "sent 'ready' before the referee's hello",
    (State.NEW, "move"): "sent 'move' before the referee's hello",
    (State.NEW, "info"): "sent 'info' before the referee's hello",
    (State.NEW, "pong"): "sent 'pong' before the referee's hello",  # (no ping was written either)
    (State.AWAITING_HELLO, "hello"): State.IDLE,
    (State.AWAITING_HELLO, "ready"): "answered hello with 'ready'; expected its own 'hello'",
    (State.AWAITING_HELLO, "move"): "answered hello with 'move'; expected its own 'hello'",
    (State.AWAITING_HELLO, "info"): "answered hello with 'info'; expected its own 'hello'",
    (State.AWAITING_HELLO, "pong"): "answered hello with 'pong'; expected its own 'hello'",
    (State.IDLE, "hello"): "sent 'hello' when it was not asked for anything",
    (State.IDLE, "ready"): "sent 'ready' when it was not asked for anything",
    (State.IDLE, "move"): "sent 'move' when it was not asked for anything",
    (State.IDLE, "info"): State.IDLE,
    (State.IDLE, "pong"): State.IDLE,
    (State.AWAITING_PONG, "hello"): "sent 'hello' when it was not asked for anything",
    (State.AWAITING_PONG, "ready"): "sent 'ready' when it was not asked for anything",
    (State.AWAITING_PONG, "move"): "sent 'move' when it was not asked for anything",
    (State.AWAITING_PONG, "info"): State.AWAITING_PONG,
    (State.AWAITING_PONG, "pong"): State.IDLE,  # pong 1: the awaited one
    (State.AWAITING_READY, "hello"): "answered new_game with 'hello'; expected 'ready'",
    (State.AWAITING_READY, "ready"): State.BETWEEN_TURNS,
    (State.AWAITING_READY, "move"): "answered new_game with 'move'; expected 'ready'",
    (State.AWAITING_READY, "info"): State.AWAITING_READY,
    (State.AWAITING_READY, "pong"): State.AWAITING_READY,
    (State.BETWEEN_TURNS, "hello"): "sent 'hello' when it was not asked for anything",
    (State.BETWEEN_TURNS, "ready"): "sent 'ready' when it was not asked for anything",
    (State.BETWEEN_TURNS, "move"): "sent 'move' when it was not asked for anything",
    (State.BETWEEN_TURNS, "info"): State.BETWEEN_TURNS,
    (State.BETWEEN_TURNS, "pong"): State.BETWEEN_TURNS,
    (State.ON_TURN, "hello"): "sent 'hello' during its turn; expected 'move' (or 'info', 'pong')",
    (State.ON_TURN, "ready"): "sent 'ready' during its turn; expected 'move' (or 'info', 'pong')",
    (State.ON_TURN, "move"): State.BETWEEN_TURNS,
    (State.ON_TURN, "info"): State.ON_TURN,
    (State.ON_TURN, "pong"): State.ON_TURN,
}
LIVE_STATES = [s for s in State if s not in (State.BROKEN, State.CLOSED)]


def test_the_expectations_cover_every_live_state_and_message() -> None:
    assert set(EXPECTED) == {(state, kind) for state in LIVE_STATES for kind in KINDS}
    assert set(BOT_MAY_SEND) == set(State)


def _case_order(case: tuple[State, str]) -> tuple[str, str]:
    return case[0].value, case[1]


CASES: list[tuple[State, str]] = sorted(EXPECTED.keys(), key=_case_order)


@pytest.mark.parametrize(("state", "kind"), CASES)
def test_every_message_in_every_state(state: State, kind: str) -> None:
    session = session_in(state)
    expected = EXPECTED[(state, kind)]
    if isinstance(expected, State):
        session.received(Msg(kind, id=1))
        assert session.state is expected and not session.broken
    else:
        with pytest.raises(ProtocolViolation) as info:
            session.received(Msg(kind, id=1), quote="'line'")
        assert info.value.reason.startswith(expected)
        assert session.broken and session.state is State.BROKEN and session.reason == info.value.reason


@pytest.mark.parametrize("state", [State.BROKEN, State.CLOSED])
def test_nothing_is_accepted_once_broken_or_closed(state: State) -> None:
    session = session_in(State.ON_TURN)
    if state is State.BROKEN:
        session.gave_up("no move within 1 s")
    else:
        session.gone("closed its output")
    for kind in KINDS:
        with pytest.raises(ProtocolViolation):
            session.received(Msg(kind))
        assert session.state is state  # closed stays closed; broken stays broken
    assert session.reason in ("no move within 1 s", "closed its output")  # the first cause is kept


def test_content_checks() -> None:
    session = session_in(State.AWAITING_HELLO)
    with pytest.raises(ProtocolViolation, match="speaks protocol 2, the referee speaks 1"):
        session.received(Msg("hello", protocol=2))
    session = session_in(State.AWAITING_READY)
    with pytest.raises(ProtocolViolation, match="answered new_game with ready for game 'h'; expected 'g'"):
        session.received(Msg("ready", game_id="h"))
    for state in (State.IDLE, State.AWAITING_READY, State.ON_TURN, State.BETWEEN_TURNS):
        session = session_in(state)
        session.received(Msg("pong", id=1))  # answered, or late: harmless
        with pytest.raises(ProtocolViolation, match="answered ping 2, which was never sent"):
            session.received(Msg("pong", id=2))


def test_a_health_ping_waits_for_its_own_pong() -> None:
    session = session_in(State.AWAITING_PONG)
    session.sent("ping", ping_id=2)  # a second ping: the first one's pong is now late but harmless
    session.received(Msg("pong", id=1))
    assert state_of(session) is State.AWAITING_PONG
    session.received(Msg("pong", id=2))
    assert state_of(session) is State.IDLE


def test_a_whole_session_of_two_games() -> None:
    session = Session(1)
    session.sent("hello")
    session.received(Msg("hello"))
    for game in ("g1", "g2"):
        session.sent("new_game", game_id=game)
        session.received(Msg("info"))
        session.received(Msg("ready", game_id=game))
        for _ in range(3):
            session.sent("turn")
            session.sent("ping", ping_id=session.last_ping + 1)
            session.received(Msg("pong", id=session.last_ping))
            session.received(Msg("info"))
            session.received(Msg("move"))
        session.sent("game_over")
        assert session.state is State.IDLE
    session.sent("quit")
    assert session.closed and session.broken


@pytest.mark.parametrize(
    ("state", "kind"),
    [
        (State.NEW, "turn"),
        (State.NEW, "new_game"),
        (State.AWAITING_HELLO, "new_game"),
        (State.IDLE, "turn"),
        (State.AWAITING_READY, "turn"),
        (State.ON_TURN, "turn"),
        (State.BETWEEN_TURNS, "new_game"),
        (State.IDLE, "hello"),
    ],
)
def test_the_referee_cannot_write_out_of_order(state: State, kind: str) -> None:
    session = session_in(state)
    with pytest.raises(SessionError, match=f"may not write '{kind}'"):
        session.sent(kind, game_id="g")


def test_ping_ids_count_up() -> None:
    session = session_in(State.ON_TURN)
    with pytest.raises(SessionError, match="ping ids must count up"):
        session.sent("ping", ping_id=1)


def test_game_over_ends_a_game_from_any_state_of_it() -> None:
    for state in (State.AWAITING_READY, State.BETWEEN_TURNS, State.ON_TURN):
        session = session_in(state)
        session.sent("game_over")
        assert session.state is State.IDLE and session.game_id is None
    session = session_in(State.ON_TURN)
    session.gave_up("no move")
    session.sent("game_over")  # telling a broken bot is harmless; it stays broken
    assert session.broken


@pytest.mark.parametrize("kind", KINDS)
def test_a_message_written_before_the_turn_is_judged_as_between_turns(kind: str) -> None:
    # Read during a turn, but written before it reached the bot (its write's time says so): as between turns.
    session = session_in(State.ON_TURN)
    expected = EXPECTED[(State.BETWEEN_TURNS, kind)]
    if isinstance(expected, str):
        with pytest.raises(ProtocolViolation, match=expected):
            session.received(Msg(kind, id=1), before_turn=True)
        assert state_of(session) is State.BROKEN
    else:
        session.received(Msg(kind, id=1), before_turn=True)
        assert state_of(session) is State.ON_TURN  # the turn still awaits its move
        session.received(Msg("move"))
        assert state_of(session) is State.BETWEEN_TURNS
