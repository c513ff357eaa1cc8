"""One move's time, in one place: from the moment its turn is written to the verdict.

A `MoveTimer` is made for every turn from two things, by composition:

- a probe of the bot (`referee.timing.probe`): `LinuxProbe` reads a local bot's main thread in /proc, `NullProbe`
  measures nothing (a bot over memory streams, on another machine or another system), so no delay of the host
  is ever credited to a bot it watches;
- a source of the referee's own lateness (`referee.timing.latency`): the host's lag monitor, or a constant (none at all
  for a bot whose replies the kernel stamps at its write and whose turns are written from its own core).

The game asks it when to wake (`due_ns`: the deadline, moved on while the host's measured delay lasts), tells it
when the deadline passed with no move (`expired`: listen on, or give up), stops it at the reply (`stop`), and has
it judge the charged move (`judge`): in time, lost on time (a forfeit, with the reason), or void because the host
was late (with the reason). The rules are pure functions in `referee.timing.rules`, tested as tables; this module only
samples and feeds them.

What a move in time costs: the probe's two reads at the start (the bot's run-queue wait and its CPU clock: their
values at the start cannot be read later) and nothing after: the host's share of the move (the bot's wait since
the start, the referee's measured lag, the host's CPU pressure, the opponent's CPU) is read only for a move past
its deadline, the one case where a verdict depends on it. A stamped reply (`stamped`) is timed at the bot's own
write, so the lag monitor's stalls are not even asked for then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from referee.play.reader import TurnWrite
from referee.timing.clock import Charge
from referee.timing.latency import WATCH_BEFORE_DEADLINE_NS, LagSource, ReadWatch, cpu_pressure, lag_period_ns
from referee.timing.probe import BotProbe
from referee.timing.rules import HELD_CPU_NS, GiveUp, Judgement, Overrun, host_kept, judge, past_deadline, write_lag

__all__ = ["MoveTime", "MoveTimer"]

_NEVER_NS = 1 << 62  # a move with no deadline: never judged, so never watched at every period


class MoveTime(NamedTuple):
    """What the timer measured of a move once it ended (`MoveTimer.stop`)."""

    elapsed_ns: int
    """From immediately before the turn's write to the bot's write of its reply (or to giving up)."""
    lag_ns: int
    """The referee's own lateness measured during the move (the record's `latency_ms`)."""
    answered: bool


class MoveTimer:
    """The clock of one move: sampled at the start, asked when to wake, stopped at the reply, and judge of a late one.

    Times are in the bot channel's clock (`now_ns`, nanoseconds). `limit_ns` is how long the referee waits for the
    move (the allowance plus the margin; None: no limit). Made immediately before the turn is written; `begin`
    once the write has started (its `TurnWrite`), and `close` always.
    """

    __slots__ = (
        "_asleep",
        "_cpu_from",
        "_deadline",
        "_end",
        "_grace",
        "_held_from",
        "_held_since",
        "_later",
        "_limit",
        "_now_ns",
        "_opened",
        "_probe",
        "_stamped",
        "_turn",
        "_waited",
        "_watch",
        "_window",
        "_written_ns",
        "start_ns",
    )

    def __init__(
        self,
        probe: BotProbe,
        lag: LagSource,
        now_ns: Callable[[], int],
        limit_ns: int | None,
        *,
        stamped: bool = False,
    ) -> None:
        self._probe = probe
        self._now_ns = now_ns
        self._limit = limit_ns
        self._stamped = stamped
        # The start sample: the bot's total wait for a CPU and its CPU clock, what the host's share of a late move
        # is measured from (their values now cannot be read later). A move with no deadline is never late.
        waited = self._waited = None if limit_ns is None else probe.cpu_wait_ns()
        self._cpu_from = None if waited is None else probe.cpu_clock_ns()
        # The lag window opens a moment before the write, so it covers the whole move. A stamped reply's time does
        # not depend on the referee's stalls: they are watched only near the deadline, the one place a verdict
        # may ask for them (and the bot's read of its turn, from a period after the start: `look`).
        opened = self._opened = self.start_ns = now_ns()
        quiet_until = None
        if stamped:
            quiet_until = opened + (_NEVER_NS if limit_ns is None else limit_ns - WATCH_BEFORE_DEADLINE_NS)
        watchable = waited is not None and lag.monitors
        # A stamped move far from its deadline has its read watched only if it is still on a period after its start
        # (`look`): most moves are over by then, and the two reads of the bot that a watch needs at the start (its
        # input and whether it sleeps on it, about 6 us a move) are made then, for the few that are not.
        self._later = watchable and quiet_until is not None and quiet_until > opened + lag_period_ns(lag)
        # The monitor notes how long the host kept the bot from reading this turn (its wait for a CPU).
        watch = self._read_watch() if watchable and not self._later and probe.input_unread() is not None else None
        self._watch = watch
        self._asleep = watch is not None and probe.asleep_on_input()
        self._written_ns: int | None = None
        self._window = lag.open(opened, watch, quiet_until_ns=quiet_until, look=self._later)
        self._turn: TurnWrite | None = None
        self._deadline: int | None = None
        self._grace = 0
        self._held_from: int | None = None
        self._held_since = 0
        self._end = 0

    # -- the turn is written ----------------------------------------------------------------------------------

    @property
    def written(self) -> Callable[[int], None] | None:
        """What the turn's writer calls once its last byte went in (`TurnWrite`): None when nothing watches it."""
        return None if self._watch is None and not self._later else self._note_written

    def _note_written(self, start_ns: int) -> None:
        self._written_ns = start_ns
        watch = self._watch
        if watch is not None:
            limit = self._limit
            watch.deadline_ns = None if limit is None else start_ns + limit
            if self._asleep:
                watch.asleep_from_ns = start_ns
            watch.written = True

    def begin(self, turn: TurnWrite) -> None:
        """The turn's write has started: the move's time runs from immediately before it."""
        self._turn = turn
        start = self.start_ns = turn.start_ns or self._opened
        limit = self._limit
        self._deadline = None if limit is None else start + limit

    # -- when to wake -----------------------------------------------------------------------------------------

    @property
    def look_ns(self) -> int | None:
        """When to `look`, if the move is still on then (None: no need): a period after a stamped move's start, the
        lag monitor's first look at its read of the turn (`referee.timing.latency.LagWindow.look_ns`)."""
        return self._window.look_ns

    def look(self) -> None:
        """The move is still on at `look_ns`: the lag monitor watches it from now on, and the bot's read of its turn
        (a `ReadWatch` made now, for a move that had none)."""
        watch = None
        if self._later:
            probe = self._probe
            unread = probe.input_unread()
            if unread is not None:
                watch = self._watch = self._read_watch()
                # A bot still blocked on its input, its turn unread, was blocked so when the turn came.
                self._asleep = bool(unread) and probe.asleep_on_input()
                if self._written_ns is not None:
                    self._note_written(self._written_ns)  # else the write's end completes it
        self._window.look(watch)  # the watch whole before the monitor can see it

    def _read_watch(self) -> ReadWatch:
        """A watch of the bot's read of its turn, from the start sample of its wait for a CPU."""
        probe = self._probe
        return ReadWatch(lambda: probe.input_unread() or 0, probe.cpu_wait_ns, self._waited or 0)

    @property
    def due_ns(self) -> int | None:
        """When the move is next due to be looked at: its deadline, plus the host's delay once it passed."""
        deadline = self._deadline
        return None if deadline is None else deadline + self._grace

    def expired(self, now_ns: int) -> bool:
        """At `due_ns` with no move: True to give up (no move is coming in time), False to listen on (`due_ns` has
        moved on: the host was late by that much, or the bot is ready to run and the host hardly runs it)."""
        deadline = self._deadline
        assert deadline is not None
        start = self.start_ns
        delay = self._lag_ns(now_ns) + max(self._kept_ns(now_ns - start), self._window.wait_before_read_ns())
        decision = past_deadline(now_ns=now_ns, deadline_ns=deadline, start_ns=start, delay_ns=delay, held=self._held)
        if isinstance(decision, GiveUp):
            if not decision.held:
                self._held_since = 0
            return True
        if decision.held_since:
            self._held_since = self._held_since or now_ns
        self._grace = decision.grace_ns
        return False

    def _held(self) -> bool:
        """Whether the host, not the bot, may be what is late: its main thread is ready to run and its process has
        used less than `HELD_CPU_NS` of CPU since it was first looked at past its deadline. A bot that sleeps, or
        thinks on past its deadline, or cannot be watched is not held."""
        probe = self._probe
        if self._held_from is None:
            self._held_from = probe.cpu_clock_ns()
        sample = probe.cpu_sample()
        held_from = self._held_from
        return sample is not None and held_from is not None and sample[0] and sample[1] - held_from < HELD_CPU_NS

    # -- the end ----------------------------------------------------------------------------------------------

    def stop(self, end_ns: int, *, answered: bool) -> MoveTime:
        """The move ended at `end_ns` (the reply's stamp, or when the referee gave up): what it took, and the
        referee's lateness during it (the monitor's stalls matter only where the reply was timed at its read: a
        reply the kernel stamped at the bot's write is timed exactly however late the referee ran)."""
        self._end = end_ns
        if answered:
            self._held_since = 0  # it was not held after all: it answered
        lag = self._write_lag() if answered and self._stamped else self._lag_ns(end_ns)
        return MoveTime(end_ns - self.start_ns, lag, answered)

    def _write_lag(self) -> int:
        turn = self._turn
        return 0 if turn is None else write_lag(turn.write_ns, turn.write_cpu_ns, self._cpu_from)

    def _lag_ns(self, end_ns: int) -> int:
        return max(self._window.lag_ns(end_ns), self._write_lag())

    def _kept_ns(self, wall_ns: int) -> int:
        """`timing.host_kept` over the bot's run-queue wait and CPU time since the start (`wall_ns` ago)."""
        probe, waited, cpu_from = self._probe, self._waited, self._cpu_from
        now_wait = None if waited is None else probe.cpu_wait_ns()
        wait = None if waited is None or now_wait is None else now_wait - waited
        cpu_now = None if cpu_from is None else probe.cpu_clock_ns()
        cpu = None if cpu_from is None or cpu_now is None else cpu_now - cpu_from
        return host_kept(wait, cpu, wall_ns)

    def judge(
        self,
        measured: MoveTime,
        charge: Charge,
        *,
        margin_ns: int,
        who: str,
        opponent_cpu_ns: Callable[[], int | None],
    ) -> Judgement | None:
        """The verdict on the move as the clock charged it (`charge`): None in time; else lost on time or void for the
        host, with the reason (`referee.timing.rules.judge`). Only here, past the deadline, is the host's share of
        the move read: the bot's wait since the start, what the lag monitor saw, the opponent's CPU meanwhile
        (`opponent_cpu_ns`), the host's CPU pressure. `who` names the side ("black (alpha)")."""
        if charge.in_time:
            return None
        before_write = 0
        watch = self._watch
        if watch is not None and measured.answered:
            # The host may stop the bot between the end of its own clock and its write (`ReadWatch`).
            before_write = watch.wait_before_write_ns(self._end, self._probe.cpu_wait_ns())
        held_since = self._held_since
        move = Overrun(
            elapsed_ns=charge.elapsed_ns,
            overrun_ns=charge.overrun_ns,
            allowed_ns=charge.allowed_ns or 0,
            limit_ns=self._limit or 0,
            margin_ns=margin_ns,
            answered=measured.answered,
            lag_ns=measured.lag_ns,
            before_read_ns=self._window.wait_before_read_ns(),
            before_write_ns=before_write,
            bot_wait_ns=self._kept_ns(charge.elapsed_ns),
            held_ns=self._now_ns() - held_since if held_since else 0,
            opponent_cpu_ns=opponent_cpu_ns(),
        )
        return judge(move, who=who, pressure=cpu_pressure() if measured.answered else None)

    def close(self) -> None:
        """Stop measuring (the move is over)."""
        self._window.close()
