"""What `alternator match` and `alternator tournament` share: the options of a run and the driver that runs it.

Both commands build a `RunPlan` (see referee.run.config) and hand it to `execute`, which runs it with the one
runner (referee.run.runner) under SIGINT/SIGTERM handling, shows the progress, writes the event stream, and
turns the outcome into an exit status: 0 done (every game, or the SPRT's verdict), 1 the run could not be
completed, 2 a usage error (bad option, bot that cannot start, output directory of another run), 130
stopped by a signal (run the same command to resume).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from referee.cli import UsageError

if TYPE_CHECKING:  # imported in the functions that need them: `--help` must not load pydantic
    from collections.abc import AsyncIterator

    from referee.cluster.dask import Cluster
    from referee.outputs.display import RunDisplay
    from referee.outputs.events import Event
    from referee.record import PlayedMove
    from referee.run.config import RunPlan
    from referee.run.runner import RunSummary
    from referee.run.schedule import ScheduledGame

SPRT_KEYS = ("elo0", "elo1", "alpha", "beta")


async def cancel_on_signal(scope: Any, stopped: list[int] | None = None) -> None:
    """Cancel `scope` at the first SIGINT or SIGTERM, noting it in `stopped` (if given). A command that serves
    pages stops so, by a cancellation its server unwinds from like any other: a KeyboardInterrupt raised into
    hypercorn's tasks at whichever checkpoint they were at could leave its task group's cancel scopes out of
    order (a traceback at every few Ctrl-C of `alternator serve` with event streams open)."""
    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if stopped is not None:
                stopped.append(signum)
            scope.cancel()
            return


class RunFailed(Exception):
    """The run stopped for a reason the message gives (the cluster was lost); exit status 1."""


class StopRequested(BaseException):
    """A SIGINT or SIGTERM that came while the runner was not there to handle it: before it started
    (`finishing` False: nothing was recorded) or after it ended (`finishing` True: the games are stored)."""

    def __init__(self, signal_name: str, finishing: bool) -> None:
        super().__init__(signal_name)
        self.finishing = finishing

    def __str__(self) -> str:
        name = self.args[0]
        if self.finishing:
            return f"{name}: stopped while writing the results; the games are stored (run the same command again)"
        return f"{name}: stopped while starting; nothing was recorded"


_finishing = False


def stop_on_signals() -> None:
    """From now until the runner takes over, SIGINT and SIGTERM end the command cleanly: no traceback, no
    default kill (which would leave nothing written). Call it first thing in a command's `run`."""

    def handler(number: int, frame: FrameType | None) -> None:
        raise StopRequested(signal.Signals(number).name, _finishing)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def run_guarded(command: str, body: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a match or tournament command's `body` under `stop_on_signals`: a run that failed is one line and
    status 1, a signal outside the runner one line and status 130."""
    stop_on_signals()
    try:
        return body(args)
    except RunFailed as failure:
        print(f"alternator {command}: {failure}", file=sys.stderr)
        return 1
    except StopRequested as stop:
        print(f"alternator {command}: {stop}", file=sys.stderr)
        return 130


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options every run has: concurrency, output, events, safety margin, sandbox, memory and containment."""
    parser.add_argument(
        "--concurrency", "-j", type=int, metavar="N", help="games at once (default: the number of cores)"
    )
    parser.add_argument(
        "--events", metavar="FILE", help="write one JSON line per event to FILE ('-': stdout); see referee/schema"
    )
    parser.add_argument(
        "--title",
        metavar="TEXT",
        help="the event's title, shown by the terminal, the standings, the report and the live page (config: title)",
    )
    parser.add_argument(
        "--anchor",
        metavar="NAME=RATING",
        help="fix bot NAME's rating at RATING and measure the others from it, in the standings, the report and the"
        " live page (default: relative to the field mean; config: anchor)",
    )
    parser.add_argument(
        "--report-every",
        type=pair_count,
        metavar="N",
        help="two bots: print the statistics every N game pairs (default: about 50 times over the run, and every"
        " pair in a run of up to 100 games); the final figures are always printed",
    )
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print only the start, problems (forfeits, void games) and the final results",
    )
    parser.add_argument(
        "--rebuild-db",
        action="store_true",
        help="rebuild the output directory's database from its games.jsonl (when the database was lost or damaged),"
        " then go on as a resume",
    )
    parser.add_argument(
        "--margin-ms", type=int, metavar="MS", help="grace added to every deadline before a bot loses on time"
    )
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
        help="limit every bot's memory to N MiB (resident memory, no swap, where the host has a memory cgroup;"
        " else its address space); a bot that needs more loses",
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
        action=argparse.BooleanOptionalAction,
        default=None,
        help="give each concurrent game its own cores; both bots of a game run on them (default: on when two or"
        " more games run at once and there are as many cores)",
    )


