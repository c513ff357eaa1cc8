"""`alternator sprt-calc`: plan an SPRT as fishtest's calculator does: pass probability and expected games.

For the bounds `--elo0`/`--elo1` (logistic Elo, as `alternator match --sprt` takes them), the error rates, the
draw ratio and the RMS opening bias, it prints, for each true Elo difference (`--elo`, or a range around the
bounds), the chance that the test passes (accepts H1) and how many games it takes on average
(`referee.stats.sprt_plan.plan`). `--simulate N` runs the real test N times on synthetic game pairs at each of those
Elo values and prints what happened beside it, to see the figures hold.
"""

from __future__ import annotations

import argparse
import sys

from referee.cli import UsageError

HELP = "plan an SPRT: pass probability and expected number of games (fishtest's calculator)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--elo0", type=float, default=0.0, help="H0: at most this many Elo stronger (default 0)")
    parser.add_argument("--elo1", type=float, default=5.0, help="H1: this many Elo stronger (default 5)")
    parser.add_argument("--alpha", type=float, default=0.05, help="chance of passing under H0 (default 0.05)")
    parser.add_argument("--beta", type=float, default=0.05, help="chance of failing under H1 (default 0.05)")
    parser.add_argument(
        "--draw-ratio", type=float, default=0.3, metavar="D", help="share of drawn games, 0 to <1 (default 0.3)"
    )
    parser.add_argument(
        "--rms-bias", type=float, default=0.0, metavar="ELO", help="RMS bias of the openings in Elo (default 0)"
    )
    parser.add_argument(
        "--elo",
        type=float,
        action="append",
        metavar="ELO",
        help="a true Elo difference to plan for (repeat for more; default: a range around the bounds)",
    )
    parser.add_argument(
        "--simulate", type=int, default=0, metavar="N", help="also run the real test N times at each Elo value"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the simulation (default 1)")


def run(args: argparse.Namespace) -> int:
    from referee.stats.sprt import SprtParameters
    from referee.stats.sprt_plan import plan, simulate

    try:
        parameters = SprtParameters(args.elo0, args.elo1, args.alpha, args.beta)
    except ValueError as error:
        raise UsageError(f"--elo0/--elo1/--alpha/--beta: {error}") from None
    if not 0 <= args.draw_ratio < 1:
        raise UsageError(f"--draw-ratio {args.draw_ratio:g}: give a share from 0 to below 1, e.g. 0.3")
    if args.simulate < 0:
        raise UsageError(f"--simulate {args.simulate}: give a number of runs, 0 or more")
    span = args.elo1 - args.elo0
    elos = args.elo or [args.elo0 - span / 2 + span * i / 4 for i in range(9)]
    out = sys.stdout
    out.write(
        f"SPRT elo0={args.elo0:g} elo1={args.elo1:g} alpha={args.alpha:g} beta={args.beta:g}; draw ratio"
        f" {args.draw_ratio:g}, RMS bias {args.rms_bias:g} Elo; logistic Elo, game pairs\n"
    )
    header = f"{'true Elo':>9}  {'pass':>7}  {'expected games':>14}"
    if args.simulate:
        header += f"  {'simulated pass':>14}  {'simulated games':>15}"
    out.write(header + "\n")
    for elo in elos:
        try:
            expected = plan(parameters, elo, args.draw_ratio, args.rms_bias)
        except ValueError as error:
            raise UsageError(f"--elo {elo:g}: {error}") from None
        line = f"{elo:>+9.2f}  {100 * expected.pass_probability:>6.1f}%  {expected.expected_games:>14.0f}"
        if args.simulate:
            result = simulate(parameters, elo, args.draw_ratio, args.simulate, seed=args.seed)
            line += f"  {100 * result.pass_rate:>13.1f}%  {result.mean_games:>15.0f}"
        out.write(line + "\n")
        out.flush()
    return 0
