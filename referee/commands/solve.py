"""`alternator solve`: the exact value of a position with perfect play, and a move that keeps it.

The value is the final score Black - White, komi included, that both sides can force; every line of
play is searched to the end (sample_bots/solver.py). The answer goes to standard output; progress
(nodes, speed, an estimate of the total time) goes to standard error while it works. Past what a
pure-Python search can finish in reasonable time it refuses, saying how long it would take, unless
`--force`; `--time-limit` gives up cleanly after that many seconds.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import TYPE_CHECKING, TextIO

from referee.cli import komi_value

if TYPE_CHECKING:
    from protocol.rules import Move, Position
    from sample_bots.solver import Solution

HELP = "the exact value of a position with perfect play, and a best move (small boards and endgames)"

REFUSE_SECONDS = 3600.0
"""Estimated solving time past which `solve` refuses without `--force`."""
WARN_SECONDS = 30.0
_NODES_PER_SECOND = 250_000  # the solver's speed on a modest machine, for the estimate before it starts


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--size", required=True, metavar="N|WxH", help="board size: 4 for 4x4, or WxH like 3x5, 2 to 26 each"
    )
    parser.add_argument(
        "--moves", default="", metavar="MOVES", help='moves to play first, separated by spaces: "b3b2 a1a2 pass"'
    )
    parser.add_argument("--komi", type=komi_value, default=None, metavar="K", help="White's komi (default 3.5)")
    parser.add_argument("--all", action="store_true", help="also print the exact value after every legal move")
    parser.add_argument(
        "--time-limit", type=float, default=None, metavar="SECONDS", help="give up after this long (exit status 1)"
    )
    parser.add_argument(
        "--force", action="store_true", help="solve even when the estimate says it would take more than an hour"
    )


def run(args: argparse.Namespace) -> int:
    from referee.cli import UsageError, start_position
    from sample_bots.solver import SolveAborted, Solver, estimate_nodes, live_roots

    if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit > 0):
        raise UsageError(f"--time-limit {args.time_limit}: give a number of seconds greater than 0")
    position = start_position(args.size, args.komi, args.moves)

    print(_describe(position))
    outcome = position.outcome()
    if outcome is not None:
        print(f"the game is over: {outcome}; value {_signed(outcome.black_score - outcome.white_score)}")
        return 0

    live = live_roots(position)
    estimate = estimate_nodes(live) * (len(position.legal_moves()) if args.all else 1) / _NODES_PER_SECOND
    if estimate > REFUSE_SECONDS and not args.force:
        raise UsageError(
            f"{live} roots are still in play: solving would take about {_duration(estimate)} (estimated);"
            " play some moves first with --moves, or pass --force to try anyway (with --time-limit to bound it)"
        )
    if estimate > WARN_SECONDS:
        print(f"{live} roots in play: this may take about {_duration(estimate)} (Ctrl-C stops it)", file=sys.stderr)

    solver = Solver(position)
    progress = _Progress(sys.stderr, estimate * _NODES_PER_SECOND)
    solver.on_progress = progress.report
    deadline = None if args.time_limit is None else time.perf_counter() + args.time_limit
    try:
        solution = solver.solve(deadline)
        values: list[tuple[Move, Solution]] = []
        if args.all:
            for number, move in enumerate(solver.root_moves(), 1):
                progress.label = f"move {number}/{len(position.legal_moves())} ({move})"
                values.append((move, solver.move_value(move, deadline)))
    except SolveAborted as error:
        progress.done()
        print(f"alternator solve: no answer within --time-limit {args.time_limit:g} s: {error}", file=sys.stderr)
        return 1
    progress.done()
    print(f"value: {_signed(solution.score)} ({_verdict(solution.score)})")
    print(f"best move: {solution.best_move}")
    if values:
        sign = 1 if position.turn.value == "black" else -1
        values.sort(key=lambda mv: -sign * mv[1].score)
        print(f"every move, best first for {position.turn} (value after it, and the best reply):")
        for move, after in values:
            keeps = "  best" if after.score == solution.score else ""
            print(f"  {move!s:>6}  {_signed(after.score):>6}  reply {after.best_move}{keeps}")
    nodes = solver.nodes
    seconds = time.perf_counter() - progress.start
    print(f"solved in {seconds:.2f} s, {nodes:,} nodes, {solver.symmetry_count} symmetries used", file=sys.stderr)
    return 0


class _Progress:
    """A progress line on standard error: nodes, speed, and the estimated time left (rewritten in place on a tty)."""

    def __init__(self, stream: TextIO, estimated_nodes: float) -> None:
        self.stream = stream
        self.estimated_nodes = estimated_nodes
        self.start = time.perf_counter()
        self.label = "the position"
        self.shown = False
        self.tty = stream.isatty()

    def report(self, nodes: int, _seconds: float) -> None:
        elapsed = time.perf_counter() - self.start
        rate = nodes / max(elapsed, 1e-9)
        left = max(self.estimated_nodes - nodes, 0) / max(rate, 1.0)
        guess = f"about {_duration(left)} left (estimated)" if left > 0 else "past the estimate"
        line = f"solving {self.label}: {nodes:,} nodes, {elapsed:.0f} s, {rate:,.0f} nodes/s, {guess}"
        if self.tty:
            self.stream.write(f"\r{line:<100}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _describe(position: Position) -> str:
    after = f"after {len(position.history)} moves" if position.history else "the empty board"
    komi = position.komi
    komi_text = str(int(komi)) if komi.is_integer() else str(komi)
    passes = ", after a pass" if position.consecutive_passes == 1 else ""
    return f"{position.size_text}, {after}, {position.turn} to move{passes}, komi {komi_text}"


def _signed(score: float) -> str:
    text = str(int(score)) if float(score).is_integer() else str(score)
    return text if score < 0 else f"+{text}"


def _verdict(score: float) -> str:
    if score == 0:
        return "a draw with perfect play"
    winner = "Black" if score > 0 else "White"
    size = abs(score)
    return f"{winner} wins by {int(size) if float(size).is_integer() else size} with perfect play"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.0f} h"
    if seconds < 730 * 86400:
        return f"{seconds / 86400:.0f} days"
    return f"{seconds / 31_557_600:.0g} years"
