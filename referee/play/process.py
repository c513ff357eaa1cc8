"""The channel to one bot: protocol lines over a pair of byte streams, and the bot process behind it.

`BotChannel` speaks protocol v1 over any trio send/receive stream pair: it frames lines (never holding more
than `MAX_LINE_BYTES` of an unfinished line), validates each one and asks the session state machine
(`protocol.session`) whether it may come now, notes the moment each reply line was complete (for the
clock: read on a thread of its own for a real process, `referee.play.reader`), and turns everything a bot can
do wrong into a `BotFault` whose reason a person can act on. Tests drive it over in-memory streams.
`BotProcess` is the same channel over a child's stdin/stdout, plus the process: its own process group,
stderr drained into a capped log (with a tail kept in memory for records), and on exit `quit`, a short
grace period, SIGKILL to the whole group, reaping.

Deadlines are the caller's: every await here can be cancelled by a cancel scope without losing bytes.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from pydantic import BaseModel, ValidationError

from protocol.framing import MAX_LINE_BYTES, LineBuffer, LineTooLongError
from protocol.messages import (
    PROTOCOL_VERSION,
    BotHello,
    BotMessage,
    Hello,
    Ping,
    Pong,
    Quit,
    encode,
    parse_bot_line,
)
from protocol.session import ProtocolViolation, Session
from referee import __version__
from referee.exceptions import single_exception
from referee.host import process_wide
from referee.host.containment import (
    RUNNING_DIR,
    TRACK_INTERVAL_S,
    ProcessTree,
    end_leftovers,
    run_in_spawner,
)
from referee.host.sandbox import SandboxError, launch_command, sandbox_environment
from referee.play.reader import OutputReader, StderrCopier, TurnWrite, stdout_pair
from referee.record import BotInfo, Termination
from referee.run.botspec import BotSpec, script_start_problem
from referee.timing.latency import NO_LAG, HostLagMonitor, LagSource, host_lag_monitor
from referee.timing.probe import BotProbe, LinuxProbe, NullProbe

__all__ = [
    "REFEREE_NAME",
    "BotChannel",
    "BotCrashed",
    "BotFault",
    "BotHost",
    "BotIllegalMove",
    "BotProcess",
    "BotProtocolError",
    "BotStartError",
    "BotTimeout",
    "BotUnresponsive",
    "ChildProcess",
    "describe_exit",
    "open_bot",
]

log = logging.getLogger(__name__)

REFEREE_NAME = f"alternator-referee {__version__}"
CHUNK_BYTES = 65536
YIELD_EVERY_LINES = 64
"""`receive_line` lets other tasks run after this many lines, even when they all came in one chunk."""
CATCH_UP_CHUNKS = 16
"""`catch_up` takes at most this many chunks: a bot that writes without pause cannot hold the referee there."""
EXIT_WAIT_S = 0.5
"""After a bot's output ends: how long to wait for it to exit, to report its exit code or signal."""
QUIT_GRACE_S = 0.5
"""After `quit`: how long a bot may take to exit before its process group is killed."""
STDERR_SETTLE_S = 0.5
"""After a bot exits: how long to wait for its last stderr lines before building a record."""
_QUOTE_CHARS = 120
_TAIL_LINES = 200
"""Lines of a bot's stderr kept in memory for records (each cut to `_TAIL_LINE_BYTES`)."""
_TAIL_LINE_BYTES = 1000


class BotStartError(Exception):
    """The bot's command cannot be started (not found, not executable, bad directory): the user's to fix."""


class BotFault(Exception):
    """The bot broke a rule: the game is lost by it. `reason` is for people."""

    termination = Termination.PROTOCOL

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BotCrashed(BotFault):
    """The bot exited, was killed, or closed its output or input."""

    termination = Termination.CRASH


class BotProtocolError(BotFault):
    """Malformed JSON, an unknown or out-of-turn message, an over-long line, a failed handshake."""

    termination = Termination.PROTOCOL


class BotIllegalMove(BotFault):
    """A move the rules forbid, or a move text that is not a move."""

    termination = Termination.ILLEGAL_MOVE


class BotTimeout(BotFault):
    """The bot's clock or per-move limit ran out. `overrun_ms`: how far past its allowance it was."""

    termination = Termination.TIME

    def __init__(self, reason: str, overrun_ms: float) -> None:
        super().__init__(reason)
        self.overrun_ms = overrun_ms


class BotUnresponsive(BotFault):
    """The bot stopped answering pings."""

    termination = Termination.UNRESPONSIVE


