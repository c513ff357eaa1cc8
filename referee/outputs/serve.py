"""The live view: a small ASGI app on hypercorn's trio worker that follows a running match or tournament.

`alternator serve OUT_DIR` runs beside the referee, as a separate process, and follows its output
directory through the one reader (referee/run/rundir.py): the games committed to the database since its last
look (read one at a time, counted into a `RunFigures` and dropped: nothing is kept per game, so the memory
stays flat however many games the run holds; the page asks for the list of games a page at a time,
`/api/games`, and a finished game is read again from the database when a browser opens it), and the live
feed (live.jsonl, referee/outputs/livefeed.py: every move of the games in progress). Browsers get the report page in
live mode (referee/outputs/report.py, the same viewer) and a stream of server-sent events: `summary` (the
head-to-head with its LLR, the standings, the progress charts and the number of games, after every finished
game), `game` (a game started), `move`, `done` (a game ended, with its result and reason), `host` (a busy
host made the run play fewer games at once or pause: its status line, "" when calm again) and `finished`
(the run is over).

Every request is checked first (referee.outputs.httpsafety): its `Host` header against the names the server answers to
(loopback names, the address it listens on, `--allow-host`), so a page elsewhere cannot read it through DNS
rebinding; a game number in a path is ASCII digits of bounded length (400 otherwise, 404 when there is no such
game); one client address holds at most MAX_STREAMS_PER_CLIENT event streams (429 beyond). An event is encoded
once and the same bytes are sent to every browser, so memory does not grow with the browsers watching.
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from referee.outputs.httpsafety import ClientLimit, HostCheck, client_address, lifespan, parse_number, parse_query
from referee.outputs.livefeed import LIVE_FILE
from referee.outputs.report import TERMINATIONS, ReportError, RunFigures, games_page, gc_paused, load_run, render_page
from referee.outputs.viewerline import numbered
from referee.run.rundir import GAMES_FILE, MATCH_FILE, RunDirectory, RunReadError
from referee.run.store import StoreError, database_path
from referee.stats.standings import Anchor

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

POLL_S = 0.25  # how often the feed and the output files are looked at
RELOAD_MIN_S = 1.0  # finished games are looked for at most this often
KEEPALIVE_S = 15.0
CLIENT_BUFFER = 1024  # events queued for a slow browser before it is dropped (it reconnects and catches up)


@dataclass
class LiveState:
    """What the live page shows: the figures of the finished games and the games in progress."""

    out_dir: Path
    run: RunDirectory | None = None
    figures: RunFigures | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    clients: set[trio.MemorySendChannel[bytes]] = field(default_factory=set)
    feed_offset: int = 0
    feed_id: tuple[int, int] | None = None
    files_seen: tuple[Any, ...] | None = None
    kind: str | None = None  # "match" or "tournament", as the feed's run_started says
    finished: bool = False  # the feed says the run ended (or there is no feed: a run from before it)
    host: str = ""  # a busy host holds the run back: the runner's status line ("" while the host is calm)
    last_reload: float = -math.inf
    anchor: Anchor | None = None  # `serve --anchor`: the rating scale, instead of the run's own
    summary_event: bytes | None = None  # the last summary, encoded: what a browser that connects gets first
    lock: threading.Lock = field(default_factory=threading.Lock)  # the reader is used by one thread at a time

    def broadcast(self, event: str, data: Any) -> None:
        self.send_all(event_bytes(event, json.dumps(data, separators=(",", ":"))))  # once, for every browser

    def send_all(self, message: bytes) -> None:
        for client in list(self.clients):
            try:
                client.send_nowait(message)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                # Too slow or gone: drop it; EventSource reconnects and gets the whole state again.
                self.clients.discard(client)
                client.close()

    # -- finished games ---------------------------------------------------------------------------

    def files_signature(self) -> tuple[Any, ...]:
        """Changes whenever a game is committed: the database (and its WAL), games.jsonl, match.json."""
        signature: list[Any] = []
        database = database_path(self.out_dir).name
        for name in (database, database + "-wal", GAMES_FILE, MATCH_FILE):
            try:
                stat = (self.out_dir / name).stat()
                signature.append((name, stat.st_size, stat.st_mtime_ns, stat.st_ino))
            except OSError:
                signature.append((name, None))
        games = sorted(self.out_dir.glob("game-*.json"))
        signature.append(("game-*.json", len(games), games[-1].stat().st_mtime_ns if games else None))
        return tuple(signature)

    def load(self) -> None:
        """Count the games committed since the last look (in a worker thread); the whole run again when its
        source changed (the database appeared, or holds fewer games: a new run in the directory)."""
        with self.lock, gc_paused():
            try:
                if self._stale():
                    self._reopen()
                if self.run is not None and self.figures is not None:
                    for row, text in self.run.lines(self.figures.count):
                        self.figures.add_text(row, text)
                    self.run.check_games_file()  # the lines appended since: each compared once
            except (ReportError, RunReadError, StoreError, sqlite3.Error) as error:
                print(f"warning: {error}", file=sys.stderr)  # keep what is shown; the next look tries again
                return
            if self.figures is not None:
                self.summary = self.figures.summary(live=True, finished=self.finished)
            else:
                self.summary = _empty_summary(self.out_dir, self.kind, finished=self.finished)
            self.summary["host"] = self.host
            self.summary_event = event_bytes("summary", json.dumps(self.summary, separators=(",", ":")))

    def _stale(self) -> bool:
        run = self.run
        if run is None or not run.from_database:
            return True  # nothing yet, or games.jsonl without a database (older runs): read it whole again
        return self.figures is None or run.count() < self.figures.count

    def _reopen(self) -> None:
        if self.run is not None:
            self.run.close()
        self.run = self.figures = None
        try:
            self.run = load_run(self.out_dir, kind=self.kind)
        except ReportError:
            return  # nothing finished yet
        if self.anchor is not None:
            self.run.anchor = self.anchor
        self.figures = RunFigures(self.run, keep_games=False)  # the list is paged from the store

    def detail(self, number: int) -> str | None:
        """The viewer line of the `number`th finished game (commit order), read from the database when asked."""
        with self.lock:
            if self.run is None or self.figures is None or not 1 <= number <= self.figures.count:
                return None
            line = self.run.line_at(number)
        return None if line is None else numbered(number, line)

    def page(self, query: dict[str, Any]) -> bytes:
        """A page of the finished games (`/api/games`) as JSON, read from the store: only the page's lines."""
        with self.lock:
            if self.run is None or self.figures is None:
                return b'{"offset":0,"limit":%d,"total":0,"games":[]}' % query["limit"]
            found = games_page(
                self.run,
                query["offset"],
                query["limit"],
                bot=query.get("bot"),
                result=query.get("result"),
                termination=query.get("termination"),
            )
        return found.model_dump_json().encode()

    # -- the feed ---------------------------------------------------------------------------------

    def read_feed(self) -> None:
        """Apply the feed lines written since the last look (from the start when the file was replaced: a new
        run, or the referee keeping the feed short)."""
        path = self.out_dir / LIVE_FILE
        try:
            stat = path.stat()
        except OSError:
            return
        identity = (stat.st_ino, stat.st_dev)
        replaced: set[str] = set()
        if identity != self.feed_id or stat.st_size < self.feed_offset:
            self.feed_id, self.feed_offset = identity, 0
            replaced = set(self.live)
            self.live.clear()  # the new file says again which games are in progress
        if stat.st_size != self.feed_offset:
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
        for game_id in replaced - set(self.live):
            self.broadcast("done", {"id": game_id})

    def apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "run_started":
            if isinstance(event.get("kind"), str):
                self.kind = event["kind"]
            if not event.get("continued"):
                self.end_all_live()
            if self.finished:
                self.finished = False
                self.broadcast("finished", {"finished": False})
        elif kind == "host":  # a busy host holds the run back ("" once it is calm again)
            self.host = str(event.get("status") or "")
            self.broadcast("host", {"status": self.host})
        elif kind == "run_finished":
            self.end_all_live()
            self.finished = True
            self.broadcast("finished", {"finished": True, "ended": event.get("ended")})
        elif kind == "game_started":
            detail = {
                "n": event.get("n"),
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
                "at": event.get("at"),
                "mt": event.get("mt"),
            }
            self.live[detail["id"]] = detail
            self.broadcast("game", detail)
            if self.finished:  # a game in progress: the run is going on (a feed that did not say it started)
                self.finished = False
                self.broadcast("finished", {"finished": False})
        elif kind == "move":
            playing = self.live.get(event.get("id", ""))
            if playing is None:
                return
            detail = playing
            detail["m"] = f"{detail['m']} {event['move']}" if detail["m"] else event["move"]
            detail["c"] += "b" if event["color"] == "black" else "w"
            detail["t"].append(event["t"])
            detail["at"] = event.get("at")
            if detail["k2"] is not None:
                detail["k2"].append(event.get("clock"))
            if event.get("info"):
                detail["i"].append([len(detail["t"]) - 1, event["info"], event.get("count", 1)])
            self.broadcast("move", event)
        elif kind == "game_finished" and self.live.pop(event.get("id", ""), None) is not None:
            ending = {key: event.get(key) for key in ("r", "x", "why", "scored", "bs", "ws")}
            self.broadcast("done", {"id": event["id"], **ending})

    def end_all_live(self) -> None:
        for game_id in list(self.live):
            del self.live[game_id]
            self.broadcast("done", {"id": game_id})


