"""Run configuration, for matches and tournaments alike: the TOML file format, its validation, the demo.

`alternator match` and `alternator tournament` both build a `RunConfig` (the match from its options, a
tournament from a config file and its options) and resolve it into a `RunPlan`, so a match is simply a
schedule of two bots. A config file (read with tomllib, validated with pydantic) says which bots play
(name, command, working directory, environment), the format, games per pairing, time control, board size,
komi, openings, concurrency and output directory. Every error names the file, the key and what is wrong, e.g.
"tournament.toml: bots[2].command: field required". Command-line options override the file's values;
with neither a file nor `--bot`, the demo tournament of the sample bots is used.

`RunConfig` is what the user wrote; `RunPlan` is the same resolved into the objects the runner runs
with (BotSpecs, a TimeControl, the openings, the SPRT), plus the *fingerprint*: the settings that must
not change when a run is resumed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from protocol.messages import TimeControl
from protocol.rules import IllegalMoveError, InvalidMoveError, Position, parse_size
from referee.cluster.config import ClusterConfig
from referee.host.limits import MAX_BOTS, MAX_CONFIG_BYTES, MAX_GAMES_PER_PAIRING
from referee.outputs.files import InputFileError, read_input_text
from referee.play.adjudication import Adjudication
from referee.run.backoff import DEFAULT_MAX_WAIT_S, parse_duration
from referee.run.botspec import BotName, BotSpec, BotSpecError, resolve_command
from referee.run.openings import arrange
from referee.run.schedule import Format, OpeningsFileError, random_openings, read_openings_file
from referee.stats.sprt import SprtParameters

if TYPE_CHECKING:
    from referee.stats.standings import Anchor

Kind = Literal["match", "tournament"]

DEMO_BOTS = ("random", "greedy", "alphabeta")
DEFAULT_GAMES = 2
DEFAULT_TIME_CONTROL = "10+0.1"
DEFAULT_START_TIMEOUT_S = 10.0
OptionValue = bool | int | float | str


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the source, the key and what to do."""