def describe_exit(returncode: int) -> str:
    """`exited with code 3` or `killed by SIGSEGV` (from a Popen-style return code)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exited with code {returncode}"


def _quote(line: bytes) -> str:
    text = line[:_QUOTE_CHARS].decode("utf-8", errors="replace")
    return repr(text) + (f" ({len(line)} bytes)" if len(line) > _QUOTE_CHARS else "")


def _invalid_message_fault(line: bytes, error: ValidationError) -> BotProtocolError:
    """Say precisely what is wrong with a line that failed validation (the slow path: faults only)."""
    first = error.errors()[0]
    if first["type"] == "json_invalid":
        return BotProtocolError(f"sent malformed JSON ({first['msg']}): {_quote(line)}")
    try:
        data: Any = json.loads(line)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return BotProtocolError(f"sent a line that is not a JSON object: {_quote(line)}")
    kind = data.get("type")
    if first["type"] == "union_tag_not_found":
        return BotProtocolError(f"sent a message without a 'type' field: {_quote(line)}")
    if first["type"] == "union_tag_invalid":
        return BotProtocolError(
            f"sent a message of unknown type {kind!r} (a bot sends hello, ready, move, info or pong): {_quote(line)}"
        )
    if kind == "hello" and isinstance(data.get("protocol"), int) and data["protocol"] != PROTOCOL_VERSION:
        return BotProtocolError(f"speaks protocol {data['protocol']}, the referee speaks {PROTOCOL_VERSION}")
    problems = "; ".join(
        f"{'.'.join(str(p) for p in tuple(e['loc'])[1:]) or 'message'}: {e['msg']}" for e in error.errors()
    )
    return BotProtocolError(f"sent an invalid {kind!r} message ({problems}): {_quote(line)}")


class BotChannel:
    """Protocol v1 with one bot over a pair of byte streams (a process's pipes, or memory streams in tests).

    Which message the bot may send when is the session's to say (`protocol.session`); the channel tells it
    what was written and read, and owns nothing else of the protocol. `receive` returns one allowed message
    and notes in `last_line_ns` when its line was complete, in the channel's clock (`now_ns`): for a real
    process, the monotonic time of the bot's write that completed it (a stamped socket) or of the read that
    returned it (`referee.play.reader`); over memory streams, trio's clock (so tests can use `autojump_clock`).
    `lag_source` measures the referee's own lateness during a move where that matters (`referee.timing.latency`).
    """

    def __init__(
        self,
        name: str,
        send_stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream,
        *,
        command: list[str] | None = None,
        reader: OutputReader | None = None,
        lag_source: LagSource = NO_LAG,
        probe: BotProbe | None = None,
    ) -> None:
        self.name = name
        self.command = command if command is not None else [name]
        self.hello: BotHello | None = None
        self.session = Session(PROTOCOL_VERSION)
        self.lag_source = lag_source
        self.probe: BotProbe = probe or NullProbe()
        """What the referee can see of the bot's process (`referee.timing.probe`): nothing over memory streams."""
        self.last_line_ns = 0
        """`now_ns()` when the last line returned by `receive` was complete (the read of its last byte returned)."""
        self._send_stream = send_stream
        self._receive_stream = receive_stream
        self._reader = reader
        self.replies_stamped = reader is not None and reader.stamped
        """Whether the bot's lines are timed by the kernel at its own write (a stamped socket, `referee.play.reader`):
        then how late the referee ran while the bot thought changes no move's time."""
        self._monotonic = reader is not None  # the channel's clock, for good (the reader stops at shutdown)
        self._buffer = LineBuffer(MAX_LINE_BYTES)
        self._lines: deque[tuple[bytes, int]] = deque()
        self._line_error: LineTooLongError | None = None
        self._eof = False
        self._served = 0
        self._turn_start_ns = 0
        """When the last turn's write started (`now_ns()`'s clock): a line the bot wrote before it was written between
        turns, whenever it is read (`check_idle`, `_parse`)."""
        if isinstance(lag_source, HostLagMonitor):
            lag_source.acquire()

    @property
    def broken(self) -> bool:
        """True after a fault that leaves the channel unusable: restart the bot before reusing it (the session's)."""
        return self.session.broken

    @property
    def closed(self) -> bool:
        """True once the bot's output has ended or its input is closed: nothing more can be exchanged."""
        return self.session.closed

    def now_ns(self) -> int:
        """The channel's clock, ns: monotonic time for a process, trio's clock over memory streams."""
        if self._monotonic:
            return time.monotonic_ns()
        return round(trio.current_time() * 1e9)

    def to_trio_time(self, at_ns: int) -> float:
        """The trio time (for cancel scopes) of an instant of the channel's clock."""
        if not self._monotonic:
            return at_ns / 1e9
        return trio.current_time() + (at_ns - time.monotonic_ns()) / 1e9

    def give_up(self, reason: str) -> None:
        """The referee stopped waiting for an answer, or stopped trusting the pipe: restart before reuse."""
        self.session.gave_up(reason)

    # -- sending --------------------------------------------------------------------------------------

    async def send(self, message: BaseModel) -> None:
        """Write one message. BotCrashed if the bot no longer reads its input."""
        kind: str = getattr(message, "type", "")
        self.session.sent(kind, game_id=getattr(message, "game_id", None), ping_id=getattr(message, "id", None))
        await self._write(encode(message))

    async def send_turn(self, line: bytes, written: Callable[[int], None] | None = None) -> TurnWrite:
        """Write a hand-built `turn` line (newline included): the per-move path skips pydantic.

        The bot's time starts immediately before the first write call: the returned `TurnWrite`'s `start_ns`, in
        `now_ns()`'s clock, and `written(start_ns)` is called once the whole line is in the pipe. A pipe is
        written at once, not after a trip through the scheduler (trio's `send_all` yields to the other tasks
        before it writes, and a bot may be answering by then), and only what the pipe cannot take yet is left
        to `send_all`.
        """
        self.session.sent("turn")
        if self.session.closed:
            raise await self._gone_fault(self.session.reason or "closed its input")
        fileno = getattr(self._send_stream, "fileno", None)
        if fileno is None:
            start = self.now_ns()
            await self._write(line)
            turn = TurnWrite.made(line, start)
        else:
            turn = TurnWrite(fileno(), line, written, self.probe.cpu_clock_ns)
            turn.write()
            self._turn_start_ns = turn.start_ns or 0
            if turn.failed:
                self.session.gone("closed its input")
                raise await self._gone_fault("closed its input") from None
            if turn.done:
                return turn
            await self._write(line[turn.sent :])
            turn.sent = len(line)
        if written is not None and turn.start_ns is not None:
            written(turn.start_ns)
        return turn

    async def send_raw(self, line: bytes) -> None:
        """Write bytes the session does not see: for benchmarks of the bare pipe (with `receive_line`) only."""
        await self._write(line)

    async def _write(self, line: bytes) -> None:
        if self.session.closed:
            raise await self._gone_fault(self.session.reason or "closed its input")
        try:
            await self._send_stream.send_all(line)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.session.gone("closed its input")
            raise await self._gone_fault("closed its input") from None

    async def send_ping(self) -> int:
        """Send a ping with a fresh id and return the id."""
        ping_id = self.session.last_ping + 1
        await self.send(Ping(type="ping", id=ping_id))
        return ping_id

    # -- receiving ------------------------------------------------------------------------------------

    async def receive_line(self) -> bytes:
        """The next complete line, without its newline. BotFault on end of output or an over-long line."""
        while not self._lines:
            if self._line_error is not None:
                raise self._violation(f"sent an over-long line: {self._line_error}")
            if not self._eof:
                await self._read_chunk()
            if self._eof and not self._lines:
                self.session.gone("closed its output")
                raise await self._gone_fault("closed its output")
        self._served += 1
        if self._served % YIELD_EVERY_LINES == 0:
            # A chunk can hold a thousand tiny lines (an info flood): let the other games' tasks run now and
            # then, so that no other bot's reply waits (and is charged) while this one's lines are parsed.
            await trio.lowlevel.checkpoint()
        line, self.last_line_ns = self._lines.popleft()
        return line

    def next_buffered(self) -> BotMessage | None:
        """The next message if its line is in already (`receive` with no read and no wait), else None: also when a
        pause for the other tasks is due (`YIELD_EVERY_LINES`), which `receive` makes."""
        lines = self._lines
        if not lines or (self._served + 1) % YIELD_EVERY_LINES == 0:
            return None
        self._served += 1
        line, self.last_line_ns = lines.popleft()
        return self._parse(line)

    async def _read_chunk(self) -> None:
        if self._reader is not None:
            data, stamp = await self._reader.receive()
        else:
            try:
                data = bytes(await self._receive_stream.receive_some(CHUNK_BYTES))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            stamp = self.now_ns()
        self._eof = not data
        self._feed(data, stamp)

    def _feed(self, data: bytes | bytearray, stamp: int) -> None:
        try:
            lines = self._buffer.feed(data if isinstance(data, bytes) else bytes(data))
        except LineTooLongError as error:
            # Lines completed before the long one are still answered; the fault comes after them.
            lines = error.lines
            self._line_error = error
        for line in lines:
            self._lines.append((line, stamp))

    def catch_up(self, *, to_a_line: bool = False) -> None:
        """Take in whatever the bot has already written, without waiting for more: a deadline is never judged on
        less than what had arrived by then. `to_a_line`: stop once a complete line is in (a reply the poll said
        is there: no read that would find nothing more)."""
        reader = self._reader
        if reader is None:
            fileno = getattr(self._receive_stream, "fileno", None)
            if fileno is not None and not self._eof and self._line_error is None:
                try:
                    data = os.read(fileno(), CHUNK_BYTES)
                except OSError:  # BlockingIOError: nothing waiting; anything else: the next receive reports it
                    return
                self._eof = not data
                self._feed(data, self.now_ns())
            return
        for _ in range(CATCH_UP_CHUNKS):
            if self._eof or self._line_error is not None:
                return
            chunk = reader.take_nowait()
            if chunk is None:
                return
            data, stamp = chunk
            self._eof = not data
            self._feed(data, stamp)
            if to_a_line and self._lines:
                return

    def has_lines(self) -> bool:
        """Whether complete lines are waiting to be returned by `receive` (no read needed)."""
        return bool(self._lines) or self._line_error is not None

    def has_news(self) -> bool:
        """Whether `receive` would return (or fail) without a read: lines waiting, or the output's end."""
        return self.has_lines() or self._eof

    def wait_output(self, until_ns: int) -> str | None:
        """In a loop that plays only this game (`referee.play.reader.sole_game_loop`): block until the bot has written
        ("ready"), `until_ns` ("timeout") or the loop has other work ("interrupted"); None: wait through trio."""
        reader = self._reader
        return None if reader is None else reader.wait(until_ns)

    def check_idle(self) -> None:
        """BotProtocolError if the bot has sent anything but `pong` or `info` since its last awaited reply.

        Catches a message sent out of turn (a `move` between turns would otherwise be taken as the answer to
        the next turn, charged nothing). Reads only what is already there, so it can run before every turn. Where
        the kernel stamps each write with its time (`replies_stamped`), a line not read yet is left for the turn:
        its stamp tells that it was written before the turn (`_parse`), at no read a move.
        """
        if not self._lines and self.replies_stamped:
            return
        self.catch_up()
        while self._lines:
            line, _ = self._lines.popleft()
            self._parse(line)

    async def receive(self) -> BotMessage:
        """One allowed message. BotFault on end of output (crash), a malformed, over-long or untimely line."""
        return self._parse(await self.receive_line())

    def _parse(self, line: bytes) -> BotMessage:
        try:
            message = parse_bot_line(line)
        except ValidationError as error:
            fault = _invalid_message_fault(line, error)
            raise self._violation(fault.reason) from None
        try:
            self.session.received(
                message, quote=lambda: _quote(line), before_turn=self.last_line_ns < self._turn_start_ns
            )
        except ProtocolViolation as violation:
            raise BotProtocolError(violation.reason) from None
        return message

    def _violation(self, reason: str) -> BotProtocolError:
        return BotProtocolError(self.session.violation(reason).reason)

    # -- exchanges ------------------------------------------------------------------------------------

    async def handshake(self) -> BotHello:
        """Send `hello`, read the bot's `hello` (the session checks its protocol). The deadline is the caller's."""
        await self.send(Hello(type="hello", protocol=PROTOCOL_VERSION, referee=REFEREE_NAME))
        message = await self.receive()
        assert isinstance(message, BotHello), "the session allows only hello in answer to hello"
        self.hello = message
        return message

    async def ping(self) -> float:
        """Ping an idle bot and return the round trip in seconds (write to complete pong line).

        For benchmarks and health checks between games; infos and late pongs that arrive meanwhile are dropped.
        """
        ping_id = self.session.last_ping + 1
        start = self.now_ns()
        await self.send(Ping(type="ping", id=ping_id))
        while True:
            message = await self.receive()
            if isinstance(message, Pong) and message.id == ping_id:
                return (self.last_line_ns - start) / 1e9

    async def close_reading(self) -> None:
        """Stop reading (before the pipe is closed) and leave the host's lag monitor."""
        reader, self._reader = self._reader, None
        self.replies_stamped = False
        if reader is not None:
            await reader.close()
        lag_source, self.lag_source = self.lag_source, NO_LAG
        if isinstance(lag_source, HostLagMonitor):
            lag_source.release()

    # -- what the records need ------------------------------------------------------------------------

    def stderr_tail(self, lines: int = 20) -> list[str]:
        """The last lines the bot wrote to stderr (none for a channel without a process)."""
        return []

    async def settle(self) -> None:
        """Give the bot's last stderr lines a moment to arrive before a record quotes them."""
        await trio.lowlevel.checkpoint()

    def info(self) -> BotInfo:
        hello = self.hello
        return BotInfo(
            name=self.name,
            command=list(self.command),
            announced_name=None if hello is None else hello.name,
            author=None if hello is None else hello.author or None,
            version=None if hello is None else hello.version or None,
            stderr_log=None,
        )

    async def _gone_fault(self, what: str) -> BotFault:
        """The fault for a bot whose output ended or whose input closed."""
        return BotCrashed(what)

    # -- containment (a channel without a process has nothing to contain) ----------------------------

    def cpu_ns(self) -> int | None:
        """CPU time used so far by the bot and everything it started (None: not measurable)."""
        return None

    def wait_for_turn(self) -> bool:
        """The opponent's turn begins: a bot that may not ponder (`BotSpec.ponder`) is frozen until its own.
        Whether it was frozen."""
        return False

    def begin_turn(self) -> None:
        """Its own turn is about to begin: thaw it if it was frozen."""

    def cpu_limit_s(self) -> float | None:
        """The CPU seconds per game the bot may use, all its processes, on its turns and off (None: no limit)."""
        return None


class ChildProcess:
    """A bot's main process, forked by the referee's spawner thread (see `referee.host.containment`).

    Its pipes are trio streams; its exit is watched through a pidfd by `watch` (run by `open_bot`), so
    the exit is known when it happens, whatever its descendants do with its pipes.
    """

    def __init__(self, popen: subprocess.Popen[bytes], stdin: int, stdout: int, stderr: int) -> None:
        self.popen = popen
        self.pid = popen.pid
        try:
            self.exit_fd = os.pidfd_open(self.pid) if hasattr(os, "pidfd_open") else -1
            """Readable once the process has exited (a pidfd; -1: none, or closed once the exit was seen)."""
        except OSError:
            self.exit_fd = -1
        self.stdin: trio.abc.SendStream = trio.lowlevel.FdStream(stdin)
        self.stdout: trio.abc.ReceiveStream = trio.lowlevel.FdStream(stdout)
        self.stderr: trio.abc.ReceiveStream = trio.lowlevel.FdStream(stderr)
        self.exited = trio.Event()

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    async def watch(self) -> None:
        """Return when the process has exited and been reaped (its return code then known)."""
        pidfd = self.exit_fd
        try:
            if pidfd >= 0:
                await trio.lowlevel.wait_readable(pidfd)
                self.popen.wait()
            else:  # no pidfd (Linux < 5.3, other systems): poll
                while self.popen.poll() is None:
                    await trio.sleep(0.01)
        finally:
            if pidfd >= 0:
                self.exit_fd = -1
                trio.lowlevel.notify_closing(pidfd)
                os.close(pidfd)
            if self.popen.returncode is not None:
                self.exited.set()

    async def wait(self) -> int:
        await self.exited.wait()
        code = self.popen.returncode
        assert code is not None
        return code


def _spawn(
    command: list[str],
    cwd: Path | None,
    env: dict[str, str] | None,
    preexec: Callable[[], None] | None,
    cores: list[int] | None = None,
) -> tuple[subprocess.Popen[bytes], int, int, int]:
    """Start the bot with fresh pipes (in the spawner thread); the referee's ends of them (stdin, stdout, stderr).

    stdout is a stamped socket where the OS has one (`referee.play.reader.stdout_pair`): the kernel stamps each of
    the bot's writes as it is made, so its move is timed to the write itself, not to the referee's read.
    Without `preexec` the spawn forks nothing of the referee's (vfork); the child takes the spawning thread's
    cores, so this thread takes `cores` (or its own again) first.
    """
    if hasattr(os, "sched_setaffinity"):
        own = process_wide.SPAWNER_CORES.get(lambda: sorted(os.sched_getaffinity(0)))  # this thread's, as it started
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cores or own)
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = stdout_pair()
    stderr_r, stderr_w = os.pipe()
    try:
        popen = subprocess.Popen(
            command,
            stdin=stdin_r,
            stdout=stdout_w,
            stderr=stderr_w,
            cwd=cwd,
            env=env,
            start_new_session=True,  # a group of its own, so the whole group can be killed
            preexec_fn=preexec,
        )
    except BaseException:
        for fd in (stdin_w, stdout_r, stderr_r):
            os.close(fd)
        raise
    finally:
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
    return popen, stdin_w, stdout_r, stderr_r


