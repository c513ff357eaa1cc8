"""How often the alpha-beta sample bot beats the greedy sample bot, at a given time per move.

Games are played in-process (no referee, no subprocesses) from random openings of a few plies;
each opening is played twice, the strong bot taking Black once and White once. Prints one line per
game, then wins/draws/losses, the win percentage, and the search's typical depth and speed.

    python benchmarks/bench_strong_vs_greedy.py --games 20 --seconds 1.0
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.kit import Clock
from protocol.rules import Move, Position
from sample_bots import greedy
from sample_bots.search import choose_move


def greedy_move(position: Position) -> Move:
    """The greedy sample bot's own choice (it ignores the clock)."""
    clock = Clock(my_ms=None, opponent_ms=None, increment_ms=0, move_limit_ms=None, moves_to_go=None, received_at=0.0)
    move = greedy.choose(position, clock)
    return Move.parse(move) if isinstance(move, str) else move


def random_opening(rng: random.Random, plies: int, width: int, height: int, komi: float) -> Position:
    position = Position(width, height, komi)
    for _ in range(plies):
        position.push(rng.choice(position.legal_placements()))
    return position


def play(
    opening: Position, strong_is_black: bool, seconds: float, stats: list[tuple[int, float, int]]
) -> tuple[float, str]:
    """Play one game; returns the strong bot's points (1, 0.5, 0) and the final score text."""
    position = opening.copy()
    while not position.is_over():
        strong_to_move = (position.turn.value == "black") == strong_is_black
        if strong_to_move:
            started = time.perf_counter()
            info = choose_move(position, seconds)
            stats.append((info.depth, time.perf_counter() - started, info.nodes))
            move = info.move
        else:
            move = greedy_move(position)
        position.push(move)
    outcome = position.outcome()
    assert outcome is not None
    if outcome.winner is None:
        return 0.5, str(outcome)
    won = (outcome.winner.value == "black") == strong_is_black
    return (1.0 if won else 0.0), str(outcome)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20, help="games to play (rounded up to even)")
    parser.add_argument("--seconds", type=float, default=1.0, help="the strong bot's time per move")
    parser.add_argument("--plies", type=int, default=4, help="random opening plies")
    parser.add_argument("--size", type=int, default=8, help="board width and height")
    parser.add_argument("--komi", type=float, default=3.5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    openings = [random_opening(rng, args.plies, args.size, args.size, args.komi) for _ in range((args.games + 1) // 2)]
    print(f"alphabeta ({args.seconds} s/move) vs greedy, {2 * len(openings)} games on {args.size}x{args.size}")
    wins = draws = losses = 0
    stats: list[tuple[int, float, int]] = []
    start = time.perf_counter()
    for number, opening in enumerate(openings):
        for strong_is_black in (True, False):
            points, text = play(opening, strong_is_black, args.seconds, stats)
            wins += points == 1.0
            draws += points == 0.5
            losses += points == 0.0
            colour = "black" if strong_is_black else "white"
            opening_text = " ".join(str(m) for m in opening.history)
            print(f"opening {number:2} [{opening_text}] strong as {colour}: {points} ({text})", flush=True)
    games = wins + draws + losses
    print(f"\nwins {wins}  draws {draws}  losses {losses}  of {games}: {100 * wins / games:.1f}% wins")
    depths = [d for d, _s, _n in stats]
    total_nodes = sum(n for _d, _s, n in stats)
    total_seconds = sum(s for _d, s, _n in stats)
    overrun = max(s for _d, s, _n in stats) - args.seconds
    print(
        f"search: {len(stats)} moves, median depth {statistics.median(depths)}, max {max(depths)},"
        f" {total_nodes / max(total_seconds, 1e-9):.0f} nodes/s, mean {total_seconds / len(stats):.3f} s/move,"
        f" worst {1000 * overrun:+.0f} ms over the budget, wall {time.perf_counter() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
