"""The fairness rules of a move's time, as pure functions over what was measured: no trio, no /proc, no clock.

`referee.play.game` samples (the turn's write, the bot's reply stamp, the bot's run-queue wait and CPU clock, the
referee's own lateness from `referee.timing.latency`) and these functions decide:

- `write_lag`: how much later than its start the turn may have reached the bot (a writer preempted between its
  stamp and its write call; the bot's own CPU time meanwhile is taken off: then it had its turn);
- `host_kept`: how long the host kept the bot off a CPU while it was ready to run (its run-queue wait), unless
  its own threads used more than one CPU meanwhile (then its waits are its threads competing);
- `past_deadline`: past its deadline with no move yet, whether to listen on (the host's measured delay so
  far, or a bot ready to run that the host hardly runs) or give up;
- `judge`: a move past its deadline is lost on time, unless what the host took from it is more than the
  bot's overrun: then the game is void (never a forfeit for the host's delay), or, when the opponent's own
  processes used more than `HOG_CPUS` CPUs meanwhile, lost by the opponent: it was the host's load. Every
  verdict says why.

Times are nanoseconds of one clock; the tables in tests/test_timing.py are the specification.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "HELD_CHECK_NS",
    "HELD_CPU_NS",
    "HELD_MAX_NS",
    "HOG_CPUS",
    "GiveUp",
    "Judgement",
    "ListenOn",
    "Overrun",
    "fmt_ms",
    "host_kept",
    "judge",
    "past_deadline",
    "write_lag",
]

NS_PER_MS = 1_000_000
HOG_CPUS = 1.0
"""A waiting bot whose processes used more than this many CPUs' worth during its opponent's late move made the
host late itself (a bot pondering on one thread uses one at most): it loses the game, which is not void."""
HELD_CHECK_NS = 500_000
"""Past its deadline, how often a bot held off a CPU by the host (`HELD_CPU_NS`) is looked at again."""
HELD_CPU_NS = 1_000_000
"""Past its deadline, a bot ready to run that has used less CPU than this since is taken as held by the host (what
it does after its clock stopped, writing its move, takes far less); one that uses more is thinking on."""
HELD_MAX_NS = 1_000_000_000
"""How long past its deadline a bot held off a CPU is waited for (or its time per move, if longer)."""


def fmt_ms(ns: int) -> str:
    ms = ns / NS_PER_MS
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"


def write_lag(write_ns: int, write_cpu_ns: int | None, cpu_from: int | None) -> int:
    """How much later than its start the turn may have reached the bot: the first write call's time (`write_ns`),
    less the bot's CPU time during it (its CPU clock `write_cpu_ns` after the call, `cpu_from` at the move's
    start). A writer preempted after the line went in (on a shared core, by the very bot it woke, which then
    thinks) is no lateness: the bot had its turn."""
    if write_cpu_ns is None or cpu_from is None:
        return write_ns
    return max(0, write_ns - max(0, write_cpu_ns - cpu_from))


def host_kept(wait_ns: int | None, cpu_ns: int | None, wall_ns: int) -> int:
    """How long the host kept the bot off a CPU while it was ready to run: its run-queue wait over `wall_ns`
    (`wait_ns`; None: unknown), unless its process used more than one CPU's worth meanwhile (`cpu_ns`): then
    its threads competed with each other, and its waits are not the host's doing."""
    if wait_ns is None or wait_ns <= 0:
        return 0
    if cpu_ns is not None and cpu_ns > wall_ns:
        return 0
    return wait_ns


@dataclass(frozen=True)
class ListenOn:
    """Keep listening until `grace` past the deadline."""

    grace_ns: int
    held_since: bool = False
    """The bot is ready to run and hardly runs: note when this was first seen."""


@dataclass(frozen=True)
class GiveUp:
    """No move is coming in time; `held`: the bot was ready to run and the host hardly ran it (void, not lost)."""

    held: bool


def past_deadline(
    *, now_ns: int, deadline_ns: int, start_ns: int, delay_ns: int, held: Callable[[], bool]
) -> ListenOn | GiveUp:
    """At `now_ns`, past the deadline with no move: listen on, or give up.

    `delay_ns` is the host's measured delay so far (the referee's lateness plus the time it kept the bot off a
    CPU): a bot is given as long again. Past that, a bot that is ready to run and has hardly run since
    (`held()`, asked only then: it reads the bot's state) is waited for a while longer, up to its time per
    move or `HELD_MAX_NS`; a bot that sleeps, or thinks on, is not.
    """
    over = now_ns - deadline_ns
    if over < delay_ns:
        return ListenOn(delay_ns)
    if not held():
        return GiveUp(held=False)
    if over >= max(deadline_ns - start_ns, HELD_MAX_NS):
        return GiveUp(held=True)
    return ListenOn(over + HELD_CHECK_NS, held_since=True)


