"""The live feed: one JSON line per game start, move and game end in OUT_DIR/live.jsonl, for `alternator serve`.

The referee appends, the live view (a separate process, referee/outputs/serve.py) follows the file: a game in
progress can be watched move by move without the referee serving anything. Lines carry what the viewer
needs in its own compact form (referee/outputs/report.py `game_detail`), with the time it was written (`at`, ms since
the epoch: the page counts the mover's clock down from it), and a game's end carries its result and reason.
The file stays short (`MAX_FEED_BYTES`). Writing never stops a game: a failed write (a full disk) turns the
feed off with one warning. Moves are written in batches (`FLUSH_INTERVAL_S`): with instant bots a write a
move was the largest part of the referee's cost per move; a game's start and end, and the run's, are written
at once, and `flush` (the runner's one-second tick) writes what is left.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from protocol.messages import TimeControl
from referee.outputs.files import UnsafeOutputError, open_output, write_text_atomic
from referee.record import GameSettings, PlayedMove
from referee.timing.clock import describe_time_control

LIVE_FILE = "live.jsonl"
FLUSH_INTERVAL_S = 0.05
"""Moves are written at most this long after the last write (or at the next second's `flush`)."""
MAX_FEED_BYTES = 8 * 1024 * 1024
"""Past this size the feed is rewritten with only the games in progress (a `continued` run_started first): a
50,000-game run would otherwise leave ~450 MB of moves nobody follows any more. The reader sees a new file
and reads it from its start (referee/outputs/serve.py)."""


def _json_text(text: str) -> str:
    """`text` as a JSON string: quoted as is when plain (a game id, a move), else by json.dumps."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return json.dumps(text)


def _now_ms() -> int:
    return round(time.time() * 1000)


class LiveFeed:
    """Appends the live feed of one run to `out_dir/live.jsonl`: lines whole, moves in batches."""

    def __init__(self, out_dir: Path, *, max_bytes: int = MAX_FEED_BYTES) -> None:
        self.path = out_dir / LIVE_FILE
        self.max_bytes = max_bytes
        self._file: IO[str] | None = None
        self._failed = False
        self._board: dict[str, Any] = {}
        self._time_control: TimeControl | None = None
        self._kind = "tournament"
        self._size = 0
        self._playing: dict[str, list[str]] = {}  # game id -> its lines so far (a rewrite keeps them)
        self._move_heads: dict[str, str] = {}  # game id -> the start of its move lines, while it is played
        self._flushed = 0.0

    def _write(self, event: dict[str, Any], *, fresh: bool = False) -> None:
        if self._failed:
            return
        line = json.dumps(event, separators=(",", ":")) + "\n"
        game_id = str(event.get("id"))
        if event["type"] == "game_started":
            self._playing[game_id] = [line]
        elif event["type"] == "game_finished":
            self._playing.pop(game_id, None)
            self._move_heads.pop(game_id, None)
        self._write_line(line, fresh=fresh)
        self.flush()

    def _write_line(self, line: str, *, fresh: bool = False) -> None:
        try:
            if fresh:
                self.close()
                self._playing.clear()
                self._move_heads.clear()
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # Never through a planted link; buffered: moves are written in batches (`flush`).
                self._file = open_output(self.path, "w" if fresh else "a", line_buffered=False)
                self._size = self.path.stat().st_size
            self._file.write(line)
            self._size += len(line)
            if self._size > self.max_bytes:
                self._rewrite()
        except OSError as error:
            self._failed = True
            print(f"warning: {self.path}: the live feed is off ({error.strerror})", file=sys.stderr)
            if isinstance(error, UnsafeOutputError):
                self.close()

    def _rewrite(self) -> None:
        """Start the file afresh with only the games in progress, replaced whole (readers see one or the other)."""
        head = json.dumps({"type": "run_started", "kind": self._kind, "continued": True}, separators=(",", ":"))
        lines = [head + "\n", *(line for game in self._playing.values() for line in game)]
        self.close()
        write_text_atomic(self.path, lines)
        self._size = sum(len(line) for line in lines)

    def run_started(self, kind: str) -> None:
        """A run (or a resumed one) begins: the feed starts afresh, so it holds one run's moves at most."""
        self._kind = kind
        self._write({"type": "run_started", "kind": kind}, fresh=True)

    def on_event(self, event: Any) -> None:
        """Follow a runner's events (referee/outputs/events.py): starts and ends of the run and of its games."""
        kind = getattr(event, "type", None)
        if kind == "run_started":
            self._board = {"width": event.width, "height": event.height, "komi": event.komi}
            self._time_control = event.time_control
            self.run_started(getattr(event, "kind", "tournament"))
        elif kind == "game_started" and self._time_control is not None:
            settings = GameSettings(time_control=self._time_control, opening=list(event.opening), **self._board)
            self.game_started(event.game_id, event.black, event.white, settings, number=getattr(event, "number", None))
        elif kind == "game_finished":
            self.game_finished(
                event.game_id,
                result=getattr(event, "result", None),
                termination=str(getattr(event, "termination", "")) or None,
                reason=getattr(event, "reason", None),
                scored=getattr(event, "scored", None),
            )
        elif kind == "host_busy":
            busy = event.paused or event.games_at_once < event.concurrency
            self._write({"type": "host", "status": event.status if busy else ""})
        elif kind == "run_finished":
            self.run_finished(getattr(event, "ended", None))

    def on_moves(self, game: Any, moves: Sequence[tuple[PlayedMove, int]]) -> None:
        """A runner's moves callback: `game` is the scheduled game (it has a `game_id`)."""
        self.moves(game.game_id, moves)

    def game_started(
        self, game_id: str, black: str, white: str, settings: GameSettings, *, number: int | None = None
    ) -> None:
        control = settings.time_control
        self._write(
            {
                "type": "game_started",
                "id": game_id,
                "n": number,
                "b": black,
                "w": white,
                "W": settings.width,
                "H": settings.height,
                "k": settings.komi,
                "tc": describe_time_control(control),
                "base": control.base_ms,
                "mt": control.move_time_ms,
                "o": " ".join(settings.opening),
                "clock": control.base_ms is not None,
                "at": _now_ms(),
            }
        )

    def move(self, game_id: str, move: PlayedMove) -> None:
        self.moves(game_id, ((move, 0),))

    def moves(self, game_id: str, moves: Sequence[tuple[PlayedMove, int]]) -> None:
        """A batch of a game's moves (each with its ply, unused here), written as one line each in one write."""
        if self._failed or not moves:
            return
        # Written by hand, as json.dumps would: this runs for every move of every game.
        head = self._move_heads.get(game_id)
        if head is None:
            head = self._move_heads[game_id] = f'{{"type":"move","id":{_json_text(game_id)},"move":'
        at = _now_ms()
        lines = []
        for move, _ in moves:
            infos = move.infos
            info = json.dumps(infos[-1], separators=(",", ":")) if infos else "null"
            clock = "null" if move.clock_ms is None else move.clock_ms
            text = move.move  # a move's text passed the rules: letters and digits, quoted as they are
            quoted = f'"{text}"' if text.isalnum() and text.isascii() else _json_text(text)
            lines.append(
                f'{head}{quoted},"color":"{move.color}","t":{round(move.elapsed_ms * 10)},'
                f'"clock":{clock},"info":{info},"count":{len(infos) + move.infos_dropped},"at":{at}}}\n'
            )
        playing = self._playing.get(game_id)
        if playing is not None:
            playing += lines
        self._write_line("".join(lines))
        now = time.monotonic()
        if now - self._flushed >= FLUSH_INTERVAL_S:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        """Write out what is buffered (moves wait for at most `FLUSH_INTERVAL_S`, or this call)."""
        self._flushed = time.monotonic() if now is None else now
        if self._file is not None and not self._failed:
            try:
                self._file.flush()
            except OSError as error:
                self._failed = True
                print(f"warning: {self.path}: the live feed is off ({error.strerror})", file=sys.stderr)

    def game_finished(
        self,
        game_id: str,
        *,
        result: str | None = None,
        termination: str | None = None,
        reason: str | None = None,
        scored: bool | None = None,
    ) -> None:
        self._write(
            {"type": "game_finished", "id": game_id, "r": result, "x": termination, "why": reason, "scored": scored}
        )

    def run_finished(self, ended: str | None = None) -> None:
        self._write({"type": "run_finished", "ended": ended})

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