class BotProcess(BotChannel):
    """A bot running as a child process (see `open_bot`), with all its processes in `tree`."""

    def __init__(
        self,
        spec: BotSpec,
        process: ChildProcess,
        stderr_path: Path,
        *,
        argv: list[str] | None = None,
        tree: ProcessTree | None = None,
    ) -> None:
        reader = OutputReader(process.stdout.fileno(), lambda: process.exit_fd)  # type: ignore[attr-defined]
        # A stamped reply is timed at the bot's write, and a turn written from the bot's own core (the game's
        # loop pinned beside it) reaches it at once: the monitor has nothing to add. Elsewhere it watches.
        pinned = tree is not None and bool(tree.cores)
        super().__init__(
            spec.name,
            process.stdin,
            process.stdout,
            command=list(spec.command),
            reader=reader,
            lag_source=NO_LAG if reader.stamped and pinned else host_lag_monitor(),
        )
        self.spec = spec
        self.argv = list(spec.command) if argv is None else argv
        """The command line actually run: `spec.command`, wrapped in the sandbox or a memory limit if asked."""
        self.process = process
        self.pid = process.pid
        self.tree = tree
        if tree is not None:
            self.cpu_ns = tree.cpu_ns  # type: ignore[method-assign]  # read twice a move: one call, not two
        self.stderr_path = stderr_path
        self._tail: deque[str] = deque(maxlen=_TAIL_LINES)
        self._partial = bytearray()
        self._tail_lock = threading.Lock()  # kept by the stderr thread (or the stop), read by the game
        self._stderr: StderrCopier | None = None
        self._bot_pid_found: int | None = None
        self.probe = LinuxProbe(self._bot_pid, self._send_stream.fileno)  # type: ignore[attr-defined]
        """The bot's main thread in /proc (`referee.timing.probe`)."""

    @property
    def stderr_bytes(self) -> int:
        """Bytes the bot wrote to stderr (the log keeps only the first `stderr_cap_bytes`)."""
        return 0 if self._stderr is None else self._stderr.copied

    def _copy_stderr(self, cap_bytes: int) -> None:
        """Start copying stderr to the log, on the process's stderr thread (`StderrCopier`)."""
        fd: int = self.process.stderr.fileno()  # type: ignore[attr-defined]
        self._stderr = StderrCopier(fd, self.stderr_path, cap_bytes, self._keep_tail, self.name)

    async def _stderr_done(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the copy of stderr to reach the end of the bot's output."""
        if self._stderr is not None:
            with trio.move_on_after(timeout_s):
                await self._stderr.done.wait()

    def cpu_ns(self) -> int | None:
        return None if self.tree is None else self.tree.cpu_ns()  # (bound to the tree's own in __init__)

    def wait_for_turn(self) -> bool:
        if self.tree is not None and not self.spec.ponder and self.process.returncode is None:
            self.tree.freeze()
            return True
        return False

    def begin_turn(self) -> None:
        tree = self.tree
        if tree is not None and tree.frozen:  # looked at first: the thaw takes the tree's lock, at every move
            tree.thaw()

    def cpu_limit_s(self) -> float | None:
        return self.spec.cpu_limit_s

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def _bot_pid(self) -> int | None:
        """The pid of the bot's own program: the process started, or in a sandbox the first process inside it
        that is not bubblewrap (bwrap starts an init of its own, which starts the bot). None if not there yet."""
        if self._bot_pid_found is not None:
            return self._bot_pid_found
        if not self.spec.sandbox:
            self._bot_pid_found = self.pid
            return self.pid
        pid = self.pid
        for _ in range(4):  # the outer bwrap, its init in the new namespace, then the bot
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                if comm != "bwrap":
                    self._bot_pid_found = pid
                    return pid
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                return None
            if not children:
                return None
            pid = int(children[0])
        return None

    def stderr_tail(self, lines: int = 20) -> list[str]:
        with self._tail_lock:
            tail = list(self._tail)
            if self._partial:
                tail.append(self._partial.decode("utf-8", errors="replace"))
        return tail[-lines:] if lines > 0 else []

    async def settle(self) -> None:
        with trio.CancelScope(shield=True):
            if self.process.returncode is not None:
                await self._stderr_done(STDERR_SETTLE_S)
            else:
                # Still running: let the copying thread take what is already in the pipe.
                await trio.sleep(0.02)

    def info(self) -> BotInfo:
        info = super().info()
        info.stderr_log = str(self.stderr_path)
        info.sandbox = self.spec.sandbox
        info.memory_mb = self.spec.memory_mb
        info.run_command = None if self.argv == self.command else list(self.argv)
        info.max_processes = self.spec.max_processes
        info.ponder = self.spec.ponder
        info.cpu_limit_s = self.spec.cpu_limit_s
        if self.tree is not None:
            info.containment = self.tree.describe()
            info.cores = self.tree.cores
        return info

    async def _gone_fault(self, what: str) -> BotFault:
        # The output ends a moment before the exit status is known: wait briefly to report it.
        with trio.CancelScope(shield=True), trio.move_on_after(EXIT_WAIT_S):
            await self.process.wait()
        code = self.process.returncode
        if code is None:
            return BotCrashed(f"{what} but is still running")
        how = describe_exit(code)
        if self.spec.sandbox and 128 < code < 128 + signal.NSIG:
            # bwrap reports a child killed by signal N as exit code 128 + N.
            how = f"{describe_exit(128 - code)} (exit code {code} from the sandbox)"
        if self.spec.memory_mb is not None and self.tree is not None and self.tree.memory_limit is not None:
            # Held by a memory cgroup: the limit is named only when the kernel killed the bot for it.
            limited = f"its memory was limited to {self.spec.memory_mb} MiB"
            if self.tree.memory_killed() and "SIGKILL" in how:
                how = f"was killed by the kernel's out-of-memory killer ({how}): {limited}"
            elif self.tree.memory_killed():
                how += f" after the kernel's out-of-memory killer ended one of its processes: {limited}"
        elif self.spec.memory_mb is not None:
            how += f" (its memory was limited to {self.spec.memory_mb} MiB)"
        return BotCrashed(how)

    def _keep_tail(self, data: bytes | bytearray) -> None:
        *complete, rest = bytes(data).split(b"\n")
        with self._tail_lock:
            if complete:
                complete[0] = bytes(self._partial) + complete[0]
                self._partial.clear()
                for line in complete[-_TAIL_LINES:]:
                    self._tail.append(line[:_TAIL_LINE_BYTES].decode("utf-8", errors="replace").rstrip("\r"))
            if len(self._partial) < _TAIL_LINE_BYTES:
                self._partial += rest[: _TAIL_LINE_BYTES - len(self._partial)]

    async def _shutdown(self, grace_s: float) -> None:
        """quit, a grace period, SIGKILL to the whole process group and tree, reap. Never raises for a dead bot."""
        process = self.process
        if self.tree is not None:
            self.tree.thaw()  # a frozen bot could not quit
        if process.returncode is None:
            with trio.move_on_after(grace_s):
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await self._send_stream.send_all(encode(Quit(type="quit")))
                _close_now(process.stdin)  # the end of its input
                await process.wait()
        # Grandchildren share the group; the leader's pid is the group id (start_new_session=True).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if not process.exited.is_set():
            await process.wait()
        if self.tree is not None and not self.tree.close_at_once():
            # Kills whatever is left of the tree (waiting for the kills: not on the event loop), then removes it.
            await trio.to_thread.run_sync(self.tree.close)
        self.session.gone("stopped")
        await self.close_reading()
        self.probe.close()
        if self._stderr is not None:
            # Every process of the bot is gone: all it wrote to stderr is in the pipe, and stopping the copy takes
            # it (the pipe holds no more than the copy takes on a stop) without waiting for a drain period. A
            # process that escaped every net may still hold stderr open: stopping does not wait for it either.
            await self._stderr.stop()
        for stream in (process.stdin, process.stdout, process.stderr):
            _close_now(stream)


def _close_now(stream: trio.abc.AsyncResource) -> None:
    """Close a process's pipe at once: closing a descriptor needs no trip through the event loop (`aclose` makes one,
    three of them a bot's stop)."""
    if isinstance(stream, trio.lowlevel.FdStream):
        stream.close()


def _check_program(spec: BotSpec, env: dict[str, str]) -> None:
    """Raise what the system would for the bot's program (FileNotFoundError, PermissionError, ENOEXEC), before
    the spawn: started through a trampoline (`ProcessTree.launch`), its own exec would fail out of sight."""
    program = spec.command[0]
    if os.sep not in program:
        if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
            raise FileNotFoundError(errno.ENOENT, "not found", program)
        return
    path = Path(program)
    if spec.dir is not None and not path.is_absolute():
        path = spec.dir / path
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "not found", program)
    if path.is_dir() or not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, "not executable", program)
    if script_start_problem(path) is not None:
        raise OSError(errno.ENOEXEC, "cannot be started", program)


