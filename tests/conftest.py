"""Shared fixtures for the whole suite.

- `bot_spec(name_or_script, *args, name=None)`: a BotSpec that starts a test bot with `sys.executable`.
  `name_or_script` is a script in `tests/bots/` by stem (`"testbot"`), or a path to any Python script; extra
  arguments go to the script (see `tests/bots/testbot.py` for its modes: `bot_spec("testbot", "crash", "3")`).
- `no_child_processes` (autouse): after every test, checks that the test process's tree holds no process
  the test started (running or zombie, child or deeper), waiting up to `CHILD_GRACE_S` for ones being
  reaped. Tests that start bots through `referee.play.process.open_bot` get this for free; a test that
  leaks a process fails here, naming it.
- `reap_orphans()`: reap what a referee killed with `kill -9` leaves to this process (a subreaper), until the
  tree is as the test found it.
- `live_pids(pids)` / `pid_alive(pid)`: whether processes still exist (zombies count as gone), for
  checking that grandchildren were killed.
- `pytest_sessionstart`: the arena compiled to bytecode once, and `python3` on PATH this Python, for the processes
  the suite starts.
"""

from __future__ import annotations

import compileall
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from referee.run import backoff
from referee.run.botspec import BotSpec

ROOT = Path(__file__).resolve().parent.parent
BOTS_DIR = Path(__file__).parent / "bots"
CHILD_GRACE_S = 3.0

BotSpecFactory = Callable[..., BotSpec]


def make_bot_spec(name_or_script: str | Path, *args: str, name: str | None = None) -> BotSpec:
    """A BotSpec running a Python test bot under the current interpreter."""
    script = Path(name_or_script)
    if script.suffix != ".py":
        script = BOTS_DIR / f"{name_or_script}.py"
    if not script.is_file():
        raise FileNotFoundError(f"no test bot script at {script}")
    label = name or "-".join([script.stem, *args])[:64]
    return BotSpec(name=label, command=[sys.executable, str(script), *args])


@pytest.fixture
def bot_spec() -> BotSpecFactory:
    """`bot_spec("testbot", "crash", "3")` -> a BotSpec for tests/bots/testbot.py with those arguments."""
    return make_bot_spec


