"""Play apart from coordination: each slot's games run in an event loop of their own, beside their bots.

The runner's event loop coordinates: it schedules games, commits records, computes standings and the SPRT,
draws the terminal and writes the live feed. None of that may delay a move, and none of it should share a
core with a bot's clock. So a slot plays in a `PlayLoop`: a trio loop on a thread of its own that hosts the
slot's bot processes (`BotPool`) and runs `run_game`, pinned to the slot's cores under --cpu-affinity. There
a turn is written from the bot's own core (it wakes at once) and the reply is read by a loop with nothing
else to do; the coordinator hears of a game twice (its start and its record) and of its moves in batches
(`MoveRelay`), never once per move.

`BotPool` is the one pool of bot processes a slot keeps between games: started on demand, the least recently
used closed to make room, restarted when a fault left one broken, both closed after a void game (something
went wrong on the referee's side). A Dask worker's slots use the same pool (`referee.cluster.dask`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import outcome
import trio

from protocol.rules import Position
from referee.host import process_wide
from referee.host.containment import reap_lost_sessions, run_in_spawner
from referee.play.game import Limits, run_game
from referee.play.process import BotHost, BotProcess, BotStartError
from referee.play.reader import held_moves, sole_game_loop
from referee.record import BotInfo, GameRecord, GameSettings, MoveFields, MoveRecord, PlayedMove, Termination
from referee.run.botspec import BotSpec

__all__ = [
    "MAX_OPEN_PER_SLOT",
    "PAYLOAD",
    "RELAY_INTERVAL_S",
    "BotPool",
    "MoveBatches",
    "MoveRelay",
    "PlayLoop",
    "ProcessPlayLoop",
    "decode_moves",
    "encode_move",
    "frame",
    "pin",
    "play_batched",
    "play_in_pool",
    "read_message",
    "relay_due_ns",
    "stored_form",
    "until_next_relay_s",
    "void_record",
]

MAX_OPEN_PER_SLOT = 4
"""Bot processes a slot keeps open; with many bots the least recently used is closed to make room."""
RELAY_INTERVAL_S = 1.0
"""Moves reach the coordinator in batches, on the whole seconds of the monotonic clock (`relay_due_ns`), so at most a
second late (the live view and `--show-moves` show every move a second late at worst, and only while moves come
faster than one a second: a move after a longer pause goes at once). While bots think, every batch costs a wake of
the coordinator (about 0.5 ms of CPU, cold) and often one of the worker. The monotonic clock is the same in every
process of the machine, so every slot's batches are due at the same instants as one another and as the coordinator's
own one-second tick (`referee.commands.common`): the host wakes for them together, not each at a time of its own.
Measured with bots that think 100 ms a move, two games at once, the referee's CPU while they think (alternately in
one session): batches every 0.5 s after the last, 14.4-16.6 ms/s; on the whole second, with the tick on it too and
no host watch while the host is calm, 12.1-14.2 ms/s (the coordinator's share 3.2-4.2 -> 1.5-2.4 ms/s)."""
RELAY_INTERVAL_NS = round(RELAY_INTERVAL_S * 1e9)
CLOSE_WAIT_S = 10.0
"""How long closing a play loop waits for its bots to stop (each has its own quit grace and kill)."""

DEFAULT_LIMITS = Limits()
T = TypeVar("T")
OnMoves = Callable[[Sequence[tuple[PlayedMove, int]]], None]
"""What the coordinator is told of a game's moves, a batch at a time (`MoveBatches`): each move's record and its ply
number (1 for the first move played), in the order played. One call a batch, not a move: the coordinator's share
of a move with instant bots was mostly the calls made for it one by one."""


def relay_due_ns(now_ns: int) -> int:
    """When the next batch of moves is due after `now_ns` (monotonic ns): the next whole `RELAY_INTERVAL_S`."""
    return (now_ns // RELAY_INTERVAL_NS + 1) * RELAY_INTERVAL_NS


def until_next_relay_s() -> float:
    """Seconds from now to the next instant batches of moves are due (`relay_due_ns`): a periodic task that sleeps
    until then wakes with them."""
    now = time.monotonic_ns()
    return (relay_due_ns(now) - now) / 1e9


def pin(cores: Sequence[int] | None) -> None:
    """Keep the calling thread on `cores`, if any (a slot's, under --cpu-affinity)."""
    if cores:
        with contextlib.suppress(OSError, AttributeError):  # no affinity on this OS, or cores gone: run anywhere
            os.sched_setaffinity(0, cores)


class PlayLoop:
    """A trio loop on a thread of its own (pinned to `cores`, if given) where a slot's games are played.

    `run(function, *args)`, awaited in another trio loop, runs `await function(*args)` here and returns its
    result; cancelling the caller cancels it here and waits for it to end. `aclose` stops the loop, and with it
    every task still in it (bots are stopped by their hosts' shielded exits).
    """

    def __init__(self, name: str, cores: Sequence[int] | None = None) -> None:
        self.cores = list(cores) if cores else None
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._closing: trio.Event | None = None
        self._failure: BaseException | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        ready = threading.Event()
        self._thread = threading.Thread(target=self._thread_main, args=(ready,), name=name, daemon=True)
        self._thread.start()
        ready.wait()
        if self._failure is not None:
            raise RuntimeError(f"the play loop {name!r} could not start") from self._failure

    @property
    def nursery(self) -> trio.Nursery:
        """The loop's nursery, for tasks that live as long as the loop (bot hosts): use it from the loop only."""
        assert self._nursery is not None
        return self._nursery

    def _thread_main(self, ready: threading.Event) -> None:
        pin(self.cores)
        try:
            trio.run(self._main, ready)
        except BaseException as error:
            self._failure = error
        finally:
            ready.set()

    async def _main(self, ready: threading.Event) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._closing = trio.Event()
        with sole_game_loop([self._wake_r]):
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                ready.set()
                await self._closing.wait()
                nursery.cancel_scope.cancel()

    def _soon(self, function: Callable[[], object]) -> None:
        """`function()` in this loop, waking a game waiting in a blocking poll (`referee.play.reader.sole_game_loop`).

        A byte in the wake pipe for each call, written first and read back by the call itself when the loop runs
        it: the pipe is readable exactly while some call is still to run, so the game's poll returns until the
        loop has run them all (a trio batch may run the game before the call that woke it)."""
        assert self._token is not None
        wake_r = self._wake_r

        def run() -> None:
            with contextlib.suppress(OSError):  # BlockingIOError: the pipe was full when the byte was written
                os.read(wake_r, 1)
            function()

        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"w")
        self._token.run_sync_soon(run)

    async def run(self, function: Callable[..., Awaitable[T]], *args: Any) -> T:
        """`await function(*args)` in this loop, from another trio loop."""
        assert self._token is not None
        caller = trio.lowlevel.current_trio_token()
        done = trio.Event()
        state: dict[str, Any] = {}

        async def task() -> None:
            with trio.CancelScope() as scope:
                state["scope"] = scope
                if state.get("cancel"):
                    scope.cancel()
                state["result"] = await outcome.acapture(function, *args)
            with contextlib.suppress(trio.RunFinishedError):
                caller.run_sync_soon(done.set)

        def start() -> None:
            self.nursery.start_soon(task)

        def cancel() -> None:
            state["cancel"] = True
            scope = state.get("scope")
            if scope is not None:
                scope.cancel()

        self._soon(start)
        try:
            await done.wait()
        except BaseException:
            with trio.CancelScope(shield=True):
                self._soon(cancel)
                await done.wait()
            raise
        result: outcome.Outcome[T] = state["result"]
        if isinstance(result, outcome.Error) and isinstance(result.error, trio.Cancelled):
            raise RuntimeError("the play loop stopped while it played")
        return result.unwrap()

    def call_soon(self, function: Callable[[], object]) -> None:
        """Run `function()` in this loop as soon as it can (from any thread); nothing if the loop has ended."""
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._soon(function)

    async def aclose(self) -> None:
        """Stop the loop (cancelling what still runs in it) and wait for its thread to end."""
        closing = self._closing
        if closing is not None:
            self.call_soon(closing.set)
        await trio.to_thread.run_sync(self._thread.join, CLOSE_WAIT_S)
        if not self._thread.is_alive():
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:  # closed once already: closing is idempotent
                    os.close(fd)
            self._wake_r = self._wake_w = -1


class MoveBatches:
    """A game's moves, handed on in batches: at most one in each whole `RELAY_INTERVAL_S` as they are played, and
    whatever is left at `flush` (called before the game's record goes, so that its moves come first).

    `push` is the game's `on_move`; `send(moves)` gets each batch as (move, ply number) pairs. Every move handed
    on is complete (`run_game` gives it to `on_move` once its opponent's CPU is known) and is not touched again.
    A move held for the next batch is due at the next whole `RELAY_INTERVAL_S` after the last one went (`due_ns`,
    `relay_due_ns`): a game played in a
    sole game loop hands it on then (`referee.play.reader.held_moves`, `flush_due`), however long its next move takes.
    Elsewhere (a Dask worker's loop) a held move goes with the next one, and a game's first move goes at once.
    """

    def __init__(self, send: Callable[[list[tuple[MoveRecord, int]]], None]) -> None:
        self._send = send
        self._moves: list[tuple[MoveRecord, int]] = []
        self._due = 0

    def push(self, move: MoveRecord, position: Position) -> None:
        self._moves.append((move, len(position.history)))
        now = time.monotonic_ns()
        if now >= self._due:
            self._due = relay_due_ns(now)
            self.flush()

    def due_ns(self) -> int | None:
        """When the moves held for the next batch are due (monotonic ns); None if none is held."""
        return self._due if self._moves else None

    def flush_due(self) -> None:
        """Hand on the held moves at their due time; the next batch is due an interval later."""
        self._due = relay_due_ns(time.monotonic_ns())
        self.flush()

    def start(self) -> None:
        """The game starts now and counts as a batch: its first moves are held to the next whole second. Only where
        held moves are handed on when due (`play_batched`)."""
        self._due = relay_due_ns(time.monotonic_ns())

    def take(self) -> list[tuple[MoveRecord, int]]:
        """The moves held, no longer held: the game's last ones, for its caller to send along with its record."""
        moves, self._moves = self._moves, []
        return moves

    def flush(self) -> None:
        if self._moves:
            self._send(self.take())


class MoveRelay(MoveBatches):
    """The moves of games played in a `PlayLoop`, handed to the coordinator's loop (`caller`) in batches."""

    def __init__(self, on_moves: OnMoves, caller: trio.lowlevel.TrioToken) -> None:
        def hand_over(moves: list[tuple[MoveRecord, int]]) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                caller.run_sync_soon(on_moves, moves)

        super().__init__(hand_over)


class BotPool:
    """A slot's bot processes, kept open between its games: least recently used first, at most `limit` open.

    Used from the loop whose nursery hosts them (`BotHost`). Its cores and the folders its sandboxes hide are
    the run's, passed in: two runs in one process share neither.
    """

    def __init__(
        self,
        log_dir: Path,
        nursery: trio.Nursery,
        cores: Sequence[int] | None = None,
        *,
        hidden: Iterable[Path] = (),
        limit: int = MAX_OPEN_PER_SLOT,
    ) -> None:
        self.log_dir = log_dir
        self.nursery = nursery
        self.cores = list(cores) if cores else None
        self.hidden = hidden
        """The bot folders of the run (a collection the owner may add to): a sandbox hides the others'."""
        self.limit = limit
        self.hosts: dict[str, BotHost] = {}  # least recently used first
        self.last_used = 0.0

    def running(self) -> set[str]:
        """The keys of the bots that have a process open."""
        return {key for key, host in self.hosts.items() if host.process is not None}

    async def process(self, key: str, spec: BotSpec) -> BotProcess:
        """The pool's process for `key`, started if there is none or a fault left it broken (BotStartError)."""
        host = self.hosts.pop(key, None)
        if host is None:
            while len(self.hosts) >= self.limit:
                await self.hosts.pop(next(iter(self.hosts))).close()
            host = BotHost(spec, self.log_dir, self.nursery, cores=self.cores, hidden=self.hidden)
        self.hosts[key] = host  # most recently used last
        return await host.ready()

    async def close(self, key: str) -> None:
        """Stop `key`'s process and forget it (a later game starts it afresh)."""
        host = self.hosts.pop(key, None)
        if host is not None:
            await host.close()

    async def after_game(self, record: GameRecord, sides: Sequence[tuple[str, BotProcess]]) -> None:
        """After a void game (something went wrong on our side) both bots start afresh; a broken one is stopped
        now rather than at its next game (a bot that lost on time may still be thinking)."""
        self.last_used = time.monotonic()
        for key, process in sides:
            if record.termination is Termination.VOID or process.broken:
                await self.close(key)

    def close_all(self) -> None:
        """Ask every process to quit (the nursery waits for them)."""
        for host in self.hosts.values():
            host.close_soon()
        self.hosts.clear()


async def play_in_pool(
    pool: BotPool,
    game_id: str,
    black: tuple[str, BotSpec],
    white: tuple[str, BotSpec],
    settings: GameSettings,
    on_move: Callable[[MoveRecord, Position], None] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> GameRecord:
    """Play one game with the pool's processes for `black` and `white` (each a key and its spec)."""
    black_process = await pool.process(*black)
    white_process = await pool.process(*white)
    try:
        record = await run_game(game_id, black_process, white_process, settings, on_move=on_move, limits=limits)
    except BaseException:
        # Stopped mid-game (cancelled): both bots are in the middle of it, and no later game may reuse them.
        with trio.CancelScope(shield=True):
            await pool.close(black[0])
            await pool.close(white[0])
        raise
    await pool.after_game(record, ((black[0], black_process), (white[0], white_process)))
    return record


async def play_batched(
    pool: BotPool,
    game_id: str,
    black: tuple[str, BotSpec],
    white: tuple[str, BotSpec],
    settings: GameSettings,
    batches: MoveBatches,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[GameRecord, list[tuple[MoveRecord, int]]]:
    """`play_in_pool` in a sole game loop, its moves handed on in `batches`: the record, and the moves still held at
    its end, for the caller to send with it (one message or hand-over a game, not one for them and one for it).

    The game's start counts as a batch (`MoveBatches.start`): its first move is held like any other, and goes at once
    only after a pause past a whole second; a held move goes when due, however long the next one takes
    (`held_moves`). Sending the first move at once and the last ones on their own cost the coordinator two more
    wakes a game: with instant bots, two games at once, it ran 1.75 times a game instead of 2.35, and its CPU a game
    fell by a fifth (with one fewer database write a game, measured together). A game that fails hands its held
    moves on before the error goes up."""
    batches.start()
    try:
        with held_moves(batches.due_ns, batches.flush_due):
            record = await play_in_pool(pool, game_id, black, white, settings, batches.push, limits)
    except BaseException:
        batches.flush()
        raise
    return record, batches.take()


def void_record(
    game_id: str, black: BotSpec, white: BotSpec, settings: GameSettings, reason: str, worker: str | None = None
) -> GameRecord:
    """The record of a game that could not be played for the referee's own reasons: void, never scored, played
    again."""
    at = datetime.now(UTC)
    return GameRecord(
        game_id=game_id,
        black=BotInfo(name=black.name, command=list(black.command)),
        white=BotInfo(name=white.name, command=list(white.command)),
        settings=settings,
        result="*",
        winner=None,
        termination=Termination.VOID,
        reason=reason,
        black_score=None,
        white_score=None,
        final_position="",
        started_at=at,
        finished_at=at,
        worker=worker,
    )


_HEADER = struct.Struct(">II")
MAX_MESSAGE_BYTES = 1 << 30
PAYLOAD = "payload"
"""The key under which `read_message` puts a message's payload (`frame`)."""
_STORED_MAX = 64
"""Records kept with their stored forms (`stored_form`) until they are stored: one a slot, and some room for games a
stop or the SPRT ended before they were stored (the oldest go first)."""
_STORED: dict[int, tuple[GameRecord, str, str]] = {}
"""id -> (the record, its JSON and its viewer line) as its play worker made them (`done`)."""


def stored_form(record: GameRecord) -> tuple[str, str | None]:
    """The record's JSON and its viewer line (None: to be made by the caller) for the store and games.jsonl.

    A record from a play worker comes with both, made there (`referee.play.worker`): the coordinator, which every
    game of a run passes through, need not dump it again nor make its line (about a seventh of its CPU per game
    with instant bots). They are the forms of the record as it was received: one taken out with this call, once,
    and only for the very object received (an entry holds it, so its id is not reused; a copy is dumped anew).
    """
    kept = _STORED.pop(id(record), None)
    if kept is not None and kept[0] is record:
        return kept[1], kept[2]
    return record.model_dump_json(), None


def _received(payload: bytes) -> GameRecord:
    """A `done` message's record, from its payload: the record's JSON, a newline and its viewer line (neither
    holds a raw newline: both are compact JSON), kept for `stored_form`."""
    text, _, line = payload.decode().partition("\n")
    record = GameRecord.model_validate_json(text)
    if line:
        while len(_STORED) >= _STORED_MAX:
            del _STORED[next(iter(_STORED))]
        _STORED[id(record)] = (record, text, line)
    return record


def frame(message: dict[str, Any], payload: bytes = b"") -> bytes:
    """A message as it goes over the socket: the lengths of its JSON and of its payload, then both.

    The payload is bytes that go as they are: a game's record, already JSON, which inside the message would be
    escaped as a string on the way out and unescaped on the way in (an 11 KB record cost about 100 us a game)."""
    data = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(data), len(payload)) + data + payload


def read_message(buffer: bytearray) -> dict[str, Any] | None:
    """The first complete message in `buffer` (taken out of it), its payload (if it has one) under `PAYLOAD`; None
    if `buffer` holds no whole message yet."""
    if len(buffer) < _HEADER.size:
        return None
    size, payload_size = _HEADER.unpack_from(buffer)
    if size + payload_size > MAX_MESSAGE_BYTES:
        raise ValueError(f"a play worker message of {size + payload_size} bytes")
    end = _HEADER.size + size
    if len(buffer) < end + payload_size:
        return None
    data = bytes(buffer[_HEADER.size : end])
    payload = bytes(buffer[end : end + payload_size]) if payload_size else None
    del buffer[: end + payload_size]
    message: dict[str, Any] = json.loads(data)
    if payload is not None:
        message[PAYLOAD] = payload
    return message


_MOVE_FIELDS = (
    "color",
    "move",
    "elapsed_ms",
    "clock_ms",
    "latency_ms",
    "infos",
    "infos_dropped",
    "cpu_ms",
    "opponent_cpu_ms",
)


def encode_move(move: MoveRecord, ply: int) -> list[Any]:
    """A move for the coordinator: its ply number and its record's fields, in `_MOVE_FIELDS` order."""
    fields = move.__dict__  # every field is set (`run_game` builds each move whole): read once, not by getattr
    return [ply, str(fields["color"]), *map(fields.__getitem__, _MOVE_FIELDS[1:])]


def decode_moves(batch: Iterable[Sequence[Any]]) -> list[tuple[PlayedMove, int]]:
    """A batch of moves as a worker sent it (`encode_move` each), for an `OnMoves`: trusted (the worker built them),
    so taken as they are."""
    make = tuple.__new__  # a named tuple's own __new__ is a Python function: the fields are whole (`encode_move`)
    return [(make(MoveFields, fields[1:]), fields[0]) for fields in batch]


class PlayWorkerLost(Exception):
    """The play worker process ended (or stopped answering) while it played."""


_DUMPED_MAX = 256
"""Specs (and limits) kept in their JSON form by a play worker's coordinator side (`ProcessPlayLoop._as_json`)."""
CANCEL_WAIT_S = 10.0
"""How long a cancelled game may take to unwind in its worker before the worker is killed."""


def _spawn_worker(command: list[str], fd: int) -> subprocess.Popen[bytes]:
    # A session of its own: Ctrl-C in the terminal is the coordinator's to handle (it stops the worker's games).
    return subprocess.Popen(command, pass_fds=(fd,), start_new_session=True, stdin=subprocess.DEVNULL)


class ProcessPlayLoop:
    """A slot's games in a play worker process of their own (`referee.play.worker`), started on first use and
    again after it was lost; `play` plays one game there and returns its record and the pool's running keys.

    The worker hosts the slot's bots: nothing of a move runs in the referee's process, and nothing of the
    referee's (its coordination, the other slots) shares the worker's interpreter lock.
    """

    def __init__(
        self, name: str, log_dir: Path, cores: Sequence[int] | None = None, hidden: Iterable[Path] = ()
    ) -> None:
        self.name = name
        self.log_dir = log_dir
        self.cores = list(cores) if cores else None
        self.hidden = [str(path) for path in hidden]
        self._process: subprocess.Popen[bytes] | None = None
        self._stream: trio.SocketStream | None = None
        self._buffer = bytearray()
        self._next = 0
        self._dumped: dict[int, tuple[BotSpec | Limits, dict[str, Any]]] = {}

    async def _start(self) -> trio.SocketStream:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        command = [
            sys.executable,
            "-m",
            "referee.play.worker",
            "--fd",
            str(theirs.fileno()),
            "--log-dir",
            str(self.log_dir),
            "--cores",
            ",".join(map(str, self.cores or ())),
            "--hidden",
            json.dumps(self.hidden),
            "--parent",
            str(os.getpid()),
        ]
        try:
            # From the spawner thread, which lives as long as the referee: the worker's death signal is tied to it.
            self._process = await run_in_spawner(functools.partial(_spawn_worker, command, theirs.fileno()))
        finally:
            theirs.close()
        process_wide.PLAY_WORKERS.add(self._process.pid)
        self._buffer.clear()
        self._stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
        return self._stream

    async def _send(self, message: dict[str, Any]) -> None:
        assert self._stream is not None
        try:
            # Whole or not at all: a message cut by a cancellation would garble every later one (they are small,
            # and the worker reads its socket all the time).
            with trio.CancelScope(shield=True):
                await self._stream.send_all(frame(message))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise PlayWorkerLost("the play worker closed its socket") from None

    async def _receive(self) -> dict[str, Any]:
        assert self._stream is not None
        while True:
            message = read_message(self._buffer)
            if message is not None:
                return message
            try:
                data = await self._stream.receive_some(1 << 16)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                raise PlayWorkerLost(f"the play worker ended ({self._exit_text()})")
            self._buffer += data

    def _as_json(self, value: BotSpec | Limits) -> dict[str, Any]:
        """A bot's spec or the limits as a job carries them: made once for each (both are frozen, and the same
        objects come with every game of a run; `dataclasses.asdict` alone cost more than a move)."""
        kept = self._dumped.get(id(value))  # the entry holds the object too: its id is not reused meanwhile
        if kept is not None:
            return kept[1]
        dumped = value.model_dump(mode="json") if isinstance(value, BotSpec) else dataclasses.asdict(value)
        if len(self._dumped) >= _DUMPED_MAX:
            self._dumped.clear()
        self._dumped[id(value)] = (value, dumped)
        return dumped

    def _exit_text(self) -> str:
        process = self._process
        code = None if process is None else process.poll()
        return "still running" if code is None else f"exit code {code}"

    async def play(
        self,
        game_id: str,
        black: tuple[str, BotSpec],
        white: tuple[str, BotSpec],
        settings: GameSettings,
        on_moves: OnMoves | None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> tuple[GameRecord, set[str]]:
        """Play one game in the worker (BotStartError, ValueError as `play_in_pool` raises them; a lost worker is
        a void game). Cancelled: the game is stopped in the worker and waited for."""
        if self._stream is None or (self._process is not None and self._process.poll() is not None):
            await self._start()
        self._next += 1
        number = self._next
        job = {
            "op": "play",
            "id": number,
            "game_id": game_id,
            "black": [black[0], self._as_json(black[1])],
            "white": [white[0], self._as_json(white[1])],
            "settings": settings.model_dump(mode="json"),
            "limits": self._as_json(limits),
        }
        try:
            await self._send(job)
            while True:
                message = await self._receive()
                op = message.get("op")
                if op == "moves" and on_moves is not None:
                    on_moves(decode_moves(message["moves"]))
                elif op == "done":
                    return _received(message[PAYLOAD]), set(message["running"])
                elif op == "failed":
                    if message.get("kind") == "start":
                        raise BotStartError(message["error"])
                    raise ValueError(message["error"])
        except PlayWorkerLost as lost:
            await self._lost()
            reason = f"void: the referee's play worker for this slot was lost ({lost}); the game is not scored"
            return void_record(game_id, black[1], white[1], settings, reason), set()
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._cancel(number)
            raise

    async def _cancel(self, number: int) -> None:
        """Stop game `number` in the worker and wait until it says so (or kill the worker if it cannot)."""
        with trio.move_on_after(CANCEL_WAIT_S) as scope:
            try:
                await self._send({"op": "cancel", "id": number})
                while (await self._receive()).get("op") not in ("cancelled", "done", "failed"):
                    pass
            except PlayWorkerLost:
                await self._lost()
        if scope.cancelled_caught:
            await self._lost()

    async def _lost(self) -> None:
        """Forget a worker that ended or does not answer (killed; its bots die with it)."""
        process, self._process = self._process, None
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await trio.to_thread.run_sync(process.wait)
            process_wide.PLAY_WORKERS.discard(process.pid)
            # Its bots die with it (their death signal); as the referee's orphans, they are the referee's to reap.
            await trio.to_thread.run_sync(functools.partial(reap_lost_sessions, keep=process_wide.PLAY_WORKERS))

    async def aclose(self) -> None:
        """Ask the worker to stop its bots and exit, and wait for it (killed if it will not)."""
        process = self._process
        if process is None or self._stream is None:
            return
        with contextlib.suppress(PlayWorkerLost):
            await self._send({"op": "close"})
        with trio.move_on_after(CANCEL_WAIT_S):
            await trio.to_thread.run_sync(process.wait)
        await self._lost()
