"""Every process a bot starts is tracked, accounted, frozen on request, and ends with it.

A bot is a process tree the referee does not trust: children that call setsid() or setpgid() leave the
bot's process group, a double-forked daemon leaves its parent. `ProcessTree` keeps hold of all of them,
with the strongest means the host allows, detected once (`host_support`), never assumed:

- **cgroup v2** (preferred: a writable v2 hierarchy, found from /proc/self/cgroup and /proc/self/mounts, as root
  or in a delegated subtree such as a systemd user scope; see `probe_v2`): each bot gets a cgroup of its own,
  joined before its program starts, so every descendant is in it whatever it does with sessions and parents.
  The tree is killed as one by `cgroup.kill`, frozen by `cgroup.freeze`, its CPU time read from `cpu.stat`;
  where the controllers are delegated, its process count is bounded by `pids.max`, its resident memory by
  `memory.max` (swap off), its cores set by `cpuset.cpus`. What v2 lacks here, v1 controllers supply where
  they are writable (a hybrid host: v2 at /sys/fs/cgroup/unified beside v1).
- **cgroup v1** (`pids`, `freezer`, `cpuacct`, `cpuset` controllers mounted and writable, as when the
  referee runs as root on a host without v2): a cgroup per bot in each controller, the tree frozen and killed
  as one, its CPU time read from `cpuacct.usage`, its process count bounded by `pids.max`, and its cores set
  by `cpuset.cpus`.
- **a memory limit** (`--memory-mb`) is held by a memory cgroup (v2 `memory.max`, else v1
  `memory.limit_in_bytes`, each with swap off) where there is one, so it bounds resident memory, not the
  address space that JVM, Go and Node runtimes reserve; a bot the kernel kills for it is told apart
  (`ProcessTree.memory_killed`). Without one, the launch command limits the address space (`referee.host.sandbox`).
- **otherwise, /proc**: the referee is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so orphans of a bot's
  tree are re-parented to it rather than to init; the tree is found by walking parent links from the bot
  and from every process seen before (pid and start time, so a reused pid is never taken), sampled at
  every turn and every `TRACK_INTERVAL_S`, plus any process carrying the bot's environment token. A
  process that double-forks, clears its environment and escapes between two samples can be missed.

Every bot gets `PR_SET_PDEATHSIG` = SIGKILL, set between fork and exec by a thread that lives as long
as the referee (the signal follows the death of the *thread* that forked, so trio's short-lived worker
threads cannot be used). Each running bot is noted in `<log dir>/running/` (with cgroups, by one note per
referee that names where its cgroups are), so a run started again on the same output directory ends what a
killed referee left behind (`end_leftovers`).

A bot's cgroups are made once and kept by the referee for its next bots when the bot leaves them empty
(`_CgroupPool`): a mkdir and rmdir per hierarchy and bot cost more than the rest of a start and stop.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import functools
import json
import logging
import os
import queue
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import trio

from referee.host import process_wide

__all__ = [
    "CGROUP_CONTROLLERS",
    "ENV_TOKEN",
    "TRACK_INTERVAL_S",
    "V2",
    "V2_CONTROLLERS",
    "CpuSlots",
    "HostSupport",
    "ProcessTree",
    "detect_host",
    "die_with_parent",
    "drop_idle_notes",
    "end_leftovers",
    "host_support",
    "probe_v2",
    "process_cpu_ns",
    "process_start_time",
    "reap_lost_sessions",
    "reap_session",
    "run_in_spawner",
]

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_CONTROLLERS = ("pids", "freezer", "cpuacct", "cpuset")
"""The cgroup v1 controllers that hold a bot without cgroup v2 (all four are needed)."""
V2 = "v2"
"""The key of a bot's cgroup v2 folder among its cgroups (the others are v1 controllers' names)."""
_USAGE = b"usage_usec "
"""The first line of a v2 `cpu.stat`: the kernel's exact runtime of the cgroup's tasks, in microseconds."""
V2_CONTROLLERS = ("pids", "memory", "cpuset")
"""The cgroup v2 controllers a bot's cgroup uses where the host delegates them: process limit, memory, cores."""
REFEREE_LEAF = "alternator-referee"
"""Where a referee alone in a delegated v2 cgroup moves itself, so that the cgroup can give controllers to bots."""
ENV_TOKEN = "ALTERNATOR_BOT_TOKEN"
"""Set in every bot's environment: marks its descendants (those that keep their environment) as its own."""
TRACK_INTERVAL_S = 0.2
"""Without cgroups: how often a running bot's process tree is sampled (it is also sampled at every turn)."""
FREEZE_WAIT_S = 1.0
"""How long a cgroup freeze may take before the referee goes on (SIGSTOP covers what is left)."""
KILL_ROUNDS = 20
MIB = 1024 * 1024
RUNNING_DIR = "running"
"""Under the log directory: small JSON files, one per referee whose bots there are in cgroups and one per bot
tracked through /proc, for `end_leftovers`."""

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_NS_PER_TICK = 1_000_000_000 // _CLOCK_TICKS
_CPUCLOCK_PROCESS_SCHED = 2
"""Linux: the low bits of a process's CPU clock id (CPUCLOCK_SCHED), as clock_getcpuclockid makes it."""
TREE_WALK_INTERVAL_S = 0.5
"""Without cgroups, how often the CPU of a bot's other processes is brought up to date (its main process's is
exact at every reading)."""

T = TypeVar("T")


