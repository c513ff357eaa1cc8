"""The one runner of matches and tournaments: a format's games played by N worker slots, every game committed.

`alternator match` (a schedule of two bots) and `alternator tournament` are thin front-ends over
`Runner`. Each worker slot takes the next pending game, plays it (`GameSlot.play`: the separable unit
"one scheduled game, given its settings and bots", with the slot's bot processes reused) and commits it
before taking another. A slot keeps its bot processes open between games (one per bot name); it
restarts one only when a fault left it `broken`, and prefers games whose bots it already has running.

The games come from the run's format (`referee.run.schedule.Scheduler`, made by `referee.run.formats`): asked
once at the start and, for a format that pairs from results (Swiss, knockout, adaptive), again after every result; each
game is stored as it is scheduled. A slot with nothing to play waits while games are in progress (their results
may let the format pair more); the run ends when nothing is pending or in progress. A bot that cannot start is
suspended in a tournament (its games forfeited, the others play on; kept in the store), a bot added to the
config joins as a latecomer, and one removed retires (see `Runner._open_format`).

The database (`referee.run.store`) is the truth: a run that is killed or stopped resumes from it, playing
only the games that are missing, and `games.jsonl` is rewritten from it. One void policy: a void game
(the referee's own failure, e.g. the host too loaded to time the bots fairly) is never scored and is
played again at once. A game void because the host was late makes the run back off (`referee.run.backoff`):
fewer games at once, down to one, then a pause until the host is calm, then full speed again; it stops, with a
message about the machine, only past `--max-host-wait` in one pause. A game void for another reason
`MAX_VOIDS_PER_GAME` times in one run stops the run. Everything a person or a program sees (progress,
events) goes through `on_event`.

Two-bot runs count game pairs (one opening, colours swapped) and, with an SPRT, stop at its verdict:
pairs are scheduled in order, a pair counts when both its games are committed (in whatever order they
finish), the LLR is evaluated after every counted pair, and at a verdict the games in progress are
stopped and not scored. `referee.stats.sprt.count_in_order` replays the same counting from the database, so
the verdict and every figure can be reproduced from it alone.

A referee killed with `kill -9` cannot stop its bots. They see their stdin close (EOF) and must exit:
the protocol asks it of every bot, and the sample bots and the kit do. (A sandboxed bot dies with the
referee anyway: bubblewrap's --die-with-parent, see `referee.host.sandbox`.)
"""

from __future__ import annotations

import functools
import json
import math
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import trio

from protocol.rules import BLACK, WHITE, Color, Position, result_points
from referee.host.containment import CpuSlots
from referee.outputs.events import (
    Event,
    GameFinished,
    GameStarted,
    HostBusy,
    RunFinished,
    RunNotice,
    RunStarted,
    StandingsUpdated,
    StatisticsUpdated,
    now,
    standing_rows,
)
from referee.outputs.files import (
    OutputDirError,
    append_line,
    disk_full_in,
    is_disk_full,
    prepare_output_dir,
)
from referee.play.controls import side_controls
from referee.play.game import Limits
from referee.play.loop import (
    BotPool,
    MoveRelay,
    PlayLoop,
    ProcessPlayLoop,
    play_batched,
    play_in_pool,
    stored_form,
)
from referee.record import BotInfo, GameRecord, GameSettings, MoveRecord, PlayedMove, Termination
from referee.run import backoff
from referee.run.botspec import BotSpec
from referee.run.config import RunPlan
from referee.run.recovery import (
    GAMES_FILE as GAMES_FILE,
)
from referee.run.recovery import (
    LostGamesError,
    Rebuilt,
    RecoveryError,
    check_nothing_lost,
    sync_games_file,
)
from referee.run.recovery import (
    rebuild_from_games_file as rebuild_database_from_file,
)
from referee.run.schedule import (
    Format,
    Progress,
    ScheduledGame,
    ScheduleError,
    Scheduler,
    make_schedule,
    pick_next,
    playing_order,
    schedule_pairs,
)
from referee.run.store import DB_NAME, DoneGame, RunStore, StoreError, damaged_database, database_path
from referee.stats.head_to_head import Ended, HeadToHead, head_to_head
from referee.stats.sprt import CountedGame, MatchStatistics, PairCounter
from referee.stats.standings import ScoredGame, Standings, StandingsTally, write_standings
from referee.timing.latency import LatencySummary, LatencyTally, is_void_for_lag
from referee.timing.time_odds import with_time_odds

LOG_DIR = "logs"
MAX_VOIDS_PER_GAME = 3
"""A void game is played again at once; void this many times in one run, the run stops: the machine (its
load, its memory, the referee itself) is not fit to play it, and playing on would only waste the bots' time."""
HOST_READING_INTERVAL_S = 1.0
"""How often the host is looked at while the run backs off for it (not at all otherwise)."""
HOST_STATUS_INTERVAL_S = 10.0
"""While backing off, the status line (a `host_busy` event) is told again at least this often."""
STANDINGS_UPDATE_INTERVAL_S = 1.0
"""Standings are recomputed (and `standings_updated` sent) at most this often while games run, and after
the last game: the Elo fit runs on the thread that times every move of every game in progress."""
STANDINGS_SHARE = 0.05
"""And at most this share of the coordinator's time goes to them: the fit grows with the field (a full round robin
of 16 bots: 10 ms a fit; of 48 bots: 65 ms, 6.5 % of a core at one a second), so with many bots the live standings
come less often than every `STANDINGS_UPDATE_INTERVAL_S` (48 bots: every 1.3 s); the final ones always come."""
STANDINGS_WRITE_INTERVAL_S = 5.0
MAX_FAILED_STARTS = 3
"""A bot that fails to start (its handshake) this many times in a row, before any start of it succeeded in this run,
is a set-up problem (a wrong command, output never flushed), not a game. In a tournament the bot is then suspended:
the last failure and its remaining games are forfeits, and the others play on. A match (or a field left with fewer
than two bots) stops instead, the failed games not scored."""
SUSPENDED_META = "suspended"
"""The store's meta key of the suspended bots: {name: reason}, JSON. A suspension lasts for the run's lifetime."""
REBUILD_HINT = "run the same command with --rebuild-db (the damaged database is kept beside it)"

