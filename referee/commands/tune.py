"""`alternator tune CONFIG`: SPSA over a bot's declared options (referee.stats.spsa), resumable after `kill -9`.

The config (TOML) names the bot (any `--bot` form), the parameters (options it declares, int or float, with
their start, bounds, `c_end` and `r_end`), the schedule (iterations, game pairs per iteration, seed) and how
the games are played (time control or node/depth limits, board, openings plies, concurrency, a cluster).
Each iteration is a small match of the bot at theta + c*flip against itself at theta - c*flip, played by the
one runner in its own directory (`OUT/iterations/NNNN`), so concurrency, the cluster and resuming come with
it. After every iteration `OUT/tune.json` (the whole state) and `OUT/tune.svg` (each parameter's path) are
rewritten atomically and a line is printed. Run the same command again after a stop or a `kill -9`: it goes
on from the last finished iteration, and the iteration that was cut short resumes from its own games.

    bot = "alphabeta"
    iterations = 40
    pairs = 2
    time_control = "1+0.05"
    size = "6x6"
    openings_plies = 2
    [[params]]
    name = "depth"
    start = 1
    min = 1
    max = 10
    c_end = 1
    r_end = 0.25
"""

from __future__ import annotations

import argparse
import io
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.cli import UsageError

if TYPE_CHECKING:
    from referee.run.botspec import BotSpec
    from referee.stats.spsa import SpsaParameter, SpsaSettings, TuneState

HELP = "tune a bot's declared options by SPSA (fishtest/OpenBench style); resumable, concurrent, on a cluster"

