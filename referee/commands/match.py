"""`alternator match`: two bots play a series of game pairs; a thin front-end over the one runner.

It is the regression test of an engine author: the new version against the last one, from seeded or
listed openings (each played twice, colours swapped), on every core (`--concurrency`), until the SPRT
says whether the new version is stronger (`--sprt`), with the statistics testers read after every pair
and `match.json` at the end. A match is a schedule of two bots run by `referee.run.runner` like any
tournament, so it is resumable: the same command with the same `--out` continues it.
"""

from __future__ import annotations

import argparse
import math
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.cli import UsageError, board_size, games_count, komi_value
from referee.commands.cluster_options import add_cluster_options, cluster_table
from referee.commands.common import (
    add_run_options,
    check_bots,
    execute,
    exit_status,
    run_guarded,
)
from referee.commands.controls_options import (
    CONTROLS_HELP,
    add_control_options,
    controls_summary,
    openings_keys,
)

if TYPE_CHECKING:
    from referee.run.botspec import BotSpec
    from referee.timing.latency import LatencySummary

HELP = "play a match between two bots (resumable, concurrent, with the SPRT); statistics and records"

# Here, not in referee.run.botspec (which parses these forms), so that `--help` does not import pydantic.
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

EPILOG = f"""\
{BOT_FORMS_HELP}
Time controls:
  --tc 60+0.5      Fischer: 60 s each, plus 0.5 s after every move (fractions allowed: 10+0.1)
  --tc 40/60       60 s for every 40 moves (unused time carries over)
  --tc 40/60+1     the same, plus 1 s after every move
  --movetime 2     at most 2 s for every move, no game clock
  (default: --tc {DEFAULT_TC})

Openings: games come in pairs, 2k-1 and 2k, with colours swapped. --openings-plies N starts each pair
from N seeded random legal placements (--openings-seed S, default 1: the same seed gives the same
openings; 0 plies: the empty board), --openings-file FILE from the next line of FILE (one move list per
line, reused in order); --opening MOVES starts every game from the same moves.

Concurrency: --concurrency N plays N games at once (default: the number of cores), each with its own bot
processes. Give a bot one core's worth of time: on a loaded machine lower N rather than lose games on time.

Regression testing (SPRT): --sprt elo0=0 elo1=5 alpha=0.05 beta=0.05 (any key may be left out; these
are the defaults) tests H1 "the --black bot is elo1 Elo stronger" against H0 "it is at most elo0
stronger" after every finished game pair, and stops as soon as the log-likelihood ratio reaches
ln((1-beta)/alpha) (H1 accepted) or ln(beta/(1-alpha)) (H0 accepted); the games then in progress are
stopped and not scored. --games is then the most games to play (default {DEFAULT_SPRT_GAMES}, even). The
model is fishtest's: a generalized SPRT with logistic Elo on game pairs (pentanomial; see
referee/stats/sprt.py). elo0 and elo1 are the hypotheses, not measurements: the measured difference is the Elo
estimate printed with it. Use openings, or deterministic bots replay the same pair over and over.

Statistics, after every game pair and at the end (cutechess/fastchess idiom):
  Score of new vs base: 120 - 95 - 35  [0.550] 250
  Elo: +34.9 ± 40.1 (95%), nElo: +41.2 ± 47.3
  LOS: 95.71 %, DrawRatio: 14.00 %, Ptnml(0-2): [10, 25, 40, 30, 20] from 125 game pairs
  LLR: 1.23 (-2.94, 2.94) [0, 5]

Output, in DIR (--out; default ./alternator-out/match-<time>/): run.db (the database: schedule and
every game, the truth), games.jsonl (one JSON GameRecord per line, schema referee/schema/game_record.json),
match.json (how it ended and the statistics, schema referee/schema/match_summary.json), standings.*, the
bots' stderr logs in logs/. Re-run the same command with the same --out to resume a stopped or killed
match; a different match is refused (the message names the setting that differs). Show a game with
`alternator replay DIR GAME_ID` (e.g. g0001).

Exit status: 0 when the match was played (every game, or until the SPRT's verdict, whichever verdict),
2 for a bad argument, a bot that cannot be started or an --out of another run, 1 when the match could
not be completed, 130 when stopped by Ctrl-C or SIGTERM (resume with the same command).

Examples:
  alternator match --black random --white greedy
  alternator match --black greedy --white "./mybot --fast" --tc 60+0.5 --games 4 --show-moves
  alternator match --black 'name=mine cmd="python3 bot.py" dir=bots/mine' --white bots/other.toml
  alternator match --black ./submitted-bot --white greedy --sandbox --memory-mb 512
  alternator match --black "name=new cmd=./mybot-new" --white "name=base cmd=./mybot-base" \\
      --tc 5+0.05 --openings-plies 4 --sprt elo0=0 elo1=5 --games 4000 --out runs/new-vs-base
"""

