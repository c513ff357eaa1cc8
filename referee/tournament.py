"""A tournament: the schedule played by N worker slots at once, every finished game committed to the database.

Each worker slot takes the next pending game, plays it with `run_game` and stores it before taking
another. A slot keeps its bot processes open between games (one per bot name) and reuses them; it
restarts one only when a fault left it `broken`, and prefers games whose bots it already has running.
The database (`referee.store`) is the truth: a tournament that is killed or stopped resumes from it,
playing only the games that are missing. Void games (the referee's own failure) are never scored and
are played again. Everything a person or a program sees (progress, events) goes through `on_event`.

A referee killed with `kill -9` cannot stop its bots itself: each bot has PR_SET_PDEATHSIG (SIGKILL) and
a sandboxed one bubblewrap's --die-with-parent, so the kernel ends them; what they started is ended by the
next run on the same output directory (`referee.containment`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from referee.config import TournamentPlan
from referee.events import (
    Event,
    GameFinished,
    GameStarted,
    StandingsUpdated,
    TournamentFinished,
    TournamentStarted,
    now,
    standing_rows,
)
from referee.files import write_text_atomic
from referee.game import run_game
from referee.process import BotHost, BotProcess
from referee.record import GameRecord, GameSettings, Termination
from referee.schedule import ScheduledGame, make_schedule, pick_next
from referee.standings import ScoredGame, Standings, compute_standings, write_standings
from referee.store import DB_NAME, TournamentStore

if TYPE_CHECKING:
    from referee.cluster import Cluster

GAMES_FILE = "games.jsonl"
LOG_DIR = "logs"
MAX_VOID_TRIES = 3
"""A void game is played again at once, but at most this many times per run (then left for the next run)."""
MAX_OPEN_PER_SLOT = 4
"""Bot processes a slot keeps open; with many bots the least recently used is closed to make room."""
STANDINGS_UPDATE_INTERVAL_S = 1.0
"""Standings are recomputed (and `standings_updated` sent) at most this often while games run, and after
the last game. The Elo fit takes milliseconds with a large field, on the thread that times every move of
every game in progress: a bot whose reply arrived meanwhile would be charged for it."""
STANDINGS_WRITE_INTERVAL_S = 5.0


@dataclass
class TournamentSummary:
    """How a run ended."""

    games_total: int
    games_done: int
    played_now: int  # games finished (and scored) by this run
    void_games: int  # void games this run (played again or left pending)
    interrupted: bool
    elapsed_s: float
    standings: Standings
    files: list[Path] = field(default_factory=list)


@dataclass
class _Slot:
    """One worker slot's bot processes, by bot name, least recently used first."""

    index: int
    nursery: trio.Nursery
    hosts: dict[str, BotHost] = field(default_factory=dict)

    def running(self) -> set[str]:
        return {name for name, host in self.hosts.items() if host.process is not None}


