"""The fairness rules of a move's time as tables: in time is not judged here; late is lost or void, and why.

Pure functions (`referee.timing.rules`): every lateness source on its own and together, at the edge (equal is
lost), with and without an answer, held off a CPU or not.
"""

from __future__ import annotations

import pytest

from referee.timing.rules import (
    HELD_CHECK_NS,
    HELD_MAX_NS,
    GiveUp,
    ListenOn,
    Overrun,
    fmt_ms,
    host_kept,
    judge,
    past_deadline,
    write_lag,
)

MS = 1_000_000


def late(elapsed_ms: float, **samples: float) -> Overrun:
    """A move at 100 ms a move (no margin) that took `elapsed_ms`, with lateness samples in ms."""
    ns = {key: round(value * MS) for key, value in samples.items() if key != "answered"}
    return Overrun(
        elapsed_ns=round(elapsed_ms * MS),
        overrun_ns=round((elapsed_ms - 100) * MS),
        allowed_ns=100 * MS,
        limit_ns=100 * MS,
        margin_ns=0,
        answered=bool(samples.get("answered", 1)),
        **ns,
    )


@pytest.mark.parametrize(
    ("move", "void", "cause"),
    [
        # The bot alone: no lateness of the host's measured.
        (late(120), False, "lost on time: took 120 ms, 20 ms over its 100 ms"),
        # Each source alone, more than the overrun: void, named.
        (late(120, lag_ns=25), True, "the referee measured 25 ms of its own lateness"),
        (late(120, before_read_ns=25), True, "the host kept the bot from reading its turn for 25 ms"),
        (late(120, before_write_ns=25), True, "off a CPU for 25 ms between its deadline and its move"),
        (late(120, bot_wait_ns=25), True, "the bot waited 25 ms for a CPU in all during the move"),
        # Each source alone, less than the overrun (or equal): lost, the bot's wait named as the host's load.
        (late(120, lag_ns=15), False, "lost on time"),
        (late(120, lag_ns=20), False, "lost on time"),
        (late(120, bot_wait_ns=15), False, "(the host is busy: the bot waited 15 ms for a CPU during the move)"),
        # Sources add up: the referee's lateness and the bot's wait (read and write parts are inside the wait).
        (late(120, lag_ns=12, bot_wait_ns=12), True, "12 ms of its own lateness"),
        (late(120, before_read_ns=11, before_write_ns=11), True, "reading its turn for 11 ms"),
        (late(120, before_read_ns=11, before_write_ns=11, bot_wait_ns=15), True, "reading its turn for 11 ms"),
        (late(120, before_read_ns=5, before_write_ns=5, bot_wait_ns=15), False, "lost on time"),
        # No answer: the host's measured delays do not void it (the wait for them came before giving up) ...
        (late(130, answered=0, lag_ns=50, bot_wait_ns=50), False, "lost on time: no move after 130 ms"),
        # ... unless the bot was seen ready to run and hardly running past its deadline.
        (late(130, answered=0, held_ns=30), True, "almost no CPU for 30 ms past its deadline"),
    ],
)
def test_a_move_past_its_deadline_is_lost_or_void_for_the_host(move: Overrun, void: bool, cause: str) -> None:
    verdict = judge(move, who="black (alpha)", pressure=None)
    assert verdict.void is void, verdict.reason
    assert cause in verdict.reason
    if void:
        assert verdict.reason.startswith("void, the host was late: black (alpha) ")
        assert verdict.reason.endswith("the game is not scored and is played again")
        assert verdict.host_ms > move.overrun_ns / MS or move.held_ns
    # A bot that may still answer is restarted before its next game; one voided after answering need not be.
    assert verdict.give_up is (not void or not move.answered)


def test_a_void_names_the_margin_and_the_host_s_cpu_pressure() -> None:
    move = Overrun(
        elapsed_ns=160 * MS,
        overrun_ns=60 * MS,
        allowed_ns=100 * MS,
        limit_ns=150 * MS,
        margin_ns=50 * MS,
        answered=True,
        lag_ns=20 * MS,
    )
    verdict = judge(move, who="white (beta)", pressure=48.5)
    assert verdict.void and verdict.host_ms == 20.0  # 10 ms past the deadline with its margin: 20 ms excuse it
    assert "took 160 ms, 60 ms over its 100 ms (a 50 ms margin was allowed)" in verdict.reason
    assert "CPU pressure on the host: 48.5% over the last 10 s" in verdict.reason


