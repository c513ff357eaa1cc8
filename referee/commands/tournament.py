"""`alternator tournament`: play a round robin or a gauntlet, resumable, with live progress and standings.

With no config file and no `--bot`, it runs the built-in demo (the sample bots, a short round robin).
Options override the config file's values. Re-running the same command resumes the tournament from
its output directory. Ctrl-C stops it cleanly: the standings so far are written, and the message says
how to resume.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from referee.cli import UsageError, games_count, komi_value
from referee.commands.cluster_options import CLUSTER_HELP, add_cluster_options, cluster_table
from referee.commands.match import add_sandbox_options, check_containment, check_memory_mb
from referee.terminal import printable

if TYPE_CHECKING:  # imported in the functions that need them: `--help` must not load pydantic
    from referee.botspec import BotSpec
    from referee.cluster import Cluster
    from referee.config import TournamentPlan
    from referee.events import Event

HELP = "play a tournament (round robin or gauntlet) between bots; resumable; the demo with no arguments"

EPILOG = (
    """\
examples:
  alternator tournament                                   the demo: the sample bots, round robin
  alternator tournament examples/tournament.toml          a tournament from a config file
  alternator tournament --bot random --bot greedy --bot mine=./mybot --games 4 --tc 5+0.1
  alternator tournament --format gauntlet --bot mine=./mybot --bot random --bot alphabeta
  alternator tournament entries.toml --sandbox --memory-mb 512   bots from strangers: no network,
                                                          read-only files but /tmp, 512 MiB each
  alternator tournament examples/tournament.toml --cluster tcp://10.0.0.5:8786   on a Dask cluster
Re-run the same command to resume a stopped or killed tournament: only missing games are played.

"""
    + CLUSTER_HELP
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("config", nargs="?", type=Path, help="a TOML config file (see examples/tournament.toml)")
    parser.add_argument("--concurrency", "-j", type=int, metavar="N", help="games at once (default: number of cores)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="output directory (database, games, standings)")
    parser.add_argument(
        "--events", metavar="FILE", help="write one JSON line per event to FILE ('-': stdout); see referee/schema"
    )
    parser.add_argument(
        "--bot",
        action="append",
        metavar="NAME=CMD",
        help="a bot (repeat for each): NAME=COMMAND, a sample bot name, or any form of `alternator match`;"
        " replaces the config file's bots",
    )
    parser.add_argument("--format", choices=["round-robin", "gauntlet"], help="pairings (default: round-robin)")
    parser.add_argument("--games", type=games_count, metavar="N", help="games per pairing (default: 2; the demo: 4)")
    parser.add_argument(
        "--tc",
        metavar="BASE+INC",
        help="time control: BASE+INC in seconds like 10+0.1 (the default), or MOVES/BASE like 40/60",
    )
    parser.add_argument("--movetime", type=float, metavar="SECONDS", help="a fixed time per move instead of a clock")
    parser.add_argument("--size", metavar="N|WxH", help="board size: 8 for 8x8, or WxH like 9x7 (default: 8x8)")
    parser.add_argument("--komi", type=komi_value, help="points added to White's score (default: 3.5)")
    parser.add_argument("--margin-ms", type=int, metavar="MS", help="grace before a bot loses on time")
    parser.add_argument("--openings-plies", type=int, metavar="N", help="random legal placements to start each pair")
    parser.add_argument("--openings-seed", metavar="SEED", help="seed of the random openings")
    parser.add_argument("--openings-file", type=Path, metavar="FILE", help="one opening (a move list) per line")
    add_sandbox_options(parser)
    add_cluster_options(parser)


def parse_bot_option(text: str) -> BotSpec:
    """`--bot NAME=CMD` (a name for any bot form), or any form `parse_bot_arg` accepts."""
    from referee.botspec import parse_bot_arg

    return parse_bot_arg(text)


def build_plan(args: argparse.Namespace) -> TournamentPlan:
    """The TournamentPlan from the config file (or the demo) and the options; UsageError on problems."""
    from referee.botspec import DEFAULT_MAX_PROCESSES, BotSpecError
    from referee.config import ConfigError, demo_config_data, load_config, parse_config, resolve_plan

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
        bots = [
            {
                "name": s.name,
                "command": s.command,
                "env": s.env,
                "dir": str(s.dir or cwd),  # relative paths on the command line are the current directory's
                **({"sandbox": True} if s.sandbox else {}),
                **({"memory_mb": s.memory_mb} if s.memory_mb is not None else {}),
                **({"max_processes": s.max_processes} if s.max_processes != DEFAULT_MAX_PROCESSES else {}),
                **({"ponder": False} if not s.ponder else {}),
                **({"cpu_limit_s": s.cpu_limit_s} if s.cpu_limit_s is not None else {}),
            }
            for s in specs
        ]
        overrides["bots"] = ("--bot", bots)
    simple = {
        "format": ("--format", args.format),
        "games": ("--games", args.games),
        "time_control": ("--tc", args.tc),
        "movetime": ("--movetime", args.movetime),
        "size": ("--size", args.size),
        "komi": ("--komi", args.komi),
        "margin_ms": ("--margin-ms", args.margin_ms),
        "concurrency": ("--concurrency", args.concurrency),
        "out": ("--out", str(cwd / args.out) if args.out is not None else None),
    }
    overrides.update({key: value for key, value in simple.items() if value[1] is not None})
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
    if args.openings_file is not None:
        openings.pop("plies", None)
    table = cluster_table(args, cwd, data.get("cluster"))
    if table is not None and table != data.get("cluster"):
        overrides["cluster"] = ("--cluster", table)
    for key, (_, value) in overrides.items():
        data[key] = value
    if "bots" not in data:
        raise UsageError("no bots: give a config file, or --bot for each bot (at least two), or nothing for the demo")
    # --sandbox and --memory-mb are for every bot: they override the bots' own settings too.
    check_memory_mb(args.memory_mb)
    check_containment(args)
    if args.cpu_affinity:
        data["cpu_affinity"] = True
    for key, value in (
        ("sandbox", True if args.sandbox else None),
        ("memory_mb", args.memory_mb),
        ("max_processes", args.max_processes),
        ("cpu_limit_s", args.cpu_limit),
        ("ponder", False if args.no_ponder else None),
    ):
        if value is not None and isinstance(data["bots"], list):
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


def _check_bots(plan: TournamentPlan) -> None:
    from referee.botspec import BotSpecError, check_bot_command

    for spec in plan.bots:
        try:
            check_bot_command(spec)
        except BotSpecError as error:
            raise UsageError(str(error)) from None


async def _open_cluster(plan: TournamentPlan, display: TournamentDisplay) -> Cluster:
    """Connect to the plan's cluster and check that every worker can start every bot (ClusterError)."""
    from referee.cluster import Cluster

    assert plan.cluster is not None
    display.message(f"cluster: connecting to the Dask scheduler at {plan.cluster.address} ...")
    cluster = await Cluster.connect(plan.cluster, on_message=display.message)
    try:
        await cluster.preflight(plan.bots)
    except BaseException:
        await cluster.close()
        raise
    workers = cluster.healthy()
    display.message(
        f"cluster: {len(workers)} worker(s), {cluster.slots} game(s) at once; every worker started every bot"
    )
    return cluster


