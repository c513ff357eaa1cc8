"""`alternator match`: two bots play a few games against each other, each game written as a JSON record."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from referee.botspec import BOT_FORMS_HELP
from referee.cli import UsageError

HELP = "play a match between two bots and write each game's record"

DEFAULT_TC = "10+0.1"
DEFAULT_GAMES = 2

EPILOG = f"""\
{BOT_FORMS_HELP}
Time controls:
  --tc 60+0.5      Fischer: 60 s each, plus 0.5 s after every move (fractions allowed: 10+0.1)
  --tc 40/60       60 s for every 40 moves
  --movetime 2     at most 2 s for every move, no game clock
  (default: --tc {DEFAULT_TC})

Records: DIR/game-001.json, ... (one JSON GameRecord per game, schema in referee/schema/game_record.json)
and the bots' stderr logs in DIR/logs/. Check a record with `alternator replay DIR/game-001.json`.

Exit status: 0 when every game was played (whatever the results), 2 for a bad argument or a bot that
cannot be started, 1 when the match could not be completed, 130 when stopped by Ctrl-C (finished
games are kept, the current one is written as aborted).

Examples:
  alternator match --black random --white greedy
  alternator match --black greedy --white "./mybot --fast" --tc 60+0.5 --games 4 --show-moves
  alternator match --black 'name=mine cmd="python3 bot.py" dir=bots/mine' --white bots/other.toml
  alternator match --black ./submitted-bot --white greedy --sandbox --memory-mb 512
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("--black", required=True, metavar="BOT", help="the bot that plays Black in game 1")
    parser.add_argument("--white", required=True, metavar="BOT", help="the bot that plays White in game 1")
    clock = parser.add_mutually_exclusive_group()
    clock.add_argument(
        "--tc", metavar="TC", help=f"time control: BASE+INC or MOVES/BASE in seconds (default {DEFAULT_TC})"
    )
    clock.add_argument("--movetime", metavar="S", type=float, help="a fixed limit of S seconds per move instead")
    parser.add_argument("--size", default="8x8", metavar="WxH", help="board size, e.g. 8x8 or 6x6 (default 8x8)")
    parser.add_argument("--komi", type=float, default=3.5, help="points added to White's score (default 3.5)")
    parser.add_argument(
        "--opening", default="", metavar="MOVES", help='moves to play before the bots, e.g. "d5d4 d4e4"'
    )
    parser.add_argument(
        "--games",
        type=int,
        default=DEFAULT_GAMES,
        metavar="N",
        help=f"games to play, colours alternating (default {DEFAULT_GAMES})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="folder for the records and logs (default ./alternator-out/match-<time>/)",
    )
    parser.add_argument("--show-moves", action="store_true", help="print every move as it is played")
    add_sandbox_options(parser)


def add_sandbox_options(parser: argparse.ArgumentParser) -> None:
    """`--sandbox` and `--memory-mb`, shared with `alternator tournament`."""
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help="run every bot in a bubblewrap sandbox: no network, read-only files apart from a private /tmp,"
        " a cleared environment (needs bwrap: apt-get install bubblewrap)",
    )
    parser.add_argument(
        "--memory-mb",
        type=int,
        metavar="N",
        help="limit every bot's memory (address space) to N MiB; a bot that allocates more crashes",
    )


def check_memory_mb(value: int | None) -> None:
    if value is not None and value < 16:
        raise UsageError(f"--memory-mb {value}: give at least 16 (MiB); a bot needs some memory to start")


def parse_size(text: str) -> tuple[int, int]:
    """`8x8`, `6x5` (files x ranks) or `8`; UsageError otherwise."""
    parts = text.lower().split("x")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) == 1:
        numbers *= 2
    if len(numbers) != 2 or not all(2 <= n <= 26 for n in numbers):
        raise UsageError(f"--size {text!r}: give files x ranks, each from 2 to 26, e.g. --size 8x8 or --size 6x6")
    return numbers[0], numbers[1]


def run(args: argparse.Namespace) -> int:
    import trio

    from protocol.rules import IllegalMoveError, InvalidMoveError, Position
    from referee.botspec import BotSpecError, check_bot_command, parse_bot_arg
    from referee.clock import movetime_control, parse_time_control
    from referee.display import MatchDisplay, format_match_report
    from referee.match import Match, MatchError, is_interrupt, unique_names
    from referee.process import BotStartError
    from referee.record import GameSettings

    width, height = parse_size(args.size)
    if args.games < 1:
        raise UsageError(f"--games {args.games}: play at least one game")
    if args.movetime is not None:
        if not args.movetime > 0:
            raise UsageError(f"--movetime {args.movetime:g}: give a positive number of seconds, e.g. --movetime 2")
        time_control = movetime_control(args.movetime)
    else:
        try:
            time_control = parse_time_control(args.tc or DEFAULT_TC)
        except ValueError as error:
            raise UsageError(f"--tc {args.tc!r}: {error}") from None
    opening = args.opening.split()
    try:
        if Position.from_moves(opening, width, height, args.komi).is_over():
            raise UsageError("--opening: it ends the game (two passes); leave moves for the bots")
    except (InvalidMoveError, IllegalMoveError) as error:
        raise UsageError(f"--opening: {error}") from None
    settings = GameSettings(width=width, height=height, komi=args.komi, time_control=time_control, opening=opening)

    check_memory_mb(args.memory_mb)
    bots = []
    for flag, text in (("--black", args.black), ("--white", args.white)):
        try:
            spec = parse_bot_arg(text)
            if args.sandbox:
                spec = spec.model_copy(update={"sandbox": True})
            if args.memory_mb is not None:
                spec = spec.model_copy(update={"memory_mb": args.memory_mb})
            check_bot_command(spec)
        except BotSpecError as error:
            raise UsageError(f"{flag}: {error}") from None
        bots.append(spec)
    first, second = unique_names(bots[0], bots[1])

    started = datetime.now()
    match_id = f"match-{started:%Y%m%d-%H%M%S}"
    out_dir: Path = args.out if args.out is not None else Path("alternator-out") / match_id
    try:
        (out_dir / "logs").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out: cannot create {out_dir}: {error.strerror or error}; choose another folder") from None
    display = MatchDisplay(sys.stdout, show_moves=args.show_moves)
    match = Match(first, second, settings, args.games, out_dir, match_id=match_id, observer=display)
    display.message(f"{first.name} vs {second.name}: {args.games} game(s), records in {out_dir}")

    def report() -> None:
        for line in format_match_report(match.records, first.name, second.name):
            display.message(line)

    try:
        trio.run(match.run)
    except BotStartError as error:
        print(f"alternator match: error: {error}", file=sys.stderr)
        return 2
    except MatchError as error:
        report()
        print(f"alternator match: error: {error}", file=sys.stderr)
        return 1
    except BaseException as error:
        if not is_interrupt(error):
            raise
        report()
        print(f"alternator match: interrupted; {len(match.paths)} record(s) kept in {out_dir}", file=sys.stderr)
        return 130
    report()
    return 0