STATE_FILE = "tune.json"
PLOT_FILE = "tune.svg"
RUN_KEYS = (
    "time_control",
    "movetime",
    "size",
    "komi",
    "concurrency",
    "nodes",
    "depth",
    "margin_ms",
    "cluster",
    "start_timeout",
    "max_host_wait",
)
SCHEDULE_KEYS = ("iterations", "pairs", "alpha", "gamma", "stability", "seed")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("\n\n", 1)[1] if __doc__ else None
    parser.add_argument("config", type=Path, help="the tuning config (TOML)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="output directory (default: the config's `out`)")


def _load(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such tuning config") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{path}: cannot read it as TOML: {error}") from None


def _check_params(params: list[SpsaParameter], declared: dict[str, Any], bot: str, source: str) -> list[SpsaParameter]:
    """The parameters with `integer` set from the bot's declarations; UsageError for one it does not declare."""
    checked = []
    for parameter in params:
        option = declared.get(parameter.name)
        if option is None:
            offered = ", ".join(o.describe() for o in declared.values()) or "none"
            raise UsageError(
                f"{source}: params: bot {bot!r} declares no option {parameter.name!r} (its options: {offered})"
            )
        if option.type not in ("int", "float"):
            raise UsageError(
                f"{source}: params: {parameter.name!r} is a {option.type} option; SPSA tunes int and float"
            )
        for bound in (parameter.min, parameter.max):
            try:
                option.check(round(bound) if option.type == "int" else bound)
            except ValueError as error:
                raise UsageError(f"{source}: params: {parameter.name}: the bound {bound:g}: {error}") from None
        checked.append(parameter.model_copy(update={"integer": option.type == "int"}))
    return checked


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from referee.commands.common import run_guarded
    from referee.run.botspec import BotSpecError, parse_bot_arg
    from referee.stats.spsa import SpsaParameter, SpsaSettings

    data = _load(args.config)
    source = str(args.config)
    base = args.config.resolve().parent
    known = {"bot", "params", "openings_plies", "out", *RUN_KEYS, *SCHEDULE_KEYS}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(f"{source}: unknown key(s) {', '.join(unknown)}; the keys are {', '.join(sorted(known))}")
    if not isinstance(data.get("bot"), str):
        raise UsageError(f'{source}: bot: give the bot to tune, e.g. bot = "alphabeta"')
    try:
        spec = parse_bot_arg(data["bot"], base_dir=base)
        settings = SpsaSettings(**{k: data[k] for k in SCHEDULE_KEYS if k in data})
        params = [SpsaParameter(**p) for p in data.get("params", [])]
    except BotSpecError as error:
        raise UsageError(f"{source}: bot: {error}") from None
    except (ValidationError, TypeError) as error:
        raise UsageError(f"{source}: {error}") from None
    if not params:
        raise UsageError(f"{source}: params: give at least one [[params]] table (name, start, min, max, c_end)")
    out = args.out if args.out is not None else base / str(data.get("out", "tune-out"))
    return run_guarded("tune", lambda _: _tune(data, spec, settings, params, out, source), args)


def _tune(
    data: dict[str, Any], spec: BotSpec, settings: SpsaSettings, params: list[SpsaParameter], out: Path, source: str
) -> int:
    import tempfile

    import trio

    from referee.outputs.files import write_text_atomic
    from referee.play.preflight import declared_options
    from referee.play.process import BotFault, BotStartError
    from referee.run.botspec import check_bot_command
    from referee.stats.spsa import TuneState, describe, svg_plot

    try:
        check_bot_command(spec)
        with tempfile.TemporaryDirectory(prefix="alternator-tune-") as logs:
            declared = trio.run(declared_options, spec, Path(logs), float(data.get("start_timeout", 10.0)))
    except (BotStartError, BotFault, TimeoutError, ValueError) as error:
        raise UsageError(f"bot {spec.name!r}: cannot read its options: {error}") from None
    params = _check_params(params, {o.name: o for o in declared}, spec.name, source)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / STATE_FILE
    if state_path.exists():
        state = TuneState.model_validate_json(state_path.read_text(encoding="utf-8"))
        changes = state.same_run(settings, params)
        if changes:
            raise UsageError(f"{out} holds another tuning run ({'; '.join(changes)}); give another --out")
        print(f"resuming {out}: {state.next_iteration} of {settings.iterations} iterations done", flush=True)
    else:
        state = TuneState.start(settings, params)
    while state.next_iteration < settings.iterations:
        k = state.next_iteration
        score, plus, minus = _iteration(data, spec, state, k, out)
        state.finish_iteration(k, plus, minus, score)
        write_text_atomic(state_path, state.model_dump_json(indent=2) + "\n")
        write_text_atomic(out / PLOT_FILE, svg_plot(state))
        print(describe(state, state.history[-1]), flush=True)
    final = ", ".join(f"{name}={value:.4g}" for name, value in state.theta.items())
    print(f"tuned after {settings.iterations} iterations: {final} (state {state_path}, plot {out / PLOT_FILE})")
    return 0


def _iteration(
    data: dict[str, Any], spec: BotSpec, state: TuneState, k: int, out: Path
) -> tuple[tuple[int, int, int], dict[str, float], dict[str, float]]:
    from referee.commands.common import check_bots, execute
    from referee.commands.controls_options import bot_control_entry
    from referee.outputs.display import RunDisplay
    from referee.run.config import ConfigError, parse_config, resolve_plan
    from referee.stats.spsa import option_values, perturbed

    plus, minus = perturbed(state.parameters, state.theta, state.settings, k)
    fixed = bot_control_entry(spec)

    def entry(name: str, values: dict[str, float]) -> dict[str, Any]:
        options = {**fixed.get("options", {}), **option_values(state.parameters, values)}
        return {
            "name": name,
            "command": spec.command,
            "env": spec.env,
            **({"dir": str(spec.dir)} if spec.dir else {}),
            **{key: value for key, value in fixed.items() if key != "options"},
            "options": options,
        }

    run_data: dict[str, Any] = {
        "bots": [entry("plus", plus), entry("minus", minus)],
        "games": 2 * state.settings.pairs,
        "openings": {"plies": int(data.get("openings_plies", 2)), "seed": f"spsa-{state.settings.seed}-{k}"},
        "out": str(out / "iterations" / f"{k:04d}"),
        **{key: data[key] for key in RUN_KEYS if key in data},
    }
    try:
        plan = resolve_plan(
            parse_config(run_data, source="tune"), base_dir=out, source="tune", default_out=out, kind="match"
        )
    except ConfigError as error:
        raise UsageError(str(error)) from None
    if k == 0 and plan.cluster is None:
        check_bots(plan)
    summary = execute(plan, RunDisplay(io.StringIO(), live=False), events=None)
    if summary is None or summary.statistics is None or summary.ended not in ("completed",):
        reason = "stopped" if summary is None else summary.error or summary.ended
        print(
            f"alternator tune: iteration {k + 1} did not finish ({reason}); run the same command to resume",
            file=sys.stderr,
        )
        raise SystemExit(130 if summary is None or summary.ended == "interrupted" else 1)
    stats = summary.statistics
    return (stats.wins, stats.draws, stats.losses), plus, minus
