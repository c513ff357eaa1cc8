"""`alternator match` (being built: see the open issues)."""

from __future__ import annotations

import argparse

HELP = "match (not yet available)"


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    raise SystemExit("alternator match: not yet available")
