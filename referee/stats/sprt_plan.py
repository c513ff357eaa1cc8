"""Planning an SPRT and reading one that stopped: fishtest's calculator, a simulator, and the early-stop Elo.

Pure maths over the model of `referee.stats.sprt` (logistic Elo bounds, game pairs). The LLR of a test, in the normal
approximation every SPRT calculator uses, is a Brownian motion in the number of pairs t: per pair it moves by
(s1 - s0) / v * (x - (s0 + s1) / 2), where x is the pair's mean score, v its variance, s0 and s1 the scores of
the hypotheses. So it drifts by mu = (s1 - s0)(s - (s0 + s1)/2) / v a pair with variance sigma^2 = (s1 - s0)^2 / v,
s the true expected score, until it leaves the strip (a, b) = (ln(beta / (1 - alpha)), ln((1 - beta) / alpha)).

* `plan` (fishtest's SPRT calculator): the chance of passing (leaving at b) and the expected length, from the
  classic formulas for a Brownian motion in a strip: with h = 2 mu / sigma^2,
  P = (1 - e^(-h a)) / (e^(-h b) - e^(-h a)) and E[t] = (b P + a (1 - P)) / mu pairs, the bounds widened by
  the expected overshoot of a step (Siegmund's 0.583 sigma).
  The per-game variance is that of a trinomial game with the given draw ratio, less the square of the RMS
  opening bias (as fishtest: a pair from one opening cancels the opening's bias).
* `simulate`: the real test (`referee.stats.sprt.llr_pentanomial` after every pair, Wald's bounds) on synthetic
  pairs drawn from the same model, to check `plan` against.
* `stopped_elo`: a test that stops when its LLR crosses a bound stops more often after a lucky run, so the plain
  Elo estimate of a stopped test is biased away from the middle. As fishtest does, the corrected estimate is
  the median-unbiased one: the Elo under which the observed stop (bound and length) is the median outcome of the
  stopped Brownian motion, outcomes ordered from "H0 early" through "still running at t with LLR y" to
  "H1 early"; its 95% interval is where that outcome is the 2.5% and 97.5% point. The probabilities come from
  the method of images for the motion between two absorbing bounds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from referee.stats.sprt import (
    PENTANOMIAL_OUTCOMES,
    SprtParameters,
    llr_pentanomial,
    logistic_score,
    score_elo,
)

__all__ = ["SprtPlan", "StoppedElo", "pair_distribution", "plan", "simulate", "stopped_elo"]

_PHI = NormalDist().cdf
OVERSHOOT = 0.583
"""Siegmund's expected overshoot of a Gaussian random walk past a bound, in standard deviations of one step."""


@dataclass(frozen=True)
class SprtPlan:
    """What to expect of an SPRT at a true Elo difference."""

    pass_probability: float
    expected_games: float
    expected_pairs: float


def _bounds(parameters: SprtParameters) -> tuple[float, float]:
    return math.log(parameters.beta / (1 - parameters.alpha)), math.log((1 - parameters.beta) / parameters.alpha)


def _game_variance(score: float, draw_ratio: float, rms_bias: float) -> float:
    """The variance of one game's score that a pair-based test sees (trinomial, less the opening bias)."""
    bias = logistic_score(rms_bias) - 0.5
    variance = score - draw_ratio / 4 - score * score - bias * bias
    if variance <= 0:
        raise ValueError(
            f"a draw ratio of {draw_ratio:g} with an RMS bias of {rms_bias:g} Elo leaves no variance at this score;"
            " give a smaller draw ratio or bias"
        )
    return variance


