"""`alternator serve` against malformed and hostile requests: a real server process, real sockets.

The pure pieces (referee.outputs.httpsafety) are tested with plain values first.
"""

from __future__ import annotations

import http.client
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.outputs.httpsafety import MAX_STREAMS_PER_CLIENT, ClientLimit, HostCheck, host_name, parse_number
from tests.report_games import synthesize_tournament


def test_numbers_in_paths_are_ascii_digits_of_bounded_length() -> None:
    assert parse_number("7") == 7 and parse_number("000123") == 123
    for bad in ("", "²", "٣", "1e3", "-1", " 1", "1 ", "9" * 10, "9" * 5000, "0x1"):
        assert parse_number(bad) is None, bad


def test_the_host_check_allows_loopback_names_and_those_given() -> None:
    def scope(host: str | None) -> dict[str, object]:
        return {"headers": [] if host is None else [(b"host", host.encode())]}

    check = HostCheck()
    for host in ("localhost:8080", "127.0.0.1:80", "[::1]:8080", "LOCALHOST", "127.0.0.1"):
        assert check.allows(scope(host)), host
    for foreign in ("evil.example", "evil.example:8080", "localhost.evil.example", "", None):
        assert not check.allows(scope(foreign)), foreign
    assert HostCheck(["arena.lan"]).allows(scope("arena.lan:8080"))
    assert HostCheck(["*"]).allows(scope("anything"))
    assert host_name("[::1]:8080") == "[::1]" and host_name("Example.org:80") == "example.org"


def test_a_client_holds_a_bounded_number_of_streams() -> None:
    limit = ClientLimit(2)
    assert limit.acquire("a") and limit.acquire("a") and not limit.acquire("a") and limit.acquire("b")
    limit.release("a")
    assert limit.acquire("a") and not limit.acquire("a")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[int]:
    """A real `alternator serve` process on a tournament directory with 3 finished games; its port."""
    import socket

    synthesize_tournament(tmp_path / "run", 3, seed=5)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "serve", str(tmp_path / "run"), "--port", str(port), "--allow-host", "arena"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert f"127.0.0.1:{port}" in line, line + (process.stderr.read() if process.stderr else "")
        yield port
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read()


def get(port: int, path: str, host: str | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_malformed_game_numbers_are_400_and_missing_games_404(server: int) -> None:
    assert get(server, "/api/game/1")[0] == 200
    assert get(server, "/api/game/4")[0] == 404
    assert get(server, "/api/game/0")[0] == 404
    for path in ("/api/game/%C2%B2", "/api/game/" + "9" * 5000, "/api/game/abc", "/api/game/", "/api/game/1.0"):
        status, body = get(server, path)
        assert status == 400 and b"/api/game/1" in body, path
    assert get(server, "/nowhere/%FF")[0] == 404


def test_a_foreign_host_header_is_refused(server: int) -> None:
    assert get(server, "/", host=f"localhost:{server}")[0] == 200
    assert get(server, "/", host="arena")[0] == 200  # --allow-host arena
    status, body = get(server, "/api/game/1", host="attacker.example")
    assert status == 403 and b"--allow-host" in body
    assert get(server, "/", host=f"attacker.example:{server}")[0] == 403


def test_one_client_holds_a_bounded_number_of_event_streams(server: int) -> None:
    streams = []
    try:
        for _ in range(MAX_STREAMS_PER_CLIENT):
            connection = http.client.HTTPConnection("127.0.0.1", server, timeout=20)
            connection.request("GET", "/api/events")
            response = connection.getresponse()
            assert response.status == 200
            streams.append(connection)
        assert get(server, "/api/events")[0] == 429
        streams.pop().close()
        assert get(server, "/api/game/1")[0] == 200  # other requests are not limited
    finally:
        for connection in streams:
            connection.close()
