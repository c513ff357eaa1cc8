"""`alternator report OUT_DIR`: write the self-contained HTML report of a match or tournament."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from referee.cli import UsageError

if TYPE_CHECKING:
    from referee.stats.standings import Anchor

HELP = "write one self-contained HTML page (standings, charts, a game viewer) for a match or tournament"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="the output directory of a match or tournament")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="where to write the page (default: OUT_DIR/report.html)"
    )
    parser.add_argument(
        "--anchor", metavar="NAME=RATING", help="fix bot NAME's rating at RATING (default: the run's own --anchor)"
    )


def anchor_option(text: str | None, out_dir: Path) -> Anchor | None:
    """`--anchor NAME=RATING` of `report` and `serve`: an Anchor, NAME one of the run's bots when it has any yet."""
    if text is None:
        return None
    from referee.run.rundir import RunDirectory, RunReadError
    from referee.stats.standings import parse_anchor

    try:
        anchor = parse_anchor(text)
    except ValueError as error:
        raise UsageError(f"--anchor: {error}") from None
    try:
        with RunDirectory.open(out_dir) as run:
            bots = run.bots
    except RunReadError:
        return anchor  # nothing to check it against yet (the live page waits for the run)
    if bots and anchor.name not in bots:
        raise UsageError(f"--anchor: {anchor.name!r} is not one of the bots ({', '.join(bots)}); anchor one of them")
    return anchor


def run(args: argparse.Namespace) -> int:
    from referee.outputs.report import ReportError, load_run, write_report

    anchor = anchor_option(args.anchor, args.out_dir)
    try:
        with load_run(args.out_dir) as run:
            if anchor is not None:
                run.anchor = anchor
            path = write_report(args.out_dir, args.output, run=run)
            games = run.count()
    except ReportError as error:
        raise UsageError(str(error)) from None
    for line in run.errors:
        print(f"alternator report: warning: {line}", file=sys.stderr)
    print(f"report: {path} ({games} games, {path.stat().st_size / 1e6:.2f} MB)")
    return 0
