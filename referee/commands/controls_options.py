"""The engine authors' options that `alternator match` and `alternator tournament` share.

Node and depth limits for every bot (`--nodes`, `--depth`; a bot's own `nodes=`/`depth=` overrides), the
start-up timeout (`--start-timeout`), adjudication (`--adjudicate solver`, `--resign`, `--draw`) and the order
of an openings file (`--openings-order`, `--openings-start`), turned into the keys of a run config; and a
`--bot`'s own time control, limits and option values as the keys of its `[[bots]]` entry.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from referee.cli import UsageError

if TYPE_CHECKING:
    from referee.run.botspec import BotSpec
    from referee.run.config import RunPlan

CONTROLS_HELP = """\
Engine authors' controls:
  per bot, after its command or as key=value fields:  tc=20+0.2 (its own time control: time odds)
      nodes=N depth=N (its own search limits)  option.NAME=VALUE (an option it declares in its hello)
      e.g. --black "alphabeta option.depth=5 tc=20+0.2"; in a bot file or config: tc, nodes, depth, [options]
  --nodes N / --depth N   every bot searches at most N nodes / N plies per move (sent in new_game; the sample
                          bots honour them, so two runs with the same openings play the same games)
  --start-timeout S       seconds a bot may take to start and answer hello (default 10)
  --max-host-wait D       on a busy host the run plays fewer games at once, then pauses; it stops only after
                          one pause of D (90s, 30m, 2h; default 30m)
  --adjudicate solver     end a game once the exact solver proves its result (few roots in play)
  --resign movecount=N score=S   a bot resigns when, for N moves of each side, its score is <= -S and the
                          opponent's >= S
  --draw movenumber=M movecount=N score=S   a draw when, from move M, both scores stay within S of 0 for N
                          moves of each side
  --openings-order sequential|random, --openings-start N   with --openings-file: shuffle it (by
                          --openings-seed) and/or start from opening N
"""


def add_control_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, metavar="N", help="every bot searches at most N nodes per move")
    parser.add_argument("--depth", type=int, metavar="N", help="every bot searches at most N plies per move")
    parser.add_argument(
        "--start-timeout", type=float, metavar="S", help="seconds a bot may take to start and answer hello (10)"
    )
    parser.add_argument(
        "--max-host-wait",
        metavar="D",
        help="how long a busy host may pause the run before it stops (90s, 30m, 2h; default 30m)",
    )
    parser.add_argument("--adjudicate", choices=["solver"], help="end a game once the exact solver proves its result")
    parser.add_argument(
        "--solver-roots", type=int, metavar="N", help="with --adjudicate solver: try it with at most N roots in play"
    )
    parser.add_argument("--resign", metavar="movecount=N,score=S", help="adjudicate a loss by both bots' scores")
    parser.add_argument("--draw", metavar="movenumber=M,movecount=N,score=S", help="adjudicate a draw by the scores")
    parser.add_argument("--openings-order", choices=["sequential", "random"], help="order of an openings file")
    parser.add_argument("--openings-start", type=int, metavar="N", help="start from opening N of the file (1: first)")


def control_keys(args: argparse.Namespace) -> dict[str, tuple[str, Any]]:
    """The run-config keys these options set, each with the option that set it (UsageError for bad values)."""
    from referee.play.adjudication import parse_draw, parse_resign

    keys: dict[str, tuple[str, Any]] = {}
    for key, flag in (("nodes", "--nodes"), ("depth", "--depth")):
        value = getattr(args, key)
        if value is not None:
            if value < 1:
                raise UsageError(f"{flag} {value}: give at least 1")
            keys[key] = (flag, value)
    if args.start_timeout is not None:
        if not args.start_timeout > 0:
            raise UsageError(f"--start-timeout {args.start_timeout:g}: give a positive number of seconds")
        keys["start_timeout"] = ("--start-timeout", args.start_timeout)
    if args.max_host_wait is not None:
        from referee.run.backoff import parse_duration

        try:
            keys["max_host_wait"] = ("--max-host-wait", parse_duration(args.max_host_wait))
        except ValueError as error:
            raise UsageError(f"--max-host-wait: {error}") from None
    adjudication: dict[str, Any] = {}
    flags = []
    try:
        if args.adjudicate == "solver":
            adjudication["solver"] = True
            flags.append("--adjudicate")
        if args.solver_roots is not None:
            if args.adjudicate != "solver":
                raise UsageError("--solver-roots: it is for --adjudicate solver; give that too")
            adjudication["solver_roots"] = args.solver_roots
        if args.resign is not None:
            adjudication.update(parse_resign(args.resign))
            flags.append("--resign")
        if args.draw is not None:
            adjudication.update(parse_draw(args.draw))
            flags.append("--draw")
    except ValueError as error:
        raise UsageError(str(error)) from None
    if adjudication:
        keys["adjudication"] = ("/".join(flags) or "--adjudicate", adjudication)
    return keys


def openings_keys(args: argparse.Namespace) -> dict[str, Any]:
    """`--openings-order` and `--openings-start` as keys of the `[openings]` table."""
    keys: dict[str, Any] = {}
    if args.openings_order is not None:
        keys["order"] = args.openings_order
    if args.openings_start is not None:
        if args.openings_start < 1:
            raise UsageError(f"--openings-start {args.openings_start}: give 1 or more (1: the first opening)")
        keys["start"] = args.openings_start
    return keys


def bot_control_entry(spec: BotSpec) -> dict[str, Any]:
    """A `--bot`'s own time control, limits and option values as keys of its `[[bots]]` entry."""
    from referee.timing.clock import describe_time_control

    return {
        **({"tc": describe_time_control(spec.time_control)} if spec.time_control is not None else {}),
        **({"nodes": spec.nodes} if spec.nodes is not None else {}),
        **({"depth": spec.depth} if spec.depth is not None else {}),
        **({"options": dict(spec.options)} if spec.options else {}),
    }


def controls_summary(plan: RunPlan) -> list[str]:
    """Lines for the console at the start of a run: each bot's own time control, limits and options, and
    adjudication, when any is set."""
    from referee.timing.clock import describe_time_control

    lines = []
    for spec in plan.bots:
        parts = []
        if spec.time_control is not None:
            parts.append(f"time control {describe_time_control(spec.time_control)} (time odds)")
        if spec.nodes is not None:
            parts.append(f"{spec.nodes} nodes a move")
        if spec.depth is not None:
            parts.append(f"depth {spec.depth}")
        if spec.options:
            parts.append("options " + " ".join(f"{k}={v}" for k, v in spec.options.items()))
        if parts:
            lines.append(f"{spec.name}: {', '.join(parts)}")
    rules = plan.adjudication
    if rules is not None:
        kinds = []
        if rules.solver:
            kinds.append(f"by the solver (at most {rules.solver_roots} roots in play, {rules.solver_nodes} nodes)")
        if rules.resign_moves is not None:
            kinds.append(f"resign after {rules.resign_moves} moves past {rules.resign_score:g}")
        if rules.draw_moves is not None:
            kinds.append(
                f"draw after {rules.draw_moves} moves within {rules.draw_score:g} from move {rules.draw_from_move}"
            )
        lines.append("adjudication: " + "; ".join(kinds))
    return lines
