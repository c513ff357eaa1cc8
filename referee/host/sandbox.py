"""Running untrusted bots: the command line that wraps a bot in a bubblewrap sandbox and resource limits.

For competitions where strangers submit bots. A sandboxed bot (`BotSpec.sandbox`) runs under bubblewrap
(`bwrap`, Linux only) with no network at all (its own empty network namespace: even the host's 127.0.0.1 is
out of reach) and sees only what it needs, all read-only: the system folders (`SYSTEM_DIRS`: /usr, /bin,
/lib..., /etc with its secrets such as /etc/shadow masked, `SECRET_FILES`), its working directory, the
folders of its program and of the files its command names, and for a Python bot its Python installation
and this project (see `visible_paths`); plus an empty private /tmp (and HOME=/tmp) thrown away with it, an
empty /run, its own /dev and /proc. Nothing else of the host exists for it: not /home, /root, /srv, the
output directory or other bots' folders, and those are hidden again (`private`) where they lie inside a
folder it sees. It has its own process, IPC and UTS namespaces (it sees only its own processes) and an
environment cleared of everything but PATH, locale, PYTHONPATH and its own `env` settings (the referee's
environment may hold secrets). It dies with the referee (--die-with-parent), and when the referee kills the
bot, the kernel kills everything left in the sandbox's process namespace, even a child that moved to a
session of its own: nothing escapes. There is deliberately no --new-session: the sandbox must stay in the
process group the referee kills (the bot has no terminal to abuse anyway, its standard streams are pipes
and the referee starts it in a new session). Process limits, CPU accounting and freezing are the same with
or without the sandbox (`referee.host.containment`: a cgroup per bot where the host allows it).

A memory limit (`BotSpec.memory_mb`, with or without the sandbox) is held by the bot's memory cgroup where
the host has one (`referee.host.containment`: resident memory, swap off; the sandbox runs inside that cgroup).
Only without one does the command itself carry it, as a cap on the address space (`prlimit --as`,
RLIMIT_AS): allocations beyond it fail, so a bot that wants too much crashes rather than pushing the
machine into swap. That is virtual memory, not resident memory: runtimes that reserve large address ranges
up front (Java, Go, Node) need a generous limit there.

What the sandbox does not do: stop a bot from connecting to a Unix socket in a folder it can see outside
/tmp and /run, or from reading what the system folders hold that is not listed in `SECRET_FILES`.

The argv builders are pure; `check_launch` (before a match or tournament starts) and `launch_command`
(in `open_bot`) find the tools, and `check_launch` tries the sandbox once to report a machine that cannot
create one (user namespaces disabled) as a usage error rather than as every game lost.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from referee.host.containment import host_support, reap_session
from referee.run.botspec import BotSpec, BotSpecError

__all__ = [
    "HIDDEN_DIRS",
    "KEPT_ENVIRONMENT",
    "SECRET_FILES",
    "SYSTEM_DIRS",
    "SandboxError",
    "check_launch",
    "find_bwrap",
    "find_prlimit",
    "launch_command",
    "limited_command",
    "sandbox_environment",
    "sandboxed_command",
]

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""Mounted read-only in every sandbox (a symlink, as on merged-/usr systems, is made again as a symlink)."""
SECRET_FILES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
)
"""Masked inside the sandbox's /etc (files by /dev/null, folders by an empty tmpfs)."""
HIDDEN_DIRS = ("/tmp", "/run")
"""Replaced by empty private folders in the sandbox (/tmp writable, /run for the sockets of services)."""
KEPT_ENVIRONMENT = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONPATH")
"""The variables a sandboxed bot inherits from the referee (plus its own `env`); the rest may hold secrets."""
MIB = 1024 * 1024
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
"""The folder holding `referee/` and `sample_bots/` (a checkout, or site-packages)."""
_PROBE_TIMEOUT_S = 10.0


class SandboxError(BotSpecError):
    """A sandbox or a memory limit was asked for, but this machine cannot provide it: the user's to fix."""


def find_bwrap() -> str | None:
    """The path of bubblewrap's `bwrap`, or None when it is not installed."""
    return shutil.which("bwrap")


def find_prlimit() -> str | None:
    """The path of util-linux's `prlimit`, or None when it is not installed."""
    return shutil.which("prlimit")


