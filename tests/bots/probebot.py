"""A bot for the controls tests: declares options through the kit and logs what each `new_game` gave it.

    probebot.py LOGFILE [--over] [--score S]

It appends one JSON line per game to LOGFILE: the game's options, node and depth limits, its own and the
opponent's time control, as the kit parsed them. With --over it
reports, in an info before each move, one node more than its node limit (for the record's note). It plays
the `level`-th legal placement (cyclically) at once, so its play depends on an option, deterministically.
With --score S it reports the score S (its own point of view) in an info before each move.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from protocol.kit import Clock, Game, Option, run_bot, send_info
from protocol.rules import PASS, Move, Position

OPTIONS = [
    Option("level", "int", 3, min=1, max=10),
    Option("weight", "float", 0.5, min=0.0, max=1.0),
    Option("fast", "bool", False),
    Option("style", "choice", "calm", choices=("calm", "wild")),
    Option("label", "string", ""),
]


def main() -> None:
    log = Path(sys.argv[1])
    over = "--over" in sys.argv[2:]
    score = float(sys.argv[sys.argv.index("--score") + 1]) if "--score" in sys.argv else None

    def log_game(game: Game) -> None:
        entry = {
            "options": game.options,
            "nodes": game.nodes,
            "depth": game.depth,
            "time_control": dataclasses.asdict(game.time_control),
            "opponent_time_control": None
            if game.opponent_time_control is None
            else dataclasses.asdict(game.opponent_time_control),
        }
        with log.open("a", encoding="utf-8") as file:
            file.write(json.dumps(entry) + "\n")

    level = OPTIONS[0].default

    def new_game(game: Game) -> None:
        nonlocal level
        level = int(game.options["level"])
        log_game(game)

    def choose(position: Position, clock: Clock) -> Move:
        if over and clock.nodes is not None:
            send_info(depth=1, score=0.0, nodes=clock.nodes + 1)
        if score is not None:
            send_info(depth=1, score=score)
        placements = position.legal_placements()
        # Its play depends on `level` (deterministically): something for the tuning tests to tune.
        return placements[(int(level) - 1) % len(placements)] if placements else PASS

    run_bot(choose, name="probe", author="tests", version="1", on_new_game=new_game, options=OPTIONS)


if __name__ == "__main__":
    main()
