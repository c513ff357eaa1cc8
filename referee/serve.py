"""The live view: a small ASGI app on hypercorn's trio worker that follows a running match or tournament.

`alternator serve OUT_DIR` runs beside the referee, as a separate process, and follows its output
directory: the finished games (games.jsonl or game-*.json, re-read when they change) and the live feed
(live.jsonl, referee/livefeed.py: every move of the games in progress). Browsers get the report page in
live mode (referee/report.py, the same viewer) and a stream of server-sent events: `summary` (the
standings and the list of games, after every finished game), `game` (a game started), `move`, `done`.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from referee.livefeed import LIVE_FILE
from referee.report import (
    GAMES_FILE,
    MATCH_FILE,
    ReportError,
    Run,
    game_detail,
    gc_paused,
    load_run,
    parse_jsonl,
    render_page,
    run_of,
    summary_data,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

POLL_S = 0.25  # how often the feed and the output files are looked at
RELOAD_MIN_S = 1.0  # finished games are re-read at most this often (a 10,000-game run takes a while)
KEEPALIVE_S = 15.0
CLIENT_BUFFER = 1024  # events queued for a slow browser before it is dropped (it reconnects and catches up)


@dataclass
class LiveState:
    """What the live page shows: the finished games' summary and the games in progress."""

    out_dir: Path
    run: Run | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    clients: set[trio.MemorySendChannel[tuple[str, str]]] = field(default_factory=set)
    feed_offset: int = 0
    feed_id: tuple[int, int] | None = None
    files_seen: tuple[Any, ...] | None = None
    kind: str | None = None  # "match" or "tournament", as the feed's run_started says
    games_file: tuple[int, int] | None = None  # games.jsonl's inode and the end of what was read
    last_reload: float = -math.inf

    def broadcast(self, event: str, data: Any) -> None:
        text = json.dumps(data, separators=(",", ":"))
        for client in list(self.clients):
            try:
                client.send_nowait((event, text))
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                # Too slow or gone: drop it; EventSource reconnects and gets the whole state again.
                self.clients.discard(client)
                client.close()

    # -- finished games ---------------------------------------------------------------------------

    def files_signature(self) -> tuple[Any, ...]:
        """Changes whenever a game is added: the sizes and times of the files that hold finished games."""
        signature: list[Any] = []
        for name in (GAMES_FILE, MATCH_FILE):
            try:
                stat = (self.out_dir / name).stat()
                signature.append((name, stat.st_size, stat.st_mtime_ns, stat.st_ino))
            except OSError:
                signature.append((name, None))
        games = sorted(self.out_dir.glob("game-*.json"))
        signature.append(("game-*.json", len(games), games[-1].stat().st_mtime_ns if games else None))
        return tuple(signature)

    def load(self) -> None:
        """Re-read the finished games (in a worker thread: it can take a while).

        A tournament's games.jsonl only grows while it runs: then only the new lines are read. A new file
        (the tournament rewrites it whole at its start and end) is read from the start.
        """
        with gc_paused():
            try:
                run = self._appended() or self._read_all()
            except ReportError as error:
                print(f"warning: {error}", file=sys.stderr)  # a broken match.json: keep what is shown
                return
            self.summary = summary_data(run, live=True)
        self.run = run  # one assignment: the trio thread sees the old run or the new one

    def _read_all(self) -> Run:
        self.games_file = None
        path = self.out_dir / GAMES_FILE
        try:
            # A tournament: read once, remember where the complete lines end, follow from there.
            stat = path.stat()
            data = path.read_bytes()
        except OSError:
            try:
                return load_run(self.out_dir)
            except ReportError:
                return Run(self.kind or "tournament", self.out_dir, [], [])  # nothing finished yet
        complete = data.rfind(b"\n") + 1
        self.games_file = (stat.st_ino, complete)
        return run_of(self.out_dir, *parse_jsonl(data[:complete], GAMES_FILE), kind=self.kind)

    def _appended(self) -> Run | None:
        """The run with the lines appended to games.jsonl since the last read; None: read it all again."""
        if self.run is None or self.games_file is None:
            return None
        path = self.out_dir / GAMES_FILE
        try:
            stat = path.stat()
            inode, offset = self.games_file
            if stat.st_ino != inode or stat.st_size < offset:
                return None
            with path.open("rb") as file:
                file.seek(offset)
                data = file.read(stat.st_size - offset)
        except OSError:
            return None
        complete = data.rfind(b"\n") + 1
        records, errors = parse_jsonl(data[:complete], GAMES_FILE)
        self.games_file = (inode, offset + complete)
        return run_of(self.out_dir, [*self.run.records, *records], [*self.run.errors, *errors], kind=self.kind)

    def detail(self, number: int) -> dict[str, Any] | None:
        if self.run is None or not 1 <= number <= len(self.run.records):
            return None
        return game_detail(number, self.run.records[number - 1])

    # -- the feed ---------------------------------------------------------------------------------

    def read_feed(self) -> None:
        """Apply the feed lines written since the last look (from the start when the file was replaced)."""
        path = self.out_dir / LIVE_FILE
        try:
            stat = path.stat()
        except OSError:
            return
        identity = (stat.st_ino, stat.st_dev)
        if identity != self.feed_id or stat.st_size < self.feed_offset:
            self.feed_id, self.feed_offset = identity, 0
            self.end_all_live()
        if stat.st_size == self.feed_offset:
            return
        with path.open("rb") as file:
            file.seek(self.feed_offset)
            data = file.read(stat.st_size - self.feed_offset)
        complete = data.rfind(b"\n") + 1  # a half-written last line waits for the next look
        self.feed_offset += complete
        for line in data[:complete].splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                self.apply(event)

    def apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "run_started" and isinstance(event.get("kind"), str):
            self.kind = event["kind"]
        if kind in ("run_started", "run_finished"):
            self.end_all_live()
        elif kind == "game_started":
            detail = {
                "n": None,
                "id": event["id"],
                "b": event["b"],
                "w": event["w"],
                "W": event["W"],
                "H": event["H"],
                "k": event["k"],
                "tc": event.get("tc", ""),
                "base": event.get("base"),
                "o": event.get("o", ""),
                "m": "",
                "c": "",
                "t": [],
                "k2": [] if event.get("clock") else None,
                "i": [],
                "r": "*",
                "x": "",
                "why": "in progress",
            }
            self.live[detail["id"]] = detail
            self.broadcast("game", detail)
        elif kind == "move":
            playing = self.live.get(event.get("id", ""))
            if playing is None:
                return
            detail = playing
            detail["m"] = f"{detail['m']} {event['move']}" if detail["m"] else event["move"]
            detail["c"] += "b" if event["color"] == "black" else "w"
            detail["t"].append(event["t"])
            if detail["k2"] is not None:
                detail["k2"].append(event.get("clock"))
            if event.get("info"):
                detail["i"].append([len(detail["t"]) - 1, event["info"], event.get("count", 1)])
            self.broadcast("move", event)
        elif kind == "game_finished" and self.live.pop(event.get("id", ""), None) is not None:
            self.broadcast("done", {"id": event["id"]})

    def end_all_live(self) -> None:
        for game_id in list(self.live):
            del self.live[game_id]
            self.broadcast("done", {"id": game_id})


