"""`alternator tournament` (being built: see the open issues)."""

from __future__ import annotations

import argparse

HELP = "tournament (not yet available)"


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    raise SystemExit("alternator tournament: not yet available")