EPILOG += "\n" + CONTROLS_HELP  # the cluster paragraph is its options group's description


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("--black", required=True, metavar="BOT", help="the bot that plays Black in game 1")
    parser.add_argument("--white", required=True, metavar="BOT", help="the bot that plays White in game 1")
    clock = parser.add_mutually_exclusive_group()
    clock.add_argument(
        "--tc", metavar="TC", help=f"time control: BASE+INC or MOVES/BASE[+INC] in seconds (default {DEFAULT_TC})"
    )
    clock.add_argument("--movetime", metavar="S", type=float, help="a fixed limit of S seconds per move instead")
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
        help="folder for the database, games and logs (default ./alternator-out/match-<time>/); the same --out"
        " resumes the match",
    )
    parser.add_argument("--show-moves", action="store_true", help="print every move as it is played")
    add_run_options(parser)
    add_cluster_options(parser)
    add_control_options(parser)


def unique_names(first: BotSpec, second: BotSpec) -> tuple[BotSpec, BotSpec]:
    """Two bots with the same name (random against random) get `-1` and `-2` so records tell them apart."""
    if first.name != second.name:
        return first, second
    base = first.name[:62]
    return first.model_copy(update={"name": f"{base}-1"}), second.model_copy(update={"name": f"{base}-2"})