OnMoves = Callable[[ScheduledGame, Sequence[tuple[PlayedMove, int]]], None]
"""Told of the moves of a game in progress, a batch at a time: the game, and each move's record and ply number."""
SlotOnMoves = Callable[[Sequence[tuple[PlayedMove, int]]], None]


class Slot(Protocol):
    """What the runner needs of a worker slot: `GameSlot` here, `referee.cluster.dask.ClusterSlot` on a cluster."""

    index: int

    def running(self) -> set[str]: ...

    async def play(self, game: ScheduledGame, settings: GameSettings, on_moves: SlotOnMoves | None) -> GameRecord: ...

    async def aclose(self) -> None: ...


class Players(Protocol):
    """Where a run's games are played: `slots` at once, each slot by its own player (`player(index)`). The runner
    is given its players when it is built (`LocalPlayers` here, `referee.cluster.dask.ClusterPlayers` on a cluster)
    and never asks which kind it has: `tests/test_player_contract.py` holds every kind to one contract."""

    @property
    def slots(self) -> int: ...

    def player(self, index: int) -> Slot: ...


class LocalPlayers:
    """Games played on this machine: `plan.concurrency` slots, each a `GameSlot` (on its own cores with
    --cpu-affinity: slot i gets set i modulo their number)."""

    def __init__(self, plan: RunPlan, log_dir: Path) -> None:
        self.plan = plan
        self.log_dir = log_dir
        self._cores: list[list[int]] = CpuSlots(plan.concurrency).sets if plan.cpu_affinity else [[]]

    @property
    def slots(self) -> int:
        return self.plan.concurrency

    def player(self, index: int) -> Slot:
        cores = self._cores[index % len(self._cores)] or None
        return GameSlot(index, self.plan, self.log_dir, cores, in_process=self.plan.concurrency > 1)


class RunError(Exception):
    """The run cannot go on for a reason that is not a bot's fault; the message says what to do."""


@dataclass
class RunSummary:
    """How a run ended."""

    games_total: int
    games_done: int
    played_now: int  # games finished (and scored) by this run
    void_games: int  # void games this run (played again or left pending)
    ended: Ended  # completed, sprt, interrupted, error (with `error`), incomplete (games left pending)
    elapsed_s: float
    standings: Standings
    statistics: MatchStatistics | None = None  # two-bot runs
    error: str | None = None
    files: list[Path] = field(default_factory=list)
    workers: list[str] = field(default_factory=list)  # on a cluster: a line per worker
    latency: LatencySummary | None = None  # the referee's lateness per move, and games void for it (this run)
    host_wait_s: float = 0.0  # time paused for a busy host (`referee.run.backoff`)
    host_pauses: int = 0
    games_at_once_min: int = 0  # the fewest games at once a busy host brought it down to
    concurrency: int = 0  # games at once at full speed

    @property
    def interrupted(self) -> bool:
        return self.ended == "interrupted"


def game_settings(plan: RunPlan, game: ScheduledGame) -> GameSettings:
    """The settings of one scheduled game: the plan's, from the game's opening, with each bot's own controls (none
    for a bot no longer in the plan: a retired entry forfeiting a knockout's or a Swiss's games)."""
    specs = {spec.name: spec for spec in plan.bots}
    black, white = specs.get(game.black), specs.get(game.white)
    return GameSettings(
        width=plan.width,
        height=plan.height,
        komi=plan.komi,
        time_control=plan.time_control,
        opening=list(game.opening),
        margin_ms=plan.margin_ms,
        **({"black_controls": side_controls(black)} if black is not None else {}),
        **({"white_controls": side_controls(white)} if white is not None else {}),
        adjudication=plan.adjudication,
    )


def forfeit_record(plan: RunPlan, game: ScheduledGame, loser: str, reason: str) -> GameRecord:
    """The record of a game not played because `loser` is suspended or withdrawn: a forfeit by it, no moves."""
    specs = {spec.name: spec for spec in plan.bots}
    settings = game_settings(plan, game)
    position = Position.from_moves(list(game.opening), plan.width, plan.height, plan.komi)
    loser_color: Color = BLACK if game.black == loser else WHITE
    at = datetime.now(UTC)

    def info(name: str) -> BotInfo:
        spec = specs.get(name)
        return BotInfo(name=name, command=list(spec.command) if spec is not None else [])

    return GameRecord(
        game_id=game.game_id,
        black=info(game.black),
        white=info(game.white),
        settings=settings,
        result="0-1" if loser_color == BLACK else "1-0",
        winner=WHITE if loser_color == BLACK else BLACK,
        termination=Termination.PROTOCOL,
        reason=reason,
        loser=loser_color,
        black_score=None,
        white_score=None,
        final_position=position.to_string(),
        started_at=at,
        finished_at=at,
    )


