"""The referee's own lateness: measured around every move, so that a bot is never charged for the host's delays.

A bot's move is timed by the loop that plays its game (`referee.play.loop`), from the turn's write to the bot's
write of its reply (stamped by the kernel on Linux). That loop can itself be late: descheduled on a busy host,
or the whole referee stopped. This module measures how late the referee was during each move, and the game
asks it before it forfeits a bot on time (`referee.play.game`): when the measured lag is larger than the bot's
overrun, the referee cannot show that it was on time itself, and the game is void instead.

- `HostLagMonitor`: one thread per referee process that sleeps a fixed period and notes how much later
  than asked it woke (host scheduling and the interpreter lock both delay it, as they delay a read).
  A move's window collects the longest such stall overlapping it, and a stall still in progress counts.
  It runs only for bots it can help: not for a bot pinned beside its game's loop whose replies the kernel
  stamps (`BotProcess`), whose moves are timed exactly and whose turns reach it on its own core. For a
  stamped bot elsewhere, it wakes at every period only for a move still on a period after its start (the game
  asks: `LagWindow.look`), until the bot has read its turn, and again near the move's deadline, where a verdict
  may ask.
- CPU pressure (`/proc/pressure/cpu`, where the kernel has it) is not charged against anything, but it is
  named in the reason of a game voided for the host's lateness, to say what the host was doing.

`LagSource` is the interface a channel uses, so tests can inject their own (`ConstantLag`). The summary of
a run's latency (`summarize_latency`) is pure arithmetic over game records.

Sharing between the monitor thread and a game's loop is here and nowhere else, and it is safe without a lock
because every field has one writer and is replaced whole (a reference or an int, set atomically under the
interpreter lock): the game sets a `ReadWatch`'s `deadline_ns`, `asleep_from_ns` and then `written` once, before
the monitor reads them; the monitor alone sets its samples and `wait_before_read_ns`, which the game reads after
the reply (a value at most one wake old, which the rules in `referee.timing.rules` allow for). A window's `stalls` list
is appended to by the monitor alone and read by the game (a list append is atomic); `windows` is a set the game
adds to and discards from, and the monitor iterates over a copy (`tuple(self.windows)`). Every other thread of
the referee hands the trio loops immutable values through trio's own channels or `run_sync_soon`.
"""

from __future__ import annotations

import math
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from referee.host import process_wide
from referee.record import GameRecord, Termination

__all__ = [
    "MONITOR_PERIOD_NS",
    "NO_LAG",
    "VOID_WARNING_PCT",
    "WATCH_BEFORE_DEADLINE_NS",
    "ConstantLag",
    "HostLagMonitor",
    "LagSource",
    "LagWindow",
    "LatencySummary",
    "LatencyTally",
    "ReadWatch",
    "cpu_pressure",
    "host_lag_monitor",
    "lag_period_ns",
    "latency_text",
    "summarize_latency",
]

MONITOR_PERIOD_NS = 1_000_000
"""How often the monitor thread wakes while a move needs it (1 ms): a stall shorter than this may go unseen."""
WATCH_BEFORE_DEADLINE_NS = 250_000_000
"""How long before a stamped move's deadline the monitor watches it at every period (`LagSource.open`)."""
FAST_MOVES_NS = 20_000_000
"""Moves that start closer together than this keep the monitor at every period for a second (`IDLE_NS`): a wake
out of a quiet sleep for each of them would cost more than the periods do."""
IDLE_NS = 1_000_000_000
"""With no user for this long, the monitor thread ends (a referee between games keeps it)."""
PRESSURE_PATH = Path("/proc/pressure/cpu")
VOID_WARNING_PCT = 2.0
"""More than this share of games voided for the referee's lateness gets a prominent warning."""