def _proc_state(pid: int) -> str | None:
    """The state letter from /proc/PID/stat (R, S, Z, ...), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def pid_alive(pid: int) -> bool:
    """True when process `pid` exists and is not a zombie (killed and waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _proc_state(pid) not in (None, "Z", "X")


def live_pids(pids: list[int], wait_s: float = 2.0) -> list[int]:
    """The pids among `pids` still alive after waiting up to `wait_s` for them to die."""
    deadline = time.monotonic() + wait_s
    while True:
        alive = [pid for pid in pids if pid_alive(pid)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.02)


def child_pids(parent: int | None = None) -> list[int]:
    """Direct children of `parent` (default: this process), zombies included.

    From the `children` file of each of its threads (a child is listed under the thread that started it, or the
    one it passed to when that thread ended), as `descendants` reads them: 20 µs, where reading the parent of
    every process in /proc took 1.5 ms, twice a test (`no_child_processes`)."""
    parent = os.getpid() if parent is None else parent
    children: list[int] = []
    try:
        tasks = list(os.scandir(f"/proc/{parent}/task"))
    except OSError:  # no such process (any more)
        return children
    for task in tasks:
        try:
            with open(f"{task.path}/children") as file:
                children += [int(pid) for pid in file.read().split()]
        except OSError:  # the thread ended
            continue
    return children


def descendants(pid: int) -> list[int]:
    """Children of `pid` and theirs (Linux /proc)."""
    found: list[int] = []
    stack = [pid]
    while stack:
        parent = stack.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            stack += children
    return found


SETTLE_S = 0.5
"""How long this process's tree must stay as it was when a test began before `reap_orphans` is done."""


def reap_orphans(wait_s: float = 2.0, gone: Iterable[int] = ()) -> None:
    """Reap this process's zombie children, for tests that kill a referee with `kill -9`.

    Once it has run a bot, the test process is a child subreaper (`referee.host.containment`): the killed
    referee's processes, dying with it, are re-parented to it one by one as their parents die, and wait to be
    reaped here. Nothing of the killed tree can leave this process's tree (every orphan goes to the nearest
    subreaper, this one, or to the init of a sandbox's process namespace, itself inside), so the tree is back to
    what it held when the test began once all is reaped: it reaps until then, and `SETTLE_S` more in which
    nothing comes, or for at most `wait_s` (a bound for a loaded machine). With `gone` (pids of the killed
    referee's processes), it also waits until none of those is left, reaped here or elsewhere.
    """
    gone = list(gone)
    deadline = time.monotonic() + wait_s
    settled_since: float | None = None
    while True:
        children = []
        reaped = False
        for pid in child_pids():
            if _proc_state(pid) == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                    reaped = True
                    continue  # reaped: no longer a child
            children.append(pid)
        now = time.monotonic()
        settled = not _new_descendants(children) and not any(Path(f"/proc/{pid}").exists() for pid in gone)
        if not settled or reaped:
            settled_since = None
        elif settled_since is None:
            settled_since = now
        # Settled for a moment, not at one instant: a process on its way here (its parent, in a sandbox's
        # namespace, exiting) is in no tree /proc shows until it arrives (seen once in CI, a zombie late by
        # less than a second).
        if (settled_since is not None and now - settled_since >= SETTLE_S) or now >= deadline:
            return
        time.sleep(0.02)


def describe_process(pid: int) -> str:
    """A process's pid, state letter, parent pid and command line, for failure messages."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except FileNotFoundError:
        cmdline = "?"
    try:
        parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        wchan = Path(f"/proc/{pid}/wchan").read_text().strip() or "-"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        parent = wchan = "?"
    return f"{pid} [{_proc_state(pid)}, parent {parent}, waiting in {wchan}] {cmdline}"


# This process's children when the running test began (`no_child_processes`), for `reap_orphans`.
_children_at_start: set[int] = set()


def _new_descendants(children: Iterable[int] | None = None) -> list[int]:
    """The children this process gained since the running test began, and all of theirs (zombies included);
    `children`: this process's, if just listed (`child_pids`), else listed here.

    What a process already here then starts (a browser's renderers, a cluster's workers under a fixture of a
    wider scope) is that process's business, not the test's.
    """
    new = [pid for pid in (child_pids() if children is None else children) if pid not in _children_at_start]
    return [*new, *(grandchild for pid in new for grandchild in descendants(pid))]


@pytest.fixture(autouse=True)
def no_child_processes() -> Iterator[None]:
    """Fail a test that leaves a process behind (running or unreaped, a child it started or one of theirs).

    The children's whole trees, not just the children: a grandchild left running is re-parented here when
    its parent dies, maybe during a later test, which would then be blamed for it.
    """
    _children_at_start.clear()
    _children_at_start.update(child_pids())
    yield
    deadline = time.monotonic() + CHILD_GRACE_S
    while True:
        left = _new_descendants()
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    if left:
        pytest.fail("processes left behind: " + "; ".join(describe_process(pid) for pid in left), pytrace=False)


# -- a busy host (referee.run.backoff): quick pauses on a host that reads calm ---------------------------------


class CalmHost(backoff.HostWatch):
    """The host as a test wants it: calm, whatever this machine's load."""

    async def read(self, at_s: float) -> backoff.HostReading:
        self.reads = getattr(self, "reads", 0) + 1
        return backoff.HostReading(at_s, 1.0, 0.1)


@pytest.fixture
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    import referee.run.runner as runner_module

    monkeypatch.setattr(backoff, "CALM_FOR_S", 0.3)
    monkeypatch.setattr(backoff, "RAMP_AFTER_S", 0.5)
    monkeypatch.setattr(runner_module, "HOST_READING_INTERVAL_S", 0.05)
    monkeypatch.setattr(backoff, "HostWatch", CalmHost)


# -- the Python of the processes the suite starts --------------------------------------------------------------


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start the suite's processes as fast as they can start: the arena compiled once, and `python3` this Python.

    Bytecode: with PYTHONDONTWRITEBYTECODE set (as on the hosts the suite runs on) no process keeps what it
    compiles, and every `python -m referee` command, play worker, ladder, Dask worker and sample bot the suite
    starts compiled the arena again as it started: 0.6 s of the 1.6 s of a one-game `alternator match`. Here the
    packages are compiled to `__pycache__` (ignored by git) once; bytecode is checked against its source's mtime
    and size, so an edited module is compiled afresh, and the processes still write none.

    PATH: the test bots are commands such as `python3 tests/bots/testbot.py`. The folder of this interpreter (a
    virtual environment's `bin`) goes first on PATH, as activating the environment does, so that `python3` and
    `python` are this same Python, not a version manager's shim (pyenv's took 0.1 s to start each bot).
    """
    if sys.dont_write_bytecode and sys.pycache_prefix is None:
        for package in ("referee", "protocol", "sample_bots"):
            compileall.compile_dir(ROOT / package, quiet=1)
    here = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != here:
        os.environ["PATH"] = os.pathsep.join([here, *([path] if path else [])])
