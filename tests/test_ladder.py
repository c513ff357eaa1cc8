"""The ladder end to end: real `alternator ladder` processes, real sample bots and test bots, real bubblewrap; the
organiser's commands beside a running ladder (`add`, `list`, `pause`, ...) go through `referee.cli.main`.

A ladder started plays; entries added while it runs get games; an update plays as a new version while the old one
is kept; a broken entry is suspended with its reason while the others play on, and can be enabled again; Ctrl-C
stops it (exit 130) and a restart keeps every rating. Uploads over HTTP are accepted (and played, sandboxed) or
refused for every bad kind, another participant's entry, no token and a bad one; the JSON API matches its schema.
Small boards and a short time per move keep each test to seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.ladder.api import Leaderboard
from referee.ladder.store import LadderStore
from tests.conftest import live_pids

ROOT = Path(__file__).resolve().parent.parent
TESTBOT = ROOT / "tests" / "bots" / "testbot.py"
FAST = ["--movetime", "0.02", "--size", "5", "--openings-plies", "2"]
WAIT_S = 90.0  # generous: the host is shared; nothing here measures speed


def alternator(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`alternator ARGS` run from the repository, as the organiser types it; through `referee.cli.main` in this
    process (the ladder it talks to is a process of its own): a command's start-up is most of its time."""
    from referee.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(list(args))
        except SystemExit as exit:  # argparse's usage errors
            code = exit.code if isinstance(exit.code, int) else 2
    done = subprocess.CompletedProcess(["alternator", *args], code, stdout.getvalue(), stderr.getvalue())
    if check:
        assert done.returncode == 0, done.stderr
    return done


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RunningLadder:
    """`alternator ladder DIR ...` in the background; `stop()` sends Ctrl-C and returns its exit code."""

    def __init__(self, directory: Path, *options: str, serve: bool = False, play: bool = True) -> None:
        self.directory = directory
        self.port = free_port() if serve else 0
        argv = [sys.executable, "-m", "referee", "ladder", str(directory)]
        if not play:
            argv.append("serve")
        argv += [*(FAST if play else []), *options]
        if serve and play:
            argv.append("--serve")
        if serve:
            argv += ["--port", str(self.port)]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        if serve:
            assert self.process.stdout is not None
            line = self.process.stdout.readline()
            assert f"127.0.0.1:{self.port}" in line, line + self.stderr()
        self.url = f"http://127.0.0.1:{self.port}"

    def stderr(self) -> str:
        if self.process.poll() is None:
            return ""
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def ladders() -> Iterator[Callable[..., RunningLadder]]:
    started: list[RunningLadder] = []

    def start(directory: Path, *options: str, serve: bool = False, play: bool = True) -> RunningLadder:
        ladder = RunningLadder(directory, *options, serve=serve, play=play)
        started.append(ladder)
        return ladder

    yield start
    for ladder in started:
        if ladder.process.poll() is None:
            ladder.stop()


def wait_for(what: str, check: Callable[[], Any], ladder: RunningLadder | None = None) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if ladder is not None and ladder.process.poll() is not None:
            pytest.fail(f"the ladder ended while waiting for {what}: {ladder.stderr()}")
        time.sleep(0.2)
    pytest.fail(f"never happened: {what}")


def entries(directory: Path) -> dict[str, Any]:
    with LadderStore(directory, create=False) as store:
        return {entry.name: entry for entry in store.entries()}


def game_count(directory: Path) -> int:
    with LadderStore(directory, create=False) as store:
        return store.game_count()


def quiet(directory: Path) -> bool:
    """No game in progress, and none finished over the last second."""
    with LadderStore(directory, create=False) as store:
        before = store.game_count()
        time.sleep(1.0)
        return not store.playing() and store.game_count() == before


def lines_of(directory: Path, name: str) -> list[str]:
    """The lines of games.jsonl that name `name` (none while the file is not there)."""
    path = directory / "games.jsonl"
    return [line for line in path.read_text().splitlines() if name in line] if path.exists() else []