class Tournament:
    """One run of a tournament plan. `run()` plays the missing games; `stop()` (from a signal) ends it early."""

    def __init__(
        self,
        plan: TournamentPlan,
        *,
        on_event: Callable[[Event], None] | None = None,
        cluster: Cluster | None = None,
    ) -> None:
        self.plan = plan
        self.cluster = cluster
        """Where games are played when not here: each slot submits its game to the cluster and waits."""
        self.on_event = on_event or (lambda event: None)
        self.out_dir = plan.out_dir
        self.log_dir = plan.out_dir / LOG_DIR
        self.schedule = make_schedule(plan.bot_names, plan.format, plan.games_per_pairing, plan.openings)
        self._by_number = {game.number: game for game in self.schedule}
        self._scope = trio.CancelScope()
        self._stopped = False
        self._results: list[ScoredGame] = []
        self._pending: list[ScheduledGame] = []
        self._void_tries: dict[int, int] = {}
        self._played_now = 0
        self._voids_now = 0
        self._last_standings_write = 0.0
        self._last_standings_update = -math.inf
        self._started = 0.0
        self._store: TournamentStore | None = None
        self._write_lock = trio.Lock()

    def stop(self) -> None:
        """Stop playing: games in progress are abandoned (not scored) and their bots killed."""
        self._stopped = True
        self._scope.cancel()

    async def run(self) -> TournamentSummary:
        """Play every pending game; the summary says whether it was interrupted. StoreError: cannot resume."""
        self._started = self._last_standings_write = time.monotonic()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with TournamentStore(self.out_dir / DB_NAME) as store:
            self._store = store
            store.start(self.plan.fingerprint, self.schedule)
            self._results = [ScoredGame(b, w, r, Termination(t), *cpu) for _, b, w, r, t, *cpu in store.finished()]
            self._rewrite_games_file()
            self._pending = [self._by_number[n] for n in store.pending()]
            self.on_event(
                TournamentStarted(
                    type="tournament_started",
                    time=now(),
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
                with self._scope:
                    async with trio.open_nursery() as nursery:
                        for index in range(min(self._slots, len(self._pending))):
                            nursery.start_soon(self._worker, index)
            finally:
                # Also after an error or a stop: the standings so far are written, games.jsonl is in order.
                standings = self._standings()
                files = self._write_outputs(standings)
            summary = TournamentSummary(
                games_total=len(self.schedule),
                games_done=len(self._results),
                played_now=self._played_now,
                void_games=self._voids_now,
                interrupted=self._stopped and len(self._results) < len(self.schedule),
                elapsed_s=time.monotonic() - self._started,
                standings=standings,
                files=files,
            )
            self.on_event(
                TournamentFinished(
                    type="tournament_finished",
                    time=now(),
                    interrupted=summary.interrupted,
                    games_done=summary.games_done,
                    games_total=summary.games_total,
                    elapsed_s=round(summary.elapsed_s, 3),
                    out_dir=str(self.out_dir),
                    standings=standing_rows(standings),
                )
            )
            return summary

    # -- worker slots ------------------------------------------------------------------------------

    @property
    def _slots(self) -> int:
        return self.cluster.in_flight if self.cluster is not None else self.plan.concurrency

    async def _worker(self, index: int) -> None:
        async with trio.open_nursery() as nursery:
            slot = _Slot(index, nursery)
            try:
                while self._pending:
                    at = pick_next(self._pending, slot.running(), window=2 * self.plan.concurrency)
                    game = self._pending.pop(at)
                    await self._play(slot, game)
            finally:
                # Normal end: ask every process to quit (the nursery waits). On a stop, cancellation does it.
                for host in slot.hosts.values():
                    host.close_soon()

    async def _play(self, slot: _Slot, game: ScheduledGame) -> None:
        store = self._require_store()
        if self.cluster is None:
            black = await self._process(slot, game.black)
            white = await self._process(slot, game.white)
        settings = GameSettings(
            width=self.plan.width,
            height=self.plan.height,
            komi=self.plan.komi,
            time_control=self.plan.time_control,
            opening=list(game.opening),
            margin_ms=self.plan.margin_ms,
        )
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
        started = time.monotonic()
        try:
            if self.cluster is not None:
                specs = {spec.name: spec for spec in self.plan.bots}
                record = await self.cluster.play(game.game_id, specs[game.black], specs[game.white], settings)
            else:
                record = await run_game(game.game_id, black, white, settings)
        except BaseException:
            # Stopped or failed mid-game: nothing is scored; it is pending again for the next run.
            with trio.CancelScope(shield=True):
                await self._in_thread(store.release, game.number)
            raise
        # Shielded: a stop that comes now must not lose a game that has finished.
        with trio.CancelScope(shield=True):
            await self._in_thread(self._save, game.number, record)
        await self._finished(game, record, time.monotonic() - started)
        if self.cluster is not None:
            return
        for name, process in ((game.black, black), (game.white, white)):
            # After a void game (something went wrong on our side) both bots start afresh; a broken one is
            # stopped now rather than at its next game (a bot that lost on time may still be thinking).
            if record.termination is Termination.VOID or process.broken:
                await slot.hosts[name].close()

    def _save(self, number: int, record: GameRecord) -> None:
        """Commit a finished game, then append it to games.jsonl (in a worker thread)."""
        self._require_store().record_game(number, record)
        if record.termination.is_scored:
            with (self.out_dir / GAMES_FILE).open("a", encoding="utf-8") as file:
                file.write(record.model_dump_json() + "\n")

    async def _in_thread(self, function: Callable[..., object], *args: object) -> None:
        """Run a file or database write off the trio thread, one at a time.

        A commit usually takes ~35 us, but a WAL checkpoint or an fsync on a busy disk can take tens of
        milliseconds; on the trio thread that stall would be charged to the bots whose moves arrive
        meanwhile. One write at a time, because the games share one SQLite connection.
        """
        async with self._write_lock:
            await trio.to_thread.run_sync(function, *args)

    async def _finished(self, game: ScheduledGame, record: GameRecord, duration: float) -> None:
        scored = record.termination.is_scored
        if scored:
            self._played_now += 1
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
        else:
            self._voids_now += 1
            tries = self._void_tries[game.number] = self._void_tries.get(game.number, 0) + 1
            if tries < MAX_VOID_TRIES:
                self._pending.insert(0, game)
        self.on_event(
            GameFinished(
                type="game_finished",
                time=now(),
                number=game.number,
                game_id=game.game_id,
                black=game.black,
                white=game.white,
                result=record.result,
                termination=record.termination,
                reason=record.reason,
                moves=len(record.moves),
                duration_s=round(duration, 3),
                scored=scored,
                games_done=len(self._results),
                games_total=len(self.schedule),
            )
        )
        finishing = len(self._results) == len(self.schedule)
        if scored and (finishing or time.monotonic() - self._last_standings_update >= STANDINGS_UPDATE_INTERVAL_S):
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

    async def _process(self, slot: _Slot, name: str) -> BotProcess:
        """The slot's running process for this bot, started if need be (BotStartError: cannot start)."""
        host = slot.hosts.pop(name, None)
        if host is None:
            while len(slot.hosts) >= MAX_OPEN_PER_SLOT:
                await slot.hosts.pop(next(iter(slot.hosts))).close()
            host = BotHost(self.plan.bots[self.plan.bot_names.index(name)], self.log_dir, slot.nursery)
        slot.hosts[name] = host  # most recently used last
        return await host.ready()

    # -- outputs -----------------------------------------------------------------------------------

    def _require_store(self) -> TournamentStore:
        assert self._store is not None, "the store is open while the tournament runs"
        return self._store

    def _standings(self) -> Standings:
        return compute_standings(self._results, self.plan.bot_names)

    def _rewrite_games_file(self) -> None:
        """games.jsonl from the database, in game order: no duplicates, no half line from a killed run."""
        write_text_atomic(self.out_dir / GAMES_FILE, (data + "\n" for data in self._require_store().records()))

    def _write_outputs(self, standings: Standings) -> list[Path]:
        self._rewrite_games_file()
        return [*write_standings(standings, self.out_dir), self.out_dir / GAMES_FILE]
