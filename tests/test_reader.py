"""The reader thread's hand-over to trio: chunks with their times, and catching up without ever hanging.

A regression: catching up once waited for a chunk that a read "in flight" would bring, after that chunk had
already been taken (the thread had queued it but not yet cleared its flag), and a game hung for good with the
bot's move already in hand. These tests use real pipes and the real thread; `settle` must end whenever the
pipe is empty and no read is in flight, whatever order the two sides run in.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from protocol.framing import MAX_LINE_BYTES
from protocol.session import State
from referee import process
from referee.process import BotChannel
from referee.reader import CpuClock, InputClosedError, PipeReader, StderrCopier, TurnWrite, stamped_stdout, stdout_pair
from tests.test_session import session_in

TURN = b'{"type":"turn","game_id":"g","moves":[],"clock":{}}\n'


@contextlib.asynccontextmanager
async def reader_on_a_pipe(pair: Callable[[], tuple[int, int]] = os.pipe) -> AsyncIterator[tuple[PipeReader, int]]:
    """A reader thread on the read end of a fresh `pair()` (a pipe), and the write end; both closed after."""
    read_fd, write_fd = pair()
    reader = PipeReader(read_fd, "test")
    try:
        yield reader, write_fd
    finally:
        await reader.close()
        os.close(write_fd)
        os.close(read_fd)


async def test_a_chunk_comes_with_the_time_its_read_returned() -> None:
    async with reader_on_a_pipe() as (reader, write_fd):
        before = trio.current_time()
        os.write(write_fd, b'{"type":"move","move":"pass"}\n')
        data, stamp, delay = await reader.receive()
        assert data == b'{"type":"move","move":"pass"}\n'
        assert stamp > 0 and delay >= 0
        assert trio.current_time() >= before
        assert await reader.settle() is None  # nothing more in the pipe or in the thread's hands


async def test_settle_takes_what_is_in_the_pipe_and_stops_when_it_is_empty() -> None:
    async with reader_on_a_pipe() as (reader, write_fd):
        os.write(write_fd, b"one\n")
        chunk = await reader.settle()
        while chunk is None:  # the thread may not have woken yet: the pipe still holds the bytes
            await trio.sleep(0.001)
            chunk = await reader.settle()
        assert chunk[0] == b"one\n"
        assert await reader.settle() is None


async def test_settle_ends_when_a_read_in_flight_brings_nothing() -> None:
    # The race that hung a game: a read counted as in flight whose chunk is already gone (or that found
    # nothing). The thread's own counting is played here by hand, from another thread, after settle waits.
    async with reader_on_a_pipe() as (reader, _):
        reader._reads_started += 1  # a read begun and not finished, with nothing to hand over

        def finish() -> None:
            reader._reads_done += 1
            reader._wake_trio()

        timer = threading.Timer(0.05, finish)
        timer.start()
        with trio.fail_after(30):  # a hang, not a timing: settle returns as soon as the read is done
            assert await reader.settle() is None
        timer.join()


async def test_catching_up_never_waits_for_good_on_a_read_that_never_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The state a game hung in: the bot's move already taken in as lines, and the thread's count of reads
    # left showing one in flight for good. Catching up keeps the lines and returns within its bound.
    read_fd, write_fd = os.pipe()
    send_stream = trio.lowlevel.FdStream(os.dup(write_fd))
    reader = PipeReader(read_fd, "test")
    channel = BotChannel("test", send_stream, trio.testing.MemoryReceiveStream(), reader=reader)
    try:
        os.write(write_fd, b'{"type":"info","text":"x"}\n{"type":"move","move":"pass"}\n')
        while not channel.has_lines():
            await channel.catch_up()
            await trio.sleep(0.001)
        reader._reads_started += 1  # never finished
        started = trio.current_time()
        await channel.catch_up()
        assert trio.current_time() - started <= process.CATCH_UP_MAX_S + 0.1
        assert channel.has_lines()
    finally:
        await channel.close_reading()
        await send_stream.aclose()
        os.close(write_fd)
        os.close(read_fd)


async def test_a_turn_s_time_starts_before_its_write_even_when_the_pipe_is_full() -> None:
    # The bot's pipe is full: the turn line cannot go through until the bot reads. Its time starts before the
    # write was first tried (an ordering, not a duration): a bot is charged for a write that blocks on it.
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    filled = 0
    try:
        while True:
            filled += os.write(write_fd, b"x" * 65536)
    except BlockingIOError:
        pass
    send_stream = trio.lowlevel.FdStream(write_fd)
    channel = BotChannel("test", send_stream, trio.testing.MemoryReceiveStream())
    channel._monotonic = True  # the channel's clock is the monotonic clock, as with a real bot
    drained_at: list[int] = []

    def drain() -> None:
        time.sleep(0.05)  # long enough that the write is surely tried (and blocked) before this
        drained_at.append(time.monotonic_ns())
        left = filled + len(TURN)
        while left > 0:
            left -= len(os.read(read_fd, left))

    try:
        channel.session = session_in(State.BETWEEN_TURNS)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, drain)
            turn = await channel.send_turn(TURN)
        assert drained_at and turn.start_ns is not None and turn.start_ns < drained_at[0]
    finally:
        await send_stream.aclose()
        os.close(read_fd)


async def test_stderr_is_copied_to_the_log_up_to_its_cap_and_the_copy_stops_even_under_a_flood(
    tmp_path: Path,
) -> None:
    # A process that escaped every net may hold a bot's stderr open and write as fast as it is read: stopping
    # the copy takes what is there (a bounded amount) and ends, so the pipe can be closed safely after it.
    read_fd, write_fd = os.pipe()
    log_path = tmp_path / "bot.stderr.log"
    chunks: list[bytes] = []
    copier = StderrCopier(read_fd, log_path, 100, chunks.append, "test")
    os.write(write_fd, b"first line\n" + b"x" * 200 + b"\n")
    while copier.copied < 212:
        await trio.sleep(0.001)
    flooding = threading.Event()
    flooding.set()

    def flood() -> None:
        while flooding.is_set():
            try:
                os.write(write_fd, b"y" * 4096)
            except OSError:
                return

    writer = threading.Thread(target=flood, daemon=True)
    writer.start()
    try:
        with trio.fail_after(30):  # a hang, not a timing
            await copier.stop()
            await copier.done.wait()
        assert not copier._thread.is_alive()
    finally:
        flooding.clear()
        os.close(read_fd)  # the writer's next write fails: it ends
        writer.join(5)
        os.close(write_fd)
    text = log_path.read_bytes()
    assert text.startswith(b"first line\n") and b"[stderr log capped at 100 bytes]" in text
    assert len(text) < 200  # the cap holds whatever came after
    assert b"".join(chunks).startswith(b"first line\n" + b"x" * 200)  # the tail keeper saw everything read


# -- a bot's stdout as a socket that stamps each write ----------------------------------------------------------

needs_stamps = pytest.mark.skipif(not stamped_stdout(), reason="no socket that stamps each write here (not Linux)")


@needs_stamps
async def test_a_write_is_timed_when_the_bot_made_it_not_when_it_was_read() -> None:
    ours, theirs = stdout_pair()
    try:
        written = time.monotonic_ns()
        os.write(theirs, b'{"type":"move","move":"pass"}\n')
        time.sleep(0.1)  # the referee is busy elsewhere: nothing reads yet
        reading_from = time.monotonic_ns()
        reader = PipeReader(ours, "test")
        try:
            data, stamp, delay = await reader.receive()
        finally:
            await reader.close()
        assert data == b'{"type":"move","move":"pass"}\n'
        assert written <= stamp < reading_from  # the write's own time: the 100 ms before the read cost nothing
        assert delay == 0  # and the reader's lateness is nobody's
    finally:
        os.close(theirs)
        os.close(ours)


@needs_stamps
async def test_an_empty_write_is_not_the_end_of_the_output() -> None:
    async with reader_on_a_pipe(stdout_pair) as (reader, theirs):
        os.write(theirs, b"")  # one record of nothing
        os.write(theirs, b"one\n")
        with trio.fail_after(30):
            data, _, _ = await reader.receive()
        assert data == b"one\n"


@needs_stamps
async def test_lines_split_across_writes_arrive_whole_and_the_end_is_seen() -> None:
    async with reader_on_a_pipe(stdout_pair) as (reader, theirs):
        for part in (b'{"type":"mo', b've","move":', b'"pass"}\n'):
            os.write(theirs, part)
        received = b""
        with trio.fail_after(30):
            while received.count(b"\n") < 1:
                received += (await reader.receive())[0]
        assert received == b'{"type":"move","move":"pass"}\n'
        os.close(os.dup(theirs))  # a copy closed: not the end
        assert await reader.settle() is None


@needs_stamps
async def test_one_write_larger_than_the_reader_can_take_is_a_flood_not_lost_lines() -> None:
    # The bot's end only lets about 512 KiB through in one write; a bot that raised its own send buffer to make
    # a bigger one has it cut, and the cut is made an over-long line (the bot loses for it, reason protocol).
    async with reader_on_a_pipe(stdout_pair) as (reader, theirs):
        bot_end = socket.socket(fileno=os.dup(theirs))
        try:
            bot_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 23)
            size = 3 << 20
            if bot_end.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) < size + (1 << 16):
                pytest.skip("the host's wmem_max does not let a write this large through")
            await trio.to_thread.run_sync(bot_end.send, b"a" * size)
        finally:
            bot_end.close()
        with trio.fail_after(30):
            data, _, _ = await reader.receive()
        assert len(data) > MAX_LINE_BYTES and b"\n" not in data


def _own_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def _fill(fd: int) -> int:
    """Fill a non-blocking pipe's write end; the bytes written."""
    filled = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            filled += os.write(fd, b"x" * 65536)
    return filled