def limited_command(command: list[str], memory_mb: int, *, prlimit: str = "prlimit") -> list[str]:
    """`command` under an address-space limit of `memory_mb` MiB."""
    return [prlimit, f"--as={memory_mb * MIB}", "--", *command]


def sandboxed_command(
    spec: BotSpec,
    *,
    workdir: Path,
    bwrap: str = "bwrap",
    prlimit: str = "prlimit",
    private: Iterable[Path] = (),
) -> list[str]:
    """The argv that runs `spec.command` in the sandbox, in `workdir` (absolute), with `spec.memory_mb` if set.

    The bot sees the system (`SYSTEM_DIRS`, with `SECRET_FILES` masked) and what it needs (`visible_paths`:
    its working directory, its program, its Python), all read-only, and an empty private /tmp; nothing else
    (no /home, /root, /srv, other bots, the output directory). `private` folders (the output directory,
    other bots' folders) are hidden again where they lie inside something it sees, unless they hold its
    working directory.
    """
    if not workdir.is_absolute():
        raise ValueError(f"the sandbox needs an absolute working directory, got {str(workdir)!r}")
    command = list(spec.command)
    if spec.memory_mb is not None:
        command = limited_command(command, spec.memory_mb, prlimit=prlimit)
    system: list[str] = []
    for folder in SYSTEM_DIRS:
        path = Path(folder)
        if path.is_symlink():
            system += ["--symlink", os.readlink(path), folder]
        elif path.is_dir():
            system += ["--ro-bind", folder, folder]
    masks: list[str] = []
    for secret in SECRET_FILES:
        path = Path(secret)
        if path.is_dir():
            masks += ["--tmpfs", secret]
        elif path.exists():
            masks += ["--ro-bind", "/dev/null", secret]
    hidden = [arg for folder in HIDDEN_DIRS for arg in ("--tmpfs", folder)]
    visible = visible_paths(spec, workdir)
    bind = [arg for path in visible for arg in ("--ro-bind", str(path), str(path))]
    where = workdir.resolve() if workdir.exists() else workdir
    # A private folder is covered where the bot would see it, unless it holds something the bot needs.
    needed = [*visible, where, *(Path(word) for word in spec.command if Path(word).is_absolute())]
    cover = [
        arg
        for path in sorted({p.resolve() for p in private if p.is_absolute()})
        if path.is_dir()
        and any(path.is_relative_to(seen) and path != seen for seen in visible)
        and not any(need.is_relative_to(path) for need in needed)
        for arg in ("--tmpfs", str(path))
    ]
    return [
        bwrap,
        "--unshare-all",  # network, processes, IPC, UTS, user (where possible), cgroup
        "--die-with-parent",
        *system,
        *masks,
        "--dev", "/dev",
        "--proc", "/proc",
        *hidden,
        "--tmpfs", "/dev/shm",  # writable shared memory, as multiprocessing expects
        *bind,  # after the tmpfs mounts, which it would otherwise hide
        *cover,  # after what they hide in
        "--chdir", str(workdir),
        "--",
        *command,
    ]  # fmt: skip


def visible_paths(spec: BotSpec, workdir: Path) -> list[Path]:
    """What the bot needs to see besides the system folders, to be mounted read-only in its sandbox.

    Its working directory; the folder of every absolute path in its command (the file itself when it
    lies directly in /tmp, which must stay private); the installation its program comes from (for a
    program found on PATH outside the system folders: `/opt/jdk` for `/opt/jdk/bin/java`); and for a
    Python bot, the Python installation (a virtual environment) and the folder this project is in
    (`-m sample_bots.NAME`). Each once (none inside another), none inside the system folders.
    """
    wanted = [workdir]
    for word in spec.command:
        path = Path(word)
        if path.is_absolute() and path.exists():
            wanted.append(path if path.is_dir() or str(path.parent) in HIDDEN_DIRS else path.parent)
    if spec.command:
        found = shutil.which(spec.command[0], path=spec.env.get("PATH"))
        if found is not None:
            program = Path(found).resolve()
            wanted.append(program.parent.parent if program.parent.name == "bin" else program.parent)
    if spec.command and Path(spec.command[0]).name.startswith("python"):
        wanted += [Path(sys.prefix), Path(sys.base_prefix), PROJECT_ROOT]
    system = [Path(folder) for folder in SYSTEM_DIRS if not Path(folder).is_symlink()]
    visible: list[Path] = []
    for path in sorted({p.resolve() if p.exists() else p for p in wanted}, key=lambda p: len(p.parts)):
        if str(path) in ("/", *HIDDEN_DIRS) or any(path.is_relative_to(folder) for folder in system):
            continue
        if not any(path.is_relative_to(kept) for kept in visible):
            visible.append(path)
    return visible