@pytest.mark.parametrize(
    ("move", "outcome"),
    [
        # The host was late, and the waiting bot's processes used 2.5 CPUs meanwhile: the host's load was its own.
        (late(120, lag_ns=25, opponent_cpu_ns=300), "opponent"),
        (late(130, answered=0, held_ns=30, opponent_cpu_ns=260), "opponent"),
        (late(120, lag_ns=25, opponent_cpu_ns=130), "opponent"),  # more than one CPU: not one pondering thread
        # One CPU's worth (a bot pondering on one thread) or less: the host's doing, void as before.
        (late(120, lag_ns=25, opponent_cpu_ns=120), "void"),
        (late(120, lag_ns=25, opponent_cpu_ns=60), "void"),
        (late(120, lag_ns=25), "void"),  # the opponent's CPU not known
        # The mover's own overrun stays its own, whatever the opponent burned.
        (late(120, opponent_cpu_ns=400), "mover"),
    ],
)
def test_a_waiting_bot_whose_processes_keep_the_host_busy_loses_the_game_that_would_be_void(
    move: Overrun, outcome: str
) -> None:
    verdict = judge(move, who="black (alpha)", pressure=None)
    assert (verdict.opponent_lost, verdict.void) == {
        "opponent": (True, False),
        "void": (False, True),
        "mover": (False, False),
    }[outcome], verdict.reason
    if outcome == "opponent":
        cpus = (move.opponent_cpu_ns or 0) / move.elapsed_ns
        assert verdict.reason.startswith(f"lost: its processes used {fmt_ms(move.opponent_cpu_ns or 0)} of CPU")
        assert f"({cpus:.1f} CPUs), and that move came late because the host was busy (black (alpha) " in verdict.reason
        assert verdict.reason.endswith(")") and "played again" not in verdict.reason


@pytest.mark.parametrize(
    ("over_ms", "delay_ms", "held", "expected"),
    [
        (0, 0, False, GiveUp(held=False)),  # nothing measured: give up at the deadline
        (5, 10, False, ListenOn(10 * MS)),  # the host's delay so far: listen as long again
        (10, 10, False, GiveUp(held=False)),
        (10, 10, True, ListenOn(10 * MS + HELD_CHECK_NS, held_since=True)),  # ready to run, hardly running
        (HELD_MAX_NS // MS, 0, True, GiveUp(held=True)),  # held for a long time: void, not lost
    ],
)
def test_past_the_deadline_the_referee_listens_on_for_the_host_s_delay(
    over_ms: int, delay_ms: int, held: bool, expected: ListenOn | GiveUp
) -> None:
    asked: list[bool] = []

    def is_held() -> bool:
        asked.append(True)
        return held

    deadline = 10_000 * MS
    decision = past_deadline(
        now_ns=deadline + over_ms * MS,
        deadline_ns=deadline,
        start_ns=deadline - 100 * MS,
        delay_ns=delay_ms * MS,
        held=is_held,
    )
    assert decision == expected
    assert bool(asked) is (over_ms >= delay_ms)  # the bot's state is read only once its delay is used up


def test_a_held_bot_with_a_long_time_per_move_is_waited_for_as_long_again() -> None:
    deadline, start = 100_000 * MS, 100_000 * MS - 5_000 * MS  # 5 s a move: waited for up to 5 s, not 1 s

    def at(over_ms: int) -> ListenOn | GiveUp:
        now = deadline + over_ms * MS
        return past_deadline(now_ns=now, deadline_ns=deadline, start_ns=start, delay_ns=0, held=lambda: True)

    assert at(2_000) == ListenOn(2_000 * MS + HELD_CHECK_NS, held_since=True)
    assert at(5_000) == GiveUp(held=True)


@pytest.mark.parametrize(
    ("wait_ms", "cpu_ms", "wall_ms", "kept_ms"),
    [
        (None, None, 100, 0),  # nothing known
        (0, 50, 100, 0),
        (30, 50, 100, 30),  # waited 30 ms for a CPU in a 100 ms move
        (30, None, 100, 30),  # its CPU unknown: the wait counts
        (30, 150, 100, 0),  # its own threads used 1.5 CPUs: its waits are theirs, not the host's
    ],
)
def test_the_host_kept_a_bot_off_a_cpu_only_if_it_did_not_use_more_than_one(
    wait_ms: int | None, cpu_ms: int | None, wall_ms: int, kept_ms: int
) -> None:
    wait = None if wait_ms is None else wait_ms * MS
    cpu = None if cpu_ms is None else cpu_ms * MS
    assert host_kept(wait, cpu, wall_ms * MS) == kept_ms * MS


def test_a_slow_turn_write_counts_as_lateness_only_for_the_time_the_bot_did_not_run() -> None:
    write_ns = 160 * MS  # the writer came back 160 ms after its start
    assert write_lag(write_ns, None, None) == 160 * MS  # nothing known of the bot: all of it may be lateness
    assert write_lag(write_ns, 1_000 * MS + 157 * MS, 1_000 * MS) == 3 * MS  # the bot used 157 ms: it had its turn
    assert write_lag(write_ns, 1_000 * MS, 1_000 * MS) == 160 * MS  # it did not run: the line went in late
    assert write_lag(write_ns, 1_000 * MS + 900 * MS, 1_000 * MS) == 0  # more CPU than wall time: no lateness
