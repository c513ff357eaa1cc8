"""How to start a bot: its name, command line, working directory and environment, and how users write that.

The command line is a list of arguments and is never run through a shell. `parse_bot_arg` turns one
command-line argument (`--black`, `--white`, a tournament's bot list) into a `BotSpec`; it accepts
the forms `alternator match --help` lists (`referee.commands.match.BOT_FORMS_HELP`).
`check_bot_command` finds out, before any process starts, whether the program exists, so that a typo
is a clear usage error rather than a forfeit.
"""

from __future__ import annotations

import codecs
import os
import pkgutil
import re
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from protocol.messages import TimeControl
from referee.host.limits import MAX_BOT_FILE_BYTES
from referee.outputs.files import InputFileError, read_input_text

NAME_RULE = "1 to 64 printable characters (spaces inside allowed; no newlines, tabs or other control characters)"


def check_bot_name(name: str) -> str:
    """The one rule for a bot's name, wherever it comes from (`--bot`, a config file, a bot file).

    A name is printed in progress lines, tables and file names: a control character (a newline, an
    escape sequence) would break them, so it is refused rather than escaped everywhere.
    """
    if not 1 <= len(name) <= 64 or not name.isprintable() or name != name.strip():
        raise ValueError(f"{name!r} is not a usable bot name: give {NAME_RULE}")
    return name


BotName = Annotated[str, AfterValidator(check_bot_name)]
"""A bot's name, checked by `check_bot_name` (pydantic field type)."""

BOT_FILE_FIELDS = {
    "name",
    "command",
    "dir",
    "env",
    "sandbox",
    "memory_mb",
    "max_processes",
    "cpu_limit_s",
    "ponder",
    "tc",
    "nodes",
    "depth",
    "options",
}
OptionValue = bool | int | float | str
DEFAULT_MAX_PROCESSES = 128
"""Processes and threads a bot may have at once (a fork bomb stops there); threads count, so not too few."""


