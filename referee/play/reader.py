"""A bot's output as the game's event loop reads it, each chunk stamped with the time the bot wrote it.

On Linux a bot's stdout is one end of a `SOCK_SEQPACKET` socket pair (`stdout_pair`), not a pipe: the
kernel keeps each write as a record and stamps it (`SO_TIMESTAMPNS`) in the bot's own write call, so a move
ends at the bot's write whatever the referee was doing then. Elsewhere the time is the moment the read
returned. Either way the reading is done by the event loop that plays the bot's games (`referee.play.loop`), which
runs beside the bot on its cores and does nothing else while the bot thinks: no reader thread, no hand-over.

The turn is written the same way, from that loop (`TurnWrite`): the bot's time starts immediately before the
write call. With the loop pinned to the bot's cores (--cpu-affinity), the write wakes the bot on its own
core at once; woken from another core, a halted virtual CPU took up to a millisecond to run it (ftrace).

Every bot's stderr is copied to its log by one thread of the process (`StderrCopier`), at most every
`STDERR_DRAIN_S` for a bot that writes to it all the time, not at all for one that does not; what is left at
a bot's stop is read by the stop itself.
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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import trio

from protocol.framing import MAX_LINE_BYTES
from referee.host import process_wide
from referee.outputs.files import open_output_fd

__all__ = [
    "Chunk",
    "OutputReader",
    "StderrCopier",
    "TurnWrite",
    "held_moves",
    "sole_game_loop",
    "stamped_stdout",
    "stdout_pair",
]

log = logging.getLogger(__name__)

CHUNK_BYTES = 65536

STAMPED_SNDBUF = 1 << 18
"""The send buffer asked for on the bot's end of a stamped stdout (the kernel doubles it): its longest write."""
_RECORD_BYTES = 1 << 21
"""The reader's buffer for one record: above any write the send buffer lets through, unless the bot raised it."""
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's value where Python does not name it
_ANCILLARY_BYTES = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 64
_STAMP = struct.Struct("qq")  # a timespec: seconds, nanoseconds
_MSG_TRUNC = int(socket.MSG_TRUNC)  # a plain int: the flag enum's `&` costs more than the rest of a record's read
_SOL_SOCKET = int(socket.SOL_SOCKET)
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_STOP_DRAIN_CHUNKS = 16
"""At most this many chunks are taken from a bot's stderr once its copy is stopped."""
STDERR_DRAIN_S = 0.02
"""How often a bot's stderr is drained (0: at every write). Not at every write: a bot's last log line before
its move would wake the copy thread, which then takes the bot's CPU in the instant before the move is written."""
STDERR_PIPE_BYTES = 1 << 20
"""The stderr pipe's capacity asked for (the default 64 KiB fills in one drain period at 3 MB/s)."""

Chunk = tuple[bytes, int]
"""(data, monotonic ns when the bot wrote it, or when the read returned where the kernel gives no stamp); b"" is
the end."""


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
        if level == _SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(payload) >= 16:
            seconds, nanoseconds = _STAMP.unpack_from(payload)
            wall, monotonic = time.time_ns(), time.monotonic_ns()
            sent = seconds * 1_000_000_000 + nanoseconds - (wall - monotonic)
    if size == 0 and sent is not None:
        return None
    data = buffer[:size].tobytes()
    if flags & _MSG_TRUNC:
        log.warning("a bot wrote more than %d bytes in one write to stdout: counted as an over-long line", size)
        data += b"x" * (MAX_LINE_BYTES + 1)
    return data, sent


CpuClock = Callable[[], int | None]
"""A bot's CPU clock: its process's CPU time so far, ns (None if unknown)."""

SLOW_WRITE_NS = 500_000
"""A turn's first write call that took longer than this (the writer was preempted) reads the bot's CPU clock."""