def _start_error(spec: BotSpec, error: OSError | subprocess.SubprocessError) -> BotStartError:
    """The start failure as the user reads it, with what to do."""
    program, shown = spec.command[0], shlex.join(spec.command)  # the user's command, not the wrapper
    if isinstance(error, FileNotFoundError):
        problem = _script_problem(spec)
        return BotStartError(
            f"cannot start bot {spec.name!r}: {program!r} {problem} (command: {shown})"
            if problem
            else f"cannot start bot {spec.name!r}: program {program!r} not found (command: {shown});"
            " give a path to an existing program, or put it on PATH"
        )
    if isinstance(error, PermissionError):
        return BotStartError(
            f"cannot start bot {spec.name!r}: {program!r} is not executable (command: {shown});"
            f" run chmod +x on it, or start it through its interpreter (e.g. python3 {program})"
        )
    problem = _script_problem(spec) if isinstance(error, OSError) and error.errno == errno.ENOEXEC else None
    what = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return BotStartError(
        f"cannot start bot {spec.name!r}: {program!r} {problem} (command: {shown})"
        if problem
        else f"cannot start bot {spec.name!r} with {shown}: {what}; check the command"
    )


def _log_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "bot"


def _script_problem(spec: BotSpec) -> str | None:
    """Why the system refused to start an existing file: a missing `#!` interpreter or no `#!` line at all."""
    path = Path(spec.command[0])
    if spec.dir is not None and not path.is_absolute():
        path = spec.dir / path
    return script_start_problem(path) if os.sep in spec.command[0] and path.is_file() else None