class BotSpec(BaseModel):
    """A bot as the user configured it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: BotName = Field(description="The name in records and standings.")
    command: list[str] = Field(min_length=1, description="The program and its arguments (no shell).")
    dir: Path | None = Field(default=None, description="Working directory (default: the referee's).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    sandbox: bool = Field(
        default=False,
        description="Run the bot in a bubblewrap sandbox: no network, a read-only filesystem apart from a private"
        " /tmp, a cleared environment (see referee/host/sandbox.py). Needs bwrap (Linux).",
    )
    memory_mb: int | None = Field(
        default=None,
        ge=16,
        description="Limit the bot's memory to this many MiB: its resident memory, without swap, where the host has"
        " a memory cgroup (going over it, the bot is killed); else its address space (allocations beyond it fail)."
        " Null: no limit.",
    )
    max_processes: int | None = Field(
        default=DEFAULT_MAX_PROCESSES,
        ge=1,
        description="At most this many processes and threads for the bot and all it starts (a cgroup's pids.max"
        " where the referee can make cgroups; else RLIMIT_NPROC inside the sandbox only). Null: no limit.",
    )
    cpu_limit_s: float | None = Field(
        default=None,
        gt=0,
        description="CPU seconds the bot may use in one game, all its processes, on its turns and off them; past"
        " it, it loses on time. Null: no limit.",
    )
    ponder: bool = Field(
        default=True,
        description="Whether the bot may run during its opponent's turn. False (--no-ponder): it is frozen"
        " (cgroup freezer, else SIGSTOP to all its processes) from the end of its move to the start of its next turn.",
    )
    time_control: TimeControl | None = Field(
        default=None, description="This bot's own time control (time odds; null: the run's)."
    )
    nodes: int | None = Field(default=None, ge=1, description="Nodes per move it may search (null: the run's limit).")
    depth: int | None = Field(default=None, ge=1, description="Plies per move it may search (null: the run's limit).")
    options: dict[str, OptionValue] = Field(
        default_factory=dict,
        description="Values for options the bot declares in its hello (checked against them before the first game).",
    )


class BotSpecError(ValueError):
    """A bot argument that cannot be understood, or names a program that cannot be started."""


_FIELD_RE = re.compile(
    r"^(name|cmd|dir|sandbox|memory_mb|max_processes|cpu_limit_s|ponder|tc|nodes|depth"
    r"|env\.[A-Za-z_][A-Za-z0-9_]*|option\.[A-Za-z][A-Za-z0-9_.-]*)=",
    re.DOTALL,
)
# The controls that may also follow a plain command line: `alphabeta option.depth=5 tc=20+0.2`.
_CONTROL_RE = re.compile(r"^(tc|nodes|depth|option\.[A-Za-z][A-Za-z0-9_.-]*)=", re.DOTALL)
_TRUE_WORDS = ("1", "true", "yes", "on")
_FALSE_WORDS = ("0", "false", "no", "off")
_NAME_RE = re.compile(r"[^A-Za-z0-9._+-]+")
_PYTHON_WORDS = ("python", "python3")


def sample_bot_names() -> list[str]:
    """The modules of `sample_bots` that run as a bot (`python -m sample_bots.NAME`).

    Helper modules (a search shared by several bots) are not bots: a bot module has a `__main__`
    guard, or is a package with a `__main__.py`.
    """
    import sample_bots

    names = []
    for folder in sample_bots.__path__:
        for module in pkgutil.iter_modules([folder]):
            if module.name.startswith("_"):
                continue
            path = Path(folder) / module.name
            main = path / "__main__.py" if module.ispkg else path.with_suffix(".py")
            try:
                runnable = main.exists() if module.ispkg else "__main__" in main.read_text(encoding="utf-8")
            except OSError:
                runnable = False
            if runnable:
                names.append(module.name)
    return sorted(names)


def resolve_command(words: list[str]) -> list[str]:
    """Apply the shortcuts to a split command line: sample bot names and `python`."""
    if not words:
        raise BotSpecError("the bot's command is empty: give a program to run, e.g. ./mybot or random")
    if len(words) == 1 and words[0] in sample_bot_names():
        return [sys.executable, "-m", f"sample_bots.{words[0]}"]
    if words[0] in _PYTHON_WORDS:
        # The Python running the referee, not whatever `python` is on PATH: a version-manager shim
        # (pyenv, asdf) there adds tens of milliseconds to every start and may pick another Python.
        return [sys.executable, *words[1:]]
    return words


_SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua", ".sh", ".jar", ".exe", ".class")


def default_name(command: list[str]) -> str:
    """A name for a bot given no name: the sample bot, module or script it runs, else the program.

    `node bots/x.js`, `java -jar x.jar` and `python3 x.py` are all called "x": the interpreter's name
    would be the same for every bot written in that language.
    """
    program = Path(command[0]).name
    args = command[1:]
    name = Path(program).stem if program.endswith(_SCRIPT_SUFFIXES) else program
    if command[0] == sys.executable or program.startswith("python"):
        if len(args) >= 2 and args[0] == "-m":
            name = args[1].rsplit(".", 1)[-1]
        elif args and not args[0].startswith("-"):
            name = Path(args[0]).stem
        else:
            name = "python"
    else:
        script = next((a for a in args if not a.startswith("-") and a.endswith(_SCRIPT_SUFFIXES)), None)
        if script is not None:
            name = Path(script).stem
    cleaned = _NAME_RE.sub("-", name).strip("-")[:64]
    return cleaned or "bot"


def is_field_form(text: str) -> bool:
    """Whether a bot argument is in the key=value form: it starts with one of the fields (name=, cmd=, ...)."""
    return _FIELD_RE.match(text.strip()) is not None


def _make_spec(
    *,
    name: str | None,
    command: list[str],
    dir: Path | None,
    env: dict[str, str],
    what: str,
    limits: dict[str, Any] | None = None,
) -> BotSpec:
    resolved = resolve_command(command)
    try:
        return BotSpec(
            name=name if name is not None else default_name(resolved),
            command=resolved,
            dir=dir,
            env=env,
            **(limits or {}),
        )
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
        raise BotSpecError(f"{what}: {problems}") from None


def _split(text: str, what: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as error:  # shlex says "No closing quotation" and the like
        raise BotSpecError(f"{what}: cannot split {text!r} into words ({error}); check the quotes") from None


def parse_bot_arg(text: str, *, base_dir: Path | None = None) -> BotSpec:
    """One bot argument in any of the forms `alternator match --help` lists; BotSpecError says what is wrong.

    `base_dir` is where relative `dir=` paths are taken from (default: the current directory); a bot
    file's own `dir` is relative to the file's folder.
    """
    what = f"bot {text!r}"
    stripped = text.strip()
    if not stripped:
        raise BotSpecError("a bot argument is empty: give a sample bot name, a command line or a .toml bot file")
    if stripped.endswith(".toml") and not any(c.isspace() for c in stripped):
        return load_bot_file(Path(stripped))
    named = _split_name(stripped)
    if named is not None:
        name, rest = named
        return parse_bot_arg(rest, base_dir=base_dir).model_copy(update={"name": name})
    words = _split(stripped, what)
    if _FIELD_RE.match(words[0]):
        return _parse_fields(words, what, base_dir)
    controls: dict[str, Any] = {}
    while len(words) > 1 and _CONTROL_RE.match(words[-1]):
        key, value = words.pop().split("=", 1)
        _parse_control(key, value, what, controls)
    return _make_spec(name=None, command=words, dir=None, env={}, what=what, limits=controls)


def _parse_control(key: str, value: str, what: str, into: dict[str, Any]) -> None:
    """One control word (tc=, nodes=, depth=, option.NAME=) into the BotSpec keys `into`."""
    if key == "tc":
        from referee.timing.clock import parse_time_control

        try:
            into["time_control"] = parse_time_control(value)
        except ValueError as error:
            raise BotSpecError(f"{what}: tc={value!r}: {error}") from None
    elif key in ("nodes", "depth"):
        if not value.isdigit() or int(value) < 1:
            example = "nodes=20000" if key == "nodes" else "depth=6"
            raise BotSpecError(f"{what}: {key}={value!r}: give a whole number, at least 1, e.g. {example}")
        into[key] = int(value)
    else:
        into.setdefault("options", {})[key.removeprefix("option.")] = value


def _split_name(text: str) -> tuple[str, str] | None:
    """`NAME=BOT` as (name, bot), or None when the text is not in that form.

    A command line may hold `=` too (`./bot --depth=3`), so the part before the first `=` is a name
    only when it could not be the start of a command: no path or quote characters, no option, and,
    when it has spaces (`my bot=random`), a first word that is not a program.
    """
    if is_field_form(text) or "=" not in text:
        return None
    name, rest = text.split("=", 1)
    if not rest.strip() or any(c in name for c in "/\\'\"$") or name != name.strip():
        return None
    try:
        check_bot_name(name)
    except ValueError:
        return None
    words = name.split()
    if any(word.startswith("-") for word in words):
        return None
    if len(words) > 1 and (words[0] in sample_bot_names() or shutil.which(words[0]) or Path(words[0]).exists()):
        return None
    return name, rest.strip()


def _parse_fields(words: list[str], what: str, base_dir: Path | None) -> BotSpec:
    name: str | None = None
    command: list[str] | None = None
    dir: Path | None = None
    env: dict[str, str] = {}
    limits: dict[str, Any] = {}
    for word in words:
        if not _FIELD_RE.match(word):
            raise BotSpecError(
                f'{what}: {word!r} is not a field; use name=NAME cmd="COMMAND LINE" dir=DIR env.KEY=VALUE'
                " sandbox=1 memory_mb=N max_processes=N cpu_limit_s=S ponder=0 tc=TC nodes=N depth=N"
                " option.NAME=VALUE (quote the command line so it stays one field)"
            )
        key, value = word.split("=", 1)
        if key == "name":
            name = value
        elif key == "cmd":
            command = _split(value, what)
        elif key == "dir":
            dir = (base_dir or Path()) / value if not Path(value).is_absolute() else Path(value)
        elif key == "sandbox":
            if value.lower() not in (*_TRUE_WORDS, *_FALSE_WORDS):
                raise BotSpecError(f"{what}: sandbox={value!r}: write sandbox=1 (sandboxed) or sandbox=0 (not)")
            limits["sandbox"] = value.lower() in _TRUE_WORDS
        elif key == "memory_mb":
            if not value.isdigit():
                raise BotSpecError(f"{what}: memory_mb={value!r}: give a whole number of MiB, e.g. memory_mb=512")
            limits["memory_mb"] = int(value)
        elif key == "max_processes":
            if not value.isdigit() or int(value) < 1:
                raise BotSpecError(f"{what}: max_processes={value!r}: give a whole number, e.g. max_processes=64")
            limits["max_processes"] = int(value)
        elif key == "cpu_limit_s":
            try:
                limits["cpu_limit_s"] = float(value)
            except ValueError:
                raise BotSpecError(f"{what}: cpu_limit_s={value!r}: give seconds, e.g. cpu_limit_s=30") from None
        elif key == "ponder":
            if value.lower() not in (*_TRUE_WORDS, *_FALSE_WORDS):
                raise BotSpecError(
                    f"{what}: ponder={value!r}: write ponder=0 (frozen on the opponent's turn) or ponder=1"
                )
            limits["ponder"] = value.lower() in _TRUE_WORDS
        elif _CONTROL_RE.match(word):
            _parse_control(key, value, what, limits)
        else:
            env[key.removeprefix("env.")] = value
    if command is None:
        raise BotSpecError(f'{what}: no cmd= field; add the command line, e.g. cmd="./mybot --fast"')
    return _make_spec(name=name, command=command, dir=dir, env=env, what=what, limits=limits)


def load_bot_file(path: Path) -> BotSpec:
    """A bot described by a TOML file (name, command, dir, env, sandbox, memory_mb, max_processes, ponder).

    BotSpecError says what is wrong.
    """
    what = f"bot file {str(path)!r}"
    try:
        data: dict[str, Any] = tomllib.loads(read_input_text(path, "bot file", max_bytes=MAX_BOT_FILE_BYTES))
    except FileNotFoundError:
        raise BotSpecError(f"{what} does not exist; check the path") from None
    except OSError as error:
        raise BotSpecError(f"{what} cannot be read: {error.strerror}") from None
    except InputFileError as error:
        raise BotSpecError(str(error)) from None
    except tomllib.TOMLDecodeError as error:
        raise BotSpecError(f"{what} is not valid TOML: {error}") from None
    unknown = sorted(set(data) - BOT_FILE_FIELDS)
    if unknown:
        raise BotSpecError(
            f"{what}: unknown field(s) {', '.join(unknown)}; the fields are name, command, dir, env, sandbox,"
            " memory_mb, max_processes, cpu_limit_s, ponder, tc, nodes, depth, options"
        )
    raw_command = data.get("command")
    if isinstance(raw_command, str):
        command = _split(raw_command, what)
    elif isinstance(raw_command, list) and raw_command and all(isinstance(w, str) for w in raw_command):
        command = list(raw_command)
    else:
        raise BotSpecError(f"{what}: `command` must be a command line string or a non-empty list of strings")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise BotSpecError(f"{what}: `name` must be a string")
    raw_dir = data.get("dir")
    if raw_dir is not None and not isinstance(raw_dir, str):
        raise BotSpecError(f"{what}: `dir` must be a string (a folder, relative to the bot file's)")
    folder = path.parent
    dir = folder / raw_dir if raw_dir is not None else folder
    raw_env = data.get("env", {})
    if not isinstance(raw_env, dict) or not all(isinstance(v, str) for v in raw_env.values()):
        raise BotSpecError(f'{what}: `env` must be a table of strings, e.g. [env] THREADS = "1"')
    limits: dict[str, Any] = {}
    if "sandbox" in data:
        if not isinstance(data["sandbox"], bool):
            raise BotSpecError(f"{what}: `sandbox` must be true or false")
        limits["sandbox"] = data["sandbox"]
    if "memory_mb" in data:
        if isinstance(data["memory_mb"], bool) or not isinstance(data["memory_mb"], int):
            raise BotSpecError(f"{what}: `memory_mb` must be a whole number of MiB, e.g. memory_mb = 512")
        limits["memory_mb"] = data["memory_mb"]
    if "max_processes" in data:
        if isinstance(data["max_processes"], bool) or not isinstance(data["max_processes"], int):
            raise BotSpecError(f"{what}: `max_processes` must be a whole number, e.g. max_processes = 64")
        limits["max_processes"] = data["max_processes"]
    if "cpu_limit_s" in data:
        if isinstance(data["cpu_limit_s"], bool) or not isinstance(data["cpu_limit_s"], int | float):
            raise BotSpecError(f"{what}: `cpu_limit_s` must be a number of seconds, e.g. cpu_limit_s = 30")
        limits["cpu_limit_s"] = float(data["cpu_limit_s"])
    if "ponder" in data:
        if not isinstance(data["ponder"], bool):
            raise BotSpecError(f"{what}: `ponder` must be true or false")
        limits["ponder"] = data["ponder"]
    _file_controls(data, what, limits)
    return _make_spec(name=name, command=command, dir=dir, env=dict(raw_env), what=what, limits=limits)


def _file_controls(data: dict[str, Any], what: str, into: dict[str, Any]) -> None:
    """A bot file's (or config entry's) `tc`, `nodes`, `depth` and `[options]` into the BotSpec keys `into`."""
    if "tc" in data:
        if not isinstance(data["tc"], str | int | float) or isinstance(data["tc"], bool):
            raise BotSpecError(f'{what}: `tc` must be a time control like "10+0.1"')
        _parse_control("tc", str(data["tc"]), what, into)
    for key in ("nodes", "depth"):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BotSpecError(f"{what}: `{key}` must be a whole number, at least 1")
            into[key] = value
    if "options" in data:
        options = data["options"]
        if not isinstance(options, dict) or not all(isinstance(v, bool | int | float | str) for v in options.values()):
            raise BotSpecError(f"{what}: `options` must be a table of values, e.g. [options] depth = 5")
        into["options"] = dict(options)


def check_bot_command(spec: BotSpec) -> None:
    """Raise BotSpecError, naming the bot and what to do, when its program or folder cannot be found.

    Done before starting anything: a missing program is the user's mistake, not the bot's forfeit. For a
    sandboxed or memory-limited bot, also checks that the sandbox and the limit can be had (a SandboxError).
    """
    if spec.dir is not None and not spec.dir.is_dir():
        raise BotSpecError(
            f"bot {spec.name!r}: its working directory {str(spec.dir)!r} does not exist; fix dir= or create it"
        )
    if spec.sandbox or spec.memory_mb is not None:
        from referee.host.sandbox import check_launch  # imports this module

        check_launch(spec)
    program = spec.command[0]
    shown = shlex.join(spec.command)
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program)
        where = program
        if not path.is_absolute() and spec.dir is not None:
            path = spec.dir / path
            where = str(path)
        if not path.exists():
            raise BotSpecError(
                f"bot {spec.name!r}: the program {where!r} does not exist (command: {shown}); check the path"
                + (" (relative to the bot's dir)" if spec.dir is not None else "")
            )
        if path.is_dir() or not os.access(path, os.X_OK):
            raise BotSpecError(
                f"bot {spec.name!r}: {where!r} is not an executable file (command: {shown});"
                f" make it executable (chmod +x) or run it through its interpreter, e.g. python3 {program}"
            )
        problem = script_start_problem(path)
        if problem is not None:
            raise BotSpecError(f"bot {spec.name!r}: {where!r} {problem} (command: {shown})")
        _check_script_argument(spec)
        return
    search_path = spec.env.get("PATH", os.environ.get("PATH", os.defpath))
    if shutil.which(program, path=search_path) is None:
        raise BotSpecError(
            f"bot {spec.name!r}: the program {program!r} was not found on PATH (command: {shown});"
            f" give its path (e.g. ./{program}), install it, or use a sample bot ({', '.join(sample_bot_names())})"
        )
    _check_script_argument(spec)


_INTERPRETERS = re.compile(r"^(python[\d.]*|pypy[\d.]*|node|nodejs|deno|bun|ruby|perl|php|lua[\d.]*|bash|sh|java)$")


def _check_script_argument(spec: BotSpec) -> None:
    """BotSpecError when an interpreter's script (`python3 bots/x.py`, `node x.js`) does not exist.

    Otherwise the interpreter starts, fails to find it and every game of the bot is a forfeit.
    """
    program = Path(spec.command[0]).name
    if spec.command[0] != sys.executable and not _INTERPRETERS.match(program):
        return
    script = next((a for a in spec.command[1:] if not a.startswith("-")), None)
    if script is None or not script.endswith(_SCRIPT_SUFFIXES) or spec.command[1] in ("-m", "-c", "-e"):
        return
    path = Path(script)
    if not path.is_absolute() and spec.dir is not None:
        path = spec.dir / path
    if not path.is_file():
        where = f" (looked for {str(path.absolute())!r})" if not Path(script).is_absolute() else ""
        raise BotSpecError(
            f"bot {spec.name!r}: the script {script!r} does not exist{where} (command: {shlex.join(spec.command)});"
            " check the path: it is relative to the bot's dir (in a config: the config file's folder)"
        )


def script_start_problem(path: Path) -> str | None:
    """Why the system could not start the executable file `path`, or None when it can.

    A text file starts through the interpreter its `#!` line names; without that line the system refuses
    it ("Exec format error"), and with a missing interpreter it says "not found" about a file that exists.
    """
    try:
        with path.open("rb") as file:
            head = file.read(256)
    except OSError:
        return None  # the start itself will say what is wrong
    if head.startswith(b"#!"):
        line = head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
        words = line.split()
        if not words:
            return "has an empty #! line; name its interpreter, e.g. #!/usr/bin/env python3"
        interpreter = words[0]
        if not Path(interpreter).is_file():
            return f"names the interpreter {interpreter!r} in its #! line, which does not exist; fix the #! line"
        if Path(interpreter).name == "env" and len(words) > 1 and not words[1].startswith("-"):
            program = words[1]
            if shutil.which(program) is None:
                return (
                    f"names the interpreter {program!r} in its #! line (via env), which is not on PATH;"
                    " install it or fix the #! line"
                )
        return None
    if head.startswith(b"\x7fELF") or b"\0" in head:
        return None  # a binary: the system knows (or will say) how to run it
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # a cut last character is fine
    except UnicodeDecodeError:
        return None
    return (
        "is a text file without a #! line, so the system cannot start it (Exec format error); add one"
        " such as #!/usr/bin/env python3, or run it through its interpreter, e.g. python3 " + str(path)
    )
