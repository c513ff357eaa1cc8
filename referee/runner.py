"""The one runner of matches and tournaments: a schedule played by N worker slots, every game committed.

`alternator match` (a schedule of two bots) and `alternator tournament` are thin front-ends over
`Runner`. Each worker slot takes the next pending game, plays it (`GameSlot.play`: the separable unit
"one scheduled game, given its settings and bots", with the slot's bot processes reused) and commits it
before taking another. A slot keeps its bot processes open between games (one per bot name); it
restarts one only when a fault left it `broken`, and prefers games whose bots it already has running.

The database (`referee.store`) is the truth: a run that is killed or stopped resumes from it, playing
only the games that are missing, and `games.jsonl` is rewritten from it. One void policy: a void game
(the referee's own failure, e.g. the host too loaded to time the bots fairly) is never scored and is
played again at once; a game void `MAX_VOIDS_PER_GAME` times in one run stops the run with a message
about the machine. Everything a person or a program sees (progress, events) goes through `on_event`.

Two-bot runs count game pairs (one opening, colours swapped) and, with an SPRT, stop at its verdict:
pairs are scheduled in order, a pair counts when both its games are committed (in whatever order they
finish), the LLR is evaluated after every counted pair, and at a verdict the games in progress are
stopped and not scored. `referee.sprt.count_in_order` replays the same counting from the database, so
the verdict and every figure can be reproduced from it alone.

A referee killed with `kill -9` cannot stop its bots. They see their stdin close (EOF) and must exit:
the protocol asks it of every bot, and the sample bots and the kit do. (A sandboxed bot dies with the
referee anyway: bubblewrap's --die-with-parent, see `referee.sandbox`.)
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import trio

from protocol.rules import result_points
from referee.botspec import BotSpec
from referee.config import RunPlan
from referee.containment import CpuSlots
from referee.controls import side_controls
from referee.events import (
    Event,
    GameFinished,
    GameStarted,
    StandingsUpdated,
    StatisticsUpdated,
    TournamentFinished,
    TournamentStarted,
    now,
    standing_rows,
)
from referee.files import (
    OutputDirError,
    append_line,
    disk_full_in,
    is_disk_full,
    prepare_output_dir,
)
from referee.game import Limits
from referee.latency import LatencySummary, LatencyTally
from referee.match import Ended, HeadToHead, head_to_head
from referee.play import BotPool, MoveRelay, PlayLoop, ProcessPlayLoop, play_in_pool
from referee.record import GameRecord, GameSettings, MoveRecord, Termination
from referee.recovery import (
    GAMES_FILE as GAMES_FILE,
)
from referee.recovery import (
    LostGamesError,
    Rebuilt,
    check_nothing_lost,
    sync_games_file,
)
from referee.recovery import (
    rebuild_from_games_file as rebuild_database_from_file,
)
from referee.schedule import ScheduledGame, make_schedule, pick_next
from referee.sprt import CountedGame, MatchStatistics, PairCounter
from referee.standings import ScoredGame, Standings, StandingsTally, write_standings
from referee.store import DB_NAME, RunStore, StoreError, damaged_database
from referee.time_odds import with_time_odds

LOG_DIR = "logs"
MAX_VOIDS_PER_GAME = 3
"""A void game is played again at once; void this many times in one run, the run stops: the machine (its
load, its memory, the referee itself) is not fit to play it, and playing on would only waste the bots' time."""
STANDINGS_UPDATE_INTERVAL_S = 1.0
"""Standings are recomputed (and `standings_updated` sent) at most this often while games run, and after
the last game: the Elo fit runs on the thread that times every move of every game in progress."""
STANDINGS_WRITE_INTERVAL_S = 5.0
MAX_FAILED_STARTS = 3
"""A bot that fails to start (its handshake) this many times in a row, before any start of it succeeded in this run,
stops the run: that is a set-up problem (a wrong command, output never flushed), not a game, and playing on would
forfeit every game of the bot. Those failed games are not scored."""
REBUILD_HINT = "run the same command with --rebuild-db (the damaged database is kept beside it)"

