"""The ladder's leaderboard: pages, a JSON API and uploads; an ASGI app on hypercorn's trio worker (as serve.py).

Routes (GET unless said):

    /                       the leaderboard (rank, rating ± uncertainty, games, W-D-L, trend, status), and the
                            games in progress, followed move by move
    /entry/NAME             an entry: its versions, rating history chart, recent games, its games in progress
                            move by move; its faults and stderr logs for its owner and the organiser
    /games/GAME_ID          a game in the arena's viewer (the report page of that one game)
    /upload                 the upload form (a participant's token, a name, a command, a file)
    /api/leaderboard        the leaderboard as JSON (referee/schema/ladder-leaderboard.schema.json)
    /api/entries/NAME       an entry as JSON
    /api/games/GAME_ID      a game's record (the arena's record format)
    /api/events             the games in progress as server-sent events (`game`, `move`, `done`): the live feed
                            the runner writes (DIR/live.jsonl), followed as `alternator serve` follows it
                            (referee/outputs/serve.py's LiveState and stream, reused)
    POST /api/entries       an upload: `Authorization: Bearer TOKEN` (or the form's token and CSRF field), and
                            multipart fields name, command and file

Every request must name an allowed `Host` (loopback names by default, `--allow-host` adds more), against DNS
rebinding: a page of another site that rebinds its name to 127.0.0.1 still sends its own name. A POST with an
`Origin` of another host is refused (cross-site forms), and a POST without a bearer token needs the CSRF field
that matches the form's cookie. Uploads are rate limited per participant and per client address.
Malformed paths get 400, unknown ones 404. Pages take their data from the API with a script of their own
(`/ladder.js`, which draws boards with the viewer's `/viewer.js`), under a Content-Security-Policy that allows no
inline script.

Fault reasons (why an entry is suspended, its faults with their stderr lines, its stderr logs, a fault's full
reason and stderr in a game record) go only to a request with `Authorization: Bearer TOKEN` of the entry's owner
(their upload token) or of the organiser (`alternator ladder DIR token add --organiser`); everyone else gets
the entry's status, and a fault's kind (`white (alice.v1) forfeits: crash`). A wrong token gets 401.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import secrets
import shlex
import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import trio

from referee.ladder.api import Leaderboard, public_reason, public_record
from referee.ladder.runner import LOG_DIR, LadderSettings
from referee.ladder.store import EntryRow, LadderError, LadderStore
from referee.ladder.uploads import (
    ORGANISER,
    UploadError,
    UploadLimits,
    check_entry_name,
    check_token,
    unpack_upload,
)
from referee.outputs.httpsafety import ClientLimit, HostCheck, client_address, header, lifespan
from referee.outputs.report import asset
from referee.outputs.serve import LiveState, follow_feed
from referee.outputs.serve import _stream as stream_events
from referee.run.botspec import BotSpec, BotSpecError, resolve_command

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

CACHE_S = 1.0
"""The leaderboard JSON is rebuilt at most this often (1,000 entries take tens of milliseconds)."""
TREND_GAMES = 10
RECENT_GAMES = 20
MAX_FORM_OVERHEAD = 64 << 10
DRAIN_LIMIT = 64 << 20
UPLOADS_PER_WINDOW = 5
UPLOAD_WINDOW_S = 60.0
MAX_ENTRIES_PER_PARTICIPANT = 3
LOG_FILES_SHOWN = 3
LOG_TAIL_BYTES = 8 << 10
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
STRICT_CSP = b"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'"
VIEWER_CSP = b"default-src 'self' 'unsafe-inline' data: blob:; frame-ancestors 'none'"


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class RateLimiter:
    """At most `count` events per `window_s` per key (a sliding window)."""

    count: int = UPLOADS_PER_WINDOW
    window_s: float = UPLOAD_WINDOW_S
    events: dict[str, deque[float]] = field(default_factory=dict)

    def allow(self, key: str, now: float) -> bool:
        times = self.events.setdefault(key, deque())
        while times and now - times[0] > self.window_s:
            times.popleft()
        if len(times) >= self.count:
            return False
        times.append(now)
        return True


@dataclass(frozen=True)
class Viewer:
    """Who asks: the public (no token), a participant (their upload token) or the organiser."""

    participant: str | None = None
    organiser: bool = False

    def may_see(self, owner: str | None) -> bool:
        """Whether this viewer reads the fault reasons of an entry owned by `owner` (None: the organiser's)."""
        return self.organiser or (self.participant is not None and owner == self.participant)


PUBLIC = Viewer()


@dataclass
class LadderSite:
    """What the server needs: the store, the allowed hosts, the upload limits, and a little cache."""

    store: LadderStore
    hosts: HostCheck
    """The names the site answers to (`referee.outputs.httpsafety`: loopback ones, `--allow-host`, the listening
    address)."""
    limits: UploadLimits = field(default_factory=UploadLimits)
    settings: LadderSettings = field(default_factory=LadderSettings)
    max_entries: int = MAX_ENTRIES_PER_PARTICIPANT
    limiter: RateLimiter = field(default_factory=RateLimiter)
    cache: tuple[float, bytes] | None = None
    upload_lock: threading.Lock = field(default_factory=threading.Lock)
    live: LiveState | None = None
    """The games in progress, from the runner's live feed (set by `__post_init__`)."""
    streams: ClientLimit = field(default_factory=ClientLimit)

    def __post_init__(self) -> None:
        if self.live is None:
            self.live = LiveState(self.store.directory)

    def viewer(self, scope: Scope) -> Viewer:
        """Who sends the request: a bearer token of a participant or the organiser; none: the public."""
        authorization = header(scope, b"authorization")
        if not authorization:
            return PUBLIC
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise HttpError(401, "refused: send the token as `Authorization: Bearer TOKEN`")
        participant = check_token(token.strip(), self.store.token_hashes())
        if participant is None:
            raise HttpError(401, "refused: the token is not valid; ask the organiser for yours")
        return Viewer(organiser=True) if participant == ORGANISER else Viewer(participant)

    # -- the figures ---------------------------------------------------------------------------------

    def leaderboard(self, viewer: Viewer = PUBLIC) -> dict[str, Any]:
        entries = self.store.entries()
        current = [e.version.id for e in entries if e.version is not None]
        trends = self.store.trends(current, TREND_GAMES)
        rows = []
        rank = 0
        for entry in entries:
            row = entry_json(entry, trends, private=viewer.may_see(entry.owner))
            if entry.status != "retired":
                rank += 1
                row["rank"] = rank
            rows.append(row)
        rows.sort(key=lambda row: (row["rank"] is None, row["rank"] or 0))
        return {
            "generated": datetime.now(UTC).isoformat(timespec="seconds"),
            "paused": self.store.paused,
            "games": self.store.game_count(),
            "entries": rows,
            "playing": [{"id": g, "black": b, "white": w, "since": s} for g, b, w, s in self.store.playing()],
        }

    def leaderboard_bytes(self, viewer: Viewer = PUBLIC) -> bytes:
        if viewer != PUBLIC:  # not cached: few ask with a token
            return Leaderboard.model_validate(self.leaderboard(viewer)).model_dump_json().encode()
        now = time.monotonic()
        if self.cache is not None and now - self.cache[0] < CACHE_S:
            return self.cache[1]
        data = Leaderboard.model_validate(self.leaderboard()).model_dump_json().encode()  # as its schema says
        self.cache = (now, data)
        return data

    def entry_detail(self, name: str, viewer: Viewer = PUBLIC) -> dict[str, Any] | None:
        entry = self.store.entry(name)
        if entry is None:
            return None
        private = viewer.may_see(entry.owner)
        trends = self.store.trends([entry.version.id] if entry.version else [], TREND_GAMES)
        ranked = [e.name for e in self.store.entries() if e.status != "retired"]
        versions = []
        for version in self.store.versions(name):
            versions.append(
                {
                    "number": version.number,
                    "key": version.key,
                    "created": version.created_at,
                    "retired": version.retired_at,
                    "rating": round(version.rating, 1),
                    "uncertainty": round(version.rd, 1),
                    "games": version.games,
                    "wins": version.wins,
                    "draws": version.draws,
                    "losses": version.losses,
                    "source": version.source,
                    "history": [[seq, round(r, 1), round(d, 1)] for seq, r, d in self.store.history(version.id)],
                }
            )
        return {
            **entry_json(entry, trends, private=private),
            "rank": ranked.index(name) + 1 if name in ranked else None,
            "owner": entry.owner,
            "private": private,
            "versions": versions,
            "recent": [
                {
                    "id": g.game_id,
                    "seq": g.seq,
                    "black": g.black,
                    "white": g.white,
                    "result": g.result,
                    "termination": g.termination,
                    # The opponent's fault is not this entry's to read; its own faults are listed below.
                    "reason": public_reason(g.termination, g.reason),
                    "finished": g.finished_at,
                }
                for g in self.store.recent_games(RECENT_GAMES, entry=name)
            ],
            "faults": [
                {"at": f.at, "version": f.version, "reason": f.reason, "stderr": f.stderr}
                for f in (self.store.faults(name) if private else [])
            ],
            "logs": self.logs(name) if private else [],
        }

    def logs(self, name: str) -> list[dict[str, str]]:
        """The last lines of the newest stderr logs of the entry's versions (for its owner and the organiser)."""
        paths: list[Path] = []
        for version in self.store.versions(name):
            paths += (self.store.directory / LOG_DIR).glob(f"{version.key}-*.stderr.log")
        shown = []
        for path in sorted(paths, key=lambda path: path.stat().st_mtime)[-LOG_FILES_SHOWN:]:
            with path.open("rb") as file:
                size = file.seek(0, 2)
                file.seek(max(0, size - LOG_TAIL_BYTES))
                tail = file.read().decode("utf-8", errors="replace")
            shown.append({"file": path.name, "tail": tail})
        return shown

    def game_text(self, game_id: str, viewer: Viewer) -> str | None:
        """A game's record: whole for the organiser and for the owner of the side that forfeited (the reason and
        stderr lines are its own), else as the public reads it."""
        text = self.store.record(game_id)
        if text is None:
            return None
        record = json.loads(text)
        entries = self.store.game_entries(game_id)
        side = {"black": 0, "white": 1}.get(str(record.get("loser")))
        offender = self.store.entry(entries[side]) if entries is not None and side is not None else None
        if viewer.organiser or (offender is not None and viewer.may_see(offender.owner)):
            return text
        return json.dumps(public_record(record), separators=(",", ":"))

    # -- uploads -------------------------------------------------------------------------------------

    def upload(self, participant: str, fields: dict[str, str], filename: str, data: bytes) -> dict[str, Any]:
        """Add or update the participant's entry from an upload; HttpError says why not."""
        name = fields.get("name", "").strip()
        command = fields.get("command", "").strip()
        if not name:
            raise HttpError(400, "no entry name: send -F name=NAME")
        if not command:
            raise HttpError(400, 'no command: send -F command="python3 bot.py" (run in the unpacked folder)')
        try:
            check_entry_name(name)
            words = shlex.split(command)
        except UploadError as error:
            raise HttpError(400, str(error)) from None
        except ValueError as error:
            raise HttpError(400, f"the command cannot be split into words ({error}); check its quotes") from None
        if len(command) > 1000 or not words:
            raise HttpError(400, "the command is empty or longer than 1,000 characters")
        with self.upload_lock:
            existing = self.store.entry(name)
            if existing is not None and existing.owner != participant:
                raise HttpError(403, f"refused: the entry {name!r} belongs to another participant; choose another name")
            if existing is None and len(self.store.owned(participant)) >= self.max_entries:
                raise HttpError(
                    403,
                    f"refused: you have {self.max_entries} entries already (the limit); update one of them instead",
                )
            number = len(self.store.versions(name)) + 1
            folder = self.store.directory / "entries" / name / f"v{number}"
            if folder.exists():
                shutil.rmtree(folder)  # left by an upload whose entry was never stored
            try:
                unpack_upload(filename or "bot", data, folder, self.limits)
            except UploadError as error:
                raise HttpError(400 if "at most" not in str(error) else 413, str(error)) from None
            try:
                spec = BotSpec(
                    name=name,
                    command=resolve_command(words),
                    dir=folder,
                    sandbox=True,
                    memory_mb=self.settings.memory_mb,
                    max_processes=self.settings.max_processes,
                    cpu_limit_s=self.settings.cpu_limit_s,
                )
                source = f"upload by {participant}: {filename or 'bot'} ({len(data):,} bytes), command {command}"
                if existing is None:
                    version = self.store.add_entry(name, spec, source, owner=participant)
                else:
                    version = self.store.update_entry(name, spec, source)
            except (BotSpecError, LadderError, ValueError) as error:
                shutil.rmtree(folder, ignore_errors=True)
                raise HttpError(400, f"refused: {error}") from None
        self.cache = None
        return {"entry": name, "version": version.number, "status": "active", "added": existing is None}


def entry_json(entry: EntryRow, trends: dict[int, float], *, private: bool = False) -> dict[str, Any]:
    """An entry's row; its suspension's reason only when `private` (its owner or the organiser asks)."""
    version = entry.version
    assert version is not None
    trend = trends.get(version.id)
    return {
        "rank": None,
        "name": entry.name,
        "rating": round(version.rating, 1),
        "uncertainty": round(version.rd, 1),
        "games": version.games,
        "wins": version.wins,
        "draws": version.draws,
        "losses": version.losses,
        "trend": None if trend is None else round(trend, 1),
        "status": entry.shown_status,
        "reason": entry.reason if private else None,
        "version": version.number,
    }


# -- HTTP ----------------------------------------------------------------------------------------------------


def parse_multipart(content_type: str, body: bytes) -> tuple[dict[str, str], str, bytes | None]:
    """The text fields, the file's name and the file's bytes of a multipart/form-data body."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise HttpError(415, "send the upload as multipart/form-data (curl -F ...)")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise HttpError(400, "the multipart body cannot be read")
    fields: dict[str, str] = {}
    filename = ""
    data: bytes | None = None
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            payload = b""
        if name == "file":
            filename = part.get_filename() or ""
            data = payload
        else:
            fields[name] = payload.decode("utf-8", errors="replace")
    return fields, filename, data


def cookie(scope: Scope, name: str) -> str | None:
    text = header(scope, b"cookie") or ""
    for piece in text.split(";"):
        key, _, value = piece.strip().partition("=")
        if key == name:
            return value
    return None


def make_app(site: LadderSite) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            await route(site, scope, receive, send)
        except HttpError as error:
            await respond(send, error.status, {"error": error.message})

    return app


async def respond(
    send: Send,
    status: int,
    body: bytes | dict[str, Any] | str,
    content_type: str = "application/json",
    *,
    csp: bytes = STRICT_CSP,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    if isinstance(body, dict):
        body = json.dumps(body, separators=(",", ":")).encode()
    elif isinstance(body, str):
        body = body.encode()
    headers = [(b"content-type", content_type.encode()), (b"content-security-policy", csp), *SECURITY_HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


def _name_in_path(path: str, prefix: str) -> str:
    name = path.removeprefix(prefix)
    if not name or "/" in name or not name.isprintable() or len(name) > 64 or name != name.strip():
        raise HttpError(400, f"malformed path {path[:100]!r}: give {prefix}NAME")
    return name


async def route(site: LadderSite, scope: Scope, receive: Receive, send: Send) -> None:
    if not site.hosts.allows(scope):
        raise HttpError(400, "this Host is not served here (the server's --allow-host lists the names it answers to)")
    path: str = scope["path"]
    method: str = scope["method"]
    if "\x00" in path or ".." in path or "//" in path or not path.startswith("/"):
        raise HttpError(400, f"malformed path {path[:100]!r}")
    if method == "POST":
        if path != "/api/entries":
            raise HttpError(404, "not found: uploads go to POST /api/entries")
        await post_entry(site, scope, receive, send)
        return
    if method not in ("GET", "HEAD"):
        raise HttpError(405, "only GET, and POST to /api/entries, are served")
    if path == "/":
        await respond(send, 200, page("Leaderboard", "leaderboard"), "text/html; charset=utf-8")
    elif path in ("/ladder.js", "/viewer.js"):
        await respond(send, 200, asset(path[1:]), "text/javascript; charset=utf-8")
    elif path == "/report.css":
        await respond(send, 200, asset("report.css"), "text/css; charset=utf-8")
    elif path == "/api/events":
        assert site.live is not None
        address = client_address(scope)
        if not site.streams.acquire(address):
            raise HttpError(429, "too many open event streams from this address")
        try:
            await stream_events(site.live, receive, send)
        finally:
            site.streams.release(address)
    elif path == "/upload":
        token = secrets.token_urlsafe(16)
        extra = [(b"set-cookie", f"csrf={token}; Path=/; HttpOnly; SameSite=Strict".encode())]
        await respond(send, 200, upload_page(token), "text/html; charset=utf-8", extra=extra)
    elif path == "/api/leaderboard":
        viewer = await trio.to_thread.run_sync(site.viewer, scope)
        await respond(send, 200, await trio.to_thread.run_sync(site.leaderboard_bytes, viewer))
    elif path.startswith("/entry/"):
        name = _name_in_path(path, "/entry/")
        if await trio.to_thread.run_sync(site.store.entry, name) is None:
            raise HttpError(404, f"no entry {name!r}")
        await respond(send, 200, page(f"Entry {name}", "entry", name), "text/html; charset=utf-8")
    elif path.startswith("/api/entries/"):
        name = _name_in_path(path, "/api/entries/")
        viewer = await trio.to_thread.run_sync(site.viewer, scope)
        detail = await trio.to_thread.run_sync(site.entry_detail, name, viewer)
        if detail is None:
            raise HttpError(404, f"no entry {name!r}")
        await respond(send, 200, detail)
    elif path.startswith("/api/games/") or path.startswith("/games/"):
        game_id = _name_in_path(path, "/api/games/" if path.startswith("/api/") else "/games/")
        # A page opened in a browser sends no token: the viewer shows the public record.
        viewer = await trio.to_thread.run_sync(site.viewer, scope) if path.startswith("/api/") else PUBLIC
        text = await trio.to_thread.run_sync(site.game_text, game_id, viewer)
        if text is None:
            raise HttpError(404, f"no game {game_id!r}")
        if path.startswith("/api/"):
            await respond(send, 200, text)
        else:
            html = await trio.to_thread.run_sync(viewer_page, text)
            await respond(send, 200, html, "text/html; charset=utf-8", csp=VIEWER_CSP)
    else:
        raise HttpError(404, "not found: the leaderboard is at /, its data at /api/leaderboard")


def viewer_page(record_text: str) -> str:
    """The arena's viewer (the report page) of one game."""
    from referee.outputs.report import build_report, load_run

    with tempfile.TemporaryDirectory(prefix="ladder-game-") as folder:
        Path(folder, "games.jsonl").write_text(record_text + "\n", encoding="utf-8")
        run = load_run(Path(folder))
        try:
            return build_report(run)
        finally:
            run.close()


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The request's body, at most `limit` bytes; 413 beyond it (the rest is read and dropped, up to
    `DRAIN_LIMIT`, so that a client still sending sees the answer rather than a broken connection)."""
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise HttpError(400, "the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        elif size > DRAIN_LIMIT:
            break
        if not message.get("more_body", False):
            break
    if size > limit:
        raise HttpError(413, f"refused: the upload is larger than {limit:,} bytes")
    return b"".join(chunks)


async def post_entry(site: LadderSite, scope: Scope, receive: Receive, send: Send) -> None:
    origin = header(scope, b"origin")
    if origin is not None and origin != "null":
        if urlsplit(origin).netloc.lower() != (header(scope, b"host") or "").lower():
            raise HttpError(403, "refused: a cross-site request (its Origin is another site)")
    elif origin == "null":
        raise HttpError(403, "refused: a request from an opaque origin")
    client = (scope.get("client") or ("?", 0))[0]
    if not site.limiter.allow(f"address:{client}", time.monotonic()):
        raise HttpError(429, f"refused: more than {site.limiter.count} uploads in {site.limiter.window_s:g} s; wait")
    authorization = header(scope, b"authorization") or ""
    body = await read_body(scope, receive, site.limits.max_bytes + MAX_FORM_OVERHEAD)
    fields, filename, data = parse_multipart(header(scope, b"content-type") or "", body)
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise HttpError(401, "refused: send the token as `Authorization: Bearer TOKEN`")
        token = token.strip()
    else:
        token = fields.get("token", "").strip()
        if not token:
            raise HttpError(401, "refused: no token; send `Authorization: Bearer TOKEN` (the organiser gives it)")
        form_csrf, cookie_csrf = fields.get("csrf", ""), cookie(scope, "csrf") or ""
        if not form_csrf or not secrets.compare_digest(form_csrf, cookie_csrf):
            raise HttpError(403, "refused: the form's CSRF field does not match; reload the upload page")
    participant = check_token(token, await trio.to_thread.run_sync(site.store.token_hashes))
    if participant is None:
        raise HttpError(401, "refused: the token is not valid; ask the organiser for yours")
    if participant == ORGANISER:
        raise HttpError(
            403, "refused: the organiser's token reads the ladder; add entries with `alternator ladder DIR add`"
        )
    if not site.limiter.allow(f"participant:{participant}", time.monotonic()):
        raise HttpError(429, f"refused: more than {site.limiter.count} uploads in {site.limiter.window_s:g} s; wait")
    if data is None:
        raise HttpError(400, "no file: send -F file=@bot.zip (one file, or a zip or tar archive)")
    result = await trio.to_thread.run_sync(site.upload, participant, fields, filename, data)
    await respond(send, 201, result)


# -- pages ---------------------------------------------------------------------------------------------------


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222;background:#fafafa}
table{border-collapse:collapse;margin:.5rem 0}td,th{padding:.25rem .6rem;border-bottom:1px solid #ddd;text-align:right}
td:nth-child(2),th:nth-child(2){text-align:left}.status-suspended{color:#b00}.status-provisional{color:#777}
.up{color:#080}.down{color:#b00}nav a{margin-right:1rem}svg{background:#fff;border:1px solid #ddd}
.reason{color:#b00;font-size:.9em;text-align:left}
"""