# -- what the host allows ------------------------------------------------------------------------------


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> bool:
    try:
        return int(_libc().prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent() -> bool:
    """This process gets SIGKILL when the thread that started it ends (its parent referee's spawner)."""
    return _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass(frozen=True)
class HostSupport:
    """What this machine lets the referee use to contain bots (see the module docstring)."""

    subreaper: bool
    pdeathsig: bool
    cgroups: dict[str, Path] = field(default_factory=dict)
    """What every bot joins, each a writable folder of ours (`.../alternator/<referee pid>`) holding one cgroup per
    bot: `V2` -> in the cgroup v2 hierarchy, and a v1 controller's name -> in its v1 hierarchy."""
    v2_controllers: frozenset[str] = frozenset()
    """The cgroup v2 controllers (of `V2_CONTROLLERS`) enabled for the bots' v2 cgroups."""
    v2_kill: bool = False
    """Whether the v2 cgroups have `cgroup.kill` (Linux 5.14): the whole tree killed by the kernel in one write."""
    memory: Path | None = None
    """Where a bot with a memory limit gets its v1 memory cgroup (None: v2's `memory.max` if enabled, else none)."""
    cgroup_problem: str | None = None
    """Why cgroups are not used, when they are not."""
    memory_problem: str | None = None
    """Why memory limits fall back to the address space (`prlimit --as`), when they do."""

    @property
    def uses_cgroups(self) -> bool:
        return bool(self.cgroups)

    @property
    def v1(self) -> list[str]:
        """The v1 controllers every bot joins."""
        return sorted(name for name in self.cgroups if name != V2)

    @property
    def memory_cgroup(self) -> str | None:
        """How a memory limit is held: 'v2' (`memory.max`), 'v1' (`memory.limit_in_bytes`) or None (address space)."""
        if V2 in self.cgroups and "memory" in self.v2_controllers:
            return "v2"
        return "v1" if self.memory is not None else None

    def tracking(self) -> str:
        """What holds every bot's processes: `cgroup v2 (...)`, `cgroup v1 (...)` or `/proc tracking (...)`."""
        v1 = f"cgroup v1 ({', '.join(self.v1)})" if self.v1 else ""
        if V2 in self.cgroups:
            controllers = ", ".join(sorted(self.v2_controllers)) or "no controllers"
            kill = "cgroup.kill" if self.v2_kill else "freeze and kill"
            return f"cgroup v2 ({kill}, cgroup.freeze, cpu.stat; {controllers})" + (f" + {v1}" if v1 else "")
        if v1:
            return v1
        return f"/proc tracking (no cgroups: {self.cgroup_problem})"

    def describe(self) -> str:
        """One line for logs, records and the README's guarantees."""
        extras = [name for name, on in (("subreaper", self.subreaper), ("pdeathsig", self.pdeathsig)) if on]
        memory = {"v2": "cgroup v2 memory.max", "v1": "cgroup v1 memory"}.get(
            self.memory_cgroup or "", f"address space ({self.memory_problem or 'no memory cgroup'})"
        )
        return f"{self.tracking()}; {', '.join(extras) or 'no prctl'}; memory limits: {memory}"


def _own_cgroup(controller: str, proc_cgroup: str | None = None) -> str:
    """This process's cgroup path in a hierarchy (from /proc/self/cgroup), '/' if not listed.

    `controller`: a v1 controller's name, or '' for the v2 hierarchy (the `0::PATH` line)."""
    try:
        text = proc_cgroup if proc_cgroup is not None else Path("/proc/self/cgroup").read_text()
        for line in text.splitlines():
            number, controllers, path = line.split(":", 2)
            if (controller == "" and number == "0" and controllers == "") or (
                controller and controller in controllers.split(",")
            ):
                return path
    except (OSError, ValueError):
        pass
    return "/"


def _v2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host)."""
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                return Path(fields[1].replace("\\040", " "))
    except OSError:
        pass
    return None


def _v1_base(controller: str) -> tuple[Path | None, str | None]:
    """Our folder for the bots' cgroups in a v1 controller's hierarchy (made now), or None and why."""
    mount = CGROUP_ROOT / controller
    if not (mount / "cgroup.procs").exists():
        if (CGROUP_ROOT / "cgroup.controllers").exists() or (CGROUP_ROOT / "unified").exists():
            return None, f"the v1 {controller} controller is not mounted"
        return None, f"no {controller} cgroup hierarchy under {CGROUP_ROOT}"
    base = mount / _own_cgroup(controller).lstrip("/") / "alternator" / str(os.getpid())
    _sweep(base.parent)
    try:
        base.mkdir(parents=True, exist_ok=True)
        if controller == "cpuset":
            _copy_cpuset(base.parent, base.parent.parent)
            _copy_cpuset(base, base.parent)
    except OSError as error:
        return None, f"cannot create {base} ({error.strerror or error}; run the referee as root)"
    return base, None


def _probe_v1() -> tuple[dict[str, Path], str | None]:
    """The v1 controllers under which a cgroup per bot can be made (all of `CGROUP_CONTROLLERS`), or none and why."""
    found: dict[str, Path] = {}
    for controller in CGROUP_CONTROLLERS:
        base, problem = _v1_base(controller)
        if base is None:
            _remove_bases(list(found.values()))
            return {}, problem
        found[controller] = base
    return found, None


def _write(path: Path, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def _write_if_there(path: Path, text: str) -> bool:
    """Write a cgroup file that only some hosts have (swap accounting, `memory.oom.group`); whether it was written."""
    try:
        _write(path, text)
    except OSError:
        return False
    return True


def _read_words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _enable_controllers(top: Path, pid: int) -> tuple[frozenset[str], str | None]:
    """Enable `V2_CONTROLLERS` (those `top` has) for `top`'s children; the ones enabled, and why not the others.

    A v2 cgroup that holds processes cannot give controllers to children (the "no internal processes" rule), so a
    referee alone in a delegated cgroup (`systemd-run --user --scope -p Delegate=yes alternator ...`) moves itself
    into a leaf of it (`REFEREE_LEAF`) first; one sharing its cgroup with other processes (a login shell's) gets
    tracking, freezing and CPU accounting but no controllers. The same holds at the root of a container's cgroup
    namespace (a referee started as the container's only process moves itself too)."""
    available = set(_read_words(top / "cgroup.controllers"))
    wanted = [name for name in V2_CONTROLLERS if name in available]
    enabled = set(_read_words(top / "cgroup.subtree_control"))
    if not wanted:
        return frozenset(), f"{top} offers none of the {', '.join(V2_CONTROLLERS)} controllers"
    failed: dict[str, str] = {}
    for name in wanted:
        if name in enabled:
            continue
        try:
            _write(top / "cgroup.subtree_control", f"+{name}")
        except OSError as error:
            # EBUSY: processes inside (never at the true root, but at a container's, in its cgroup namespace).
            if error.errno != errno.EBUSY or _read_words(top / "cgroup.procs") != [str(pid)]:
                failed[name] = error.strerror or str(error)
                continue
            try:
                (top / REFEREE_LEAF).mkdir(exist_ok=True)
                _write(top / REFEREE_LEAF / "cgroup.procs", str(pid))
                _write(top / "cgroup.subtree_control", f"+{name}")
            except OSError as again:
                failed[name] = again.strerror or str(again)
                continue
        enabled.add(name)
    problem = None
    if failed:
        why = "; ".join(sorted(set(failed.values())))
        problem = f"cannot enable the {', '.join(failed)} controllers in {top} ({why})"
    return frozenset(name for name in wanted if name in enabled), problem


def probe_v2(mount: Path, own: str, pid: int | None = None) -> tuple[Path | None, frozenset[str], bool, str | None]:
    """Our folder for the bots' v2 cgroups (`<cgroup>/alternator/<pid>`, made now) in the v2 hierarchy at `mount`,
    the controllers enabled for them, whether `cgroup.kill` is there, and what is missing; None and why if none.

    Tried in our own cgroup (`own`, a path from /proc/self/cgroup: the root for a root referee outside systemd, a
    delegated scope for a user's), then, if that gives fewer controllers, at the hierarchy's root (writable only by
    root). Detected by writing, never assumed: a stand-in folder laid out as cgroup v2 can be probed in tests.
    """
    pid = os.getpid() if pid is None else pid
    home = mount / own.lstrip("/")
    if home.name == REFEREE_LEAF:
        home = home.parent  # a referee of this run moved itself there (`_enable_controllers`)
    tops = [home] + ([mount] if home != mount else [])
    best: tuple[Path, frozenset[str], bool, str | None] | None = None
    problems: list[str] = []
    for top in tops:
        if best is not None and len(best[1]) == len(V2_CONTROLLERS):
            break
        if not os.access(top / "cgroup.procs", os.W_OK) or not os.access(top, os.W_OK):
            problems.append(f"{top} is not writable (not delegated to this user)")
            continue
        controllers, problem = _enable_controllers(top, pid)
        base = top / "alternator" / str(pid)
        _sweep(base.parent)
        try:
            base.mkdir(parents=True, exist_ok=True)
            for folder in (base.parent, base):
                for name in controllers:
                    if name not in _read_words(folder / "cgroup.subtree_control"):
                        _write(folder / "cgroup.subtree_control", f"+{name}")
        except OSError as error:
            problems.append(f"cannot create {base} ({error.strerror or error})")
            _remove_bases([base])
            continue
        if not (base / "cgroup.freeze").exists():
            problems.append(f"{base} has no cgroup.freeze (Linux 5.2 or later needed)")
            _remove_bases([base])
            continue
        if best is None or len(controllers) > len(best[1]):
            if best is not None:
                _remove_bases([best[0]])
            best = (base, controllers, (base / "cgroup.kill").exists(), problem)
        else:
            _remove_bases([base])
    if best is None:
        return None, frozenset(), False, "; ".join(problems) or f"no cgroup v2 hierarchy at {mount}"
    return best


def detect_host(*, v2: bool = True, v1: bool = True) -> HostSupport:
    """Probe what containment this machine allows (see `host_support`); `v2`/`v1`: whether to try each hierarchy.

    The v2 hierarchy is preferred (one cgroup per bot for its whole tree, kill, freeze and CPU); the v1 controllers
    then give only what v2 lacks here (process limit, cores, memory). Without v2, the four v1 controllers of
    `CGROUP_CONTROLLERS` are needed, as before; without either, /proc tracking."""
    subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    support = HostSupport(subreaper=subreaper, pdeathsig=subreaper, cgroup_problem="cgroups not probed")
    if os.environ.get("ALTERNATOR_NO_CGROUPS"):
        return replace(support, cgroup_problem="turned off by ALTERNATOR_NO_CGROUPS")
    problems: list[str] = []
    cgroups: dict[str, Path] = {}
    controllers: frozenset[str] = frozenset()
    kill = False
    v2_problem = None
    mount = _v2_mount() if v2 and not os.environ.get("ALTERNATOR_NO_CGROUP_V2") else None
    if mount is not None:
        base, controllers, kill, v2_problem = probe_v2(mount, _own_cgroup(""))
        if base is not None:
            cgroups[V2] = base
        elif v2_problem:
            problems.append(f"cgroup v2: {v2_problem}")
    if V2 in cgroups:
        for name in ("pids", "cpuset"):
            if v1 and name not in controllers:
                found, _ = _v1_base(name)
                if found is not None:
                    cgroups[name] = found
    elif v1:
        found_v1, v1_problem = _probe_v1()
        cgroups.update(found_v1)
        if v1_problem:
            problems.append(f"cgroup v1: {v1_problem}")
    memory: Path | None = None
    memory_problem = None
    if not cgroups:
        memory_problem = "no cgroups"
    elif "memory" not in controllers:
        memory, v1_memory_problem = _v1_base("memory") if v1 else (None, "cgroup v1 not tried")
        if memory is None:
            no_v2 = f"no cgroup v2 memory controller ({v2_problem or 'not offered'})" if V2 in cgroups else ""
            memory_problem = "; ".join(text for text in (no_v2, v1_memory_problem) if text)
    atexit.register(_remove_bases, [*cgroups.values(), *([memory] if memory is not None else [])])
    return replace(
        support,
        cgroups=cgroups,
        v2_controllers=controllers if V2 in cgroups else frozenset(),
        v2_kill=kill and V2 in cgroups,
        memory=memory,
        cgroup_problem=None if cgroups else "; ".join(problems) or "no cgroup hierarchy found",
        memory_problem=memory_problem,
    )


def _copy_cpuset(child: Path, parent: Path) -> None:
    """A new cpuset cgroup has no cores and no memory nodes until given its parent's."""
    for name in ("cpuset.cpus", "cpuset.mems"):
        if not (child / name).read_text().strip():
            (child / name).write_text((parent / name).read_text().strip() or "0")


def _sweep(folder: Path) -> None:
    """Remove the empty cgroup folders of referees that are gone (a cgroup with processes cannot be removed)."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if not entry.is_dir() or not entry.name.isdigit() or os.path.exists(f"/proc/{entry.name}"):
                continue
            for child in entry.iterdir():
                if child.is_dir():
                    with contextlib.suppress(OSError):
                        child.rmdir()
            with contextlib.suppress(OSError):
                entry.rmdir()


def _remove_bases(bases: list[Path]) -> None:
    for base in bases:
        with contextlib.suppress(OSError):
            base.rmdir()


@functools.cache
def host_support() -> HostSupport:
    """Detect once per referee what containment is available; makes the referee a child subreaper.

    `ALTERNATOR_NO_CGROUPS=1` turns cgroups off, `ALTERNATOR_NO_CGROUP_V2=1` the v2 hierarchy alone (for tests
    and benchmarks comparing them)."""
    support = detect_host()
    log.info("bot containment: %s", support.describe())
    return support


# -- the bots' cgroups, kept for the next bot --------------------------------------------------------------

POOL_IDLE_MAX = 16
"""Empty cgroup slots kept per kind (`_CgroupPool`) for the next bots; one more ended is removed."""


class _Slot:
    """One bot's cgroups, one per hierarchy it joins (`V2`, and v1 controllers' names), with the control files the
    referee reads kept open and what it wrote to the others remembered, so that a slot a bot left empty serves the
    next bot as it is (`_CgroupPool`): a mkdir and an rmdir per hierarchy, the copy of the parent's cpuset and an
    open per file read cost the referee more than the rest of a bot's start and stop together (measured).

    Its files are named by the cgroup's key and the file's name, their paths built once (pathlib's joins, hashes and
    comparisons cost more than the reads themselves).
    """

    def __init__(self, paths: dict[str, Path], *, pooled: bool) -> None:
        self.paths = paths
        self.pooled = pooled
        """Given back to the pool when its bot ends and leaves it empty (else removed)."""
        self.written: dict[tuple[str, str], str] = {}
        """(key, file) -> the text the file holds: written here, or the kernel's default in a new cgroup."""
        self._files: dict[tuple[str, str], str] = {}
        self._fds: dict[tuple[str, str, bool], int] = {}
        self._lock = threading.Lock()

    @classmethod
    def make(cls, bases: dict[str, Path], name: str, *, pooled: bool) -> _Slot:
        """A new slot: a cgroup named `name` in each base. OSError (nothing left made) if one cannot be made."""
        slot = cls({}, pooled=pooled)
        try:
            for key, base in bases.items():
                path = base / name
                path.mkdir()
                slot.paths[key] = path
                if key == "cpuset":  # v1: a new cpuset has no cores and no memory nodes until given its parent's
                    _copy_cpuset(path, base)
                    slot.written[key, "cpuset.cpus"] = (path / "cpuset.cpus").read_text().strip()
                else:  # v2: empty, the parent's cores
                    slot.written[key, "cpuset.cpus"] = ""
                slot.written[key, "pids.max"] = "max"
        except OSError:
            slot.remove(wait=False)
            raise
        return slot

    def file(self, key: str, name: str) -> str:
        """The path of one of its cgroups' files."""
        path = self._files.get((key, name))
        if path is None:
            path = self._files[key, name] = os.path.join(self.paths[key], name)
        return path

    def set(self, key: str, name: str, text: str) -> None:
        """Write a control file unless it already holds `text`."""
        if self.written.get((key, name)) != text:
            self.written.pop((key, name), None)  # unknown if the write fails
            _write(self.paths[key] / name, text)
            self.written[key, name] = text

    def fd(self, key: str, name: str, *, write: bool = False) -> int | None:
        """A descriptor of one of its control files, opened once and kept (None if it cannot be opened)."""
        entry = (key, name, write)
        with self._lock:
            fd = self._fds.get(entry)
            if fd is None:
                try:
                    fd = os.open(self.file(key, name), (os.O_WRONLY if write else os.O_RDONLY) | os.O_CLOEXEC)
                except OSError:
                    return None
                self._fds[entry] = fd
            return fd

    def set_v2_frozen(self, frozen: bool) -> bool:
        """Freeze (and wait, briefly, until `cgroup.events` says so) or thaw its v2 cgroup, through descriptors kept
        open: at every move of a bot that may not ponder, where an open, a write and a close of each file cost
        about as much as the rest of the move (measured). False if the freeze is not there or did not hold."""
        fd = self.fd(V2, "cgroup.freeze", write=True)
        if fd is None:
            return False
        try:
            os.pwrite(fd, b"1" if frozen else b"0", 0)
        except OSError:
            return False
        return not frozen or _holds_soon(lambda: b"frozen 1" in (self.read(V2, "cgroup.events") or b""))

    def read(self, key: str, name: str) -> bytes | None:
        """A control file that the kernel renders anew at every read (v2 `cgroup.procs`, `cgroup.events`,
        `cpu.stat`, v1 `pids.current`, `cpuacct.usage`), read through a descriptor kept open: a microsecond, where
        an open, a read and a close took twenty. None if it cannot be read."""
        fd = self.fd(key, name)
        if fd is None:
            return None
        try:
            return os.pread(fd, 65536, 0)
        except OSError:
            return None

    def procs(self, key: str) -> list[int] | None:
        """The processes in one of the slot's cgroups (None: unreadable). v1's `cgroup.procs` is a list the kernel
        keeps per open file, so it is opened afresh; v2's is read again in place."""
        try:
            if key == V2:
                data = self.read(key, "cgroup.procs")
            else:
                with open(self.file(key, "cgroup.procs"), "rb") as procs:
                    data = procs.read()
            return None if data is None else [int(pid) for pid in data.split()]
        except (OSError, ValueError):
            return None

    def empty(self) -> bool:
        """Whether no process is in any of its cgroups, zombies not yet reaped included (v1 `pids.current` counts
        them): only then can the next bot have it."""
        for key in self.paths:
            if key == "pids":
                data = self.read(key, "pids.current")
                if data is None or data.strip() != b"0":
                    return False
            elif self.procs(key) != []:
                return False
        return True

    def close_files(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._fds.clear()

    def remove(self, *, wait: bool = True) -> bool:
        """Remove its cgroups (an emptied cgroup may take a moment to go: retried for half a second if `wait`);
        whether all are gone."""
        self.close_files()
        gone = True
        for path in self.paths.values():
            for _ in range(50 if wait else 1):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if wait:
                        time.sleep(0.01)
            else:
                gone = False
        return gone


class _CgroupPool:
    """This process's empty cgroup slots (`_Slot`), by the bases they are in, for the next bots to start
    (`process_wide.CGROUP_POOL`).

    A slot goes back to the pool only when its bot's end left every one of its cgroups empty and thawed; the next
    bot's limits (`pids.max`, `cpuset.cpus`) are written over the last one's where they differ, and its CPU is
    counted from what the slot's `cpu.stat` says at its start. A bot with a memory limit gets cgroups of its own,
    made for it and removed after it (a memory cgroup keeps the pages charged to it, and its OOM count). Every
    cgroup this process makes is named with its `prefix`, which its running-bots note gives (`end_leftovers`): the
    folder of a referee that is gone can be a new one's of the same pid. The idle slots are removed when the
    process exits; a killed referee's are removed by the next one (`_sweep`, `end_leftovers`).
    """

    def __init__(self) -> None:
        self.prefix = f"b{secrets.token_hex(4)}"
        self._lock = threading.Lock()
        self._idle: dict[tuple[tuple[str, Path], ...], list[_Slot]] = {}
        self._made = 0
        atexit.register(self.remove_idle)

    def name(self) -> str:
        with self._lock:
            self._made += 1
            return f"{self.prefix}-{self._made}"

    def take(self, bases: dict[str, Path]) -> _Slot:
        """An idle slot in these bases, else a new one (OSError if it cannot be made)."""
        key = tuple(sorted(bases.items()))
        while True:
            with self._lock:
                idle = self._idle.get(key)
                slot = idle.pop() if idle else None
            if slot is None:
                return _Slot.make(bases, self.name(), pooled=True)
            if slot.empty():  # still there and still empty: nothing joined it or removed it meanwhile
                return slot
            slot.remove(wait=False)

    def give(self, slot: _Slot) -> bool:
        """Keep an empty slot for the next bot; False (the caller removes it) when enough are kept already."""
        key = tuple(sorted((name, path.parent) for name, path in slot.paths.items()))
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) >= POOL_IDLE_MAX:
                return False
            idle.append(slot)
        return True

    def remove_idle(self) -> None:
        with self._lock:
            slots = [slot for idle in self._idle.values() for slot in idle]
            self._idle.clear()
        for slot in slots:
            slot.remove(wait=False)


def _cgroup_pool() -> _CgroupPool:
    return process_wide.CGROUP_POOL.get(_CgroupPool)


class _RunningNotes:
    """The running-bots notes of this process's bots held by cgroups (`process_wide.RUNNING_NOTES`): one per output
    directory, not one per bot.

    Such a note names the folders that hold all this process's bots' cgroups and the prefix of their names
    (`_CgroupPool`), which is all `end_leftovers` needs. It is written when the first bot of the directory starts and
    kept while the process may start more there: a file written and removed per bot cost more than the rest of its
    start (a new file on a busy file system), and a note of a referee still running is never acted upon. It goes
    when the command ends (`drop_idle_notes`) or the process exits, unless bots still run there. Bots tracked
    through /proc keep a note each, which lists their processes as they are found.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[Path, int] = {}
        """Output directory (the notes' folder) -> how many of its bots run now (0: noted, idle)."""
        self._note: bytes | None = None
        atexit.register(self.drop_idle)

    def hold(self, note_dir: Path, support: HostSupport) -> None:
        with self._lock:
            count = self._running.get(note_dir)
            self._running[note_dir] = (count or 0) + 1
            if count is not None:
                return
            if self._note is None:
                folders = [*support.cgroups.values(), *([support.memory] if support.memory is not None else [])]
                note = {
                    "referee": [os.getpid(), process_start_time(os.getpid())],
                    "processes": [],
                    "cgroups": [],
                    "cgroup_folders": [str(folder) for folder in folders],
                    "cgroup_prefix": _cgroup_pool().prefix,
                }
                self._note = json.dumps(note).encode()
            try:
                note_dir.mkdir(parents=True, exist_ok=True)
                _running_note(note_dir).write_bytes(self._note)
            except OSError as error:
                log.warning("cannot note this referee's bots in %s: %s", note_dir, error)

    def release(self, note_dir: Path) -> None:
        with self._lock:
            if self._running.get(note_dir):
                self._running[note_dir] -= 1

    def drop_idle(self) -> None:
        """Remove the notes of the directories where no bot of this process runs now."""
        with self._lock:
            for note_dir, count in list(self._running.items()):
                if count == 0:
                    del self._running[note_dir]
                    with contextlib.suppress(OSError):
                        _running_note(note_dir).unlink()


def drop_idle_notes() -> None:
    """At the end of a command: remove this process's running-bots notes where none of its bots runs any more (a
    process that exits removes them too)."""
    notes = process_wide.RUNNING_NOTES.peek()
    if notes is not None:
        notes.drop_idle()


def _running_notes() -> _RunningNotes:
    return process_wide.RUNNING_NOTES.get(_RunningNotes)


def _running_note(note_dir: Path) -> Path:
    return note_dir / f"referee-{os.getpid()}.json"


_SHELL = shutil.which("sh")
_SETPRIV = shutil.which("setpriv")
"""util-linux's setpriv: sets the death signal (`--pdeathsig`) and execs, so no Python runs in a bot's child."""
_TRAMPOLINE = (
    'referee=$1; shift; while [ "$1" != -- ]; do echo $$ >"$1" || { echo "alternator: cannot join the cgroup'
    ' $1" >&2; exit 126; }; shift; done; shift; [ "$PPID" = "$referee" ] || exit 1; exec "$@"'
)
"""`sh -c` with: the referee's pid, the cgroup.procs files to join, `--`, the command (see `ProcessTree.launch`)."""


# -- the spawner thread --------------------------------------------------------------------------------


class _Spawner:
    """One thread, alive as long as the referee, that forks every bot (see PR_SET_PDEATHSIG above)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="alternator-spawner", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()

    async def run(self, fn: Callable[[], T]) -> T:
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        box: list[Any] = []

        def job() -> None:
            try:
                box.append((True, fn()))
            except BaseException as error:  # handed back to the trio task
                box.append((False, error))
            token.run_sync_soon(done.set)

        self._jobs.put(job)
        # Never abandon a fork half-way: the child would run untracked.
        with trio.CancelScope(shield=True):
            await done.wait()
        ok, value = box[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]


def _new_spawner() -> _Spawner:
    # The host is probed before the first fork: a referee alone in a delegated cgroup can move into its leaf
    # (and so give its bots the cgroup's controllers) only while no child of it shares the cgroup.
    host_support()
    return _Spawner()


async def run_in_spawner(fn: Callable[[], T]) -> T:
    """Run `fn` (a fork: subprocess.Popen) in the referee's long-lived spawner thread (`process_wide.SPAWNER`)."""
    return await process_wide.SPAWNER.get(_new_spawner).run(fn)


# -- /proc ---------------------------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of /proc/PID/stat (state first), or None when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def process_start_time(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (pid and start time name a process for good)."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def _alive(pid: int, start: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and int(fields[19]) == start and fields[0] not in ("Z", "X")


def process_cpu_clock(pid: int) -> int:
    """The clock id of a process's CPU time (for `time.clock_gettime_ns`: OSError once the process is gone)."""
    return ((~pid) << 3) | _CPUCLOCK_PROCESS_SCHED


def process_cpu_ns(pid: int) -> int:
    """The CPU time of a process so far (all its threads, the current slice included), ns, exact to this instant.
    OSError if it is gone."""
    return time.clock_gettime_ns(process_cpu_clock(pid))


def _process_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, start time, CPU ticks) for every live process (zombies left out)."""
    table: dict[int, tuple[int, int, int]] = {}
    if not os.path.isdir("/proc"):
        return table  # no /proc (not Linux): only the process group is killed
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        fields = _stat_fields(pid)
        if fields is None or fields[0] in ("Z", "X"):
            continue
        table[pid] = (int(fields[1]), int(fields[19]), int(fields[11]) + int(fields[12]))
    return table


def _has_token(pid: int, token: bytes) -> bool:
    try:
        return token in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def _reap(pid: int, start: int | None) -> None:
    """Reap `pid` if it is our zombie child (it was re-parented to us, the subreaper) and still that process."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] != "Z" or int(fields[1]) != os.getpid():
        return
    if start is not None and int(fields[19]) != start:
        return
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _referee_children() -> list[int] | None:
    """The referee's own children, from each of its threads' `children` file; None where the kernel has none."""
    pids: list[int] = []
    try:
        tasks = list(os.scandir("/proc/self/task"))
    except OSError:
        return None
    for task in tasks:
        try:
            with open(os.path.join(task.path, "children"), "rb") as children:
                pids.extend(int(pid) for pid in children.read().split())
        except FileNotFoundError:
            if os.path.isdir(task.path):
                return None  # a kernel without the file (a thread that has just ended is simply skipped)
        except OSError:
            return None
    return pids


def _orphans() -> list[int] | None:
    """The children of the referee's main thread: where the kernel re-parents the orphans of a bot's tree (to the
    first live thread of the child subreaper, its main thread), one file where `_referee_children` reads one per
    thread. None where the kernel has no `children` file."""
    pid = os.getpid()
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as children:
            return [int(child) for child in children.read().split()]
    except OSError:
        return _referee_children()


def reap_lost_sessions(keep: Iterable[int] = (), wait_s: float = 0.5) -> None:
    """Reap zombie children of the referee that lead sessions of their own (bots: re-parented to the subreaper when
    the play worker that started them was lost), except `keep` (processes someone else waits for)."""
    kept = set(keep)
    deadline = time.monotonic() + wait_s
    while True:
        waiting = False
        for pid in _referee_children() or []:
            fields = _stat_fields(pid)
            if pid in kept or fields is None or int(fields[3]) != pid:
                continue
            if fields[0] == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            else:
                waiting = True  # still dying (killed by its death signal)
        if not waiting or time.monotonic() >= deadline:
            return
        time.sleep(0.01)


def _reap_killed(killed: dict[int, int | None], wait_s: float = 0.5) -> None:
    """Reap the killed processes that end up as the referee's zombies (re-parented to the subreaper)."""
    waiting = dict(killed)
    deadline = time.monotonic() + wait_s
    while waiting and time.monotonic() < deadline:
        for pid, start in list(waiting.items()):
            fields = _stat_fields(pid)
            if fields is None or (start is not None and int(fields[19]) != start):
                del waiting[pid]
            elif fields[0] == "Z" and int(fields[1]) == os.getpid():
                _reap(pid, start)
                del waiting[pid]
            elif fields[0] == "Z" and int(fields[1]) not in killed:
                del waiting[pid]  # another process's to reap
        if waiting:
            time.sleep(0.005)


def reap_session(leader: int, wait_s: float = 0.5) -> None:
    """Reap the referee's zombie children in the session or group `leader` started (a tool run with
    `start_new_session`, whose own children the subreaper inherits when it exits first)."""
    if not os.path.isdir("/proc"):
        return
    referee = os.getpid()
    deadline = time.monotonic() + wait_s
    while True:
        left = False
        for entry in os.scandir("/proc"):
            fields = _stat_fields(int(entry.name)) if entry.name.isdigit() else None
            if fields is None or leader not in (int(fields[2]), int(fields[3])):
                continue
            if fields[0] == "Z" and int(fields[1]) == referee:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(int(entry.name), os.WNOHANG)
            else:
                left = True
        if not left or time.monotonic() >= deadline:
            return
        time.sleep(0.005)


F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    """Run a `ProcessTree` method under the tree's lock."""

    @functools.wraps(method)
    def locked(self: ProcessTree, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]


# -- one bot's processes -------------------------------------------------------------------------------


class ProcessTree:
    """All the processes of one bot: joined to its cgroups before its program starts, or tracked in /proc.

    Create it, pass `preexec` and `environment()` to the spawn, call `started(pid)`, and `close()` (or first
    `close_at_once()`, on the event loop) at the end of the bot's life: it kills whatever is left, gives the
    emptied cgroups back to the pool (or removes them) and drops the bot from its running-bots note.
    """

    def __init__(
        self,
        name: str,
        *,
        max_processes: int | None = None,
        cores: list[int] | None = None,
        note_dir: Path | None = None,
        sandboxed: bool = False,
        memory_mb: int | None = None,
        support: HostSupport | None = None,
    ) -> None:
        self.support = support if support is not None else host_support()
        self.name = name
        self.max_processes = max_processes
        self.memory_mb = memory_mb
        self.memory_limit: str | None = None
        """How `memory_mb` is held, once set up: `memory.max=... (cgroup v2, no swap)`, `memory.limit_in_bytes=...
        (cgroup v1...)`; None when it is not held by a cgroup (the launch command limits the address space)."""
        self.oom_killed = False
        """Whether the kernel killed a process of the bot for going over its memory cgroup's limit (`memory_killed`)."""
        self.sandboxed = sandboxed
        self.token = secrets.token_hex(8)
        self.pid: int | None = None
        self.frozen = False
        self._stopped = False  # frozen by SIGSTOP: the cgroup freeze was not there or did not hold
        self._seen: dict[tuple[int, int], int] = {}
        """(pid, start time) -> last CPU ticks seen, for every live process of the tree (no cgroups)."""
        self._dead_ticks = 0
        """CPU ticks of the tree's processes seen before and gone since."""
        self._cores = cores
        self._note: Path | None = None
        self._note_dir = note_dir
        self._note_held = False
        """Whether this bot counts in its referee's note (`_RunningNotes`): bots in cgroups."""
        self.cgroups: dict[str, Path] = {}
        self.limit_in_force = "none"
        self._lock = threading.RLock()
        """Ending the tree runs on a worker thread; sampling and freezing on the referee's."""
        self._cpu_fd: int | None = None
        self._cpu_v2 = False  # the file open is v2's cpu.stat (else v1's cpuacct.usage)
        """The cgroup's CPU file (v2 `cpu.stat` or v1 `cpuacct.usage`), kept open (`cpu_ns`): by the slot."""
        self._cpu_start = 0
        """What the CPU file said when the bot got its cgroups (a slot's earlier bots), ns."""
        self._slot: _Slot | None = None
        self._closed = False
        """Once closed, a tree touches its cgroups no more: they may be another bot's already (`_CgroupPool`)."""
        self._last_cpu: int | None = None
        """`cpu_ns` at the close, returned after it."""
        self._walked_at = -TREE_WALK_INTERVAL_S  # when /proc was last walked for the tree's CPU (no cgroups)
        if self.support.uses_cgroups:
            self._make_cgroups()

    # -- setting up --------------------------------------------------------------------------------

    def _make_cgroups(self) -> None:
        """The bot's cgroups: an empty slot of the pool's (`_CgroupPool`), or new ones for a bot with a memory limit.

        The v1 cpuset controller only sets a bot's cores: a bot without cores set stays in the referee's cpuset."""
        v2 = self.support.v2_controllers
        bases = {key: base for key, base in self.support.cgroups.items() if key != "cpuset" or self._cores}
        if self.memory_mb is not None and self.support.memory_cgroup == "v1" and self.support.memory is not None:
            bases["memory"] = self.support.memory
        pool = _cgroup_pool()
        try:
            if self.memory_mb is None:
                self._slot = pool.take(bases)
            else:
                label = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.name)[:40]
                self._slot = _Slot.make(bases, f"{pool.name()}-{label}", pooled=False)
            slot = self._slot
            self.cgroups = dict(slot.paths)
            cpuset = V2 if "cpuset" in v2 else "cpuset"
            if cpuset in slot.paths:  # a slot's last bot may have had other cores, or some where this one has none
                slot.set(cpuset, "cpuset.cpus", _cpu_list(self._cores or ()))
            pids = V2 if "pids" in v2 else "pids"
            if pids in slot.paths:
                slot.set(pids, "pids.max", "max" if self.max_processes is None else str(self.max_processes))
                if self.max_processes is not None:
                    self.limit_in_force = f"pids.max={self.max_processes} (cgroup {'v2' if 'pids' in v2 else 'v1'})"
            if self.memory_mb is not None:
                self._limit_memory(self.memory_mb * MIB)
            self._cpu_start = self._read_cpu() or 0
        except OSError as error:
            log.warning("bot %s: cannot set up its cgroups (%s); tracking it through /proc", self.name, error)
            if self._slot is not None:
                self._slot.remove()
            self._slot = None
            self.cgroups = {}
            self._cpu_fd = None
            self.limit_in_force = "none"
            self.memory_limit = None

    def _limit_memory(self, limit: int) -> None:
        """The memory cgroup's limit on resident memory (and swap: none), where the host has one."""
        v2 = self.cgroups.get(V2) if "memory" in self.support.v2_controllers else None
        if v2 is not None:
            _write(v2 / "memory.max", str(limit))
            # No swap (where swap is accounted), and an OOM kill ends the whole bot, not one of its processes.
            swap = _write_if_there(v2 / "memory.swap.max", "0")
            _write_if_there(v2 / "memory.oom.group", "1")
            self.memory_limit = f"memory.max={self.memory_mb} MiB (cgroup v2{', no swap' if swap else ''})"
            return
        v1 = self.cgroups.get("memory")
        if v1 is not None:
            _write(v1 / "memory.limit_in_bytes", str(limit))
            swap = _write_if_there(v1 / "memory.memsw.limit_in_bytes", str(limit))
            self.memory_limit = f"memory.limit_in_bytes={self.memory_mb} MiB (cgroup v1{', no swap' if swap else ''})"

    def describe(self) -> str:
        """What contained this bot, for its record."""
        if self.cgroups:
            support = replace(self.support, cgroups={k: v for k, v in self.cgroups.items() if k != "memory"})
            how = support.tracking()
        else:
            how = "/proc tracking"
        extras = [
            name for name, on in (("subreaper", self.support.subreaper), ("pdeathsig", self.support.pdeathsig)) if on
        ]
        text = f"{how}; {', '.join(extras) or 'no prctl'}; process limit: {self.limit_in_force}"
        if self.memory_mb is not None:
            text += f"; memory limit: {self.memory_limit or f'address space {self.memory_mb} MiB (prlimit --as)'}"
        return text

    def environment(self) -> dict[str, str]:
        return {ENV_TOKEN: self.token}

    def launch(self, command: list[str]) -> tuple[list[str], Callable[[], None] | None]:
        """The command line that runs `command` contained, and what the child must still run between fork and
        exec (None: nothing).

        A function to run in the child forces a fork of the whole referee (a hundred megabytes of page tables)
        and Python in the child, whose every touched page is then copied: about 20 ms a start, measured. So
        where it can, the child does its part through a trampoline instead: `sh` joins the bot's cgroups
        (`echo $$ >cgroup.procs`, before anything of the bot runs), checks that the referee still lives, and
        execs `setpriv --pdeathsig KILL`, which sets the death signal and execs the bot. The spawn itself
        then forks nothing of the referee's (vfork), and the cores come from the spawning thread's affinity.
        """
        setpriv = _SETPRIV if self.support.pdeathsig else None
        if self._nproc_limit() is not None or (self.support.pdeathsig and setpriv is None) or _SHELL is None:
            return command, self.preexec()
        procs = [str(path / "cgroup.procs") for path in self.cgroups.values()]
        death = [setpriv, "--pdeathsig", "KILL", "--"] if setpriv is not None else []
        return [_SHELL, "-c", _TRAMPOLINE, "sh", str(os.getpid()), *procs, "--", *death, *command], None

    def _nproc_limit(self) -> int | None:
        """The process limit to set as RLIMIT_NPROC in the child, if any.

        Without a pids cgroup, RLIMIT_NPROC only in the sandbox's user namespace: outside, it counts every process of
        the referee's user and would make starts fail at random. It does not bind root at all."""
        pids = "pids" in self.cgroups or (V2 in self.cgroups and "pids" in self.support.v2_controllers)
        if not pids and self.max_processes is not None and self.sandboxed and os.geteuid() != 0:
            return self.max_processes
        return None

    def preexec(self) -> Callable[[], None]:
        """What the child runs between fork and exec: death signal, cgroups, cores, process limit."""
        referee = os.getpid()
        procs = [str(path / "cgroup.procs") for path in self.cgroups.values()]
        cores = self._cores
        nproc = self._nproc_limit()
        if nproc is not None:
            self.limit_in_force = f"RLIMIT_NPROC={nproc} (in the sandbox's user namespace)"
        prctl = _libc().prctl if self.support.pdeathsig else None

        def run() -> None:
            if prctl is not None:
                prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                if os.getppid() != referee:  # the referee died during the fork
                    os._exit(1)
            me = str(os.getpid()).encode()
            for path in procs:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, me)
                finally:
                    os.close(fd)
            if cores:
                os.sched_setaffinity(0, cores)
            if nproc is not None:
                import resource

                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

        return run

    def started(self, pid: int) -> None:
        self.pid = pid
        if not self.cgroups:  # tracked through /proc, by pid and start time (in cgroups, by the cgroup)
            start = process_start_time(pid)
            if start is not None:
                self._seen[(pid, start)] = 0
        self._write_note()

    # -- what is in it -----------------------------------------------------------------------------

    def pids(self) -> list[int]:
        """Every live process of the bot (the cgroup's, or the tracked tree)."""
        if self.cgroups:
            return self._cgroup_pids()
        return [pid for pid, _ in self.sample()]

    def _cgroup_pids(self) -> list[int]:
        if self._closed or self._slot is None:
            return []
        key = V2 if V2 in self.cgroups else "pids" if "pids" in self.cgroups else next(iter(self.cgroups))
        return self._slot.procs(key) or []

    def anything_left(self) -> bool:
        """Whether some process of the bot may still run: its cgroup holds one, or (without cgroups) always."""
        return not self.cgroups or bool(self._cgroup_pids())

    @_locked
    def sample(self) -> list[tuple[int, int]]:
        """Walk /proc for the tree (no cgroups): remember every process found, return the live ones."""
        if self.pid is None:
            return []
        table = _process_table()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        roots = [self.pid] + [pid for (pid, start) in self._seen if pid in table and table[pid][1] == start]
        referee = os.getpid()
        token = self.token.encode()
        # Orphans re-parented to the referee (the subreaper) that carry this bot's token.
        seen = self._seen_pids()
        roots += [pid for pid in children.get(referee, ()) if pid not in seen and _has_token(pid, token)]
        live: list[tuple[int, int]] = []
        stack = [pid for pid in roots if pid in table]
        visited: set[int] = set()
        grew = False
        while stack:
            pid = stack.pop()
            if pid in visited or pid == referee:
                continue
            visited.add(pid)
            _, start, ticks = table[pid]
            key = (pid, start)
            grew = grew or key not in self._seen
            self._seen[key] = max(ticks, self._seen.get(key, 0))
            live.append(key)
            stack.extend(children.get(pid, ()))
        alive = set(live)
        for key in [key for key in self._seen if key not in alive]:
            self._dead_ticks += self._seen.pop(key)  # gone: its CPU time stays counted
        if grew:
            self._write_note()
        return live

    @_locked
    def _update_known(self) -> None:
        """Bring the CPU ticks of the tree's known processes other than the main one up to date (one stat file
        each; none for a bot of one process): between walks, a helper process's CPU is still counted on the
        move it was used in."""
        for key in [key for key in self._seen if key[0] != self.pid]:
            pid, start = key
            fields = _stat_fields(pid)
            if fields is None or int(fields[19]) != start or fields[0] in ("Z", "X"):
                self._dead_ticks += self._seen.pop(key)  # gone: its CPU time stays counted
            else:
                self._seen[key] = max(self._seen[key], int(fields[11]) + int(fields[12]))

    def _seen_pids(self) -> set[int]:
        return {pid for pid, _ in self._seen}

    def cpu_ns(self) -> int | None:
        """CPU time used by all the bot's processes so far (cgroup v2 cpu.stat or v1 cpuacct, else the sum over /proc
        samples).

        Read four times a move, so the cgroup's file is kept open and read again in place (a few microseconds,
        where opening it each time cost about a hundred). A slot's cgroups count its earlier bots' CPU too: what
        they said at this bot's start is taken off.
        """
        if self._closed:
            return self._last_cpu
        if self._cpu_fd is not None or V2 in self.cgroups or "cpuacct" in self.cgroups:
            with self._lock:  # `close` may run on another thread: never read a descriptor it closed
                if self._closed:
                    return self._last_cpu
                used = self._read_cpu()
                return None if used is None else used - self._cpu_start
        if self.pid is None:
            return None
        # Without cgroups: the main process exactly (its CPU clock, all its threads), and the rest of the tree as
        # of the last walk of /proc, done at most every `TREE_WALK_INTERVAL_S` (a walk reads every process's
        # stat file, milliseconds on a busy host: four a move would cost more than the rest of the referee).
        now = time.monotonic()
        if now - self._walked_at >= TREE_WALK_INTERVAL_S:
            self.sample()
            self._walked_at = now
        else:
            self._update_known()
        with self._lock:
            ticks = self._dead_ticks + sum(self._seen.values())
            main_ticks = sum(value for (pid, _), value in self._seen.items() if pid == self.pid)
        try:
            main_ns = process_cpu_ns(self.pid)
        except OSError:  # gone: its last ticks are in the walk's count
            return ticks * _NS_PER_TICK
        return main_ns + (ticks - main_ticks) * _NS_PER_TICK

    def _read_cpu(self) -> int | None:
        """What the cgroup's CPU file says (v2 `cpu.stat`'s usage, v1 `cpuacct.usage`), ns; None without one."""
        if self._cpu_fd is None:  # the path is built once, when the file is opened
            v2 = V2 in self.cgroups
            if self._slot is None or not (v2 or "cpuacct" in self.cgroups):
                return None
            self._cpu_fd = self._slot.fd(V2, "cpu.stat") if v2 else self._slot.fd("cpuacct", "cpuacct.usage")
            if self._cpu_fd is None:
                return None
            self._cpu_v2 = v2
        try:
            data = os.pread(self._cpu_fd, 64, 0)
            if not self._cpu_v2:
                return int(data)
            if not data.startswith(_USAGE):
                return None
            return int(data[len(_USAGE) : data.index(b"\n")]) * 1000
        except (OSError, ValueError, IndexError):
            return None

    # -- control -----------------------------------------------------------------------------------

    @property
    def cores(self) -> list[int] | None:
        return None if self._cores is None else list(self._cores)

    @_locked
    def freeze(self) -> None:
        """Stop every process of the bot (cgroup freezer, else SIGSTOP to each) until `thaw`."""
        if self.frozen or self._closed:
            return
        self.frozen = True
        if self._set_frozen(True):
            return
        self._stopped = True
        _signal_all(self.pids(), signal.SIGSTOP)

    @_locked
    def thaw(self) -> None:
        if not self.frozen or self._closed:
            return
        self.frozen = False
        self._set_frozen(False)
        if self._stopped:  # only where the freeze fell back on SIGSTOP (a list of the processes, and a kill each)
            self._stopped = False
            _signal_all(self.pids(), signal.SIGCONT)

    def _set_frozen(self, frozen: bool) -> bool:
        """Freeze or thaw the bot's cgroup (v2 `cgroup.freeze`, else the v1 freezer); False without one, or if it
        did not hold in time."""
        if V2 in self.cgroups:
            slot = self._slot  # None once closed: its cgroups may be another bot's already
            return slot is not None and slot.set_v2_frozen(frozen)
        freezer = self.cgroups.get("freezer")
        if freezer is not None:
            return _set_freezer(freezer, "FROZEN" if frozen else "THAWED")
        return False

    @_locked
    def kill_all(self) -> int:
        """SIGKILL every process of the bot still alive, reap those re-parented to the referee; how many."""
        if self._closed:
            return 0
        killed: dict[int, int | None] = {}
        v2 = self.cgroups.get(V2)
        if v2 is not None and self.support.v2_kill and self._kill_v2(v2, killed):
            if self.frozen:
                self._set_frozen(False)
                self.frozen = False
            self._reap(killed)
            return len(killed)
        froze = False
        freezable = V2 in self.cgroups or "freezer" in self.cgroups
        for _ in range(KILL_ROUNDS):
            if self.cgroups:
                # An empty cgroup (the bot quit and started nothing) needs no freeze, kill or wait.
                if not self._cgroup_pids():
                    break
                # Frozen, the tree cannot fork while it is being killed.
                if freezable:
                    froze = self._set_frozen(True) or froze
                pids = [(pid, process_start_time(pid)) for pid in self._cgroup_pids()]
            else:
                pids = [(pid, start) for pid, start in self.sample()]
            pids = [(pid, start) for pid, start in pids if start is not None or self.cgroups]
            if not pids:
                break
            _signal_all((pid for pid, _ in pids), signal.SIGKILL)
            killed.update(pids)
            if freezable:
                self._set_frozen(False)
            time.sleep(0.002)
        if freezable and (froze or self.frozen):
            self._set_frozen(False)
        self.frozen = False
        self._reap(killed)
        return len(killed)

    def _kill_v2(self, v2: Path, killed: dict[int, int | None]) -> bool:
        """`cgroup.kill`: the kernel kills the whole tree, forks in flight included; True once the cgroup is empty.

        The pids are read first (with their start times) only so that those re-parented to the referee are reaped.
        """
        for _ in range(KILL_ROUNDS):
            pids = self._cgroup_pids()
            if not pids:
                return True
            killed.update((pid, process_start_time(pid)) for pid in pids)
            try:
                _write(v2 / "cgroup.kill", "1")
            except OSError:
                return False
            deadline = time.monotonic() + 0.05
            while self._cgroup_pids() and time.monotonic() < deadline:
                time.sleep(0.0005)
        return not self._cgroup_pids()

    def _reap(self, killed: dict[int, int | None]) -> None:
        # The bot's own pid is the spawner's to reap (it holds its exit status).
        _reap_killed({pid: start for pid, start in killed.items() if pid != self.pid})
        deadline = time.monotonic() + 0.5
        while self._reap_orphans() and time.monotonic() < deadline:
            time.sleep(0.005)

    def _reap_orphans(self) -> bool:
        """Reap zombies re-parented to the referee that were the bot's: tracked, or in its group or session.

        A process that left the cgroup by dying shows nothing of it, but keeps its process group and session.
        True while some of them are still there (exiting, or another's zombie not yet reaped).
        """
        referee = os.getpid()
        left = False
        ours = {pid for pid, _ in self._seen}
        if self.pid is not None:
            ours.add(self.pid)
        # In cgroups nothing of the bot escaped its net: what is left of it can only be the referee's children
        # (re-parented to the subreaper: to its main thread, `_orphans`), one file to read rather than every
        # process on the host.
        children = _orphans() if self.cgroups else None
        if children is None and not os.path.isdir("/proc"):
            return left
        candidates = (
            children if children is not None else [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
        )
        for pid in candidates:
            if pid == self.pid:
                continue
            fields = _stat_fields(pid)
            if fields is None or not (pid in ours or int(fields[2]) in ours or int(fields[3]) in ours):
                continue
            if fields[0] == "Z" and int(fields[1]) == referee:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            else:
                left = True
        return left

    @_locked
    def close(self) -> None:
        """The end of the bot's life: kill what is left, give back or remove its cgroups, drop its note. May wait (for
        the kills, for zombies to reap): on a thread of its own, or `close_at_once` first."""
        if self._closed:
            return
        self.kill_all()
        self._finish()

    def close_at_once(self) -> bool:
        """`close`, if nothing is left to kill or wait for (the bot's cgroups are empty, no orphan of it is still
        exiting, its slot goes back to the pool): a few reads, so it can run on the event loop. False (nothing done)
        when `close` is needed, or another thread is busy with the tree (killing it)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._closed:
                return True
            slot = self._slot
            if slot is None or not slot.pooled or self.frozen or self._reap_orphans() or not slot.empty():
                return False
            self._finish(empty=True)
            return True
        finally:
            self._lock.release()

    def _finish(self, *, empty: bool = False) -> None:
        """What `close` does once the bot's processes are gone (`empty`: its slot is known to be empty)."""
        self.memory_killed()  # read before its cgroup goes
        self._last_cpu = self.cpu_ns()
        self._closed = True
        self._cpu_fd = None  # the slot's
        slot, self._slot = self._slot, None
        if slot is not None and not (slot.pooled and (empty or slot.empty()) and _cgroup_pool().give(slot)):
            self._remove_cgroups(slot)
        if self._note is not None:
            with contextlib.suppress(OSError):
                self._note.unlink()
        if self._note_held and self._note_dir is not None:
            _running_notes().release(self._note_dir)
            self._note_held = False

    def memory_killed(self) -> bool:
        """Whether the kernel's OOM killer ended a process of the bot for going over its memory cgroup's limit.

        v2: `oom_kill` in `memory.events`; v1: `oom_kill` in `memory.oom_control` (Linux 4.13), else any hit of the
        limit (`memory.failcnt`) on a host without that line. False without a memory cgroup. Once seen, kept."""
        if self.oom_killed or self.memory_limit is None:
            return self.oom_killed
        v2 = self.cgroups.get(V2) if "memory" in self.support.v2_controllers else None
        if v2 is not None:
            events = _read_pairs(v2 / "memory.events")
            self.oom_killed = events.get("oom_kill", 0) > 0 or events.get("oom_group_kill", 0) > 0
        elif "memory" in self.cgroups:
            control = _read_pairs(self.cgroups["memory"] / "memory.oom_control")
            if "oom_kill" in control:
                self.oom_killed = control["oom_kill"] > 0
            else:
                self.oom_killed = _read_pairs(self.cgroups["memory"] / "memory.failcnt").get("", 0) > 0
        return self.oom_killed

    def _remove_cgroups(self, slot: _Slot) -> None:
        if not slot.remove():
            left = [str(path) for path in slot.paths.values() if path.exists()]
            log.warning("bot %s: cannot remove its cgroup %s", self.name, ", ".join(left))

    def _write_note(self) -> None:
        if self._note_dir is None or self.pid is None:
            return
        if self.cgroups:  # one note per referee and output directory says where all its bots' cgroups are
            if not self._note_held and not self._closed:
                _running_notes().hold(self._note_dir, self.support)
                self._note_held = True
            return
        note = {
            "referee": [os.getpid(), process_start_time(os.getpid())],
            "bot": self.name,
            "processes": [list(key) for key in self._seen],
            "cgroups": [str(path) for path in self.cgroups.values()],
        }
        try:
            self._note_dir.mkdir(parents=True, exist_ok=True)
            self._note = self._note_dir / f"{self.token}.json"
            self._note.write_text(json.dumps(note))
        except OSError as error:
            log.warning("bot %s: cannot note its processes in %s: %s", self.name, self._note_dir, error)


def _cpu_list(cores: Iterable[int]) -> str:
    return ",".join(str(core) for core in sorted(cores))


def _read_pairs(path: Path) -> dict[str, int]:
    """A cgroup file of `key value` lines (`memory.events`), or of one number (under the key '')."""
    pairs: dict[str, int] = {}
    try:
        for line in path.read_text().splitlines():
            words = line.split()
            with contextlib.suppress(ValueError):
                if len(words) == 2:
                    pairs[words[0]] = int(words[1])
                elif len(words) == 1:
                    pairs[""] = int(words[0])
    except OSError:
        pass
    return pairs


def _set_freezer(path: Path, state: str) -> bool:
    """Set a v1 freezer state and wait (briefly) until it holds."""
    try:
        (path / "freezer.state").write_text(state)
        return _holds_soon(lambda: (path / "freezer.state").read_text().strip() == state)
    except OSError:
        return False


def _holds_soon(check: Callable[[], bool]) -> bool:
    """Whether `check` holds within FREEZE_WAIT_S (the kernel freezes a cgroup's tasks one by one)."""
    deadline = time.monotonic() + FREEZE_WAIT_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0005)
    return True