if TYPE_CHECKING:
    from referee.cluster import Cluster

OnMove = Callable[[ScheduledGame, MoveRecord, int], None]
"""Told of each move of a game in progress: the game, the move's record and its ply number."""
SlotOnMove = Callable[[MoveRecord, int], None]


class Slot(Protocol):
    """What the runner needs of a worker slot: `GameSlot` here, `referee.cluster.ClusterSlot` on a cluster."""

    index: int

    def running(self) -> set[str]: ...

    async def play(self, game: ScheduledGame, settings: GameSettings, on_move: SlotOnMove | None) -> GameRecord: ...

    async def aclose(self) -> None: ...


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

    @property
    def interrupted(self) -> bool:
        return self.ended == "interrupted"


def game_settings(plan: RunPlan, game: ScheduledGame) -> GameSettings:
    """The settings of one scheduled game: the plan's, from the game's opening, with each bot's own controls."""
    specs = {spec.name: spec for spec in plan.bots}
    return GameSettings(
        width=plan.width,
        height=plan.height,
        komi=plan.komi,
        time_control=plan.time_control,
        opening=list(game.opening),
        margin_ms=plan.margin_ms,
        black_controls=side_controls(specs[game.black]),
        white_controls=side_controls(specs[game.white]),
        adjudication=plan.adjudication,
    )


