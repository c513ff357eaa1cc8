"""SPSA tuning of declared options, as fishtest and OpenBench do it: the schedules, the update, the state.

Simultaneous perturbation stochastic approximation: at iteration k every parameter is pushed by +c_k or -c_k
(a random sign per parameter, the *flip*), the bot with theta + c_k*flip plays the bot with theta - c_k*flip for
some game pairs, and theta moves toward the winner: theta_i += a_k / c_k_i * result * flip_i, where result is
the plus side's wins minus losses. The gains follow Spall's schedules as fishtest sets them from what a user
can picture: per parameter, the step at the end `c_end` and the learning rate at the end `r_end`
(a_end = r_end * c_end^2), then c_k = c_end * (N / (k + 1))^gamma and a_k = a_end * ((A + N) / (A + k + 1))^alpha
with N iterations, A = `stability` * N, alpha 0.602 and gamma 0.101. Values are clamped to the parameter's bounds;
an int option is sent rounded.

Pure and deterministic: the flips of iteration k come from (seed, k) alone, so an iteration interrupted by
`kill -9` is played again with the same perturbation (and, its games being in its own run directory, resumes
where it stopped). `TuneState` is the whole state, written after every iteration (`save_state`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "SpsaParameter",
    "SpsaSettings",
    "TuneState",
    "flips",
    "gains",
    "option_values",
    "perturbed",
    "update",
]


class SpsaParameter(BaseModel):
    """One tuned option: its start, bounds and the gains at the end of the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The option's name, as the bot declares it.")
    start: float = Field(description="The value to start from.")
    min: float = Field(description="The smallest value tried.")
    max: float = Field(description="The largest value tried.")
    c_end: float = Field(gt=0, description="The perturbation at the end of the run, in the option's units.")
    r_end: float = Field(default=0.002, gt=0, description="The learning rate at the end (a_end = r_end * c_end^2).")
    integer: bool = Field(default=False, description="Send the value rounded (an int option).")

    @model_validator(mode="after")
    def _bounds(self) -> SpsaParameter:
        if not self.min <= self.start <= self.max:
            raise ValueError(
                f"parameter {self.name!r}: start {self.start:g} is not within [{self.min:g}, {self.max:g}]"
            )
        return self


class SpsaSettings(BaseModel):
    """The run's schedule: iterations, game pairs per iteration, Spall's exponents and stability constant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    iterations: int = Field(ge=1, description="Iterations N.")
    pairs: int = Field(
        default=2, ge=1, description="Game pairs per iteration (each from one opening, colours swapped)."
    )
    alpha: float = Field(default=0.602, gt=0, description="Exponent of the learning-rate schedule.")
    gamma: float = Field(default=0.101, gt=0, description="Exponent of the perturbation schedule.")
    stability: float = Field(default=0.1, ge=0, description="A as a share of N (fishtest: 0.1).")
    seed: int = Field(default=1, description="Seed of the flips and the openings.")


@dataclass(frozen=True)
class Gains:
    c: float  # this iteration's perturbation
    r: float  # this iteration's a_k / c_k^2, so that the step is r * c * result


def gains(parameter: SpsaParameter, settings: SpsaSettings, k: int) -> Gains:
    """The perturbation and learning rate of `parameter` at iteration `k` (0-based)."""
    n = settings.iterations
    big_a = settings.stability * n
    c = parameter.c_end * (n / (k + 1)) ** settings.gamma
    a_end = parameter.r_end * parameter.c_end**2
    a = a_end * ((big_a + n) / (big_a + k + 1)) ** settings.alpha
    return Gains(c, a / (c * c))


def flips(names: Sequence[str], settings: SpsaSettings, k: int) -> dict[str, int]:
    """The +1/-1 perturbation signs of iteration `k`: from (seed, k) only, so a restart repeats them."""
    rng = random.Random(f"spsa:{settings.seed}:{k}")
    return {name: rng.choice((-1, 1)) for name in names}


def _clamp(parameter: SpsaParameter, value: float) -> float:
    return min(parameter.max, max(parameter.min, value))


def perturbed(
    parameters: Sequence[SpsaParameter], theta: Mapping[str, float], settings: SpsaSettings, k: int
) -> tuple[dict[str, float], dict[str, float]]:
    """The plus and minus sides' values at iteration `k`, within the bounds."""
    signs = flips([p.name for p in parameters], settings, k)
    plus, minus = {}, {}
    for parameter in parameters:
        step = gains(parameter, settings, k).c * signs[parameter.name]
        plus[parameter.name] = _clamp(parameter, theta[parameter.name] + step)
        minus[parameter.name] = _clamp(parameter, theta[parameter.name] - step)
    return plus, minus


