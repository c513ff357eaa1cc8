"""Time controls and the game clock, in one module: the three forms, their text, their wire form and the clock.

A time control is one of three forms (`TimeControlForm`, a tagged union):

- `Fischer(base_ms, increment_ms)`: each side starts with `base_ms`; after each of its moves in time,
  `increment_ms` is added. Text: ``"60+0.5"`` (seconds; ``"60"`` means no increment).
- `Periods(moves, base_ms, increment_ms)`: each side starts with `base_ms`; after its N-th, 2N-th, ... move
  (counting only the moves the bot itself made, not the opening), `base_ms` is added again. Unused time
  carries over, as in chess: ``"40/60"`` is 60 s for every 40 moves. An increment may be added too:
  ``"40/60+1"``. `moves_to_go` in the turn's clock is N minus the bot's moves made in the current period.
- `MoveTime(move_ms)`: every move may take `move_ms`, nothing carries over, no game clock. Text:
  ``"movetime:0.5"`` or ``"0.5/move"``.

`parse` reads the text, `describe` writes it back, `wire()` is the form bots and records carry
(`protocol.messages.TimeControl`, whose schema checks that it is exactly one form) and `form_of` reads that back.
`GameClock` keeps both sides' clocks, each under its own form (time odds: `--bot "... tc=20+0.2"`).

Nothing here reads a clock. `referee.play.game` measures each move itself (from writing the turn line to the
moment the reply line is complete) and hands the elapsed nanoseconds to `GameClock.charge`, which says
whether the bot was in time, by how much it was over if not, and what is left on its clock. A move is in
time when it took at most its allowance (the remaining game time, or the time per move) plus the safety
margin (`GameSettings.margin_ms`). A move that used part of the margin leaves the clock at zero before the
increment; it does not go negative.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from protocol.messages import TimeControl, TurnClocks
from protocol.rules import BLACK, WHITE, Color

__all__ = [
    "NS_PER_MS",
    "Charge",
    "Fischer",
    "GameClock",
    "MoveTime",
    "Periods",
    "TimeControlForm",
    "describe_time_control",
    "form_of",
    "movetime_control",
    "parse",
    "parse_time_control",
]

NS_PER_MS = 1_000_000

_SECONDS = r"(\d+(?:\.\d*)?|\.\d+)"
_FISCHER_RE = re.compile(rf"{_SECONDS}(?:\+{_SECONDS})?")
_PERIODS_RE = re.compile(rf"(\d+)/{_SECONDS}(?:\+{_SECONDS})?")
_MOVETIME_RE = re.compile(rf"(?:movetime[:=]{_SECONDS}|{_SECONDS}/move)")

_HOW = (
    "use 'BASE+INC' in seconds for Fischer (e.g. '60+0.5' or '60'), 'MOVES/BASE[+INC]' for periods "
    "(e.g. '40/60': 60 s for every 40 moves) or 'movetime:SECONDS' for a fixed time per move (e.g. 'movetime:0.5')"
)


def _s(ms: int) -> str:
    return f"{ms / 1000:g}"


@dataclass(frozen=True, slots=True)
class Fischer:
    """A game clock of `base_ms`, plus `increment_ms` after each move in time."""

    kind: ClassVar[str] = "fischer"
    base_ms: int
    increment_ms: int = 0

    def describe(self) -> str:
        return _s(self.base_ms) + (f"+{_s(self.increment_ms)}" if self.increment_ms else "")

    def wire(self) -> TimeControl:
        return TimeControl(
            base_ms=self.base_ms, increment_ms=self.increment_ms, moves_per_period=None, move_time_ms=None
        )


@dataclass(frozen=True, slots=True)
class Periods:
    """`base_ms` for every `moves` moves (unused time carries over), plus `increment_ms` after each move."""

    kind: ClassVar[str] = "periods"
    moves: int
    base_ms: int
    increment_ms: int = 0

    def describe(self) -> str:
        return f"{self.moves}/{_s(self.base_ms)}" + (f"+{_s(self.increment_ms)}" if self.increment_ms else "")

    def wire(self) -> TimeControl:
        return TimeControl(
            base_ms=self.base_ms, increment_ms=self.increment_ms, moves_per_period=self.moves, move_time_ms=None
        )


@dataclass(frozen=True, slots=True)
class MoveTime:
    """`move_ms` for every move, no game clock."""

    kind: ClassVar[str] = "movetime"
    move_ms: int

    def describe(self) -> str:
        return f"movetime:{_s(self.move_ms)}"

    def wire(self) -> TimeControl:
        return TimeControl(base_ms=None, increment_ms=0, moves_per_period=None, move_time_ms=self.move_ms)


TimeControlForm = Fischer | Periods | MoveTime


def _ms(seconds: str) -> int:
    return round(float(seconds) * 1000)


def parse(text: str) -> TimeControlForm:
    """Parse a time control written as on the command line; ValueError says what is wrong and what to write."""
    spec = text.strip().lower().replace(" ", "")
    if match := _MOVETIME_RE.fullmatch(spec):
        move_ms = _ms(match[1] or match[2])
        if move_ms <= 0:
            raise ValueError(f"time control {text!r}: the time per move must be more than 0 ms")
        return MoveTime(move_ms)
    if match := _PERIODS_RE.fullmatch(spec):
        moves, base_ms, inc_ms = int(match[1]), _ms(match[2]), _ms(match[3] or "0")
        if moves < 1:
            raise ValueError(f"time control {text!r}: a period must have at least 1 move")
        if base_ms <= 0:
            raise ValueError(f"time control {text!r}: the time per period must be more than 0 ms")
        return Periods(moves, base_ms, inc_ms)
    if match := _FISCHER_RE.fullmatch(spec):
        base_ms, inc_ms = _ms(match[1]), _ms(match[2] or "0")
        if base_ms <= 0:
            raise ValueError(f"time control {text!r}: the base time must be more than 0 ms")
        return Fischer(base_ms, inc_ms)
    raise ValueError(f"time control {text!r} is not understood: {_HOW}")


def form_of(control: TimeControl | TimeControlForm) -> TimeControlForm:
    """The form of a wire time control (its schema holds it to exactly one; a form is returned as it is)."""
    if not isinstance(control, TimeControl):
        return control
    if control.base_ms is None:
        assert control.move_time_ms is not None, "TimeControl's validator allows no other shape"
        return MoveTime(control.move_time_ms)
    if control.moves_per_period is not None:
        return Periods(control.moves_per_period, control.base_ms, control.increment_ms)
    return Fischer(control.base_ms, control.increment_ms)


def parse_time_control(text: str) -> TimeControl:
    """`parse`, in the wire form (as configs, settings and records hold it)."""
    return parse(text).wire()


def movetime_control(seconds: float) -> TimeControl:
    """A fixed time per move, no game clock (wire form)."""
    move_ms = round(seconds * 1000)
    if move_ms <= 0:
        raise ValueError(f"the time per move must be more than 0 ms, not {seconds} s")
    return MoveTime(move_ms).wire()


def describe_time_control(control: TimeControl | TimeControlForm) -> str:
    """The text `parse` reads back (for logs and records)."""
    return form_of(control).describe()


class Charge(NamedTuple):
    """What one move cost: the verdict of `GameClock.charge` (a tuple: made at every move)."""

    elapsed_ns: int
    allowed_ns: int | None  # the bot's allowance for this move, margin excluded (None: unlimited)
    in_time: bool
    remaining_ns: int | None  # the mover's game clock after the move (None: no game clock)

    @property
    def overrun_ns(self) -> int:
        """How far past its allowance (margin excluded) the move was; 0 when in time."""
        if self.in_time or self.allowed_ns is None:
            return 0
        return self.elapsed_ns - self.allowed_ns


class _SideClock:
    """One side's clock under its own form."""

    __slots__ = ("base_ns", "form", "inc_ns", "move_ns", "moves", "period", "remaining", "wire")

    def __init__(self, form: TimeControlForm) -> None:
        self.form = form
        self.wire = form.wire()
        self.move_ns = form.move_ms * NS_PER_MS if isinstance(form, MoveTime) else None
        self.base_ns = None if isinstance(form, MoveTime) else form.base_ms * NS_PER_MS
        self.inc_ns = 0 if isinstance(form, MoveTime) else form.increment_ms * NS_PER_MS
        self.period = form.moves if isinstance(form, Periods) else None
        self.remaining: int | None = self.base_ns
        self.moves = 0


