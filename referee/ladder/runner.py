"""The running ladder: pairs games for ever (`referee.ladder.policy`, the adaptive scheduler), plays them, rates
them, stores them, and writes every move of the games in progress to DIR/live.jsonl (`referee.outputs.livefeed`).

`Ladder.run()` plays until cancelled. Its slots (`--concurrency`, or as many games at once as a Dask cluster
takes) each ask the policy for the next game among the idle active entries, read fresh from the store, so entries
added, updated, suspended or retired by `alternator ladder DIR ...` (another process) or by an upload take effect
at the next game; `pause` (a flag in the store) lets the games in progress finish and starts no new one.

Every scored game is rated at once (Glicko-2, one rating period per game) and committed with both new ratings; a
void game (the referee's own failure) is dropped and the pair may be drawn again. A version that cannot start, or
forfeits `max_faults` games in a row, has its entry suspended with the reason; the ladder plays on without it. A
game a version could not even start (or handshake) is not scored against its opponent.

Games are played locally with the arena's play loops (`referee.play.loop`: a `PlayLoop` and `BotPool` per slot), or on
a Dask cluster (`referee.cluster.dask.Cluster.play`), and recorded in the arena's record format, each committed to the
database and appended to games.jsonl (which `alternator replay DIR GAME_ID` and `alternator report DIR` read).
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import trio

from protocol.messages import TimeControl
from protocol.rules import Position
from referee.ladder.api import public_reason
from referee.ladder.policy import Pairs
from referee.ladder.rating import rate
from referee.ladder.store import LadderStore, VersionRow
from referee.outputs.files import append_line
from referee.outputs.livefeed import LiveFeed
from referee.play.game import Limits
from referee.play.loop import BotPool, MoveRelay, PlayLoop, play_batched
from referee.play.process import BotStartError
from referee.record import GameRecord, GameSettings, MoveRecord, PlayedMove, Termination
from referee.run.botspec import BotSpec

if TYPE_CHECKING:
    from referee.cluster.dask import Cluster

__all__ = ["GAMES_FILE", "LOG_DIR", "Ladder", "LadderSettings", "SideStartError"]

GAMES_FILE = "games.jsonl"
LOG_DIR = "logs"
POLL_S = 0.5
"""How often an idle slot looks at the store again (paused, or fewer than two active entries)."""
RECENT_GAMES = 200
"""The games the policy's repeat guard and colour balance look back on."""
KEEP_OPEN = 16
"""Bot processes a local slot keeps open between games (the least recently used closed first): a ladder's pairs
change all the time, and a Python bot takes 0.1-0.3 s to start (20 entries with 6 open: ~125 games/min on 5x5;
see benchmarks/bench_ladder_live.py)."""
FAULTS = (Termination.CRASH, Termination.PROTOCOL, Termination.UNRESPONSIVE)
"""Forfeits that say a bot is broken (it crashed, broke the protocol, hung), not merely weak or slow: `max_faults` of
them in a row suspend its entry. Losses on time and illegal moves are ordinary losses."""


@dataclass(frozen=True)
class LadderSettings:
    """How the ladder's games are played and its uploads limited (kept in the store; options change them)."""

    width: int = 8
    height: int = 8
    komi: float = 3.5
    time_control: str = "10+0.1"
    movetime: float | None = None
    openings_plies: int = 2
    concurrency: int = 1
    keep_open: int = KEEP_OPEN
    max_faults: int = 3
    start_timeout_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 32
    cpu_limit_s: float | None = None

    def control(self) -> TimeControl:
        from referee.timing.clock import movetime_control, parse_time_control

        if self.movetime is not None:
            return movetime_control(self.movetime)
        return parse_time_control(self.time_control)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | None) -> LadderSettings:
        if not text:
            return cls()
        known = {key: value for key, value in json.loads(text).items() if key in cls.__dataclass_fields__}
        return cls(**known)


class SideStartError(Exception):
    """One side's bot could not be started: `side` is "black" or "white"."""

    def __init__(self, side: str, message: str) -> None:
        super().__init__(message)
        self.side = side


OnMoves = Callable[[Sequence[tuple[PlayedMove, int]]], None]
"""Gets the moves of a game as they are played (on the ladder's trio loop), a batch at a time, each with its ply."""