@asynccontextmanager
async def open_bot(
    spec: BotSpec,
    log_dir: Path,
    *,
    stderr_cap_bytes: int = 1 << 20,
    quit_grace_s: float = QUIT_GRACE_S,
    cores: list[int] | None = None,
    hidden: Iterable[Path] = (),
) -> AsyncIterator[BotProcess]:
    """Start a bot in its own process group; on exit (normal, error, cancellation) stop it and all it started.

    stderr goes to `log_dir/<name>-<pid>.stderr.log`, capped at `stderr_cap_bytes`. `cores`: run it and all
    it starts on these cores only. `hidden`: the other bots' folders of the run, which a sandboxed bot must
    not see. BotStartError if the command cannot be started. The handshake is not done here: `run_game` does
    it (or call `handshake`).
    """
    if spec.dir is not None and not spec.dir.is_dir():
        raise BotStartError(
            f"cannot start bot {spec.name!r}: its working directory {str(spec.dir)!r} does not exist;"
            " fix the bot's dir setting"
        )
    private: list[Path] = []
    if spec.sandbox:
        # Hidden from a sandboxed bot: the output directory (log_dir's parent) and the other bots' folders.
        own = spec.dir.resolve() if spec.dir is not None else None
        others = {path.resolve() for path in hidden} - {own}
        private = [log_dir.absolute(), log_dir.absolute().parent, *sorted(others)]
    log_dir.mkdir(parents=True, exist_ok=True)
    _end_leftovers_once(log_dir)
    tree = ProcessTree(
        spec.name,
        max_processes=spec.max_processes,
        cores=cores,
        note_dir=log_dir / RUNNING_DIR,
        sandboxed=spec.sandbox,
        memory_mb=spec.memory_mb,
    )
    try:
        # A memory cgroup holds the bot's resident memory; without one, its address space is limited instead.
        command = launch_command(spec, private=private, address_limit=tree.memory_limit is None)
    except SandboxError as error:
        tree.close()
        raise BotStartError(str(error)) from None
    if spec.sandbox:
        env: dict[str, str] = sandbox_environment(spec, os.environ)
    else:
        env = {**os.environ, **spec.env}
    env.update(tree.environment())
    argv, preexec = tree.launch(command)
    try:
        _check_program(spec, env)
        # The sandbox stays in the bot's process group (no bwrap --new-session).
        popen, stdin, stdout, stderr = await run_in_spawner(
            functools.partial(_spawn, argv, spec.dir, env, preexec, tree.cores)
        )
    except (OSError, subprocess.SubprocessError) as error:
        tree.close()
        raise _start_error(spec, error) from None
    tree.started(popen.pid)
    process = ChildProcess(popen, stdin, stdout, stderr)
    bot = BotProcess(
        spec, process, log_dir / f"{_log_name(spec.name)}-{process.pid}.stderr.log", argv=command, tree=tree
    )
    # The helper tasks never raise: the nursery's group can only hold the body's exception.
    with single_exception():
        async with trio.open_nursery() as nursery:
            bot._copy_stderr(stderr_cap_bytes)
            nursery.start_soon(_watch_exit, bot)
            try:
                yield bot
            finally:
                with trio.CancelScope(shield=True):
                    await bot._shutdown(quit_grace_s)
                # A process that escaped every net may still hold stderr open: do not wait for it.
                nursery.cancel_scope.cancel()


