"""Games on a Dask cluster: the coordinator submits games as Dask tasks, workers play them with `run_game`.

The `alternator` process stays the coordinator: it keeps the schedule, the database, standings, events and
SPRT, and commits each record as it comes back. A worker is an ordinary `dask worker ADDRESS` process on a
machine where the arena is installed and the bots are at the same paths (a shared filesystem or the same
checkout). Each game is one task (`play_game`); a worker plays as many at once as it has threads (its
slots), all in one trio loop of its own (`_WorkerGames`, one per worker process), which keeps bot processes
open between games and reuses them as a local slot does. The game's clocks are read on the worker that
plays it, so a slow network between coordinator and worker costs throughput, never a bot's time.

Before the first game every worker must start and handshake every bot (`Cluster.preflight`). A worker that
later cannot start a bot, or whose games keep failing on the referee's side, is taken out of the run with
a message: its games are void (played again elsewhere), never forfeits of healthy bots. A worker killed
mid-game loses only its task: the scheduler runs it again on another worker. Each submission has its own
task key, and the coordinator commits one result per scheduled game, so no game is counted twice. The
scheduler going away, or the last worker, stops the run (`ClusterLostError`) with what is committed; the
database resumes it, on a cluster or not. Each record names the worker that played it (`worker`), and
`Cluster.summary_lines` gives each worker's games, times and its own latency per move.

Dask is imported only when a cluster is used (the `cluster` extra: `pip install 'alternator-arena[cluster]'`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import math
import os
import socket
import sys
import tempfile
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from protocol.options import OptionError, resolve_options
from referee import __version__
from referee.cluster.config import ClusterConfig
from referee.host import process_wide
from referee.play.game import run_game
from referee.play.loop import BotPool, MoveBatches, OnMoves, decode_moves, encode_move, void_record
from referee.play.process import BotFault, BotProcess, BotStartError, open_bot
from referee.record import GameRecord, GameSettings, MoveRecord, Termination
from referee.run.botspec import BotSpec
from referee.run.schedule import ScheduledGame

if TYPE_CHECKING:
    from distributed import Client, Future

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
"""How long to try to reach the scheduler before saying it cannot be reached."""
WORKER_WAIT_S = 10.0
"""How long a run waits for the first worker to join the scheduler."""
WATCH_INTERVAL_S = 1.0
"""While waiting for a game: how often the coordinator checks that the scheduler still has workers."""
PROBE_TIMEOUT_S = 20.0
"""The preflight: how long one worker may take to start and handshake every bot."""
MOVES_WAIT_S = 2.0
"""After a game's record: how long the coordinator waits for its last moves, which travel apart from it."""
WORKER_FAILURE_LIMIT = 3
"""A worker whose last this many games all failed on the referee's side (void) is taken out of the run."""
IDLE_CLOSE_S = 60.0
"""On a worker: bot processes unused for this long are stopped (a run ended, or its bots changed)."""
PYTHON_WORD = "{python}"
"""In a job's bot commands: the Python running the referee, which on a worker is the worker's own."""


class ClusterError(Exception):
    """The cluster cannot be used for this run; the message says what happened and what to do."""


class ClusterLostError(ClusterError):
    """The cluster cannot go on with the run (its scheduler went away, no worker is left in it): the run
    stops with what is committed, and resumes when started again."""


def portable_spec(spec: BotSpec) -> BotSpec:
    """The spec with this Python written as `{python}`, which a worker replaces with its own."""
    command = [PYTHON_WORD if word == sys.executable else word for word in spec.command]
    return spec.model_copy(update={"command": command})


def _local_spec(spec: BotSpec) -> BotSpec:
    command = [sys.executable if word == PYTHON_WORD else word for word in spec.command]
    return spec.model_copy(update={"command": command})


# --- the worker side: Dask tasks and the worker process's games ------------------------------------------


