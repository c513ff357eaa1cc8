"""The live feed: one JSON line per game start, move and game end in OUT_DIR/live.jsonl, for `alternator serve`.

The referee appends, the live view (a separate process, referee/serve.py) follows the file: a game in
progress can be watched move by move without the referee serving anything. Lines carry what the viewer
needs in its own compact form (referee/report.py `game_detail`). Writing never stops a game: a failed
write (a full disk) turns the feed off with one warning.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import IO, Any

from protocol.messages import TimeControl
from referee.record import GameSettings, MoveRecord
from referee.report import describe_time_control

LIVE_FILE = "live.jsonl"


class LiveFeed:
    """Appends the live feed of one run to `out_dir/live.jsonl` (line-buffered: each line is one write)."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / LIVE_FILE
        self._file: IO[str] | None = None
        self._failed = False
        self._board: dict[str, Any] = {}
        self._time_control: TimeControl | None = None

    def _write(self, event: dict[str, Any], *, fresh: bool = False) -> None:
        if self._failed:
            return
        try:
            if fresh:
                self.close()
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("w" if fresh else "a", encoding="utf-8", buffering=1)
            self._file.write(json.dumps(event, separators=(",", ":")) + "\n")
        except OSError as error:
            self._failed = True
            print(f"warning: {self.path}: the live feed is off ({error.strerror})", file=sys.stderr)

    def run_started(self, kind: str) -> None:
        """A run (or a resumed one) begins: the feed starts afresh, so it holds one run's moves at most."""
        self._write({"type": "run_started", "kind": kind}, fresh=True)

    def on_event(self, event: Any) -> None:
        """Follow a runner's events (referee/events.py): starts and ends of the run and of its games."""
        kind = getattr(event, "type", None)
        if kind == "tournament_started":
            self._board = {"width": event.width, "height": event.height, "komi": event.komi}
            self._time_control = event.time_control
            self.run_started(getattr(event, "kind", "tournament"))
        elif kind == "game_started" and self._time_control is not None:
            settings = GameSettings(time_control=self._time_control, opening=list(event.opening), **self._board)
            self.game_started(event.game_id, event.black, event.white, settings)
        elif kind == "game_finished":
            self.game_finished(event.game_id)
        elif kind == "tournament_finished":
            self.run_finished()

    def on_move(self, game: Any, move: MoveRecord, position: object) -> None:
        """A runner's per-move callback: `game` is the scheduled game (it has a `game_id`)."""
        self.move(game.game_id, move)

    def game_started(self, game_id: str, black: str, white: str, settings: GameSettings) -> None:
        control = settings.time_control
        self._write(
            {
                "type": "game_started",
                "id": game_id,
                "b": black,
                "w": white,
                "W": settings.width,
                "H": settings.height,
                "k": settings.komi,
                "tc": describe_time_control(control.model_dump()),
                "base": control.base_ms,
                "o": " ".join(settings.opening),
                "clock": control.base_ms is not None,
            }
        )

    def move(self, game_id: str, move: MoveRecord) -> None:
        info = move.infos[-1] if move.infos else None
        self._write(
            {
                "type": "move",
                "id": game_id,
                "move": move.move,
                "color": str(move.color),
                "t": round(move.elapsed_ms * 10),
                "clock": move.clock_ms,
                "info": info,
                "count": len(move.infos) + move.infos_dropped,
            }
        )

    def game_finished(self, game_id: str) -> None:
        self._write({"type": "game_finished", "id": game_id})

    def run_finished(self) -> None:
        self._write({"type": "run_finished"})

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