def _hiding_folder(path: Path) -> str | None:
    """The folder of HIDDEN_DIRS that `path` is strictly inside (the sandbox replaces it), or None."""
    for folder in HIDDEN_DIRS:
        if path.is_relative_to(folder) and str(path) != folder:
            return folder
    return None


def sandbox_environment(spec: BotSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of a sandboxed bot: the harmless variables of `environ`, HOME=/tmp, and its own `env`."""
    kept = {key: value for key, value in environ.items() if key in KEPT_ENVIRONMENT}
    return {**kept, "HOME": "/tmp", "TMPDIR": "/tmp", **spec.env}


def _workdir(spec: BotSpec) -> Path:
    return (spec.dir if spec.dir is not None else Path.cwd()).resolve()


def _missing_bwrap(spec: BotSpec) -> SandboxError:
    return SandboxError(
        f"sandbox requested for bot {spec.name!r}, but bubblewrap (bwrap) is not installed: install the"
        " Debian/Ubuntu package bubblewrap (apt-get install bubblewrap), or run without --sandbox"
    )


def _missing_prlimit(spec: BotSpec) -> SandboxError:
    return SandboxError(
        f"memory limit requested for bot {spec.name!r} ({spec.memory_mb} MiB), but prlimit is not installed:"
        " install util-linux (apt-get install util-linux), or run without --memory-mb / memory_mb"
    )


def launch_command(spec: BotSpec, *, private: Iterable[Path] = (), address_limit: bool = True) -> list[str]:
    """The argv that starts the bot: its command, wrapped as `spec.sandbox` and `spec.memory_mb` ask.

    `private`: folders a sandboxed bot must not see (see `sandboxed_command`). `address_limit`: whether
    `spec.memory_mb` is held by limiting the address space (`prlimit --as`); False when a memory cgroup holds it
    (`referee.host.containment`). SandboxError when a tool is missing.
    """
    if not address_limit:
        spec = spec.model_copy(update={"memory_mb": None})
    if not spec.sandbox and spec.memory_mb is None:
        return list(spec.command)
    prlimit = "prlimit"
    if spec.memory_mb is not None:
        found = find_prlimit()
        if found is None:
            raise _missing_prlimit(spec)
        prlimit = found
    if not spec.sandbox:
        assert spec.memory_mb is not None
        return limited_command(list(spec.command), spec.memory_mb, prlimit=prlimit)
    bwrap = find_bwrap()
    if bwrap is None:
        raise _missing_bwrap(spec)
    return sandboxed_command(spec, workdir=_workdir(spec), bwrap=bwrap, prlimit=prlimit, private=private)


@functools.cache
def _probe(bwrap: str) -> str | None:
    """Start an empty sandbox once; None if it works, else what bwrap said."""
    probe = BotSpec(name="probe", command=["true"])
    try:
        with subprocess.Popen(
            sandboxed_command(probe, workdir=Path("/"), bwrap=bwrap),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its inner process is ours to reap when we are a subreaper
        ) as running:
            try:
                _, stderr = running.communicate(timeout=_PROBE_TIMEOUT_S)
            finally:
                running.kill()
                running.wait()
                reap_session(running.pid)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if running.returncode == 0:
        return None
    said = stderr.decode(errors="replace").strip()
    return said or f"exit code {running.returncode}"


def check_launch(spec: BotSpec) -> None:
    """Before anything starts: SandboxError, saying what to do, if the bot's sandbox or limit cannot be had.

    Finds the tools and tries the sandbox once per process (5-10 ms).
    """
    launch_command(spec, address_limit=host_support().memory_cgroup is None)  # the tools
    if not spec.sandbox:
        return
    bwrap = find_bwrap()
    assert bwrap is not None
    problem = _probe(bwrap)
    if problem is not None:
        raise SandboxError(
            f"sandbox requested for bot {spec.name!r}, but bubblewrap cannot create a sandbox on this machine"
            f" ({problem}); unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1,"
            " or on Ubuntu 24.04 and later kernel.apparmor_restrict_unprivileged_userns=0), or run without --sandbox"
        )
