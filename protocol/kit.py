"""The Python bot kit: turn a function that picks a move into a complete protocol v1 bot.

    from protocol.kit import Clock, run_bot
    from protocol.rules import Move, Position

    def choose(position: Position, clock: Clock) -> Move:
        return position.legal_moves()[0]

    run_bot(choose, name="first", author="me", version="1.0")

The kit does the handshake, plays any number of games in one process, keeps a `Position` up to date
from each turn's history, hands `choose` a copy of it and the clocks, answers `ping` at once even while
`choose` is thinking (a reader thread owns stdin), sends `info` from `send_info`, and exits with status 0
on `quit` (even while `choose` is thinking, after `QUIT_WAIT_S`) or at the end of input. An exception
in `choose` (or a hook) prints its traceback to stderr and ends the process with status 1, which the
referee reports as a crash.

It runs on plain blocking stdin/stdout and imports only the standard library, the rules engine and the
framing, never pydantic or trio, so a bot starts in a few tens of milliseconds. With the real stdin and
stdout it moves the protocol to a private copy of file descriptor 1 and points fd 1 at stderr, so a stray
`print` in a bot lands in its log instead of breaking the protocol.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from protocol.framing import MAX_LINE_BYTES, FramingError, LineBuffer
from protocol.options import Option, OptionValue
from protocol.rules import BLACK, WHITE, Color, Move, Position
from protocol.version import PROTOCOL_VERSION

__all__ = [
    "PROTOCOL_VERSION",
    "Choose",
    "Clock",
    "Game",
    "GameResult",
    "Option",
    "TimeControl",
    "log",
    "run_bot",
    "send_info",
]


# What a bot spends on overheads it cannot see (pipe, scheduling, the referee's reading) in budget_ms.
SAFETY_MS = 50
# After `quit`, how long a move in progress may still take before the process exits without it
# (the referee kills a bot 0.5 s after `quit`; a timed-out bot is sent `quit` mid-search before a restart).
QUIT_WAIT_S = 0.25


@dataclass(frozen=True)
class TimeControl:
    """The game's time control, as in `new_game` (see PROTOCOL.md)."""

    base_ms: int | None
    increment_ms: int
    moves_per_period: int | None
    move_time_ms: int | None


@dataclass(frozen=True)
class Game:
    """One game as `new_game` announced it, given to the `on_new_game` and `on_game_over` hooks."""

    game_id: str
    color: Color
    width: int
    height: int
    komi: float
    time_control: TimeControl
    opponent: str
    opponent_time_control: TimeControl | None = None
    """The opponent's time control when it differs from this bot's (time odds); None: the same."""
    options: dict[str, OptionValue] = field(default_factory=dict)
    """Every option the bot declared (`run_bot(options=...)`), with its value for this game."""
    nodes: int | None = None
    """Search at most this many nodes per move (None: no limit)."""
    depth: int | None = None
    """Search at most this many plies deep per move (None: no limit)."""


@dataclass(frozen=True)
class GameResult:
    """What `game_over` said."""

    game_id: str
    result: str
    winner: Color | None
    reason: str
    black_score: float | None
    white_score: float | None
    termination: str | None