def config_data(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """The run config of this match (the same model a tournament file gives) and which option set each key."""
    from protocol.rules import IllegalMoveError, InvalidMoveError, Position
    from referee.commands.run_keys import bot_entry, every_bot_keys, shared_keys
    from referee.run.botspec import BotSpecError, check_bot_command, parse_bot_arg

    width, height = board_size(args.size)
    keys = shared_keys(args)
    sprt = keys["sprt"][1] if "sprt" in keys else None
    games: int = args.games if args.games is not None else DEFAULT_SPRT_GAMES if sprt else DEFAULT_GAMES
    if games < 1:
        raise UsageError(f"--games {games}: play at least one game")
    if sprt is not None and games % 2:
        raise UsageError(f"--games {games}: with --sprt give an even number; the test counts pairs of games")
    try:
        if Position.from_moves(args.opening.split(), width, height, args.komi).is_over():
            raise UsageError("--opening: it ends the game (two passes); leave moves for the bots")
    except (InvalidMoveError, IllegalMoveError) as error:
        raise UsageError(f"--opening: {error}") from None
    if args.openings_plies is not None and args.openings_file is not None:
        raise UsageError("--openings-plies and --openings-file: give one of them (random openings, or a file)")
    if args.opening and (args.openings_plies is not None or args.openings_file is not None):
        raise UsageError(
            "--opening starts every game from the same moves, --openings-plies/--openings-file each pair from"
            " its own: give one of them"
        )
    if args.openings_seed is not None and args.openings_plies is None:
        raise UsageError("--openings-seed: it seeds random openings; give --openings-plies N too")
    openings: dict[str, Any] = {}
    if args.openings_plies is not None:
        capacity = width * height - 1
        if not 0 <= args.openings_plies < capacity:
            raise UsageError(
                f"--openings-plies {args.openings_plies}: give from 0 to {capacity - 1} placements on a"
                f" {width}x{height} board (it needs room left to play)"
            )
        seed = args.openings_seed if args.openings_seed is not None else DEFAULT_OPENINGS_SEED
        openings = {"plies": args.openings_plies, "seed": int(seed) if seed.lstrip("-").isdigit() else seed}
    elif args.openings_file is not None:
        openings = {"file": str(Path.cwd() / args.openings_file)}
    elif args.opening:
        openings = {"moves": args.opening}
    openings.update(openings_keys(args))

    every_bot = every_bot_keys(args)
    bots = []
    for flag, text in (("--black", args.black), ("--white", args.white)):
        try:
            spec = parse_bot_arg(text).model_copy(update=every_bot)
            check_bot_command(spec)
        except BotSpecError as error:
            raise UsageError(f"{flag}: {error}") from None
        bots.append(spec)
    first, second = unique_names(bots[0], bots[1])
    data: dict[str, Any] = {
        "bots": [bot_entry(first), bot_entry(second)],
        "games": games,
        "size": f"{width}x{height}",
        "komi": args.komi,
        "openings": openings,
    }
    sources = {"bots": "--black/--white", "games": "--games", "size": "--size", "komi": "--komi"}
    if "openings" in data:
        sources["openings"] = "--opening/--openings-plies/--openings-file"
    for key, (flag, value) in keys.items():
        data[key], sources[key] = value, flag
    table = cluster_table(args, Path.cwd())
    if table is not None:
        data["cluster"], sources["cluster"] = table, "--cluster"
    return data, sources


def previous_latency(out_dir: Path) -> LatencySummary | None:
    """The latency figures of the last match.json, for a run that played nothing (they describe the games)."""
    import json

    from referee.stats.head_to_head import SUMMARY_FILE
    from referee.timing.latency import LatencySummary

    try:
        data = json.loads((out_dir / SUMMARY_FILE).read_text(encoding="utf-8")).get("latency")
        return None if data is None else LatencySummary.model_validate(data)
    except (OSError, ValueError, AttributeError):
        return None


def run(args: argparse.Namespace) -> int:
    return run_guarded("match", _run, args)


def _run(args: argparse.Namespace) -> int:
    from referee.outputs.display import RunDisplay, format_statistics, format_verdict
    from referee.record import GameSettings
    from referee.run.botspec import BotSpecError
    from referee.run.config import ConfigError, parse_config, resolve_plan
    from referee.stats.head_to_head import SUMMARY_VERSION, MatchSummary, head_to_head, write_summary
    from referee.timing.latency import latency_text

    data, sources = config_data(args)
    started = datetime.now().astimezone()
    cwd = Path.cwd()
    default_out = cwd / "alternator-out" / f"match-{started:%Y%m%d-%H%M%S}"
    if args.out is not None:
        data["out"] = str(cwd / args.out)
    try:
        config = parse_config(data, source="match", key_sources=sources)
        plan = resolve_plan(config, base_dir=cwd, source="match", default_out=default_out, kind="match")
    except (ConfigError, BotSpecError) as error:
        # resolve_plan names the config key; here the option is what the user wrote
        message = str(error).replace("match: openings.file: ", "--openings-file: ")
        raise UsageError(message) from None
    if plan.cluster is None:
        check_bots(plan)  # on a cluster each worker checks them (the preflight)
    display = RunDisplay(
        sys.stdout, show_moves=args.show_moves, report_every=args.report_every, quiet=args.quiet, title=plan.title
    )
    for line in controls_summary(plan):
        display.message(line)
    if plan.sprt is not None and not plan.openings:
        display.message(
            "note: every pair starts from the same position; deterministic bots then replay the same two games"
            " and the SPRT learns nothing new from them: use --openings-plies N or --openings-file FILE"
        )
    summary = execute(plan, display, events=args.events, rebuild_db=args.rebuild_db, verbose=args.verbose)
    # Imported once the games are played: the first game does not wait for the report's modules.
    from referee.outputs.report import write_report_or_warn
    from referee.run.rundir import counted_statistics

    if summary is not None and summary.statistics is not None:
        first, second = plan.bot_names
        # Read back through the one reader of the run: the figures the report and the live page show.
        statistics = head_to_head(first, second, counted_statistics(plan.out_dir) or summary.statistics)
        display.message("results:")
        for line in format_statistics(statistics):
            display.message(f"  {line}")
        if statistics.sprt is not None:
            display.message(format_verdict(statistics.sprt, first, second, statistics.games, ended=summary.ended))
            if statistics.sprt.verdict is not None and plan.sprt is not None and statistics.elo is not None:
                from referee.stats.sprt_plan import early_stop_lines

                low, high = statistics.elo_lower, statistics.elo_upper
                plain = (statistics.elo, -math.inf if low is None else low, math.inf if high is None else high)
                for line in early_stop_lines(plan.sprt, statistics.pentanomial, plain):
                    display.message(f"  {line}")
        cpu = {bot.name: bot.off_turn_cpu_s for bot in summary.standings.bots if bot.off_turn_cpu_s is not None}
        if cpu:
            shown = ", ".join(f"{name} {cpu[name]:.1f} s" for name in (first, second) if name in cpu)
            display.message(f"  CPU used during the opponent's turns (pondering, or taking its CPU): {shown}")
        if summary.latency is not None:
            display.message(latency_text(summary.latency))
        settings = GameSettings(
            width=plan.width,
            height=plan.height,
            komi=plan.komi,
            time_control=plan.time_control,
            margin_ms=plan.margin_ms,
        )
        match_json = MatchSummary(
            summary_version=SUMMARY_VERSION,
            first=first,
            second=second,
            settings=settings,
            openings=plan.openings_source or {},
            max_games=summary.games_total,
            ended=summary.ended,
            los=statistics.los,
            nelo=statistics.nelo,
            llr=statistics.llr,
            statistics=statistics,
            void_games=summary.void_games,
            host_wait_s=round(summary.host_wait_s, 1),
            off_turn_cpu_s=cpu,
            games_file="games.jsonl",
            latency=summary.latency if summary.played_now or summary.void_games else previous_latency(plan.out_dir),
            started_at=started,
            finished_at=datetime.now().astimezone(),
        )
        for line in summary.workers:
            display.message(f"worker {line}")
        try:
            display.message(f"summary: {write_summary(match_json, plan.out_dir)}")
        except OSError as error:
            print(f"alternator match: error: cannot write match.json: {error.strerror or error}", file=sys.stderr)
            return 1
        display.message(write_report_or_warn(plan.out_dir))
    return exit_status(summary, display, plan.out_dir, "match")