@dataclass(frozen=True)
class GameJob:
    """One game for a worker: everything `run_game` needs, in a picklable form."""

    game_id: str
    black: BotSpec
    white: BotSpec
    settings: GameSettings
    moves_topic: str | None = None
    """Where the worker publishes the game's moves as it plays (Dask's events, `Cluster.play`); None: nowhere."""
    attempt: int = 1
    start_timeout_s: float = PROBE_TIMEOUT_S
    """How long a bot the worker starts for this game may take to answer hello (`--start-timeout`)."""


@dataclass(frozen=True)
class WorkerReply:
    """What a worker sends back for a game: the record, or why it could not play it (`failure`)."""

    worker: str
    record_json: str | None
    failure: str | None = None
    duration_s: float = 0.0
    moves: int = 0
    """The moves in the record (the coordinator waits for as many streamed ones)."""


@dataclass(frozen=True)
class ProbeResult:
    """The preflight of one bot on one worker: None, or what failed."""

    worker: str
    bot: str
    failure: str | None
    announced: str | None = None
    version: str = __version__  # the arena's version on the worker


def _spec_keys(job: GameJob) -> tuple[str, str]:
    black, white = job.black.model_dump_json(), job.white.model_dump_json()
    return black, (white + "#white" if white == black else white)


class _WorkerGames:
    """The games of one worker process: a trio loop in a thread of its own, hosting every slot's bots.

    Dask runs tasks in its threads; each `play_game` task hands its game to this loop and waits. The loop
    outlives the tasks, so a slot's bot processes are reused by the next game that needs them.
    """

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._bot_dirs: set[Path] = set()
        """Every bot folder this worker has been given a game of: each sandbox hides the others'."""
        self._idle: list[BotPool] = []
        self._slots: list[BotPool] = []
        self._token: trio.lowlevel.TrioToken | None = None
        self._closing: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        ready = threading.Event()
        self._thread = threading.Thread(target=trio.run, args=(self._main, ready), name="alternator-games", daemon=True)
        self._thread.start()
        ready.wait()

    async def _main(self, ready: threading.Event) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._closing = trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._sweep)
            ready.set()
            await self._closing.wait()
            # Every bot is stopped by its host's task (quit, grace, kill): open_bot's exit is shielded.
            nursery.cancel_scope.cancel()

    def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run `await function(*args)` in the loop, from a Dask thread."""
        return trio.from_thread.run(function, *args, trio_token=self._token)

    def close(self) -> None:
        """Stop every bot and the loop (at the worker process's exit)."""
        if self._closing is not None and self._thread.is_alive():
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._closing.set, trio_token=self._token)
            self._thread.join(timeout=5)

    async def _sweep(self) -> None:
        while True:
            await trio.sleep(IDLE_CLOSE_S / 4)
            for pool in self._idle:
                if pool.hosts and time.monotonic() - pool.last_used > IDLE_CLOSE_S:
                    pool.close_all()

    def _take_slot(self, keys: tuple[str, str]) -> BotPool:
        """The idle slot with most of this game's bots running, or a new one."""
        if not self._idle:
            assert self._nursery is not None
            pool = BotPool(self.log_dir, self._nursery, hidden=self._bot_dirs)
            self._slots.append(pool)
            return pool
        best = max(range(len(self._idle)), key=lambda i: len(self._idle[i].running() & set(keys)))
        return self._idle.pop(best)

    async def _process(self, pool: BotPool, key: str, spec: BotSpec, timeout_s: float = PROBE_TIMEOUT_S) -> BotProcess:
        """The slot's process for this bot, started and handshaken if new; BotStartError when it cannot be.

        A new process is handshaken here, not in `run_game`: every worker started every bot in the
        preflight, so one that fails now says something about this worker, not the bot (no forfeit).
        """
        process = await pool.process(key, spec)
        if process.hello is None:
            failure = await _handshake(process, timeout_s)
            if failure is not None:
                await pool.close(key)
                raise BotStartError(f"bot {spec.name!r} {failure}")
        return process

    async def play(
        self, job: GameJob, worker: str, publish: Callable[[dict[str, Any]], None] | None = None
    ) -> WorkerReply:
        """Play `job` with this worker's bot processes; `publish` (if given) gets its moves in batches."""
        keys = _spec_keys(job)
        batches = None
        if publish is not None:
            report = publish  # bound for the closure: a batch of moves as one event of the run's topic

            def send(moves: list[tuple[MoveRecord, int]]) -> None:
                rows = [encode_move(move, ply) for move, ply in moves]
                report({"game": job.game_id, "attempt": job.attempt, "moves": rows})

            batches = MoveBatches(send)
        black_spec, white_spec = _local_spec(job.black), _local_spec(job.white)
        self._bot_dirs.update(spec.dir for spec in (black_spec, white_spec) if spec.dir is not None)
        pool = self._take_slot(keys)
        started = time.monotonic()
        try:
            try:
                black = await self._process(pool, keys[0], black_spec, job.start_timeout_s)
                white = await self._process(pool, keys[1], white_spec, job.start_timeout_s)
            except BotStartError as error:
                return WorkerReply(worker, None, failure=str(error), duration_s=time.monotonic() - started)
            record = await run_game(
                job.game_id, black, white, job.settings, on_move=None if batches is None else batches.push
            )
            if batches is not None:
                batches.flush()
            await pool.after_game(record, ((keys[0], black), (keys[1], white)))
            record = record.model_copy(update={"worker": worker})
            duration = time.monotonic() - started
            return WorkerReply(worker, record.model_dump_json(), duration_s=duration, moves=len(record.moves))
        finally:
            pool.last_used = time.monotonic()
            self._idle.append(pool)

    async def probe(
        self, specs: Sequence[BotSpec], worker: str, timeout_s: float = PROBE_TIMEOUT_S
    ) -> list[ProbeResult]:
        async def one(spec: BotSpec, results: list[ProbeResult]) -> None:
            failure = None
            try:
                async with open_bot(_local_spec(spec), self.log_dir) as process:
                    failure = await _handshake(process, timeout_s)
                    if failure is None and spec.options and process.hello is not None:
                        # The option values, checked against what the bot declares, as a local run does first.
                        try:
                            resolve_options(process.hello.declared_options(), spec.options, bot=spec.name)
                        except OptionError as error:
                            failure = f"{error}; fix the option.NAME=VALUE words (or [bots.options])"
            except BotStartError as error:
                failure = str(error)
            announced = None if failure is not None or process.hello is None else process.hello.name
            results.append(ProbeResult(worker, spec.name, failure, announced))

        results: list[ProbeResult] = []
        async with trio.open_nursery() as nursery:
            for spec in specs:
                nursery.start_soon(one, spec, results)
        return sorted(results, key=lambda result: result.bot)