@dataclass(frozen=True)
class Clock:
    """This bot's view of the clocks as its turn started. All times in milliseconds.

    `received_at` is the `time.monotonic()` reading when the kit read the `turn` line; the referee
    started the clock a little earlier, when it wrote that line.
    """

    my_ms: int | None
    """My remaining game time (None: no game clock)."""
    opponent_ms: int | None
    """The opponent's remaining game time (None: no game clock)."""
    increment_ms: int
    """Added to my clock after this move."""
    move_limit_ms: int | None
    """The most this single move may take (None: no per-move limit)."""
    moves_to_go: int | None
    """Moves until my clock is filled up again, this one included (periods only)."""
    received_at: float
    nodes: int | None = None
    """The game's node limit per move (None: none): stop searching after this many nodes."""
    depth: int | None = None
    """The game's depth limit per move (None: none): search no deeper than this many plies."""

    def elapsed_ms(self) -> int:
        """Milliseconds since the turn was received."""
        return int((time.monotonic() - self.received_at) * 1000)

    def budget_ms(self, moves_left: int = 20, safety_ms: int = SAFETY_MS) -> int:
        """A sensible total time for this move, counted from `received_at`; never the whole clock.

        `moves_left` is the bot's guess of how many more moves it will make in the game (a Fischer
        clock is shared among them). The result keeps `safety_ms` in hand for the pipe and scheduling,
        and is at least 1 ms. With no clock and no limit at all it is one second.
        """
        limits: list[float] = []
        if self.move_limit_ms is not None:
            limits.append(self.move_limit_ms - safety_ms)
        if self.my_ms is not None:
            if self.moves_to_go is not None:
                share = self.my_ms / self.moves_to_go
            else:
                share = self.my_ms / max(1, moves_left) + self.increment_ms * 3 / 4
            # Never plan to spend more than half of what is left, whatever the increment promises.
            limits.append(min(share, self.my_ms / 2) - safety_ms)
        if not limits:
            return 1000
        return max(1, int(min(limits)))

    def deadline(self, moves_left: int = 20, safety_ms: int = SAFETY_MS) -> float:
        """The `time.monotonic()` reading by which to have answered, following `budget_ms`."""
        return self.received_at + self.budget_ms(moves_left, safety_ms) / 1000

    def remaining_ms(self, moves_left: int = 20, safety_ms: int = SAFETY_MS) -> int:
        """What is left of `budget_ms` now (may be negative)."""
        return self.budget_ms(moves_left, safety_ms) - self.elapsed_ms()


Choose = Callable[[Position, Clock], Move | str]


def log(*parts: object) -> None:
    """Print to stderr, the bot's own log (the referee keeps a capped copy)."""
    print(*parts, file=sys.stderr, flush=True)


def _line(message: dict[str, Any]) -> bytes:
    """One protocol line: compact JSON, newline-terminated. ASCII-only (escapes), so any str encodes."""
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


