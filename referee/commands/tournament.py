"""`alternator tournament`: a round robin, gauntlet, Swiss, knockout or adaptive run; resumable, live standings.

With no config file and no `--bot`, it runs the built-in demo (the sample bots, a short round robin).
Options override the config file's values. Re-running the same command resumes the tournament from
its output directory. Ctrl-C stops it cleanly: the standings so far are written, and the message says
how to resume.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.cli import UsageError, games_count, komi_value
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

if TYPE_CHECKING:  # imported in the functions that need them: `--help` must not load pydantic
    from referee.run.botspec import BotSpec
    from referee.run.config import RunPlan

HELP = (
    "play a tournament (round robin, gauntlet, pairings, Swiss, knockout or adaptive) between bots; resumable;"
    " the demo with no arguments"
)

EPILOG = """\
examples:
  alternator tournament                                   the demo: the sample bots, round robin
  alternator tournament examples/tournament.toml          a tournament from a config file
  alternator tournament --bot random --bot greedy --bot mine=./mybot --games 4 --tc 5+0.1
  alternator tournament --format gauntlet --bot mine=./mybot --bot random --bot alphabeta
  alternator tournament entries.toml --format swiss --rounds 5     paired by score, 5 rounds
  alternator tournament entries.toml --format knockout --seeding rating --games 4   a seeded bracket
  alternator tournament versions.toml --format adaptive --max-games 2000   rank many versions cheaply
Add a bot to the config (or a --bot) and run the same command: the latecomer's games are scheduled; remove
one and it retires (its games still count). A bot that cannot start is suspended and forfeits its games.
  alternator tournament entries.toml --sandbox --memory-mb 512   bots from strangers: no network,
                                                          read-only files but /tmp, 512 MiB each
  alternator tournament examples/tournament.toml --cluster tcp://10.0.0.5:8786   on a Dask cluster