async def _handshake(process: BotProcess, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Handshake a new process: None, or what went wrong (with its last stderr lines)."""
    try:
        with trio.fail_after(timeout_s):
            await process.handshake()
    except BotFault as error:
        await process.settle()
        tail = " | ".join(process.stderr_tail(3))
        return f"started but its handshake failed: it {error.reason}" + (f" (stderr: {tail})" if tail else "")
    except trio.TooSlowError:
        return f"started but did not answer hello within {timeout_s:g} s"
    return None


def _new_worker_games() -> _WorkerGames:
    log_dir = Path(tempfile.gettempdir()) / f"alternator-worker-{os.getpid()}" / "logs"
    games = _WorkerGames(log_dir)
    atexit.register(games.close)
    return games


def _worker_games() -> _WorkerGames:
    """This worker process's games loop, started by its first task (`process_wide.DASK_WORKER_GAMES`)."""
    return process_wide.DASK_WORKER_GAMES.get(_new_worker_games)


def _worker_address() -> str:
    from distributed import get_worker

    try:
        return str(get_worker().address)
    except ValueError:  # not in a Dask worker (a test calling the task directly)
        return f"local-{os.getpid()}"


def play_game(job: GameJob) -> WorkerReply:
    """The Dask task: play one game on this worker (in its games loop) and send back the record.

    A failure of the worker itself is sent back too, with the worker's address, so the coordinator can
    take that worker out of the run (an exception would not say which worker raised it).
    """
    address = _worker_address()
    publish = None
    if job.moves_topic is not None:
        with contextlib.suppress(ValueError):  # not in a Dask worker (a test calling the task directly)
            from distributed import get_worker

            publish = functools.partial(get_worker().log_event, job.moves_topic)
    try:
        games = _worker_games()
        reply: WorkerReply = games.run(games.play, job, address, publish)
    except Exception as error:
        log.exception("game %s: the worker failed", job.game_id)
        return WorkerReply(address, None, failure=f"the worker failed ({type(error).__name__}: {error})")
    return reply


def probe_bots(specs: list[BotSpec], timeout_s: float = PROBE_TIMEOUT_S) -> list[ProbeResult]:
    """The Dask task of the preflight: start and handshake every bot on this worker (and check the option values
    it is given), then stop them."""
    games = _worker_games()
    results: list[ProbeResult] = games.run(games.probe, specs, _worker_address(), timeout_s)
    return results


# --- the coordinator side -----------------------------------------------------------------------------


@dataclass
class WorkerStats:
    """One worker's share of a run, for the summary."""

    address: str
    games: int = 0
    void: int = 0
    game_s: float = 0.0  # the games' own duration, measured on the worker
    overhead_s: float = 0.0  # submit to result, minus the game: queueing, scheduling, transfer
    move_ms: float = 0.0  # sum of the bots' move times (elapsed_ms), to average per move
    moves: int = 0
    latencies_ms: array[float] = field(default_factory=lambda: array("d"))  # the worker's own lateness per move
    void_for_lag: int = 0  # games the worker voided because it was late itself (an overloaded machine)
    consecutive_failures: int = 0
    removed: str | None = None  # why it was taken out of the run

    def add(self, record: GameRecord) -> None:
        """Count a game this worker played (void or not)."""
        self.latencies_ms.extend(move.latency_ms for move in record.moves if move.latency_ms is not None)
        if record.termination is Termination.VOID:
            self.void += 1
            self.consecutive_failures += 1
            self.void_for_lag += record.referee_lag_ms is not None
        else:
            self.games += 1
            self.consecutive_failures = 0
            self.moves += len(record.moves)
            self.move_ms += sum(move.elapsed_ms for move in record.moves)

    def describe(self) -> str:
        games = f"{self.games} game{'s' if self.games != 1 else ''}"
        parts = [f"{self.address}: {games}"]
        if self.void:
            parts.append(f"{self.void} void")
        played = self.games + self.void
        if played:
            parts.append(f"{self.game_s / played:.2f} s per game")
            parts.append(f"queue+dispatch {self.overhead_s / played * 1000:.0f} ms per game")
        if self.moves:
            parts.append(f"{self.move_ms / self.moves:.1f} ms per move")
        if self.latencies_ms:
            ordered = sorted(self.latencies_ms)
            p50, p99 = ordered[(len(ordered) - 1) // 2], ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
            parts.append(f"latency p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {ordered[-1]:.3f} ms")
        if self.void_for_lag:
            parts.append(f"{self.void_for_lag} void for the worker's own lateness")
        if self.removed:
            parts.append(f"taken out: {self.removed}")
        return ", ".join(parts)


class _OneLine(logging.Handler):
    """Dask's own log held back to one line: the first error it logs (the loss of the scheduler comes with ~30
    lines of traceback), said once, without its traceback; the run then says what happened in its own words."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.said = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.said:
            return
        self.said = True
        text = record.getMessage().strip().splitlines()
        if not text and record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text = [f"{type(error).__name__}: {error}".rstrip(": ")]
        first = text[0] if text else "(no message)"
        sys.stderr.write(f"cluster: Dask logged an error ({record.name}: {first[:200]}); --verbose shows its own log\n")


def _quiet_dask_logs(verbose: bool = False) -> None:
    """Dask logs every lost connection with a traceback; the run reports those itself, in one line. Done after
    Dask is imported: its import sets up its loggers (levels and handlers) from its config, over any set before.
    `verbose`: Dask's log as Dask writes it."""
    import distributed  # noqa: F401 - configures Dask's logging, which is then overridden

    if verbose:
        return
    handler = _OneLine()
    for name in ("distributed", "tornado", "asyncio"):
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.propagate = False
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(("distributed.", "tornado.")):
            child = logging.getLogger(name)
            for old in list(child.handlers):
                child.removeHandler(old)
            child.propagate = True  # to the one-line handler above


def _check_listening(address: str) -> None:
    """Fail at once when nothing listens at the address (Dask itself retries until its timeout)."""
    host, port = address.split("://", 1)[1].rsplit(":", 1)
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} ({error.strerror or error}); start it with"
            " `dask scheduler`, check the address (--cluster), or run without --cluster"
        ) from None


