"""The `alternator` command line: one subcommand per job, each in its own module under `referee.commands`.

Each command module exposes `HELP` (one line), `configure(parser)` to declare its arguments and
`run(args) -> int` to do the work; heavy imports stay inside `run` so that `--help` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from referee import __version__
from referee.outputs.terminal import printable

if TYPE_CHECKING:
    from protocol.rules import Position

# Subcommand name -> module in referee.commands, in the order `--help` lists them.
COMMANDS = {
    "tournament": "tournament",
    "match": "match",
    "replay": "replay",
    "perft": "perft",
    "solve": "solve",
    "sprt-calc": "sprt_calc",
    "openings": "openings",
    "tune": "tune",
    "schema": "schema",
    "report": "report",
    "serve": "serve",
    "export": "export",
    "ladder": "ladder",
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


def komi_value(text: str) -> float:
    """`--komi K` of every command: a finite number (NaN or infinity would make every score meaningless)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give the komi like 3.5 or 0") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number; give the komi like 3.5 or 0")
    return value


def start_position(size: str, komi: float | None, moves: str) -> Position:
    """The position that `--size`, `--komi` and `--moves` describe (perft and solve), or a UsageError naming the
    option and the move at fault."""
    from protocol.rules import DEFAULT_KOMI, IllegalMoveError, InvalidMoveError, Move, Position

    width, height = board_size(size)
    try:
        position = Position(width, height, DEFAULT_KOMI if komi is None else komi)
    except ValueError as error:
        raise UsageError(f"--komi {komi}: {error}") from None
    for number, text in enumerate(moves.split(), 1):
        try:
            position.push(Move.parse(text))
        except InvalidMoveError as error:
            raise UsageError(f"--moves: move {number}: {error}") from None
        except IllegalMoveError as error:
            raise UsageError(f"--moves: move {number} is illegal: {error}; correct or remove it") from None
    return position


def games_count(text: str) -> int:
    """`--games N` of every command: 1 to MAX_GAMES_PER_PAIRING games (per pairing in a tournament)."""
    from referee.host.limits import MAX_GAMES_PER_PAIRING

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of games") from None
    if not 1 <= value <= MAX_GAMES_PER_PAIRING:
        raise argparse.ArgumentTypeError(f"{value}: give 1 to {MAX_GAMES_PER_PAIRING:,} games per pairing")
    return value


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"referee.commands.{COMMANDS[name]}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `command` (the one given), only that command's module is imported and its
    arguments declared: the others are named, for a misspelt command's message (a run's start does not import and
    configure twelve other commands, ~70 ms)."""
    parser = argparse.ArgumentParser(
        prog="alternator",
        description="Run bots that play Alternator against each other: matches, tournaments, standings.",
    )
    parser.add_argument("--version", action="version", version=f"alternator {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if command in COMMANDS and name != command:
            subparsers.add_parser(name)
            continue
        module = _load(name)
        sub = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(sub)
        sub.set_defaults(run=module.run, parser=sub)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt: every command stops the same way for both.

    A command that handles signals itself (a tournament in progress) takes SIGTERM over while it runs;
    this covers the rest, start-up included, which the default action would end without a word.
    """


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


RUN_COMMANDS = ("match", "tournament")
"""Commands that stop with 130 on SIGINT and SIGTERM alike, at any moment (a run resumes with the same command)."""


def status_for_signal(argv: Sequence[str], *, terminated: bool) -> int:
    """The exit status after a signal: 130 for a match or tournament (README), else the shell's for the signal."""
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    if command in RUN_COMMANDS or not terminated:
        return 128 + signal.SIGINT
    return 128 + signal.SIGTERM


def main(argv: Sequence[str] | None = None) -> int:
    previous = None
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _main(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        containment = sys.modules.get("referee.host.containment")  # not imported: no bot was started
        if containment is not None:
            containment.drop_idle_notes()  # the command's bots are all stopped: its running-bots notes go


def _main(argv: Sequence[str] | None) -> int:
    command = "?"
    try:
        given = list(sys.argv[1:] if argv is None else argv)
        parser = build_parser(given[0] if given else None)
        args, extra = parser.parse_known_args(given)
        command = args.command
        if extra:
            # argparse leaves a subcommand's unknown arguments to the top level, which would print the
            # top-level usage; the subcommand's own usage is the one that helps.
            args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
        result: int = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, while it can still be handled
    except UsageError as error:
        print(f"alternator {command}: error: {printable(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        terminated = isinstance(interrupt, Terminated)
        print(f"alternator {command}: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return status_for_signal(list(sys.argv[1:] if argv is None else argv), terminated=terminated)
    except BrokenPipeError:
        # The reader went away (`alternator replay --moves game.json | head`): stop quietly, as other tools do.
        # Python would report the pipe again when it flushes stdout at exit, so stdout goes to /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 128 + 13  # as if killed by SIGPIPE, the default for a tool writing to a closed pipe
    return result