class GameClock:
    """Both sides' clocks for one game, each under its own time control (the same one unless a bot has time odds).
    Pure: the caller passes measured nanoseconds."""

    __slots__ = ("_margin_ns", "_sides")

    def __init__(
        self,
        black: TimeControl | TimeControlForm,
        white: TimeControl | TimeControlForm | None = None,
        margin_ms: int = 0,
    ) -> None:
        if margin_ms < 0:
            raise ValueError(f"the safety margin must be 0 ms or more, not {margin_ms} ms")
        self._margin_ns = margin_ms * NS_PER_MS
        black_form = form_of(black)
        self._sides = {
            BLACK: _SideClock(black_form),
            WHITE: _SideClock(black_form if white is None else form_of(white)),
        }

    @property
    def margin_ns(self) -> int:
        return self._margin_ns

    def control_for(self, color: Color) -> TimeControl:
        """The time control `color`'s clock follows (wire form)."""
        return self._sides[color].wire

    def increment_ms(self, color: Color) -> int:
        side = self._sides[color]
        return side.inc_ns // NS_PER_MS

    def move_limit_ms(self, color: Color) -> int | None:
        """The fixed time per move of `color` (None: it has a game clock)."""
        move_ns = self._sides[color].move_ns
        return None if move_ns is None else move_ns // NS_PER_MS

    def remaining_ns(self, color: Color) -> int | None:
        """The side's game clock (None: no game clock)."""
        return self._sides[color].remaining

    def moves_to_go(self, color: Color) -> int | None:
        """Moves the side must make before its clock is filled up again (periods only)."""
        side = self._sides[color]
        if side.period is None:
            return None
        return side.period - side.moves % side.period

    def allowed_ns(self, color: Color) -> int | None:
        """The most the side's next move may take, margin excluded."""
        side = self._sides[color]
        return side.move_ns if side.remaining is None else side.remaining

    def deadline_ns(self, color: Color) -> int | None:
        """How long the referee waits for the side's next move: its allowance plus the margin."""
        allowed = self.allowed_ns(color)
        return None if allowed is None else allowed + self._margin_ns

    def message(self, color: Color) -> TurnClocks:
        """Both clocks as the turn message shows them to `color` (whole ms, rounded down; the increment and the
        limits are the mover's).

        `run_game` writes the same fields straight into its hand-built turn line; a test holds the two equal.
        """
        black, white = self.remaining_ns(BLACK), self.remaining_ns(WHITE)
        return TurnClocks.model_construct(
            black_ms=None if black is None else black // NS_PER_MS,
            white_ms=None if white is None else white // NS_PER_MS,
            increment_ms=self.increment_ms(color),
            move_limit_ms=self.move_limit_ms(color),
            moves_to_go=self.moves_to_go(color),
        )

    def charge(self, color: Color, elapsed_ns: int, *, timed_out: bool = False) -> Charge:
        """Charge one move of `color` that took `elapsed_ns`; `timed_out`: no move came before the deadline.

        In time: the clock is updated (elapsed taken off, floored at zero, then the increment and, at the end
        of a period, the base added). Out of time: the clock is left as it was and the verdict says so.
        """
        elapsed_ns = max(0, elapsed_ns)
        side = self._sides[color]
        allowed = self.allowed_ns(color)
        remaining = side.remaining
        if timed_out or (allowed is not None and elapsed_ns > allowed + self._margin_ns):
            return Charge(elapsed_ns, allowed, False, remaining)
        side.moves += 1
        if remaining is not None:
            remaining = max(0, remaining - elapsed_ns) + side.inc_ns
            if side.period is not None and side.base_ns is not None and side.moves % side.period == 0:
                remaining += side.base_ns
            side.remaining = remaining
        return Charge(elapsed_ns, allowed, True, remaining)