def option_values(parameters: Sequence[SpsaParameter], values: Mapping[str, float]) -> dict[str, float | int]:
    """Values as sent to the bot: an int option rounded."""
    return {p.name: round(values[p.name]) if p.integer else values[p.name] for p in parameters}


def update(
    parameters: Sequence[SpsaParameter], theta: Mapping[str, float], settings: SpsaSettings, k: int, result: float
) -> dict[str, float]:
    """theta after iteration `k`, whose plus side scored `result` (wins minus losses) against the minus side."""
    signs = flips([p.name for p in parameters], settings, k)
    moved = {}
    for parameter in parameters:
        g = gains(parameter, settings, k)
        moved[parameter.name] = _clamp(parameter, theta[parameter.name] + g.r * g.c * result * signs[parameter.name])
    return moved


class IterationRecord(BaseModel):
    """One finished iteration."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int
    plus: dict[str, float]
    minus: dict[str, float]
    wins: int
    draws: int
    losses: int
    theta: dict[str, float] = Field(description="theta after this iteration.")


class TuneState(BaseModel):
    """Everything a tuning run has done: theta, the iterations so far, and the settings it was started with."""

    model_config = ConfigDict(extra="forbid")

    settings: SpsaSettings
    parameters: list[SpsaParameter]
    theta: dict[str, float]
    history: list[IterationRecord] = Field(default_factory=list)

    @property
    def next_iteration(self) -> int:
        return len(self.history)

    @classmethod
    def start(cls, settings: SpsaSettings, parameters: Sequence[SpsaParameter]) -> TuneState:
        return cls(settings=settings, parameters=list(parameters), theta={p.name: p.start for p in parameters})

    def same_run(self, settings: SpsaSettings, parameters: Sequence[SpsaParameter]) -> list[str]:
        """What differs from a run with these settings and parameters (empty: the same run, so resume it)."""
        changes = []
        if self.settings != settings:
            changes.append(f"settings: were {self.settings.model_dump()}, now {settings.model_dump()}")
        if self.parameters != list(parameters):
            changes.append("parameters: " + json.dumps([p.model_dump() for p in self.parameters]) + " before")
        return changes

    def finish_iteration(
        self, k: int, plus: dict[str, float], minus: dict[str, float], score: tuple[int, int, int]
    ) -> None:
        wins, draws, losses = score
        self.theta = update(self.parameters, self.theta, self.settings, k, wins - losses)
        self.history.append(
            IterationRecord(k=k, plus=plus, minus=minus, wins=wins, draws=draws, losses=losses, theta=dict(self.theta))
        )


def svg_plot(state: TuneState, width: int = 640, height: int = 240) -> str:
    """Each parameter's path over the iterations, scaled to its bounds, as a small SVG file."""
    colours = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
    n = max(1, state.settings.iterations)
    left, right, top, bottom = 40, 10, 20, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif"'
        ' font-size="11">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
        f'<text x="{left}" y="{height - 8}">iteration 0</text>',
        f'<text x="{width - right}" y="{height - 8}" text-anchor="end">{n}</text>',
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">max</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end">min</text>',
    ]
    for index, parameter in enumerate(state.parameters):
        span = parameter.max - parameter.min or 1.0
        values = [parameter.start, *(record.theta[parameter.name] for record in state.history)]
        points = " ".join(
            f"{left + plot_w * i / n:.1f},{top + plot_h * (1 - (v - parameter.min) / span):.1f}"
            for i, v in enumerate(values)
        )
        colour = colours[index % len(colours)]
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        label = f"{parameter.name}: {parameter.start:g} -> {values[-1]:.3g} [{parameter.min:g}, {parameter.max:g}]"
        parts.append(f'<text x="{left + 6}" y="{top + 14 + 14 * index}" fill="{colour}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def describe(state: TuneState, record: IterationRecord) -> str:
    """One progress line for an iteration."""
    values = ", ".join(f"{name}={value:.4g}" for name, value in record.theta.items())
    return (
        f"iteration {record.k + 1}/{state.settings.iterations}: plus {record.wins}-{record.losses}-{record.draws}"
        f" (W-L-D); {values}"
    )
