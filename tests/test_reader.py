"""A bot's output as the game's loop reads it (chunks with their times), the turn's write, the stderr copy.

Real pipes and real stamped sockets: a chunk's time is the bot's write where the kernel stamps it, the
moment of the read otherwise; catching up takes what is there and never waits.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import trio
import trio.testing

from protocol.framing import MAX_LINE_BYTES
from protocol.rules import Position
from protocol.session import State
from referee.play import loop as loop_module
from referee.play.loop import RELAY_INTERVAL_S, MoveBatches, relay_due_ns, until_next_relay_s
from referee.play.process import BotChannel
from referee.play.reader import (
    OutputReader,
    StderrCopier,
    TurnWrite,
    held_moves,
    sole_game_loop,
    stamped_stdout,
    stdout_pair,
)
from referee.record import MoveRecord
from tests.test_session import session_in

TURN = b'{"type":"turn","game_id":"g","moves":[],"clock":{}}\n'


@contextlib.asynccontextmanager
async def reader_on_a_pipe(pair: Callable[[], tuple[int, int]] = os.pipe) -> AsyncIterator[tuple[OutputReader, int]]:
    """A reader on the read end of a fresh `pair()` (a pipe), and the write end; both closed after."""
    read_fd, write_fd = pair()
    reader = OutputReader(read_fd)
    try:
        yield reader, write_fd
    finally:
        await reader.close()
        os.close(write_fd)
        os.close(read_fd)


async def test_a_chunk_comes_with_the_time_its_read_returned() -> None:
    async with reader_on_a_pipe() as (reader, write_fd):
        assert not reader.stamped
        before = time.monotonic_ns()
        os.write(write_fd, b'{"type":"move","move":"pass"}\n')
        data, stamp = await reader.receive()
        assert data == b'{"type":"move","move":"pass"}\n'
        assert before <= stamp <= time.monotonic_ns()
        assert reader.take_nowait() is None  # nothing more: catching up never waits


async def test_a_receive_waits_for_the_bot_and_the_end_of_the_output_is_an_empty_chunk() -> None:
    async with reader_on_a_pipe() as (reader, write_fd):

        async def write_later() -> None:
            await trio.sleep(0.05)
            os.write(write_fd, b"one\n")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_later)
            with trio.fail_after(30):  # a hang, not a timing
                assert (await reader.receive())[0] == b"one\n"
        assert reader.unread_bytes() == 0
        os.write(write_fd, b"two\n")
        assert reader.unread_bytes() == 4
        assert (await reader.receive())[0] == b"two\n"


async def test_catching_up_takes_what_the_bot_wrote_and_returns_at_once() -> None:
    read_fd, write_fd = os.pipe()
    send_stream = trio.lowlevel.FdStream(os.dup(write_fd))
    channel = BotChannel("test", send_stream, trio.testing.MemoryReceiveStream(), reader=OutputReader(read_fd))
    try:
        channel.catch_up()
        assert not channel.has_lines()
        os.write(write_fd, b'{"type":"info","text":"x"}\n{"type":"move","move":"pass"}\n')
        channel.catch_up()
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
        assert copier.done.is_set()
    finally:
        flooding.clear()
        os.close(read_fd)  # the writer's next write fails: it ends
        writer.join(5)
        os.close(write_fd)
    text = log_path.read_bytes()
    assert text.startswith(b"first line\n") and b"[stderr log capped at 100 bytes]" in text
    assert len(text) < 200  # the cap holds whatever came after
    assert b"".join(chunks).startswith(b"first line\n" + b"x" * 200)  # the tail keeper saw everything read


async def test_one_thread_copies_every_bot_s_stderr_each_to_its_own_log(tmp_path: Path) -> None:
    pipes = [os.pipe() for _ in range(5)]
    copiers = [
        StderrCopier(read_fd, tmp_path / f"bot{i}.log", 10_000, lambda data: None, f"bot{i}")
        for i, (read_fd, _) in enumerate(pipes)
    ]
    try:
        for i, (_, write_fd) in enumerate(pipes):
            os.write(write_fd, f"bot {i} says hello\n".encode())
        os.close(pipes[4][1])  # this one's output ends: its copy ends by itself
        with trio.fail_after(30):
            await copiers[4].done.wait()
            while any(copier.copied < len("bot 0 says hello\n") for copier in copiers[:4]):
                await trio.sleep(0.005)
        assert [t.name for t in threading.enumerate()].count("stderr-copier") == 1
        for copier in copiers[:4]:
            await copier.stop()
        for i in range(5):
            assert (tmp_path / f"bot{i}.log").read_bytes() == f"bot {i} says hello\n".encode()
        assert all(copier.done.is_set() for copier in copiers)
    finally:
        for read_fd, write_fd in pipes:
            os.close(read_fd)
            with contextlib.suppress(OSError):
                os.close(write_fd)


def _hub_runs() -> int:
    """How many times the stderr thread has been put on a CPU (its schedstat's count of runs)."""
    (hub,) = [thread for thread in threading.enumerate() if thread.name == "stderr-copier"]
    with open(f"/proc/self/task/{hub.native_id}/schedstat") as stat:
        return int(stat.read().split()[2])


async def test_a_bot_s_start_and_stop_do_not_wake_the_stderr_thread_and_a_stop_takes_what_is_left(
    tmp_path: Path,
) -> None:
    pipes = [os.pipe() for _ in range(20)]
    try:
        first = StderrCopier(pipes[0][0], tmp_path / "first.log", 1_000, lambda data: None, "first")  # the thread
        before = _hub_runs()
        for i, (read_fd, _) in enumerate(pipes[1:], start=1):
            copier = StderrCopier(read_fd, tmp_path / f"bot{i}.log", 1_000, lambda data: None, f"bot{i}")
            await copier.stop()
            assert copier.done.is_set()
        assert _hub_runs() - before < 5  # it was never needed: each start and stop woke it twice before
        await first.stop()
        # What a bot wrote just before its stop is in its log at once, read by the stop itself.
        read_fd, write_fd = os.pipe()
        pipes.append((read_fd, write_fd))
        copier = StderrCopier(read_fd, tmp_path / "last.log", 1_000, lambda data: None, "last")
        os.write(write_fd, b"my last words\n")
        await copier.stop()
        assert (tmp_path / "last.log").read_bytes() == b"my last words\n"
    finally:
        for read_fd, write_fd in pipes:
            for fd in (read_fd, write_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)


async def test_the_stderr_thread_lets_go_of_an_ended_pipe_that_its_owner_still_holds(tmp_path: Path) -> None:
    # The copy ends at the output's end while the bot's owner keeps its own descriptor of the pipe open: the pipe
    # must leave the thread's epoll, or its end, always readable, would wake the thread again and again.
    read_fd, write_fd = os.pipe()
    try:
        copier = StderrCopier(read_fd, tmp_path / "bot.log", 1_000, lambda data: None, "bot")
        os.write(write_fd, b"bye\n")
        os.close(write_fd)
        with trio.fail_after(30):
            await copier.done.wait()
        before = _hub_runs()
        await trio.sleep(0.2)
        assert _hub_runs() - before < 5
        assert (tmp_path / "bot.log").read_bytes() == b"bye\n"
        await copier.stop()  # after the end: nothing left to do
    finally:
        os.close(read_fd)


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
        reader = OutputReader(ours)
        try:
            assert reader.stamped
            data, stamp = await reader.receive()
        finally:
            await reader.close()
        assert data == b'{"type":"move","move":"pass"}\n'
        assert written <= stamp < reading_from  # the write's own time: the 100 ms before the read cost nothing
    finally:
        os.close(theirs)
        os.close(ours)


@needs_stamps
async def test_an_empty_write_is_not_the_end_of_the_output() -> None:
    async with reader_on_a_pipe(stdout_pair) as (reader, theirs):
        os.write(theirs, b"")  # one record of nothing
        os.write(theirs, b"one\n")
        with trio.fail_after(30):
            data, _ = await reader.receive()
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
        assert reader.take_nowait() is None


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
            data, _ = await reader.receive()
        assert len(data) > MAX_LINE_BYTES and b"\n" not in data


@pytest.mark.parametrize("slow", [False, True])
def test_a_slow_turn_write_reads_the_bot_s_cpu_clock(monkeypatch: pytest.MonkeyPatch, slow: bool) -> None:
    """A first write call over `SLOW_WRITE_NS` (its writer preempted) notes the bot's CPU clock as it returns, so that
    the game can tell a writer preempted by the bot it woke (the bot ran: no lateness) from one preempted before."""
    from referee.play import reader

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


def test_batches_of_moves_are_due_on_the_whole_seconds_of_the_monotonic_clock() -> None:
    # Every process of the machine reads the same monotonic clock: two slots' batches (and the coordinator's tick,
    # `until_next_relay_s`) come due at the same instants, so the host wakes once for them all.
    interval = round(RELAY_INTERVAL_S * 1e9)
    assert relay_due_ns(7 * interval) == 8 * interval
    assert relay_due_ns(7 * interval + 1) == relay_due_ns(8 * interval - 1) == 8 * interval
    assert 0 < until_next_relay_s() <= RELAY_INTERVAL_S
    sent: list[list[str]] = []
    first, second = (MoveBatches(lambda moves: sent.append([move.move for move, _ in moves])) for _ in range(2))
    position = Position(3, 3)
    for batches in (first, second):
        # A game's start counts as a batch: its first moves are held until the next whole second.
        batches.start()
        batches.push(MoveRecord.model_construct(move="a1b1"), position)
        batches.push(MoveRecord.model_construct(move="pass"), position)
    due = first.due_ns()
    assert due is not None and due % interval == 0 and due - time.monotonic_ns() <= interval
    assert second.due_ns() in (due, due + interval)  # the same second, unless one just began between the pushes
    assert sent == []
    first.flush_due()
    assert sent == [["a1b1", "pass"]] and first.due_ns() is None
    # What a game ends with goes with its record, by the caller: taken, no longer held.
    assert [move.move for move, _ in second.take()] == ["a1b1", "pass"] and second.due_ns() is None
    assert second.take() == [] and sent == [["a1b1", "pass"]]
    # Where nothing hands held moves on when due (a Dask worker's loop), no start is counted: the first goes at once.
    unstarted = MoveBatches(lambda moves: sent.append([move.move for move, _ in moves]))
    unstarted.push(MoveRecord.model_construct(move="b1c1"), position)
    assert sent[-1] == ["b1c1"]


def test_a_move_after_a_pause_past_the_due_second_goes_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    interval = round(RELAY_INTERVAL_S * 1e9)
    clock = [7 * interval + 5]
    monkeypatch.setattr(loop_module, "time", SimpleNamespace(monotonic_ns=lambda: clock[0]))
    sent: list[list[str]] = []
    batches = MoveBatches(lambda moves: sent.append([move.move for move, _ in moves]))
    batches.start()
    position = Position(3, 3)
    batches.push(MoveRecord.model_construct(move="a1b1"), position)  # within the game's first second: held
    assert sent == [] and batches.due_ns() == 8 * interval
    clock[0] = 9 * interval + 1  # the next move came after the due second: it goes at once, with the held one
    batches.push(MoveRecord.model_construct(move="b1c1"), position)
    assert sent == [["a1b1", "b1c1"]] and batches.due_ns() is None
    batches.push(MoveRecord.model_construct(move="pass"), position)  # then held again, to the next whole second
    assert sent == [["a1b1", "b1c1"]] and batches.due_ns() == 10 * interval


def test_a_move_held_for_a_batch_is_handed_on_by_the_wait_for_the_next_reply() -> None:
    # Two moves at once: both wait for the next batch (the game's start counted as one). The bot then thinks for
    # longer than a batch: the held moves must go while the referee waits for its reply, not once the reply comes.
    sent: list[list[str]] = []
    batches = MoveBatches(lambda moves: sent.append([move.move for move, _ in moves]))
    batches.start()
    position = Position(3, 3)
    ours, theirs = stdout_pair()
    interrupt_r, interrupt_w = os.pipe()
    try:
        reader = OutputReader(ours)
        with sole_game_loop([interrupt_r]), held_moves(batches.due_ns, batches.flush_due):
            batches.push(MoveRecord.model_construct(move="a1b1"), position)
            batches.push(MoveRecord.model_construct(move="pass"), position)
            assert sent == [] and batches.due_ns() is not None
            # No reply comes: the wait times out, having handed on the held moves on the way (they are due within a
            # batch's interval, on the next whole second of the clock).
            due = batches.due_ns()
            assert due is not None and reader.wait(due + 50_000_000) == "timeout"
        assert sent == [["a1b1", "pass"]] and batches.due_ns() is None
    finally:
        for fd in (ours, theirs, interrupt_r, interrupt_w):
            os.close(fd)