def games_of(directory: Path, name: str) -> int:
    entry = entries(directory).get(name)
    return 0 if entry is None or entry.version is None else int(entry.version.games)


def test_a_ladder_plays_takes_entries_while_running_suspends_a_broken_one_and_resumes(
    tmp_path: Path, ladders: Callable[..., RunningLadder]
) -> None:
    out = tmp_path / "ladder"
    alternator("ladder", str(out), "add", "random", "random")
    alternator("ladder", str(out), "add", "greedy", "greedy")
    ladder = ladders(out)
    wait_for("games between the first two entries", lambda: games_of(out, "random") >= 4, ladder)

    # Added while it runs: it gets games.
    alternator("ladder", str(out), "add", "good", f"python3 {TESTBOT}")
    wait_for("games of the entry added while running", lambda: games_of(out, "good") >= 3, ladder)

    # A new version: rated afresh, plays; the old version is retired and kept with its games.
    old = entries(out)["random"].version
    alternator("ladder", str(out), "update", "random", "random")
    wait_for("games of the new version", lambda: games_of(out, "random") >= 2, ladder)
    store = LadderStore(out, create=False)
    versions = store.versions("random")
    store.close()
    assert [v.number for v in versions] == [1, 2]
    assert versions[0].retired_at is not None and versions[0].games >= old.games
    assert versions[1].retired_at is None and versions[1].spec.name == "random.v2"

    # A broken entry (it crashes on its first turn) is suspended with the reason; the others play on.
    alternator("ladder", str(out), "add", "broken", f"python3 {TESTBOT} crash 3")
    suspended = wait_for(
        "the broken entry suspended", lambda: entries(out)["broken"].status == "suspended" and entries(out), ladder
    )
    assert "3 faults in a row" in suspended["broken"].reason and "exited with code 3" in suspended["broken"].reason
    played = games_of(out, "greedy")
    wait_for("the others playing on", lambda: games_of(out, "greedy") > played + 2, ladder)
    listed = alternator("ladder", str(out), "list").stdout
    assert "suspended: 3 faults in a row" in listed
    assert "broken" in alternator("ladder", str(out), "logs", "broken").stdout
    alternator("ladder", str(out), "export", str(tmp_path / "games.csv"))
    exported = (tmp_path / "games.csv").read_text().splitlines()
    assert exported[0].startswith("seq,game_id,black,white,result") and len(exported) > 10
    alternator("ladder", str(out), "export", str(tmp_path / "games.pgn"))
    assert (tmp_path / "games.pgn").read_text().count("[GameId ") > 10

    # Paused: the game in progress finishes, no new one starts; resumed: games again.
    alternator("ladder", str(out), "pause")
    wait_for("the game in progress to finish", lambda: quiet(out), ladder)
    paused_at = game_count(out)
    time.sleep(1.5)
    assert game_count(out) == paused_at and "(paused)" in alternator("ladder", str(out), "list").stdout
    alternator("ladder", str(out), "resume")
    wait_for("games after resuming", lambda: game_count(out) > paused_at, ladder)

    # Retired: it plays no more (a game it was in may finish), the others go on; enabled: it plays again.
    alternator("ladder", str(out), "retire", "good")
    retired_at = games_of(out, "good") + 1
    played = games_of(out, "greedy")
    wait_for("games without the retired entry", lambda: games_of(out, "greedy") > played + 4, ladder)
    assert games_of(out, "good") <= retired_at and entries(out)["good"].status == "retired"
    alternator("ladder", str(out), "enable", "good")
    wait_for("games of the entry enabled again", lambda: games_of(out, "good") > retired_at, ladder)

    # Stopped with Ctrl-C: exit 130, nothing lost, no bot left running; restarted: every rating as it was, and
    # games go on from there.
    assert ladder.stop() == 130
    bot_pids = [int(log.name.split(".stderr")[0].rsplit("-", 1)[1]) for log in (out / "logs").glob("*.stderr.log")]
    assert bot_pids and live_pids(bot_pids, wait_s=5) == []
    before = {name: (e.version.rating, e.version.rd, e.version.games) for name, e in entries(out).items()}
    lines = (out / "games.jsonl").read_text().splitlines()
    store = LadderStore(out, create=False)
    assert len(lines) == store.game_count() and store.playing() == []
    store.close()
    alternator("ladder", str(out), "enable", "broken")
    assert entries(out)["broken"].status == "active"
    alternator("ladder", str(out), "suspend", "broken", "still", "broken")
    again = ladders(out)
    wait_for("games after the restart", lambda: games_of(out, "greedy") > before["greedy"][2], again)
    assert again.stop() == 130
    after = entries(out)
    for name in ("random", "greedy", "good"):
        assert after[name].version.games >= before[name][2]
    assert after["broken"].status == "suspended" and after["broken"].reason == "still broken"
    # Ratings carried over: the first game after the restart moved them from the stored values, not from 1500.
    store = LadderStore(out, create=False)
    greedy = store.entry("greedy")
    assert greedy is not None and greedy.version is not None
    history = store.history(greedy.version.id)
    store.close()
    assert history[before["greedy"][2] - 1][1] == pytest.approx(before["greedy"][0])
    # The arena's viewer reads the ladder's games.
    game_id = json.loads(lines[-1])["game_id"]
    assert alternator("replay", str(out), game_id, check=False).returncode == 0