def pair_count(text: str) -> int:
    """`--report-every N`: a whole number of game pairs, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of game pairs") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: give 1 or more game pairs (1: after every pair)")
    return value


def containment_options(args: argparse.Namespace) -> dict[str, Any]:
    """The containment options given, as the per-bot keys of a run config (UsageError for bad values).

    Like --sandbox and --memory-mb they are for every bot: they override the bots' own settings.
    """
    if args.max_processes is not None and args.max_processes < 1:
        raise UsageError(f"--max-processes {args.max_processes}: give at least 1 (a bot is a process)")
    if args.cpu_limit is not None and not args.cpu_limit > 0:
        raise UsageError(f"--cpu-limit {args.cpu_limit:g}: give a positive number of CPU seconds, e.g. --cpu-limit 60")
    keys = {"max_processes": args.max_processes, "cpu_limit_s": args.cpu_limit}
    if args.no_ponder:
        keys["ponder"] = False
    return {key: value for key, value in keys.items() if value is not None}


def check_memory_mb(value: int | None) -> None:
    if value is not None and value < 16:
        raise UsageError(f"--memory-mb {value}: give at least 16 (MiB); a bot needs some memory to start")


def parse_sprt(words: list[str]) -> dict[str, float]:
    """`--sprt elo0=0 elo1=5 alpha=0.05 beta=0.05` (spaces or commas between; keys left out take their
    defaults) into the `[sprt]` table of a config; UsageError naming the bad word otherwise."""
    from referee.stats.sprt import SprtParameters

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
        SprtParameters(**values)
    except ValueError as error:
        raise UsageError(f"--sprt: {error}") from None
    return values


def check_bots(plan: RunPlan, *, suspend: bool = False) -> dict[str, str]:
    """Refuse a bot whose program or folder cannot be found (UsageError). `suspend` (a tournament of three or
    more): such a bot is returned instead, {name: why}, to be suspended while the others play, as long as two
    bots are left to play."""
    from referee.run.botspec import BotSpecError, check_bot_command

    broken: dict[str, str] = {}
    for spec in plan.bots:
        try:
            check_bot_command(spec)
        except BotSpecError as error:
            if not suspend:
                raise UsageError(str(error)) from None
            broken[spec.name] = f"cannot start: {error}"
    if len(plan.bots) - len(broken) < 2:
        raise UsageError("; ".join(broken.values()).replace("cannot start: ", "") + " (fewer than two bots can play)")
    if any(spec.options for spec in plan.bots):
        import tempfile

        import trio

        from referee.play.preflight import OptionsRefused, check_options

        # Option values are checked against what each bot declares before anything is played.
        with tempfile.TemporaryDirectory(prefix="alternator-preflight-") as logs:
            try:
                trio.run(check_options, plan.bots, Path(logs), plan.start_timeout_s)
            except OptionsRefused as error:
                raise UsageError(str(error)) from None
    return broken


class EventWriter:
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
        from referee.outputs.events import encode_event

        self.stream.write(encode_event(event))
        self.stream.flush()

    def close(self) -> None:
        if self._owned:
            self.stream.close()


def execute(
    plan: RunPlan,
    display: RunDisplay,
    *,
    events: str | None,
    rebuild_db: bool = False,
    suspended: dict[str, str] | None = None,
    verbose: bool = False,
) -> RunSummary | None:
    """Run `plan` to its end, a verdict, an error or a signal. None when a signal came before the first game
    (nothing was recorded); UsageError when a bot cannot start or the output directory is another run's."""
    import trio

    from referee.exceptions import find_exception
    from referee.outputs.files import OutputDirError, prepare_output_dir
    from referee.outputs.livefeed import LiveFeed
    from referee.play.loop import until_next_relay_s
    from referee.play.process import BotStartError
    from referee.run.runner import Runner, rebuild_from_games_file
    from referee.run.store import StoreError, database_path

    try:
        prepare_output_dir(plan.out_dir)
    except OutputDirError as error:
        raise UsageError(str(error)) from None
    if rebuild_db:
        try:
            rebuilt = rebuild_from_games_file(plan)
        except StoreError as error:
            raise UsageError(str(error)) from None
        display.message(
            f"rebuilt {database_path(plan.out_dir)} from games.jsonl: {rebuilt.restored} game(s), each checked"
            + (f"; the old database is kept as {rebuilt.kept}" if rebuilt.kept is not None else "")
            + (
                f"; its last line, {rebuilt.torn_line}, was cut short (a run killed while writing it): that game"
                " is not restored and will be played"
                if rebuilt.torn_line is not None
                else ""
            )
        )
    writer = EventWriter(events) if events else None
    feed = LiveFeed(plan.out_dir)  # every move, for the live view (`alternator serve`)

    def on_event(event: Event) -> None:
        display(event)
        feed.on_event(event)
        if writer is not None:
            writer(event)

    def on_moves(game: ScheduledGame, moves: Sequence[tuple[PlayedMove, int]]) -> None:
        feed.moves(game.game_id, moves)
        display.moves_played(game, moves)

    async def main() -> RunSummary:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            if plan.cluster is None:
                return await play(signals, Runner(plan, on_event=on_event, on_moves=on_moves, suspended=suspended))
            from referee.cluster.dask import ClusterPlayers

            cluster = await open_cluster(plan, display, verbose=verbose)
            try:
                players = ClusterPlayers(cluster, plan.bots, plan.start_timeout_s)
                runner = Runner(plan, on_event=on_event, on_moves=on_moves, players=players, suspended=suspended)
                summary = await play(signals, runner)
            finally:
                await cluster.close()
            summary.workers = cluster.summary_lines()
            return summary

    async def play(signals: AsyncIterator[int], runner: Runner) -> RunSummary:
        async with trio.open_nursery() as nursery:

            async def tick() -> None:
                while True:
                    await trio.sleep(until_next_relay_s())  # with the slots' batches of moves: one wake for both
                    display.tick()
                    feed.flush()  # the last moves of a batch, when no other write came since

            async def watch() -> None:
                async for _ in signals:
                    display.message("stopping: abandoning the games in progress and stopping the bots ...")
                    runner.stop()
                    return

            nursery.start_soon(watch)
            nursery.start_soon(tick)  # the status line on a terminal, a progress line now and then otherwise
            summary = await runner.run()
            nursery.cancel_scope.cancel()
        return summary

    global _finishing
    try:
        return trio.run(main)
    except StopRequested:
        return None
    except BaseException as error:
        from referee.cluster.dask import ClusterError, ClusterLostError  # here: a run without a cluster never needs it

        lost = find_exception(error, ClusterLostError)
        if lost is not None:
            raise RunFailed(f"stopped: {lost}; the standings so far are in {plan.out_dir}") from None
        found = find_exception(error, (BotStartError, StoreError, ClusterError))
        if found is not None:
            raise UsageError(str(found)) from None
        if find_exception(error, StopRequested) is not None:
            return None
        raise
    finally:
        _finishing = True
        feed.close()
        if writer is not None:
            writer.close()


