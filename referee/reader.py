"""Reading a bot's output on a thread of its own, each chunk stamped with the time the bot wrote it.

On Linux a bot's stdout is one end of a `SOCK_SEQPACKET` socket pair (`stdout_pair`), not a pipe: the
kernel keeps each write as a record and stamps it (`SO_TIMESTAMPNS`) in the bot's own write call, so a move
ends at the bot's write whatever the referee's threads were doing then (waiting for a CPU behind another
bot, or for the interpreter lock held by the event loop: with two bots spinning on two cores, both cost
milliseconds now and then, measured). Elsewhere, and for any read that comes without a stamp, the time is
the one below.

A move ends when its line's last byte is read. If the trio event loop did the reading, the time would be
taken when the loop got round to it, and everything the referee does for other games (standings, records,
encoding, logging) would be charged to the bot whose reply waited meanwhile. A `PipeReader` blocks in
`poll` on the pipe in its own thread and takes `time.monotonic_ns()` as soon as `os.read` returns, then
hands the chunk and its time to trio. It also notes how long the thread waited on the run queue before that
read (its scheduling delay, from `/proc/thread-self/schedstat` where the kernel has it), which
`referee.latency` counts as the referee's own lateness.

A reader pinned to its bot's cores (`--cpu-affinity`) also writes the bot's turns (`PipeReader.write`), and
the bot's time starts in that thread just before its write call: the bot wakes on its own core, at once,
where a turn written from the event loop's core had to wake another CPU first (on this VM an idle virtual
CPU halts, and waking it took up to a millisecond). Handing the turn to the thread is the referee's time.

The interpreter switch interval is lowered (`sys.setswitchinterval`) while readers run, so a reader
waiting for the interpreter lock gets it within a fraction of a millisecond even when the loop is busy.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import select
import socket
import stat
import struct
import sys
import termios
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

import trio

from protocol.framing import MAX_LINE_BYTES

__all__ = [
    "SWITCH_INTERVAL_S",
    "Chunk",
    "InputClosedError",
    "PipeReader",
    "StderrCopier",
    "TurnWrite",
    "stamped_stdout",
    "stdout_pair",
]

log = logging.getLogger(__name__)

CHUNK_BYTES = 65536
SWITCH_INTERVAL_S = 0.0002
"""The interpreter switch interval while readers run (Python's default is 5 ms)."""

STAMPED_SNDBUF = 1 << 18
"""The send buffer asked for on the bot's end of a stamped stdout (the kernel doubles it): its longest write."""
_RECORD_BYTES = 1 << 21
"""The reader's buffer for one record: above any write the send buffer lets through, unless the bot raised it."""
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's value where Python does not name it
_ANCILLARY_BYTES = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 64
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_STOP_DRAIN_CHUNKS = 16
"""At most this many chunks are taken from a bot's stderr once its copy is stopped."""
STDERR_DRAIN_S = 0.02
"""How often a bot's stderr is drained (0: at every write). Not at every write: a bot's last log line before
its move would wake the copy thread, which then takes the bot's CPU in the instant before the move is written."""
STDERR_PIPE_BYTES = 1 << 20
"""The stderr pipe's capacity asked for (the default 64 KiB fills in one drain period at 3 MB/s)."""
_SETTLE_CHECK_S = 0.01
"""While settling, how often the counts are looked at again even without a wake (a lost wake costs no more)."""

Chunk = tuple[bytes, int, int]
"""(data, monotonic ns when the read returned, the reader's run-queue wait before it in ns); b"" is the end."""

_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.005


def _lower_switch_interval() -> None:
    global _switch_users, _switch_saved
    with _switch_lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_saved, SWITCH_INTERVAL_S))
        _switch_users += 1


def _restore_switch_interval() -> None:
    global _switch_users
    with _switch_lock:
        _switch_users -= 1
        if _switch_users == 0:
            sys.setswitchinterval(_switch_saved)