class TurnWrite:
    """A turn line on its way to a bot, and when its time started: `start_ns` (monotonic ns immediately before
    the first write call; None until that call is made). `written(start_ns)` is called once the whole line is
    in the pipe; `failed` once a write failed (the bot closed its input).
    """

    __slots__ = (
        "cpu_clock",
        "data",
        "failed",
        "fd",
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


_sole = threading.local()


@contextlib.contextmanager
def sole_game_loop(interrupt_fds: Sequence[int]) -> Iterator[None]:
    """Declare the calling thread's event loop one that plays one game at a time and does nothing else that
    cannot wait (`referee.play.loop`): its game may then wait for a bot's reply in a blocking poll (`OutputReader.wait`)
    rather than through the loop, which costs a move tens of microseconds. `interrupt_fds` become readable when
    the loop has other work (a cancellation, a message from the coordinator): the poll returns for them.

    They must stay readable until the loop has done that work (the poll does not read them: a wake consumed
    before the work ran would leave the next poll waiting for a wake that already came), and the game checks for
    a cancellation before each poll (`trio.lowlevel.checkpoint_if_cancelled`): work done since it last yielded."""
    _sole.interrupts = list(interrupt_fds)
    try:
        yield
    finally:
        _sole.interrupts = None


@contextlib.contextmanager
def held_moves(due_ns: Callable[[], int | None], flush: Callable[[], None]) -> Iterator[None]:
    """While a game plays in a sole game loop (`sole_game_loop`): the moves it holds back for a batch
    (`referee.play.loop.MoveBatches`) are handed on (`flush()`) by its blocking wait for a reply once they are due
    (`due_ns()`, monotonic ns; None: none held), not only at its next move: a move is never held longer than
    the batch allows, however long the next one takes."""
    previous = getattr(_sole, "held", None)
    _sole.held = (due_ns, flush)
    try:
        yield
    finally:
        _sole.held = previous


_buffers = threading.local()


def _record_buffer() -> memoryview:
    """The buffer a stamped socket's records are received into, one per reading thread: each record is copied out
    as it is read (`_receive_record`), so every bot read on a thread can share it. One per bot cost a 2 MiB
    allocation at every bot's start (0.3 ms, measured)."""
    buffer: memoryview | None = getattr(_buffers, "buffer", None)
    if buffer is None:
        buffer = _buffers.buffer = memoryview(bytearray(_RECORD_BYTES))
    return buffer


class OutputReader:
    """Reads a bot's stdout (a stamped socket or a pipe) in the event loop that plays its games.

    Each chunk comes with when the bot wrote it: the kernel's stamp on a stamped socket (the bot's own write
    call, however late this loop ran), else the moment the read returned. The loop that reads is the game's own
    (`referee.play.loop`), pinned with the bot to its cores under --cpu-affinity and busy with nothing else while the
    bot thinks, so a pipe's read time is close to the write too. No thread and no hand-over: a move costs one
    wake of the game's loop and one read.
    """

    def __init__(self, fd: int, exit_fd: Callable[[], int] = lambda: -1) -> None:
        self._fd = fd
        self._exit_fd = exit_fd
        """The writer's process exit, as a pidfd (-1: none known): a blocking `wait` returns for it."""
        self._closed = False
        self._stamped = _stamped_socket(fd)
        self.stamped = self._stamped is not None
        """The bot's writes come stamped by the kernel (`stdout_pair`): each chunk's time is the bot's write."""
        self._poller: select.poll | None = None
        self._watched: list[int] | None = None
        self._watched_exit = -1
        """The descriptors besides the bot's output that `_poller` watches (`wait`)."""
        os.set_blocking(fd, False)

    def take_nowait(self) -> Chunk | None:
        """The next chunk if the bot has written one (b"" at the end of the output), else None."""
        if self._closed:
            return b"", time.monotonic_ns()
        sock = self._stamped
        if sock is None:
            try:
                return os.read(self._fd, CHUNK_BYTES), time.monotonic_ns()
            except BlockingIOError:
                return None
            except OSError:
                return b"", time.monotonic_ns()
        buffer = _record_buffer()
        while True:
            try:
                record = _receive_record(sock, buffer)
            except BlockingIOError:
                return None
            except OSError:
                return b"", time.monotonic_ns()
            if record is not None:  # None: an empty write, nothing to hand over
                data, sent = record
                now = time.monotonic_ns()
                return data, now if sent is None else min(now, sent)

    def wait(self, until_ns: int) -> str | None:
        """In a sole game loop (`sole_game_loop`): block until the bot has written ("ready"), `until_ns` (monotonic)
        has come ("timeout"), or the loop has other work ("interrupted"). None elsewhere, and when the bot's
        process has exited (its pidfd readable): the caller waits through the event loop."""
        sole = _sole.__dict__
        interrupts: list[int] | None = sole.get("interrupts")
        if interrupts is None or self._closed:
            return None
        exit_fd = self._exit_fd()
        poller = self._poller
        if poller is None or exit_fd != self._watched_exit or interrupts is not self._watched:
            poller = self._poller = select.poll()  # built once a bot, not once a move
            self._watched, self._watched_exit = interrupts, exit_fd
            poller.register(self._fd, select.POLLIN)
            for fd in (*interrupts, exit_fd):
                if fd >= 0:
                    poller.register(fd, select.POLLIN)
        held: tuple[Callable[[], int | None], Callable[[], None]] | None = sole.get("held")
        while True:
            wake_ns = until_ns
            due = None if held is None else held[0]()
            if due is not None and due < wake_ns:
                wake_ns = due  # moves held for a batch are due first
            timeout_ms = -(-(wake_ns - time.monotonic_ns()) // 1_000_000)  # rounded up: never early
            events = poller.poll(timeout_ms if timeout_ms > 0 else 0)
            if events:
                break
            if wake_ns == until_ns or held is None:
                return "timeout"
            held[1]()  # hand on the held moves, then wait on
        fd = self._fd
        if events[0][0] == fd or any(ready == fd for ready, _ in events):
            return "ready"
        # The bot exited (its tree is being ended, then its output ends): wait through the loop until then.
        return "interrupted" if any(ready != exit_fd for ready, _ in events) else None

    async def receive(self) -> Chunk:
        """The next chunk (b"" at the end of the output). Cancel-safe: nothing is taken until it returns."""
        while True:
            chunk = self.take_nowait()
            if chunk is not None:
                return chunk
            await trio.lowlevel.wait_readable(self._fd)

    def unread_bytes(self) -> int:
        """Bytes that have arrived and are not read yet."""
        if self._closed:
            return 0
        buffer = bytearray(4)
        try:
            fcntl.ioctl(self._fd, termios.FIONREAD, buffer)
        except OSError:
            return 0
        return int.from_bytes(buffer, sys.byteorder)

    async def close(self) -> None:
        """Stop reading (before the pipe is closed): the descriptor stays the stream's to close."""
        if self._closed:
            return
        self._closed = True
        if self._stamped is not None:
            self._stamped.detach()


class StderrCopier:
    """Copies a bot's stderr to its log, keeping a tail of lines for the records, on the process's one stderr thread
    (`_StderrHub`, `referee.host.process_wide.STDERR_HUB`).

    Bots often write a line to stderr just before their move. Copied by a task on the event loop, that line woke
    the loop, which then held the interpreter lock while the move arrived (about 0.3 ms a move, measured): the
    copy belongs off the loop. One thread serves every bot: a thread per bot cost its start and its join at each
    bot's start and stop, and a wake-up per bot every `STDERR_DRAIN_S` while it thought. The hub sleeps until some
    bot writes to stderr, then reads every pipe with data, then rests for `STDERR_DRAIN_S` before it looks again
    (a chatty bot is read at most that often; its pipe is enlarged to hold what it writes meanwhile).

    A bot's start and stop do not wake the hub: the log is opened and the pipe added to the hub's epoll by the
    caller, and `stop` takes the pipe out of it and reads what is left itself, so a record's tail is complete
    (a wake of the hub and of the caller's loop at every start and stop cost more than the copies). One reader
    at a time: the hub's thread or the stopping caller (`_lock`). `on_chunk(data)` is called on whichever of the
    two reads a chunk (it must be thread-safe); `done` is set on the creating trio loop when the copy ends (end of
    output, or `stop`).
    """

    def __init__(
        self,
        fd: int,
        log_path: Path,
        cap_bytes: int,
        on_chunk: Callable[[bytes], None],
        name: str,
    ) -> None:
        self.fd = os.dup(fd)
        """The copy's own descriptor of the pipe, closed by the copy when it ends: the owner may close its own at any
        time without the copier ever reading a descriptor that the number was reused for."""
        self.name = name
        self._log_path = log_path
        self._cap_bytes = cap_bytes
        self._on_chunk = on_chunk
        self._log_file: BinaryIO | None = None
        self._lock = threading.Lock()
        self._ended = False
        self.copied = 0
        """Bytes read from the pipe so far (the log keeps only the first `cap_bytes`)."""
        self.done = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        os.set_blocking(self.fd, False)
        if STDERR_DRAIN_S:
            with contextlib.suppress(OSError):  # a smaller pipe still works: a flooding bot waits for the drain
                fcntl.fcntl(self.fd, _F_SETPIPE_SZ, STDERR_PIPE_BYTES)
        self._open_log()
        process_wide.STDERR_HUB.get(_StderrHub).add(self)

    def _open_log(self) -> None:
        try:
            # Never through a link planted in the output directory (its target would be overwritten).
            fd = open_output_fd(self._log_path, os.O_WRONLY | os.O_CREAT)
            os.ftruncate(fd, 0)
            self._log_file = os.fdopen(fd, "wb", buffering=0)
        except OSError as error:
            log.warning("cannot write the stderr log %s: %s (stderr is still read)", self._log_path, error)

    def drain(self, chunks: int) -> bool:
        """Read what is in the pipe (at most `chunks` reads, never waiting); True at the end of the output. Under
        `_lock`."""
        for _ in range(chunks):
            try:
                data = os.read(self.fd, CHUNK_BYTES)
            except BlockingIOError:
                return False
            except OSError:
                return True
            if not data:
                return True
            self._copy(data)
        return False

    def copy_ready(self) -> bool:
        """On the hub's thread, the pipe having data: copy it; True at the output's end (then the hub stops watching
        the pipe and calls `end`)."""
        with self._lock:
            return not self._ended and self._take()  # ended already: stopped meanwhile by its owner

    def end(self) -> None:
        """On the hub's thread, once it no longer watches the pipe: the copy has reached the output's end."""
        with self._lock:
            self._end()
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self.done.set)

    def _take(self) -> bool:
        """`drain` what is there (at most `_STOP_DRAIN_CHUNKS` reads), under `_lock`; True at the output's end, or
        if the copy failed (logged)."""
        try:
            return self.drain(_STOP_DRAIN_CHUNKS)
        except Exception:
            log.exception("the copy of %s's stderr failed", self.name)
            return True

    def _end(self) -> None:
        """Under `_lock`, and only once the hub no longer watches the pipe (an epoll watches the pipe itself, not the
        descriptor: a descriptor closed while watched would leave the pipe in it): the copy is over. Once: again,
        nothing."""
        if self._ended:
            return
        self._ended = True
        with contextlib.suppress(OSError):
            os.close(self.fd)
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                self._log_file.close()

    def _copy(self, data: bytes) -> None:
        written, cap = self.copied, self._cap_bytes
        self.copied += len(data)
        log_file = self._log_file
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
        """End the copy, taking what is in the pipe already (never waiting for more, and never more than
        `_STOP_DRAIN_CHUNKS` reads: a process that escaped every net may write as fast as it is read): before the
        pipe is closed. Called on the creating trio loop."""
        process_wide.STDERR_HUB.get(_StderrHub).remove(self)  # the hub reads it no more (but for a read under way)
        with self._lock:
            if not self._ended:
                self._take()
            self._end()
        self.done.set()
        await trio.lowlevel.checkpoint()


class _StderrHub:
    """The thread that copies every bot's stderr (`StderrCopier`): one per process, started by the first bot.

    It waits in an epoll that the bots' owners add their pipes to and take them out of (`add`, `remove`), from
    their own threads: a start or a stop never has to wake it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._copiers: dict[int, StderrCopier] = {}
        self._epoll = select.epoll()
        threading.Thread(target=self._run, name="stderr-copier", daemon=True).start()

    def add(self, copier: StderrCopier) -> None:
        with self._lock:
            self._copiers[copier.fd] = copier
            self._epoll.register(copier.fd, select.EPOLLIN)

    def remove(self, copier: StderrCopier) -> None:
        """Stop watching `copier`'s pipe (before its descriptor is closed); nothing if it is not watched."""
        with self._lock:
            if self._copiers.get(copier.fd) is copier:
                del self._copiers[copier.fd]
                with contextlib.suppress(OSError):
                    self._epoll.unregister(copier.fd)

    def _run(self) -> None:
        rest_until = 0.0
        while True:
            rest = rest_until - time.monotonic()
            if rest > 0:
                time.sleep(rest)  # pipes are not looked at while the hub rests; their bots' stops read them
            read_any = False
            for fd, _ in self._epoll.poll():
                with self._lock:
                    copier = self._copiers.get(fd)
                if copier is None:
                    continue  # taken out since the poll returned
                read_any = True
                if copier.copy_ready():
                    self.remove(copier)
                    copier.end()
            if read_any and STDERR_DRAIN_S:
                rest_until = time.monotonic() + STDERR_DRAIN_S
