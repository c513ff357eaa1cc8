"""Time controls and the game clock: pure arithmetic over nanoseconds that the caller measured.

Nothing here reads a clock. `referee.game` measures each move itself (from writing the turn line to the
moment the reply line is complete) and hands the elapsed nanoseconds to `GameClock.charge`, which says
whether the bot was in time, by how much it was over if not, and what is left on its clock.

The three forms of `TimeControl` (exactly one applies):

- Fischer (`base_ms`, `increment_ms`, `moves_per_period` null): each side starts with `base_ms`; after each
  of its moves in time, `increment_ms` is added. Text: ``"60+0.5"`` (seconds; ``"60"`` means no increment).
- Periods (`base_ms` and `moves_per_period` N): each side starts with `base_ms`; after its N-th, 2N-th, ...
  move (counting only the moves the bot itself made, not the opening), `base_ms` is added again. Unused time
  carries over, as in chess: ``"40/60"`` is 60 s for every 40 moves. An increment may be added too:
  ``"40/60+1"``. `moves_to_go` in the turn's clock is N minus the bot's moves made in the current period.
- Fixed time per move (`move_time_ms`, `base_ms` null): every move may take `move_time_ms`, nothing carries
  over. Text: ``"movetime:0.5"`` or ``"0.5/move"``.

A move is in time when it took at most its allowance (the remaining game time, or the per-move limit)
plus the safety margin (`GameSettings.margin_ms`). A move that used part of the margin leaves the clock at
zero before the increment; it does not go negative.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from protocol.messages import TimeControl, TurnClocks
from protocol.rules import Color

NS_PER_MS = 1_000_000

_SECONDS = r"(\d+(?:\.\d*)?|\.\d+)"
_FISCHER_RE = re.compile(rf"{_SECONDS}(?:\+{_SECONDS})?")
_PERIODS_RE = re.compile(rf"(\d+)/{_SECONDS}(?:\+{_SECONDS})?")
_MOVETIME_RE = re.compile(rf"(?:movetime[:=]{_SECONDS}|{_SECONDS}/move)")

_HOW = (
    "use 'BASE+INC' in seconds for Fischer (e.g. '60+0.5' or '60'), 'MOVES/BASE[+INC]' for periods "
    "(e.g. '40/60': 60 s for every 40 moves) or 'movetime:SECONDS' for a fixed time per move (e.g. 'movetime:0.5')"
)


def _ms(seconds: str) -> int:
    return round(float(seconds) * 1000)


def parse_time_control(text: str) -> TimeControl:
    """Parse a time control written as on the command line; ValueError says what is wrong and what to write."""
    spec = text.strip().lower().replace(" ", "")
    if match := _MOVETIME_RE.fullmatch(spec):
        move_ms = _ms(match[1] or match[2])
        if move_ms <= 0:
            raise ValueError(f"time control {text!r}: the time per move must be more than 0 ms")
        return movetime_control(move_ms / 1000)
    if match := _PERIODS_RE.fullmatch(spec):
        moves, base_ms, inc_ms = int(match[1]), _ms(match[2]), _ms(match[3] or "0")
        if moves < 1:
            raise ValueError(f"time control {text!r}: a period must have at least 1 move")
        if base_ms <= 0:
            raise ValueError(f"time control {text!r}: the time per period must be more than 0 ms")
        return TimeControl(base_ms=base_ms, increment_ms=inc_ms, moves_per_period=moves, move_time_ms=None)
    if match := _FISCHER_RE.fullmatch(spec):
        base_ms, inc_ms = _ms(match[1]), _ms(match[2] or "0")
        if base_ms <= 0:
            raise ValueError(f"time control {text!r}: the base time must be more than 0 ms")
        return TimeControl(base_ms=base_ms, increment_ms=inc_ms, moves_per_period=None, move_time_ms=None)
    raise ValueError(f"time control {text!r} is not understood: {_HOW}")


def movetime_control(seconds: float) -> TimeControl:
    """A fixed time per move, no game clock."""
    move_ms = round(seconds * 1000)
    if move_ms <= 0:
        raise ValueError(f"the time per move must be more than 0 ms, not {seconds} s")
    return TimeControl(base_ms=None, increment_ms=0, moves_per_period=None, move_time_ms=move_ms)


def describe_time_control(control: TimeControl) -> str:
    """The text form `parse_time_control` reads back (for logs and records)."""

    def s(ms: int) -> str:
        return f"{ms / 1000:g}"

    if control.base_ms is None:
        return f"movetime:{s(control.move_time_ms)}" if control.move_time_ms is not None else "unlimited"
    text = s(control.base_ms)
    if control.moves_per_period is not None:
        text = f"{control.moves_per_period}/{text}"
    if control.increment_ms:
        text += f"+{s(control.increment_ms)}"
    return text


@dataclass(frozen=True, slots=True)
class Charge:
    """What one move cost: the verdict of `GameClock.charge`."""

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


class GameClock:
    """Both sides' clocks for one game. Pure: the caller passes measured nanoseconds."""

    __slots__ = ("_base_ns", "_inc_ns", "_margin_ns", "_move_ns", "_moves", "_period", "_remaining", "control")

    def __init__(self, control: TimeControl, margin_ms: int = 0) -> None:
        if margin_ms < 0:
            raise ValueError(f"the safety margin must be 0 ms or more, not {margin_ms} ms")
        self.control = control
        self._margin_ns = margin_ms * NS_PER_MS
        self._base_ns = None if control.base_ms is None else control.base_ms * NS_PER_MS
        self._inc_ns = control.increment_ms * NS_PER_MS
        self._move_ns = None if control.move_time_ms is None else control.move_time_ms * NS_PER_MS
        self._period = control.moves_per_period if control.base_ms is not None else None
        self._remaining: dict[str, int | None] = {"black": self._base_ns, "white": self._base_ns}
        self._moves = {"black": 0, "white": 0}

    @property
    def margin_ns(self) -> int:
        return self._margin_ns

    def remaining_ns(self, color: Color) -> int | None:
        """The side's game clock (None: no game clock)."""
        return self._remaining[color]

    def moves_to_go(self, color: Color) -> int | None:
        """Moves the side must make before its clock is filled up again (periods only)."""
        if self._period is None:
            return None
        return self._period - self._moves[color] % self._period

    def allowed_ns(self, color: Color) -> int | None:
        """The most the side's next move may take, margin excluded (None: unlimited)."""
        remaining = self._remaining[color]
        if remaining is None:
            return self._move_ns
        if self._move_ns is None:
            return remaining
        return min(remaining, self._move_ns)

    def deadline_ns(self, color: Color) -> int | None:
        """How long the referee waits for the side's next move: its allowance plus the margin."""
        allowed = self.allowed_ns(color)
        return None if allowed is None else allowed + self._margin_ns

    def message(self, color: Color) -> TurnClocks:
        """Both clocks as the turn message shows them to `color` (whole ms, rounded down).

        `run_game` writes the same fields straight into its hand-built turn line; a test holds the two equal.
        """
        black, white = self._remaining["black"], self._remaining["white"]
        return TurnClocks.model_construct(
            black_ms=None if black is None else black // NS_PER_MS,
            white_ms=None if white is None else white // NS_PER_MS,
            increment_ms=self.control.increment_ms,
            move_limit_ms=self.control.move_time_ms,
            moves_to_go=self.moves_to_go(color),
        )

    def charge(self, color: Color, elapsed_ns: int, *, timed_out: bool = False) -> Charge:
        """Charge one move of `color` that took `elapsed_ns`; `timed_out`: no move came before the deadline.

        In time: the clock is updated (elapsed taken off, floored at zero, then the increment and, at the end
        of a period, the base added). Out of time: the clock is left as it was and the verdict says so.
        """
        elapsed_ns = max(0, elapsed_ns)
        allowed = self.allowed_ns(color)
        remaining = self._remaining[color]
        if timed_out or (allowed is not None and elapsed_ns > allowed + self._margin_ns):
            return Charge(elapsed_ns, allowed, False, remaining)
        self._moves[color] += 1
        if remaining is not None:
            remaining = max(0, remaining - elapsed_ns) + self._inc_ns
            if self._period is not None and self._base_ns is not None and self._moves[color] % self._period == 0:
                remaining += self._base_ns
            self._remaining[color] = remaining
        return Charge(elapsed_ns, allowed, True, remaining)