def _run_delay_reader() -> tuple[int | None, bool]:
    """An open fd on this thread's schedstat (None: the kernel has none), and whether it can be read."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None, False
    return fd, True


def _run_delay(fd: int) -> int:
    """The thread's total run-queue wait so far, ns (second field of schedstat)."""
    fields = os.pread(fd, 96, 0).split()
    return int(fields[1]) if len(fields) > 1 else 0


def stdout_pair() -> tuple[int, int]:
    """(the referee's end, the bot's end) for a bot's stdout: a stamped socket pair on Linux, else a pipe.

    Both ends are closed on exec (the bot gets its end as fd 1 only). The referee's end cannot write and
    the bot's cannot read: it behaves as a pipe for the bot, except that one write larger than about
    512 KiB fails (its lines may be 64 KiB at most in any case, PROTOCOL.md).
    """
    if sys.platform != "linux" or not hasattr(socket, "SOCK_SEQPACKET"):
        return os.pipe()
    try:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:
        return os.pipe()
    try:
        ours.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, STAMPED_SNDBUF)
        ours.shutdown(socket.SHUT_WR)
    except OSError:
        ours.close()
        theirs.close()
        return os.pipe()
    return ours.detach(), theirs.detach()


def stamped_stdout() -> bool:
    """Whether a bot's stdout here is a socket that stamps each write (`stdout_pair`), not a plain pipe."""
    ours, theirs = stdout_pair()
    try:
        sock = _stamped_socket(ours)
        if sock is None:
            return False
        sock.detach()
        return True
    finally:
        os.close(ours)
        os.close(theirs)


def _stamped_socket(fd: int) -> socket.socket | None:
    """A socket object over `fd` if it is a socket that stamps what it receives (`stdout_pair`), else None."""
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return None
        sock = socket.socket(fileno=fd)
    except OSError:
        return None
    try:
        if sock.getsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS):
            return sock
    except OSError:
        pass
    sock.detach()
    return None


def _receive_record(sock: socket.socket, buffer: memoryview) -> tuple[bytes, int | None] | None:
    """One of the bot's writes and when it was made (monotonic ns; None if the kernel gave no stamp).

    None for an empty write. b"" at the end of the output. The kernel's stamp is wall-clock time, turned into
    the monotonic clock by the two clocks' difference now. A write larger than the buffer (the bot raised its
    own socket's send buffer to make one) is cut, and a line longer than any allowed is added in its place,
    so the bot loses for the flood (reason `protocol`) rather than have lines silently dropped.
    """
    size, ancillary, flags, _ = sock.recvmsg_into([buffer], _ANCILLARY_BYTES)
    sent = None
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(payload) >= 16:
            seconds, nanoseconds = struct.unpack("qq", payload[:16])
            wall, monotonic = time.time_ns(), time.monotonic_ns()
            sent = seconds * 1_000_000_000 + nanoseconds - (wall - monotonic)
    if size == 0 and sent is not None:
        return None
    data = buffer[:size].tobytes()
    if flags & socket.MSG_TRUNC:
        log.warning("a bot wrote more than %d bytes in one write to stdout: counted as an over-long line", size)
        data += b"x" * (MAX_LINE_BYTES + 1)
    return data, sent


def _pin(cores: Sequence[int] | None) -> None:
    """Keep the calling thread on `cores` (its bot's, under --cpu-affinity), if any.

    A bot's reader wakes when the bot writes its move, the instant the bot is about to sleep: on the bot's
    own core it runs at once. Free to run anywhere, the kernel often queued it behind the other game's bot on
    the other core, for up to a scheduler tick (4 ms here), while the bot's own core stood idle.
    """
    if cores:
        with contextlib.suppress(OSError, AttributeError):  # no affinity on this OS, or cores gone: run anywhere
            os.sched_setaffinity(0, cores)