class BotConfig(BaseModel):
    """One `[[bots]]` entry."""

    model_config = ConfigDict(extra="forbid")

    name: BotName = Field(description="The name in records and standings; unique.")
    command: list[str] = Field(
        min_length=1,
        description="A command line (a string, split like a shell would but never run through one) or a list of"
        " arguments. `python`/`python3` first means the Python running the referee; a sample bot name alone"
        " (random, greedy, alphabeta) runs that sample bot.",
    )
    dir: str | None = Field(
        None,
        description="Working directory, relative to the config file's folder (default: that folder); relative"
        " paths in `command` are relative to it.",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    sandbox: bool | None = Field(None, description="Run this bot in the sandbox (default: the top-level `sandbox`).")
    memory_mb: int | None = Field(
        None, ge=16, description="This bot's memory limit in MiB (default: the top-level `memory_mb`)."
    )
    max_processes: int | None = Field(
        None, ge=1, description="This bot's limit on processes and threads (default: the top-level `max_processes`)."
    )
    ponder: bool | None = Field(
        None, description="Whether this bot may run during its opponent's turns (default: the top-level `ponder`)."
    )
    cpu_limit_s: float | None = Field(
        None, gt=0, description="This bot's CPU seconds per game (default: the top-level `cpu_limit_s`)."
    )
    tc: str | None = Field(
        None, description="This bot's own time control, like the top-level `time_control` (time odds)."
    )
    nodes: int | None = Field(None, ge=1, description="This bot's node limit per move (default: the top-level one).")
    depth: int | None = Field(None, ge=1, description="This bot's depth limit per move (default: the top-level one).")
    options: dict[str, OptionValue] = Field(
        default_factory=dict,
        description="Values for options the bot declares (a [bots.options] table); checked before the first game.",
    )
    rating: float | None = Field(
        None, allow_inf_nan=False, description="The bot's rating, for a knockout's `seeding = \"rating\"`."
    )

    @field_validator("tc", mode="before")
    @classmethod
    def _tc(cls, value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str):
            from referee.timing.clock import parse_time_control

            parse_time_control(value)
        return value

    @field_validator("command", mode="before")
    @classmethod
    def _split_command(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return shlex.split(value)
            except ValueError as error:
                raise ValueError(f"cannot split {value!r} into words ({error}); check the quotes") from None
        return value


class OpeningsConfig(BaseModel):
    """The `[openings]` table: seeded random openings, an openings file, or one fixed opening."""

    model_config = ConfigDict(extra="forbid")

    moves: str | None = Field(
        None, description='One opening for every game, moves separated by spaces, e.g. "d5d4 e4e5".'
    )
    plies: int = Field(0, ge=0, le=64, description="Random legal placements before the bots take over (0: none).")
    seed: int | str = Field(1, description="Seed of the random openings; the same seed gives the same openings.")
    file: str | None = Field(
        None,
        description="A file with one opening per line (moves separated by spaces); replaces the random openings."
        " Relative to the config file's folder.",
    )
    order: Literal["sequential", "random"] = Field(
        "sequential", description="The file's openings in file order, or shuffled by `seed`."
    )
    start: int = Field(1, ge=1, description="Start from this opening (1: the first); the ones before it come last.")


class SprtConfig(BaseModel):
    """The `[sprt]` table: stop a two-bot run as soon as the SPRT decides (see referee/stats/sprt.py)."""

    model_config = ConfigDict(extra="forbid")

    elo0: float = Field(0.0, description="H0: the first bot is at most elo0 Elo stronger.")
    elo1: float = Field(5.0, description="H1: the first bot is elo1 Elo stronger.")
    alpha: float = Field(0.05, description="The chance of accepting H1 when H0 holds.")
    beta: float = Field(0.05, description="The chance of accepting H0 when H1 holds.")


class PairingConfig(BaseModel):
    """One `[[pairings]]` entry: two bots that meet (the first has Black in their first game)."""

    model_config = ConfigDict(extra="forbid")

    bots: list[BotName] = Field(min_length=2, max_length=2, description="The two bots' names.")


class RunConfig(BaseModel):
    """A match or tournament config, as written (a tournament's TOML file, or a match's options)."""

    model_config = ConfigDict(extra="forbid")

    bots: list[BotConfig] = Field(
        min_length=2, max_length=MAX_BOTS, description="The bots; at least two, names unique."
    )
    format: Format = Field(
        Format.ROUND_ROBIN,
        description="round-robin, gauntlet (the first `seeds` bots vs each other bot), pairings (the [[pairings]]"
        " list), swiss (`rounds` rounds), knockout (a seeded bracket) or adaptive (game pairs where the order is"
        " least certain, up to `max_games`).",
    )
    seeds: int = Field(1, ge=1, description="Gauntlet: how many of the first bots play every other bot.")
    pairings: list[PairingConfig] | None = Field(
        None, description='The pairs that meet ([[pairings]] bots = ["a", "b"]); sets format = pairings.'
    )
    rounds: int | None = Field(None, ge=1, description="Swiss: the number of rounds (default: log2 of the field).")
    seeding: Literal["rating", "order", "random"] = Field(
        "order", description="Knockout: seeds by the bots' `rating`, their order, or a shuffle by `format_seed`."
    )
    format_seed: int | str = Field(1, description="Seed of a knockout's random seeding.")
    tiebreak_pairs: int = Field(
        2,
        ge=0,
        le=50,
        description="Knockout: tie-break game pairs of a tied encounter before the higher seed advances.",
    )
    max_games: int | None = Field(None, ge=2, description="Adaptive: the budget of games (default: a round robin's).")
    confidence: float = Field(
        0.95, gt=0.5, lt=1.0, description="Adaptive: how sure every neighbouring order must be to call it decided."
    )
    games: int = Field(
        DEFAULT_GAMES, ge=1, le=MAX_GAMES_PER_PAIRING, description="Games per pairing (with [sprt]: the most)."
    )
    time_control: str | None = Field(
        None,
        description="BASE+INC in seconds like 60+0.5, or MOVES/BASE[+INC] like 40/60 or 40/60+1 (default 10+0.1).",
    )
    movetime: float | None = Field(None, gt=0, description="A fixed limit per move in seconds, instead of a clock.")
    size: str = Field("8x8", description="Board size: 8, or WIDTHxHEIGHT like 9x7 (2 to 26).")
    komi: float = Field(3.5, allow_inf_nan=False, description="Points added to White's score.")
    margin_ms: int = Field(0, ge=0, description="Grace added to every deadline before a bot loses on time.")
    openings: OpeningsConfig = Field(default_factory=lambda: OpeningsConfig.model_validate({}))
    sprt: SprtConfig | None = Field(None, description="Run the SPRT (two bots only); see referee/stats/sprt.py.")
    concurrency: int | None = Field(None, ge=1, le=256, description="Games at once (default: number of cores).")
    out: str | None = Field(None, description="Output directory, relative to the config file's folder.")
    title: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="The event's title, shown by the terminal, the standings, the report and the live page (it may"
        " change on a resume).",
    )
    anchor: str | None = Field(
        None,
        description="NAME=RATING: fix that bot's rating and measure the others from it (default: ratings relative to"
        " the field mean; it may change on a resume).",
    )
    sandbox: bool = Field(
        False,
        description="Run every bot in a bubblewrap sandbox: no network, a read-only filesystem apart from a private"
        " /tmp, a cleared environment (a bot's own `sandbox` overrides; see referee/host/sandbox.py).",
    )
    memory_mb: int | None = Field(
        None,
        ge=16,
        description="Limit every bot's memory to this many MiB: resident memory where the host has a memory cgroup,"
        " else the address space (a bot's own `memory_mb` overrides).",
    )
    max_processes: int | None = Field(
        None,
        ge=1,
        description="At most this many processes and threads per bot, all it starts included (default 128; a"
        " bot's own `max_processes` overrides). Bounded by a cgroup where the referee can make one.",
    )
    ponder: bool = Field(
        True,
        description="False: freeze every bot during its opponent's turns (--no-ponder; a bot's own `ponder`"
        " overrides).",
    )
    cpu_limit_s: float | None = Field(
        None,
        gt=0,
        description="CPU seconds each bot may use in one game, all its processes, on its turns and off them; past"
        " it, it loses on time (a bot's own `cpu_limit_s` overrides). Null: no limit.",
    )
    cpu_affinity: bool | None = Field(
        None,
        description="Give each concurrent game its own cores; both bots of a game (and the referee's threads that"
        " read them) run on them. Null: on when two or more games run at once and there are at least as many cores.",
    )
    cluster: ClusterConfig | None = Field(
        None,
        description="Play the games on a Dask cluster: its scheduler's address (tcp://host:8786), or a"
        " [cluster] table with address, ca_file, cert and key for a tls:// scheduler (see README).",
    )
    nodes: int | None = Field(None, ge=1, description="Every bot's node limit per move (a bot's own overrides).")
    depth: int | None = Field(None, ge=1, description="Every bot's depth limit per move (a bot's own overrides).")
    start_timeout: float = Field(
        DEFAULT_START_TIMEOUT_S,
        gt=0,
        description="Seconds a bot may take to start and answer hello (raise it for bots that load large tables).",
    )
    max_host_wait: float = Field(
        DEFAULT_MAX_WAIT_S,
        ge=0,
        description="Seconds one pause for a busy host may last before the run stops (a string: 90s, 30m, 2h);"
        " before pausing, the run plays fewer games at once.",
    )
    adjudication: Adjudication | None = Field(
        None, description="End games early: [adjudication] solver = true, resign_moves/resign_score, draw_*."
    )

    @field_validator("max_host_wait", mode="before")
    @classmethod
    def _max_host_wait(cls, value: object) -> object:
        return parse_duration(value) if isinstance(value, str) else value

    @field_validator("cluster", mode="before")
    @classmethod
    def _cluster(cls, value: object) -> object:
        return {"address": value} if isinstance(value, str) else value

    @field_validator("time_control", mode="before")
    @classmethod
    def _time_control(cls, value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str):
            from referee.timing.clock import parse_time_control

            parse_time_control(value)  # its ValueError says what is wrong and gives an example
        return value

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str):
            width, height = parse_size(value)  # its InvalidPositionError (a ValueError) says what is wrong
            return f"{width}x{height}"
        return value

    @property
    def width(self) -> int:
        return int(self.size.split("x")[0])

    @property
    def height(self) -> int:
        return int(self.size.split("x")[1])