def page(title: str, kind: str, name: str = "") -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width'><title>{_html_escape(title)}</title>"
        f"<link rel='stylesheet' href='/report.css'><style>{STYLE}</style></head>"
        f"<body data-page='{kind}' data-name=\"{_html_escape(name)}\">"
        "<nav><a href='/'>Leaderboard</a><a href='/upload'>Upload a bot</a><a href='/api/leaderboard'>JSON</a></nav>"
        f"<h1 id='title'>{_html_escape(title)}</h1><div id='content'>loading…</div>"
        "<script src='/viewer.js'></script><script src='/ladder.js'></script></body></html>"
    )


def upload_page(csrf: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Upload a bot</title>"
        f"<style>{STYLE}</style></head><body><nav><a href='/'>Leaderboard</a></nav><h1>Upload a bot</h1>"
        "<form method='post' action='/api/entries' enctype='multipart/form-data'>"
        f"<input type='hidden' name='csrf' value='{_html_escape(csrf)}'>"
        "<p><label>Token <input name='token' type='password' required></label></p>"
        "<p><label>Entry name <input name='name' required pattern='[A-Za-z0-9][A-Za-z0-9_-]{0,39}'></label></p>"
        "<p><label>Command <input name='command' value='python3 bot.py' required></label></p>"
        "<p><label>File (one file, or a zip or tar archive) <input name='file' type='file' required></label></p>"
        "<p><button>Upload</button></p></form></body></html>"
    )


async def serve_site(
    site: LadderSite, host: str, port: int, *, on_ready: Callable[[str], None], task_status: Any = None
) -> None:
    """Serve the leaderboard until cancelled; `on_ready` gets the address once it listens."""
    from hypercorn.config import Config
    from hypercorn.trio import serve as hypercorn_serve

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    config.max_app_queue_size = 10
    async with trio.open_nursery() as nursery:
        if site.live is not None:
            site.live.read_feed()
            nursery.start_soon(follow_feed, site.live)
        binds = await nursery.start(hypercorn_serve, make_app(site), config)
        on_ready(str(binds[0]) if binds else f"http://{host}:{port}")