class InputClosedError(Exception):
    """A turn could not be written to the bot: it closed its input."""


CpuClock = Callable[[], int | None]
"""A bot's CPU clock: its process's CPU time so far, ns (None if unknown)."""

SLOW_WRITE_NS = 500_000
"""A turn's first write call that took longer than this (the writer was preempted) reads the bot's CPU clock."""


class TurnWrite:
    """A turn line on its way to a bot, and when its time started: `start_ns` (monotonic ns immediately before
    the first write call; None until that call is made). `written(start_ns)` is called once the whole line is
    in the pipe (in the thread that wrote its last byte); `failed` once a write failed (the bot closed its input).
    """

    __slots__ = (
        "cpu_clock",
        "data",
        "failed",
        "fd",
        "handed",
        "sent",
        "start_ns",
        "write_cpu_ns",
        "write_ns",
        "written",
    )

    def __init__(
        self,
        fd: int,
        data: bytes,
        written: Callable[[int], None] | None = None,
        cpu_clock: CpuClock | None = None,
    ) -> None:
        self.fd = fd
        self.data = data
        self.written = written
        self.cpu_clock = cpu_clock
        """The bot's CPU clock (ns), read after a slow first write call (`write_cpu_ns`)."""
        self.start_ns: int | None = None
        self.sent = 0
        self.failed = False
        self.handed = False
        """Handed to a reader thread (`PipeReader.write`): the thread writes all of it, and no one else may."""
        self.write_ns = 0
        """How long the first write call took from the start: microseconds, unless the writer was preempted. Before
        the line went in, that is the referee's lateness (the bot got its turn that much later); after it, the
        bot was running (on a shared core, the bot it woke takes the writer's CPU), which `write_cpu_ns` tells."""
        self.write_cpu_ns: int | None = None
        """After a first write call slower than `SLOW_WRITE_NS`: the bot's CPU clock as it returned (None: not
        read, or not known). The bot's CPU time used during the call was time it had its turn."""

    @classmethod
    def made(cls, data: bytes, start_ns: int) -> TurnWrite:
        """A turn already written whole by the caller, its time started at `start_ns`."""
        turn = cls(-1, data)
        turn.start_ns, turn.sent = start_ns, len(data)
        return turn

    @property
    def done(self) -> bool:
        """Whether nothing more is left to write (all of it written, or a write failed)."""
        return self.failed or self.sent >= len(self.data)

    def write(self) -> None:
        """Write what is left without blocking (the first call notes the start); `written` when it is all in."""
        first = self.start_ns is None
        if self.start_ns is None:
            self.start_ns = time.monotonic_ns()
        try:
            self.sent += os.write(self.fd, self.data[self.sent :] if self.sent else self.data)
        except BlockingIOError:
            pass
        except OSError:
            self.failed = True
            return
        finally:
            if first:
                self.write_ns = time.monotonic_ns() - self.start_ns
                if self.write_ns > SLOW_WRITE_NS and self.cpu_clock is not None:
                    self.write_cpu_ns = self.cpu_clock()
        if self.sent >= len(self.data) and self.written is not None:
            self.written(self.start_ns)


