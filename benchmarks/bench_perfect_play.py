"""Do the search bots play perfectly on the small boards? Each bot plays every board of 14 cells or fewer
(2x2 ... 7x2: 14 boards) from the empty position with each colour, at a fixed time per move, against a
perfect opponent, and a game counts as perfect when its final margin is the board's exact value.

The method: one game at a time in this one process. The bot is its real chooser
(`sample_bots.alphabeta.make_chooser` with the bot's settings, the one the kit calls under the referee),
given the clock of a fixed-time control (`--seconds` a move, nothing else), so it budgets its turn
exactly as it would through the referee; it keeps its table and its solver from move to move as it
does in a real game. The opponent is the exact solver (sample_bots/solver.py), kept along the game,
playing a value-keeping move each turn with no time limit; its thinking is not on the bot's clock.
Against a perfect opponent the bot can only lose value, so a final margin equal to the exact value
(the solver's value of the empty board) means that every move of the bot kept it. Prints each game
(its final margin, the exact value, the bot's longest move in wall and CPU time), then each bot's count.

    nice -n 5 python benchmarks/bench_perfect_play.py [--bots alphabeta,strong] [--seconds 1] [--boards 2x7,7x2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.kit import Clock
from protocol.rules import BLACK, WHITE, Color, Position
from sample_bots import strong
from sample_bots.alphabeta import make_chooser
from sample_bots.search import DEFAULT, Settings
from sample_bots.solver import Solver

BOARDS = "2x2,2x3,3x2,2x4,4x2,3x3,2x5,5x2,2x6,6x2,3x4,4x3,2x7,7x2"
BOTS: dict[str, Settings] = {"alphabeta": DEFAULT, "strong": strong.SETTINGS}


def play(settings: Settings, width: int, height: int, colour: Color, seconds: float) -> tuple[int, int, float, float]:
    """One game of the bot (with `colour`) against the solver: (final margin from the bot's side, exact
    value from the bot's side, the bot's longest move in wall seconds and in CPU seconds)."""
    position = Position(width, height)
    perfect = Solver(position)
    exact = perfect.solve().margin
    choose = make_chooser(seed=1, settings=settings)
    longest_wall = longest_cpu = 0.0
    while not position.is_over():
        if position.turn is colour:
            clock = Clock(None, None, 0, int(seconds * 1000), None, time.monotonic())
            wall, cpu = time.perf_counter(), time.process_time()
            move = choose(position, clock)
            longest_wall = max(longest_wall, time.perf_counter() - wall)
            longest_cpu = max(longest_cpu, time.process_time() - cpu)
        else:
            perfect.follow(position)
            move = perfect.solve().best_move
        position.push(move)
    side = 1 if colour is BLACK else -1
    return side * position.black_margin, side * exact, longest_wall, longest_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--bots", default="alphabeta,strong", help="comma-separated: alphabeta, strong")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per move (default 1)")
    parser.add_argument("--boards", default=BOARDS, help=f"comma-separated WxH (default {BOARDS})")
    args = parser.parse_args()
    boards = [tuple(int(x) for x in spec.split("x")) for spec in args.boards.split(",")]
    names = args.bots.split(",")
    unknown = [name for name in names if name not in BOTS]
    if unknown:
        raise SystemExit(f"unknown bot {unknown[0]!r}: choose from {', '.join(BOTS)}")
    perfect: dict[str, int] = dict.fromkeys(names, 0)
    print(f"{'bot':>10} {'board':>5} {'colour':>6} {'margin':>6} {'exact':>6} {'longest move s':>15} {'cpu s':>6}")
    for name in names:
        for width, height in boards:
            for colour in (BLACK, WHITE):
                margin, exact, wall, cpu = play(BOTS[name], width, height, colour, args.seconds)
                perfect[name] += margin == exact
                mark = "" if margin == exact else "  LOST VALUE"
                row = f"{name:>10} {width}x{height:<3} {colour!s:>6} {margin:>+6} {exact:>+6}"
                print(f"{row} {wall:>15.3f} {cpu:>6.3f}{mark}", flush=True)
    games = 2 * len(boards)
    for name in names:
        print(f"{name}: {perfect[name]} of {games} games at the exact value at {args.seconds:g} s a move")
    return 0


if __name__ == "__main__":
    sys.exit(main())
