"""Time odds: a game clock where each side follows its own time control (`--bot "... tc=20+0.2"`).

`SideClocks` has the interface `referee.game` uses of `referee.clock.GameClock` and keeps one `GameClock` per
side, of which only that side's own clock is read: Black's time, increment, period and per-move limit come
from Black's control, White's from White's. With no odds both are the game's control, and the arithmetic is
exactly `GameClock`'s. Pure, like `referee.clock`: the caller passes the nanoseconds it measured.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.messages import TimeControl, TurnClocks
from protocol.rules import BLACK, WHITE, Color
from referee.botspec import BotSpec
from referee.clock import NS_PER_MS, Charge, GameClock, describe_time_control
from referee.record import GameRecord
from referee.standings import Standings

__all__ = ["SideClocks", "time_odds_note", "with_time_odds"]


def with_time_odds(standings: Standings, bots: Sequence[BotSpec]) -> Standings:
    """The standings with each bot's own time control, where it has one (shown beside its name)."""
    own = {spec.name: describe_time_control(spec.time_control) for spec in bots if spec.time_control is not None}
    if not own:
        return standings
    rows = [row.model_copy(update={"time_control": own.get(row.name)}) for row in standings.bots]
    return standings.model_copy(update={"bots": rows})


def time_odds_note(record: GameRecord) -> str:
    """What follows a game's time control for people when a side has its own: ` (black alphabeta 20+0.2)`."""
    odds = []
    for color, side in ((BLACK, record.black), (WHITE, record.white)):
        own = record.settings.controls(color).time_control
        if own is not None:
            odds.append(f"{color} {side.name} {describe_time_control(own)}")
    return f" ({', '.join(odds)})" if odds else ""


class SideClocks:
    """Both sides' clocks, each under its own time control."""

    __slots__ = ("_clocks", "control")

    def __init__(self, black: TimeControl, white: TimeControl, margin_ms: int = 0) -> None:
        self._clocks = {BLACK: GameClock(black, margin_ms), WHITE: GameClock(white, margin_ms)}
        self.control = black  # GameClock's attribute; use `control_for` where the sides may differ

    def control_for(self, color: Color) -> TimeControl:
        """The time control `color`'s clock follows."""
        return self._clocks[color].control

    @property
    def margin_ns(self) -> int:
        return self._clocks[BLACK].margin_ns

    def remaining_ns(self, color: Color) -> int | None:
        return self._clocks[color].remaining_ns(color)

    def moves_to_go(self, color: Color) -> int | None:
        return self._clocks[color].moves_to_go(color)

    def allowed_ns(self, color: Color) -> int | None:
        return self._clocks[color].allowed_ns(color)

    def deadline_ns(self, color: Color) -> int | None:
        return self._clocks[color].deadline_ns(color)

    def charge(self, color: Color, elapsed_ns: int, *, timed_out: bool = False) -> Charge:
        return self._clocks[color].charge(color, elapsed_ns, timed_out=timed_out)

    def message(self, color: Color) -> TurnClocks:
        """Both clocks as the turn message shows them to `color`: the increment and limits are the mover's."""
        black, white = self.remaining_ns(BLACK), self.remaining_ns(WHITE)
        control = self.control_for(color)
        return TurnClocks.model_construct(
            black_ms=None if black is None else black // NS_PER_MS,
            white_ms=None if white is None else white // NS_PER_MS,
            increment_ms=control.increment_ms,
            move_limit_ms=control.move_time_ms,
            moves_to_go=self.moves_to_go(color),
        )