@pytest.mark.skipif(not _own_cores(), reason="no CPU affinity on this system: readers are never pinned")
async def test_a_pinned_reader_writes_the_turn_itself_stamped_before_its_write_without_waking_the_loop() -> None:
    # Pinned to its bot's cores, the reader thread writes the bot's turns (the bot wakes on its own core), the
    # bot's time starts in that thread immediately before the write call, and the event loop is not woken for
    # it: `write` returns at once, and `written` is called by the thread that put the last byte in.
    written: list[tuple[str, int]] = []

    def note(start: int) -> None:
        written.append((threading.current_thread().name, start))

    out_ours, out_theirs = stdout_pair()
    in_read, in_write = os.pipe()
    os.set_blocking(in_write, False)
    reader = PipeReader(out_ours, "pinned", cores=_own_cores())
    try:
        assert reader.writes_turns
        before = time.monotonic_ns()
        turn = reader.write(in_write, TURN, note)
        assert os.read(in_read, 1024) == TURN  # blocks until the thread has written it
        read_at = time.monotonic_ns()
        with trio.fail_after(10):
            while not written:
                await trio.sleep(0.001)
        after = time.monotonic_ns()
        assert turn.start_ns is not None and before <= turn.start_ns <= read_at
        assert turn.start_ns + turn.write_ns <= after  # the write call's duration is noted before `written`
        assert written == [("reader-pinned", turn.start_ns)] and turn.done and not turn.failed

        # The bot's input is full: the time starts at the first try, and the thread writes the rest as it reads.
        filled = _fill(in_write)
        written.clear()
        turn = reader.write(in_write, TURN, note)
        with trio.fail_after(10):
            while turn.start_ns is None:
                await trio.sleep(0.001)
        assert not written and not turn.done
        drained_from = time.monotonic_ns()
        left = filled + len(TURN)
        data = b""
        while left > 0:
            chunk = await trio.to_thread.run_sync(os.read, in_read, left)
            data, left = data + chunk, left - len(chunk)
        assert data.endswith(TURN)
        with trio.fail_after(10):
            while not written:
                await trio.sleep(0.001)
        assert written == [("reader-pinned", turn.start_ns)] and turn.start_ns < drained_from

        # The bot's output ends: the thread stops, and a turn asked for then is written by the caller.
        os.close(out_theirs)
        out_theirs = -1
        assert (await reader.receive())[0] == b""
        with trio.fail_after(10):
            while reader._thread.is_alive():
                await trio.sleep(0.01)
        written.clear()
        turn = reader.write(in_write, TURN, note)
        assert turn.done and os.read(in_read, 1024) == TURN
        assert written == [("MainThread", turn.start_ns)]
    finally:
        await reader.close()
        for fd in (out_ours, out_theirs, in_read, in_write):
            if fd >= 0:
                os.close(fd)


