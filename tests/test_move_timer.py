"""The per-move timer as tables: built from a probe and a lateness source, it says when to wake and judges.

No trio and no processes: a scripted probe, a constant lateness and a hand-moved clock (`referee.timing.move_timer`).
The rules it feeds are tested on their own in tests/test_timing.py; here, that the timer samples what they need,
when they need it, and that a move in time reads nothing of the host after its start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from protocol.rules import BLACK
from referee.play.reader import TurnWrite
from referee.timing.clock import Charge, GameClock, parse_time_control
from referee.timing.latency import NO_LAG, ConstantLag, HostLagMonitor
from referee.timing.move_timer import MoveTime, MoveTimer
from referee.timing.probe import BotProbe, NullProbe
from referee.timing.rules import HELD_CHECK_NS, HELD_MAX_NS, Judgement

MS = 1_000_000
START = 1_000 * MS


@dataclass
class Now:
    """A clock the test moves by hand."""

    ns: int = START

    def __call__(self) -> int:
        return self.ns


@dataclass
class ScriptedProbe:
    """A bot's probe whose totals the test sets (`wait`, `cpu`, `ready`), counting every read."""

    wait: int | None = 0
    cpu: int | None = 0
    ready: bool = False
    unread: int = 0
    asleep: bool = False
    reads: list[str] = field(default_factory=list)

    def cpu_wait_ns(self) -> int | None:
        self.reads.append("wait")
        return self.wait

    def input_unread(self) -> int | None:
        self.reads.append("unread")
        return self.unread

    def asleep_on_input(self) -> bool:
        self.reads.append("asleep")
        return self.asleep

    def cpu_clock_ns(self) -> int | None:
        self.reads.append("cpu")
        return self.cpu

    def cpu_sample(self) -> tuple[bool, int] | None:
        self.reads.append("sample")
        return None if self.cpu is None else (self.ready, self.cpu)

    def close(self) -> None:
        pass


def started(probe: BotProbe, now: Now, *, limit_ms: int | None = 100, lag_ms: int = 0) -> MoveTimer:
    """A timer for a 100 ms move (no margin) whose turn was written at `now` in one quick write call."""
    lag = ConstantLag(lag_ms * MS) if lag_ms else NO_LAG
    timer = MoveTimer(probe, lag, now, None if limit_ms is None else limit_ms * MS)
    timer.begin(TurnWrite.made(b"turn\n", now.ns))
    return timer


def verdict_of(
    timer: MoveTimer, measured: MoveTime, opponent_cpu_ns: Callable[[], int | None] = lambda: None
) -> tuple[Charge, Judgement | None]:
    """The move charged by a 100 ms a move clock, and the timer's verdict on it."""
    charge = GameClock(parse_time_control("movetime:0.1")).charge(
        BLACK, measured.elapsed_ns, timed_out=not measured.answered
    )
    return charge, timer.judge(measured, charge, margin_ns=0, who="black (alpha)", opponent_cpu_ns=opponent_cpu_ns)


def test_a_move_in_time_reads_the_probe_at_its_start_only() -> None:
    now, probe = Now(), ScriptedProbe(wait=5 * MS, cpu=7 * MS)
    asked: list[bool] = []

    def opponent_cpu() -> int | None:
        asked.append(True)
        return None

    timer = started(probe, now)
    assert probe.reads == ["wait", "cpu"]  # the start sample: what a late move's share of the host is measured from
    assert timer.due_ns == START + 100 * MS
    measured = timer.stop(START + 40 * MS, answered=True)
    charge, verdict = verdict_of(timer, measured, opponent_cpu)
    timer.close()
    assert (measured.elapsed_ns, charge.in_time, verdict) == (40 * MS, True, None)
    assert probe.reads == ["wait", "cpu"] and not asked  # nothing of the host is read for a move in time


