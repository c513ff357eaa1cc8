"""When the host, not a bot, makes games void: play fewer games at once, then pause, then go back to full speed.

A game is void when the host made a move late (`referee.timing.rules.judge`); playing on at the same load would only
void the next one. The policy, as a pure function of what it is told (no trio, no clock, no /proc):

- each void for the host's lateness lowers the games played at once by one, down to one; a void at one game
  at once pauses new games (games in progress finish or are voided as usual);
- paused, it resumes (at one game at once) once the host has been calm for `calm_for_s`: the host's CPU
  pressure (Linux PSI, "some" over 10 s) under `calm_pressure_pct` and the referee's own timer lateness under
  `calm_lateness_ms` (either may be unknown, not both);
- running below full speed, it adds a game at once after every `ramp_after_s` of calm with no void;
- it gives up (the run stops with a message, as before this policy) once it has waited `max_wait_s` in one
  pause, or when the same game is void `max_calm_voids` times in a row though the host was calm before each
  try: then the game itself, not the host, is what cannot be played fairly here.

`referee.run.runner` feeds it voids and readings (`HostWatch` samples the host about once a second while it backs
off) and lets slot `i` start a game only while `i < games_at_once` and it is not paused.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import trio

from referee.timing.latency import PRESSURE_PATH, cpu_pressure

__all__ = [
    "CALM_FOR_S",
    "CALM_LATENESS_MS",
    "CALM_PRESSURE_PCT",
    "DEFAULT_MAX_WAIT_S",
    "MAX_CALM_VOIDS",
    "RAMP_AFTER_S",
    "Backoff",
    "HostReading",
    "HostWatch",
    "Step",
    "describe_duration",
    "parse_duration",
]

CALM_PRESSURE_PCT = 20.0
"""The host is calm below this CPU pressure ("some" tasks waiting for a CPU, % of the last 10 s)."""
CALM_LATENESS_MS = 2.0
"""... and with the referee's own timers late by less than this (the median of a few 1 ms sleeps)."""
CALM_FOR_S = 5.0
"""Paused, the host must be calm this long before games start again."""
RAMP_AFTER_S = 30.0
"""Below full speed, a game at once is added after this long with the host calm and no void."""
DEFAULT_MAX_WAIT_S = 30 * 60.0
"""`--max-host-wait`: how long one pause may last before the run stops."""
MAX_CALM_VOIDS = 5
"""A game void this many times in a row, each time started on a calm host, stops the run."""


@dataclass(frozen=True)
class HostReading:
    """One look at the host."""

    at_s: float
    pressure_pct: float | None
    """CPU pressure, PSI "some avg10" (None: no PSI here)."""
    lateness_ms: float | None
    """The referee's own timer lateness (None: not measured)."""

    @property
    def calm(self) -> bool:
        known = [v for v in (self.pressure_pct, self.lateness_ms) if v is not None]
        if not known:
            return False  # nothing says it is calm: wait for the bound
        pressure_ok = self.pressure_pct is None or self.pressure_pct < CALM_PRESSURE_PCT
        lateness_ok = self.lateness_ms is None or self.lateness_ms < CALM_LATENESS_MS
        return pressure_ok and lateness_ok

    def describe(self) -> str:
        parts = []
        if self.pressure_pct is not None:
            parts.append(f"CPU pressure {self.pressure_pct:.0f} %")
        if self.lateness_ms is not None:
            parts.append(f"referee timers {self.lateness_ms:.1f} ms late")
        return ", ".join(parts) or "no reading of the host"


@dataclass(frozen=True)
class Step:
    """What the runner is to do now."""

    games_at_once: int
    paused: bool
    changed: bool
    """Something the user should hear about happened (a lower or higher load, a pause, a resume)."""
    give_up: str | None = None
    """Stop the run: why (the message's first part)."""


