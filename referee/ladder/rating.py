"""Glicko-2 ratings: a rating, its uncertainty (the rating deviation, RD) and a volatility, updated after every game.

Pure arithmetic, from Glickman's "Example of the Glicko-2 system" (http://www.glicko.net/glicko/glicko2.pdf):
steps 1 to 8, with the Illinois algorithm of step 5 for the new volatility. The ladder treats each game as a
rating period of its own (an online update), so an entry's rating and ± move after every game it plays. An
entry that does not play keeps its RD (the ladder plays every entry all the time; `age` widens it by hand).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_RATING",
    "DEFAULT_RD",
    "DEFAULT_VOLATILITY",
    "SCALE",
    "TAU",
    "Rating",
    "age",
    "expected_score",
    "rate",
]

DEFAULT_RATING = 1500.0
DEFAULT_RD = 350.0
DEFAULT_VOLATILITY = 0.06
TAU = 0.5
"""The system constant: how much the volatility may change (Glickman suggests 0.3 to 1.2)."""
SCALE = 173.7178
"""Glicko-2's scale: a Glicko rating of 1500 + SCALE * mu."""
EPSILON = 1e-6
"""The convergence tolerance of step 5."""


@dataclass(frozen=True)
class Rating:
    """A player's rating, its deviation (the ± of one standard deviation) and its volatility, on the Glicko scale."""

    rating: float = DEFAULT_RATING
    rd: float = DEFAULT_RD
    volatility: float = DEFAULT_VOLATILITY

    @property
    def mu(self) -> float:
        return (self.rating - DEFAULT_RATING) / SCALE

    @property
    def phi(self) -> float:
        return self.rd / SCALE


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _e(mu: float, mu_j: float, phi_j: float) -> float:
    return 1.0 / (1.0 + math.exp(-_g(phi_j) * (mu - mu_j)))


def expected_score(player: Rating, opponent: Rating) -> float:
    """The player's expected score against the opponent (0 to 1), the opponent's uncertainty included."""
    return _e(player.mu, opponent.mu, opponent.phi)


def rate(player: Rating, results: Sequence[tuple[Rating, float]], tau: float = TAU) -> Rating:
    """The player's rating after one rating period with these games: (opponent's rating before it, score 0/0.5/1).

    With no games, only the deviation grows (step 6 alone).
    """
    mu, phi, sigma = player.mu, player.phi, player.volatility
    if not results:
        return Rating(player.rating, math.sqrt(phi * phi + sigma * sigma) * SCALE, sigma)
    # Steps 3 and 4: the estimated variance and the improvement.
    inverse_v = 0.0
    improvement = 0.0
    for opponent, score in results:
        g = _g(opponent.phi)
        expected = _e(mu, opponent.mu, opponent.phi)
        inverse_v += g * g * expected * (1.0 - expected)
        improvement += g * (score - expected)
    v = 1.0 / inverse_v
    delta = v * improvement
    # Step 5: the new volatility (Illinois algorithm).
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex) ** 2) - (x - a) / (tau * tau)

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > EPSILON:
        c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = c, f_c
    new_sigma = math.exp(big_a / 2.0)
    # Steps 6 to 8.
    phi_star = math.sqrt(phi * phi + new_sigma * new_sigma)
    new_phi = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    new_mu = mu + new_phi * new_phi * improvement
    return Rating(DEFAULT_RATING + SCALE * new_mu, new_phi * SCALE, new_sigma)


def age(player: Rating, periods: float) -> Rating:
    """The rating after `periods` rating periods without games: its deviation widened, capped at DEFAULT_RD."""
    phi = math.sqrt(player.phi**2 + periods * player.volatility**2)
    return Rating(player.rating, min(DEFAULT_RD, phi * SCALE), player.volatility)