def _connect(config: ClusterConfig) -> Client:
    try:
        from distributed import Client
        from distributed.security import Security
    except ImportError:
        raise ClusterError(
            "a cluster needs Dask, which is not installed here: pip install 'alternator-arena[cluster]'"
            " (on this machine and every worker)"
        ) from None

    _check_listening(config.address)
    security = None
    if config.address.startswith("tls://"):
        for name in ("ca_file", "cert", "key"):
            path = getattr(config, name)
            if not Path(path).is_file():
                raise ClusterError(f"cluster {name}: {path} is not a readable file; give the PEM file's path")
        security = Security(  # type: ignore[no-untyped-call]
            tls_ca_file=str(config.ca_file),
            tls_client_cert=str(config.cert),
            tls_client_key=str(config.key),
            require_encryption=True,
        )
    try:
        client = Client(config.address, security=security, timeout=CONNECT_TIMEOUT_S, set_as_default=False)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as error:
        raise ClusterError(
            f"cannot reach the Dask scheduler at {config.address} ({error or type(error).__name__}); start it"
            " with `dask scheduler`, check the address (--cluster; tls:// with certificates if the scheduler"
            " was started with them), or run without --cluster"
        ) from None
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    except TimeoutError:
        client.close()  # type: ignore[no-untyped-call]
        raise ClusterError(
            f"the Dask scheduler at {config.address} has no workers (waited {WORKER_WAIT_S:g} s); start one on"
            f" each machine with `dask worker {config.address}`"
        ) from None
    return client


