"""The `alternator` command line: one subcommand per job, each in its own module under `referee.commands`.

Each command module exposes `HELP` (one line), `configure(parser)` to declare its arguments and
`run(args) -> int` to do the work; heavy imports stay inside `run` so that `--help` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from referee import __version__

# Subcommand name -> module in referee.commands, in the order `--help` lists them.
COMMANDS = {
    "tournament": "tournament",
    "match": "match",
    "replay": "replay",
    "perft": "perft",
    "solve": "solve",
    "schema": "schema",
}


class UsageError(Exception):
    """A bad argument or input the user can fix; the message says what and how."""


def board_size(text: str) -> tuple[int, int]:
    """`--size 8` or `--size 9x7` as (width, height); UsageError saying what a size looks like otherwise."""
    from protocol.rules import InvalidPositionError, parse_size

    try:
        return parse_size(text)
    except InvalidPositionError as error:
        raise UsageError(f"--size {error}") from None


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"referee.commands.{COMMANDS[name]}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="alternator",
        description="Run bots that play Alternator against each other: matches, tournaments, standings.",
    )
    parser.add_argument("--version", action="version", version=f"alternator {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = _load(name)
        sub = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.run(args)
    except UsageError as error:
        print(f"alternator {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"alternator {args.command}: interrupted", file=sys.stderr)
        return 130
    return result
