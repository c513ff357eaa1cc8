"""Referee messages for tests that play the referee's part against a bot (the kit's and the sample bots')."""

from __future__ import annotations

from protocol import messages as m


def new_game(game_id: str, color: str = "black", width: int = 3, height: int = 3, komi: float = 0.5) -> m.NewGame:
    """A `new_game` at 60 s + 0.5 s against an opponent called `nobody`."""
    return m.NewGame.model_validate(
        {
            "type": "new_game",
            "game_id": game_id,
            "color": color,
            "width": width,
            "height": height,
            "komi": komi,
            "time_control": {"base_ms": 60000, "increment_ms": 500},
            "opponent": "nobody",
        }
    )