def test_a_stamped_move_far_from_its_deadline_has_its_read_watched_only_if_still_on_a_period_after_its_start() -> None:
    monitor = HostLagMonitor()  # its thread not started: its windows are looked at here
    now = Now()
    probe = ScriptedProbe(wait=5 * MS, cpu=7 * MS, unread=30, asleep=True)  # blocked on its input, the turn unread
    timer = MoveTimer(probe, monitor, now, 10_000 * MS, stamped=True)
    written = timer.written
    assert written is not None
    timer.begin(TurnWrite.made(b"turn\n", now.ns))
    written(now.ns)
    # No watch yet: neither the bot's input nor whether it sleeps on it is read at the start of every move.
    assert probe.reads == ["wait", "cpu"] and timer.look_ns == START + monitor.period_ns
    (window,) = monitor.windows
    assert window.watch is None
    now.ns += 2 * MS
    timer.look()  # still on: the watch is made now, and the monitor watches from here
    assert probe.reads == ["wait", "cpu", "unread", "asleep"] and timer.look_ns is None
    watch = window.watch
    assert watch is not None and watch.written and watch.start_wait == 5 * MS
    assert watch.asleep_from_ns == START and watch.deadline_ns == START + 10_000 * MS  # asleep since its turn came
    timer.close()
    # A move over before its look reads nothing more; one near its deadline is watched from its start, as before.
    quick = ScriptedProbe(unread=30, asleep=True)
    over = MoveTimer(quick, monitor, now, 10_000 * MS, stamped=True)
    over.stop(now.ns + MS, answered=True)
    over.close()
    assert quick.reads == ["wait", "cpu"]
    near = ScriptedProbe(unread=30, asleep=True)
    MoveTimer(near, monitor, now, 100 * MS, stamped=True).close()
    assert near.reads == ["wait", "cpu", "unread", "asleep"]
    assert monitor.windows == set()


def test_a_move_with_no_deadline_has_no_due_time_and_reads_nothing() -> None:
    probe = ScriptedProbe()
    timer = started(probe, Now(), limit_ms=None)
    assert timer.due_ns is None and probe.reads == []


@pytest.mark.parametrize(
    ("elapsed_ms", "wait_ms", "cpu_ms", "lag_ms", "kind", "cause"),
    [
        (40, 0, 0, 0, "in time", ""),
        (100, 90, 10, 0, "in time", ""),  # on the deadline is in time, however long it waited
        # Late by 20 ms: lost, unless the host took more than that from it.
        (120, 0, 100, 0, "lost", "lost on time: took 120 ms, 20 ms over its 100 ms"),
        (120, 15, 100, 0, "lost", "(the host is busy: the bot waited 15 ms for a CPU during the move)"),
        (120, 25, 90, 0, "void", "the bot waited 25 ms for a CPU in all during the move"),
        (120, 0, 100, 25, "void", "the referee measured 25 ms of its own lateness during that move"),
        (120, 12, 100, 12, "void", "12 ms of its own lateness"),  # the two add up
        (120, 25, 150, 0, "lost", "lost on time"),  # its threads used 1.5 CPUs: its waits are its own
        (120, None, None, 0, "lost", "lost on time: took 120 ms"),  # nothing measured (a null probe's bot)
    ],
)
def test_an_answered_move_is_judged_in_time_lost_or_void_on_what_the_timer_sampled(
    elapsed_ms: int, wait_ms: int | None, cpu_ms: int | None, lag_ms: int, kind: str, cause: str
) -> None:
    now = Now()
    probe: BotProbe = NullProbe() if wait_ms is None else ScriptedProbe(wait=1_000 * MS, cpu=2_000 * MS)
    timer = started(probe, now, lag_ms=lag_ms)
    if isinstance(probe, ScriptedProbe):
        probe.wait = 1_000 * MS + (wait_ms or 0) * MS
        probe.cpu = 2_000 * MS + (cpu_ms or 0) * MS
    now.ns = START + elapsed_ms * MS
    measured = timer.stop(now.ns, answered=True)
    assert measured.lag_ns == lag_ms * MS
    _, verdict = verdict_of(timer, measured)
    timer.close()
    if kind == "in time":
        assert verdict is None
        return
    assert verdict is not None
    assert verdict.void is (kind == "void"), verdict.reason
    assert cause in verdict.reason
    assert verdict.give_up is (kind == "lost")  # a lost bot's answer may still come; a voided one answered


