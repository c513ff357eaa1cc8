"""`alternator openings`: write a balanced book, openings the solver or the strong sample bot rates near even.

Candidates are seeded random openings of `--plies` placements; each is rated (`referee.run.openings.rate_opening`:
exact by the solver when few roots are left in play, else the strong bot's search in `--search-time`), and
those within `--max-score` of an even game (komi included) are kept, until `--count` are found. The book is
an openings file (one opening per line, its rating as a comment) for `--openings-file`; progress goes to
standard error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from referee.cli import UsageError, board_size, komi_value

HELP = "write a balanced openings book: random openings the solver or the strong bot rates near even"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", default="8x8", metavar="N|WxH", help="board size (default 8x8)")
    parser.add_argument("--komi", type=komi_value, default=3.5, help="White's komi (default 3.5)")
    parser.add_argument("--plies", type=int, default=4, metavar="N", help="random placements per opening (4)")
    parser.add_argument("--count", type=int, default=50, metavar="N", help="openings wanted (default 50)")
    parser.add_argument(
        "--max-score",
        type=float,
        default=2.0,
        metavar="S",
        help="keep openings rated within S points of even, komi included (default 2)",
    )
    parser.add_argument("--seed", default="1", help="seed of the candidates (the same seed, the same book)")
    parser.add_argument(
        "--search-time", type=float, default=0.2, metavar="S", help="seconds the strong bot rates a candidate"
    )
    parser.add_argument("--tries", type=int, metavar="N", help="candidates to rate at most (default 20 per opening)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the book here (default: standard output)")


def run(args: argparse.Namespace) -> int:
    from referee.run.openings import RatedOpening, balanced_book, format_book, rate_opening

    width, height = board_size(args.size)
    if not 0 < args.plies < width * height - 1:
        raise UsageError(f"--plies {args.plies}: give 1 to {width * height - 2} placements")
    if args.count < 1:
        raise UsageError(f"--count {args.count}: ask for at least 1 opening")
    if args.max_score < 0 or args.search_time <= 0:
        raise UsageError("--max-score must be 0 or more and --search-time above 0")
    seed: int | str = int(args.seed) if args.seed.lstrip("-").isdigit() else args.seed
    rated = 0

    def progress(opening: RatedOpening, kept: bool) -> None:
        nonlocal rated
        rated += 1
        how = "exact" if opening.exact else "search"
        mark = "kept" if kept else "skipped"
        print(f"{rated}: {' '.join(opening.moves)}  {opening.score:+g} ({how}) {mark}", file=sys.stderr, flush=True)

    book = balanced_book(
        width,
        height,
        args.komi,
        plies=args.plies,
        count=args.count,
        max_score=args.max_score,
        seed=seed,
        rate=lambda position: rate_opening(position, search_s=args.search_time),
        tries=args.tries,
        on_rated=progress,
    )
    header = [
        f"alternator openings --size {width}x{height} --komi {args.komi:g} --plies {args.plies} --count {args.count}"
        f" --max-score {args.max_score:g} --seed {args.seed}",
        f"{len(book)} openings rated within {args.max_score:g} of even (Black's final margin with komi) of {rated}"
        " rated; use with --openings-file",
    ]
    text = format_book(book, header)
    if args.out is not None:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as error:
            raise UsageError(f"--out {args.out}: cannot write it: {error.strerror}") from None
        print(f"wrote {len(book)} openings to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if len(book) < args.count:
        print(
            f"only {len(book)} of {args.count} openings were near enough to even; raise --max-score or --tries",
            file=sys.stderr,
        )
        return 1
    return 0