class _Session:
    """One connection to the referee: a reader thread, an inbox for the main thread, a guarded writer.

    `abandon` is called (under the write lock, so never in the middle of a line) when `choose` is still
    running `QUIT_WAIT_S` after `quit` arrived: the move can no longer matter, and the referee kills a bot
    that has not exited 0.5 s after `quit`. With the real stdio it ends the process (status 0); without it
    (tests), `choose` runs to its end and the session ends after it. The end of input alone abandons
    nothing: the move in progress is finished (and lost if nobody reads it), then the kit exits.
    """

    def __init__(
        self,
        read_chunk: Callable[[], bytes],
        write: Callable[[bytes], None],
        abandon: Callable[[], None] | None = None,
    ) -> None:
        self._read_chunk = read_chunk
        self._write = write
        self._abandon = abandon
        self._lock = threading.Lock()
        self._turn_active = False
        self._quit_at: float | None = None
        self._closed = False
        self.inbox: queue.SimpleQueue[tuple[float, dict[str, Any]] | None] = queue.SimpleQueue()
        self._reader = threading.Thread(target=self._read_loop, name="protocol-reader", daemon=True)

    def start(self) -> None:
        self._reader.start()

    def send(self, message: dict[str, Any]) -> None:
        data = _line(message)
        with self._lock:
            self._write_locked(data)

    def _write_locked(self, data: bytes) -> None:
        if self._closed:
            return
        try:
            self._write(data)
        except OSError as error:  # BrokenPipeError and friends: the referee has gone away.
            self._closed = True
            log(f"kit: cannot write to the referee ({error}); it has gone away")
            self.inbox.put(None)

    def begin_turn(self) -> None:
        with self._lock:
            if self._quit_at is not None and time.monotonic() >= self._quit_at + QUIT_WAIT_S:
                self._abandon_now()
            self._turn_active = True

    def _quit_soon(self) -> None:
        """`quit` arrived: give a move in progress `QUIT_WAIT_S` to go out, then abandon it."""
        self._quit_at = time.monotonic()
        if self._abandon is not None:
            timer = threading.Timer(QUIT_WAIT_S, self._abandon_if_busy)
            timer.daemon = True
            timer.start()

    def _abandon_if_busy(self) -> None:
        with self._lock:
            if self._turn_active:
                self._abandon_now()

    def _abandon_now(self) -> None:
        if self._abandon is not None:
            self._abandon()

    def send_move(self, move: str) -> None:
        data = _line({"type": "move", "move": move})
        # Under the lock: no info may slip out after the move, when it would be out of turn.
        with self._lock:
            self._turn_active = False
            self._write_locked(data)

    def send_info(self, message: dict[str, Any]) -> bool:
        data = _line(message)
        with self._lock:
            if not self._turn_active:
                return False
            self._write_locked(data)
            return True

    def _read_loop(self) -> None:
        buffer = LineBuffer(MAX_LINE_BYTES)
        try:
            while True:
                chunk = self._read_chunk()
                if not chunk:
                    buffer.finish()
                    return
                for line in buffer.feed(chunk):
                    self._dispatch(line)
        except (FramingError, OSError, ValueError) as error:
            log(f"kit: stopped reading from the referee: {error}")
        finally:
            self.inbox.put(None)

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            log(f"kit: ignoring a line from the referee that is not JSON: {line[:200]!r}")
            return
        if not isinstance(message, dict):
            log(f"kit: ignoring a line from the referee that is not a JSON object: {line[:200]!r}")
            return
        if message.get("type") == "ping":
            # Answered here, at once, whatever the main thread is busy with.
            self.send({"type": "pong", "id": message.get("id")})
            return
        self.inbox.put((time.monotonic(), message))
        if message.get("type") == "quit":
            self._quit_soon()


_active: _Session | None = None


def send_info(
    *,
    depth: int | None = None,
    score: float | None = None,
    nodes: int | None = None,
    pv: Sequence[Move | str] | None = None,
    text: str | None = None,
) -> bool:
    """Tell the referee what the bot is thinking (kept in the game record); any thread may call it.

    Sent only while this bot is choosing a move, since `info` is not allowed at other times; returns
    whether it was sent. Values the protocol would reject (a NaN score, a negative depth) are left out.
    """
    session = _active
    if session is None:
        return False
    message: dict[str, Any] = {"type": "info"}
    for key, value in (("depth", depth), ("nodes", nodes)):
        if value is not None and (count := _count(value)) is not None:
            message[key] = count
    if score is not None and (number := _finite(score)) is not None:
        message["score"] = number
    if pv is not None:
        try:
            moves = [str(move) for move in pv][:256]
        except TypeError:
            moves = [repr(pv)]
        if all(_is_move_text(move) for move in moves):
            message["pv"] = moves
        else:
            log(f"kit: leaving out a pv that is not a list of moves: {moves[:8]!r}")
    if text is not None:
        # A lone surrogate is not valid JSON text even escaped (the referee refuses it): replace it.
        message["text"] = str(text)[:4096].encode("utf-8", errors="replace").decode("utf-8")
    return session.send_info(message)


def _count(value: object) -> int | None:
    """`value` as a JSON integer >= 0, or None (a negative, infinite or non-numeric value is left out)."""
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number >= 0 else None