# -- what a killed referee left behind -----------------------------------------------------------------


def end_leftovers(log_dir: Path) -> int:
    """Kill the processes a previous referee on this output directory left running; how many.

    Reads the notes in `<log_dir>/running/` written by `ProcessTree` (a bot's processes and cgroups) and by
    `_RunningNotes` (the folders of a referee's bots' cgroups, and the prefix of their names); only processes whose
    pid and start time still match, and only when the referee that wrote the note is gone.
    """
    folder = log_dir / RUNNING_DIR
    if not folder.is_dir():
        return 0
    ended = 0
    for path in folder.glob("*.json"):
        try:
            note = json.loads(path.read_text())
            referee_pid, referee_start = note["referee"]
            if referee_start is not None and _alive(int(referee_pid), int(referee_start)):
                continue  # a referee still running there: not ours to end
            pids = {int(pid): int(start) for pid, start in note.get("processes", [])}
            cgroups = [str(cgroup) for cgroup in note.get("cgroups", [])]
            prefix = note.get("cgroup_prefix")
            for parent in note.get("cgroup_folders", []) if prefix else []:
                with contextlib.suppress(OSError):
                    cgroups += [str(entry) for entry in Path(parent).iterdir() if entry.name.startswith(f"{prefix}-")]
            for cgroup in cgroups:
                with contextlib.suppress(OSError, ValueError):
                    for line in (Path(cgroup) / "cgroup.procs").read_text().split():
                        pid = int(line)
                        start = process_start_time(pid)
                        if start is not None:
                            pids[pid] = start
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("cannot read the running-bots note %s: %s", path, error)
            continue
        killed: dict[int, int | None] = {}
        for pid, start in pids.items():
            if _alive(pid, start):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed[pid] = start
        ended += len(killed)
        for cgroup in cgroups:
            freezer = Path(cgroup)
            if (freezer / "freezer.state").exists():
                _set_freezer(freezer, "THAWED")
            elif (freezer / "cgroup.freeze").exists():
                _write_if_there(freezer / "cgroup.freeze", "0")
            for _ in range(50):
                try:
                    freezer.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            with contextlib.suppress(OSError):
                freezer.parent.rmdir()  # the dead referee's folder, once empty
        with contextlib.suppress(OSError):
            path.unlink()
        _reap_killed(killed)
    if ended:
        log.warning("ended %d process(es) left running in %s by a previous referee", ended, log_dir)
    return ended


# -- cores per concurrency slot ------------------------------------------------------------------------


class CpuSlots:
    """`--cpu-affinity`: the cores split among `slots` concurrency slots (as fastchess's -use-affinity).

    Slot i of a run (its play loop and the bots it hosts, `referee.play.loop`) runs on `sets[i % len(sets)]`: with
    more slots than sets, slots share. The runner keeps the split for its own run; nothing here is global.
    """

    def __init__(self, slots: int, cores: list[int] | None = None) -> None:
        available = sorted(cores if cores is not None else os.sched_getaffinity(0))
        slots = max(1, min(slots, len(available)))
        per = len(available) // slots
        self.sets = [available[i * per : (i + 1) * per] for i in range(slots)]