def _duration(seconds: float) -> str:
    """Wall time as people read it: 0:42, 12:05, 1:02:09."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class TournamentDisplay:
    """Progress on stderr: games done of total, elapsed and remaining time, the leader.

    Every finished game is a line, as cutechess prints them; on a terminal a status line below them is
    redrawn in place, so elapsed time, the estimate and the leader stay in view.
    """

    def __init__(self, out: TextIO, *, live: bool | None = None) -> None:
        self.out = out
        self.live = out.isatty() if live is None else live
        self._start = time.monotonic()
        self._done_at_start = 0
        self._done = 0
        self._total = 0
        self._leader = ""
        self._playing: dict[int, str] = {}
        self._drawn = False

    def __call__(self, event: Event) -> None:
        from referee.clock import describe_time_control
        from referee.display import format_number

        if event.type == "tournament_started":
            self._start = time.monotonic()
            self._done_at_start = self._done = event.games_done
            self._total = event.games_total
            size = f"{event.width}x{event.height}"
            resumed = f", {event.games_done} already played" if event.games_done else ""
            self._line(
                f"tournament: {', '.join(event.bots)}; {event.format}, {event.games_total} games{resumed};"
                f" {size} board, komi {format_number(event.komi)}, time control"
                f" {describe_time_control(event.time_control)}; {event.concurrency} at once; output in"
                f" {event.out_dir}"
            )
        elif event.type == "game_started":
            self._playing[event.number] = f"{event.black}-{event.white}"
            self._status()
        elif event.type == "game_finished":
            self._playing.pop(event.number, None)
            self._done = event.games_done
            text = f"game {event.number} {event.black} (black) - {event.white} (white): {event.result} {event.reason}"
            if not event.scored:
                self._line(f"{text} [not scored: it is played again]")
            else:
                self._line(f"[{event.games_done}/{event.games_total}] {text}")
            self._status()
        elif event.type == "standings_updated" and event.standings:
            top = event.standings[0]
            self._leader = f"{top.name} {format_number(top.points)}/{top.games}"
            self._status()
        elif event.type == "tournament_finished":
            self._total = 0  # no more status lines
            self._clear()

    def message(self, text: str) -> None:
        self._line(text)

    def tick(self) -> None:
        """Redraw the status line (called every second, so elapsed time moves during long games)."""
        self._status()

    def _status(self) -> None:
        if not self.live or not self._total:
            return
        elapsed = time.monotonic() - self._start
        played = self._done - self._done_at_start
        left = self._total - self._done
        eta = f"~{_duration(elapsed / played * left)} left" if played else "estimating time left"
        leader = f", leader {self._leader}" if self._leader else ""
        text = f"{self._done}/{self._total} games, {_duration(elapsed)} elapsed, {eta}{leader}"
        if self._playing:
            text += f"; playing {', '.join(self._playing.values())}"
        # Wider than the terminal, the line would wrap and \r could not redraw it in place.
        width = shutil.get_terminal_size().columns - 1
        self.out.write(f"\r\x1b[K{printable(text)[:width]}")
        self.out.flush()
        self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self._drawn = False

    def _line(self, text: str) -> None:
        self._clear()
        self.out.write(printable(text) + "\n")
        self.out.flush()
        self._status()


class _EventWriter:
    """`--events`: one JSON line per event, flushed at once so a follower sees it."""

    def __init__(self, target: str) -> None:
        self.stream: TextIO
        if target == "-":
            self.stream, self._owned = sys.stdout, False
        else:
            try:
                self.stream, self._owned = open(target, "w", encoding="utf-8"), True  # noqa: SIM115
            except OSError as error:
                raise UsageError(
                    f"--events: cannot write {target!r}: {error.strerror}; give a file in an existing folder, or -"
                    " for standard output"
                ) from None

    def __call__(self, event: Event) -> None:
        from referee.events import encode_event

        self.stream.write(encode_event(event))
        self.stream.flush()

    def close(self) -> None:
        if self._owned:
            self.stream.close()


def run(args: argparse.Namespace) -> int:
    import trio

    from referee.cluster import ClusterError, ClusterLostError
    from referee.exceptions import find_exception
    from referee.process import BotStartError
    from referee.standings import to_text
    from referee.store import StoreError
    from referee.tournament import Tournament, TournamentSummary

    plan = build_plan(args)
    if plan.cluster is None:
        _check_bots(plan)  # on a cluster each worker checks them (the preflight)
    from referee.containment import use_cpu_affinity

    use_cpu_affinity(plan.concurrency if plan.cpu_affinity else None)
    try:
        plan.out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(
            f"cannot create the output directory {plan.out_dir}: {error.strerror}; choose another with --out DIR"
        ) from None
    display = TournamentDisplay(sys.stderr)
    writer = _EventWriter(args.events) if args.events else None

    def on_event(event: Event) -> None:
        display(event)
        if writer is not None:
            writer(event)

    tournament = Tournament(plan, on_event=on_event)

    async def main() -> TournamentSummary:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            if plan.cluster is not None:
                tournament.cluster = await _open_cluster(plan, display)
            try:
                return await play(signals)
            finally:
                if tournament.cluster is not None:
                    await tournament.cluster.close()

    async def play(signals: AsyncIterator[int]) -> TournamentSummary:
        async with trio.open_nursery() as nursery:

            async def tick() -> None:
                while True:
                    await trio.sleep(1)
                    display.tick()

            async def watch() -> None:
                async for _ in signals:
                    display.message("stopping: abandoning the games in progress and stopping the bots ...")
                    tournament.stop()
                    return

            nursery.start_soon(watch)
            if display.live:
                nursery.start_soon(tick)
            summary = await tournament.run()
            nursery.cancel_scope.cancel()
        return summary

    try:
        summary = trio.run(main)
    except BaseException as error:
        lost = find_exception(error, ClusterLostError)
        if lost is not None:
            display.message(f"stopped: {lost}")
            display.message(f"the standings so far are in {plan.out_dir}")
            return 1
        found = find_exception(error, (BotStartError, StoreError, ClusterError))
        if found is not None:
            raise UsageError(str(found)) from None
        raise
    finally:
        if writer is not None:
            writer.close()

    table = to_text(summary.standings)
    results_out = sys.stderr if args.events == "-" else sys.stdout
    results_out.write(table if table.endswith("\n") else table + "\n")
    results_out.write(f"files: {', '.join(str(p) for p in summary.files)}\n")
    if tournament.cluster is not None:
        results_out.write("workers:\n" + "".join(f"  {line}\n" for line in tournament.cluster.summary_lines()))
    results_out.flush()
    if summary.void_games:
        display.message(
            f"{summary.void_games} void game(s) (the referee's own failure; see the bots' logs):"
            " they are never scored and are played again"
        )
    if summary.interrupted:
        missing = summary.games_total - summary.games_done
        display.message(
            f"stopped: {summary.games_done} of {summary.games_total} games played; the games in progress were"
            f" abandoned (not scored). To resume, run the same command again: it plays only the {missing}"
            " missing games."
        )
        return 130
    if summary.games_done < summary.games_total:
        display.message(
            f"{summary.games_total - summary.games_done} games are still missing (void games played too often);"
            " run the same command again to play them"
        )
        return 1
    display.message(
        f"tournament complete: {summary.games_done} games ({summary.played_now} played now) in"
        f" {_duration(summary.elapsed_s)}; results in {plan.out_dir}"
    )
    if summary.played_now == 0 and summary.void_games == 0:
        display.message(
            f"nothing was left to play: {plan.out_dir} already holds every game of this tournament;"
            " to play it again, delete that directory or give another --out"
        )
    return 0