def _finite(value: object) -> float | None:
    """`value` as a finite JSON number, or None (NaN, infinities, huge integers and non-numbers are left out)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _is_move_text(text: str) -> bool:
    try:
        Move.parse(text)
    except ValueError:
        return False
    return True


def _color(text: Any) -> Color:
    return BLACK if text == "black" else WHITE


def _time_control(tc: dict[str, Any]) -> TimeControl:
    return TimeControl(
        base_ms=tc.get("base_ms"),
        increment_ms=int(tc.get("increment_ms") or 0),
        moves_per_period=tc.get("moves_per_period"),
        move_time_ms=tc.get("move_time_ms"),
    )


def _limit(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _game(message: dict[str, Any], declared: Sequence[Option] = ()) -> Game:
    own = _time_control(message.get("time_control") or {})
    theirs = message.get("opponent_time_control")
    opponent_tc = _time_control(theirs) if isinstance(theirs, dict) else None
    # Defaults first: a referee that sends no `options` (an older one) still gives every declared option a value.
    options: dict[str, OptionValue] = {option.name: option.default for option in declared}
    sent = message.get("options")
    if isinstance(sent, dict):
        options.update({k: v for k, v in sent.items() if k in options and isinstance(v, bool | int | float | str)})
    return Game(
        game_id=str(message["game_id"]),
        color=_color(message["color"]),
        width=int(message["width"]),
        height=int(message["height"]),
        komi=float(message["komi"]),
        time_control=own,
        opponent=str(message.get("opponent", "")),
        opponent_time_control=None if opponent_tc == own else opponent_tc,
        options=options,
        nodes=_limit(message.get("nodes")),
        depth=_limit(message.get("depth")),
    )


def _clock(game: Game, clock: dict[str, Any], received_at: float) -> Clock:
    black, white = clock.get("black_ms"), clock.get("white_ms")
    mine, theirs = (black, white) if game.color is BLACK else (white, black)
    return Clock(
        my_ms=mine,
        opponent_ms=theirs,
        increment_ms=int(clock.get("increment_ms") or 0),
        move_limit_ms=clock.get("move_limit_ms"),
        moves_to_go=clock.get("moves_to_go"),
        received_at=received_at,
        nodes=game.nodes,
        depth=game.depth,
    )


def _catch_up(position: Position, game: Game, moves: list[str]) -> Position:
    """`position` brought to the end of `moves`: push the new moves, or rebuild if the history differs."""
    history = position.history
    known = len(history)
    if len(moves) >= known and all(str(history[i]) == moves[i] for i in range(known)):
        for text in moves[known:]:
            position.push(Move.parse(text))
        return position
    return Position.from_moves(moves, game.width, game.height, game.komi)


def _serve(
    session: _Session,
    choose: Choose,
    hello: dict[str, Any],
    on_new_game: Callable[[Game], None] | None,
    on_game_over: Callable[[Game, GameResult], None] | None,
    declared: Sequence[Option] = (),
) -> int:
    game: Game | None = None
    position: Position | None = None
    while True:
        item = session.inbox.get()
        if item is None:
            return 0  # end of input (or the referee stopped reading): nothing more to do
        received_at, message = item
        kind = message.get("type")
        if kind == "hello":
            if message.get("protocol") != PROTOCOL_VERSION:
                log(
                    f"kit: the referee speaks protocol {message.get('protocol')!r} but this kit speaks "
                    f"{PROTOCOL_VERSION}; answering anyway so that the referee can report the mismatch"
                )
            session.send(hello)
        elif kind == "new_game":
            game = _game(message, declared)
            position = Position(game.width, game.height, game.komi)
            if on_new_game is not None:
                on_new_game(game)
            session.send({"type": "ready", "game_id": game.game_id})
        elif kind == "turn":
            if game is None or position is None or message.get("game_id") != game.game_id:
                log(f"kit: ignoring a turn for game {message.get('game_id')!r}, which was never started")
                continue
            position = _catch_up(position, game, list(message.get("moves", [])))
            clock = _clock(game, message.get("clock") or {}, received_at)
            session.begin_turn()
            move = str(choose(position.copy(), clock))
            if not _is_legal_text(position, move):
                log(f"kit: warning: choose returned {move!r}, which is not a legal move here; sending it anyway")
            session.send_move(move)
        elif kind == "game_over":
            if game is not None and on_game_over is not None and message.get("game_id") == game.game_id:
                on_game_over(game, _result(message))
            game, position = None, None
        elif kind == "quit":
            return 0
        else:
            log(f"kit: ignoring a message of unknown type {kind!r}")


def _is_legal_text(position: Position, text: str) -> bool:
    try:
        position.parse_move(text)
    except ValueError:
        return False
    return True


def _result(message: dict[str, Any]) -> GameResult:
    winner = message.get("winner")
    return GameResult(
        game_id=str(message.get("game_id")),
        result=str(message.get("result")),
        winner=None if winner is None else _color(winner),
        reason=str(message.get("reason", "")),
        black_score=message.get("black_score"),
        white_score=message.get("white_score"),
        termination=message.get("termination"),
    )


def _real_stdio() -> tuple[Callable[[], bytes], Callable[[bytes], None]]:
    """Raw file descriptors for the protocol; fd 1 itself now leads to stderr (see the module docstring)."""
    sys.stdout.flush()
    out = os.dup(1)
    os.dup2(2, 1)

    def read_chunk() -> bytes:
        return os.read(0, MAX_LINE_BYTES)

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]

    return read_chunk, write


def _exit_now() -> None:
    """End the process at once with status 0, from any thread (`choose` cannot be interrupted otherwise)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()  # a stray print's text, bound for the log (fd 1 leads to stderr)
    log(f"kit: quit came during a turn and the move was not ready {QUIT_WAIT_S:g} s later: exiting without it")
    os._exit(0)