class Cluster:
    """The coordinator's side of a run on a Dask cluster: submit games, get their records back.

    Made by `Cluster.connect`; `preflight` before the first game; `play` from as many tasks as `slots`;
    `close` at the end. Messages for people (a worker taken out) go to `on_message`.
    """

    def __init__(self, client: Client, config: ClusterConfig, on_message: Callable[[str], None]) -> None:
        self.client = client
        self.config = config
        self.on_message = on_message
        self.stats: dict[str, WorkerStats] = {}
        self._run = uuid.uuid4().hex[:8]
        self._attempts: dict[str, int] = {}
        self._limiter = trio.CapacityLimiter(10_000)
        self.no_workers_grace_s = WORKER_WAIT_S
        self._workers_at: tuple[float, dict[str, int]] | None = None
        self._workers_lock = threading.Lock()
        """How long games may wait for a worker when the scheduler has none before the run stops."""
        self._lost = False
        self.moves_topic = f"alternator-moves-{self._run}"
        self._listeners: dict[tuple[str, int], OnMoves] = {}
        self._moves_seen: dict[tuple[str, int], int] = {}
        self._token = trio.lowlevel.current_trio_token()
        client.subscribe_topic(self.moves_topic, self._moves_event)  # type: ignore[no-untyped-call]

    def _moves_event(self, event: tuple[float, dict[str, Any]]) -> None:
        """A batch of moves published by a worker (on the Dask client's thread): to the trio loop."""
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._deliver_moves, event[1])

    def _deliver_moves(self, batch: dict[str, Any]) -> None:
        key = (batch["game"], batch["attempt"])
        listener = self._listeners.get(key)
        if listener is None:
            return  # an earlier attempt, or a game nobody follows
        listener(decode_moves(batch["moves"]))
        self._moves_seen[key] = self._moves_seen.get(key, 0) + len(batch["moves"])

    @classmethod
    async def connect(
        cls, config: ClusterConfig, *, on_message: Callable[[str], None] | None = None, verbose: bool = False
    ) -> Cluster:
        """Connect to the scheduler and wait for a worker; ClusterError says what is wrong. `verbose`: Dask's
        own log in full (else held back to one line)."""
        _quiet_dask_logs(verbose)
        client = await trio.to_thread.run_sync(_connect, config, abandon_on_cancel=True)
        return cls(client, config, on_message or (lambda text: None))

    async def close(self) -> None:
        """Disconnect (tasks of this run still queued are released by the scheduler)."""
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self._close_client)

    def _close_client(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close(timeout=2)  # type: ignore[no-untyped-call]

    # -- workers -----------------------------------------------------------------------------------

    def _workers(self, max_age_s: float = 0.0) -> dict[str, int]:
        """The scheduler's workers and their threads (slots); asked again when older than `max_age_s` (a
        round trip to the scheduler, which every waiting game would otherwise make every second)."""
        with self._workers_lock:
            if self._workers_at is None or time.monotonic() - self._workers_at[0] > max_age_s:
                info = self.client.scheduler_info(n_workers=-1)
                workers = {address: int(worker.get("nthreads", 1)) for address, worker in info["workers"].items()}
                self._workers_at = (time.monotonic(), workers)
            return self._workers_at[1]

    def healthy(self) -> list[str]:
        return [address for address in self._workers() if not self._stat(address).removed]

    @property
    def slots(self) -> int:
        """Games the healthy workers can play at once: their threads."""
        workers = self._workers()
        return sum(n for address, n in workers.items() if not self._stat(address).removed)

    @property
    def in_flight(self) -> int:
        """Games to keep submitted: the slots, and one waiting on each worker, so that a worker starts its
        next game as soon as it finishes one instead of after a round trip to the coordinator."""
        workers = self._workers()
        return sum(n + 1 for address, n in workers.items() if not self._stat(address).removed)

    def _stat(self, address: str) -> WorkerStats:
        if address not in self.stats:
            self.stats[address] = WorkerStats(address)
        return self.stats[address]

    def _remove(self, address: str, why: str) -> None:
        stat = self._stat(address)
        if stat.removed:
            return
        stat.removed = why
        self.on_message(f"worker {address} is taken out of this run: {why}; its games are played on the others")
        if not self.healthy():
            raise ClusterLostError(
                f"every worker of {self.config.address} is out of this run (last: {address}: {why}); fix the"
                " workers and run the same command again to resume"
            )

    async def preflight(self, specs: Sequence[BotSpec], start_timeout_s: float = PROBE_TIMEOUT_S) -> None:
        """Every worker starts and handshakes every bot (within `start_timeout_s`, at least `PROBE_TIMEOUT_S`) and
        checks its option values; ClusterError names each worker, bot and failure."""
        portable = [portable_spec(spec) for spec in specs]
        timeout = max(PROBE_TIMEOUT_S, start_timeout_s)
        results: list[ProbeResult] = await trio.to_thread.run_sync(
            self._probe_all, portable, timeout, abandon_on_cancel=True
        )
        failures = [r for r in results if r.failure is not None]
        lines = [f"worker {r.worker}: bot {r.bot!r}: {r.failure}" for r in failures]
        versions = {r.worker: r.version for r in results if r.version != __version__}
        if versions:
            raise ClusterError(
                "workers run another version of the arena than this one"
                f" ({__version__}): install the same everywhere:\n  "
                + "\n  ".join(f"worker {worker}: {version}" for worker, version in sorted(versions.items()))
            )
        if failures:
            raise ClusterError(
                "not every worker can start every bot (the bots must be at the same paths on every machine:"
                " a shared filesystem or the same checkout, see README):\n  " + "\n  ".join(lines)
            )

    def _probe_all(self, specs: list[BotSpec], timeout_s: float = PROBE_TIMEOUT_S) -> list[ProbeResult]:
        # A key of its own per call: Dask hands a task whose key it still holds the same result, and a ladder
        # probes each new bot with a preflight of its own.
        call = uuid.uuid4().hex[:8]
        futures = {
            address: self.client.submit(
                probe_bots,
                specs,
                timeout_s,
                key=f"alternator-probe-{self._run}-{call}-{index}",
                workers=[address],
                allow_other_workers=False,
                pure=False,
            )
            for index, address in enumerate(self._workers())
        }
        deadline = time.monotonic() + timeout_s * 2
        results: list[ProbeResult] = []
        for address, future in futures.items():
            try:
                results.extend(future.result(timeout=max(0.1, deadline - time.monotonic())))
            except TimeoutError:
                future.cancel()  # type: ignore[no-untyped-call]
                results.append(ProbeResult(address, "*", f"no answer within {timeout_s * 2:g} s"))
            except Exception as error:
                results.append(ProbeResult(address, "*", f"the probe task failed: {type(error).__name__}: {error}"))
        return results

    # -- games -------------------------------------------------------------------------------------

    async def play(
        self,
        game_id: str,
        black: BotSpec,
        white: BotSpec,
        settings: GameSettings,
        on_moves: OnMoves | None = None,
        start_timeout_s: float = PROBE_TIMEOUT_S,
    ) -> GameRecord:
        """Play a game on some healthy worker and return its record (a void one when no worker could play it).
        `on_moves` gets its moves as the worker plays them (Dask's events, a batch each), all of them before the record.

        ClusterLostError when the scheduler is gone; ClusterError when no worker is left in the run.
        """
        if self._lost:
            raise ClusterLostError(self._lost_message())
        attempt = self._attempts[game_id] = self._attempts.get(game_id, 0) + 1
        topic = None if on_moves is None else self.moves_topic
        job = GameJob(game_id, portable_spec(black), portable_spec(white), settings, topic, attempt, start_timeout_s)
        key = (game_id, attempt)
        if on_moves is not None:
            self._listeners[key] = on_moves
        submitted = time.monotonic()
        try:
            future = await trio.to_thread.run_sync(self._submit, job, attempt)
            try:
                reply = await trio.to_thread.run_sync(self._wait, future, abandon_on_cancel=True, limiter=self._limiter)
            except BaseException:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(self._cancel, future)
                raise
            if on_moves is not None and not isinstance(reply, str) and reply.record_json is not None:
                # The events travel apart from the result: wait (briefly) for the last moves to come in first.
                with trio.move_on_after(MOVES_WAIT_S):
                    while self._moves_seen.get(key, 0) < reply.moves:
                        await trio.sleep(0.01)
        finally:
            self._listeners.pop(key, None)
            self._moves_seen.pop(key, None)
        if isinstance(reply, str):
            return _void_record(game_id, black, white, settings, reply)
        stat = self._stat(reply.worker)
        stat.overhead_s += max(0.0, time.monotonic() - submitted - reply.duration_s)
        stat.game_s += reply.duration_s
        if reply.record_json is None:
            stat.void += 1
            self._remove(reply.worker, reply.failure or "it could not play a game")
            return _void_record(
                game_id, black, white, settings, f"worker {reply.worker}: {reply.failure}", reply.worker
            )
        record = GameRecord.model_validate_json(reply.record_json)
        stat.add(record)
        if record.termination is Termination.VOID and stat.consecutive_failures >= WORKER_FAILURE_LIMIT:
            why = f"its last {stat.consecutive_failures} games failed (last: {record.reason})"
            self._remove(reply.worker, why)
        return record

    def _submit(self, job: GameJob, attempt: int) -> Future[WorkerReply]:
        # Only restricted when a worker is out: asking the scheduler for its workers costs a round trip.
        removed = any(stat.removed for stat in self.stats.values())
        return self.client.submit(
            play_game,
            job,
            key=f"alternator-{self._run}-{job.game_id}-{attempt}",
            pure=False,
            workers=self.healthy() if removed else None,
            allow_other_workers=False,
        )

    def _wait(self, future: Future[WorkerReply]) -> WorkerReply | str:
        """The worker's reply, or why the game could not be played (a str); ClusterLostError."""
        from distributed import KilledWorker
        from distributed.client import FutureCancelledError

        try:
            reply = self._result(future)
        except KilledWorker as error:
            return f"the workers playing it died ({error})"
        except FutureCancelledError as error:
            if "scheduler-connection-lost" in str(error) or self.client.status != "running":
                self._lost = True
                raise ClusterLostError(self._lost_message()) from None
            return f"its task was cancelled ({error})"
        except ClusterError:
            raise
        except (OSError, TimeoutError) as error:
            self._lost = True
            raise ClusterLostError(self._lost_message()) from error
        except Exception as error:  # raised by the task on the worker: our failure, never the bots'
            return f"the task failed on a worker ({type(error).__name__}: {error})"
        return reply

    def _result(self, future: Future[WorkerReply]) -> WorkerReply:
        """`future.result()`, watching the workers meanwhile: ClusterError when none has been left for
        `no_workers_grace_s` (the scheduler would keep the game waiting for one forever)."""
        alone_since: float | None = None
        while True:
            try:
                reply: WorkerReply = future.result(timeout=WATCH_INTERVAL_S)
                return reply
            except TimeoutError:
                pass
            if self._workers(max_age_s=WATCH_INTERVAL_S):
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
            elif time.monotonic() - alone_since > self.no_workers_grace_s:
                raise ClusterLostError(
                    f"the Dask scheduler at {self.config.address} has had no workers for"
                    f" {self.no_workers_grace_s:g} s; start workers (dask worker {self.config.address}) and run the"
                    " same command again to resume, or run it without --cluster"
                )

    def _cancel(self, future: Future[WorkerReply]) -> None:
        with contextlib.suppress(Exception):
            future.cancel()  # type: ignore[no-untyped-call]

    def _lost_message(self) -> str:
        return (
            f"lost the Dask scheduler at {self.config.address}; the games in progress are not scored. Start the"
            " scheduler and workers again and re-run the same command to resume (or run without --cluster)"
        )

    def summary_lines(self) -> list[str]:
        """One line per worker that played: games, void games, time per game and dispatch latency."""
        return [stat.describe() for stat in sorted(self.stats.values(), key=lambda s: s.address)]


class ClusterPlayers:
    """A run's games played on the cluster (`referee.run.runner.Players`): as many slots as games it keeps in flight,
    each a `ClusterSlot`."""

    def __init__(self, cluster: Cluster, bots: Sequence[BotSpec], start_timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self.cluster = cluster
        self.bots = list(bots)
        self.start_timeout_s = start_timeout_s

    @property
    def slots(self) -> int:
        return self.cluster.in_flight

    def player(self, index: int) -> ClusterSlot:
        return ClusterSlot(index, self.cluster, self.bots, self.start_timeout_s)


class ClusterSlot:
    """A runner's worker slot whose games are played on the cluster: the interface of a local slot (`index`,
    `running`, `play`, `aclose`), with no processes of its own."""

    def __init__(
        self, index: int, cluster: Cluster, bots: Sequence[BotSpec], start_timeout_s: float = PROBE_TIMEOUT_S
    ) -> None:
        self.index = index
        self.cluster = cluster
        self._specs = {spec.name: spec for spec in bots}
        self._start_timeout_s = start_timeout_s

    def running(self) -> set[str]:
        return set()  # the bots run on the workers, which choose their own slots

    async def play(self, game: ScheduledGame, settings: GameSettings, on_moves: OnMoves | None = None) -> GameRecord:
        """Play `game` on the cluster; its moves stream back to `on_moves` as the worker plays them."""
        black, white = self._specs[game.black], self._specs[game.white]
        return await self.cluster.play(game.game_id, black, white, settings, on_moves, self._start_timeout_s)

    async def aclose(self) -> None:
        """Nothing to close here: each worker stops its idle bots itself."""


def _void_record(
    game_id: str, black: BotSpec, white: BotSpec, settings: GameSettings, why: str, worker: str | None = None
) -> GameRecord:
    """The record of a game no worker could play: void, never scored, played again."""
    reason = f"void: not played on the cluster: {why}; the game is not scored"
    return void_record(game_id, black, white, settings, reason, worker=worker)
