"""The sandbox for untrusted bots: the argv it builds (pure, always run), the forms and config keys that ask
for it, the errors when it cannot be had, and, where bubblewrap is installed, what a sandboxed bot cannot do
(reach the network, write outside /tmp, see the referee's environment, outlive the game, exceed its memory).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from protocol.rules import Position
from referee.cli import UsageError, build_parser, main
from referee.commands.tournament import build_plan
from referee.host import containment, sandbox
from referee.host.sandbox import (
    SandboxError,
    check_launch,
    launch_command,
    limited_command,
    sandbox_environment,
    sandboxed_command,
    visible_paths,
)
from referee.play.game import run_game
from referee.play.process import BotStartError, open_bot
from referee.record import GameRecord, GameSettings, MoveRecord, Termination
from referee.run.botspec import BotSpec, BotSpecError, check_bot_command, load_bot_file, parse_bot_arg
from referee.run.config import describe_changes, load_config, resolve_plan
from referee.run.store import DB_NAME, RunStore, StoreError
from referee.timing.clock import parse_time_control
from tests.conftest import descendants, describe_process, live_pids, make_bot_spec, reap_orphans

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
)
needs_prlimit = pytest.mark.skipif(
    shutil.which("prlimit") is None, reason="prlimit is not installed: apt-get install util-linux"
)

MISSING_BWRAP = (
    "sandbox requested for bot 'x', but bubblewrap (bwrap) is not installed: install the Debian/Ubuntu package"
    " bubblewrap (apt-get install bubblewrap), or run without --sandbox"
)


def fake_tool(folder: Path, name: str, script: str) -> str:
    """An executable shell script standing in for a tool (a bwrap that cannot sandbox, ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return str(path)


# -- the argv (pure) ---------------------------------------------------------------------------------------


def test_the_sandbox_argv_isolates_and_keeps_the_process_group() -> None:
    spec = BotSpec(name="x", command=["./bot", "--fast"], memory_mb=300)
    argv = sandboxed_command(spec, workdir=Path("/work/bots/x"), bwrap="/usr/bin/bwrap", prlimit="/usr/bin/prlimit")
    assert argv[:3] == ["/usr/bin/bwrap", "--unshare-all", "--die-with-parent"]
    pairs = list(itertools.pairwise(argv))
    assert ("--tmpfs", "/tmp") in pairs and ("--tmpfs", "/run") in pairs and ("--dev", "/dev") in pairs
    # The system read-only, its secrets masked; nothing else of the host's filesystem (no root bind).
    assert ("--ro-bind", "/usr") in pairs and ("--ro-bind", "/") not in pairs
    if Path("/etc/shadow").exists():
        assert argv[argv.index("/etc/shadow") - 2 : argv.index("/etc/shadow") + 1] == [
            "--ro-bind",
            "/dev/null",
            "/etc/shadow",
        ]
    assert ("--chdir", "/work/bots/x") in pairs
    # The referee kills the bot's process group: a new session inside would take the bot out of it.
    assert "--new-session" not in argv and "--bind" not in argv
    # The limit applies inside the sandbox, to the bot only; the bot's own command comes last, untouched.
    assert argv[argv.index("--") :] == ["--", "/usr/bin/prlimit", f"--as={300 * 1024 * 1024}", "--", "./bot", "--fast"]


def test_only_the_bots_own_folder_is_mounted_and_private_folders_inside_it_are_hidden(tmp_path: Path) -> None:
    spec = BotSpec(name="x", command=["./bot"])
    inside = sandboxed_command(spec, workdir=Path("/tmp/entries/x"))
    at = inside.index("/tmp/entries/x")
    assert inside[at - 1 : at + 2] == ["--ro-bind", "/tmp/entries/x", "/tmp/entries/x"]
    assert at > inside.index("/tmp")  # after the tmpfs, or the tmpfs would hide it
    # /tmp itself stays the private one; a folder elsewhere is mounted by itself, not its parents.
    assert ("--ro-bind", "/tmp") not in list(itertools.pairwise(sandboxed_command(spec, workdir=Path("/tmp"))))
    home = sandboxed_command(spec, workdir=Path("/home/me/bot"))
    assert ("--ro-bind", "/home/me/bot") in list(itertools.pairwise(home)) and "/home" not in home
    # The output directory and another bot's folder inside what the bot sees are covered by an empty tmpfs.
    out, other = tmp_path / "out", tmp_path / "other"
    out.mkdir()
    other.mkdir()
    argv = sandboxed_command(spec, workdir=tmp_path, private=[out, other, tmp_path, tmp_path / "absent"])
    pairs = list(itertools.pairwise(argv))
    assert ("--tmpfs", str(out.resolve())) in pairs and ("--tmpfs", str(other.resolve())) in pairs
    assert ("--tmpfs", str(tmp_path.resolve())) not in pairs  # it holds the bot's own folder
    assert str(tmp_path / "absent") not in argv
    with pytest.raises(ValueError, match="absolute working directory"):
        sandboxed_command(spec, workdir=Path("bots/x"))


def test_a_memory_limit_without_the_sandbox_is_just_prlimit() -> None:
    assert limited_command(["./bot"], 64, prlimit="prlimit") == ["prlimit", "--as=67108864", "--", "./bot"]


def test_the_sandboxed_environment_drops_the_referees_secrets() -> None:
    spec = BotSpec(name="x", command=["./bot"], env={"THREADS": "2", "LANG": "C"})
    environ = {"PATH": "/usr/bin", "LANG": "en_GB.UTF-8", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "HOME": "/root"}
    assert sandbox_environment(spec, environ) == {
        "PATH": "/usr/bin",
        "LANG": "C",  # the bot's own setting wins
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "THREADS": "2",
    }


def test_launch_command_wraps_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: "/opt/bwrap")
    monkeypatch.setattr(sandbox, "find_prlimit", lambda: "/opt/prlimit")
    assert launch_command(BotSpec(name="x", command=["./bot"])) == ["./bot"]
    assert launch_command(BotSpec(name="x", command=["./bot"], memory_mb=32))[:2] == ["/opt/prlimit", "--as=33554432"]
    argv = launch_command(BotSpec(name="x", command=["./bot"], sandbox=True, dir=Path("/")))
    assert argv[0] == "/opt/bwrap" and argv[-2:] == ["--", "./bot"]


