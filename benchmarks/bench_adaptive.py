"""Adaptive scheduling against round robin: games needed to get a pool's true order at 95 %, and the scheduling
cost per game in a pool of 1,000 bots.

A simulated pool with known Elo values gives exact truth: bot i is rated i * GAP plus a seeded jitter of up to
a quarter gap either way (so neighbours are 25 to 75 Elo apart), and a game is drawn with probability up to
DRAW_RATE (less between unequal bots), else won by the logistic expectation. Both schedules are judged by the
same rule, `referee.run.adaptive.neighbour_confidence` and `pair_threshold`: the whole order is decided at 95 % when
every neighbouring pair of the fit's order is ordered at 1 - 5 % / (bots - 1). The adaptive run is
`referee.run.adaptive.Adaptive` itself (one game pair in flight); the round robin plays every pairing one game
pair per cycle and is looked at after each cycle.
Whether the decided order is the true one is reported beside the count.

    python benchmarks/bench_adaptive.py [--seeds 5] [--sizes 8,16] [--large 1000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from referee.run.adaptive import Adaptive, neighbour_confidence, pair_threshold, totals
from referee.run.schedule import Progress, ScheduledGame

GAP = 50.0
DRAW_RATE = 0.1
CONFIDENCE = 0.95


def pool(n: int, seed: int) -> dict[str, float]:
    rng = random.Random(f"pool:{seed}")
    return {f"bot{i:04d}": i * GAP + rng.uniform(-GAP / 4, GAP / 4) for i in range(n)}


def game_result(elo: dict[str, float], rng: random.Random) -> Callable[[str, str], float]:
    def play(black: str, white: str) -> float:
        p = 1.0 / (1.0 + 10 ** ((elo[white] - elo[black]) / 400.0))
        draw = DRAW_RATE * 2 * min(p, 1 - p)
        x = rng.random()
        return 1.0 if x < p - draw / 2 else (0.5 if x < p + draw / 2 else 0.0)

    return play


def truth(elo: dict[str, float]) -> list[str]:
    return sorted(elo, key=lambda name: -elo[name])


def run_adaptive(elo: dict[str, float], seed: int, budget: int) -> tuple[int, bool, float]:
    """(games played, whether the final order is the true one, seconds spent scheduling)."""
    bots = list(elo)
    random.Random(seed).shuffle(bots)  # the config order must not help
    play = game_result(elo, random.Random(f"adaptive:{seed}"))
    scheduler = Adaptive(budget, [], confidence=CONFIDENCE)
    scheduled: list[ScheduledGame] = []
    points: dict[int, float] = {}
    spent = 0.0
    while True:
        started = time.perf_counter()
        new = scheduler.next_games(Progress(bots, scheduled, points))
        spent += time.perf_counter() - started
        if not new:
            break
        scheduled.extend(new)
        for game in new:
            points[game.number] = play(game.black, game.white)
    order = scheduler.summary(Progress(bots, scheduled, points)).order
    return len(scheduled), order == truth(elo), spent


def run_round_robin(elo: dict[str, float], seed: int, budget: int) -> tuple[int, bool]:
    """Round robin cycles (every pairing a game pair) until the same rule calls the order decided."""
    bots = list(elo)
    play = game_result(elo, random.Random(f"round-robin:{seed}"))
    results: list[tuple[str, str, float]] = []
    while len(results) < budget:
        for i, a in enumerate(bots):
            for b in bots[i + 1 :]:
                results.append((a, b, play(a, b)))
                results.append((b, a, play(b, a)))
        order, confidences, _ = neighbour_confidence(bots, totals(results))
        if all(c >= pair_threshold(CONFIDENCE, len(bots)) for _, _, c in confidences):
            return len(results), order == truth(elo)
    order, _, _ = neighbour_confidence(bots, totals(results))
    return len(results), order == truth(elo)


def compare(n: int, seeds: int) -> None:
    budget = 200_000
    print(
        f"{n} bots, neighbours 25-75 Elo apart, the whole order decided at {CONFIDENCE:.0%} (each neighbouring"
        f" order at {pair_threshold(CONFIDENCE, n):.2%}):"
    )
    ratios = []
    right = [0, 0]
    for seed in range(1, seeds + 1):
        elo = pool(n, seed)
        adaptive, adaptive_right, spent = run_adaptive(elo, seed, budget)
        rr, rr_right = run_round_robin(elo, seed, budget)
        ratios.append(adaptive / rr)
        right[0] += adaptive_right
        right[1] += rr_right
        print(
            f"  seed {seed}: adaptive {adaptive:6d} games ({'true order' if adaptive_right else 'WRONG order'},"
            f" {1000 * spent / max(1, adaptive):.2f} ms scheduling a game); round robin {rr:6d} games"
            f" ({'true order' if rr_right else 'WRONG order'}); adaptive/round robin {adaptive / rr:.2f}"
        )
    print(
        f"  median ratio {statistics.median(ratios):.2f} (target: at most 0.50); the true order: adaptive"
        f" {right[0]}/{seeds}, round robin {right[1]}/{seeds}"
    )


def large(n: int, games: int) -> None:
    """The cost of choosing the next game pair in a pool of n bots, after a first pass that gives every bot a
    game pair (the chain of neighbours in a random order), over `games` more games."""
    elo = pool(n, 1)
    bots = list(elo)
    random.Random(1).shuffle(bots)
    play = game_result(elo, random.Random("large"))
    scheduler = Adaptive(10**9, [])
    scheduled: list[ScheduledGame] = []
    points: dict[int, float] = {}
    timings: list[float] = []
    while len(scheduled) < games:
        started = time.perf_counter()
        new = scheduler.next_games(Progress(bots, scheduled, points))
        timings.append(time.perf_counter() - started)
        scheduled.extend(new)
        for game in new:
            points[game.number] = play(game.black, game.white)
    per_game = [t / 2 for t in timings]
    print(
        f"{n} bots: scheduling cost per game over {games} games: median {1000 * statistics.median(per_game):.1f} ms,"
        f" last 100 calls {1000 * statistics.mean(per_game[-100:]):.1f} ms, max {1000 * max(per_game):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sizes", default="8,16")
    parser.add_argument("--large", type=int, default=1000)
    parser.add_argument("--large-games", type=int, default=2000)
    args = parser.parse_args()
    for n in (int(size) for size in args.sizes.split(",")):
        compare(n, args.seeds)
    if args.large:
        large(args.large, args.large_games)


if __name__ == "__main__":
    main()
