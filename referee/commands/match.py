"""`alternator match`: two bots play games against each other, each game written as a JSON record.

It is also the regression test of an engine author: the new version against the last one, from
seeded or listed openings (each played twice, colours swapped), until the SPRT says whether the new
version is stronger (`--sprt`), with the Elo difference and `match.json` at the end.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from referee.cli import UsageError, board_size, games_count, komi_value
from referee.terminal import printable

if TYPE_CHECKING:
    from referee.botspec import BotSpec
    from referee.sprt import SprtParameters

HELP = "play a match between two bots and write each game's record"

# Here, not in referee.botspec (which parses these forms), so that `--help` does not import pydantic.
BOT_FORMS_HELP = """\
A bot (BOT) is given in one of these forms:
  random                      a sample bot by module name (any module in sample_bots/:
                              random, greedy, alphabeta, ...): runs `python -m sample_bots.random`
  "./mybot --depth 3"         a command line, split like a shell would (quotes work) but never run
                              through a shell: no pipes, globs or $VARIABLES
  "python3 bots/mine.py"      a command whose first word is python or python3 runs with the Python
                              that runs alternator
  'name=deep cmd="./mybot --depth 9" dir=bots/mine env.THREADS=1'
                              key=value fields: name (in records and standings), cmd (a command line
                              as above, or a sample bot name), dir (working directory), env.KEY=VALUE
                              (an extra environment variable; repeat for more), sandbox=1 (run it in a
                              sandbox: no network, read-only files but /tmp), memory_mb=N (limit its
                              memory to N MiB)
  bots/mine.toml              a bot file (ends in .toml), with the same fields:
                                name = "deep"
                                command = "./mybot --depth 9"   # or a list: ["./mybot", "--depth", "9"]
                                dir = "."                       # relative to the bot file's folder
                                sandbox = true                  # optional, see above
                                memory_mb = 512                 # optional, see above
                                [env]
                                THREADS = "1"
Without a name, a bot is named after its program (or its script or module, for Python).
A relative program path (./mybot) is looked up in the bot's working directory.
"""

DEFAULT_TC = "10+0.1"
DEFAULT_GAMES = 2
DEFAULT_SPRT_GAMES = 1000
DEFAULT_OPENINGS_SEED = "1"
SPRT_KEYS = ("elo0", "elo1", "alpha", "beta")

EPILOG = f"""\
{BOT_FORMS_HELP}
Time controls:
  --tc 60+0.5      Fischer: 60 s each, plus 0.5 s after every move (fractions allowed: 10+0.1)
  --tc 40/60       60 s for every 40 moves
  --movetime 2     at most 2 s for every move, no game clock
  (default: --tc {DEFAULT_TC})

Openings: games come in pairs, 2k-1 and 2k, with colours swapped. --openings-plies N starts each pair
from N seeded random legal placements (--openings-seed S, default 1: the same seed gives the same
openings), --openings-file FILE from the next line of FILE (one move list per line, reused in order);
--opening MOVES starts every game from the same moves.

Regression testing (SPRT): --sprt elo0=0 elo1=5 alpha=0.05 beta=0.05 (any key may be left out; these
are the defaults) tests H1 "the --black bot is elo1 Elo stronger" against H0 "it is at most elo0
stronger" after every pair, and stops as soon as the log-likelihood ratio reaches
ln((1-beta)/alpha) (H1 accepted) or ln(beta/(1-alpha)) (H0 accepted). --games is then the most games
to play (default {DEFAULT_SPRT_GAMES}, even). The model is fishtest's: a generalized SPRT with logistic
Elo on game pairs (pentanomial; see referee/sprt.py). alpha is the chance of a false "stronger", beta
of a missed one. Use openings, or deterministic bots replay the same pair over and over.

Records: DIR/game-001.json, ... (one JSON GameRecord per game, schema in referee/schema/game_record.json),
the bots' stderr logs in DIR/logs/, and DIR/match.json: the score, the pairs, the Elo difference with its
95% interval and the SPRT (schema in referee/schema/match_summary.json). Check a record with
`alternator replay DIR/game-001.json`.