async def follow_feed(state: LiveState) -> None:
    """Look at the live feed every POLL_S: moves reach the browsers while finished games are being read."""
    while True:
        state.read_feed()
        await trio.sleep(POLL_S)


async def follow_games(state: LiveState) -> None:
    """Re-read the finished games when their files change (at most every RELOAD_MIN_S); send the summary."""
    while True:
        signature = state.files_signature()
        if signature != state.files_seen and time.monotonic() - state.last_reload >= RELOAD_MIN_S:
            state.files_seen = signature
            state.last_reload = time.monotonic()
            await trio.to_thread.run_sync(state.load)
            state.broadcast("summary", state.summary)
        await trio.sleep(POLL_S)


def make_app(state: LiveState) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The ASGI app: `/` the page, `/api/events` the event stream, `/api/game/N` a finished game."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path = scope["path"]
        if scope["method"] != "GET":
            await _respond(send, 405, "text/plain", b"only GET is served\n")
        elif path == "/":
            page = render_page(state.summary, None, live=True)
            await _respond(send, 200, "text/html; charset=utf-8", page.encode())
        elif path == "/api/events":
            await _stream(state, receive, send)
        elif path.startswith("/api/game/") and path.removeprefix("/api/game/").isdigit():
            detail = state.detail(int(path.removeprefix("/api/game/")))
            if detail is None:
                await _respond(send, 404, "text/plain", b"no finished game with that number\n")
            else:
                body = json.dumps(detail, separators=(",", ":")).encode()
                await _respond(send, 200, "application/json", body)
        else:
            await _respond(send, 404, "text/plain", b"not found: the live page is at /\n")

    return app


async def _respond(send: Send, status: int, content_type: str, body: bytes) -> None:
    headers = [(b"content-type", content_type.encode()), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _event(name: str, data: str) -> dict[str, Any]:
    return {"type": "http.response.body", "body": f"event: {name}\ndata: {data}\n\n".encode(), "more_body": True}


async def _stream(state: LiveState, receive: Receive, send: Send) -> None:
    """Server-sent events until the browser goes: the whole state first, then every change."""
    sender, receiver = trio.open_memory_channel[tuple[str, str]](CLIENT_BUFFER)
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send(_event("summary", json.dumps(state.summary, separators=(",", ":"))))
    for detail in list(state.live.values()):
        await send(_event("game", json.dumps(detail, separators=(",", ":"))))
    state.clients.add(sender)

    async def until_disconnect(scope: trio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(until_disconnect, nursery.cancel_scope)
            async with receiver:
                while True:
                    with trio.move_on_after(KEEPALIVE_S):
                        name, data = await receiver.receive()
                        await send(_event(name, data))
                        continue
                    await send({"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True})
    except (trio.EndOfChannel, trio.ClosedResourceError):
        pass
    finally:
        state.clients.discard(sender)
        sender.close()


async def serve(out_dir: Path, host: str, port: int, *, on_ready: Callable[[str], None]) -> None:
    """Serve the live page of `out_dir` until cancelled; `on_ready` gets the address once it listens."""
    from hypercorn.config import Config
    from hypercorn.trio import serve as hypercorn_serve

    state = LiveState(out_dir)
    await trio.to_thread.run_sync(state.load)
    state.files_seen = state.files_signature()
    state.last_reload = time.monotonic()
    state.read_feed()
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(follow_feed, state)
        nursery.start_soon(follow_games, state)
        binds = await nursery.start(hypercorn_serve, make_app(state), config)
        on_ready(str(binds[0]) if binds else f"http://{host}:{port}")
