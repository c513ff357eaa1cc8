"""Engine authors' per-bot controls in a game: what `new_game` tells each bot, and what the record notes.

A bot's own time control (time odds), its node and depth limits and its option values (`GameSettings.controls`)
reach it in its `new_game`: `new_game_fields` builds those fields, checking the option values against what the
bot declared in its hello (`protocol.options`). `nodes_over_limit` is the note a record gets when a bot's `info`
reports more nodes than its limit allowed. Pure: `referee.play.game` calls these and does the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.options import Option, OptionValue, resolve_options
from protocol.rules import Color
from referee.record import GameSettings, SideControls
from referee.run.botspec import BotSpec

__all__ = ["new_game_fields", "nodes_over_limit", "side_controls"]


def side_controls(spec: BotSpec) -> SideControls | None:
    """A bot's own controls for a game's settings (None when it has none, which keeps records as they were)."""
    if spec.time_control is None and spec.nodes is None and spec.depth is None and not spec.options:
        return None
    return SideControls(time_control=spec.time_control, nodes=spec.nodes, depth=spec.depth, options=spec.options)


def new_game_fields(
    settings: GameSettings, color: Color, declared: Sequence[Option], name: str
) -> tuple[dict[str, Any], dict[str, OptionValue] | None]:
    """The per-bot fields of `color`'s `new_game`, and the option values sent (None: it declared no options).

    OptionError (naming the bot) when a chosen option is not declared or its value does not fit.
    """
    own = settings.controls(color)
    options = resolve_options(declared, own.options, bot=name) if declared or own.options else None
    fields: dict[str, Any] = {
        "time_control": settings.time_control_for(color),
        "opponent_time_control": settings.time_control_for(color.other),
        "options": options,
        "nodes": own.nodes,
        "depth": own.depth,
    }
    return fields, options


def nodes_over_limit(limit: int | None, infos: Sequence[dict[str, Any]], who: str, move_number: int) -> str | None:
    """A note when an info of this move reports more nodes than the bot's limit (None: within it, or no limit)."""
    if limit is None:
        return None
    reported = [info["nodes"] for info in infos if isinstance(info.get("nodes"), int)]
    if not reported or max(reported) <= limit:
        return None
    return f"move {move_number}: {who} reported {max(reported)} nodes in an info, over its node limit of {limit}"