Exit status: 0 when the match was played (every game, or until the SPRT's verdict, whichever verdict),
2 for a bad argument or a bot that cannot be started, 1 when the match could not be completed, 130
when stopped by Ctrl-C (finished games are kept, the current one is written as aborted).

Examples:
  alternator match --black random --white greedy
  alternator match --black greedy --white "./mybot --fast" --tc 60+0.5 --games 4 --show-moves
  alternator match --black 'name=mine cmd="python3 bot.py" dir=bots/mine' --white bots/other.toml
  alternator match --black ./submitted-bot --white greedy --sandbox --memory-mb 512
  alternator match --black "name=new cmd=./mybot-new" --white "name=base cmd=./mybot-base" \\
      --tc 5+0.05 --openings-plies 4 --sprt elo0=0 elo1=5 --games 4000
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
    parser.add_argument(
        "--margin-ms",
        type=int,
        default=0,
        metavar="MS",
        help="grace added to every deadline before a bot loses on time (default 0; for busy machines)",
    )
    parser.add_argument(
        "--size",
        default="8x8",
        metavar="N|WxH",
        help="board size: 8 for 8x8, or WxH like 9x7, 2 to 26 each (default 8x8)",
    )
    parser.add_argument("--komi", type=komi_value, default=3.5, help="points added to White's score (default 3.5)")
    parser.add_argument(
        "--opening", default="", metavar="MOVES", help='moves to play before the bots in every game, e.g. "d5d4 d4e4"'
    )
    parser.add_argument(
        "--openings-plies", type=int, metavar="N", help="start each pair of games from N seeded random placements"
    )
    parser.add_argument(
        "--openings-seed", metavar="SEED", help=f"seed of the random openings (default {DEFAULT_OPENINGS_SEED})"
    )
    parser.add_argument(
        "--openings-file", type=Path, metavar="FILE", help="start each pair from the next line (a move list) of FILE"
    )
    parser.add_argument(
        "--games",
        type=games_count,
        metavar="N",
        help=f"games to play, colours alternating (default {DEFAULT_GAMES}); with --sprt the most to play"
        f" (default {DEFAULT_SPRT_GAMES})",
    )
    parser.add_argument(
        "--sprt",
        nargs="*",
        metavar="KEY=VALUE",
        help="stop as soon as the SPRT decides whether the --black bot is stronger: elo0=0 elo1=5 alpha=0.05"
        " beta=0.05 (the defaults; see below)",
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
    parser.add_argument(
        "--max-processes",
        type=int,
        metavar="N",
        help="at most N processes and threads per bot at once, all it starts included (default 128; needs"
        " writable cgroups, else only a sandboxed bot of a non-root referee is bounded)",
    )
    parser.add_argument(
        "--cpu-limit",
        type=float,
        metavar="SECONDS",
        help="the most CPU time a bot (all its processes, on its turns and off them) may use in one game;"
        " past it, it loses on time",
    )
    parser.add_argument(
        "--no-ponder",
        action="store_true",
        help="freeze each bot (all its processes) during its opponent's turns, so it cannot think on the"
        " opponent's time or steal its CPU",
    )
    parser.add_argument(
        "--cpu-affinity",
        action="store_true",
        help="give each concurrent game its own cores; both bots of a game run on them",
    )


def check_containment(args: argparse.Namespace) -> None:
    """Usage errors for --max-processes and --cpu-limit."""
    if args.max_processes is not None and args.max_processes < 1:
        raise UsageError(f"--max-processes {args.max_processes}: give at least 1 (a bot is a process)")
    if args.cpu_limit is not None and not args.cpu_limit > 0:
        raise UsageError(f"--cpu-limit {args.cpu_limit:g}: give a positive number of CPU seconds, e.g. --cpu-limit 60")


def contained(spec: BotSpec, args: argparse.Namespace) -> BotSpec:
    """`spec` with the containment options of the command line applied."""
    update: dict[str, object] = {}
    if args.max_processes is not None:
        update["max_processes"] = args.max_processes
    if args.cpu_limit is not None:
        update["cpu_limit_s"] = args.cpu_limit
    if args.no_ponder:
        update["ponder"] = False
    return spec.model_copy(update=update) if update else spec


def check_memory_mb(value: int | None) -> None:
    if value is not None and value < 16:
        raise UsageError(f"--memory-mb {value}: give at least 16 (MiB); a bot needs some memory to start")


def parse_sprt(words: list[str]) -> SprtParameters:
    """`--sprt elo0=0 elo1=5 alpha=0.05 beta=0.05` (spaces or commas between; keys left out take their
    defaults) into SprtParameters; UsageError naming the bad word otherwise."""
    from referee.sprt import SprtParameters

    example = "e.g. --sprt elo0=0 elo1=5 alpha=0.05 beta=0.05"
    values: dict[str, float] = {}
    for word in " ".join(words).replace(",", " ").split():
        key, equals, text = word.partition("=")
        key = key.strip().lower()
        if not equals:
            raise UsageError(f"--sprt {word!r}: give KEY=VALUE words, {example}")
        if key not in SPRT_KEYS:
            raise UsageError(f"--sprt {word!r}: unknown key {key!r}; the keys are {', '.join(SPRT_KEYS)}, {example}")
        if key in values:
            raise UsageError(f"--sprt: {key} is given twice; give each key once, {example}")
        try:
            values[key] = float(text)
        except ValueError:
            raise UsageError(f"--sprt {word!r}: {text!r} is not a number, {example}") from None
    try:
        return SprtParameters(**values)
    except ValueError as error:
        raise UsageError(f"--sprt: {error}") from None


def run(args: argparse.Namespace) -> int:
    import trio

    from protocol.rules import IllegalMoveError, InvalidMoveError, Position
    from referee.botspec import BotSpecError, check_bot_command, parse_bot_arg
    from referee.clock import movetime_control, parse_time_control
    from referee.display import MatchDisplay, format_match_report, format_statistics
    from referee.match import (
        Ended,
        Match,
        MatchError,
        OpeningsUsed,
        is_interrupt,
        match_summary,
        unique_names,
        write_summary,
    )
    from referee.process import BotStartError
    from referee.record import GameSettings
    from referee.schedule import OpeningsFileError, random_openings, read_openings_file

    width, height = board_size(args.size)
    sprt = parse_sprt(args.sprt) if args.sprt is not None else None
    games: int = args.games if args.games is not None else DEFAULT_SPRT_GAMES if sprt else DEFAULT_GAMES
    if games < 1:
        raise UsageError(f"--games {games}: play at least one game")
    if sprt is not None and games % 2:
        raise UsageError(f"--games {games}: with --sprt give an even number; the test counts pairs of games")
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
    if args.margin_ms < 0:
        raise UsageError(f"--margin-ms {args.margin_ms}: give 0 or more milliseconds, e.g. --margin-ms 20")
    settings = GameSettings(
        width=width, height=height, komi=args.komi, time_control=time_control, opening=opening, margin_ms=args.margin_ms
    )

    # Openings per pair of games: seeded random ones, or the lines of a file; or one fixed opening for all.
    if args.openings_plies is not None and args.openings_file is not None:
        raise UsageError("--openings-plies and --openings-file: give one of them (random openings, or a file)")
    if opening and (args.openings_plies is not None or args.openings_file is not None):
        raise UsageError(
            "--opening starts every game from the same moves, --openings-plies/--openings-file each pair from"
            " its own: give one of them"
        )
    if args.openings_seed is not None and args.openings_plies is None:
        raise UsageError("--openings-seed: it seeds random openings; give --openings-plies N too")
    openings: list[tuple[str, ...]] = []
    if args.openings_plies is not None:
        capacity = width * height - 1
        if not 0 < args.openings_plies < capacity:
            raise UsageError(
                f"--openings-plies {args.openings_plies}: give from 1 to {capacity - 1} placements on a"
                f" {width}x{height} board (it needs room left to play)"
            )
        seed = args.openings_seed if args.openings_seed is not None else DEFAULT_OPENINGS_SEED
        openings = random_openings(width, height, args.komi, args.openings_plies, seed, (games + 1) // 2)
        used = OpeningsUsed(kind="random", plies=args.openings_plies, seed=seed, count=len(openings))
    elif args.openings_file is not None:
        try:
            openings = read_openings_file(args.openings_file, width, height, args.komi)
        except OpeningsFileError as error:
            raise UsageError(f"--openings-file: {error}") from None
        used = OpeningsUsed(kind="file", file=str(args.openings_file), count=len(openings))
    else:
        used = OpeningsUsed(kind="fixed", count=1) if opening else OpeningsUsed(kind="none", count=1)

    check_memory_mb(args.memory_mb)
    check_containment(args)
    from referee.containment import use_cpu_affinity

    use_cpu_affinity(1 if args.cpu_affinity else None)  # a match is one slot: all the cores it may use
    bots = []
    for flag, text in (("--black", args.black), ("--white", args.white)):
        try:
            spec = parse_bot_arg(text)
            if args.sandbox:
                spec = spec.model_copy(update={"sandbox": True})
            if args.memory_mb is not None:
                spec = spec.model_copy(update={"memory_mb": args.memory_mb})
            spec = contained(spec, args)
            check_bot_command(spec)
        except BotSpecError as error:
            raise UsageError(f"{flag}: {error}") from None
        bots.append(spec)
    first, second = unique_names(bots[0], bots[1])

    started = datetime.now().astimezone()
    match_id = f"match-{started:%Y%m%d-%H%M%S}"
    out_dir: Path = args.out if args.out is not None else Path("alternator-out") / match_id
    try:
        (out_dir / "logs").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out: cannot create {out_dir}: {error.strerror or error}; choose another folder") from None
    display = MatchDisplay(sys.stdout, show_moves=args.show_moves)
    match = Match(
        first, second, settings, games, out_dir, match_id=match_id, observer=display, openings=openings, sprt=sprt
    )
    plan = f"at most {games} games until the SPRT decides" if sprt else f"{games} game(s)"
    display.message(f"{first.name} vs {second.name}: {plan}, records in {out_dir}")
    if sprt is not None and used.kind in ("none", "fixed"):
        display.message(
            "note: every pair starts from the same position; deterministic bots then replay the same two games"
            " and the SPRT learns nothing new from them: use --openings-plies N or --openings-file FILE"
        )

    def report(ended: Ended) -> None:
        for line in format_match_report(match.records, first.name, second.name):
            display.message(line)
        state = match.sprt_state
        if sprt is not None and state is None:
            from referee.sprt import sprt_status

            state = sprt_status(sprt, match.pairs)
        for line in format_statistics(match.pairs, state, first.name, second.name):
            display.message(line)
        try:
            summary = match_summary(match, ended=ended, openings=used, started_at=started)
            display.message(f"summary: {write_summary(summary, out_dir)}")
        except MatchError as error:
            print(f"alternator match: error: {printable(str(error))}", file=sys.stderr)

    try:
        trio.run(match.run)
    except BotStartError as error:
        print(f"alternator match: error: {printable(str(error))}", file=sys.stderr)
        return 2
    except MatchError as error:
        report("error")
        print(f"alternator match: error: {printable(str(error))}", file=sys.stderr)
        return 1
    except BaseException as error:
        if not is_interrupt(error):
            raise
        report("interrupted")
        print(f"alternator match: interrupted; {len(match.paths)} record(s) kept in {out_dir}", file=sys.stderr)
        return 130
    report("sprt" if match.decided else "completed")
    return 0