class GameSlot:
    """One worker slot: plays one scheduled game at a time with its own bot processes, reused between games, in
    a play loop of its own (`referee.play.loop`): a thread with one slot, a process each with two or more (two
    loops in one process would share its interpreter lock at every move).

    `play` is the unit the runner calls per game; a distributed runner puts another object with the same
    `play` (and `running` and `aclose`) in its place.
    """

    def __init__(
        self, index: int, plan: RunPlan, log_dir: Path, cores: Sequence[int] | None = None, *, in_process: bool = False
    ) -> None:
        self.index = index
        self._specs = {spec.name: spec for spec in plan.bots}
        self._limits = Limits(handshake_s=plan.start_timeout_s)
        hidden = [spec.dir for spec in plan.bots if spec.dir is not None]
        self._worker: ProcessPlayLoop | None = None
        self._loop: PlayLoop | None = None
        if in_process:
            self._worker = ProcessPlayLoop(f"play-{index}", log_dir, cores, hidden)
        else:
            self._loop = PlayLoop(f"play-{index}", cores)
            self._pool = BotPool(log_dir, self._loop.nursery, cores, hidden=hidden)
        self._running: set[str] = set()

    def running(self) -> set[str]:
        return self._running

    async def play(self, game: ScheduledGame, settings: GameSettings, on_moves: SlotOnMoves | None) -> GameRecord:
        """Play `game` to its end (BotStartError: a bot cannot be started; cancelled: stopped)."""
        black, white = (game.black, self._specs[game.black]), (game.white, self._specs[game.white])
        if self._worker is not None:
            record, self._running = await self._worker.play(
                game.game_id, black, white, settings, on_moves, limits=self._limits
            )
            return record
        assert self._loop is not None
        relay = None if on_moves is None else MoveRelay(on_moves, trio.lowlevel.current_trio_token())
        record, self._running, last = await self._loop.run(self._play_here, game.game_id, black, white, settings, relay)
        if last and on_moves is not None:
            on_moves(last)
        return record

    async def _play_here(
        self,
        game_id: str,
        black: tuple[str, BotSpec],
        white: tuple[str, BotSpec],
        settings: GameSettings,
        relay: MoveRelay | None,
    ) -> tuple[GameRecord, set[str], list[tuple[MoveRecord, int]]]:
        """The game's record, the pool's running bots, and the game's last moves (those not relayed yet: they go
        back with the record, in the same hand-over, not in one of their own)."""
        if relay is None:
            record = await play_in_pool(self._pool, game_id, black, white, settings, None, self._limits)
            return record, self._pool.running(), []
        record, last = await play_batched(self._pool, game_id, black, white, settings, relay, self._limits)
        return record, self._pool.running(), last

    async def aclose(self) -> None:
        """Ask every process to quit and stop the play loop once they are gone."""
        if self._worker is not None:
            await self._worker.aclose()
        elif self._loop is not None:
            self._loop.call_soon(self._pool.close_all)
            await self._loop.aclose()


