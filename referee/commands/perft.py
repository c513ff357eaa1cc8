"""`alternator perft`: count the positions N moves ahead, to check a move generator against ours.

The count alone is the last line of standard output, so scripts can take it with `tail -n 1`; with
`--divide` one `move: count` line per first move comes before it, in the engine's fixed move order.
Timing goes to standard error.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import TYPE_CHECKING

from referee.cli import komi_value

if TYPE_CHECKING:
    from protocol.rules import Position

HELP = "count the positions N moves ahead (perft), to test a move generator"

MAX_SECONDS = 600.0
"""A run estimated to take longer is refused without --force: `--depth 1000` would never end."""
PROBE_SECONDS = 0.5
"""Shallower counts are timed while the next is expected to take less; the estimate extrapolates from the last."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--size",
        default="8x8",
        metavar="N|WxH",
        help="board size: 8 for 8x8, or WxH like 9x7, 2 to 26 each (default 8x8)",
    )
    parser.add_argument("--depth", type=int, required=True, metavar="N", help="how many moves ahead to count")
    parser.add_argument(
        "--moves", default="", metavar="MOVES", help='moves to play first, separated by spaces: "d5d4 d4e4 pass"'
    )
    parser.add_argument("--divide", action="store_true", help="also print the count after each first move")
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"run even when the estimate says it takes over {MAX_SECONDS / 60:g} minutes (refused without it)",
    )
    parser.add_argument("--komi", type=komi_value, default=None, metavar="K", help="White's komi (default 3.5)")


def run(args: argparse.Namespace) -> int:
    from protocol.rules import perft
    from referee.cli import UsageError, start_position

    if args.depth < 0:
        raise UsageError(f"--depth {args.depth}: the depth must be 0 or more")
    position = start_position(args.size, args.komi, args.moves)
    width, height = position.width, position.height

    if not args.force:
        check_duration(position, args.depth)
    start = time.perf_counter()
    if args.divide and args.depth >= 1:
        total = 0
        for move in position.legal_moves():
            position.push(move)
            count = perft(position, args.depth - 1)
            position.pop()
            print(f"{move}: {count}")
            total += count
    else:
        total = perft(position, args.depth)
    seconds = time.perf_counter() - start
    rate = f", {total / seconds:,.0f} leaves/s" if seconds > 0 else ""
    print(
        f"perft({args.depth}) on {width}x{height} after {_moves(len(position.history))}: {seconds:.3f} s{rate}",
        file=sys.stderr,
    )
    print(total)
    return 0


def _moves(count: int) -> str:
    return f"{count} move" if count == 1 else f"{count} moves"


def check_duration(position: Position, depth: int) -> None:
    """UsageError when perft to `depth` would take over MAX_SECONDS, with the estimate and a depth that fits.

    Times the counts at depths 1, 2, ... until one takes PROBE_SECONDS (or `depth` is reached), then
    extrapolates: each further move multiplies the count and the time by the last depth's growth. Rough
    (the tree narrows as the board fills), but it tells a minute from a millennium.
    """
    from protocol.rules import perft
    from referee.cli import UsageError

    counts, times = [1], [0.0]
    probe = 0
    while probe < depth - 1:
        if probe >= 3 and times[-1] * max(counts[-1] / max(counts[-2], 1), 1.0) > PROBE_SECONDS:
            break  # the next probe would take too long itself
        probe += 1
        start = time.perf_counter()
        counts.append(perft(position, probe))
        times.append(time.perf_counter() - start)
    if probe < 3 or counts[-1] == 0 or counts[-2] == 0:
        return  # depth 1 and 2 are counted without playing them: no work to time yet
    growth = max(counts[-1] / counts[-2], 1.0)
    seconds_log = math.log10(max(times[-1], 1e-6)) + (depth - probe) * math.log10(growth)
    if seconds_log <= math.log10(MAX_SECONDS):
        return
    count_log = math.log10(counts[-1]) + (depth - probe) * math.log10(growth)
    minute_depth = probe + max(0, math.floor((math.log10(60) - math.log10(max(times[-1], 1e-6))) / math.log10(growth)))
    raise UsageError(
        f"--depth {depth}: about {_power(count_log)} positions, roughly {_duration(seconds_log)} on this machine"
        f" (each move multiplies the work by about {growth:.0f}); depth {minute_depth} should take under a minute."
        " Choose a smaller depth, or add --force to run it anyway"
    )


def _power(log: float) -> str:
    return f"{10**log:,.0f}" if log < 15 else f"10^{log:.0f}"


def _duration(seconds_log: float) -> str:
    seconds = 10**seconds_log if seconds_log < 300 else math.inf
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            amount_log = seconds_log - math.log10(size)
            return f"{10**amount_log:,.0f} {unit}" if amount_log < 15 else f"10^{amount_log:.0f} {unit}"
    return f"{seconds:.0f} s"
