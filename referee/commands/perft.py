"""`alternator perft` (being built: see the open issues)."""

from __future__ import annotations

import argparse

HELP = "perft (not yet available)"


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    raise SystemExit("alternator perft: not yet available")
