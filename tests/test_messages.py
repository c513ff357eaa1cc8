"""Protocol v1 messages: every message survives encode/parse, and each kind of bad line is refused precisely."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from protocol import messages as m
from protocol.framing import LineBuffer, LineTooLongError
from protocol.rules import FILES, InvalidMoveError, Move

# -- strategies -----------------------------------------------------------------------------------

cells = st.builds(lambda f, r: f"{FILES[f]}{r}", st.integers(0, 25), st.integers(1, 26))
move_texts = st.one_of(st.just("pass"), st.builds(lambda a, b: a + b, cells, cells))
ms = st.integers(min_value=0, max_value=10**9)
opt_ms = st.none() | ms
text = st.text(max_size=40)
game_ids = st.text(min_size=1, max_size=20)
colors = st.sampled_from(["black", "white"])
floats = st.floats(allow_nan=False, allow_infinity=False, width=32)

# Exactly one of the three forms (the model refuses any other shape): a game clock, with or without periods,
# or a time per move alone.
time_controls = st.one_of(
    st.builds(m.TimeControl, base_ms=ms, increment_ms=ms, moves_per_period=st.none() | st.integers(1, 100)),
    st.builds(m.TimeControl, base_ms=st.none(), move_time_ms=ms),
)
clocks = st.builds(
    m.TurnClocks,
    black_ms=opt_ms,
    white_ms=opt_ms,
    increment_ms=ms,
    move_limit_ms=opt_ms,
    moves_to_go=st.none() | st.integers(1, 100),
)
referee_messages = st.one_of(
    st.builds(m.Hello, type=st.just("hello"), protocol=st.integers(0, 9), referee=text),
    st.builds(
        m.NewGame,
        type=st.just("new_game"),
        game_id=game_ids,
        color=colors,
        width=st.integers(2, 26),
        height=st.integers(2, 26),
        komi=floats,
        time_control=time_controls,
        opponent=text,
    ),
    st.builds(m.Turn, type=st.just("turn"), game_id=game_ids, moves=st.lists(move_texts, max_size=10), clock=clocks),
    st.builds(
        m.GameOver,
        type=st.just("game_over"),
        game_id=game_ids,
        result=st.sampled_from(["1-0", "0-1", "1/2-1/2", "*"]),
        winner=st.none() | colors,
        reason=text,
        black_score=st.none() | floats,
        white_score=st.none() | floats,
        termination=st.none() | st.sampled_from(["normal", "time", "protocol"]),
    ),
    st.builds(m.Ping, type=st.just("ping"), id=st.integers(0, 2**40)),
    st.builds(m.Quit, type=st.just("quit")),
)
bot_messages = st.one_of(
    st.builds(
        m.BotHello,
        type=st.just("hello"),
        protocol=st.integers(0, 9),
        name=st.text(min_size=1, max_size=64),
        author=st.text(max_size=128),
        version=st.text(max_size=64),
    ),
    st.builds(m.Ready, type=st.just("ready"), game_id=game_ids),
    st.builds(m.MoveReply, type=st.just("move"), move=move_texts),
    st.builds(
        m.Info,
        type=st.just("info"),
        depth=st.none() | st.integers(0, 100),
        score=st.none() | floats,
        nodes=st.none() | st.integers(0, 10**12),
        pv=st.none() | st.lists(move_texts, max_size=10),
        text=st.none() | text,
    ),
    st.builds(m.Pong, type=st.just("pong"), id=st.integers(0, 2**40)),
)


def _is_one_line(line: bytes) -> bool:
    return line.endswith(b"\n") and b"\n" not in line[:-1] and len(line) <= m.MAX_LINE_BYTES


@given(referee_messages)
def test_every_referee_message_round_trips(message: BaseModel) -> None:
    line = m.encode(message)
    assert _is_one_line(line)
    assert m.parse_referee_line(line) == message


@given(bot_messages)
def test_every_bot_message_round_trips_through_the_strict_parser(message: BaseModel) -> None:
    line = m.encode(message)
    assert _is_one_line(line)
    assert m.parse_bot_line(line) == message


@given(bot_messages)
def test_a_line_split_anywhere_still_frames_and_parses(message: BaseModel) -> None:
    line = m.encode(message)
    buffer = LineBuffer()
    middle = len(line) // 2
    assert [m.parse_bot_line(x) for x in buffer.feed(line[:middle]) + buffer.feed(line[middle:])] == [message]


def test_a_longest_turn_fits_in_one_line() -> None:
    # Every placement on the largest board plus two passes: the history a referee could ever send.
    moves = ["z26y26"] * (26 * 26 - 1) + ["pass", "pass"]
    clock = m.TurnClocks(black_ms=10**9, white_ms=10**9, increment_ms=10**6, move_limit_ms=None, moves_to_go=None)
    line = m.encode(m.Turn(type="turn", game_id="g" * 128, moves=moves, clock=clock))
    assert len(line) < m.MAX_LINE_BYTES // 4


# -- rejections -----------------------------------------------------------------------------------


def _error_types(line: bytes | str) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        m.parse_bot_line(line)
    return [str(error["type"]) for error in caught.value.errors()]


@pytest.mark.parametrize(
    ("line", "error_type"),
    [
        (b"{not json", "json_invalid"),
        (b"", "json_invalid"),
        (b"\xff\xfe{}", "json_invalid"),
        (b'{"type":"pong","id":1} trailing', "json_invalid"),
        (b"[1, 2]", "dict_type"),
        (b'"move"', "dict_type"),
        (b'{"type":"resign"}', "union_tag_invalid"),
        (b'{"move":"d5d4"}', "union_tag_not_found"),
        (b'{"type":"ready"}', "missing"),
        (b'{"type":"hello","name":"x"}', "missing"),
        (b'{"type":"pong","id":"1"}', "int_type"),
        (b'{"type":"pong","id":1.0}', "int_type"),
        (b'{"type":"hello","protocol":"1","name":"x"}', "int_type"),
        (b'{"type":"move","move":4}', "string_type"),
        (b'{"type":"info","depth":true}', "int_type"),
        (b'{"type":"move","move":"pass","comment":"gg"}', "extra_forbidden"),
        (b'{"type":"hello","protocol":1,"name":""}', "string_too_short"),
        (b'{"type":"info","pv":["d5d4","d5-d4"]}', "string_pattern_mismatch"),
        (b'{"type":"info","depth":-1}', "greater_than_equal"),
        (b'{"type":"info","score":NaN}', "finite_number"),
        (b'{"type":"info","score":-Infinity}', "finite_number"),
    ],
)
def test_each_kind_of_bad_line_is_refused_with_a_precise_error(line: bytes, error_type: str) -> None:
    error_types = _error_types(line)
    assert error_types and all(t == error_type for t in error_types), error_types


def test_the_error_names_the_bad_field() -> None:
    with pytest.raises(ValidationError) as caught:
        m.parse_bot_line(b'{"type":"move","move":"pass","comment":"gg"}')
    assert caught.value.errors()[0]["loc"] == ("move", "comment")


def test_malformed_move_text_parses_so_the_rules_engine_can_judge_it() -> None:
    # The table in PROTOCOL.md: text that is not a move loses as illegal_move, not as a protocol error.
    reply = m.parse_bot_line(b'{"type":"move","move":"d5-d4"}\n')
    assert isinstance(reply, m.MoveReply)
    with pytest.raises(InvalidMoveError, match="not a move"):
        Move.parse(reply.move)


def test_an_over_long_line_is_refused_by_the_framing_before_any_parsing() -> None:
    line = json.dumps({"type": "info", "text": "x" * m.MAX_LINE_BYTES}).encode() + b"\n"
    with pytest.raises(LineTooLongError):
        LineBuffer().feed(line)


def test_referee_messages_keep_fields_a_bot_does_not_know() -> None:
    message = m.parse_referee_line(b'{"type":"ping","id":3,"sent_at":"later versions may add this"}')
    assert isinstance(message, m.Ping)
    assert message.id == 3


def test_game_over_without_a_termination_code_is_valid() -> None:
    line = b'{"type":"game_over","game_id":"g","result":"*","winner":null,"reason":"void","black_score":null,'
    line += b'"white_score":null}'
    message = m.parse_referee_line(line)
    assert isinstance(message, m.GameOver)
    assert message.termination is None


def test_the_type_tag_has_no_default() -> None:
    with pytest.raises(ValidationError):
        m.Quit()  # type: ignore[call-arg]


def test_encode_writes_compact_json_and_keeps_nulls() -> None:
    line = m.encode(m.Info(type="info", depth=3))
    data: dict[str, Any] = json.loads(line)
    assert line.startswith(b'{"type":"info","depth":3,')
    assert data["score"] is None


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", max_size=40))
def test_the_compact_move_line_reads_as_the_validator_reads_it(text: str) -> None:
    # `parse_bot_line` reads the reply most bots write without the validator: it must mean exactly the same.
    line = b'{"type":"move","move":"%s"}' % text.encode()
    expected = m.BOT_MESSAGE.validate_json(line, strict=True)
    for _ in range(2):  # read, then remembered
        got = m.parse_bot_line(line)
        assert got == expected and type(got) is type(expected) and got.model_fields_set == expected.model_fields_set


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"move","move":"d5\\u0064"}',  # an escape: the validator decodes it
        b'{"type":"move","move":"d5 d4"}',
        b'{"type":"move","move":"d5d4"}\n',
        b'{"type":"move","move":"d5d4","extra":1}',
        b'{"type":"move","move":"d5d4"} ',
        b'{"type":"move","move":"\xc3\xa9"}',
        b'{"type":"move","move":""}',
    ],
)
def test_any_other_move_line_goes_through_the_validator(line: bytes) -> None:
    try:
        expected: Any = m.BOT_MESSAGE.validate_json(line, strict=True)
    except ValidationError as error:
        with pytest.raises(ValidationError) as raised:
            m.parse_bot_line(line)
        assert raised.value.errors()[0]["type"] == error.errors()[0]["type"]
    else:
        assert m.parse_bot_line(line) == expected