def multipart(fields: dict[str, str], file: tuple[str, bytes] | None) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = io.BytesIO()
    for name, value in fields.items():
        body.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    if file is not None:
        filename, data = file
        body.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode()
        )
        body.write(data + b"\r\n")
    body.write(f"--{boundary}--\r\n".encode())
    return body.getvalue(), f"multipart/form-data; boundary={boundary}"


def upload(
    url: str,
    token: str | None,
    name: str,
    file: tuple[str, bytes] | None,
    *,
    command: str = "python3 bot.py",
    headers: dict[str, str] | None = None,
    fields: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    body, content_type = multipart({"name": name, "command": command, **(fields or {})}, file)
    request = urllib.request.Request(f"{url}/api/entries", data=body, method="POST")
    request.add_header("Content-Type", content_type)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def token_for(out: Path, participant: str) -> str:
    printed = alternator("ladder", str(out), "token", "add", participant).stdout.splitlines()
    assert printed[-1] and " " not in printed[-1]
    return printed[-1]


def test_uploads_are_accepted_played_in_the_sandbox_and_refused_for_every_bad_kind(
    tmp_path: Path, ladders: Callable[..., RunningLadder]
) -> None:
    out = tmp_path / "ladder"
    alternator("ladder", str(out), "add", "random", "random")
    alice, bob = token_for(out, "alice"), token_for(out, "bob")
    store = LadderStore(out, create=False)
    assert alice not in (out / "ladder.db").read_bytes().decode("latin-1")  # stored hashed
    store.close()
    ladder = ladders(out, "--uploads-per-minute", "100", serve=True)
    bot = TESTBOT.read_bytes()

    status, body = upload(ladder.url, alice, "alicebot", ("bot.py", bot))
    assert (status, body["version"], body["added"]) == (201, 1, True), body
    # It plays, in the sandbox with the ladder's limits.
    wait_for("a game of the uploaded bot", lambda: games_of(out, "alicebot") >= 1, ladder)
    # Its line in games.jsonl is appended just after the game is stored: waited for, not raced.
    wait_for("its record in games.jsonl", lambda: bool(lines_of(out, "alicebot.v1")), ladder)
    record = json.loads(lines_of(out, "alicebot.v1")[0])
    side = record["black"] if record["black"]["name"] == "alicebot.v1" else record["white"]
    assert side["sandbox"] is True and side["memory_mb"] == 512 and side["run_command"][0].endswith("bwrap")

    # An update by its owner, as a zip: version 2.
    status, body = upload(ladder.url, alice, "alicebot", ("bot.zip", zipped({"bot.py": bot})))
    assert (status, body["version"], body["added"]) == (201, 2, False), body
    assert (out / "entries" / "alicebot" / "v2" / "bot.py").read_bytes() == bot

    refusals = {
        "another participant's entry": (bob, "alicebot", ("bot.py", bot), 403, "belongs to another participant"),
        "the organiser's entry": (bob, "random", ("bot.py", bot), 403, "belongs to another participant"),
        "no token": (None, "bobbot", ("bot.py", bot), 401, "no token"),
        "a bad token": ("not-a-token", "bobbot", ("bot.py", bot), 401, "not valid"),
        "path traversal": (bob, "bobbot", ("b.zip", zipped({"../../evil.py": b"x"})), 400, "path traversal"),
        "an absolute path": (bob, "bobbot", ("b.zip", zipped({"/tmp/evil.py": b"x"})), 400, "absolute path"),
        "an archive bomb": (bob, "bobbot", ("b.zip", zipped({"z": bytes(70 << 20)})), 400, "archive bomb"),
        "too many files": (bob, "bobbot", ("b.zip", zipped({f"{i}.py": b"" for i in range(201)})), 413, "at most 200"),
        "too big": (bob, "bobbot", ("bot.py", b"#" * (9 << 20)), 413, "larger than"),
        "a bad name": (bob, "../bob", ("bot.py", bot), 400, "not a usable entry name"),
    }
    for what, (token, name, file, code, message) in refusals.items():
        status, body = upload(ladder.url, token, name, file)
        assert status == code and message in body["error"], (what, status, body)
    # A symlink and a device, in a tar.
    import tarfile

    for kind, message in ((tarfile.SYMTYPE, "symlink"), (tarfile.CHRTYPE, "device")):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            member = tarfile.TarInfo("x")
            member.type = kind
            member.linkname = "/etc/passwd"
            archive.addfile(member)
        status, body = upload(ladder.url, bob, "bobbot", ("b.tar", buffer.getvalue()))
        assert status == 400 and message in body["error"], body
    # Nothing of the refused uploads reached the filesystem, in or out of the ladder's folder.
    assert not (out / "entries" / "bobbot").exists() or not any((out / "entries" / "bobbot").rglob("*.py"))
    assert not (tmp_path / "evil.py").exists() and not Path("/tmp/evil.py").exists()
    assert "bobbot" not in entries(out)

    # Cross-site: a form posted from another origin, or without the CSRF field, is refused.
    status, body = upload(ladder.url, bob, "bobbot", ("bot.py", bot), headers={"Origin": "http://evil.example"})
    assert status == 403 and "cross-site" in body["error"]
    status, body = upload(ladder.url, None, "bobbot", ("bot.py", bot), fields={"token": bob})
    assert status == 403 and "CSRF" in body["error"]
    form = {"token": bob, "csrf": "abc"}
    status, body = upload(ladder.url, None, "bobbot", ("bot.py", bot), fields=form, headers={"Cookie": "csrf=abc"})
    assert status == 201, body

    # Host allow-list (DNS rebinding), malformed and unknown paths.
    assert get(f"{ladder.url}/api/leaderboard", {"Host": "evil.example"})[0] == 400
    assert get(f"{ladder.url}/entry/a%00b")[0] == 400
    assert get(f"{ladder.url}/nothing")[0] == 404
    assert get(f"{ladder.url}/entry/nobody")[0] == 404

    # The JSON API, against the model its published schema is made from.
    status, data = get(f"{ladder.url}/api/leaderboard")
    board = Leaderboard.model_validate_json(data)
    assert {e.name for e in board.entries} == {"random", "alicebot", "bobbot"}
    assert all(e.status in ("active", "provisional") for e in board.entries)
    schema = json.loads((ROOT / "referee" / "schema" / "ladder_leaderboard.json").read_text())
    row_schema = schema["$defs"]["LeaderboardEntry"]
    for row in json.loads(data)["entries"]:
        assert set(row_schema["required"]) <= set(row) and set(row) <= set(row_schema["properties"])
    status, data = get(f"{ladder.url}/api/entries/alicebot")
    detail = json.loads(data)
    assert [v["number"] for v in detail["versions"]] == [1, 2] and detail["owner"] == "alice"
    assert ladder.stop() == 130


def test_fault_reasons_reach_only_the_owner_and_the_organiser(
    tmp_path: Path, ladders: Callable[..., RunningLadder]
) -> None:
    """Why an entry was suspended, its faults, their stderr lines and its stderr logs: the public (page and API)
    gets none of them; its owner (their upload token) gets their own entries'; the organiser's token gets all."""
    out = tmp_path / "ladder"
    alternator("ladder", str(out), "add", "random", "random")
    alice, bob = token_for(out, "alice"), token_for(out, "bob")
    printed = alternator("ladder", str(out), "token", "add", "--organiser").stdout.splitlines()
    organiser = printed[-1]
    assert "organiser" in printed[0] and organiser not in (out / "ladder.db").read_bytes().decode("latin-1")
    ladder = ladders(out, "--uploads-per-minute", "100", serve=True)
    bot = TESTBOT.read_bytes()
    assert upload(ladder.url, alice, "crasher", ("bot.py", bot), command="python3 bot.py crash 3")[0] == 201
    assert upload(ladder.url, bob, "bobbot", ("bot.py", bot))[0] == 201
    wait_for("the crashing entry suspended", lambda: entries(out)["crasher"].status == "suspended", ladder)
    assert "about to crash" in (out / "games.jsonl").read_text()  # the full records keep it, for the organiser

    def api(path: str, token: str | None = None) -> Any:
        status, data = get(f"{ladder.url}{path}", {"Authorization": f"Bearer {token}"} if token else {})
        assert status == 200, data
        return json.loads(data)

    def board_reason(token: str | None) -> str | None:
        rows = {row["name"]: row for row in api("/api/leaderboard", token)["entries"]}
        assert rows["crasher"]["status"] == "suspended"
        reason: str | None = rows["crasher"]["reason"]
        return reason

    # The public: the status, never the reason; no faults, no logs; a fault's kind only, no stderr.
    assert board_reason(None) is None and board_reason(bob) is None
    public = api("/api/entries/crasher")
    assert public["status"] == "suspended" and public["reason"] is None and public["private"] is False
    assert public["faults"] == [] and public["logs"] == []
    crash_games = [g for g in public["recent"] if g["termination"] == "crash"]
    assert crash_games and all("exited with code" not in g["reason"] for g in crash_games)
    assert all("forfeits: crash" in g["reason"] for g in crash_games)
    game_id = crash_games[0]["id"]
    record = api(f"/api/games/{game_id}")
    assert record["stderr_tail"] == [] and "exited with code" not in record["reason"]
    status, page_bytes = get(f"{ladder.url}/games/{game_id}")
    assert status == 200 and b"about to crash" not in page_bytes and b"exited with code" not in page_bytes
    # Another participant is the public for this entry.
    assert api("/api/entries/crasher", bob)["faults"] == []
    assert api(f"/api/games/{game_id}", bob)["stderr_tail"] == []

    # Its owner: the reason, the faults with their stderr lines, the stderr logs, the whole record.
    assert "3 faults in a row" in (board_reason(alice) or "")
    own = api("/api/entries/crasher", alice)
    assert own["private"] is True and "exited with code 3" in own["reason"]
    assert own["faults"] and any("about to crash" in (f["stderr"] or "") for f in own["faults"])
    assert own["logs"] and any("about to crash" in log["tail"] for log in own["logs"])
    assert "about to crash" in api(f"/api/games/{game_id}", alice)["stderr_tail"]
    assert api("/api/entries/bobbot", alice)["private"] is False
    # The organiser: every entry's.
    assert "3 faults in a row" in (board_reason(organiser) or "")
    assert api("/api/entries/crasher", organiser)["faults"] and api("/api/entries/bobbot", organiser)["private"]
    # A wrong token is refused, not taken for the public; the organiser's token does not upload.
    assert get(f"{ladder.url}/api/entries/crasher", {"Authorization": "Bearer nope"})[0] == 401
    status, body = upload(ladder.url, organiser, "orgbot", ("bot.py", bot))
    assert status == 403 and "organiser" in body["error"]
    # The CLI is the organiser's too.
    assert "exited with code 3" in alternator("ladder", str(out), "list").stdout
    assert "about to crash" in alternator("ladder", str(out), "logs", "crasher").stdout
    assert ladder.stop() == 130


def test_uploads_are_rate_limited(tmp_path: Path, ladders: Callable[..., RunningLadder]) -> None:
    out = tmp_path / "ladder"
    token = token_for(out, "carol")
    ladder = ladders(out, "--uploads-per-minute", "2", serve=True, play=False)
    codes = [upload(ladder.url, token, "carolbot", ("bot.py", b"print(1)\n"))[0] for _ in range(3)]
    assert codes == [201, 201, 429]


def test_a_participant_has_at_most_three_entries(tmp_path: Path, ladders: Callable[..., RunningLadder]) -> None:
    out = tmp_path / "ladder"
    token = token_for(out, "dave")
    ladder = ladders(out, "--uploads-per-minute", "100", serve=True, play=False)
    codes = [upload(ladder.url, token, f"dave{i}", ("bot.py", b"print(1)\n"))[0] for i in range(3)]
    status, body = upload(ladder.url, token, "dave3", ("bot.py", b"print(1)\n"))
    assert codes == [201, 201, 201] and status == 403 and "3 entries already" in body["error"]
    assert upload(ladder.url, token, "dave0", ("bot.py", b"print(2)\n"))[0] == 201  # an update is not a new entry
    assert sorted(entries(out)) == ["dave0", "dave1", "dave2"]


def test_a_ladder_plays_on_a_dask_cluster(tmp_path: Path, ladders: Callable[..., RunningLadder]) -> None:
    pytest.importorskip("distributed", reason="the cluster extra is not installed (pip install -e '.[cluster]')")
    from tests.test_cluster import start_cluster

    cluster = start_cluster(tmp_path / "dask", workers=2)
    try:
        out = tmp_path / "ladder"
        alternator("ladder", str(out), "add", "random", "random")
        alternator("ladder", str(out), "add", "greedy", "greedy")
        alternator("ladder", str(out), "add", "good", f"python3 {TESTBOT}")
        alternator("ladder", str(out), "add", "badhello", f"python3 {TESTBOT} version 99")
        ladder = ladders(out, "--cluster", cluster.address)
        wait_for(
            "games on the cluster", lambda: sum(games_of(out, n) for n in ("random", "greedy", "good")) >= 12, ladder
        )
        # A bot no worker can start is suspended (probed before its first game), not a worker taken out of the run.
        wait_for("the broken entry suspended", lambda: entries(out)["badhello"].status == "suspended", ladder)
        assert "cannot start" in entries(out)["badhello"].reason
        played = games_of(out, "greedy")
        wait_for("games after the suspension", lambda: games_of(out, "greedy") > played + 2, ladder)
        assert ladder.stop() == 130
        workers = {json.loads(line)["worker"] for line in (out / "games.jsonl").read_text().splitlines()}
        assert workers and None not in workers  # every game was played by a worker
    finally:
        cluster.stop()
