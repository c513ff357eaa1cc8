"""The safety pieces of the arena's HTTP servers (`serve` today, a ladder's server later), as plain functions and
small objects over ASGI scopes: no server, no trio, tested with dictionaries.

- `HostCheck`: the `Host` header against an allow-list. A server on 127.0.0.1 is reachable from any page the
  user's browser opens, through DNS rebinding (a name that resolved to the attacker's address first, then to
  127.0.0.1): the browser then sends the attacker's name as `Host`, which only loopback names pass by default.
- `parse_number`: a number in a path (`/api/game/7`), ASCII digits only and a bounded length: `"²".isdigit()`
  is True and `int("²")` raises, and a 5,000-digit number costs `int()` time and fails later checks.
- `ClientLimit`: how many long-lived connections (event streams) one client address holds at once.
- `parse_query`: the query string of a paged list (`?offset=100&limit=100&bot=alpha`): known keys only, each once,
  numbers as `parse_number` takes them, a limit of at most MAX_PAGE; a ValueError says what is wrong.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
MAX_NUMBER_DIGITS = 9
"""A game number has at most this many digits: a billion games is far beyond any run."""
MAX_STREAMS_PER_CLIENT = 16
"""Event streams one client address may hold at once: a browser keeps one per open tab (browsers themselves
allow 6 connections per host over HTTP/1.1), so 16 is many tabs; more is a misbehaving or hostile client."""
MAX_PAGE = 500
"""The most items one page of a list holds: a page's cost is bounded whatever the run's size."""
MAX_QUERY = 2048
"""The longest query string a server reads (a bot's name, a few numbers: far less)."""


def parse_number(text: str) -> int | None:
    """`text` as a positive whole number, or None: ASCII digits only (not `²` or `٣`), 1 to MAX_NUMBER_DIGITS."""
    if not 1 <= len(text) <= MAX_NUMBER_DIGITS or not text.isascii() or not text.isdigit():
        return None
    return int(text)


class HostCheck:
    """The `Host` header of a request against the names the server answers to (loopback ones by default).

    `allowed`: extra names (`--allow-host NAME`, without a port); "*" allows any (a server behind a proxy that
    checks it). A request without a Host header is refused (HTTP/1.1 requires one).
    """

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        self.names = {name.lower().strip() for name in (*LOOPBACK_NAMES, *allowed) if name.strip()}
        self.any = "*" in self.names

    def allows(self, scope: Mapping[str, Any]) -> bool:
        if self.any:
            return True
        host = header(scope, b"host")
        return host is not None and host_name(host) in self.names


def host_name(host: str) -> str:
    """A Host header's name without its port, lower case: `[::1]:8080` -> `[::1]`, `Example.org:80` -> `example.org`."""
    host = host.strip().lower()
    if host.startswith("["):  # an IPv6 literal
        end = host.find("]")
        return host[: end + 1] if end > 0 else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def parse_query(query: bytes | str, text_keys: Iterable[str] = ()) -> dict[str, Any]:
    """The parameters of a paged list: {"offset": int, "limit": int, and each of `text_keys` given, as text}.

    `offset` (default 0) and `limit` (default 100, at most MAX_PAGE) are ASCII digits (`parse_number`); a text
    value is percent-decoded UTF-8 of at most 200 characters. ValueError, its message for a 400 answer, on an
    unknown or repeated key, a bad number or a query longer than MAX_QUERY."""
    from urllib.parse import parse_qsl

    text = query.decode("latin-1") if isinstance(query, bytes) else query
    if len(text) > MAX_QUERY:
        raise ValueError(f"the query is longer than {MAX_QUERY} characters")
    allowed = {"offset", "limit", *text_keys}
    found: dict[str, Any] = {"offset": 0, "limit": 100}
    seen: set[str] = set()
    try:
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text), errors="strict")
    except (ValueError, UnicodeDecodeError):
        raise ValueError("the query is not key=value pairs joined by &") from None
    for key, value in pairs:
        if key not in allowed:
            raise ValueError(f"unknown parameter {key[:40]!r} (known: {', '.join(sorted(allowed))})")
        if key in seen:
            raise ValueError(f"parameter {key!r} is given twice")
        seen.add(key)
        if key in ("offset", "limit"):
            number = parse_number(value)
            if number is None or (key == "limit" and not 1 <= number <= MAX_PAGE):
                bound = f"1 to {MAX_PAGE}" if key == "limit" else "0 or more"
                raise ValueError(f"{key} is a whole number, {bound}, in ASCII digits")
            found[key] = number
        elif value:
            if len(value) > 200 or not value.isprintable():
                raise ValueError(f"{key} is not a name (printable, at most 200 characters)")
            found[key] = value
    return found


def header(scope: Mapping[str, Any], name: bytes) -> str | None:
    """The first value of header `name` (lower case) in an ASGI scope, decoded as Latin-1, or None."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def client_address(scope: Mapping[str, Any]) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"


class ClientLimit:
    """Counts the long-lived connections of each client address; `acquire` refuses one beyond the limit."""

    def __init__(self, per_client: int = MAX_STREAMS_PER_CLIENT) -> None:
        self.per_client = per_client
        self.open: MutableMapping[str, int] = {}

    def acquire(self, address: str) -> bool:
        count = self.open.get(address, 0)
        if count >= self.per_client:
            return False
        self.open[address] = count + 1
        return True

    def release(self, address: str) -> None:
        count = self.open.get(address, 0) - 1
        if count > 0:
            self.open[address] = count
        else:
            self.open.pop(address, None)


async def lifespan(receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
    """Answer an ASGI `lifespan` scope: start-up and shut-down complete at once (the servers hold no resources)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
