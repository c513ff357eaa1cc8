"""A bot that plays a uniformly random legal placement, and passes only when no placement is legal.

    python -m sample_bots.random [--seed N]

With `--seed N` every game reproduces: each game's generator is seeded with N and the game id, so two
games of one process differ but the same game id always gets the same moves. Without it a seed is drawn
at random and printed to stderr, so a game can still be replayed. (Run it with `-m`: as a script, its
own file name would hide the standard `random` module.)
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from protocol.kit import Clock, Game, log, run_bot
from protocol.rules import PASS, Move, Position


class RandomBot:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)

    def on_new_game(self, game: Game) -> None:
        # A string seed is hashed deterministically (not with Python's randomised str hash).
        self.rng = random.Random(f"{self.seed}:{game.game_id}")

    def choose(self, position: Position, clock: Clock) -> Move:
        placements = position.legal_placements()
        return self.rng.choice(placements) if placements else PASS


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sample_bots.random", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, help="make every game reproducible (default: a random seed, logged)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    log(f"random: seed {seed}")
    bot = RandomBot(seed)
    run_bot(bot.choose, name="random", author="alternator arena", version="1.0", on_new_game=bot.on_new_game)


if __name__ == "__main__":
    main()