@pytest.mark.skipif(not _own_cores(), reason="no CPU affinity on this system: readers are never pinned")
async def test_a_turn_the_pinned_reader_cannot_write_ends_the_wait_for_the_reply() -> None:
    # The bot closed its input: the thread's write fails, and the wait for the bot's output says so at once.
    out_ours, out_theirs = stdout_pair()
    in_read, in_write = os.pipe()
    os.set_blocking(in_write, False)
    os.close(in_read)
    reader = PipeReader(out_ours, "closed", cores=_own_cores())
    try:
        turn = reader.write(in_write, TURN)
        with trio.fail_after(10), pytest.raises(InputClosedError):
            await reader.receive()
        assert turn.failed and turn.start_ns is not None
    finally:
        await reader.close()
        for fd in (out_ours, out_theirs, in_write):
            os.close(fd)


async def test_an_unpinned_reader_leaves_the_turns_to_the_event_loop() -> None:
    async with reader_on_a_pipe() as (reader, _):
        assert not reader.writes_turns


async def test_a_turn_handed_to_the_reader_thread_is_never_written_again_by_the_loop() -> None:
    # A regression: the loop took "the thread has started the write" for "the thread has not taken it" and, the
    # write not being done yet, wrote the line again: the bot answered twice and lost for the unasked move.
    class Midway:
        """A reader thread caught in its write call: the time has started, nothing is counted as sent yet."""

        writes_turns = True

        def write(
            self, fd: int, data: bytes, written: Callable[[int], None] | None = None, cpu_clock: CpuClock | None = None
        ) -> TurnWrite:
            turn = TurnWrite(fd, data, written, cpu_clock)
            turn.handed, turn.start_ns = True, 123
            return turn

    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    send_stream = trio.lowlevel.FdStream(write_fd)
    channel = BotChannel("test", send_stream, trio.testing.MemoryReceiveStream())
    channel._reader = Midway()  # type: ignore[assignment]
    channel.session = session_in(State.BETWEEN_TURNS)
    try:
        turn = await channel.send_turn(TURN)
        assert turn.start_ns == 123
        with pytest.raises(BlockingIOError):
            os.read(read_fd, 1024)  # the loop wrote nothing: the line is the thread's to write
    finally:
        await send_stream.aclose()
        os.close(read_fd)