def _text_stdio(stdin: TextIO, stdout: TextIO) -> tuple[Callable[[], bytes], Callable[[bytes], None]]:
    def read_chunk() -> bytes:
        # A bounded readline: an over-long line reaches the LineBuffer in pieces and is refused there.
        return stdin.readline(MAX_LINE_BYTES).encode("utf-8", errors="surrogateescape")

    def write(data: bytes) -> None:
        stdout.write(data.decode("utf-8"))
        stdout.flush()

    return read_chunk, write


def run_bot(
    choose: Choose,
    *,
    name: str,
    author: str = "",
    version: str = "",
    on_new_game: Callable[[Game], None] | None = None,
    on_game_over: Callable[[Game, GameResult], None] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    options: Sequence[Option] = (),
) -> int:
    """Play as a bot until `quit` or the end of input.

    `choose(position, clock)` returns the move (a `Move` or its text) for the side to move in
    `position`, a copy the function may change freely. `on_new_game(game)` runs before `ready`;
    `on_game_over(game, result)` after each game. `options` are declared in the hello; each game's values
    are in `game.options` (the declared default where the referee sent none). With the real stdin and
    stdout (no streams given), this ends the process with its exit status: 0 after `quit` or end of
    input, 1 after an exception. Given text streams (tests), it returns the status instead.
    """
    global _active
    if not 1 <= len(name) <= 64 or len(author) > 128 or len(version) > 64:
        raise ValueError("run_bot: name must be 1-64 characters, author at most 128 and version at most 64")
    hello: dict[str, Any] = {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "name": name,
        "author": author,
        "version": version,
    }
    if options:
        names = [option.name for option in options]
        if len(set(names)) != len(names):
            raise ValueError(f"run_bot: an option name is given twice ({', '.join(names)})")
        hello["options"] = [option.declaration() for option in options]
    if stdin is None and stdout is None:
        read_chunk, write = _real_stdio()
    elif stdin is not None and stdout is not None:
        read_chunk, write = _text_stdio(stdin, stdout)
    else:
        raise ValueError("run_bot: give both stdin and stdout streams, or neither for the real ones")
    session = _Session(read_chunk, write, _exit_now if stdin is None else None)
    _active = session
    session.start()
    try:
        status = _serve(session, choose, hello, on_new_game, on_game_over, options)
    except Exception:
        import traceback

        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        status = 1
    finally:
        _active = None
    if stdin is None:
        sys.exit(status)
    return status