def _key(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as the user wrote it: ("bots", 2, "command") -> "bots[2].command"."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


_KNOWN_KEYS = {
    "": sorted(RunConfig.model_fields),
    "bots": sorted(BotConfig.model_fields),
    "openings": sorted(OpeningsConfig.model_fields),
    "sprt": sorted(SprtConfig.model_fields),
    "cluster": sorted(ClusterConfig.model_fields),
    "adjudication": sorted(Adjudication.model_fields),
    "pairings": sorted(PairingConfig.model_fields),
}


def _message(error: Any) -> str:
    kind = error["type"]
    loc: tuple[int | str, ...] = tuple(error["loc"])
    if kind == "missing":
        return "field required"
    if kind == "extra_forbidden":
        tables = (("openings",), ("sprt",), ("cluster",), ("adjudication",))
        listed = loc[:1] in (("bots",), ("pairings",)) and len(loc) == 3
        parent = str(loc[0]) if listed else (str(loc[0]) if loc[:1] in tables else "")
        hint = ""
        if parent and str(loc[-1]) in _KNOWN_KEYS[""]:
            # A TOML trap: a key written after a [table] belongs to that table.
            hint = f" ({loc[-1]} is a top-level key: move it above the first [table] or [[bots]])"
            if parent == "bots" and loc[-1] in ("time_control", "movetime"):
                hint = (
                    f' (for this bot\'s own time control, time odds, write tc = "..."; for every bot, {loc[-1]}'
                    " is a top-level key: move it above the first [table] or [[bots]])"
                )
        return f"unknown key; the keys here are {', '.join(_KNOWN_KEYS[parent])}{hint}"
    if kind == "too_short" and loc == ("bots",):
        return "a tournament needs at least two bots: add another (one --bot or [[bots]] entry per bot)"
    if kind == "too_long" and loc == ("bots",):
        return f"more than {MAX_BOTS} bots; split them into several tournaments (or a gauntlet per candidate)"
    message = str(error["msg"])
    # pydantic prefixes the message of a ValueError raised in a validator
    return message.removeprefix("Value error, ")


def parse_config(data: dict[str, Any], *, source: str, key_sources: dict[str, str] | None = None) -> RunConfig:
    """Validate a config mapping (from TOML or built in code); ConfigError lists every problem.

    `key_sources` names where a top-level key came from when it was not `source` (a command-line option
    that overrides the file): its problems are reported as "--tc: ..." rather than "tournament.toml: ...".
    """
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as error:
        problems = []
        for e in error.errors():
            loc = tuple(e["loc"])
            where = (key_sources or {}).get(str(loc[0]) if loc else "", source)
            problems.append(f"{where}: {_key(loc)}: {_message(e)}")
        raise ConfigError("\n".join(problems)) from None
    sources = key_sources or {}
    seen: dict[str, int] = {}
    for index, bot in enumerate(config.bots):
        if bot.name in seen:
            how = "name each bot: --bot NAME=CMD" if sources.get("bots") == "--bot" else "every bot needs its own name"
            raise ConfigError(
                f"{sources.get('bots', source)}: bots[{index}].name: {bot.name!r} is already the name of"
                f" bots[{seen[bot.name]}]; {how}"
            )
        seen[bot.name] = index
    if config.time_control is not None and config.movetime is not None:
        raise ConfigError(f"{source}: time_control and movetime: give one of them, not both")
    config = _check_format(config, sources, source)
    openings = config.openings
    if sum((openings.moves is not None, openings.file is not None, openings.plies > 0)) > 1:
        raise ConfigError(
            f"{sources.get('openings', source)}: openings: give one of moves (one fixed opening), plies (random"
            " openings) or file (an openings file)"
        )
    if (openings.order, openings.start) != ("sequential", 1) and openings.file is None:
        raise ConfigError(
            f"{sources.get('openings', source)}: openings.order and openings.start: they apply to an openings file;"
            " give file too (random openings are in random order already)"
        )
    if config.sprt is not None:
        where = sources.get("sprt", source)
        if len(config.bots) != 2:
            raise ConfigError(f"{where}: sprt: the SPRT compares two bots; this config has {len(config.bots)}")
        if config.games % 2:
            raise ConfigError(
                f"{sources.get('games', source)}: games: {config.games} with the SPRT: give an even number, the test"
                " counts pairs of games"
            )
        try:
            SprtParameters(**config.sprt.model_dump())
        except ValueError as error:
            raise ConfigError(f"{where}: sprt: {error}") from None
    return config


def _check_format(config: RunConfig, sources: dict[str, str], source: str) -> RunConfig:
    """The format's own settings: pairings name bots of the field, a gauntlet has fewer seeds than bots, a Swiss
    no more rounds than a round robin, a knockout plays pairs. Returns the config with `pairings` implying the
    format."""
    from referee.run.swiss import max_rounds

    where = sources.get("format", source)
    bots = [bot.name for bot in config.bots]
    if config.pairings is not None:
        if "format" in config.model_fields_set and config.format is not Format.PAIRINGS:
            raise ConfigError(
                f"{where}: format: {config.format} with [[pairings]]: the pairings are the schedule; drop the format"
                ' (or write format = "pairings"), or drop the [[pairings]]'
            )
        listed = config.pairings
        config = config.model_copy(update={"format": Format.PAIRINGS})
        seen: set[frozenset[str]] = set()
        for index, pairing in enumerate(listed):
            a, b = pairing.bots
            for name in (a, b):
                if name not in bots:
                    raise ConfigError(
                        f"{source}: pairings[{index}].bots: {name!r} is not one of the bots ({', '.join(bots)})"
                    )
            if a == b:
                raise ConfigError(f"{source}: pairings[{index}].bots: a bot cannot play itself ({a!r})")
            if frozenset((a, b)) in seen:
                raise ConfigError(f"{source}: pairings[{index}].bots: {a} and {b} are already paired; list a pair once")
            seen.add(frozenset((a, b)))
    elif config.format is Format.PAIRINGS:
        raise ConfigError(f'{where}: format: pairings needs a [[pairings]] list (bots = ["a", "b"] per entry)')
    if config.format is Format.GAUNTLET and config.seeds >= len(bots):
        raise ConfigError(
            f"{sources.get('seeds', source)}: seeds: {config.seeds} seeds of {len(bots)} bots leave no one to play;"
            f" give 1 to {len(bots) - 1}"
        )
    if config.seeds != 1 and config.format is not Format.GAUNTLET:
        raise ConfigError(f"{sources.get('seeds', source)}: seeds: only a gauntlet has seeds (--format gauntlet)")
    if config.format is Format.SWISS:
        most = max_rounds(len(bots))
        if config.rounds is not None and config.rounds > most:
            raise ConfigError(
                f"{sources.get('rounds', source)}: rounds: {config.rounds} rounds of {len(bots)} bots would need"
                f" rematches; give 1 to {most} (or play a round robin)"
            )
    elif config.rounds is not None:
        raise ConfigError(
            f"{sources.get('rounds', source)}: rounds: only a Swiss tournament has rounds (--format swiss)"
        )
    if config.format is Format.KNOCKOUT and config.games % 2:
        raise ConfigError(
            f"{sources.get('games', source)}: games: {config.games} games an encounter: a knockout plays game pairs;"
            " give an even number (the default 2 is one pair)"
        )
    if config.max_games is not None and config.format is not Format.ADAPTIVE:
        raise ConfigError(
            f"{sources.get('max_games', source)}: max_games: only an adaptive run has a budget (--format adaptive)"
        )
    if not config.format.is_fixed and config.sprt is not None:
        raise ConfigError(f"{sources.get('sprt', source)}: sprt: the SPRT is for a two-bot round robin (a match)")
    return config


def load_config(path: Path) -> RunConfig:
    """Read and validate a TOML config file; ConfigError names the file, the key and what is wrong."""
    try:
        text = read_input_text(path, "config file", max_bytes=MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file; check the path (see examples/tournament.toml)") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file: {error.strerror}") from None
    except InputFileError as error:
        raise ConfigError(str(error)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    return parse_config(data, source=str(path))


def demo_config_data() -> dict[str, Any]:
    """The built-in demo: the sample bots in a short round robin on the standard board.

    12 games; alphabeta spends most of its 5 s per game, so it takes about 20-30 s on 2 cores.
    """
    return {
        "bots": [{"name": name, "command": [name]} for name in DEMO_BOTS],
        "format": "round-robin",
        "games": 4,
        "time_control": "5+0.1",
        "size": "8x8",
        "openings": {"plies": 2, "seed": 1},
        "margin_ms": 100,
    }


@dataclass(frozen=True)
class RunPlan:
    """A validated config resolved into what the runner runs with."""

    kind: Kind
    bots: list[BotSpec]
    format: Format
    games_per_pairing: int
    width: int
    height: int
    komi: float
    time_control: TimeControl
    margin_ms: int
    openings: list[tuple[str, ...]]
    concurrency: int
    out_dir: Path
    fingerprint: dict[str, Any]  # what must not change on resume (the store compares it)
    sprt: SprtParameters | None = None
    openings_source: dict[str, Any] | None = None  # how the openings were made, for match.json
    cpu_affinity: bool = False
    cluster: ClusterConfig | None = None  # where the games are played; not in the fingerprint (resume anywhere)
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    max_host_wait_s: float = DEFAULT_MAX_WAIT_S
    adjudication: Adjudication | None = None
    title: str | None = None  # the event's title (--title, config `title`)
    anchor: Anchor | None = None  # the rating scale's anchor (--anchor, config `anchor`)
    seeds: int = 1  # a gauntlet's seeds
    pairs: tuple[tuple[str, str], ...] = ()  # explicit [[pairings]]
    rounds: int | None = None  # Swiss
    seeding: str = "order"  # knockout
    format_seed: int | str = 1
    tiebreak_pairs: int = 2
    max_games: int | None = None  # adaptive
    confidence: float = 0.95

    @property
    def bot_names(self) -> list[str]:
        return [bot.name for bot in self.bots]


def _bot_spec(bot: BotConfig, index: int, base_dir: Path, source: str, config: RunConfig) -> BotSpec:
    from referee.timing.clock import parse_time_control

    try:
        command = resolve_command(bot.command)
    except BotSpecError as error:
        raise ConfigError(f"{source}: bots[{index}].command: {error}") from None
    # Like a bot file's, a config's bots run from the config's folder by default, so that the paths in
    # their commands are relative to the config, as `dir`, `openings.file` and `out` are.
    directory = base_dir / bot.dir if bot.dir is not None else base_dir
    directory = directory.resolve()
    return BotSpec(
        name=bot.name,
        command=command,
        dir=directory,
        env=bot.env,
        sandbox=config.sandbox if bot.sandbox is None else bot.sandbox,
        memory_mb=config.memory_mb if bot.memory_mb is None else bot.memory_mb,
        **({"max_processes": limit} if (limit := _first(bot.max_processes, config.max_processes)) else {}),
        ponder=config.ponder if bot.ponder is None else bot.ponder,
        cpu_limit_s=config.cpu_limit_s if bot.cpu_limit_s is None else bot.cpu_limit_s,
        time_control=None if bot.tc is None else parse_time_control(bot.tc),
        nodes=_first(bot.nodes, config.nodes),
        depth=_first(bot.depth, config.depth),
        options=bot.options,
    )


def _first(*values: int | None) -> int | None:
    return next((value for value in values if value is not None), None)


def auto_cpu_affinity(concurrency: int) -> bool:
    """Whether `concurrency` games at once get cores of their own when the config does not say.

    Yes when there are two or more and enough cores: left to itself, the kernel often queued a bot (or the
    thread reading it) behind the other game's bot while a core stood idle, for a scheduler tick, and that
    is charged to the bot (measured: referee-minus-bot p99 3.2 ms unpinned, 0.5 ms pinned, 2 games on 2 cores).
    """
    return hasattr(os, "sched_setaffinity") and 2 <= concurrency <= _cores()


def _cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _portable_command(command: list[str]) -> list[str]:
    # The Python running the referee may move (a new venv); that is still the same bot.
    return ["{python}" if word == sys.executable else word for word in command]


def resolve_plan(
    config: RunConfig, *, base_dir: Path, source: str, default_out: Path, kind: Kind = "tournament"
) -> RunPlan:
    """Resolve paths (relative to `base_dir`), the time control and the openings; ConfigError on problems."""
    from referee.timing.clock import movetime_control, parse_time_control

    specs = [_bot_spec(b, i, base_dir, source, config) for i, b in enumerate(config.bots)]
    if config.movetime is not None:
        time_control = movetime_control(config.movetime)
    else:
        time_control = parse_time_control(config.time_control or DEFAULT_TIME_CONTROL)
    rounds = _openings_needed(config)
    if config.openings.moves is not None:
        moves = config.openings.moves.replace(",", " ").split()
        try:
            position = Position.from_moves(moves, config.width, config.height, config.komi)
        except (InvalidMoveError, IllegalMoveError) as error:
            raise ConfigError(f"{source}: openings.moves: {error}") from None
        if position.is_over():
            raise ConfigError(f"{source}: openings.moves: it ends the game (two passes); leave moves for the bots")
        openings = [tuple(moves)] if moves else []
        openings_key: dict[str, Any] = {"moves": list(moves)}
    elif config.openings.file is not None:
        path = Path(config.openings.file)
        path = path if path.is_absolute() else base_dir / path
        try:
            openings = read_openings_file(path, config.width, config.height, config.komi)
        except OpeningsFileError as error:
            raise ConfigError(f"{source}: openings.file: {error}") from None
        # A digest, not the lines: an error message that says what changed must stay readable.
        digest = hashlib.sha256(json.dumps([list(o) for o in openings]).encode()).hexdigest()[:16]
        openings_key = {"file_openings": len(openings), "file_sha256": digest}
        order, start = config.openings.order, config.openings.start
        try:
            openings = arrange(openings, order, start, config.openings.seed)
        except ValueError as error:
            raise ConfigError(f"{source}: openings.start: {error}") from None
        if (order, start) != ("sequential", 1):
            openings_key.update(
                {"order": order, "start": start, **({"seed": config.openings.seed} if order == "random" else {})}
            )
    else:
        capacity = config.width * config.height - 1
        if config.openings.plies >= capacity:
            raise ConfigError(
                f"{source}: openings.plies: {config.openings.plies} placements leave nothing to play on a"
                f" {config.size} board; use fewer than {capacity}"
            )
        openings = random_openings(
            config.width, config.height, config.komi, config.openings.plies, config.openings.seed, rounds
        )
        openings_key = {"plies": config.openings.plies, "seed": config.openings.seed}
    concurrency = config.concurrency or _cores()
    anchor = _anchor(config, specs, source)
    out = Path(config.out) if config.out is not None else default_out
    out_dir = out if out.is_absolute() else base_dir / out
    fingerprint: dict[str, Any] = {
        "kind": kind,
        "bots": [
            {
                "name": s.name,
                "command": _portable_command(s.command),
                "dir": str(s.dir) if s.dir is not None else None,
                "env": s.env,
                # Sandboxing and limits change a bot's conditions, so resuming with others is refused. Only
                # when set: a tournament started before they existed still resumes.
                **({"sandbox": True} if s.sandbox else {}),
                **({"memory_mb": s.memory_mb} if s.memory_mb is not None else {}),
                **({"ponder": False} if not s.ponder else {}),
                **({"cpu_limit_s": s.cpu_limit_s} if s.cpu_limit_s is not None else {}),
                **({"time_control": s.time_control.model_dump()} if s.time_control is not None else {}),
                **({"nodes": s.nodes} if s.nodes is not None else {}),
                **({"depth": s.depth} if s.depth is not None else {}),
                **({"options": s.options} if s.options else {}),
                **({"rating": b.rating} if b.rating is not None else {}),
            }
            for s, b in zip(specs, config.bots, strict=True)
        ],
        "format": str(config.format),
        # Only for what a format has beyond a round robin: a run started before formats had settings resumes.
        **({"format_settings": settings} if (settings := _format_settings(config)) else {}),
        "size": config.size,
        "komi": config.komi,
        "time_control": time_control.model_dump(),
        "margin_ms": config.margin_ms,
        "openings": openings_key,
        **({"sprt": config.sprt.model_dump()} if config.sprt is not None else {}),
        **({"adjudication": config.adjudication.model_dump()} if config.adjudication is not None else {}),
        # Not compared on resume (referee.run.store keeps it apart): a run may be renamed.
        **({"title": config.title} if config.title else {}),
        **({"anchor": str(anchor)} if anchor is not None else {}),  # kept apart like the title
    }
    return RunPlan(
        kind=kind,
        bots=specs,
        format=config.format,
        games_per_pairing=config.games,
        width=config.width,
        height=config.height,
        komi=config.komi,
        time_control=time_control,
        margin_ms=config.margin_ms,
        openings=openings,
        concurrency=concurrency,
        out_dir=out_dir,
        fingerprint=fingerprint,
        sprt=SprtParameters(**config.sprt.model_dump()) if config.sprt is not None else None,
        openings_source=openings_key,
        cpu_affinity=config.cpu_affinity if config.cpu_affinity is not None else auto_cpu_affinity(concurrency),
        cluster=config.cluster.resolved(base_dir) if config.cluster is not None else None,
        start_timeout_s=config.start_timeout,
        max_host_wait_s=config.max_host_wait,
        adjudication=config.adjudication if config.adjudication is not None and config.adjudication.active else None,
        title=config.title,
        anchor=anchor,
        seeds=config.seeds,
        pairs=tuple((p.bots[0], p.bots[1]) for p in config.pairings or ()),
        rounds=_swiss_rounds(config) if config.format is Format.SWISS else None,
        seeding=config.seeding,
        format_seed=config.format_seed,
        tiebreak_pairs=config.tiebreak_pairs,
        max_games=_adaptive_budget(config) if config.format is Format.ADAPTIVE else None,
        confidence=config.confidence,
    )


def _swiss_rounds(config: RunConfig) -> int:
    """The rounds given, or enough to leave one bot unbeaten in a knockout's sense: log2 of the field."""
    from referee.run.swiss import max_rounds

    if config.rounds is not None:
        return config.rounds
    return min(max_rounds(len(config.bots)), max(1, (len(config.bots) - 1).bit_length()))


def _adaptive_budget(config: RunConfig) -> int:
    """The budget given, or a round robin's games with `games` per pairing."""
    if config.max_games is not None:
        return config.max_games
    n = len(config.bots)
    return max(2, n * (n - 1) // 2 * config.games)


def _openings_needed(config: RunConfig) -> int:
    """How many openings a run can use (random openings are made up to this; the rest reuse them in order)."""
    if config.format is Format.SWISS:
        return _swiss_rounds(config)
    if config.format is Format.KNOCKOUT:
        return config.games // 2 + config.tiebreak_pairs
    if config.format is Format.ADAPTIVE:
        return min(256, _adaptive_budget(config) // 2)
    return (config.games + 1) // 2


def _format_settings(config: RunConfig) -> dict[str, Any]:
    """What names a run's format beyond its name, for the fingerprint (budgets such as rounds are left out: a
    resumed run may play more)."""
    if config.format is Format.GAUNTLET and config.seeds != 1:
        return {"seeds": config.seeds}
    if config.format is Format.PAIRINGS:
        return {"pairings": [list(p.bots) for p in config.pairings or ()]}
    if config.format is Format.KNOCKOUT:
        return {
            "games": config.games,
            "seeding": config.seeding,
            "tiebreak_pairs": config.tiebreak_pairs,
            **({"format_seed": config.format_seed} if config.seeding == "random" else {}),
        }
    if config.format is Format.ADAPTIVE:
        return {"confidence": config.confidence}
    return {}


def _anchor(config: RunConfig, specs: list[BotSpec], source: str) -> Anchor | None:
    """The config's `anchor` (NAME=RATING), one of its bots; ConfigError saying what is wrong."""
    if config.anchor is None:
        return None
    from referee.stats.standings import parse_anchor

    try:
        anchor = parse_anchor(config.anchor)
    except ValueError as error:
        raise ConfigError(f"{source}: anchor: {error}") from None
    names = [spec.name for spec in specs]
    if anchor.name not in names:
        raise ConfigError(f"{source}: anchor: {anchor.name!r} is not one of the bots ({', '.join(names)}); anchor one")
    return anchor


def describe_changes(old: Any, new: Any, path: str = "") -> list[str]:
    """Where two fingerprints differ, one short line per field, as the user would name it:
    `bots[1].command: was [...], now [...]`; bots added or removed by name (`bots: now also "x"`), never both
    whole lists; a long value cut to MAX_SHOWN characters."""
    if isinstance(old, dict) and isinstance(new, dict):
        changes: list[str] = []
        for key in sorted(set(old) | set(new)):
            where = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                changes.append(f"{where}: was {_shown(old.get(key))}, now {_shown(new.get(key))}")
            else:
                changes.extend(describe_changes(old[key], new[key], where))
        return changes
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        changes = []
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            if isinstance(a, dict | list):
                changes.extend(describe_changes(a, b, f"{path}[{index}]"))
            elif a != b:
                return [f"{path}: was {_shown(old)}, now {_shown(new)}"]
        return changes
    if isinstance(old, list) and isinstance(new, list) and all(_named(item) for item in (*old, *new)):
        was = {item["name"]: item for item in old}
        now = {item["name"]: item for item in new}
        changes = [f"{path}: now also {_shown(name)}" for name in now if name not in was]
        changes += [f"{path}: no longer {_shown(name)}" for name in was if name not in now]
        for name in (name for name in now if name in was):
            changes.extend(describe_changes(was[name], now[name], f"{path}[{name}]"))
        return changes
    if old != new:
        return [f"{path}: was {_shown(old)}, now {_shown(new)}"]
    return []


MAX_SHOWN = 80
"""A value in a refusal is cut to this many characters: the field's name says what changed."""


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _named(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("name"), str)