class GameSlot:
    """One worker slot: plays one scheduled game at a time with its own bot processes, reused between games, in
    a play loop of its own (`referee.play`): a thread with one slot, a process each with two or more (two
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

    async def play(self, game: ScheduledGame, settings: GameSettings, on_move: SlotOnMove | None) -> GameRecord:
        """Play `game` to its end (BotStartError: a bot cannot be started; cancelled: stopped)."""
        black, white = (game.black, self._specs[game.black]), (game.white, self._specs[game.white])
        if self._worker is not None:
            record, self._running = await self._worker.play(
                game.game_id, black, white, settings, on_move, limits=self._limits
            )
            return record
        assert self._loop is not None
        relay = None if on_move is None else MoveRelay(on_move, trio.lowlevel.current_trio_token())
        record, self._running = await self._loop.run(self._play_here, game.game_id, black, white, settings, relay)
        return record

    async def _play_here(
        self,
        game_id: str,
        black: tuple[str, BotSpec],
        white: tuple[str, BotSpec],
        settings: GameSettings,
        relay: MoveRelay | None,
    ) -> tuple[GameRecord, set[str]]:
        try:
            record = await play_in_pool(
                self._pool, game_id, black, white, settings, None if relay is None else relay.push, self._limits
            )
        finally:
            if relay is not None:
                relay.flush()
        return record, self._pool.running()

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
        on_move: OnMove | None = None,
        cluster: Cluster | None = None,
    ) -> None:
        self.plan = plan
        self.cluster = cluster
        """Where games are played when not here: each slot submits its game to the cluster and waits."""
        self.on_event = on_event or (lambda event: None)
        self.on_move = on_move
        self.out_dir = plan.out_dir
        self.log_dir = plan.out_dir / LOG_DIR
        self.schedule = make_schedule(plan.bot_names, plan.format, plan.games_per_pairing, plan.openings)
        self._by_number = {game.number: game for game in self.schedule}
        self._two_bots = len(plan.bots) == 2
        self._game_scopes: set[trio.CancelScope] = set()
        self._ended: Ended | None = None
        self._error: str | None = None
        self._results: list[ScoredGame] = []
        self._tally = StandingsTally()  # the same games, counted as they come: standings in ~1 ms at any size
        self._latency = LatencyTally()  # this run's games
        self._counter = PairCounter(plan.sprt)
        self._statistics: HeadToHead | None = None  # two-bot runs: as of the last counted pair
        self._pending: list[ScheduledGame] = []
        self._voids: dict[int, int] = {}
        self._played_now = 0
        self._started_ok: set[str] = set()
        self._failed_starts: dict[str, int] = {}
        self._voids_now = 0
        self._last_standings_write = 0.0
        self._last_standings_update = -math.inf
        self._started = 0.0
        self._store: RunStore | None = None
        self._write_lock = trio.Lock()
        self._cores: list[list[int]] = CpuSlots(plan.concurrency).sets if plan.cpu_affinity else [[]]
        """--cpu-affinity: the cores of each slot (slot i has set i modulo their number); [[]]: not pinned."""
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
            opened = RunStore(self.out_dir / DB_NAME)
        except OSError as error:  # the lock file, on a disk already full
            if not is_disk_full(error):
                raise
            raise damaged_database(self.out_dir / DB_NAME, error) from None
        with opened as store:
            self._store = store
            try:
                # Before games.jsonl is rewritten from the database: it must hold no game the database lacks
                # (a database deleted, emptied or replaced), or the rewrite would lose them.
                check_nothing_lost(self.out_dir, store, rebuild_hint=REBUILD_HINT)
                store.start(self.plan.fingerprint, self.schedule)
                # Before any game is counted: the two copies compared, damage named and repaired (referee.recovery).
                self._rewrite_games_file()
                for number, black, white, result, termination, *cpu in store.finished():
                    self._results.append(ScoredGame(black, white, result, Termination(termination), *cpu))
                    self._tally.add(self._results[-1])
                    self._count_pair(self._by_number[number], result, replaying=True)
                if self._two_bots and any(self._counter.pairs):  # the statistics once, not after every pair
                    first, second = self.plan.bot_names
                    self._statistics = head_to_head(first, second, self._counter.statistics())
            except LostGamesError as error:
                raise StoreError(str(error)) from None
            except (sqlite3.DatabaseError, OSError) as error:
                # Damaged past its header (the open worked): found here, where every game is read. Or a full disk.
                if isinstance(error, OSError) and not is_disk_full(error):
                    raise
                raise damaged_database(self.out_dir / DB_NAME, error) from None
            self._pending = [] if self.decided else [self._by_number[n] for n in store.pending()]
            self.on_event(
                TournamentStarted(
                    type="tournament_started",
                    time=now(),
                    kind=self.plan.kind,
                    format=str(self.plan.format),
                    bots=self.plan.bot_names,
                    games_total=len(self.schedule),
                    games_done=len(self._results),
                    concurrency=self._slots,
                    out_dir=str(self.out_dir),
                    width=self.plan.width,
                    height=self.plan.height,
                    komi=self.plan.komi,
                    time_control=self.plan.time_control,
                )
            )
            try:
                async with trio.open_nursery() as nursery:
                    for index in range(min(self._slots, len(self._pending))):
                        nursery.start_soon(self._worker, index)
            except BaseException as error:
                full = disk_full_in(error)
                if full is None:
                    raise
                # A full disk is no bug: one line, not a traceback. Every game committed before it is safe.
                self._ended = "error"
                self._error = (
                    f"the disk holding {self.out_dir} is full ({full}): stopped after {len(self._results)} of"
                    f" {len(self.schedule)} games; the games recorded are safe in {self.out_dir / DB_NAME}. Free"
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
            if ended == "completed" and len(self._results) < len(self.schedule):
                ended = "incomplete"
            summary = RunSummary(
                games_total=len(self.schedule),
                games_done=len(self._results),
                played_now=self._played_now,
                void_games=self._voids_now,
                ended=ended,
                elapsed_s=time.monotonic() - self._started,
                standings=standings,
                statistics=self._counter.statistics() if self._two_bots else None,
                error=self._error,
                files=files,
                latency=self._latency.summary(),
            )
            for finish in self.finishers:
                summary.files.extend(finish(summary))
            self.on_event(
                TournamentFinished(
                    type="tournament_finished",
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
                )
            )
            return summary

    # -- worker slots ------------------------------------------------------------------------------

    @property
    def _slots(self) -> int:
        return self.cluster.in_flight if self.cluster is not None else self.plan.concurrency

    async def _worker(self, index: int) -> None:
        slot: Slot
        if self.cluster is not None:
            from referee.cluster import ClusterSlot

            slot = ClusterSlot(index, self.cluster, self.plan.bots, self.plan.start_timeout_s)
        else:
            cores = self._cores[index % len(self._cores)] or None
            slot = GameSlot(index, self.plan, self.log_dir, cores, in_process=self.plan.concurrency > 1)
        try:
            while self._pending and self._ended is None:
                at = pick_next(self._pending, slot.running(), window=2 * self.plan.concurrency)
                game = self._pending.pop(at)
                await self._play(slot, game)
        finally:
            # Every process is asked to quit and waited for, on a normal end and on a stop alike.
            with trio.CancelScope(shield=True):
                await slot.aclose()

    async def _play(self, slot: Slot, game: ScheduledGame) -> None:
        store = self._require_store()
        await self._in_thread(store.mark_running, game.number)
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
        on_move = self.on_move
        started = time.monotonic()
        record: GameRecord | None = None
        try:
            with trio.CancelScope() as scope:
                self._game_scopes.add(scope)
                if self._ended is not None:
                    scope.cancel()  # stopped while this game was being set up
                record = await slot.play(
                    game,
                    game_settings(self.plan, game),
                    None if on_move is None else (lambda move, ply: on_move(game, move, ply)),
                )
        except BaseException:
            # Failed mid-game: nothing is scored; it is pending again for the next run.
            with trio.CancelScope(shield=True):
                await self._in_thread(store.release, game.number)
            raise
        finally:
            self._game_scopes.discard(scope)
        if record is None:
            # Stopped mid-game (a signal, the SPRT's verdict): abandoned, not scored, pending for the next run.
            with trio.CancelScope(shield=True):
                await self._in_thread(store.release, game.number)
            return
        if self._failed_start(game, record, time.monotonic() - started):
            with trio.CancelScope(shield=True):
                await self._in_thread(store.release, game.number)
            return
        # Shielded: a stop that comes now must not lose a game that has finished.
        with trio.CancelScope(shield=True):
            async with self._write_lock:
                if self._ended == "sprt":
                    # The SPRT decided while this game was finishing: it is not counted (nor kept).
                    await trio.to_thread.run_sync(store.release, game.number)
                    return
                # Counted under the lock: no other game can commit between this one and the SPRT's look at it.
                counts, pair_done = await trio.to_thread.run_sync(self._save, game, record)
                if counts:
                    self._results.append(
                        ScoredGame(
                            game.black,
                            game.white,
                            record.result,
                            record.termination,
                            record.black.off_turn_cpu_ms,
                            record.white.off_turn_cpu_ms,
                        )
                    )
                    self._tally.add(self._results[-1])
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
        failures = self._failed_starts[loser.name] = self._failed_starts.get(loser.name, 0) + 1
        line, log = forfeit_stderr(record)
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
                games_done=len(self._results),
                games_total=len(self.schedule),
                stderr_tail=record.stderr_tail[-10:] if record.termination.is_forfeit else [],
                stderr_log=forfeit_stderr(record)[1],
                worker=record.worker,
            )
        )

    def _save(self, game: ScheduledGame, record: GameRecord) -> tuple[bool, bool]:
        """Commit a finished game, append it to games.jsonl and count its pair (in a worker thread, under the
        write lock: the LLR and the statistics take a millisecond or two, which must not be charged to the
        bots whose moves arrive meanwhile). Whether it counts now, and whether it completed a pair."""
        text = record.model_dump_json()  # once, for the database and games.jsonl alike
        counts = self._require_store().record_game(game.number, record, text)
        if not counts:
            return False, False
        append_line(self.out_dir / GAMES_FILE, text + "\n")
        return True, self._count_pair(game, record.result)

    async def _in_thread(self, function: Callable[..., object], *args: object) -> None:
        """Run a file or database write off the trio thread, one at a time.

        A commit usually takes ~35 us, but a WAL checkpoint or an fsync on a busy disk can take tens of
        milliseconds; on the trio thread that stall would be charged to the bots whose moves arrive
        meanwhile. One write at a time, because the games share one SQLite connection.
        """
        async with self._write_lock:
            await trio.to_thread.run_sync(function, *args)

    def _count_pair(self, game: ScheduledGame, result: str, *, replaying: bool = False) -> bool:
        """Count a committed game of a two-bot run; True when it completed a game pair (the statistics are then
        brought up to date)."""
        if not self._two_bots:
            return False
        first, second = self.plan.bot_names
        points = result_points(result)
        if game.white == first:
            points = 1.0 - points
        pair_done = self._counter.add(CountedGame(game.number, game.round // 2, points))
        if pair_done and not replaying:
            self._statistics = head_to_head(first, second, self._counter.statistics())
        return pair_done

    async def _finished(
        self, game: ScheduledGame, record: GameRecord, counts: bool, pair_done: bool, duration: float
    ) -> None:
        scored = record.termination.is_scored
        self._latency.add(record)
        if counts:
            self._played_now += 1
        elif not scored:
            self._voids_now += 1
            voids = self._voids[game.number] = self._voids.get(game.number, 0) + 1
            if voids >= MAX_VOIDS_PER_GAME:
                self.stop(
                    "error",
                    f"game {game.game_id} was void {voids} times in a row (last: {record.reason}): this machine"
                    " cannot play it fairly now (too loaded, short of memory, or a referee fault); nothing void"
                    " was scored. Free the machine (or lower --concurrency) and run the same command to resume;"
                    f" if it persists, report it with {self.out_dir / DB_NAME}",
                )
            else:
                self._pending.insert(0, game)
        self._announce(game, record, duration, scored=scored)
        statistics = self._statistics
        if pair_done and statistics is not None:
            self.on_event(
                StatisticsUpdated(
                    type="statistics_updated", time=now(), games_done=len(self._results), statistics=statistics
                )
            )
        finishing = len(self._results) == len(self.schedule)
        if counts and (finishing or time.monotonic() - self._last_standings_update >= STANDINGS_UPDATE_INTERVAL_S):
            self._last_standings_update = time.monotonic()
            standings = self._standings()
            self.on_event(
                StandingsUpdated(
                    type="standings_updated",
                    time=now(),
                    games_done=len(self._results),
                    games_total=len(self.schedule),
                    standings=standing_rows(standings),
                )
            )
            # After the last game `run` writes every output file anyway.
            if not finishing and time.monotonic() - self._last_standings_write >= STANDINGS_WRITE_INTERVAL_S:
                self._last_standings_write = time.monotonic()
                await self._in_thread(write_standings, standings, self.out_dir)

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
        standings = with_time_odds(self._tally.standings(self.plan.bot_names), self.plan.bots)
        standings = standings.model_copy(update={"title": self.plan.title})
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
    """`--rebuild-db`: a new database from games.jsonl (referee.recovery: the lock first, every line audited)."""
    schedule = make_schedule(plan.bot_names, plan.format, plan.games_per_pairing, plan.openings)
    return rebuild_database_from_file(plan.out_dir, plan.fingerprint, schedule)


def refuse_old_match_directory(out_dir: Path) -> None:
    """A directory with the records of a match from before matches had a database cannot be resumed or mixed."""
    if (out_dir / "match.json").exists() and not (out_dir / DB_NAME).exists():
        raise StoreError(
            f"{out_dir} holds a match from an older alternator (match.json and game files, no {DB_NAME}); it"
            " cannot be resumed or mixed with a new run: choose another output directory (--out DIR)"
        )
