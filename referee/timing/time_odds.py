"""Time odds for people: each bot's own time control (`--bot "... tc=20+0.2"`) beside its name in the standings
and after a game's time control. The clocks themselves are `referee.timing.clock.GameClock`'s, one per side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.rules import BLACK, WHITE
from referee.record import GameRecord
from referee.run.botspec import BotSpec
from referee.timing.clock import describe_time_control

if TYPE_CHECKING:  # not at run time: a play worker makes viewer lines (`time_odds_note`) and needs no standings
    from referee.stats.standings import Standings

__all__ = ["time_odds_note", "with_time_odds"]


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