@pytest.mark.parametrize("slow", [False, True])
def test_a_slow_turn_write_reads_the_bot_s_cpu_clock(monkeypatch: pytest.MonkeyPatch, slow: bool) -> None:
    """A first write call over `SLOW_WRITE_NS` (its writer preempted) notes the bot's CPU clock as it returns, so that
    the game can tell a writer preempted by the bot it woke (the bot ran: no lateness) from one preempted before."""
    from referee import reader

    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        written = real_write(fd, data)
        if slow:
            time.sleep(2 * reader.SLOW_WRITE_NS / 1e9)  # preempted after the line went in
        return written

    monkeypatch.setattr(os, "write", write)  # the module reader.py writes with
    clock_reads: list[int] = []

    def cpu_clock() -> int:
        clock_reads.append(1)
        return 123_456_789

    r, w = os.pipe()
    try:
        turn = TurnWrite(w, b"turn\n", cpu_clock=cpu_clock)
        turn.write()
        assert turn.done and os.read(r, 64) == b"turn\n"
        if slow:
            assert turn.write_ns > reader.SLOW_WRITE_NS and turn.write_cpu_ns == 123_456_789 and clock_reads == [1]
        else:
            assert turn.write_ns < reader.SLOW_WRITE_NS and turn.write_cpu_ns is None and clock_reads == []
    finally:
        os.close(r)
        os.close(w)