def _end_leftovers_once(log_dir: Path) -> None:
    """The first time this referee uses an output directory: end the bots a killed referee left there."""
    if log_dir.is_absolute() and log_dir in process_wide.LEFTOVERS_ENDED:
        return  # seen under this name already: no need to resolve it again at every start
    key = log_dir.resolve()
    if key not in process_wide.LEFTOVERS_ENDED:
        process_wide.LEFTOVERS_ENDED.add(key)
        end_leftovers(log_dir)
    if log_dir.is_absolute():
        process_wide.LEFTOVERS_ENDED.add(log_dir)


async def _watch_exit(bot: BotProcess) -> None:
    """When the bot's process exits, end everything it started, so its pipes close and its crash is seen now.

    Without cgroups the tree is also sampled while the bot runs, to find children that leave it.
    """
    tree = bot.tree
    assert tree is not None
    # Shielded: `_shutdown` waits for this to see the exit, and always ends the process.
    with trio.CancelScope(shield=True):
        if tree.cgroups:
            await bot.process.watch()
        else:
            async with trio.open_nursery() as nursery:

                async def track() -> None:
                    while True:
                        tree.sample()
                        await trio.sleep(TRACK_INTERVAL_S)

                nursery.start_soon(track)
                await bot.process.watch()
                nursery.cancel_scope.cancel()
        if tree.anything_left():  # most bots leave an empty cgroup: nothing to kill, and no thread to wait on
            await trio.to_thread.run_sync(tree.kill_all)