def test_missing_tools_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    monkeypatch.setattr(sandbox, "find_prlimit", lambda: None)
    with pytest.raises(SandboxError) as caught:
        launch_command(BotSpec(name="x", command=["./bot"], sandbox=True))
    assert str(caught.value) == MISSING_BWRAP
    with pytest.raises(SandboxError, match=r"memory limit requested for bot 'x' \(64 MiB\), but prlimit is not"):
        launch_command(BotSpec(name="x", command=["./bot"], memory_mb=64))


async def test_open_bot_refuses_to_start_a_sandboxed_bot_without_bwrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    spec = make_bot_spec("testbot", name="x").model_copy(update={"sandbox": True})
    with pytest.raises(BotStartError) as caught:
        async with open_bot(spec, tmp_path):
            pass
    assert str(caught.value) == MISSING_BWRAP


def test_a_machine_that_cannot_sandbox_is_told_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bwrap is there but user namespaces are not (a container, Ubuntu's AppArmor restriction).
    bwrap = fake_tool(tmp_path / "bin", "bwrap", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1")
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: bwrap)
    with pytest.raises(SandboxError) as caught:
        check_launch(BotSpec(name="x", command=["./bot"], sandbox=True))
    message = str(caught.value)
    assert "sandbox requested for bot 'x', but bubblewrap cannot create a sandbox on this machine" in message
    assert "No permissions to create new namespace" in message and "or run without --sandbox" in message


def test_what_a_bot_needs_from_inside_tmp_is_mounted_again_read_only(tmp_path: Path) -> None:
    # A bot, a checkout or a virtual environment kept under /tmp must still run in the sandbox, whose /tmp
    # is otherwise private and empty: its folders are mounted again, read-only, over the private one.
    loose = Path("/tmp") / f"sandbox-test-{uuid.uuid4().hex}.py"
    loose.write_text("print('hi')\n")
    try:
        script = tmp_path / "bots" / "mine.py"
        script.parent.mkdir()
        script.write_text("print('hi')\n")
        spec = BotSpec(name="x", command=["/usr/bin/env", str(script), str(loose)], sandbox=True)
        seen = visible_paths(spec, Path("/"))
        # The script's folder, and a file lying directly in /tmp by itself (never /tmp as a whole).
        assert seen == [loose.resolve(), script.parent.resolve()]
        argv = sandboxed_command(spec, workdir=Path("/"))
        for path in seen:
            at = argv.index(str(path))
            assert argv[at - 1 : at + 2] == ["--ro-bind", str(path), str(path)] and at > argv.index("/tmp")
        # Inside the working directory nothing is mounted twice.
        assert visible_paths(spec, tmp_path) == [loose.resolve(), tmp_path.resolve()]
        # A Python bot sees its Python (a venv, say) and this project wherever they are.
        python = BotSpec(name="p", command=[sys.executable, "-m", "sample_bots.random"], sandbox=True)
        seen_python = visible_paths(python, Path("/"))
        for path in (Path(sys.prefix).resolve(), sandbox.PROJECT_ROOT):
            if not path.is_relative_to("/usr"):
                assert any(path.is_relative_to(seen_path) for seen_path in seen_python), path
    finally:
        loose.unlink()


@needs_bwrap
async def test_a_bot_kept_under_tmp_runs_sandboxed_and_tmp_stays_private(tmp_path: Path) -> None:
    # tmp_path is under /tmp: the bot's script there is visible (read-only), other files in /tmp are not.
    secret = Path("/tmp") / f"sandbox-secret-{uuid.uuid4().hex}.txt"
    secret.write_text("not for bots\n")
    script = tmp_path / "peek.py"
    script.write_text(
        "import os, sys\n"
        f"print('secret visible' if os.path.exists({str(secret)!r}) else 'secret hidden', file=sys.stderr)\n"
        "print(open(__file__).read() and 'script readable', file=sys.stderr)\n"
    )
    try:
        spec = BotSpec(name="peek", command=[sys.executable, str(script)], sandbox=True, dir=tmp_path)
        async with open_bot(spec, tmp_path / "logs") as bot:
            with trio.fail_after(10):
                await bot.process.wait()
            await bot.settle()
            tail = bot.stderr_tail()
        assert bot.returncode == 0, tail
        assert tail == ["secret hidden", "script readable"]
    finally:
        secret.unlink()


# -- the forms that ask for it -----------------------------------------------------------------------------


def test_bot_forms_accept_sandbox_and_memory_mb(tmp_path: Path) -> None:
    spec = parse_bot_arg('name=x cmd="random" sandbox=1 memory_mb=512')
    assert (spec.sandbox, spec.memory_mb) == (True, 512)
    assert parse_bot_arg("name=x cmd=random sandbox=no").sandbox is False
    assert parse_bot_arg("random").sandbox is False and parse_bot_arg("random").memory_mb is None
    with pytest.raises(BotSpecError, match="sandbox='maybe': write sandbox=1"):
        parse_bot_arg("name=x cmd=random sandbox=maybe")
    with pytest.raises(BotSpecError, match="memory_mb='lots': give a whole number of MiB"):
        parse_bot_arg("name=x cmd=random memory_mb=lots")
    with pytest.raises(BotSpecError, match="memory_mb: Input should be greater than or equal to 16"):
        parse_bot_arg("name=x cmd=random memory_mb=8")
    path = tmp_path / "bot.toml"
    path.write_text('command = "random"\nsandbox = true\nmemory_mb = 300\n')
    assert (load_bot_file(path).sandbox, load_bot_file(path).memory_mb) == (True, 300)
    path.write_text('command = "random"\nsandbox = "yes"\n')
    with pytest.raises(BotSpecError, match="`sandbox` must be true or false"):
        load_bot_file(path)
    path.write_text('command = "random"\nmemory_mb = 1.5\n')
    with pytest.raises(BotSpecError, match="`memory_mb` must be a whole number of MiB"):
        load_bot_file(path)


CONFIG = """
sandbox = true
memory_mb = 256

[[bots]]
name = "stranger"
command = "random"

[[bots]]
name = "reference"
command = "greedy"
sandbox = false
memory_mb = 1024
"""


def tournament_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["tournament", *argv])