class LadderSlot(Protocol):
    async def play(
        self, game_id: str, black: BotSpec, white: BotSpec, settings: GameSettings, on_moves: OnMoves
    ) -> GameRecord: ...

    async def aclose(self) -> None: ...


class LocalSlot:
    """A slot whose games run in a play loop of its own on this machine, bots kept open between games."""

    def __init__(self, index: int, log_dir: Path, hidden: list[Path], limits: Limits, keep_open: int) -> None:
        self._loop = PlayLoop(f"ladder-{index}")
        self._pool = BotPool(log_dir, self._loop.nursery, hidden=hidden, limit=keep_open)
        self._limits = limits

    async def play(
        self, game_id: str, black: BotSpec, white: BotSpec, settings: GameSettings, on_moves: OnMoves
    ) -> GameRecord:
        relay = MoveRelay(on_moves, trio.lowlevel.current_trio_token())  # the moves, back on this loop in batches
        record, last = await self._loop.run(self._play_here, game_id, black, white, settings, relay)
        if last:
            on_moves(last)
        return record

    async def _play_here(
        self, game_id: str, black: BotSpec, white: BotSpec, settings: GameSettings, relay: MoveRelay
    ) -> tuple[GameRecord, list[tuple[MoveRecord, int]]]:
        for side, spec in (("black", black), ("white", white)):
            try:
                await self._pool.process(spec.name, spec)
            except BotStartError as error:
                raise SideStartError(side, str(error)) from None
        return await play_batched(
            self._pool, game_id, (black.name, black), (white.name, white), settings, relay, self._limits
        )

    async def aclose(self) -> None:
        self._loop.call_soon(self._pool.close_all)
        await self._loop.aclose()


class ClusterSlot:
    """A slot whose games are played on the workers of a Dask cluster.

    Each version is probed on every worker before its first game there (`Cluster.preflight`, again when the workers
    change; `checked` is shared by the slots): a bot that cannot start is the entry's fault, reported as a start
    failure, where a game would have been void and taken the worker out of the run. A void game whose reason names
    a side's bot (a start that failed on a worker all the same) is a fault of that side too.
    """

    def __init__(self, cluster: Cluster, start_timeout_s: float, checked: set[str]) -> None:
        self._cluster = cluster
        self._start_timeout_s = start_timeout_s
        self._checked = checked

    async def play(
        self, game_id: str, black: BotSpec, white: BotSpec, settings: GameSettings, on_moves: OnMoves
    ) -> GameRecord:
        from referee.cluster.dask import ClusterError, ClusterLostError

        # Probed again when a worker joined since: a preflight probes the workers the scheduler knows then.
        workers = "|".join(sorted(await trio.to_thread.run_sync(self._cluster.healthy)))
        for side, spec in (("black", black), ("white", white)):
            key = f"{workers}#{spec.model_dump_json()}"
            if key in self._checked:
                continue
            try:
                await self._cluster.preflight([spec], self._start_timeout_s)
            except ClusterLostError:
                raise
            except ClusterError as error:
                raise SideStartError(side, str(error)) from None
            self._checked.add(key)
        return await self._cluster.play(game_id, black, white, settings, on_moves, self._start_timeout_s)

    async def aclose(self) -> None:
        pass


def random_opening(settings: LadderSettings, number: int) -> list[str]:
    """`openings_plies` random legal placements, seeded by the game's number (reproducible, varied)."""
    rng = random.Random(f"ladder-opening:{number}")
    position = Position(settings.width, settings.height, settings.komi)
    for _ in range(settings.openings_plies):
        placements = position.legal_placements()
        if not placements or position.is_over():
            break
        position.push(rng.choice(placements))
    return [str(move) for move in position.history]


def scores(result: str) -> tuple[float, float]:
    return {"1-0": (1.0, 0.0), "0-1": (0.0, 1.0)}.get(result, (0.5, 0.5))