class BotHost:
    """One bot's process, kept open by a task of its own in `nursery`, started on demand, restarted when broken.

    `open_bot` is a context manager holding a nursery, so it must be exited by the task that entered it;
    hosting each process in its own task lets a match or a tournament stop and restart any one of its
    bots, in any order, while the others keep running.
    """

    def __init__(
        self,
        spec: BotSpec,
        log_dir: Path,
        nursery: trio.Nursery,
        *,
        cores: Sequence[int] | None = None,
        hidden: Iterable[Path] = (),
    ) -> None:
        self.spec = spec
        self.log_dir = log_dir
        self.nursery = nursery
        self.hidden = hidden
        """The run's bot folders (`open_bot`): its sandbox hides the others'."""
        self.cores = list(cores) if cores else None
        """The cores of this host's concurrency slot (--cpu-affinity), else None."""
        self.process: BotProcess | None = None
        self._stop: trio.Event | None = None
        self._stopped: trio.Event | None = None

    async def ready(self) -> BotProcess:
        """The running process, or a new one if there is none or a fault left it broken (BotStartError)."""
        if self.process is not None and not self.process.broken:
            return self.process
        await self.close()
        stop, stopped = trio.Event(), trio.Event()
        process: BotProcess = await self.nursery.start(self._host, stop, stopped)
        self.process, self._stop, self._stopped = process, stop, stopped
        return process

    async def close(self) -> None:
        """Stop the process (quit, grace, kill) and wait until it is gone; nothing if none is running."""
        stopped = self._stopped
        self.close_soon()
        if stopped is not None:
            await stopped.wait()

    def close_soon(self) -> None:
        """Ask the process to stop without waiting for it (the nursery waits)."""
        if self._stop is not None:
            self._stop.set()
        self.process = self._stop = self._stopped = None

    async def _host(
        self,
        stop: trio.Event,
        stopped: trio.Event,
        *,
        task_status: trio.TaskStatus[BotProcess] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            async with open_bot(self.spec, self.log_dir, cores=self.cores, hidden=self.hidden) as process:
                task_status.started(process)
                await stop.wait()
        finally:
            stopped.set()