@dataclass
class ReadWatch:
    """Watches a bot read its turn: how long the host kept it from reading (its wait for a CPU until then).

    `unread()` is the number of bytes still in the bot's input pipe; `cpu_wait()` the bot's total run-queue
    time (ns, None if unknown); `start_wait` that total at the move's start. The monitor thread sees the input
    emptied at its next wake (within a period) and notes the bot's wait since the start.

    It also samples the bot's total wait at every wake while the move runs, so that the game can tell how long
    the host kept the bot off a CPU from its deadline until its move arrived (`wait_before_write_ns`): a bot
    stopped by the host after its own clock stopped, often several times (each of its writes wakes a referee
    thread), is otherwise charged for those waits with no evidence.
    """

    unread: Callable[[], int]
    cpu_wait: Callable[[], int | None]
    start_wait: int
    read_seen_ns: int | None = None
    wait_before_read_ns: int = 0
    queued_before_read_ns: int = 0
    """The part of `wait_before_read_ns` the bot spent on a run queue (its schedstat; not counted again after)."""
    samples: tuple[tuple[int, int], ...] = ()
    """The last two (monotonic ns, bot's total wait ns) samples of the monitor, oldest first."""
    deadline_ns: int | None = None
    """The move's deadline (set by the game; None: no deadline)."""
    at_deadline: tuple[int, int] | None = None
    """The last sample taken at or before the deadline."""
    written: bool = False
    """Set by the game once the turn is written: an empty pipe before that is not a read."""
    asleep_from_ns: int | None = None
    """Set by the game when the bot was blocked reading its stdin as the turn was written, to the move's start:
    from then until it reads, it is waiting for the host to run it (on a virtual machine, waking an idle virtual
    CPU takes up to milliseconds, and no run queue shows it)."""

    def check(self, now_ns: int) -> None:
        total = self.cpu_wait()
        if total is not None:
            self.samples = (*self.samples[-1:], (now_ns, total))
            if self.deadline_ns is None or now_ns <= self.deadline_ns:
                self.at_deadline = (now_ns, total)
        if not self.written or self.read_seen_ns is not None:
            return
        if self.unread() == 0:
            self.read_seen_ns = now_ns
            self.queued_before_read_ns = 0 if total is None else max(0, total - self.start_wait)
            self.wait_before_read_ns = max(self.wait_before_read_ns, self.queued_before_read_ns)
        elif self.asleep_from_ns is not None:
            # Still unread now: at least this long (the read comes between this look and the next).
            self.wait_before_read_ns = max(self.wait_before_read_ns, now_ns - self.asleep_from_ns)

    def wait_before_write_ns(self, end_ns: int, total_now: int | None) -> int:
        """The bot's wait for a CPU from the monitor's last sample before the deadline (or before `end_ns`, its
        move's arrival, if that came first) until now (`total_now`, sampled just after the arrival); 0 if unknown.

        The kernel adds a wait to the total when the task gets the CPU back, so a bot stopped for 10 ms before it
        wrote shows a 10 ms step after the last sample. Without a sample before (the monitor was itself late,
        which it reports as lag) it is 0. It never counts the wait before the read (`wait_before_read_ns`) again,
        so the two add up.
        """
        before = [sample for sample in (self.at_deadline, *self.samples) if sample is not None and sample[0] <= end_ns]
        if total_now is None or not before:
            return 0
        base = min(before)[1]
        if self.read_seen_ns is not None:
            base = max(base, self.start_wait + self.queued_before_read_ns)
        return max(0, total_now - base)


class LagWindow(Protocol):
    """The referee's lateness measured from one instant (a move's start) on."""

    @property
    def look_ns(self) -> int | None:
        """When the game is to call `look` if the move is still on (None: never). A stamped move's read of its turn
        is first looked at a period after its start, by the monitor woken then by the game (`look`), not by a wake
        of the monitor at every move: most moves are over by then (with instant bots the monitor woke a thousand
        times a second for moves that had ended, a quarter of the referee's CPU a move with one game at a time)."""
        ...

    def look(self, watch: ReadWatch | None = None) -> None:
        """The move is still on at `look_ns`: have the monitor watch it from now on (`look_ns` is None after), with
        `watch` (the bot's read of its turn) if given."""
        ...

    def lag_ns(self, end_ns: int) -> int:
        """The longest the referee was measurably late between the window's start and `end_ns`."""
        ...

    def wait_before_read_ns(self) -> int:
        """How long the host kept the bot from reading its turn (0 if unknown or not watched)."""
        ...

    def close(self) -> None:
        """Stop measuring (the move is over)."""
        ...


class LagSource(Protocol):
    """Opens a `LagWindow` at a move's start (times in the channel's clock, nanoseconds)."""

    monitors: bool
    """Whether a window watches the bot read its turn (`ReadWatch`): only a monitor thread does."""

    def open(
        self, start_ns: int, watch: ReadWatch | None = None, *, quiet_until_ns: int | None = None, look: bool = False
    ) -> LagWindow:
        """A window from `start_ns`. `quiet_until_ns`: the move's reply is stamped by the kernel, so the referee's
        stalls cannot change its time, and until then (its deadline, less `WATCH_BEFORE_DEADLINE_NS`) no verdict
        can need them; None: watch it all along. `look`: the game will call `LagWindow.look` (with the watch of the
        bot's read, made then) if the move is still on a period after its start."""
        ...


