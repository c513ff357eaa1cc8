"""`alternator report OUT_DIR`: write the self-contained HTML report of a match or tournament."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from referee.cli import UsageError

HELP = "write one self-contained HTML page (standings, charts, a game viewer) for a match or tournament"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="the output directory of a match or tournament")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="where to write the page (default: OUT_DIR/report.html)"
    )


def run(args: argparse.Namespace) -> int:
    from referee.report import ReportError, load_run, write_report

    try:
        with load_run(args.out_dir) as run:
            path = write_report(args.out_dir, args.output, run=run)
            games = run.count()
    except ReportError as error:
        raise UsageError(str(error)) from None
    for line in run.errors:
        print(f"alternator report: warning: left out {line}", file=sys.stderr)
    print(f"report: {path} ({games} games, {path.stat().st_size / 1e6:.2f} MB)")
    return 0