@dataclass(frozen=True)
class Overrun:
    """What was measured of a move past its deadline."""

    elapsed_ns: int
    """What the move took (its charge)."""
    overrun_ns: int
    """How far past its allowance, margin excluded."""
    allowed_ns: int
    """Its allowance, margin excluded."""
    limit_ns: int
    """The deadline it was judged by: its allowance plus the margin."""
    margin_ns: int
    answered: bool
    """The move came (late); False: no move by the time the referee gave up."""
    lag_ns: int = 0
    """The referee's own measured lateness during the move."""
    before_read_ns: int = 0
    """How long the host kept the bot from reading its turn (`referee.timing.latency.ReadWatch`)."""
    before_write_ns: int = 0
    """How long the host kept the bot off a CPU between its deadline and its move."""
    bot_wait_ns: int = 0
    """The bot's run-queue wait over the whole move (`host_kept`)."""
    held_ns: int = 0
    """No move: how long it was seen ready to run and hardly running past its deadline (0: not held)."""
    opponent_cpu_ns: int | None = None
    """The CPU time the opponent's processes used during the move (None: not known)."""


@dataclass(frozen=True)
class Judgement:
    """A move past its deadline: `void` (the host was late: not scored, played again) or lost on time."""

    void: bool
    reason: str
    host_ms: float
    """What the host was measured to take from the move, ms."""
    give_up: bool
    """The bot's answer may still come: restart it before its next game."""
    opponent_lost: bool = False
    """Not void after all: the opponent's processes kept the host busy (`HOG_CPUS`); the opponent loses."""


def judge(move: Overrun, *, who: str, pressure: float | None = None) -> Judgement:
    """The verdict on a move past its deadline; `who` names the side ("black (alpha)"), `pressure` is the host's
    CPU pressure (named in a void's reason, to say what the host was doing)."""
    verdict = _judge(move, who=who, pressure=pressure)
    hog = move.opponent_cpu_ns
    if verdict.void and hog is not None and hog > HOG_CPUS * move.elapsed_ns:
        return Judgement(
            void=False,
            reason=f"lost: its processes used {fmt_ms(hog)} of CPU during its opponent's move of"
            f" {fmt_ms(move.elapsed_ns)} ({hog / move.elapsed_ns:.1f} CPUs), and that move came late because the"
            f" host was busy ({_late_move(verdict.reason)})",
            host_ms=verdict.host_ms,
            give_up=verdict.give_up,
            opponent_lost=True,
        )
    return verdict


def _late_move(void_reason: str) -> str:
    """What a void's reason says of the late move, without the void's own words around it."""
    text = void_reason.removeprefix("void, the host was late: ")
    return text.removesuffix("; the game is not scored and is played again")


def _judge(move: Overrun, *, who: str, pressure: float | None) -> Judgement:
    excess = move.elapsed_ns - move.limit_ns
    margin = f" (a {fmt_ms(move.margin_ns)} margin was allowed)" if move.margin_ns else ""
    what = "no move after" if not move.answered else "took"
    over = f"{fmt_ms(move.elapsed_ns)}, {fmt_ms(move.overrun_ns)} over its {fmt_ms(move.allowed_ns)}{margin}"
    kept_ns = max(move.bot_wait_ns, move.before_read_ns + move.before_write_ns)  # the parts are disjoint
    if move.answered and move.lag_ns + kept_ns > excess:
        host = "" if pressure is None else f"; CPU pressure on the host: {pressure:g}% over the last 10 s"
        causes = []
        if move.lag_ns:
            causes.append(f"the referee measured {fmt_ms(move.lag_ns)} of its own lateness during that move")
        if move.before_read_ns:
            causes.append(f"the host kept the bot from reading its turn for {fmt_ms(move.before_read_ns)}")
        if move.before_write_ns:
            causes.append(
                f"the host kept the bot off a CPU for {fmt_ms(move.before_write_ns)} between its deadline and its move"
            )
        if kept_ns > move.before_read_ns + move.before_write_ns:
            causes.append(f"the bot waited {fmt_ms(kept_ns)} for a CPU in all during the move")
        return Judgement(
            void=True,
            reason=f"void, the host was late: {who} {what} {over}, but {' and '.join(causes)}{host};"
            " the game is not scored and is played again",
            host_ms=(move.lag_ns + kept_ns) / NS_PER_MS,
            give_up=False,
        )
    if move.held_ns:
        return Judgement(
            void=True,
            reason=f"void, the host was late: {who} {what} {over}, but it was ready to run and the host gave it"
            f" almost no CPU for {fmt_ms(move.held_ns)} past its deadline; the game is not scored and is played again",
            host_ms=(move.lag_ns + move.held_ns) / NS_PER_MS,
            give_up=True,  # its move may still come: restart it before its next game
        )
    reason = f"lost on time: {what} {over}"
    if move.bot_wait_ns >= NS_PER_MS:
        reason += f" (the host is busy: the bot waited {fmt_ms(move.bot_wait_ns)} for a CPU during the move)"
    # Restarted before its next game, as after every fault but an illegal move (PROTOCOL.md): without an answer,
    # a late move would be read as the answer to the next message.
    return Judgement(void=False, reason=reason, host_ms=0.0, give_up=True)