class _FixedWindow:
    __slots__ = ("_lag_ns",)

    look_ns = None

    def __init__(self, lag_ns: int) -> None:
        self._lag_ns = lag_ns

    def look(self, watch: ReadWatch | None = None) -> None:
        pass

    def lag_ns(self, end_ns: int) -> int:
        return self._lag_ns

    def wait_before_read_ns(self) -> int:
        return 0

    def close(self) -> None:
        pass


class ConstantLag:
    """A lag source that reports the same lag for every move: for tests, and for channels without a host."""

    monitors = False

    def __init__(self, lag_ns: int = 0) -> None:
        self._window = _FixedWindow(lag_ns)

    def open(
        self, start_ns: int, watch: ReadWatch | None = None, *, quiet_until_ns: int | None = None, look: bool = False
    ) -> LagWindow:
        return self._window


NO_LAG = ConstantLag(0)
"""Memory-stream channels (tests) have no host to be late: nothing is ever voided for lag."""


class _MonitorWindow:
    """A window of the host monitor. Its stalls are updated by the monitor thread (under the GIL)."""

    __slots__ = ("_monitor", "look_ns", "quiet_until_ns", "stalls", "start_ns", "watch")

    def __init__(
        self,
        monitor: HostLagMonitor,
        start_ns: int,
        watch: ReadWatch | None,
        quiet_until_ns: int | None,
        look: bool = False,
    ) -> None:
        self._monitor = monitor
        self.start_ns = start_ns
        self.watch = watch
        self.quiet_until_ns = quiet_until_ns
        """Until when the move needs no look at every period (None: it needs them all along)."""
        watched = quiet_until_ns is not None and (watch is not None or look)
        self.look_ns: int | None = start_ns + monitor.period_ns if watched else None
        """A stamped move whose read is watched: when the game wakes the monitor for it, if it is still on (`look`)."""
        self.stalls: list[tuple[int, int]] = []
        """(from, to) of the stalls that overlapped the window, each longer than the ones before it."""

    def quiet_until(self, now_ns: int, period_ns: int) -> int | None:
        """Until when the monitor need not look at this move at every period; None when it must from `now_ns`: a
        reply timed at its read, a turn not yet read (once the game has asked, `look`), or a deadline near."""
        quiet = self.quiet_until_ns
        if quiet is None or quiet <= now_ns + period_ns:
            return None
        watch = self.watch
        if watch is not None and watch.read_seen_ns is None and self.look_ns is None:
            return None
        return quiet

    def look(self, watch: ReadWatch | None = None) -> None:
        if watch is not None:
            self.watch = watch  # whole: the monitor sees it or not (a reference, replaced atomically)
        self.look_ns = None
        self._monitor.needed()

    def lag_ns(self, end_ns: int) -> int:
        start = self.start_ns
        worst = 0
        for stall_from, stall_to in (*self.stalls, self._monitor.stall_in_progress()):
            overlap = min(stall_to, end_ns) - max(stall_from, start)
            worst = max(worst, overlap)
        return worst

    def wait_before_read_ns(self) -> int:
        watch = self.watch
        return 0 if watch is None else watch.wait_before_read_ns

    def close(self) -> None:
        self._monitor.windows.discard(self)