class Runner:
    """One run of a plan. `run()` plays the missing games; `stop()` (from a signal) ends it early."""

    def __init__(
        self,
        plan: RunPlan,
        *,
        on_event: Callable[[Event], None] | None = None,
        on_moves: OnMoves | None = None,
        players: Players | None = None,
        suspended: Mapping[str, str] | None = None,
    ) -> None:
        self.plan = plan
        self.players = players or LocalPlayers(plan, plan.out_dir / LOG_DIR)
        """Who plays the games: here (the default), or on a cluster (`referee.cluster.dask.ClusterPlayers`)."""
        self.on_event = on_event or (lambda event: None)
        self.on_moves = on_moves
        self.out_dir = plan.out_dir
        self.log_dir = plan.out_dir / LOG_DIR
        self.schedule: list[ScheduledGame] = []
        """Every game scheduled so far that counts or is to be played (not those of retired bots left unplayed)."""
        self._by_number: dict[int, ScheduledGame] = {}
        self._scheduled: list[ScheduledGame] = []  # every game stored, by number from 1
        self._points: dict[int, float] = {}  # Black's points of every done game, by number (the games counted)
        self._field: list[str] = plan.bot_names  # every bot the run has had (retired ones too)
        self._retired: set[str] = set()
        self._suspended: dict[str, str] = {}  # name -> reason; their games are forfeited
        self._suspend_at_start = dict(suspended or {})  # found broken before the run (a program not found)
        self._suspended_dirty = False
        self.scheduler: Scheduler | None = None
        self._in_flight = 0
        self._held_notices: list[str] | None = []  # notices before run_started, said right after it
        self._changed = trio.Event()  # set (and replaced) when games are added, finish, or the run stops
        self._total = 0
        self._two_bots = len(plan.bots) == 2
        self._first_two = tuple(plan.bot_names[:2])  # a two-bot run's bots, the first's points counted
        self._game_scopes: set[trio.CancelScope] = set()
        self._ended: Ended | None = None
        self._error: str | None = None
        self._tally = StandingsTally()  # the same games, counted as they come: standings in ~1 ms at any size
        self._latency = LatencyTally()  # this run's games
        self._counter = PairCounter(plan.sprt)
        self._statistics: HeadToHead | None = None  # two-bot runs: as of the last counted pair
        self._pending: list[ScheduledGame] = []
        self._slot_bots: dict[int, set[str]] = {}
        """Each slot's bots: running, or in the game it plays (`pick_next` leaves a game of those to that slot)."""
        self._voids: dict[int, int] = {}
        self._played_now = 0
        self._started_ok: set[str] = set()
        self._failed_starts: dict[str, int] = {}
        self._voids_now = 0
        self._backoff = backoff.Backoff(
            self._slots,
            max_wait_s=plan.max_host_wait_s,
            calm_for_s=backoff.CALM_FOR_S,
            ramp_after_s=backoff.RAMP_AFTER_S,
            max_calm_voids=backoff.MAX_CALM_VOIDS,
        )
        self.host_watch = backoff.HostWatch()
        """Reads the host while the run backs off (a test puts a stand-in here)."""
        self._backing_off = trio.Event()
        """Set when the run starts to back off: the host watch sleeps until then (`_watch_host`)."""
        self._calm_at_start: dict[int, bool] = {}
        self._last_host_status = -math.inf
        self._last_standings_write = 0.0
        self._last_standings_update = -math.inf
        self._standings_every = STANDINGS_UPDATE_INTERVAL_S
        self._started = 0.0
        self._store: RunStore | None = None
        self._write_lock = trio.Lock()
        self.finishers: list[Callable[[RunSummary], list[Path]]] = []
        """Called with the summary at the end of every run (completed, decided, stopped or failed), after the
        standings and games.jsonl are written; the files they write are added to the summary (a report, ...)."""

    def stop(self, ended: Ended = "interrupted", error: str | None = None) -> None:
        """Stop playing: games in progress are abandoned (not scored) and their bots stopped.

        Only the games are cancelled: each worker then closes its own bot processes after its game has
        unwound, so a process is never told to quit while a game is still writing to it.
        """
        if self._ended is None:
            self._ended, self._error = ended, error
        for scope in self._game_scopes:
            scope.cancel()
        self._wake()

    def _wake(self) -> None:
        """Tell workers waiting for games that something changed."""
        self._changed.set()
        self._changed = trio.Event()

    # -- the format ---------------------------------------------------------------------------------

    @property
    def _pool(self) -> bool:
        """Whether bots may join or retire between runs: a tournament without an SPRT."""
        return self.plan.kind == "tournament" and self.plan.sprt is None

    def _progress(self) -> Progress:
        from referee.run.formats import fixed_field

        fixed = fixed_field(self.plan)
        bots = self._field if fixed else [name for name in self._field if name not in self._retired]
        withdrawn = frozenset(self._suspended) | (frozenset(self._retired) if fixed else frozenset())
        return Progress(bots, self._scheduled, self._points, withdrawn)

    def _next_games(self) -> list[ScheduledGame]:
        """Ask the format for games and store them (in a worker thread, under the write lock)."""
        assert self.scheduler is not None
        games = self.scheduler.next_games(self._progress())
        self._require_store().add_games(games)
        return games

    def _add_scheduled(self, games: list[ScheduledGame]) -> None:
        from referee.run.formats import fixed_field

        fixed = fixed_field(self.plan)
        if self.plan.format.is_fixed:
            games = sorted(games, key=playing_order)  # game pairs back to back; numbers kept
        for game in games:
            self._scheduled.append(game)
            retired = game.black in self._retired or game.white in self._retired
            if retired and not fixed and game.number not in self._points:
                continue  # a retired bot's game not played: it is not played now either (a fixed field forfeits it)
            self.schedule.append(game)
            self._by_number[game.number] = game
            if game.number not in self._points:
                self._pending.append(game)
        if games:
            self._wake()

    def _update_total(self) -> None:
        assert self.scheduler is not None
        expected = self.scheduler.expected_total(self._progress())
        self._total = max(len(self.schedule), expected if not self.plan.format.is_fixed else 0)

    async def _extend(self) -> None:
        """After a game: the format's next games, if the results so far let it pair any."""
        async with self._write_lock:
            games = await trio.to_thread.run_sync(self._next_games)
            self._add_scheduled(games)
            self._update_total()

    def _open_format(self, store: RunStore) -> None:
        """The field, the retired and suspended bots and the scheduler, from the store and the plan; then the games
        already scheduled and the ones the format adds now. StoreError when the stored games cannot go on."""
        from referee.run.formats import fixed_field, make_scheduler

        fixed = fixed_field(self.plan)
        change = store.start(self.plan.fingerprint, None, pool=self._pool, latecomers=not fixed)
        # Before any result is read: the two copies compared, damage named and repaired (referee.run.recovery).
        self._rewrite_games_file()
        self._field = change.field
        self._retired = set(change.retired)
        stored = store.get_meta(SUSPENDED_META)
        self._suspended = json.loads(stored) if stored else {}
        for name, reason in self._suspend_at_start.items():
            if name not in self._suspended:
                self._suspended[name] = reason
                self._suspended_dirty = True
        fingerprint = store.fingerprint() or {}
        ratings = {bot["name"]: float(bot["rating"]) for bot in fingerprint.get("bots", []) if "rating" in bot}
        try:
            self.scheduler = make_scheduler(self.plan, self._field if fixed else self._progress().bots, ratings)
        except ValueError as error:
            raise StoreError(f"{self.out_dir}: {error}") from None
        # The games done before this run, read once: their points (for the format), standings and pairs.
        for done in store.done_games():
            self._points[done.number] = result_points(done.result)
            self._tally.add_stored(*done[2:8])
            self._count_pair(done, done.result, replaying=True)
        scheduled = list(store.scheduled().values())
        if [game.number for game in scheduled] != list(range(1, len(scheduled) + 1)):
            raise StoreError(f"{database_path(self.out_dir)}: the stored games are not numbered 1 to {len(scheduled)}")
        self._add_scheduled(scheduled)
        check = getattr(self.scheduler, "check", None)
        if check is not None:
            try:
                check(self._progress())
            except ScheduleError as error:
                raise StoreError(f"{self.out_dir} {error}") from None
        new = self._next_games()
        self._add_scheduled(new)
        self._update_total()
        for name in change.added:
            count = sum(name in (game.black, game.white) for game in new)
            self._notice(f"added latecomer {name}: {count} games scheduled")
        for name in change.retired:
            if fixed:
                self._suspended.setdefault(name, "retired (removed from the config)")
                continue
            played = sum(name in (game.black, game.white) for game in self.schedule)
            self._notice(f"retired {name}: no new games; its {played} games played still count")
        for name, reason in self._suspended.items():
            self._notice(f"suspended {name}: {reason}; its remaining games are forfeited")

    def _notice(self, text: str) -> None:
        """Say `text` (a `notice` event), after `run_started`: the ones found while opening wait for it."""
        if self._held_notices is not None:
            self._held_notices.append(text)
        else:
            self.on_event(RunNotice(type="notice", time=now(), text=text))

    @property
    def _done(self) -> int:
        """The games done (scored and counted): before this run and by it."""
        return len(self._points)

    @property
    def decided(self) -> bool:
        return self._counter.verdict is not None

    async def run(self) -> RunSummary:
        """Play every pending game. StoreError: this output directory cannot be used for this plan."""
        self._started = self._last_standings_write = time.monotonic()
        refuse_old_match_directory(self.out_dir)
        try:
            prepare_output_dir(self.log_dir)  # the output directory too
        except OutputDirError as error:
            raise StoreError(str(error)) from None
        try:
            opened = RunStore(database_path(self.out_dir))
        except OSError as error:  # the lock file, on a disk already full
            if not is_disk_full(error):
                raise
            raise damaged_database(database_path(self.out_dir), error) from None
        with opened as store:
            self._store = store
            try:
                # Before games.jsonl is rewritten from the database: it must hold no game the database lacks
                # (a database deleted, emptied or replaced), or the rewrite would lose them.
                check_nothing_lost(self.out_dir, store, rebuild_hint=REBUILD_HINT)
                self._open_format(store)
                if self._two_bots and any(self._counter.pairs):  # the statistics once, not after every pair
                    first, second = self.plan.bot_names
                    self._statistics = head_to_head(first, second, self._counter.statistics())
            except LostGamesError as error:
                raise StoreError(str(error)) from None
            except (sqlite3.DatabaseError, OSError) as error:
                # Damaged past its header (the open worked): found here, where every game is read. Or a full disk.
                if isinstance(error, OSError) and not is_disk_full(error):
                    raise
                raise damaged_database(database_path(self.out_dir), error) from None
            if self.decided:
                self._pending = []
            self.on_event(
                RunStarted(
                    type="run_started",
                    time=now(),
                    kind=self.plan.kind,
                    format=str(self.plan.format),
                    bots=self.plan.bot_names,
                    games_total=self._total,
                    games_done=self._done,
                    concurrency=self._slots,
                    out_dir=str(self.out_dir),
                    width=self.plan.width,
                    height=self.plan.height,
                    komi=self.plan.komi,
                    time_control=self.plan.time_control,
                )
            )
            held, self._held_notices = self._held_notices or [], None
            for text in held:
                self._notice(text)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._watch_host)
                    room = len(self._pending) if self.plan.format.is_fixed else self._total - self._done
                    async with trio.open_nursery() as workers:
                        for index in range(min(self._slots, room)):
                            workers.start_soon(self._worker, index)
                    nursery.cancel_scope.cancel()  # the watch: every game is done
            except BaseException as error:
                full = disk_full_in(error)
                if full is None:
                    raise
                # A full disk is no bug: one line, not a traceback. Every game committed before it is safe.
                self._ended = "error"
                self._error = (
                    f"the disk holding {self.out_dir} is full ({full}): stopped after {self._done} of"
                    f" {self._total} games; the games recorded are safe in {database_path(self.out_dir)}. Free"
                    " some space and run the same command to resume"
                )
            finally:
                # Also after an error or a stop: the standings so far are written, games.jsonl is in order.
                if self._two_bots:  # the final figures count every game, paired or not
                    first, second = self.plan.bot_names
                    self._statistics = head_to_head(first, second, self._counter.statistics())
                standings = self._standings()
                files = self._write_outputs(standings)
            ended: Ended = self._ended or ("sprt" if self.decided else "completed")
            if ended == "completed" and self._pending:
                ended = "incomplete"
            if ended == "completed":
                self._total = self._done  # a format that pairs from results may end before its estimate
            summary = RunSummary(
                games_total=self._total,
                games_done=self._done,
                played_now=self._played_now,
                void_games=self._voids_now,
                ended=ended,
                elapsed_s=time.monotonic() - self._started,
                standings=standings,
                statistics=self._counter.statistics() if self._two_bots else None,
                error=self._error,
                files=files,
                latency=self._latency.summary(),
                host_wait_s=self._backoff.waited_now(time.monotonic()),
                host_pauses=self._backoff.pauses,
                games_at_once_min=self._backoff.lowest,
                concurrency=self._slots,
            )
            for finish in self.finishers:
                summary.files.extend(finish(summary))
            self.on_event(
                RunFinished(
                    type="run_finished",
                    time=now(),
                    interrupted=summary.interrupted,
                    ended=summary.ended,
                    games_done=summary.games_done,
                    games_total=summary.games_total,
                    elapsed_s=round(summary.elapsed_s, 3),
                    out_dir=str(self.out_dir),
                    standings=standing_rows(standings),
                    statistics=self._head_to_head(),
                    latency=summary.latency,
                    host_wait_s=round(summary.host_wait_s, 1),
                )
            )
            return summary

    # -- worker slots ------------------------------------------------------------------------------

    @property
    def _slots(self) -> int:
        return self.players.slots

    async def _worker(self, index: int) -> None:
        slot = self.players.player(index)
        try:
            while self._ended is None:
                if not self._pending:
                    if self._in_flight == 0:
                        break  # nothing left and nothing running that could let the format pair more
                    await self._changed.wait()
                    continue
                if not self._backoff.admits(index):
                    await self._changed.wait()  # a busy host: fewer games at once, or none for now
                    continue
                elsewhere = (bots for other, bots in self._slot_bots.items() if other != index)
                at = pick_next(self._pending, slot.running(), 2 * self.plan.concurrency, elsewhere)
                game = self._pending.pop(at)
                self._slot_bots[index] = slot.running() | {game.black, game.white}
                self._in_flight += 1
                try:
                    withdrawn = self._withdrawn(game)
                    if withdrawn is not None:
                        await self._forfeit(game, withdrawn)
                    else:
                        await self._play(slot, game)
                finally:
                    self._slot_bots[index] = set(slot.running())
                    self._in_flight -= 1
                    self._wake()
        finally:
            # Every process is asked to quit and waited for, on a normal end and on a stop alike.
            with trio.CancelScope(shield=True):
                await slot.aclose()

    async def _play(self, slot: Slot, game: ScheduledGame) -> None:
        # Nothing is written to the database until the game ends: a game that does not finish (a stop, a failure,
        # the referee killed) was never anything but pending there, and is played again.
        self.on_event(
            GameStarted(
                type="game_started",
                time=now(),
                number=game.number,
                game_id=game.game_id,
                black=game.black,
                white=game.white,
                opening=list(game.opening),
                slot=slot.index,
            )
        )
        on_moves = self.on_moves
        started = time.monotonic()
        last = self._backoff.last
        self._calm_at_start[game.number] = not self._backoff.backing_off or (last is not None and last.calm)
        record: GameRecord | None = None
        try:
            with trio.CancelScope() as scope:
                self._game_scopes.add(scope)
                if self._ended is not None:
                    scope.cancel()  # stopped while this game was being set up
                record = await slot.play(
                    game,
                    game_settings(self.plan, game),
                    None if on_moves is None else functools.partial(on_moves, game),
                )
        finally:
            self._game_scopes.discard(scope)
        if record is None:
            return  # stopped mid-game (a signal, the SPRT's verdict): abandoned, not scored, pending for the next run
        if self._failed_start(game, record, time.monotonic() - started):
            return
        await self._commit(game, record, started)

    def _withdrawn(self, game: ScheduledGame) -> str | None:
        """The suspended (or, in a fixed field, retired) bot of `game`, if it has one: it forfeits the game."""
        return next((name for name in (game.black, game.white) if name in self._suspended), None)

    async def _forfeit(self, game: ScheduledGame, loser: str) -> None:
        """Record a suspended bot's game as its forfeit, without starting anything."""
        record = forfeit_record(self.plan, game, loser, f"{loser} is suspended: {self._suspended[loser]}")
        await self._commit(game, record, time.monotonic())

    async def _commit(self, game: ScheduledGame, record: GameRecord, started: float) -> None:
        # Shielded: a stop that comes now must not lose a game that has finished.
        with trio.CancelScope(shield=True):
            async with self._write_lock:
                if self._ended == "sprt":
                    return  # the SPRT decided while this game was finishing: it is not counted (nor kept)
                # Counted under the lock: no other game can commit between this one and the SPRT's look at it.
                counts, pair_done = self._save(game, record)
                if counts:
                    self._points[game.number] = result_points(record.result)
                    self._tally.add(
                        ScoredGame(
                            game.black,
                            game.white,
                            record.result,
                            record.termination,
                            record.black.off_turn_cpu_ms,
                            record.white.off_turn_cpu_ms,
                        )
                    )
                if self.decided:
                    self.stop("sprt")
        await self._finished(game, record, counts, pair_done, time.monotonic() - started)

    def _failed_start(self, game: ScheduledGame, record: GameRecord, duration: float) -> bool:
        """Whether `record` is a bot failing to start before any start of it succeeded in this run.

        Such a game is not scored but played again; at MAX_FAILED_STARTS in a row the run stops, naming the
        bot, the reason, its last stderr line and its log. A bot that once completed its handshake is known
        to start: a later failure is an ordinary forfeit.
        """
        for info in (record.black, record.white):
            if info.announced_name is not None:
                self._started_ok.add(info.name)
        loser = {"black": record.black, "white": record.white}.get(str(record.loser))
        if loser is None or loser.name in self._started_ok or "failed the handshake" not in record.reason:
            return False
        if loser.name in self._suspended:
            return False  # suspended meanwhile (by another slot's game): this failure is one of its forfeits
        failures = self._failed_starts[loser.name] = self._failed_starts.get(loser.name, 0) + 1
        line, log = forfeit_stderr(record)
        playing = [name for name in self._progress().bots if name not in self._suspended]
        if failures >= MAX_FAILED_STARTS and self._pool and len(playing) > 2:
            # Suspended: this failure is its forfeit, and so are its remaining games; the others play on.
            details = "".join((f"; its last stderr line: {line}" if line else "", f"; its log: {log}" if log else ""))
            self._suspended[loser.name] = f"failed to start {failures} times in a row ({record.reason}{details})"
            self._suspended_dirty = True
            self._notice(f"suspended {loser.name}: {self._suspended[loser.name]}; its remaining games are forfeited")
            return False
        if failures >= MAX_FAILED_STARTS:
            details = "".join((f"; its last stderr line: {line}" if line else "", f"; its log: {log}" if log else ""))
            self.stop(
                "error",
                f"bot {loser.name!r} failed to start {failures} times in a row ({record.reason}{details}); fix it"
                " and run the same command: those games were not scored",
            )
        else:
            self._pending.insert(0, game)
        self._announce(game, record, duration, scored=False)
        return True

    def _announce(self, game: ScheduledGame, record: GameRecord, duration: float, *, scored: bool) -> None:
        """The game_finished event of a game the referee is done with (scored, void, or a failed start)."""
        self.on_event(
            GameFinished(
                type="game_finished",
                time=now(),
                number=game.number,
                game_id=game.game_id,
                black=game.black,
                white=game.white,
                result=record.result if scored else "*",
                termination=record.termination,
                reason=record.reason,
                moves=len(record.moves),
                duration_s=round(duration, 3),
                scored=scored,
                games_done=self._done,
                games_total=self._total,
                stderr_tail=record.stderr_tail[-10:] if record.termination.is_forfeit else [],
                stderr_log=forfeit_stderr(record)[1],
                worker=record.worker,
            )
        )

    def _save(self, game: ScheduledGame, record: GameRecord) -> tuple[bool, bool]:
        """Commit a finished game, append it to games.jsonl and count its pair (under the write lock, in this loop:
        see `_write`). Whether it counts now, and whether it completed a pair."""
        text, line = stored_form(record)  # once, for the database and games.jsonl alike (from a play worker: its own)
        if self._suspended_dirty:
            self._require_store().set_meta(SUSPENDED_META, json.dumps(self._suspended, sort_keys=True))
            self._suspended_dirty = False
        counts = self._require_store().record_game(game.number, record, text, line)
        if not counts:
            return False, False
        append_line(self.out_dir / GAMES_FILE, text + "\n")
        return True, self._count_pair(game, record.result)

    async def _write(self, function: Callable[..., object], *args: object) -> None:
        """Run a file or database write, one at a time (the games share one SQLite connection), in this loop.

        No game is played in this loop: each slot plays in a loop of its own (a thread, or a play worker process,
        `referee.play.loop`), and a bot's move is timed there, by the kernel's stamp where there is one. A slow
        write (a WAL checkpoint or an fsync on a busy disk can take tens of milliseconds; a commit usually ~35 us)
        delays only the coordinator's own bookkeeping, and SQLite lets go of the interpreter lock while it waits
        on the disk. A hop to a worker thread and back for each write cost the coordinator more than the writes
        did (two or three a game: about a fifth of its CPU per move with instant bots, measured).
        """
        async with self._write_lock:
            function(*args)

    def _count_pair(self, game: ScheduledGame | DoneGame, result: str, *, replaying: bool = False) -> bool:
        """Count a committed game of a two-bot run; True when it completed a game pair (the statistics are then
        brought up to date)."""
        if not self._two_bots:
            return False
        first, second = self._first_two
        if (game.black, game.white) == (first, second):
            points = result_points(result)
        elif (game.black, game.white) == (second, first):
            points = 1.0 - result_points(result)
        else:
            return False  # a game of a retired bot
        pair_done = self._counter.add(CountedGame(game.number, game.round // 2, points))
        if pair_done and not replaying:
            self._statistics = head_to_head(first, second, self._counter.statistics())
        return pair_done

    async def _finished(
        self, game: ScheduledGame, record: GameRecord, counts: bool, pair_done: bool, duration: float
    ) -> None:
        scored = record.termination.is_scored
        self._latency.add(record)
        calm_at_start = self._calm_at_start.pop(game.number, True)
        if counts:
            self._played_now += 1
            self._backoff.scored(game.number)
        elif not scored and is_void_for_lag(record):
            self._voids_now += 1
            self._pending.insert(0, game)
            step = self._backoff.void(time.monotonic(), game.number, calm_at_start=calm_at_start)
            self._host_step(step, f"game {game.game_id} ", record.reason)
        elif not scored:
            self._voids_now += 1
            voids = self._voids[game.number] = self._voids.get(game.number, 0) + 1
            if voids >= MAX_VOIDS_PER_GAME:
                self.stop(
                    "error",
                    f"game {game.game_id} was void {voids} times in a row (last: {record.reason}): this machine"
                    " cannot play it fairly now (too loaded, short of memory, or a referee fault); nothing void"
                    " was scored. Free the machine (or lower --concurrency) and run the same command to resume;"
                    f" if it persists, report it with {database_path(self.out_dir)}",
                )
            else:
                self._pending.insert(0, game)
        self._announce(game, record, duration, scored=scored)
        statistics = self._statistics
        if pair_done and statistics is not None:
            self.on_event(
                StatisticsUpdated(type="statistics_updated", time=now(), games_done=self._done, statistics=statistics)
            )
        if counts and not self.plan.format.is_fixed:
            await self._extend()  # a fixed schedule was whole from the start: no need to ask after every game
        finishing = not self._pending and self._in_flight <= 1
        if counts and (finishing or time.monotonic() - self._last_standings_update >= self._standings_every):
            self._last_standings_update = started = time.monotonic()
            standings = self._standings()
            took = time.monotonic() - started
            self._standings_every = max(STANDINGS_UPDATE_INTERVAL_S, took / STANDINGS_SHARE)
            self.on_event(
                StandingsUpdated(
                    type="standings_updated",
                    time=now(),
                    games_done=self._done,
                    games_total=self._total,
                    standings=standing_rows(standings),
                )
            )
            # After the last game `run` writes every output file anyway.
            if not finishing and time.monotonic() - self._last_standings_write >= STANDINGS_WRITE_INTERVAL_S:
                self._last_standings_write = time.monotonic()
                await self._write(write_standings, standings, self.out_dir)

    # -- a busy host (`referee.run.backoff`) ---------------------------------------------------------------

    def _host_step(self, step: backoff.Step, game: str = "", last_reason: str | None = None) -> None:
        """Act on the back-off policy's step: stop (past its limits), or tell of and apply a new load."""
        at = time.monotonic()
        if step.give_up is not None:
            last = f" (last: {last_reason})" if last_reason else ""
            limit = f" --max-host-wait is {backoff.describe_duration(self.plan.max_host_wait_s)}." if not game else ""
            self.stop(
                "error",
                f"{game}{step.give_up}{last}: this machine cannot play it fairly now (too loaded, short of"
                f" memory, or a referee fault); nothing void was scored.{limit} Free the machine (or lower"
                f" --concurrency) and run the same command to resume; if it persists, report it with"
                f" {database_path(self.out_dir)}",
            )
            self._wake()
            return
        if step.changed or at - self._last_host_status >= HOST_STATUS_INTERVAL_S:
            self._last_host_status = at
            self.on_event(
                HostBusy(
                    type="host_busy",
                    time=now(),
                    games_at_once=step.games_at_once,
                    concurrency=self._slots,
                    paused=step.paused,
                    paused_s=round(self._backoff.waited_now(at) - self._backoff.waited_s, 1),
                    waited_s=round(self._backoff.waited_now(at), 1),
                    pressure_pct=None if self._backoff.last is None else self._backoff.last.pressure_pct,
                    lateness_ms=None if self._backoff.last is None else self._backoff.last.lateness_ms,
                    voids=self._backoff.voids,
                    status=self._backoff.status(at) if self._backoff.backing_off else "host calm: back to full speed",
                )
            )
        if step.changed:
            self._wake()
            if self._backoff.backing_off:
                self._backing_off.set()

    async def _watch_host(self) -> None:
        """About once a second while the run backs off: a look at the host, for the policy to lower, pause,
        resume or raise the games played at once. Asleep otherwise: a wake a second for nothing cost the referee
        about 0.5 ms of CPU each while its bots thought."""
        while True:
            if not self._backoff.backing_off:
                self._backing_off = trio.Event()
                await self._backing_off.wait()
            await trio.sleep(HOST_READING_INTERVAL_S)
            if not self._backoff.backing_off or self._ended is not None:
                continue
            reading = await self.host_watch.read(time.monotonic())
            self._host_step(self._backoff.reading(reading))

    # -- outputs -----------------------------------------------------------------------------------

    def _require_store(self) -> RunStore:
        assert self._store is not None, "the store is open while the run runs"
        return self._store

    def _head_to_head(self) -> HeadToHead | None:
        if not self._two_bots:
            return None
        if self._statistics is None:  # no pair yet: the games counted so far
            first, second = self.plan.bot_names
            return head_to_head(first, second, self._counter.statistics())
        return self._statistics

    def _standings(self) -> Standings:
        anchor = self.plan.anchor if self.plan.anchor is not None and self.plan.anchor.name in self._field else None
        standings = with_time_odds(self._tally.standings(self._field, anchor=anchor), self.plan.bots)
        summary = None if self.scheduler is None else self.scheduler.summary(self._progress())
        notes = [f"{name}: suspended, {reason}" for name, reason in self._suspended.items()]
        notes += [
            f"{name}: retired (no new games; its games count)" for name in self._retired if name not in self._suspended
        ]
        if notes:
            from referee.stats.standings import FormatSummary

            summary = summary or FormatSummary(format=str(self.plan.format))
            summary = summary.model_copy(update={"notes": [*summary.notes, *notes]})
        standings = standings.model_copy(update={"title": self.plan.title, "format_summary": summary})
        statistics = self._head_to_head()
        return standings if statistics is None else standings.model_copy(update={"head_to_head": statistics})

    def _rewrite_games_file(self) -> None:
        """games.jsonl from the database, in commit order: no duplicates, no half line from a killed run."""
        sync_games_file(self.out_dir, self._require_store())

    def _write_outputs(self, standings: Standings) -> list[Path]:
        try:
            self._rewrite_games_file()
            return [*write_standings(standings, self.out_dir), self.out_dir / GAMES_FILE]
        except (OSError, sqlite3.Error) as error:
            if not is_disk_full(error):
                raise
            # Each file is replaced whole or not at all, so the old ones stand; the database has every game.
            return []


def forfeit_stderr(record: GameRecord) -> tuple[str | None, str | None]:
    """A forfeit's last line of the forfeiting bot's stderr and the path of its log (None, None otherwise)."""
    if not record.termination.is_forfeit or record.loser is None:
        return None, None
    loser = record.black if record.loser == "black" else record.white
    line = next((text.strip() for text in reversed(record.stderr_tail) if text.strip()), None)
    return line, loser.stderr_log


def rebuild_from_games_file(plan: RunPlan) -> Rebuilt:
    """`--rebuild-db`: a new database from games.jsonl (referee.run.recovery: the lock first, every line audited,
    the format's games replayed from the recorded results)."""
    return rebuild_database_from_file(plan.out_dir, plan.fingerprint, lambda records: replay_schedule(plan, records))


def replay_schedule(plan: RunPlan, records: Sequence[GameRecord]) -> list[ScheduledGame]:
    """The games the plan's format schedules given `records` (games.jsonl): a fixed schedule whole; a Swiss or
    knockout pairing replayed from the recorded results, round by round, as far as they go. RecoveryError for
    an adaptive run (its choices depended on which results had come in, which games.jsonl does not keep)."""
    from referee.run.formats import make_scheduler

    if plan.format.is_fixed:
        if plan.format is Format.PAIRINGS:
            return schedule_pairs(list(plan.pairs), plan.games_per_pairing, plan.openings)
        return make_schedule(plan.bot_names, plan.format, plan.games_per_pairing, plan.openings, seeds=plan.seeds)
    if plan.format is Format.ADAPTIVE:
        raise RecoveryError(
            "an adaptive run cannot be rebuilt from games.jsonl (which games it chose depended on the order results"
            " came in); start a new run in another directory (--out DIR), or restore its database"
        )
    scored = {record.game_id: record for record in records if record.termination.is_scored}
    ratings = {bot["name"]: float(bot["rating"]) for bot in plan.fingerprint["bots"] if "rating" in bot}
    scheduler = make_scheduler(plan, plan.bot_names, ratings)
    scheduled: list[ScheduledGame] = []
    points: dict[int, float] = {}
    while True:
        new = scheduler.next_games(Progress(plan.bot_names, scheduled, points))
        if not new:
            return scheduled
        scheduled.extend(new)
        for game in new:
            record = scored.get(game.game_id)
            if record is not None and (record.black.name, record.white.name) == (game.black, game.white):
                points[game.number] = result_points(record.result)


def refuse_old_match_directory(out_dir: Path) -> None:
    """A directory with the records of a match from before matches had a database cannot be resumed or mixed."""
    if (out_dir / "match.json").exists() and not database_path(out_dir).exists():
        raise StoreError(
            f"{out_dir} holds a match from an older alternator (match.json and game files, no {DB_NAME}); it"
            " cannot be resumed or mixed with a new run: choose another output directory (--out DIR)"
        )