Re-run the same command to resume a stopped or killed tournament: only missing games are played.
"""  # the cluster paragraph is its options group's description


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG + "\n" + CONTROLS_HELP
    parser.add_argument("config", nargs="?", type=Path, help="a TOML config file (see examples/tournament.toml)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="output directory (database, games, standings)")
    parser.add_argument(
        "--bot",
        action="append",
        metavar="NAME=CMD",
        help="a bot (repeat for each): NAME=COMMAND, a sample bot name, or any form of `alternator match`;"
        " replaces the config file's bots",
    )
    parser.add_argument(
        "--format",
        choices=["round-robin", "gauntlet", "pairings", "swiss", "knockout", "adaptive"],
        help="how bots are paired (default: round-robin; pairings: the config's [[pairings]] list)",
    )
    parser.add_argument("--seeds", type=int, metavar="N", help="gauntlet: the first N bots play every other bot")
    parser.add_argument("--rounds", type=int, metavar="N", help="swiss: rounds (default: log2 of the field)")
    parser.add_argument(
        "--seeding",
        choices=["rating", "order", "random"],
        help="knockout: seeds by the bots' `rating` in the config, their order (the default), or shuffled",
    )
    parser.add_argument("--format-seed", metavar="SEED", help="knockout: seed of --seeding random")
    parser.add_argument(
        "--tiebreak-pairs", type=int, metavar="N", help="knockout: tie-break game pairs before the higher seed advances"
    )
    parser.add_argument(
        "--max-games", type=int, metavar="N", help="adaptive: the budget of games (default: a round robin's)"
    )
    parser.add_argument(
        "--confidence", type=float, metavar="P", help="adaptive: how sure each neighbouring order must be (0.95)"
    )
    parser.add_argument("--games", type=games_count, metavar="N", help="games per pairing (default: 2; the demo: 4)")
    parser.add_argument(
        "--tc",
        metavar="BASE+INC",
        help="time control: BASE+INC in seconds like 10+0.1 (the default), or MOVES/BASE[+INC] like 40/60 or"
        " 40/60+1 (60 s for every 40 moves, plus 1 s after each)",
    )
    parser.add_argument("--movetime", type=float, metavar="SECONDS", help="a fixed time per move instead of a clock")
    parser.add_argument("--size", metavar="N|WxH", help="board size: 8 for 8x8, or WxH like 9x7 (default: 8x8)")
    parser.add_argument("--komi", type=komi_value, help="points added to White's score (default: 3.5)")
    parser.add_argument("--openings-plies", type=int, metavar="N", help="random legal placements to start each pair")
    parser.add_argument("--openings-seed", metavar="SEED", help="seed of the random openings")
    parser.add_argument("--openings-file", type=Path, metavar="FILE", help="one opening (a move list) per line")
    parser.add_argument(
        "--sprt",
        nargs="*",
        metavar="KEY=VALUE",
        help="two bots only: stop as soon as the SPRT decides whether the first bot is stronger (elo0=0 elo1=5"
        " alpha=0.05 beta=0.05; see alternator match --help)",
    )
    add_run_options(parser)
    add_control_options(parser)
    add_cluster_options(parser)


def parse_bot_option(text: str) -> BotSpec:
    """`--bot NAME=CMD` (a name for any bot form), or any form `parse_bot_arg` accepts."""
    from referee.run.botspec import parse_bot_arg

    return parse_bot_arg(text)


def build_plan(args: argparse.Namespace) -> RunPlan:
    """The RunPlan from the config file (or the demo) and the options; UsageError on problems."""
    from referee.commands.run_keys import bot_entry, every_bot_keys, shared_keys
    from referee.run.botspec import BotSpecError
    from referee.run.config import ConfigError, demo_config_data, load_config, parse_config, resolve_plan

    cwd = Path.cwd()
    data: dict[str, Any]
    if args.config is not None:
        try:
            data = load_config(args.config).model_dump(exclude_unset=True, mode="json")
        except ConfigError as error:
            raise UsageError(str(error)) from None
        source = str(args.config)
        base_dir = args.config.resolve().parent
        default_out = cwd / "alternator-out" / args.config.stem
    else:
        data = demo_config_data() if not args.bot else {}
        source = "demo" if not args.bot else "command line"
        base_dir = cwd
        default_out = cwd / "alternator-out" / ("demo" if not args.bot else "tournament")

    overrides: dict[str, tuple[str, Any]] = {}
    if args.bot:
        try:
            specs = [parse_bot_option(text) for text in args.bot]
        except BotSpecError as error:
            raise UsageError(f"--bot: {error}") from None
        # Relative paths on the command line are the current directory's.
        overrides["bots"] = ("--bot", [bot_entry(spec, default_dir=cwd) for spec in specs])
    simple = {
        "format": ("--format", args.format),
        "seeds": ("--seeds", args.seeds),
        "rounds": ("--rounds", args.rounds),
        "seeding": ("--seeding", args.seeding),
        "format_seed": ("--format-seed", _seed(args.format_seed)),
        "tiebreak_pairs": ("--tiebreak-pairs", args.tiebreak_pairs),
        "max_games": ("--max-games", args.max_games),
        "confidence": ("--confidence", args.confidence),
        "games": ("--games", args.games),
        "size": ("--size", args.size),
        "komi": ("--komi", args.komi),
        "out": ("--out", str(cwd / args.out) if args.out is not None else None),
    }
    overrides.update({key: value for key, value in simple.items() if value[1] is not None})
    overrides.update(shared_keys(args))
    if args.tc is not None:
        data.pop("movetime", None)  # an option overrides whichever the file used
    if args.movetime is not None:
        data.pop("time_control", None)
    openings = dict(data.get("openings", {}))
    for key, flag, value in (
        ("plies", "--openings-plies", args.openings_plies),
        ("seed", "--openings-seed", _seed(args.openings_seed)),
        ("file", "--openings-file", str(cwd / args.openings_file) if args.openings_file else None),
    ):
        if value is not None:
            openings[key] = value
            overrides["openings"] = (flag, openings)
    extra = openings_keys(args)
    if extra:
        openings.update(extra)
        overrides["openings"] = ("--openings-order/--openings-start", openings)
    if args.openings_file is not None:
        openings.pop("plies", None)
    table = cluster_table(args, cwd, data.get("cluster"))
    if table is not None and table != data.get("cluster"):
        overrides["cluster"] = ("--cluster", table)
    for key, (_, value) in overrides.items():
        data[key] = value
    if "bots" not in data:
        raise UsageError("no bots: give a config file, or --bot for each bot (at least two), or nothing for the demo")
    # --sandbox, --memory-mb and the containment options are for every bot: they override the bots' own settings.
    for key, value in every_bot_keys(args).items():
        if isinstance(data["bots"], list):
            data[key] = value
            data["bots"] = [{**bot, key: value} if isinstance(bot, dict) else bot for bot in data["bots"]]
    try:
        config = parse_config(data, source=source, key_sources={k: flag for k, (flag, _) in overrides.items()})
        plan = resolve_plan(config, base_dir=base_dir, source=source, default_out=default_out)
    except (ConfigError, BotSpecError) as error:
        raise UsageError(str(error)) from None
    return plan


def _seed(text: str | None) -> int | str | None:
    # As a TOML file would give it: `seed = 3` is the number 3, and must fingerprint the same.
    return int(text) if text is not None and text.lstrip("-").isdigit() else text


def run(args: argparse.Namespace) -> int:
    return run_guarded("tournament", _run, args)


def _run(args: argparse.Namespace) -> int:
    from referee.outputs.display import RunDisplay, format_statistics, format_verdict
    from referee.stats.head_to_head import head_to_head
    from referee.stats.standings import to_text
    from referee.timing.latency import latency_text

    plan = build_plan(args)
    suspended: dict[str, str] = {}
    if plan.cluster is None:  # on a cluster each worker checks them (the preflight)
        suspended = check_bots(plan, suspend=plan.sprt is None and len(plan.bots) > 2)
    display = RunDisplay(sys.stderr, report_every=args.report_every, quiet=args.quiet, title=plan.title)
    for line in controls_summary(plan):
        display.message(line)
    summary = execute(
        plan, display, events=args.events, rebuild_db=args.rebuild_db, suspended=suspended, verbose=args.verbose
    )
    # Imported once the games are played: the first game does not wait for the report's modules.
    from referee.outputs.report import write_report_or_warn
    from referee.run.rundir import counted_statistics

    if summary is not None:
        table = to_text(summary.standings)
        results_out = sys.stderr if args.events == "-" else sys.stdout
        results_out.write(table if table.endswith("\n") else table + "\n")
        if summary.files:
            results_out.write(f"files: {', '.join(str(p) for p in summary.files)}\n")
        if summary.statistics is not None:  # two bots: what testers read, as a match prints it
            first, second = plan.bot_names
            # Read back through the one reader of the run: the figures the report and the live page show.
            statistics = head_to_head(first, second, counted_statistics(plan.out_dir) or summary.statistics)
            lines = format_statistics(statistics)
            if statistics.sprt is not None:
                lines.append(format_verdict(statistics.sprt, first, second, statistics.games, ended=summary.ended))
                if statistics.sprt.verdict is not None and plan.sprt is not None and statistics.elo is not None:
                    from referee.stats.sprt_plan import early_stop_lines

                    low, high = statistics.elo_lower, statistics.elo_upper
                    plain = (statistics.elo, -math.inf if low is None else low, math.inf if high is None else high)
                    lines.extend(f"  {line}" for line in early_stop_lines(plan.sprt, statistics.pentanomial, plain))
            results_out.write("".join(f"{line}\n" for line in lines))
        if summary.latency is not None:
            results_out.write(latency_text(summary.latency) + "\n")
        if summary.workers:
            results_out.write("workers:\n" + "".join(f"  {line}\n" for line in summary.workers))
        results_out.write(write_report_or_warn(plan.out_dir) + "\n")
        results_out.flush()
        if summary.ended in ("completed", "sprt"):
            done = "decided by the SPRT" if summary.ended == "sprt" else "complete"
            display.message(
                f"tournament {done}: {summary.games_done} games ({summary.played_now} played now) in"
                f" {summary.elapsed_s:.0f} s; results in {plan.out_dir}"
            )
    return exit_status(summary, display, plan.out_dir, "tournament")
