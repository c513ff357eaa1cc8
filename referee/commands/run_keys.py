"""The options `alternator match` and `alternator tournament` share, as keys of a run config: one table, one
conversion of a bot to its `[[bots]]` entry.

A match builds its config from its options alone, a tournament over its file; both go through `shared_keys`,
which checks each value (a UsageError that says what to write) and says which option set each key, so that a
refused setting is named as the user gave it (`key_sources` of `referee.run.config.parse_config`). Options for
every bot (`--sandbox`, `--memory-mb`, the containment options) are `every_bot_keys`: they override each bot's
own setting.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.cli import UsageError
from referee.commands.common import check_memory_mb, containment_options, parse_sprt
from referee.commands.controls_options import bot_control_entry, control_keys

if TYPE_CHECKING:
    from referee.run.botspec import BotSpec

__all__ = ["SHARED", "RunOption", "bot_entry", "every_bot_keys", "shared_keys"]


def _same(value: Any) -> Any:
    return value


def _time_control(text: str) -> str:
    from referee.timing.clock import parse_time_control

    try:
        parse_time_control(text)
    except ValueError as error:
        raise UsageError(f"--tc {text!r}: {error}") from None
    return text


def _movetime(seconds: float) -> float:
    if not seconds > 0:
        raise UsageError(f"--movetime {seconds:g}: give a positive number of seconds, e.g. --movetime 2")
    return seconds


def _margin(ms: int) -> int:
    if ms < 0:
        raise UsageError(f"--margin-ms {ms}: give 0 or more milliseconds, e.g. --margin-ms 20")
    return ms


def _concurrency(n: int) -> int:
    if n < 1:
        raise UsageError(f"--concurrency {n}: give at least 1 (games at once)")
    return n


@dataclass(frozen=True)
class RunOption:
    """An option that sets one key of a run config: its flag, argparse's name for it, the key, and its check."""

    flag: str
    dest: str
    key: str
    value: Callable[[Any], Any] = _same


SHARED: tuple[RunOption, ...] = (
    RunOption("--tc", "tc", "time_control", _time_control),
    RunOption("--movetime", "movetime", "movetime", _movetime),
    RunOption("--margin-ms", "margin_ms", "margin_ms", _margin),
    RunOption("--concurrency", "concurrency", "concurrency", _concurrency),
    RunOption("--title", "title", "title"),
    RunOption("--anchor", "anchor", "anchor"),
)
"""The simple options both commands have, each setting one key of the same name in a config file."""


def shared_keys(args: argparse.Namespace) -> dict[str, tuple[str, Any]]:
    """The run-config keys the shared options set, each with the option that set it (UsageError for bad values)."""
    keys: dict[str, tuple[str, Any]] = {}
    for option in SHARED:
        value = getattr(args, option.dest, None)
        if value is not None:
            keys[option.key] = (option.flag, option.value(value))
    if "time_control" in keys and "movetime" in keys:
        raise UsageError("--tc and --movetime: give one of them (a game clock, or a fixed time per move)")
    if getattr(args, "sprt", None) is not None:
        keys["sprt"] = ("--sprt", parse_sprt(args.sprt))
    if getattr(args, "cpu_affinity", None) is not None:
        keys["cpu_affinity"] = ("--cpu-affinity" if args.cpu_affinity else "--no-cpu-affinity", args.cpu_affinity)
    keys.update(control_keys(args))
    return keys


def every_bot_keys(args: argparse.Namespace) -> dict[str, Any]:
    """The per-bot keys the options for every bot set (`--sandbox`, `--memory-mb`, containment); UsageError for
    bad values. They override each bot's own."""
    check_memory_mb(args.memory_mb)
    keys: dict[str, Any] = {"sandbox": True} if args.sandbox else {}
    if args.memory_mb is not None:
        keys["memory_mb"] = args.memory_mb
    keys.update(containment_options(args))
    return keys


def bot_entry(spec: BotSpec, default_dir: Path | None = None) -> dict[str, Any]:
    """A bot as its `[[bots]]` entry in a run config, with only the keys that differ from the defaults.

    `default_dir`: the folder its relative paths are in when it has none of its own (the current directory, for
    a bot given on the command line)."""
    from referee.run.botspec import DEFAULT_MAX_PROCESSES

    folder = spec.dir or default_dir
    return {
        "name": spec.name,
        "command": spec.command,
        "env": spec.env,
        **({"dir": str(folder)} if folder else {}),
        **({"sandbox": True} if spec.sandbox else {}),
        **({"memory_mb": spec.memory_mb} if spec.memory_mb is not None else {}),
        **({"max_processes": spec.max_processes} if spec.max_processes != DEFAULT_MAX_PROCESSES else {}),
        **({"ponder": False} if not spec.ponder else {}),
        **({"cpu_limit_s": spec.cpu_limit_s} if spec.cpu_limit_s is not None else {}),
        **bot_control_entry(spec),
    }