async def open_cluster(plan: RunPlan, display: RunDisplay, *, verbose: bool = False) -> Cluster:
    """Connect to the plan's cluster and check that every worker can start every bot (ClusterError)."""
    from referee.cluster.dask import Cluster

    assert plan.cluster is not None
    display.message(f"cluster: connecting to the Dask scheduler at {plan.cluster.address} ...")
    cluster = await Cluster.connect(plan.cluster, on_message=display.message, verbose=verbose)
    try:
        await cluster.preflight(plan.bots, plan.start_timeout_s)
    except BaseException:
        await cluster.close()
        raise
    workers = cluster.healthy()
    display.message(
        f"cluster: {len(workers)} worker(s), {cluster.slots} game(s) at once; every worker started every bot"
    )
    return cluster


def exit_status(summary: RunSummary | None, display: RunDisplay, out_dir: Path, name: str) -> int:
    """Say how the run ended, and the exit status for it."""
    if summary is None:
        display.message(f"stopped before the first game; nothing was recorded in {out_dir}")
        return 130
    if summary.void_games:
        late = summary.latency.void_for_lag if summary.latency is not None else 0
        why = "the referee's own failure; see the bots' logs"
        if late:
            why = f"{late} because the host was late (see the reasons in the records), the rest {why}"
        display.message(f"{summary.void_games} void game(s) ({why}): they are never scored and are played again")
    if summary.host_pauses or summary.games_at_once_min < summary.concurrency:
        paused = (
            f" and was paused {summary.host_pauses} time(s),"
            f" {summary.host_wait_s / 60:.1f} min in all (--max-host-wait)"
            if summary.host_pauses
            else ""
        )
        display.message(f"the host was busy: the run came down to {summary.games_at_once_min} game(s) at once{paused}")
    if summary.ended == "error":
        print(f"alternator {name}: error: {summary.error}", file=sys.stderr)
        return 1
    if summary.ended == "interrupted":
        missing = summary.games_total - summary.games_done
        display.message(
            f"stopped: {summary.games_done} of {summary.games_total} games played; the games in progress were"
            f" abandoned (not scored). To resume, run the same command again (with --out {out_dir}): it plays"
            f" only the {missing} missing games."
        )
        return 130
    if summary.ended == "incomplete":
        display.message(
            f"{summary.games_total - summary.games_done} games are still missing; run the same command again"
            f" (with --out {out_dir}) to play them"
        )
        return 1
    if summary.played_now == 0 and summary.void_games == 0 and summary.ended == "completed":
        display.message(
            f"nothing was left to play: {out_dir} already holds every game of this {name};"
            " to play it again, delete that directory or give another --out"
        )
    return 0
