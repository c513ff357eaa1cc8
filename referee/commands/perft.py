"""`alternator perft`: count the positions N moves ahead, to check a move generator against ours.

The count alone is the last line of standard output, so scripts can take it with `tail -n 1`; with
`--divide` one `move: count` line per first move comes before it, in the engine's fixed move order.
Timing goes to standard error.
"""

from __future__ import annotations

import argparse
import sys
import time

HELP = "count the positions N moves ahead (perft), to test a move generator"


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
    parser.add_argument("--komi", type=float, default=None, metavar="K", help="White's komi (default 3.5)")


def run(args: argparse.Namespace) -> int:
    from protocol.rules import DEFAULT_KOMI, IllegalMoveError, InvalidMoveError, Move, Position, perft
    from referee.cli import UsageError, board_size

    width, height = board_size(args.size)
    if args.depth < 0:
        raise UsageError(f"--depth {args.depth}: the depth must be 0 or more")
    komi = DEFAULT_KOMI if args.komi is None else args.komi
    try:
        position = Position(width, height, komi)
    except ValueError as error:
        raise UsageError(f"--komi {args.komi}: {error}") from None
    for number, text in enumerate(args.moves.split(), 1):
        try:
            position.push(Move.parse(text))
        except InvalidMoveError as error:
            raise UsageError(f"--moves: move {number}: {error}") from None
        except IllegalMoveError as error:
            raise UsageError(f"--moves: move {number} is illegal: {error}; correct or remove it") from None

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
        f"perft({args.depth}) on {width}x{height} after {len(position.history)} moves: {seconds:.3f} s{rate}",
        file=sys.stderr,
    )
    print(total)
    return 0
