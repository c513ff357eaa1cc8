"""Bot options, in the spirit of UCI's `option`/`setoption`: what a bot declares and how a chosen value is checked.

A bot lists its options in its `hello` (name, type, default, bounds or choices); the referee checks the values
the user chose (`--bot "... option.depth=5"`, `[bots.options]` in a config) against them before the first game
and sends every option's value in `new_game`. This module is the one place that says what a valid declaration
and a valid value are. Pure and standard-library only: the kit (which must not import pydantic) declares options
with `Option`, and the referee validates both a bot's declarations and the user's values with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "OPTION_NAME_PATTERN",
    "OPTION_TYPES",
    "Option",
    "OptionError",
    "OptionType",
    "OptionValue",
    "resolve_options",
]

OptionType = Literal["int", "float", "bool", "string", "choice"]
OptionValue = bool | int | float | str
OPTION_TYPES: tuple[OptionType, ...] = ("int", "float", "bool", "string", "choice")
OPTION_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
MAX_STRING_CHARS = 1024
_NAME_RE = re.compile(OPTION_NAME_PATTERN)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class OptionError(ValueError):
    """A declaration that does not hold together, or a value its option does not take; the message says which."""


@dataclass(frozen=True)
class Option:
    """One tunable of a bot: its name, type, default and, for numbers, bounds; for a choice, the choices."""

    name: str
    type: OptionType
    default: OptionValue
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = field(default=())
    description: str = ""

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise OptionError(
                f"option name {self.name!r}: give 1-64 letters, digits, '_', '.' or '-', starting with a letter"
            )
        if self.type not in OPTION_TYPES:
            raise OptionError(f"option {self.name!r}: type {self.type!r} is not one of {', '.join(OPTION_TYPES)}")
        numeric = self.type in ("int", "float")
        if not numeric and (self.min is not None or self.max is not None):
            raise OptionError(f"option {self.name!r}: min and max apply to int and float options only")
        if self.type != "choice" and self.choices:
            raise OptionError(f"option {self.name!r}: choices apply to choice options only")
        if self.type == "choice" and not self.choices:
            raise OptionError(f"option {self.name!r}: a choice option needs its list of choices")
        for bound in (self.min, self.max):
            if bound is not None and (isinstance(bound, bool) or not math.isfinite(bound)):
                raise OptionError(f"option {self.name!r}: bounds must be finite numbers")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise OptionError(f"option {self.name!r}: min {self.min:g} is above max {self.max:g}")
        try:
            checked = self.check(self.default)
        except OptionError as error:
            raise OptionError(f"option {self.name!r}: its default does not fit: {error}") from None
        if checked != self.default:
            raise OptionError(f"option {self.name!r}: its default {self.default!r} is not of type {self.type}")

    def check(self, value: object) -> OptionValue:
        """`value` as this option's type, or OptionError. Text (from a command line) is converted; typed values
        (from TOML or JSON) must already have the type, except that an int is a fine float."""
        kind = self.type
        if kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in (*_TRUE, *_FALSE):
                return value.strip().lower() in _TRUE
            raise OptionError(f"{value!r} is not a bool: give true or false")
        if kind in ("string", "choice"):
            if not isinstance(value, str):
                raise OptionError(f"{value!r} is not text")
            if len(value) > MAX_STRING_CHARS:
                raise OptionError(f"a value of {len(value)} characters is longer than {MAX_STRING_CHARS}")
            if kind == "choice" and value not in self.choices:
                raise OptionError(f"{value!r} is not one of the choices {', '.join(self.choices)}")
            return value
        number: int | float
        if isinstance(value, bool):
            raise OptionError(f"{value!r} is not a number")
        if kind == "int":
            if isinstance(value, str):
                try:
                    number = int(value.strip())
                except ValueError:
                    raise OptionError(f"{value!r} is not a whole number") from None
            elif isinstance(value, int):
                number = value
            else:
                raise OptionError(f"{value!r} is not a whole number")
        else:
            if isinstance(value, str):
                try:
                    number = float(value.strip())
                except ValueError:
                    raise OptionError(f"{value!r} is not a number") from None
            elif isinstance(value, int | float):
                number = float(value)
            else:
                raise OptionError(f"{value!r} is not a number")
            if not math.isfinite(number):
                raise OptionError(f"{value!r} is not a finite number")
        if self.min is not None and number < self.min:
            raise OptionError(f"{number:g} is below its minimum {self.min:g}")
        if self.max is not None and number > self.max:
            raise OptionError(f"{number:g} is above its maximum {self.max:g}")
        return number

    def describe(self) -> str:
        """One line for people: `depth (int, 1..64, default 64)`."""
        parts: list[str] = [self.type]
        if self.min is not None or self.max is not None:
            low = "" if self.min is None else f"{self.min:g}"
            high = "" if self.max is None else f"{self.max:g}"
            parts.append(f"{low}..{high}")
        if self.choices:
            parts.append("|".join(self.choices))
        parts.append(f"default {self.default!r}" if isinstance(self.default, str) else f"default {self.default}")
        return f"{self.name} ({', '.join(parts)})"

    def declaration(self) -> dict[str, Any]:
        """The JSON object of this option in a bot's `hello`."""
        declared: dict[str, Any] = {"name": self.name, "type": self.type, "default": self.default}
        if self.min is not None:
            declared["min"] = self.min
        if self.max is not None:
            declared["max"] = self.max
        if self.choices:
            declared["choices"] = list(self.choices)
        if self.description:
            declared["description"] = self.description
        return declared

    @classmethod
    def from_declaration(cls, declared: Mapping[str, Any]) -> Option:
        """An option from its `hello` JSON object (OptionError when it does not hold together)."""
        return cls(
            name=str(declared.get("name", "")),
            type=declared.get("type", ""),
            default=declared.get("default", ""),
            min=declared.get("min"),
            max=declared.get("max"),
            choices=tuple(declared.get("choices") or ()),
            description=str(declared.get("description") or ""),
        )


def resolve_options(declared: Sequence[Option], chosen: Mapping[str, object], *, bot: str) -> dict[str, OptionValue]:
    """Every declared option's value for a game: the chosen one, checked, else its default.

    OptionError names the bot and every problem at once: an option the bot does not declare (with the ones it
    does), or a value its option does not take.
    """
    by_name = {option.name: option for option in declared}
    problems = []
    values: dict[str, OptionValue] = {option.name: option.default for option in declared}
    for name, value in chosen.items():
        option = by_name.get(name)
        if option is None:
            offered = ", ".join(o.describe() for o in declared) if declared else "none"
            problems.append(f"it declares no option {name!r} (its options: {offered})")
            continue
        try:
            values[name] = option.check(value)
        except OptionError as error:
            problems.append(f"option.{name}={value!r}: {error} ({option.describe()})")
    if problems:
        raise OptionError(f"bot {bot!r}: " + "; ".join(problems))
    return values
