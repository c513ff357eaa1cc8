"""What the referee can see of a bot's process while it thinks, for the fairness rules (`referee.timing.rules`).

A channel to a bot holds a probe (composition, not overrides): `LinuxProbe` for a local process on Linux, which
reads the bot's main thread in /proc; `NullProbe` for anything else (a bot over memory streams in tests, a bot
on another machine, another system). A null probe measures nothing, so no delay of the host is ever credited to
a bot it watches: its moves are judged on their times alone.

Every read here is of a file kept open and read again in place (one pread, about a microsecond): they run at
every move.
"""

from __future__ import annotations

import fcntl
import os
import platform
import sys
import termios
import time
from collections.abc import Callable
from typing import Protocol

from referee.host.containment import process_cpu_clock, process_cpu_ns

__all__ = ["BotProbe", "LinuxProbe", "NullProbe"]

_READ_SYSCALLS = {"x86_64": (0, 17, 19), "aarch64": (63, 65, 67)}.get(platform.machine(), ())
"""read, pread64 and readv on this machine (their numbers in /proc/PID/syscall); none known: never excused."""


class BotProbe(Protocol):
    """The samples the fairness rules take of a bot (each None or False when it cannot be told)."""

    def cpu_wait_ns(self) -> int | None:
        """The bot's total wait for a CPU so far (run-queue time of its main thread), ns."""
        ...

    def input_unread(self) -> int | None:
        """Bytes written to the bot and not read by it yet."""
        ...

    def asleep_on_input(self) -> bool:
        """Whether the bot is blocked in a read of its stdin right now: a turn written then is read the moment the
        host runs it, so the time it stays unread is the host's."""
        ...

    def cpu_clock_ns(self) -> int | None:
        """The CPU time of the bot's process so far (all its threads), ns, exact to this instant. Cheaper than
        `cpu_sample` (no file to read): taken at the start of every move."""
        ...

    def cpu_sample(self) -> tuple[bool, int] | None:
        """Whether the bot's main thread is ready to run (running or waiting for a CPU), and `cpu_clock_ns`. Two
        samples tell a bot the host keeps off a CPU (ready, its CPU time not moving) from one that runs or sleeps."""
        ...

    def close(self) -> None:
        """Let go of what the probe keeps open."""
        ...


class NullProbe:
    """Nothing measured: a bot over memory streams, on another machine or on another system."""

    def cpu_wait_ns(self) -> int | None:
        return None

    def input_unread(self) -> int | None:
        return None

    def asleep_on_input(self) -> bool:
        return False

    def cpu_clock_ns(self) -> int | None:
        return None

    def cpu_sample(self) -> tuple[bool, int] | None:
        return None

    def close(self) -> None:
        pass


class LinuxProbe:
    """A local bot process on Linux: its main thread's files in /proc, and its input pipe.

    `bot_pid()` is the pid of the bot's own program (inside a sandbox, not bubblewrap's; None until it is
    there); `input_fd()` the referee's end of the bot's stdin.
    """

    def __init__(self, bot_pid: Callable[[], int | None], input_fd: Callable[[], int]) -> None:
        self._bot_pid = bot_pid
        self._input_fd = input_fd
        self._clock: int | None = None
        """The CPU clock of the bot's process, once its pid is known (`cpu_clock_ns`: read at every move)."""
        self._fds: dict[str, int] = {}
        """Open files of the bot's main thread in /proc, by name (-1: could not be opened)."""

    def cpu_wait_ns(self) -> int | None:
        fields = self._main_thread_file("schedstat")
        try:
            return None if fields is None else int(fields[1])
        except (IndexError, ValueError):
            return None

    def input_unread(self) -> int | None:
        buffer = bytearray(4)
        try:
            fcntl.ioctl(self._input_fd(), termios.FIONREAD, buffer)
        except (OSError, AttributeError):
            return None
        return int.from_bytes(buffer, sys.byteorder)

    def asleep_on_input(self) -> bool:
        # The main thread's current system call (/proc/PID/syscall: the number and its arguments, or "running"):
        # a read of fd 0. Not a poll or a read of another pipe: the bot may be waiting for its own helper there,
        # and would be excused for the time it chose not to read its turn.
        fields = self._main_thread_file("syscall") if _READ_SYSCALLS else None
        try:
            return fields is not None and int(fields[0]) in _READ_SYSCALLS and int(fields[1], 16) == 0
        except (IndexError, ValueError):
            return False

    def cpu_clock_ns(self) -> int | None:
        clock = self._clock
        if clock is None:
            pid = self._bot_pid()
            if pid is None:
                return None
            clock = self._clock = process_cpu_clock(pid)
        try:
            return time.clock_gettime_ns(clock)
        except OSError:
            return None

    def cpu_sample(self) -> tuple[bool, int] | None:
        # The process's CPU clock counts the current slice too, unlike schedstat; the main thread's state is the
        # first field after the command in its stat file. Other threads running make the clock move: then the
        # bot is not taken as held off a CPU.
        pid = self._bot_pid()
        if pid is None:
            return None
        try:
            with open(f"/proc/{pid}/task/{pid}/stat", "rb") as stat:
                state = stat.read().rpartition(b")")[2].split()[0]
            cpu = process_cpu_ns(pid)
        except (OSError, IndexError):
            return None
        return state == b"R", cpu

    def close(self) -> None:
        for name, fd in self._fds.items():
            if fd >= 0:
                os.close(fd)
            self._fds[name] = -1

    def _main_thread_file(self, name: str) -> list[bytes] | None:
        """The fields of /proc/PID/task/PID/`name` of the bot's main thread now; None if it cannot be read."""
        fd = self._fds.get(name)
        if fd is None:
            pid = self._bot_pid()
            if pid is None:
                return None
            try:
                fd = os.open(f"/proc/{pid}/task/{pid}/{name}", os.O_RDONLY)
            except OSError:
                fd = -1
            self._fds[name] = fd
        if fd < 0:
            return None
        try:
            return os.pread(fd, 128, 0).split()
        except OSError:
            return None