def _empty_summary(out_dir: Path, kind: str | None, *, finished: bool) -> dict[str, Any]:
    """The summary before any game finished."""
    return {
        "kind": kind or "tournament",
        "title": out_dir.name,
        "outDir": str(out_dir),
        "generated": "",
        "live": True,
        "finished": finished,
        "settings": None,
        "bots": [],
        "terminations": [],
        "headToHead": None,
        "standings": {"rows": [], "order": [], "pairs": {}, "los": {}, "totals": {}},
        "progress": {"scoreAt": [], "score": {}, "eloAt": [], "elo": {}},
        "games": [],
        "gameCount": 0,
        "terminationsUsed": [],
        "total": None,
        "errors": [],
    }


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
            if state.summary_event is not None:
                state.send_all(state.summary_event)
        await trio.sleep(POLL_S)


def make_app(
    state: LiveState, hosts: HostCheck | None = None, streams: ClientLimit | None = None
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The ASGI app: `/` the page, `/api/events` the event stream, `/api/games?offset=&limit=` a page of the
    finished games (referee/schema/games_page.json), `/api/game/N` a finished game."""
    hosts = hosts or HostCheck()
    streams = streams or ClientLimit()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope["path"]
        if not hosts.allows(scope):
            await _respond(
                send,
                403,
                "text/plain",
                b"this live view answers to this machine's own names only (localhost); to reach it by another name,"
                b" start it with --allow-host NAME\n",
            )
        elif scope["method"] != "GET":
            await _respond(send, 405, "text/plain", b"only GET is served\n")
        elif path == "/":
            page = render_page(
                state.summary or _empty_summary(state.out_dir, state.kind, finished=False), None, live=True
            )
            await _respond(send, 200, "text/html; charset=utf-8", page.encode())
        elif path == "/api/events":
            address = client_address(scope)
            if not streams.acquire(address):
                await _respond(send, 429, "text/plain", b"too many open event streams from this address\n")
                return
            try:
                await _stream(state, receive, send)
            finally:
                streams.release(address)
        elif path == "/api/games":
            try:
                query = parse_query(scope.get("query_string", b""), ("bot", "result", "termination"))
                if query.get("result") not in (None, "1-0", "0-1", "1/2-1/2"):
                    raise ValueError("result is 1-0, 0-1 or 1/2-1/2")
                if query.get("termination") not in (None, *TERMINATIONS):
                    raise ValueError(f"termination is one of {', '.join(TERMINATIONS)}")
            except ValueError as error:
                message = f"{error}; a page of the games is asked for as /api/games?offset=0&limit=100\n"
                await _respond(send, 400, "text/plain", message.encode())
                return
            body = await trio.to_thread.run_sync(state.page, query)
            await _respond(send, 200, "application/json", body)
        elif path.startswith("/api/game/"):
            number = parse_number(path.removeprefix("/api/game/"))
            if number is None:
                await _respond(send, 400, "text/plain", b"a game is asked for by its number: /api/game/1\n")
                return
            detail = await trio.to_thread.run_sync(state.detail, number)
            if detail is None:
                await _respond(send, 404, "text/plain", b"no finished game with that number\n")
            else:
                await _respond(send, 200, "application/json", detail.encode())
        else:
            await _respond(send, 404, "text/plain", b"not found: the live page is at /\n")

    return app


async def _respond(send: Send, status: int, content_type: str, body: bytes) -> None:
    headers = [(b"content-type", content_type.encode()), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def event_bytes(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


def _event(body: bytes) -> dict[str, Any]:
    return {"type": "http.response.body", "body": body, "more_body": True}


async def _stream(state: LiveState, receive: Receive, send: Send) -> None:
    """Server-sent events until the browser goes: the whole state first, then every change."""
    sender, receiver = trio.open_memory_channel[bytes](CLIENT_BUFFER)
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    summary = state.summary_event or event_bytes("summary", json.dumps(state.summary, separators=(",", ":")))
    await send(_event(summary))
    for detail in list(state.live.values()):
        await send(_event(event_bytes("game", json.dumps(detail, separators=(",", ":")))))
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
                        await send(_event(await receiver.receive()))
                        continue
                    await send({"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True})
    except (trio.EndOfChannel, trio.ClosedResourceError):
        pass
    finally:
        state.clients.discard(sender)
        sender.close()


async def serve(
    out_dir: Path,
    host: str,
    port: int,
    *,
    on_ready: Callable[[str], None],
    anchor: Anchor | None = None,
    allow_hosts: Sequence[str] = (),
) -> None:
    """Serve the live page of `out_dir` until cancelled; `on_ready` gets the address once it listens; `anchor`
    fixes the ratings' scale (default: the run's own). The page answers to loopback names, to `host` itself when
    it is one address, and to `allow_hosts`."""
    from hypercorn.config import Config
    from hypercorn.trio import serve as hypercorn_serve

    state = LiveState(out_dir, anchor=anchor)
    state.finished = not (out_dir / LIVE_FILE).exists()  # no feed: a run from before it, over
    state.read_feed()
    await trio.to_thread.run_sync(state.load)
    state.files_seen = state.files_signature()
    state.last_reload = time.monotonic()
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(follow_feed, state)
        nursery.start_soon(follow_games, state)
        names = [*allow_hosts, *([] if host in ("0.0.0.0", "::", "") else [host, f"[{host}]"])]
        binds = await nursery.start(hypercorn_serve, make_app(state, HostCheck(names)), config)
        on_ready(str(binds[0]) if binds else f"http://{host}:{port}")
