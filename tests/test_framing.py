"""The line framing, sans I/O: plain bytes in memory, every way of cutting them into chunks."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.framing import MAX_LINE_BYTES, LineBuffer, LineTooLongError, UnterminatedLineError

LINES = [b'{"type":"hello"}', b"", b'{"type":"move","move":"d5d4"}', '{"t":"\u00e9\u4e2d"}'.encode()]
STREAM = b"".join(line + b"\n" for line in LINES)


def test_one_chunk_with_many_lines() -> None:
    buffer = LineBuffer()
    assert buffer.feed(STREAM) == LINES
    assert buffer.pending == 0
    buffer.finish()


def test_split_at_every_byte_boundary() -> None:
    for cut in range(len(STREAM) + 1):
        buffer = LineBuffer()
        assert buffer.feed(STREAM[:cut]) + buffer.feed(STREAM[cut:]) == LINES, cut
        buffer.finish()


def test_one_byte_at_a_time() -> None:
    buffer = LineBuffer()
    lines = []
    for i in range(len(STREAM)):
        lines += buffer.feed(STREAM[i : i + 1])
    assert lines == LINES


@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"").rstrip(b"\r")), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_any_chunking_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    points = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    buffer = LineBuffer()
    out: list[bytes] = []
    for start, end in itertools.pairwise(points):
        out += buffer.feed(stream[start:end])
    assert out == lines
    buffer.finish()


def test_crlf_is_accepted_and_a_lone_cr_is_kept() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b'{"a":1}\r\n{"b":2}\r') == [b'{"a":1}']
    assert buffer.feed(b"\n\rx\n") == [b'{"b":2}', b"\rx"]


def test_a_line_of_exactly_the_limit_is_accepted() -> None:
    buffer = LineBuffer(16)
    assert buffer.feed(b"x" * 15 + b"\n") == [b"x" * 15]
    assert buffer.feed(b"y" * 14 + b"\r\n") == [b"y" * 14]


def test_a_complete_line_one_byte_too_long_is_refused_with_the_lines_before_it() -> None:
    buffer = LineBuffer(16)
    with pytest.raises(LineTooLongError) as caught:
        buffer.feed(b"ok\n" + b"x" * 16 + b"\nnext\n")
    assert caught.value.lines == [b"ok"]
    assert caught.value.limit == 16
    assert "longer than 16 bytes" in str(caught.value)


def test_an_unterminated_line_is_refused_as_soon_as_it_cannot_fit() -> None:
    buffer = LineBuffer(16)
    assert buffer.feed(b"x" * 15) == []  # might still end with a newline
    with pytest.raises(LineTooLongError):
        buffer.feed(b"x")  # 16 bytes and no newline: cannot fit any more


def test_the_default_limit_is_64_kib_and_is_never_exceeded_in_memory() -> None:
    assert MAX_LINE_BYTES == 65536
    buffer = LineBuffer()
    chunk = b"x" * 4096
    with pytest.raises(LineTooLongError):
        for _ in range(100):
            buffer.feed(chunk)
            assert buffer.pending < MAX_LINE_BYTES
    assert buffer.pending == 0  # dropped, not kept


def test_a_huge_chunk_is_refused_without_being_kept() -> None:
    buffer = LineBuffer()
    with pytest.raises(LineTooLongError):
        buffer.feed(b"x" * (10 * MAX_LINE_BYTES) + b"\n")
    assert buffer.pending == 0


def test_after_an_error_the_buffer_stays_broken() -> None:
    buffer = LineBuffer(8)
    with pytest.raises(LineTooLongError) as first:
        buffer.feed(b"x" * 20)
    with pytest.raises(LineTooLongError) as again:
        buffer.feed(b"ok\n")
    assert again.value is first.value
    with pytest.raises(LineTooLongError):
        buffer.finish()


def test_end_of_input_in_the_middle_of_a_line_is_an_error_carrying_the_bytes() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b'{"type":"pong","id":1}\n{"type":"mo') == [b'{"type":"pong","id":1}']
    with pytest.raises(UnterminatedLineError) as caught:
        buffer.finish()
    assert caught.value.data == b'{"type":"mo'
    assert "ended in the middle of a line" in str(caught.value)


def test_end_of_input_after_a_newline_is_clean() -> None:
    buffer = LineBuffer()
    buffer.feed(b"a\n")
    buffer.finish()


def test_invalid_utf8_passes_through_untouched() -> None:
    # Framing is byte-level (0x0A never occurs inside a UTF-8 sequence); the JSON parser rejects the bytes.
    buffer = LineBuffer()
    assert buffer.feed(b"\xff\xfe\xc3\n\xe4\xb8") == [b"\xff\xfe\xc3"]
    assert buffer.feed(b"\xad\n") == ["\u4e2d".encode()]


def test_a_limit_below_one_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        LineBuffer(0)


@pytest.mark.parametrize("before", [b"a\n", b'{"type":"pong","id":1}\n' * 3, b"\n"])
def test_the_64_kib_limit_holds_for_a_line_that_is_not_first_in_its_chunk(before: bytes) -> None:
    """The length of a later line is counted from its own start, not from the chunk's."""
    earlier = before.split(b"\n")[:-1]
    longest = b"x" * (MAX_LINE_BYTES - 1)
    assert LineBuffer().feed(before + longest + b"\n" + b"after\n") == [*earlier, longest, b"after"]
    assert LineBuffer().feed(before + longest[:-1] + b"\r\n") == [*earlier, longest[:-1]]
    with pytest.raises(LineTooLongError) as caught:
        LineBuffer().feed(before + longest + b"x\nafter\n")
    assert caught.value.lines == earlier and caught.value.limit == MAX_LINE_BYTES
    # The same when the long line's start came in an earlier chunk.
    buffer = LineBuffer()
    assert buffer.feed(before + longest[:100]) == earlier
    assert buffer.feed(longest[100:] + b"\n") == [longest]
    buffer = LineBuffer()
    buffer.feed(before + longest[:100])
    with pytest.raises(LineTooLongError):
        buffer.feed(longest[100:] + b"x\n")