class PipeReader:
    """Reads one pipe (or stamped socket) on a daemon thread; `receive` gives the chunks, in order, with their times."""

    def __init__(self, fd: int, name: str, cores: Sequence[int] | None = None) -> None:
        self._fd = fd
        self._cores = cores
        self._chunks: deque[Chunk] = deque()
        self._waiter: trio.Event | None = None
        self._token = trio.lowlevel.current_trio_token()
        self._wake_r, self._wake_w = os.pipe()
        self._closed = False
        self._reads_started = 0
        """Reads the thread has begun (it saw data); with `_reads_done`, what is in the thread's hands."""
        self._reads_done = 0
        """Reads the thread has finished: their chunk (if any) is queued before this count moves."""
        self._writes: deque[TurnWrite] = deque()
        """Turns the thread is asked to write (`write`), in order."""
        self.input_failed = False
        """A turn could not be written: the bot closed its input (`receive` raises `InputClosedError`)."""
        self._write_lock = threading.Lock()
        self._stopped = False
        """The thread has ended (or is ending): `write` writes itself."""
        _lower_switch_interval()
        self.stamped = False
        """The bot's writes come stamped by the kernel (`stdout_pair`): each chunk's time is the bot's write, however
        late this thread or the referee ran. Set as the thread starts, before its first read."""
        self._thread = threading.Thread(target=self._run, name=f"reader-{name}", daemon=True)
        self._thread.start()

    # -- the thread -------------------------------------------------------------------------------------------

    def _run(self) -> None:
        _pin(self._cores)
        stamped = _stamped_socket(self._fd)
        self.stamped = stamped is not None
        # Stamped reads need no run-queue wait: how late this thread reads costs nobody anything.
        schedstat = _run_delay_reader()[0] if stamped is None else None
        buffer = memoryview(bytearray(_RECORD_BYTES)) if stamped is not None else None
        try:
            last_delay = _run_delay(schedstat) if schedstat is not None else 0
            poller = select.poll()
            poller.register(self._fd, select.POLLIN)
            poller.register(self._wake_r, select.POLLIN)
            writing: TurnWrite | None = None  # a turn the bot's full pipe did not take all of yet
            while True:
                events = poller.poll()
                ready = {fd for fd, _ in events}
                if self._wake_r in ready and not os.read(self._wake_r, 64):  # the other end closed: stop
                    return
                if writing is not None and writing.fd in ready:
                    writing.write()
                    if writing.done:
                        poller.unregister(writing.fd)
                        self._end_write(writing)
                        writing = None
                while writing is None and self._writes:
                    request = self._writes.popleft()
                    request.write()
                    if request.done:
                        self._end_write(request)
                    else:
                        writing = request
                        poller.register(request.fd, select.POLLOUT)
                if self._fd not in ready:
                    continue
                self._reads_started += 1
                sent: int | None = None
                try:
                    if stamped is None or buffer is None:
                        data = os.read(self._fd, CHUNK_BYTES)
                    else:
                        record = _receive_record(stamped, buffer)
                        if record is None:  # an empty write: nothing to hand over
                            raise BlockingIOError
                        data, sent = record
                except BlockingIOError:
                    self._reads_done += 1
                    self._wake_trio()
                    continue
                except OSError:
                    data = b""
                stamp = time.monotonic_ns()
                delay = 0
                if schedstat is not None:
                    total = _run_delay(schedstat)
                    delay, last_delay = total - last_delay, total
                if sent is not None:
                    # Stamped at the bot's write: how late this thread read it is nobody's time.
                    stamp, delay = min(stamp, sent), 0
                self._chunks.append((data, stamp, delay))
                self._reads_done += 1
                if not self._wake_trio() or not data:
                    return
        finally:
            self._reads_done = self._reads_started
            with self._write_lock:
                self._stopped = True
            for unfinished in (writing, *self._writes):  # still on its way, or asked for as the thread ended
                if unfinished is not None:
                    if unfinished.start_ns is None:
                        unfinished.write()
                    if not unfinished.done:
                        unfinished.failed = True  # no one is left to write the rest
                    self._end_write(unfinished)
            self._writes.clear()
            if stamped is not None:
                stamped.detach()  # the fd belongs to the process's stream
            if schedstat is not None:
                os.close(schedstat)
            os.close(self._wake_r)

    def _end_write(self, request: TurnWrite) -> None:
        """A turn is written, or could not be: the event loop is told only of a failure (it does not wait for
        a write that went through: woken now, it would take the bot's core in the instant the bot should run)."""
        if request.failed:
            self.input_failed = True
            self._wake_trio()

    # -- the trio side ----------------------------------------------------------------------------------------

    @property
    def writes_turns(self) -> bool:
        """Whether this reader writes its bot's turns (`write`): it is pinned to the bot's cores."""
        return bool(self._cores) and not self._closed

    def write(
        self,
        fd: int,
        data: bytes,
        written: Callable[[int], None] | None = None,
        cpu_clock: CpuClock | None = None,
    ) -> TurnWrite:
        """Have the thread write `data` to `fd` (non-blocking) and return at once; the bot's time starts in the
        thread immediately before its write call (`TurnWrite.start_ns`). Only for a reader that `writes_turns`.

        Written from the bot's own core, the turn wakes the bot there at once. Written from the event loop's
        core, it must wake the bot's core, which an idle virtual CPU halted: on this VM that took up to a
        millisecond, charged to the bot (ftrace showed such wakes in the referee-minus-bot tail at two games
        at once). Nor does the thread wake the event loop once the turn is written: the loop, woken on the
        bot's core, ran there for about 70 us before the bot could (ftrace). The loop learns the start when
        the reply comes (read by this same thread, after the write) or when it next looks.
        If the bot's pipe is full, the thread writes the rest as the bot reads; if the write fails, `receive`
        raises `InputClosedError`.
        """
        request = TurnWrite(fd, data, written, cpu_clock)
        with self._write_lock:
            if not self._stopped:
                request.handed = True
                self._writes.append(request)
                os.write(self._wake_w, b"w")
                return request
        request.write()  # the bot's output has ended: no thread to hand it to (the caller writes any rest)
        return request

    def _wake_trio(self) -> bool:
        """Have `_notify` run on the trio loop; False once the loop has ended (nothing to hand over to)."""
        try:
            self._token.run_sync_soon(self._notify)
        except trio.RunFinishedError:
            return False
        return True

    def _notify(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    async def receive(self) -> Chunk:
        """The next chunk (b"" at the end of the output). Cancel-safe: nothing is taken until it returns."""
        while not self._chunks:
            if self._closed:
                return b"", time.monotonic_ns(), 0
            if self.input_failed:
                raise InputClosedError
            waiter = self._waiter = trio.Event()
            await waiter.wait()
        return self._chunks.popleft()

    def take_nowait(self) -> Chunk | None:
        """The next chunk if the thread has one ready, else None."""
        return self._chunks.popleft() if self._chunks else None

    def unread_bytes(self) -> int:
        """Bytes that have arrived but are not handed over yet (in the pipe, or being read by the thread).

        The pipe is asked first and the thread's state after it, so that bytes the thread takes in between
        are still seen (as a read in flight, or as a chunk waiting). A read in flight counts as one byte.
        """
        if self._closed:
            return 0
        buffer = bytearray(4)
        try:
            fcntl.ioctl(self._fd, termios.FIONREAD, buffer)
        except OSError:
            return 0
        waiting = int.from_bytes(buffer, sys.byteorder)
        return waiting or int(self._reads_started != self._reads_done) or len(self._chunks)

    async def settle(self) -> Chunk | None:
        """The next chunk if one is queued or in the thread's hands (waiting for it), else None.

        Unlike `receive`, it never waits for the bot to write more: it returns None as soon as the pipe is
        empty and no read is in flight, however the thread's progress and this check interleave (a read that
        finds nothing, or a chunk taken while its read was still counted as in flight, ends the wait).
        """
        while not self._chunks:
            if not self.unread_bytes():
                return None
            waiter = self._waiter = trio.Event()
            # The thread wakes trio after every read, with or without a chunk; the next turn of this loop
            # looks at the counts again.
            with trio.move_on_after(_SETTLE_CHECK_S):
                await waiter.wait()
        return self._chunks.popleft()

    async def close(self) -> None:
        """Stop the thread (before the pipe is closed, so that it never reads a reused descriptor)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            os.close(self._wake_w)
        await trio.to_thread.run_sync(self._thread.join, 2.0)
        _restore_switch_interval()
        self._notify()


class StderrCopier:
    """Copies a bot's stderr to its log file on a daemon thread, keeping a tail of lines for the records.

    The pipe is drained every `STDERR_DRAIN_S` rather than at each write (and at once when the copy is stopped,
    so a record's tail is complete).

    Bots often write a line to stderr just before their move. Copied by a task on the event loop, that line
    woke the loop, which then held the interpreter lock while the move arrived, and the move's reader thread
    waited for it (about 0.3 ms a move, measured): the copy belongs off the loop, where it costs the lock only
    for the few microseconds of its own Python. `on_chunk(data)` is called on the thread for every chunk (it must
    be thread-safe); `done` is set on the trio loop when the copy ends (end of output, or `stop`).
    """

    def __init__(
        self,
        fd: int,
        log_path: Path,
        cap_bytes: int,
        on_chunk: Callable[[bytes], None],
        name: str,
        cores: Sequence[int] | None = None,
    ) -> None:
        self._fd = fd
        self._cores = cores
        self._log_path = log_path
        self._cap_bytes = cap_bytes
        self._on_chunk = on_chunk
        self.copied = 0
        """Bytes read from the pipe so far (the log keeps only the first `cap_bytes`)."""
        self.done = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        self._wake_r, self._wake_w = os.pipe()
        self._stopped = False
        if STDERR_DRAIN_S:
            with contextlib.suppress(OSError):  # a smaller pipe still works: a flooding bot waits for the drain
                fcntl.fcntl(fd, _F_SETPIPE_SZ, STDERR_PIPE_BYTES)
        self._thread = threading.Thread(target=self._run, name=f"stderr-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        _pin(self._cores)
        log_file = None
        try:
            try:
                log_file = open(self._log_path, "wb", buffering=0)  # noqa: SIM115 (closed in finally)
            except OSError as error:
                log.warning("cannot write the stderr log %s: %s (stderr is still read)", self._log_path, error)
            poller = select.poll()
            period_ms = round(STDERR_DRAIN_S * 1000)
            if not period_ms:
                poller.register(self._fd, select.POLLIN)
            poller.register(self._wake_r, select.POLLIN)
            while True:
                events = poller.poll(period_ms or None)
                stopping = any(fd == self._wake_r for fd, _ in events)
                # On stop, take what is already in the pipe first (never waiting for more, and never more than
                # `_STOP_DRAIN_CHUNKS`: a process that escaped every net may write as fast as it is read).
                for _ in range(_STOP_DRAIN_CHUNKS if stopping or period_ms else 1):
                    try:
                        data = os.read(self._fd, CHUNK_BYTES)
                    except BlockingIOError:
                        break
                    except OSError:
                        data = b""
                    if not data:
                        return
                    self._copy(data, log_file)
                if stopping:
                    return
        finally:
            if log_file is not None:
                with contextlib.suppress(OSError):
                    log_file.close()
            os.close(self._wake_r)
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self.done.set)

    def _copy(self, data: bytes, log_file: BinaryIO | None) -> None:
        written, cap = self.copied, self._cap_bytes
        self.copied += len(data)
        if log_file is not None and written < cap:
            try:
                log_file.write(data[: cap - written])
                if self.copied >= cap:
                    log_file.write(f"\n[stderr log capped at {cap} bytes]\n".encode())
            except OSError as error:
                log.warning("cannot write the stderr log %s: %s", self._log_path, error)
                self._cap_bytes = written  # stop trying; the tail is still kept
        self._on_chunk(data)

    async def stop(self) -> None:
        """End the copy (taking what is in the pipe already) and wait for the thread: before the pipe is closed."""
        if not self._stopped:
            self._stopped = True
            with contextlib.suppress(OSError):
                os.close(self._wake_w)
        await trio.to_thread.run_sync(self._thread.join, 2.0)