class Ladder:
    """One running ladder over `store` (its directory's database). `run()` until cancelled."""

    def __init__(
        self,
        store: LadderStore,
        settings: LadderSettings,
        *,
        cluster: Cluster | None = None,
        on_message: Callable[[str], None] = lambda text: None,
        seed: int | None = None,
    ) -> None:
        self.store = store
        self.directory = store.directory
        self.settings = settings
        self.cluster = cluster
        self.on_message = on_message
        self.rng = random.Random(seed)
        self.busy: set[int] = set()
        self.recent: deque[tuple[int, int]] = deque(store.recent_pairs(RECENT_GAMES), maxlen=RECENT_GAMES)
        self.pairs = Pairs((str(b), str(w), scores(result)[0]) for b, w, result in store.results())
        self.last_seq = store.last_seq()
        self.played_now = 0
        self.hidden: list[Path] = []
        self._write_lock = trio.Lock()
        self._paused_said = False
        self.feed = LiveFeed(self.directory)
        """Every move of the games in progress, for the leaderboard's live view (referee/outputs/livefeed.py)."""

    # -- pairing -----------------------------------------------------------------------------------

    def choose(self, versions: list[VersionRow]) -> tuple[VersionRow, VersionRow] | None:
        """The next game among `versions` (the playable ones) that are not playing (the policy's choice), or None."""
        by_key = {str(v.id): v for v in versions}
        waited = {str(v.id): None if v.last_seq is None else self.last_seq - v.last_seq for v in versions}
        pairing = self.pairs.next_pairing(
            list(by_key),
            [str(v.id) for v in versions if v.id not in self.busy],
            waited,
            self.rng,
            recent=[(str(b), str(w)) for b, w in self.recent],
        )
        if pairing is None:
            return None
        return by_key[pairing.black], by_key[pairing.white]

    # -- running -----------------------------------------------------------------------------------

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Play until cancelled; the games in progress then are dropped (not scored) and every bot stopped."""
        await trio.to_thread.run_sync(self._prepare)
        self.feed.run_started("ladder")
        slots: list[LadderSlot] = []
        limits = Limits(handshake_s=self.settings.start_timeout_s)
        try:
            if self.cluster is not None:
                count = max(1, self.cluster.slots)
                checked: set[str] = set()
                slots = [ClusterSlot(self.cluster, self.settings.start_timeout_s, checked) for _ in range(count)]
            else:
                log_dir = self.directory / LOG_DIR
                for index in range(max(1, self.settings.concurrency)):
                    slots.append(LocalSlot(index, log_dir, self.hidden, limits, max(2, self.settings.keep_open)))
            task_status.started()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._flush_feed)
                for slot in slots:
                    nursery.start_soon(self._slot_loop, slot)
        finally:
            with trio.CancelScope(shield=True):
                for slot in slots:
                    await slot.aclose()
                self.feed.run_finished("stopped")
                self.feed.close()
                with contextlib.suppress(Exception):
                    await trio.to_thread.run_sync(self.store.end_playing)

    async def _flush_feed(self) -> None:
        """Moves reach the feed's file at least once a second (the feed writes in batches)."""
        while True:
            await trio.sleep(1.0)
            self.feed.flush()

    def _prepare(self) -> None:
        """Before the first game: forget games a killed ladder left in progress; games.jsonl matches the store."""
        self.store.end_playing()
        path = self.directory / GAMES_FILE
        stored = self.store.game_count()
        try:
            with path.open("rb") as file:
                lines = sum(1 for line in file if line.endswith(b"\n"))
        except FileNotFoundError:
            lines = -1
        if lines != stored:
            temporary = path.with_suffix(".jsonl.tmp")
            with temporary.open("w", encoding="utf-8") as out:
                for text in self.store.records():
                    out.write(text + "\n")
            temporary.replace(path)

    async def _slot_loop(self, slot: LadderSlot) -> None:
        while True:
            if await trio.to_thread.run_sync(lambda: self.store.paused):
                if not self._paused_said:
                    self._paused_said = True
                    self.on_message("paused: no new games until `alternator ladder DIR resume`")
                await trio.sleep(POLL_S)
                continue
            if self._paused_said:
                self._paused_said = False
                self.on_message("resumed")
            versions = await trio.to_thread.run_sync(self.store.playable)
            pair = self.choose(versions)  # no await between reading busy and marking it
            if pair is None:
                await trio.sleep(POLL_S)
                continue
            black, white = pair
            self.busy |= {black.id, white.id}
            try:
                self.hidden[:] = sorted({v.spec.dir for v in versions if v.spec.dir is not None})
                await self._play(slot, black, white)
            finally:
                self.busy -= {black.id, white.id}

    async def _play(self, slot: LadderSlot, black: VersionRow, white: VersionRow) -> None:
        number = await trio.to_thread.run_sync(self.store.next_game_number)
        game_id = f"ladder-{number:07d}"
        settings = GameSettings(
            width=self.settings.width,
            height=self.settings.height,
            komi=self.settings.komi,
            time_control=self.settings.control(),
            opening=random_opening(self.settings, number),
        )
        await trio.to_thread.run_sync(self.store.set_playing, game_id, black.key, white.key)
        self.feed.game_started(game_id, black.key, white.key, settings, number=number)
        record: GameRecord | None = None
        try:
            moves = functools.partial(self.feed.moves, game_id)
            record = await slot.play(game_id, black.spec, white.spec, settings, moves)
        except SideStartError as error:
            version = black if error.side == "black" else white
            await self._fault(version, f"cannot start: {error}", None, scored=False)
        except ValueError as error:  # an opening the game refused: ours, not the bots'
            self.on_message(f"{game_id}: not played ({error})")
        finally:
            if record is None or record.termination is Termination.VOID:
                self.feed.game_finished(game_id, reason="not played to its end (not scored)", scored=False)
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(self.store.end_playing, game_id)
            else:  # the public reason: a fault's details are for the entry's owner and the organiser
                self.feed.game_finished(
                    game_id,
                    result=str(record.result),
                    termination=str(record.termination),
                    reason=public_reason(str(record.termination), record.reason),
                    scored=True,
                )
        if record is None:
            return
        if record.termination is Termination.VOID:
            self.on_message(f"{game_id}: void, not scored ({record.reason})")
            for version in (black, white):
                if f"bot {version.key!r}" in record.reason:  # it could not start on the worker that played it
                    await self._fault(version, f"cannot start: {record.reason}", None, scored=False)
            await trio.sleep(POLL_S)  # the machine is struggling: no hurry to try again
            return
        with trio.CancelScope(shield=True):  # a game that ended is kept, whatever stops the ladder now
            await self._commit(black, white, record)

    async def _commit(self, black: VersionRow, white: VersionRow, record: GameRecord) -> None:
        loser = {"black": black, "white": white}.get(str(record.loser)) if record.termination in FAULTS else None
        tail = next((line.strip() for line in reversed(record.stderr_tail) if line.strip()), None)
        if loser is not None and "handshake" in record.reason:
            # It never got going: a fault, not a game its opponent won.
            await trio.to_thread.run_sync(self.store.end_playing, record.game_id)
            await self._fault(loser, record.reason, tail, scored=False)
            return
        black_score, white_score = scores(record.result)
        ratings = (
            rate(black.glicko, [(white.glicko, black_score)]),
            rate(white.glicko, [(black.glicko, white_score)]),
        )
        faults = (loser is black, loser is white)
        text = record.model_dump_json()
        async with self._write_lock:
            seq = await trio.to_thread.run_sync(self.store.record_game, record, black, white, ratings, faults, text)
            await trio.to_thread.run_sync(append_line, self.directory / GAMES_FILE, text + "\n")
            self.last_seq = max(self.last_seq, seq)
            self.recent.append((black.id, white.id))
            self.pairs.add(str(black.id), str(white.id), black_score)
            self.played_now += 1
        self.on_message(
            f"game {seq}: {black.key} {record.result} {white.key} ({record.termination}) -> "
            f"{black.key} {ratings[0].rating:.0f}±{ratings[0].rd:.0f}, {white.key} {ratings[1].rating:.0f}"
            f"±{ratings[1].rd:.0f}"
        )
        if loser is not None:
            await self._fault(loser, record.reason, tail, scored=True)

    async def _fault(self, version: VersionRow, reason: str, stderr: str | None, *, scored: bool) -> None:
        limit = self.settings.max_faults
        if scored:
            suspended = await trio.to_thread.run_sync(
                lambda: self.store.note_game_fault(version, reason, stderr, suspend_after=limit)
            )
        else:
            suspended = await trio.to_thread.run_sync(
                lambda: self.store.add_fault(version, reason, stderr, suspend_after=limit)
            )
        if suspended:
            self.on_message(
                f"entry {version.entry!r} suspended after {limit} faults in a row (last: {reason}); fix it, then"
                f" `alternator ladder DIR enable {version.entry}` (or `update` it)"
            )