def plan(parameters: SprtParameters, elo: float, draw_ratio: float, rms_bias: float = 0.0) -> SprtPlan:
    """The pass probability and expected length of the SPRT `parameters` when the true difference is `elo`."""
    if not 0 <= draw_ratio < 1:
        raise ValueError(f"draw ratio {draw_ratio:g}: give a share from 0 to below 1, e.g. 0.4")
    s0, s1, s = logistic_score(parameters.elo0), logistic_score(parameters.elo1), logistic_score(elo)
    if not (draw_ratio / 2 <= s <= 1 - draw_ratio / 2):
        raise ValueError(f"an Elo difference of {elo:g} cannot go with a draw ratio of {draw_ratio:g}")
    pair_variance = 2 * _game_variance(s, draw_ratio, rms_bias) / 4  # the mean of two games
    mu = (s1 - s0) * (s - (s0 + s1) / 2) / pair_variance
    sigma2 = (s1 - s0) ** 2 / pair_variance
    a, b = _bounds(parameters)
    # The LLR moves in steps, so it stops past a bound, not on it: Siegmund's correction widens the strip by
    # 0.583 standard deviations of a step (measured against `simulate`: the expected length comes out 5% short
    # without it).
    overshoot = OVERSHOOT * math.sqrt(sigma2)
    a, b = a - overshoot, b + overshoot
    h = 2 * mu / sigma2
    if abs(h * (b - a)) < 1e-9:
        probability = -a / (b - a)
        pairs = -a * b / sigma2
    else:
        exp_a, exp_b = math.exp(-h * a), math.exp(-h * b)
        probability = (1 - exp_a) / (exp_b - exp_a)
        pairs = (b * probability + a * (1 - probability)) / mu
    return SprtPlan(probability, 2 * pairs, pairs)


def pair_distribution(elo: float, draw_ratio: float) -> tuple[float, float, float, float, float]:
    """The pentanomial probabilities of a pair of independent games at `elo` with `draw_ratio` of draws."""
    s = logistic_score(elo)
    win, loss = s - draw_ratio / 2, 1 - s - draw_ratio / 2
    if win < 0 or loss < 0:
        raise ValueError(f"an Elo difference of {elo:g} cannot go with a draw ratio of {draw_ratio:g}")
    game = (loss, draw_ratio, win)
    pairs = [0.0] * 5
    for i, p in enumerate(game):
        for j, q in enumerate(game):
            pairs[i + j] += p * q
    return (pairs[0], pairs[1], pairs[2], pairs[3], pairs[4])


@dataclass(frozen=True)
class SimulatedSprt:
    """The outcome of many simulated SPRTs."""

    runs: int
    passed: int
    mean_games: float
    unfinished: int

    @property
    def pass_rate(self) -> float:
        return self.passed / self.runs


def simulate(
    parameters: SprtParameters,
    elo: float,
    draw_ratio: float,
    runs: int,
    *,
    seed: int = 1,
    max_pairs: int = 100_000,
) -> SimulatedSprt:
    """Run the real test (the GSPRT on pentanomial pairs, LLR after every pair) `runs` times on synthetic pairs."""
    rng = random.Random(seed)
    weights = pair_distribution(elo, draw_ratio)
    a, b = _bounds(parameters)
    passed = unfinished = 0
    total_pairs = 0
    outcomes = range(5)
    for _ in range(runs):
        counts = [0, 0, 0, 0, 0]
        pairs = 0
        while True:
            counts[rng.choices(outcomes, weights)[0]] += 1
            pairs += 1
            value = llr_pentanomial(counts, parameters.elo0, parameters.elo1)
            if value >= b:
                passed += 1
                break
            if value <= a:
                break
            if pairs >= max_pairs:
                unfinished += 1
                break
        total_pairs += pairs
    return SimulatedSprt(runs, passed, 2 * total_pairs / runs, unfinished)


# -- the Brownian motion between two absorbing bounds (unit variance) -----------------------------------------


def _images(t: float, width: float) -> range:
    terms = math.ceil(4 * math.sqrt(t) / width) + 3
    return range(-terms, terms + 1)


def _alive_below(y: float, t: float, mu: float, a: float, b: float) -> float:
    """P(the motion has left neither bound by time t and is at most y then), drift mu, from 0 (a < 0 < b)."""
    width = b - a
    root = math.sqrt(t)
    total = 0.0
    for k in _images(t, width):
        for centre, sign in ((2 * k * width, 1.0), (2 * b + 2 * k * width, -1.0)):
            # The image's mass between a and y, tilted by the drift (Girsanov: e^(mu x - mu^2 t / 2)).
            exponent = mu * centre
            if exponent > 700:
                continue
            mass = _PHI((y - centre - mu * t) / root) - _PHI((a - centre - mu * t) / root)
            total += sign * math.exp(exponent) * mass
    return min(1.0, max(0.0, total))