def test_tournament_config_sandboxes_every_bot_unless_a_bot_says_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(CONFIG)
    plan = resolve_plan(load_config(path), base_dir=tmp_path, source="t.toml", default_out=tmp_path / "out")
    assert [(b.sandbox, b.memory_mb) for b in plan.bots] == [(True, 256), (False, 1024)]
    assert plan.fingerprint["bots"][0]["sandbox"] is True and plan.fingerprint["bots"][0]["memory_mb"] == 256
    # --sandbox and --memory-mb are for every bot, overriding the bots' own settings.
    forced = build_plan(tournament_args(str(path), "--sandbox", "--memory-mb", "128"))
    assert [(b.sandbox, b.memory_mb) for b in forced.bots] == [(True, 128), (True, 128)]
    on_command_line = build_plan(
        tournament_args("--bot", "name=a cmd=random sandbox=1", "--bot", "greedy", "--out", str(tmp_path / "o"))
    )
    assert [b.sandbox for b in on_command_line.bots] == [True, False]
    with pytest.raises(UsageError, match="--memory-mb 8: give at least 16"):
        build_plan(tournament_args(str(path), "--memory-mb", "8"))


def test_resuming_a_tournament_with_another_sandbox_setting_is_refused(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    plain = build_plan(tournament_args("--bot", "random", "--bot", "greedy", "--out", out))
    # Unsandboxed bots fingerprint as before the sandbox existed: older tournaments still resume.
    assert all(set(bot) == {"name", "command", "dir", "env"} for bot in plain.fingerprint["bots"])
    boxed = build_plan(tournament_args("--bot", "random", "--bot", "greedy", "--out", out, "--sandbox"))
    changes = describe_changes(plain.fingerprint, boxed.fingerprint)
    assert changes == ["bots[0].sandbox: was null, now true", "bots[1].sandbox: was null, now true"]
    # Another field of bots, one short line per change: never both bot lists in one line.
    more = build_plan(tournament_args("--bot", "random", "--bot", "greedy", "--bot", "alphabeta", "--out", out))
    changes = describe_changes(plain.fingerprint, more.fingerprint)
    assert changes == ['bots: now also "alphabeta"'] and all(len(line) <= 120 for line in changes)
    from tests.test_store import record, schedule

    with RunStore(tmp_path / DB_NAME) as store:
        store.start(plain.fingerprint, schedule())
        store.record_game(1, record(schedule()[0]))
    with (
        RunStore(tmp_path / DB_NAME) as store,
        pytest.raises(StoreError, match=r"bots\[0\]\.sandbox: was null, now true"),
    ):
        store.start(boxed.fingerprint, schedule())


def test_sandbox_without_bwrap_is_a_usage_error_before_any_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    out = tmp_path / "m"
    argv = ["--black", "name=x cmd=random", "--white", "greedy", "--sandbox", "--out", str(out)]
    assert main(["match", *argv]) == 2
    assert MISSING_BWRAP in capsys.readouterr().err
    assert not list(out.glob("game-*.json"))
    tournament = ["tournament", "--bot", "x=random", "--bot", "greedy", "--sandbox", "--out", str(tmp_path / "t")]
    assert main(tournament) == 2
    assert MISSING_BWRAP in capsys.readouterr().err
    assert not (tmp_path / "t" / DB_NAME).exists()


# -- real sandboxes ----------------------------------------------------------------------------------------


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1 (the kernel completes connections; nobody needs to accept)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def probe_lines(log: Path) -> dict[str, str]:
    lines = log.read_text().splitlines()
    return dict(line.removeprefix("probe ").split(": ", 1) for line in lines if line.startswith("probe "))


def marked_processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def test_without_the_sandbox_the_probe_does_reach_the_network_and_the_disk(
    tmp_path: Path, listening_port: int
) -> None:
    """The control for the sandboxed test below: the same probes succeed when nothing stops them."""
    target = tmp_path / "written.txt"
    spec = make_bot_spec("sandboxprobe", "connect", f"127.0.0.1:{listening_port}", "write", str(target), name="p")
    async with open_bot(spec, tmp_path / "logs") as bot:
        await bot.handshake()
    probes = probe_lines(bot.stderr_path)
    assert probes[f"connect 127.0.0.1:{listening_port}"] == "connected"
    assert probes[f"write {target}"] == "ok" and target.exists()


@needs_bwrap
async def test_a_sandboxed_bot_plays_a_whole_game_but_cannot_reach_out(
    tmp_path: Path, listening_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALTERNATOR_TEST_SECRET", "s3cr3t")
    home = tmp_path / "bot-home"
    home.mkdir()
    private = f"/tmp/sandboxprobe-{uuid.uuid4().hex}.txt"
    marker = f"sandbox-escape-{uuid.uuid4().hex}"
    probe = make_bot_spec(
        "sandboxprobe",
        *("connect", f"127.0.0.1:{listening_port}", "write", str(home / "mine.txt"), "write", private),
        *("write", str(Path.cwd() / "escaped.txt"), "env", "ALTERNATOR_TEST_SECRET", "env", "ALLOWED"),
        *("escape", marker, "processes"),
        name="probe",
    ).model_copy(update={"sandbox": True, "dir": home, "env": {"ALLOWED": "1"}})
    sample = BotSpec(name="random", command=[sys.executable, "-m", "sample_bots.random"], sandbox=True)
    settings = GameSettings(width=5, height=5, time_control=parse_time_control("20+0.5"))
    escapees: list[int] = []

    def on_move(move: MoveRecord, position: Position) -> None:
        if not escapees:
            escapees.extend(marked_processes(marker))

    async with open_bot(probe, tmp_path / "logs") as black, open_bot(sample, tmp_path / "logs") as white:
        record = await run_game("sandboxed", black, white, settings, on_move=on_move)
        sandbox_pids = [black.pid, white.pid]

    assert record.termination is Termination.NORMAL, record.reason
    assert record.black.sandbox and record.white.sandbox
    assert record.black.command == probe.command  # the user's command; the wrapper is noted apart
    assert record.black.run_command is not None and Path(record.black.run_command[0]).name == "bwrap"
    probes = probe_lines(Path(str(record.black.stderr_log)))
    assert probes[f"connect 127.0.0.1:{listening_port}"].startswith("failed:")  # its own empty network
    assert "Read-only file system" in probes[f"write {home / 'mine.txt'}"]
    assert "Read-only file system" in probes[f"write {Path.cwd() / 'escaped.txt'}"]
    assert probes[f"write {private}"] == "ok" and not Path(private).exists()  # a private /tmp, gone with it
    assert not (home / "mine.txt").exists() and not (Path.cwd() / "escaped.txt").exists()
    assert probes["env ALTERNATOR_TEST_SECRET"] == "absent" and probes["env ALLOWED"] == "present"
    assert int(probes["processes"]) <= 5  # its own process namespace: bwrap's init, itself, its children
    # The daemon left the bot's process group and session, yet died with the sandbox.
    assert probes[f"escape {marker}"] == "started" and escapees, "the escapee never ran: the test proves nothing"
    assert live_pids([*sandbox_pids, *escapees]) == []
    assert marked_processes(marker) == []


def _is_the_sleeping_daemon(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"time.sleep(60)" in cmdline and b"Popen" not in cmdline


@needs_bwrap
def test_a_sandboxed_bot_dies_with_a_referee_killed_by_sigkill(tmp_path: Path) -> None:
    """No quit, no killpg: only --die-with-parent and the process namespace stop the bot and its daemon."""
    marker = f"sandbox-orphan-{uuid.uuid4().hex}"
    script = Path(__file__).parent / "bots" / "sandboxprobe.py"
    probe = f'name=probe cmd="python3 {script} escape {marker} -- hang" sandbox=1'  # hangs on its first turn
    argv = ["--black", probe, "--white", "random", "--size", "4x4", "--tc", "60", "--out", str(tmp_path / "m")]
    root = Path(__file__).resolve().parent.parent
    referee = subprocess.Popen(
        [sys.executable, "-m", "referee", "match", *argv],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sandboxed: list[int] = []
    try:
        # Until the daemon runs (its command line holds the sleep, the middle process's also the Popen
        # that starts it); then bwrap, its init, the bot and the daemon: every marked process but the referee.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(0.05)
            sandboxed = [pid for pid in marked_processes(marker) if pid != referee.pid]
            if any(_is_the_sleeping_daemon(pid) for pid in sandboxed):
                break
        assert len(sandboxed) >= 4, "the sandboxed bot did not start: " + "; ".join(map(describe_process, sandboxed))
        everyone = descendants(referee.pid)  # the other bot too, and whatever the referee ran
        referee.send_signal(signal.SIGKILL)
        referee.wait()
        survivors = live_pids(sandboxed, wait_s=15)  # a bound for a loaded machine, not a timing
        assert not survivors, "still running: " + "; ".join(describe_process(pid) for pid in survivors)
        # The dead are re-parented to this process (a subreaper) one by one as their parents die: on a loaded
        # machine the last can come a second or more after the others.
        reap_orphans(wait_s=15, gone=[*sandboxed, *everyone])
    finally:
        if referee.poll() is None:
            referee.kill()
            referee.wait()
        for pid in marked_processes(marker):  # only on failure: do not leave them running
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def address_space_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host without a memory cgroup: --memory-mb falls back to limiting the address space (prlimit --as)."""
    real = containment.host_support()
    fallback = dataclasses.replace(
        real,
        v2_controllers=real.v2_controllers - {"memory"},
        memory=None,
        memory_problem="test: no memory cgroup",
    )
    monkeypatch.setattr(containment, "host_support", lambda: fallback)


@pytest.mark.parametrize("sandboxed", [pytest.param(True, marks=needs_bwrap), pytest.param(False, marks=needs_prlimit)])
async def test_a_bot_over_its_memory_limit_crashes_and_the_reason_says_so(
    tmp_path: Path, sandboxed: bool, address_space_only: None
) -> None:
    hog = make_bot_spec("sandboxprobe", "hog", "1024", name="hog").model_copy(
        update={"sandbox": sandboxed, "memory_mb": 200}
    )
    sample = BotSpec(name="random", command=[sys.executable, "-m", "sample_bots.random"], sandbox=sandboxed)
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("20+0.5"))
    async with open_bot(hog, tmp_path / "logs") as black, open_bot(sample, tmp_path / "logs") as white:
        record = await run_game("hog", black, white, settings)
    assert record.termination is Termination.CRASH and record.loser == "black"
    assert record.reason == "black (hog) exited with code 1 (its memory was limited to 200 MiB)"
    assert any("MemoryError" in line for line in record.stderr_tail)
    assert record.black.memory_mb == 200 and record.black.sandbox is sandboxed
    assert record.black.containment is not None
    assert record.black.containment.endswith("memory limit: address space 200 MiB (prlimit --as)")


needs_memory_cgroup = pytest.mark.skipif(
    containment.host_support().memory_cgroup is None,
    reason=f"no writable memory cgroup: {containment.host_support().memory_problem}",
)


async def play_jvm_like(tmp_path: Path, touched_mib: int, *, sandboxed: bool = False) -> GameRecord:
    """A game of a bot that reserves 8 GiB of address space and touches `touched_mib` MiB, under --memory-mb 256."""
    jvm = make_bot_spec("testbot", "jvm", str(touched_mib), name="jvm").model_copy(
        update={"memory_mb": 256, "sandbox": sandboxed}
    )
    sample = BotSpec(name="random", command=[sys.executable, "-m", "sample_bots.random"])
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("20+0.5"))
    async with open_bot(jvm, tmp_path / "logs") as black, open_bot(sample, tmp_path / "logs") as white:
        return await run_game("jvm", black, white, settings)


@needs_memory_cgroup
@pytest.mark.parametrize("sandboxed", [pytest.param(True, marks=needs_bwrap), False])
async def test_a_jvm_like_bot_plays_under_a_limit_on_resident_memory_and_loses_past_it(
    tmp_path: Path, sandboxed: bool
) -> None:
    fits = await play_jvm_like(tmp_path, 100, sandboxed=sandboxed)
    assert fits.termination is Termination.NORMAL, fits.reason
    # Not wrapped in an address-space limit: the memory cgroup holds it (inside the sandbox too).
    assert fits.black.memory_mb == 256
    assert not any("prlimit" in word for word in fits.black.run_command or [])
    assert (fits.black.run_command is None) is not sandboxed
    assert fits.black.containment is not None and "memory limit: memory." in fits.black.containment
    over = await play_jvm_like(tmp_path, 300, sandboxed=sandboxed)
    assert over.termination is Termination.CRASH and over.loser == "black"
    assert over.reason is not None and over.reason.startswith("black (jvm) was killed by the kernel's out-of-memory")
    assert over.reason.endswith(": its memory was limited to 256 MiB")


@needs_prlimit
async def test_where_only_the_address_space_can_be_limited_a_jvm_like_bot_cannot_even_start(
    tmp_path: Path, address_space_only: None
) -> None:
    record = await play_jvm_like(tmp_path, 100)
    assert record.termination is Termination.CRASH and record.loser == "black"
    assert record.reason == "black (jvm) failed the handshake: exited with code 1 (its memory was limited to 256 MiB)"
    assert any("Cannot allocate memory" in line for line in record.stderr_tail)


@needs_bwrap
async def test_a_signal_inside_the_sandbox_is_reported_as_the_signal(tmp_path: Path) -> None:
    crasher = make_bot_spec("testbot", "signal", "SEGV", name="segv").model_copy(update={"sandbox": True})
    sample = BotSpec(name="random", command=[sys.executable, "-m", "sample_bots.random"])
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("20+0.5"))
    async with open_bot(crasher, tmp_path / "logs") as black, open_bot(sample, tmp_path / "logs") as white:
        record = await run_game("segv", black, white, settings)
    assert record.termination is Termination.CRASH
    assert record.reason == "black (segv) killed by SIGSEGV (exit code 139 from the sandbox)"


@needs_bwrap
def test_match_with_sandbox_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.commands.replay import read_record

    out = tmp_path / "m"
    argv = ["match", "--black", "random", "--white", "greedy", "--size", "4x4", "--games", "1", "--out", str(out)]
    assert main([*argv, "--sandbox", "--memory-mb", "256"]) == 0
    record = read_record(out / "games.jsonl", "g0001")
    assert record.termination is Termination.NORMAL
    for side in (record.black, record.white):
        assert side.sandbox and side.memory_mb == 256 and side.run_command is not None
        assert side.run_command[-3:] == side.command  # the user's command, run inside the wrapper
    assert "results:" in capsys.readouterr().out


@needs_bwrap
def test_check_bot_command_tries_the_real_sandbox() -> None:
    check_bot_command(parse_bot_arg("name=x cmd=random sandbox=1 memory_mb=64"))
    assert os.path.exists(str(shutil.which("bwrap")))


@needs_bwrap
async def test_a_sandboxed_bot_s_waits_for_a_cpu_are_read_from_the_bot_not_from_bubblewrap(tmp_path: Path) -> None:
    # The clocks' fairness reads the bot's own scheduling (referee.play.game): in a sandbox, the process started is
    # bwrap, which starts an init of its own, which starts the bot. Its waits and state come from the bot.
    if not Path("/proc/self/task").is_dir():
        pytest.skip("no /proc: a bot's scheduling state cannot be read here")
    spec = make_bot_spec("testbot").model_copy(update={"sandbox": True})
    async with open_bot(spec, tmp_path / "logs") as bot:
        with trio.fail_after(10):
            await bot.handshake()
        pid = bot._bot_pid()
        assert pid is not None and pid != bot.pid
        assert Path(f"/proc/{pid}/comm").read_text().startswith("python")  # the test bot, not bwrap
        assert bot.probe.cpu_wait_ns() is not None
        sample = bot.probe.cpu_sample()
        assert sample is not None and sample[1] > 0  # a Python start-up is not free; bwrap itself hardly runs
