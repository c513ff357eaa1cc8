"""The pure clock: parsing time controls and charging measured nanoseconds (no clocks read, no trio)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.messages import TimeControl
from protocol.rules import BLACK, WHITE
from referee.timing.clock import (
    Fischer,
    GameClock,
    MoveTime,
    Periods,
    TimeControlForm,
    describe_time_control,
    form_of,
    movetime_control,
    parse,
    parse_time_control,
)

MS = 1_000_000


# -- parsing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "base", "inc", "period", "move"),
    [
        ("60+0.5", 60_000, 500, None, None),
        ("60", 60_000, 0, None, None),
        ("0.25+.01", 250, 10, None, None),
        ("40/60", 60_000, 0, 40, None),
        ("40/60+1", 60_000, 1000, 40, None),
        ("movetime:0.5", None, 0, None, 500),
        ("movetime=2", None, 0, None, 2000),
        ("0.3/move", None, 0, None, 300),
        (" 5 + 0.1 ", 5000, 100, None, None),
    ],
)
def test_parse_time_control(text: str, base: int | None, inc: int, period: int | None, move: int | None) -> None:
    control = parse_time_control(text)
    assert (control.base_ms, control.increment_ms, control.moves_per_period, control.move_time_ms) == (
        base,
        inc,
        period,
        move,
    )
    assert parse_time_control(describe_time_control(control)) == control


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("fast", "not understood"),
        ("60+", "not understood"),
        ("-5", "not understood"),
        ("1:00", "not understood"),
        ("0", "base time must be more than 0"),
        ("0/60", "at least 1 move"),
        ("40/0", "time per period must be more than 0"),
        ("movetime:0", "time per move must be more than 0"),
    ],
)
def test_parse_time_control_errors_say_what_to_write(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as info:
        parse_time_control(text)
    assert repr(text) in str(info.value)
    if "not understood" in says:
        assert "'60+0.5'" in str(info.value) and "'40/60'" in str(info.value) and "movetime:" in str(info.value)


def test_movetime_control() -> None:
    assert movetime_control(0.2) == TimeControl(base_ms=None, increment_ms=0, moves_per_period=None, move_time_ms=200)
    with pytest.raises(ValueError, match="more than 0 ms"):
        movetime_control(0)


# -- Fischer --------------------------------------------------------------------------------------


def test_fischer_charges_elapsed_then_adds_increment() -> None:
    clock = GameClock(parse_time_control("10+1"))
    assert clock.allowed_ns(BLACK) == 10_000 * MS
    charge = clock.charge(BLACK, 2_500 * MS)
    assert charge.in_time and charge.remaining_ns == 8_500 * MS and charge.overrun_ns == 0
    assert clock.remaining_ns(BLACK) == 8_500 * MS
    assert clock.remaining_ns(WHITE) == 10_000 * MS  # the other side's clock is untouched
    message = clock.message(WHITE)
    assert (message.black_ms, message.white_ms, message.increment_ms) == (8_500, 10_000, 1_000)
    assert message.move_limit_ms is None and message.moves_to_go is None


def test_fischer_loss_on_time_reports_overrun_and_leaves_clock() -> None:
    clock = GameClock(parse_time_control("1+0"))
    charge = clock.charge(WHITE, 1_234 * MS)
    assert not charge.in_time
    assert charge.allowed_ns == 1_000 * MS
    assert charge.overrun_ns == 234 * MS
    assert clock.remaining_ns(WHITE) == 1_000 * MS


def test_margin_extends_the_deadline_but_not_the_allowance() -> None:
    clock = GameClock(parse_time_control("1+0.1"), margin_ms=50)
    assert clock.deadline_ns(BLACK) == 1_050 * MS
    inside = clock.charge(BLACK, 1_040 * MS)
    assert inside.in_time
    # The part of the margin used is not borrowed from the future: the clock floors at zero.
    assert clock.remaining_ns(BLACK) == 100 * MS
    late = clock.charge(BLACK, 151 * MS)
    assert not late.in_time and late.overrun_ns == 51 * MS


def test_exactly_at_the_deadline_is_in_time_and_timed_out_is_never() -> None:
    clock = GameClock(parse_time_control("1"), margin_ms=10)
    assert clock.charge(BLACK, 1_010 * MS).in_time
    clock = GameClock(parse_time_control("1"), margin_ms=10)
    assert not clock.charge(BLACK, 5 * MS, timed_out=True).in_time


def test_clock_edges_exactly_zero_and_the_margin_at_a_period_end() -> None:
    clock = GameClock(parse_time_control("1"))
    assert clock.charge(BLACK, 1_000 * MS).remaining_ns == 0  # all of it: in time, nothing left
    assert clock.allowed_ns(BLACK) == 0 and clock.deadline_ns(BLACK) == 0
    assert not clock.charge(BLACK, 1).in_time
    # Within the margin at the end of a period: the clock floors at zero, then the period's time is added.
    clock = GameClock(parse_time_control("2/1+0.5"), margin_ms=30)
    assert clock.charge(WHITE, 400 * MS).remaining_ns == 1_100 * MS
    charge = clock.charge(WHITE, 1_120 * MS)
    assert charge.in_time and charge.overrun_ns == 0 and charge.remaining_ns == 1_500 * MS
    assert clock.moves_to_go(WHITE) == 2


def test_negative_elapsed_is_charged_as_zero() -> None:
    clock = GameClock(parse_time_control("1"))
    assert clock.charge(BLACK, -5).elapsed_ns == 0
    assert clock.remaining_ns(BLACK) == 1_000 * MS


def test_message_rounds_down_to_whole_ms() -> None:
    clock = GameClock(parse_time_control("1"))
    clock.charge(BLACK, 1)  # 999.999999 ms left: the bot is never told it has more than it has
    assert clock.message(BLACK).black_ms == 999


# -- periods --------------------------------------------------------------------------------------


def test_periods_refill_after_each_period_and_carry_over() -> None:
    clock = GameClock(parse_time_control("3/10"))
    seen = []
    for _ in range(7):
        seen.append((clock.moves_to_go(BLACK), clock.message(BLACK).black_ms))
        assert clock.charge(BLACK, 2_000 * MS).in_time
    # 10 s for every 3 moves; 4 s left after three moves of 2 s carries into the next period.
    assert seen == [(3, 10_000), (2, 8_000), (1, 6_000), (3, 14_000), (2, 12_000), (1, 10_000), (3, 18_000)]


def test_periods_with_increment() -> None:
    clock = GameClock(parse_time_control("2/10+1"))
    clock.charge(WHITE, 3_000 * MS)
    assert clock.remaining_ns(WHITE) == 8_000 * MS
    clock.charge(WHITE, 3_000 * MS)
    assert clock.remaining_ns(WHITE) == 16_000 * MS  # 8 - 3 + 1 + 10


def test_periods_loss_within_a_period() -> None:
    clock = GameClock(parse_time_control("40/1"))
    assert clock.charge(BLACK, 600 * MS).in_time
    charge = clock.charge(BLACK, 600 * MS)
    assert not charge.in_time and charge.allowed_ns == 400 * MS and charge.overrun_ns == 200 * MS


# -- fixed time per move --------------------------------------------------------------------------


def test_movetime_has_no_game_clock_and_nothing_carries_over() -> None:
    clock = GameClock(movetime_control(0.5), margin_ms=20)
    assert clock.remaining_ns(BLACK) is None
    assert clock.allowed_ns(BLACK) == 500 * MS and clock.deadline_ns(BLACK) == 520 * MS
    assert clock.charge(BLACK, 10 * MS).in_time
    assert clock.allowed_ns(BLACK) == 500 * MS
    charge = clock.charge(BLACK, 700 * MS)
    assert not charge.in_time and charge.overrun_ns == 200 * MS and charge.remaining_ns is None
    message = clock.message(BLACK)
    assert (message.black_ms, message.white_ms, message.move_limit_ms) == (None, None, 500)


@pytest.mark.parametrize(
    "fields",
    [
        {"base_ms": 1000, "move_time_ms": 300},  # a clock and a time per move
        {"base_ms": None, "move_time_ms": None},  # no limit at all
        {"base_ms": None, "move_time_ms": 300, "increment_ms": 10},
        {"base_ms": None, "move_time_ms": 300, "moves_per_period": 40},
    ],
)
def test_a_time_control_is_exactly_one_of_the_three_forms(fields: dict[str, int | None]) -> None:
    with pytest.raises(ValueError, match="a time control is exactly one of three forms"):
        TimeControl(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("60+0.5", Fischer(60_000, 500)),
        ("60", Fischer(60_000)),
        ("40/60+1", Periods(40, 60_000, 1000)),
        ("movetime:0.5", MoveTime(500)),
        ("0.25/move", MoveTime(250)),
    ],
)
def test_each_form_parses_describes_and_goes_to_the_wire_and_back(text: str, form: TimeControlForm) -> None:
    assert parse(text) == form
    assert parse(form.describe()) == form
    assert form_of(form.wire()) == form
    assert describe_time_control(form.wire()) == form.describe()


def test_each_side_has_its_own_form() -> None:
    clock = GameClock(Fischer(20_000, 200), MoveTime(1_000), margin_ms=10)
    assert clock.deadline_ns(BLACK) == 20_010 * MS and clock.deadline_ns(WHITE) == 1_010 * MS
    assert (clock.increment_ms(BLACK), clock.increment_ms(WHITE)) == (200, 0)
    assert (clock.move_limit_ms(BLACK), clock.move_limit_ms(WHITE)) == (None, 1_000)
    assert clock.message(WHITE).black_ms == 20_000 and clock.message(WHITE).white_ms is None
    assert clock.control_for(WHITE) == MoveTime(1_000).wire()


def test_negative_margin_is_refused() -> None:
    with pytest.raises(ValueError, match="margin"):
        GameClock(parse_time_control("1"), margin_ms=-1)


# -- properties -----------------------------------------------------------------------------------


@given(
    base=st.integers(1, 100_000),
    inc=st.integers(0, 5_000),
    period=st.none() | st.integers(1, 10),
    margin=st.integers(0, 500),
    moves=st.lists(st.integers(0, 200_000_000_000), max_size=30),
)
def test_clock_invariants(base: int, inc: int, period: int | None, margin: int, moves: list[int]) -> None:
    clock = GameClock(TimeControl(base_ms=base, increment_ms=inc, moves_per_period=period), margin_ms=margin)
    for made, elapsed in enumerate(moves, start=1):
        before = clock.remaining_ns(BLACK)
        assert before is not None and before >= 0
        charge = clock.charge(BLACK, elapsed)
        # In time exactly when within allowance plus margin; a loss changes nothing.
        assert charge.in_time == (elapsed <= before + margin * MS)
        if not charge.in_time:
            assert charge.overrun_ns == elapsed - before > margin * MS
            assert clock.remaining_ns(BLACK) == before
            break
        refill = base * MS if period is not None and made % period == 0 else 0
        assert clock.remaining_ns(BLACK) == max(0, before - elapsed) + inc * MS + refill
        assert clock.remaining_ns(WHITE) == base * MS
        if period is not None:
            assert clock.moves_to_go(BLACK) == period - made % period


# -- the smallest values accepted ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("0.001", (1, 0, None, None)),  # 1 ms
        ("0.001+0.001", (1, 1, None, None)),
        (".0015", (2, 0, None, None)),  # rounded to whole ms
        ("1/0.001", (1, 0, 1, None)),  # a one-move period of 1 ms
        ("1/0.001+0.001", (1, 1, 1, None)),
        ("movetime:0.001", (None, 0, None, 1)),
        ("0.001/move", (None, 0, None, 1)),
    ],
)
def test_the_smallest_time_controls_are_accepted(text: str, fields: tuple[int | None, ...]) -> None:
    control = parse_time_control(text)
    assert (control.base_ms, control.increment_ms, control.moves_per_period, control.move_time_ms) == fields
    assert parse_time_control(describe_time_control(control)) == control


@pytest.mark.parametrize("text", ["0.0004", "1/0.0004", "movetime:0.0004", "0.0004/move"])
def test_below_one_millisecond_rounds_to_nothing_and_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="more than 0 ms"):
        parse_time_control(text)


def test_a_one_move_period_refills_every_move() -> None:
    clock = GameClock(parse_time_control("1/0.001"))
    for _ in range(3):
        assert clock.moves_to_go(WHITE) == 1
        assert clock.allowed_ns(WHITE) == 1 * MS
        assert clock.charge(WHITE, 1 * MS).in_time  # exactly the period: in time, and refilled
    assert clock.remaining_ns(WHITE) == 1 * MS
    charge = clock.charge(WHITE, 1 * MS + 1)
    assert not charge.in_time and charge.overrun_ns == 1