def test_past_the_deadline_the_timer_listens_on_for_the_host_s_delay_then_gives_up() -> None:
    now, probe = Now(), ScriptedProbe(wait=0, cpu=0)
    timer = started(probe, now, lag_ms=30)
    now.ns = START + 100 * MS  # the deadline, no move: the referee was 30 ms late meanwhile
    assert timer.expired(now.ns) is False
    assert timer.due_ns == START + 130 * MS  # as long again
    probe.cpu = 40 * MS  # it thinks on (its CPU moves): not held
    now.ns = START + 130 * MS
    assert timer.expired(now.ns) is True
    measured = timer.stop(now.ns, answered=False)
    _, verdict = verdict_of(timer, measured)
    assert verdict is not None and not verdict.void
    assert verdict.reason.startswith("lost on time: no move after 130 ms, 30 ms over its 100 ms")


def test_a_bot_held_off_a_cpu_past_its_deadline_is_waited_for_then_its_game_is_void() -> None:
    now, probe = Now(), ScriptedProbe(wait=0, cpu=0, ready=True)  # ready to run, its CPU time never moves
    timer = started(probe, now)
    due = timer.due_ns
    assert due is not None
    while True:
        now.ns = due
        if timer.expired(now.ns):
            break
        assert timer.due_ns is not None and timer.due_ns == now.ns + HELD_CHECK_NS
        due = timer.due_ns
    assert now.ns - (START + 100 * MS) >= HELD_MAX_NS  # waited for a second past its deadline
    _, verdict = verdict_of(timer, timer.stop(now.ns, answered=False))
    assert verdict is not None and verdict.void and verdict.give_up
    assert "it was ready to run and the host gave it almost no CPU for 1000 ms past its deadline" in verdict.reason


def test_a_held_bot_that_answers_after_all_is_judged_on_its_answer() -> None:
    now, probe = Now(), ScriptedProbe(wait=0, cpu=0, ready=True)
    timer = started(probe, now)
    now.ns = START + 100 * MS
    assert timer.expired(now.ns) is False  # held: listened on
    measured = timer.stop(START + 101 * MS, answered=True)  # then it answered, 1 ms over
    _, verdict = verdict_of(timer, measured)
    assert verdict is not None and not verdict.void and "lost on time: took 101 ms" in verdict.reason


@pytest.mark.parametrize(("opponent_ms", "outcome"), [(None, "void"), (50, "void"), (300, "opponent")])
def test_the_opponent_s_cpu_is_read_only_for_a_late_move_and_can_make_it_the_loser(
    opponent_ms: int | None, outcome: str
) -> None:
    now = Now()
    timer = started(ScriptedProbe(), now, lag_ms=30)
    asked: list[bool] = []

    def opponent_cpu() -> int | None:
        asked.append(True)
        return None if opponent_ms is None else opponent_ms * MS

    _, verdict = verdict_of(timer, timer.stop(START + 120 * MS, answered=True), opponent_cpu)
    assert asked == [True]
    assert verdict is not None
    assert (verdict.void, verdict.opponent_lost) == ((True, False) if outcome == "void" else (False, True))


def test_a_slow_turn_write_is_the_referee_s_lateness_less_the_bot_s_cpu_meanwhile() -> None:
    now, probe = Now(), ScriptedProbe(wait=0, cpu=1_000 * MS)
    timer = MoveTimer(probe, NO_LAG, now, 100 * MS, stamped=True)
    turn = TurnWrite.made(b"turn\n", now.ns)
    turn.write_ns, turn.write_cpu_ns = 30 * MS, 1_000 * MS + 10 * MS  # the writer came back 30 ms later; the bot ran 10
    timer.begin(turn)
    measured = timer.stop(START + 50 * MS, answered=True)
    assert measured.lag_ns == 20 * MS  # stamped: the monitor is not asked; the write's lateness still counts