@dataclass
class Backoff:
    concurrency: int
    max_wait_s: float = DEFAULT_MAX_WAIT_S
    calm_for_s: float = CALM_FOR_S
    ramp_after_s: float = RAMP_AFTER_S
    max_calm_voids: int = MAX_CALM_VOIDS
    games_at_once: int = field(init=False)
    paused_since: float | None = field(init=False, default=None)
    waited_s: float = field(init=False, default=0.0)
    """Time spent paused, in all."""
    lowest: int = field(init=False)
    """The fewest games at once it came down to."""
    voids: int = field(init=False, default=0)
    """Games void for the host's lateness."""
    pauses: int = field(init=False, default=0)
    last: HostReading | None = field(init=False, default=None)
    _calm_since: float | None = field(init=False, default=None)
    _quiet_since: float = field(init=False, default=0.0)
    _calm_voids: dict[int, int] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.games_at_once = self.lowest = max(1, self.concurrency)

    @property
    def paused(self) -> bool:
        return self.paused_since is not None

    @property
    def backing_off(self) -> bool:
        """Below full speed or paused: the host is watched."""
        return self.paused or self.games_at_once < self.concurrency

    def admits(self, slot: int) -> bool:
        return not self.paused and slot < self.games_at_once

    def _step(self, changed: bool, give_up: str | None = None) -> Step:
        return Step(self.games_at_once, self.paused, changed, give_up)

    def void(self, at_s: float, game: int, *, calm_at_start: bool) -> Step:
        """A game (its number) was void for the host's lateness; `calm_at_start`: the host was calm (by the last
        reading, or never backed off) when it started."""
        self.voids += 1
        self._calm_since = None
        self._quiet_since = at_s
        streak = self._calm_voids[game] = self._calm_voids.get(game, 0) + 1 if calm_at_start else 0
        if streak >= self.max_calm_voids:
            return self._step(
                False,
                give_up=f"was void {streak} times in a row, each time started on a calm host",
            )
        if self.paused:
            return self._step(False)
        if self.games_at_once > 1:
            self.games_at_once -= 1
            self.lowest = min(self.lowest, self.games_at_once)
        else:
            self.paused_since = at_s
            self.pauses += 1
        return self._step(True)

    def scored(self, game: int) -> None:
        """A game was played to its end: its streak of voids is over."""
        self._calm_voids.pop(game, None)

    def reading(self, reading: HostReading) -> Step:
        """A look at the host, about once a second while backing off."""
        self.last = reading
        at = reading.at_s
        if not reading.calm:
            self._calm_since = None
            if self.paused_since is not None and at - self.paused_since >= self.max_wait_s:
                waited = describe_duration(at - self.paused_since)
                return self._step(False, give_up=f"the host stayed busy for {waited} ({reading.describe()})")
            return self._step(False)
        if self._calm_since is None:
            self._calm_since = at
        calm_for = at - self._calm_since
        if self.paused_since is not None:
            if calm_for < self.calm_for_s:
                return self._step(False)
            self.waited_s += at - self.paused_since
            self.paused_since = None
            self.games_at_once = 1
            self._quiet_since = at
            return self._step(True)
        ramp = self.games_at_once < self.concurrency and at - self._quiet_since >= self.ramp_after_s
        if ramp and calm_for >= min(self.ramp_after_s, self.calm_for_s):
            self.games_at_once += 1
            self._quiet_since = at
            return self._step(True)
        return self._step(False)

    def waited_now(self, at_s: float) -> float:
        """Time paused in all, the current pause included."""
        return self.waited_s + (at_s - self.paused_since if self.paused_since is not None else 0.0)

    def status(self, at_s: float) -> str:
        """One line: "host busy: 2 → 1 game at once; paused 3 min; CPU pressure 48 %"."""
        text = f"host busy: {self.concurrency} → {self.games_at_once} game{'s' if self.games_at_once > 1 else ''}"
        text += " at once"
        if self.paused_since is not None:
            paused, limit = describe_duration(at_s - self.paused_since), describe_duration(self.max_wait_s)
            text += f"; paused {paused} (at most {limit})"
        if self.last is not None:
            text += f"; {self.last.describe()}"
        return text


def describe_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def parse_duration(text: str) -> float:
    """`--max-host-wait`: "90" or "90s", "30m", "2h" → seconds; ValueError with what is accepted."""
    value = text.strip().lower()
    units = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
    number, unit = value, "s"
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix):
            number, unit = value[: -len(suffix)], suffix
            break
    try:
        seconds = float(number) * units[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a duration: write seconds (90, 90s), minutes (30m) or hours (2h)") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{text!r} is not a duration: it must be 0 or more")
    return seconds


class HostWatch:
    """Reads the host: CPU pressure from PSI (where the kernel has it) and the referee's own timer lateness."""

    def __init__(self, psi: Path = PRESSURE_PATH) -> None:
        self.psi = psi

    def pressure_pct(self) -> float | None:
        return cpu_pressure(self.psi)

    async def lateness_ms(self, samples: int = 5, sleep_s: float = 0.001) -> float:
        """The median of how late `samples` short sleeps wake, ms: a busy host runs the referee late."""
        late = []
        for _ in range(samples):
            start = time.perf_counter()
            await trio.sleep(sleep_s)
            late.append(max(0.0, time.perf_counter() - start - sleep_s) * 1000)
        late.sort()
        return late[len(late) // 2]

    async def read(self, at_s: float) -> HostReading:
        return HostReading(at_s, self.pressure_pct(), await self.lateness_ms())