class HostLagMonitor:
    """A thread that wakes every `period_ns` and notes how late it woke; windows collect the stalls.

    It wakes at every period only while a move needs it: one whose reply is timed at the referee's read (no
    kernel stamps), one whose bot has not yet read its turn (`ReadWatch`: how long the host kept it from
    reading; for a stamped move, once it is still on a period after its start: `_MonitorWindow.look`), one near
    its deadline (`WATCH_BEFORE_DEADLINE_NS`), and while moves timed at their read come faster than
    `FAST_MOVES_NS`. Otherwise, a stamped move read and far from its deadline, it sleeps until the deadline
    nears or the next move begins: 1,000 wakes a second cost about 30 ms of CPU a second, which a bot that
    thinks for a second between its reads does not need.

    Runs while it has users (`acquire`/`release`), and ends a second after the last one.
    """

    monitors = True

    def __init__(self, period_ns: int = MONITOR_PERIOD_NS) -> None:
        self.period_ns = period_ns
        self.windows: set[_MonitorWindow] = set()
        self.worst_ns = 0
        """The longest stall seen since the monitor started (for summaries)."""
        self.wakes = 0
        """How many times the thread has woken."""
        self._target_ns = 0  # when the thread should next wake (0: not sleeping)
        self._every_period_until = 0  # looks at every period until then (moves came fast)
        self._last_open_ns = 0
        self._quiet = False  # in a quiet sleep, which a move that needs every period ends (`_wake`)
        self._wake = threading.Event()
        self._users = 0
        self._idle_since = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def open(
        self, start_ns: int, watch: ReadWatch | None = None, *, quiet_until_ns: int | None = None, look: bool = False
    ) -> _MonitorWindow:
        window = _MonitorWindow(self, start_ns, watch, quiet_until_ns, look)
        self.windows.add(window)
        if quiet_until_ns is None:  # timed at its read: watched all along
            if start_ns - self._last_open_ns < FAST_MOVES_NS:
                self._every_period_until = start_ns + IDLE_NS  # moves come fast: every period, not a wake for each
            self._last_open_ns = start_ns
        if self._quiet and window.quiet_until(start_ns, self.period_ns) is None:
            self._wake.set()  # out of its quiet sleep: this move needs it now
        return window

    def needed(self) -> None:
        """A move needs the thread now (`_MonitorWindow.look`): out of its quiet sleep, if it is in one."""
        if self._quiet:
            self._wake.set()

    def stall_in_progress(self) -> tuple[int, int]:
        """(from, now) if the thread is late to wake right now (a stall it cannot report yet), else (0, 0)."""
        target = self._target_ns
        now = time.monotonic_ns()
        return (target, now) if target and now > target else (0, 0)

    def acquire(self) -> None:
        with self._lock:
            self._users += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lag-monitor", daemon=True)
                self._thread.start()

    def release(self) -> None:
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users == 0:
                self._idle_since = time.monotonic_ns()

    def _ended(self, now_ns: int) -> bool:
        """Whether the thread is to end now: no user for `IDLE_NS` (decided under the lock `acquire` takes)."""
        with self._lock:
            if self._users == 0 and now_ns - self._idle_since >= IDLE_NS:
                self._thread = None
                self._target_ns = 0
                return True
            return False

    def _run(self) -> None:
        period = self.period_ns
        monotonic_ns, sleep, wake = time.monotonic_ns, time.sleep, self._wake
        target = monotonic_ns() + period
        while True:
            self._target_ns = target
            delay = target - monotonic_ns()
            if delay > 0:
                if self._quiet:
                    wake.wait(delay / 1e9)  # a move that needs every period ends it early: woken before the target
                else:
                    sleep(delay / 1e9)
            woke = monotonic_ns()
            self.wakes += 1
            late = woke - target
            if late > 0:
                self._note_stall(target, woke, late)
            windows = tuple(self.windows)
            for window in windows:
                if window.watch is not None:
                    try:
                        window.watch.check(woke)
                    except OSError:  # the bot's pipe is gone: nothing to watch
                        window.watch = None
            # Quiet, and the wake cleared, before the moves are looked at again to choose the next sleep: a move
            # `open` adds after that look finds the thread quiet and wakes it (the window is added first).
            self._quiet = True
            wake.clear()
            windows = tuple(self.windows)
            quiet_until = self._quiet_until(woke, windows)
            if quiet_until is None:
                self._quiet = False
                # The next wake is a period after this one: a long stall is not followed by catch-up wakes (and
                # one woken early, out of a quiet sleep, starts its periods now).
                target = max(target + period, woke + period // 2) if woke >= target else woke + period
            elif not windows and self._ended(woke):
                return
            else:
                target = max(quiet_until, woke + period)

    def _note_stall(self, stall_from: int, stall_to: int, late: int) -> None:
        self.worst_ns = max(self.worst_ns, late)
        for window in tuple(self.windows):
            overlap = stall_to - max(stall_from, window.start_ns)
            stalls = window.stalls
            if overlap > 0 and (not stalls or overlap > stalls[-1][1] - max(stalls[-1][0], window.start_ns)):
                stalls.append((stall_from, stall_to))

    def _quiet_until(self, now_ns: int, windows: tuple[_MonitorWindow, ...]) -> int | None:
        """Until when no move needs a look at every period (None: one does now)."""
        if now_ns < self._every_period_until:
            return None
        period = self.period_ns
        until = now_ns + IDLE_NS
        for window in windows:
            quiet = window.quiet_until(now_ns, period)
            if quiet is None:
                return None
            until = min(until, quiet)
        return until


def lag_period_ns(lag: LagSource) -> int:
    """How often `lag` looks at a move it watches (ns; 0 for a source with no thread)."""
    return lag.period_ns if isinstance(lag, HostLagMonitor) else 0


def host_lag_monitor() -> HostLagMonitor:
    """The monitor of this referee process (one for all games: it measures the host, not a game)."""
    return process_wide.LAG_MONITOR.get(HostLagMonitor)


def cpu_pressure(path: Path = PRESSURE_PATH) -> float | None:
    """The share of the last 10 s in which some task waited for a CPU (`/proc/pressure/cpu`), or None."""
    try:
        text = path.read_text(encoding="ascii")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split()[1:]:
                key, _, value = field.partition("=")
                if key == "avg10":
                    try:
                        return float(value)
                    except ValueError:
                        return None
    return None


# -- the summary of a run --------------------------------------------------------------------------------------


class LatencySummary(BaseModel):
    """The referee's measured lateness over the moves of a run, and the games voided because of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    moves: int = Field(ge=0, description="Moves with a measured latency (the records' `latency_ms`).")
    p50_ms: float | None = Field(description="Median of the referee's lateness per move, ms (null: no moves).")
    p99_ms: float | None = Field(description="99th percentile (nearest rank) of the lateness per move, ms.")
    max_ms: float | None = Field(description="The largest lateness of any move, ms.")
    games: int = Field(ge=0, description="Games looked at (voids included).")
    void_for_lag: int = Field(
        ge=0,
        description="Games voided because a bot would have lost on time by less than the host's measured delay"
        " (the referee's own lateness plus the bot's wait for a CPU): never scored, played again.",
    )
    void_for_lag_pct: float = Field(ge=0, description="void_for_lag as a percentage of `games`.")
    warning: str | None = Field(
        description="Set when more than a few percent of games were voided for the host's lateness: what to do."
    )


def _nearest_rank(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of sorted `values` (an observed value, never an interpolation)."""
    rank = max(1, math.ceil(fraction * len(values)))
    return values[rank - 1]


def is_void_for_lag(record: GameRecord) -> bool:
    """Whether the game was voided because the host was late (see `referee.play.game`), not for a referee error."""
    return record.termination is Termination.VOID and record.referee_lag_ms is not None


class LatencyTally:
    """The moves' latencies and the games of a run, added as games end (a run keeps one; pure)."""

    def __init__(self, records: Iterable[GameRecord] = ()) -> None:
        self.latencies = array("d")
        self.games = 0
        self.void_for_lag = 0
        for record in records:
            self.add(record)

    def add(self, record: GameRecord) -> None:
        """Count one finished game (aborted games, stopped by the user, are left out)."""
        if record.termination is Termination.ABORTED:
            return
        self.games += 1
        self.void_for_lag += is_void_for_lag(record)
        self.latencies.extend(move.latency_ms for move in record.moves if move.latency_ms is not None)

    def summary(self) -> LatencySummary:
        """p50, p99 and max of the referee's lateness per move, the games voided for it, and a warning."""
        latencies = sorted(self.latencies)
        games, voids = self.games, self.void_for_lag
        pct = 100.0 * voids / games if games else 0.0
        warning = None
        if voids and pct > VOID_WARNING_PCT:
            warning = (
                f"{voids} of {games} games ({pct:.1f}%) were void because the host was late (the machine is"
                " overloaded): they are not scored and are played again. Lower --concurrency, raise the time"
                " control, or add --margin-ms"
            )
        return LatencySummary(
            moves=len(latencies),
            p50_ms=_nearest_rank(latencies, 0.5) if latencies else None,
            p99_ms=_nearest_rank(latencies, 0.99) if latencies else None,
            max_ms=latencies[-1] if latencies else None,
            games=games,
            void_for_lag=voids,
            void_for_lag_pct=pct,
            warning=warning,
        )


def summarize_latency(records: Iterable[GameRecord]) -> LatencySummary:
    """p50, p99 and max of the referee's lateness per move, and the games voided for the host, with a warning."""
    return LatencyTally(records).summary()


def latency_text(summary: LatencySummary) -> str:
    """One line for the end of a run (and the warning, if any, on the lines after it)."""
    if summary.p50_ms is None:
        line = "referee latency: no moves measured"
    else:
        line = (
            f"referee latency per move: p50 {summary.p50_ms:.3f} ms, p99 {summary.p99_ms:.3f} ms,"
            f" max {summary.max_ms:.3f} ms over {summary.moves} moves"
        )
    line += f"; games void for the host's lateness: {summary.void_for_lag} of {summary.games}"
    if summary.warning:
        line += f"\nWARNING: {summary.warning}"
    return line
