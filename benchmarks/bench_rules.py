"""Speed of the rules engine, the inner loop of every search bot and of adjudication.

Prints perft(3) of the empty 8x8 board (seconds, leaves per second) and random playouts per second
(full 8x8 games, uniformly random legal moves, passing only when no placement is legal), each next to
baselines measured in the same run: a straightforward move generator that scans every (pit, root)
pair at every node (the engine's first design), and the naive test oracle. Run from the top level:

    python benchmarks/bench_rules.py [--playout-seconds 2] [--oracle]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.rules import PASS, Position, perft


class ScanningBoard:
    """The straightforward design: parent and size arrays, legal placements found by scanning all pairs."""

    def __init__(self, width: int, height: int) -> None:
        n = width * height
        self.parent = [-1] * n
        self.size = [1] * n
        self.passes = 0
        self.pairs: list[tuple[int, int]] = []
        for p in range(n):
            f, r = p % width, p // width
            for df, dr in ((0, -1), (-1, 0), (1, 0), (0, 1)):
                if 0 <= f + df < width and 0 <= r + dr < height:
                    self.pairs.append((p, p + df + dr * width))

    def legal(self) -> list[tuple[int, int]]:
        parent, size = self.parent, self.size
        return [(p, q) for p, q in self.pairs if parent[p] < 0 and parent[q] < 0 and size[p] >= size[q]]

    def perft(self, depth: int) -> int:
        if self.passes >= 2:
            return 0
        moves = self.legal()
        if depth == 1:
            return len(moves) + 1
        total = 0
        for p, q in moves:
            self.parent[p] = q
            self.size[q] += self.size[p]
            saved, self.passes = self.passes, 0
            total += self.perft(depth - 1)
            self.passes = saved
            self.size[q] -= self.size[p]
            self.parent[p] = -1
        self.passes += 1
        total += self.perft(depth - 1)
        self.passes -= 1
        return total

    def playout(self, rng: random.Random) -> None:
        while self.passes < 2:
            moves = self.legal()
            if moves:
                p, q = rng.choice(moves)
                self.parent[p] = q
                self.size[q] += self.size[p]
                self.passes = 0
            else:
                self.passes += 1


def timed(fn: Callable[[], int]) -> tuple[int, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def best_of(repeats: int, fn: Callable[[], int]) -> tuple[int, float]:
    """The fastest of a few runs: the machine is shared, so the minimum is the least noisy figure."""
    runs = [timed(fn) for _ in range(repeats)]
    return runs[0][0], min(seconds for _, seconds in runs)


def playouts_per_second(one_playout: Callable[[random.Random], None], seconds: float) -> tuple[float, int]:
    rng = random.Random(1)
    count = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or count == 0:
        one_playout(rng)
        count += 1
    return count / elapsed, count


def engine_playout(rng: random.Random) -> None:
    """The integer-level API, as a search bot would use it: draw, push, then take everything back."""
    position = Position()
    while not position.is_over():
        position.push_id(position.random_placement_id(rng))
    while position.history:
        position.pop()


def engine_move_playout(rng: random.Random) -> None:
    """The Move-level API: list the legal moves, pick a placement, push (each move checked)."""
    position = Position()
    while not position.is_over():
        placements = position.legal_placements()
        position.push(rng.choice(placements) if placements else PASS)


def oracle_playout(rng: random.Random) -> None:
    from tests.rules_oracle import OracleGame

    game = OracleGame(8, 8)
    while not game.is_over():
        placements = game.legal_placements()
        game.play(rng.choice(placements) if placements else "pass")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--playout-seconds", type=float, default=2.0, help="time per playout figure (default 2)")
    parser.add_argument("--oracle", action="store_true", help="also time the naive oracle's playouts (slow)")
    args = parser.parse_args()

    print("perft(3), empty 8x8 board (best of 3)")
    count, seconds = best_of(3, lambda: perft(Position(), 3))
    print(f"  engine:          {count} leaves in {seconds:.3f} s = {count / seconds:,.0f} leaves/s")
    base_count, base_seconds = best_of(1, lambda: ScanningBoard(8, 8).perft(3))
    assert base_count == count, (base_count, count)
    print(
        f"  scanning (naive): {base_count} leaves in {base_seconds:.3f} s = {base_count / base_seconds:,.0f} leaves/s"
    )
    print(f"  speed-up:        {base_seconds / seconds:.1f}x")
    count4, seconds4 = best_of(1, lambda: perft(Position(4, 4), 4))
    print(f"perft(4), empty 4x4: {count4} leaves in {seconds4:.3f} s = {count4 / seconds4:,.0f} leaves/s")

    print(f"random playouts, 8x8 (uniform legal placements, pass only when none; {args.playout_seconds:g} s each)")
    rate, n = playouts_per_second(engine_playout, args.playout_seconds)
    print(f"  engine, integer API (random_placement_id/push_id/pop): {rate:,.0f} playouts/s ({n} games)")
    rate_moves, n = playouts_per_second(engine_move_playout, args.playout_seconds)
    print(f"  engine, Move API (legal_placements/push):             {rate_moves:,.0f} playouts/s ({n} games)")
    rate_scan, n = playouts_per_second(lambda rng: ScanningBoard(8, 8).playout(rng), args.playout_seconds)
    print(f"  scanning (naive):                                     {rate_scan:,.0f} playouts/s ({n} games)")
    if args.oracle:
        rate_oracle, n = playouts_per_second(oracle_playout, args.playout_seconds)
        print(f"  test oracle (naive, re-derives every tree):           {rate_oracle:,.1f} playouts/s ({n} games)")
    print(f"  speed-up over scanning: {rate / rate_scan:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
