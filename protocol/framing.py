"""Line framing of the protocol, sans I/O: bytes in, complete lines out, never an unbounded line held.

Each message is one line: UTF-8 JSON terminated by `\\n`, at most `MAX_LINE_BYTES` bytes with the
newline. `LineBuffer` knows nothing about pipes or processes: the caller reads chunks however it likes
(trio stream, `os.read`, a test's byte string) and feeds them in. Choices, all tested:

- Lines come out without their `\\n`. A `\\r` just before it is dropped too, so a bot that writes CRLF
  (a Windows text stream) is accepted; senders should write a bare `\\n`. The `\\r` counts toward the limit.
- The limit is checked while bytes arrive: as soon as the pending, unterminated line is already too long
  to ever fit, `feed` raises `LineTooLongError`, so at most `MAX_LINE_BYTES` bytes are ever kept.
- A newline byte never occurs inside a multi-byte UTF-8 sequence, so splitting bytes at `\\n` is safe;
  the buffer does not decode. Invalid UTF-8 passes through unchanged and is the JSON parser's to reject.
- At end of input, `finish` raises `UnterminatedLineError` if a partial line is left: a line without
  its newline is not a message (the peer died while writing it).
- After an error the buffer stays broken: every later call raises the same error again.

This module imports nothing beyond the standard library so the bot kit can use it and start fast.
"""

from __future__ import annotations

__all__ = ["MAX_LINE_BYTES", "FramingError", "LineBuffer", "LineTooLongError", "UnterminatedLineError"]

MAX_LINE_BYTES = 65536
"""The longest line either side may send, in bytes, newline included (64 KiB)."""


class FramingError(ValueError):
    """The byte stream cannot be cut into protocol lines."""


class LineTooLongError(FramingError):
    """A line is longer than the limit. `lines` holds the complete lines that came before it in the chunk."""

    def __init__(self, length: int, limit: int, lines: list[bytes] | None = None) -> None:
        self.length = length
        self.limit = limit
        self.lines: list[bytes] = lines or []
        super().__init__(
            f"a line is longer than {limit} bytes (at least {length} bytes without its newline so far): "
            f"every message must be one JSON object on one line of at most {limit} bytes"
        )


class UnterminatedLineError(FramingError):
    """Input ended in the middle of a line. `data` holds the partial line (at most the limit)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        preview = data[:80].decode("utf-8", errors="replace")
        super().__init__(
            f"the input ended in the middle of a line ({len(data)} bytes without a newline: {preview!r}): "
            "every message must end with a newline"
        )


class LineBuffer:
    """Cuts a byte stream into lines of at most `max_line_bytes` bytes (newline included)."""

    __slots__ = ("_error", "_max", "_pending")

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be at least 1 (room for the newline), not {max_line_bytes}")
        self._max = max_line_bytes
        self._pending = bytearray()
        self._error: FramingError | None = None

    @property
    def max_line_bytes(self) -> int:
        return self._max

    @property
    def pending(self) -> int:
        """How many bytes of an unfinished line are held."""
        return len(self._pending)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Take the next chunk of the stream; return every line it completes, in order, without newlines."""
        if self._error is not None:
            raise self._error
        if not isinstance(data, bytes):
            data = bytes(data)
        elif not self._pending:
            # The usual chunk, one whole line (a reply: a bot writes its line at once): no loop, no copy.
            end = data.find(b"\n")
            if 0 <= end == len(data) - 1 and end < self._max:
                line = data[:end]
                return [line[:-1] if line.endswith(b"\r") else line]
        lines: list[bytes] = []
        start = 0
        # The content of a line (its \r included) may hold max - 1 bytes: the newline takes the last one.
        room = self._max - 1
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            length = len(self._pending) + end - start
            if length > room:
                self._fail(LineTooLongError(length, self._max, lines))
            if self._pending:
                self._pending += data[start:end]
                line = bytes(self._pending)
                self._pending.clear()
            else:
                line = data[start:end]
            lines.append(line[:-1] if line.endswith(b"\r") else line)
            start = end + 1
        length = len(self._pending) + len(data) - start
        if length > room:
            # Already too long to end in time: fail now rather than wait for a newline that may never come.
            self._fail(LineTooLongError(length, self._max, lines))
        self._pending += data[start:]
        return lines

    def finish(self) -> None:
        """Declare the end of input; UnterminatedLineError if a partial line is left over."""
        if self._error is not None:
            raise self._error
        if self._pending:
            self._fail(UnterminatedLineError(bytes(self._pending)))

    def _fail(self, error: FramingError) -> None:
        self._pending.clear()
        self._error = error
        raise error