def _left_at_b_before(t: float, mu: float, a: float, b: float) -> float:
    """P(the motion has left by the upper bound b by time t)."""
    if abs(mu) < 1e-7:
        mu = 1e-7  # the formula's limit; this close to it the difference is far below what matters
    width = b - a
    denominator = 1 - math.exp(-2 * mu * width)
    ever = (1 - math.exp(2 * mu * a)) / denominator
    # Alive at t, it still leaves by b later with probability (1 - e^(-2 mu (x - a))) / denominator; the
    # e^(-2 mu x) part of that, integrated against the density, is the survival of the motion with drift -mu.
    later = (_alive_below(b, t, mu, a, b) - math.exp(2 * mu * a) * _alive_below(b, t, -mu, a, b)) / denominator
    return min(1.0, max(0.0, ever - later))


def _outcome_cdf(t: float, y: float, mu: float, a: float, b: float) -> float:
    """P(the outcome is at most "alive at t with value y"), outcomes ordered: left at a (earlier is lower), alive
    at t (by value), left at b (later is lower)."""
    if y >= b:
        return 1.0 - _left_at_b_before(t, mu, a, b)
    left_at_a = 1.0 - _alive_below(b, t, mu, a, b) - _left_at_b_before(t, mu, a, b)
    return min(1.0, max(0.0, left_at_a + _alive_below(y, t, mu, a, b)))


@dataclass(frozen=True)
class StoppedElo:
    """The Elo of a stopped SPRT, corrected for the early stop: the median-unbiased estimate and a 95% interval."""

    elo: float
    low: float
    high: float


def stopped_elo(parameters: SprtParameters, pairs: Sequence[int]) -> StoppedElo | None:
    """The Elo corrected for the early stop of an SPRT that ended with these pentanomial counts (None when there
    are too few pairs, or no spread in them, to say)."""
    n = sum(pairs)
    if n < 2:
        return None
    mean = sum(c * x for c, x in zip(pairs, PENTANOMIAL_OUTCOMES, strict=True)) / n
    variance = sum(c * (x - mean) ** 2 for c, x in zip(pairs, PENTANOMIAL_OUTCOMES, strict=True)) / n
    if variance <= 0:
        return None
    s0, s1 = logistic_score(parameters.elo0), logistic_score(parameters.elo1)
    sigma = (s1 - s0) / math.sqrt(variance)  # the LLR's standard deviation per pair
    a, b = _bounds(parameters)
    value = min(max(llr_pentanomial(list(pairs), parameters.elo0, parameters.elo1), a), b)
    # In units of the LLR's standard deviation: drift m per pair, bounds a / sigma and b / sigma.
    lo_b, hi_b, y = a / sigma, b / sigma, value / sigma

    def drift_for(quantile: float) -> float:
        low, high = -2.0, 2.0
        while _outcome_cdf(n, y, low, lo_b, hi_b) < quantile:
            low *= 2
        while _outcome_cdf(n, y, high, lo_b, hi_b) > quantile:
            high *= 2
        for _ in range(60):
            middle = (low + high) / 2
            if _outcome_cdf(n, y, middle, lo_b, hi_b) > quantile:
                low = middle
            else:
                high = middle
        return (low + high) / 2

    def elo_of(drift: float) -> float:
        # drift (per pair, in sigma units) = (s1 - s0)(s - (s0 + s1)/2) / v / sigma
        score = (s0 + s1) / 2 + drift * sigma * variance / (s1 - s0)
        return score_elo(min(max(score, 1e-6), 1 - 1e-6))

    return StoppedElo(elo_of(drift_for(0.5)), elo_of(drift_for(0.975)), elo_of(drift_for(0.025)))


def early_stop_lines(parameters: SprtParameters, pairs: Sequence[int], plain: tuple[float, float, float]) -> list[str]:
    """The plain Elo estimate and the one corrected for the early stop, each labelled, for a decided SPRT."""
    corrected = stopped_elo(parameters, pairs)
    elo, low, high = plain
    lines = [f"Elo, plain estimate (as if the number of games had been fixed): {elo:+.1f} [{low:+.1f}, {high:+.1f}]"]
    if corrected is not None:
        lines.append(
            f"Elo, corrected for the SPRT's early stop (median-unbiased): {corrected.elo:+.1f}"
            f" [{corrected.low:+.1f}, {corrected.high:+.1f}]"
        )
    return lines
