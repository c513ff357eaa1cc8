"""Who plays next on the ladder: a pure pairing policy over the entries' ratings, uncertainty and recent play.

`next_pairing(candidates, rng)` picks one game at a time (the runner asks again whenever a slot is free):

1. **The first player: the one that waited longest, weighted by its uncertainty.** Each idle entry's claim is
   `(waited + 1) * rd / RD_FLOOR`, where `waited` is how many ladder games were played since its last game (an entry
   that never played waits for ever: it goes first). Every entry's claim grows while it waits and only its own
   games reset it, and its RD is bounded below, so no entry is starved; an uncertain entry (new, or a new version)
   is chosen up to DEFAULT_RD / RD_FLOOR times as often as a settled one.
2. **The opponent: the most informative game.** For each other idle entry, the expected information of the game is
   `p (1 - p) * (rd_a² + rd_b²)` (the Fisher information of a logistic game, scaled by the variance the result can
   remove): largest when the two are close (p near 1/2) and uncertain. A pair played recently is discounted
   (`1 / (1 + recent)`), so near neighbours do not play only each other.
3. **Colours**: the entry that has had Black less often against this opponent recently gets Black (chosen by `rng`
   on a tie).

Pure: no clocks, files or randomness of its own (the caller passes `rng`), so it is tested with plain data.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["RD_FLOOR", "Candidate", "Pairing", "information", "next_pairing"]

RD_FLOOR = 30.0
"""The RD below which an entry is not treated as more settled (its claim to a game stops shrinking)."""


@dataclass(frozen=True)
class Candidate:
    """An entry the policy may pair: its key, rating and RD (Glicko scale), and how long it has waited."""

    key: str
    rating: float
    rd: float
    waited: int | None
    """Ladder games played since this entry's last game; None: it has never played."""


@dataclass(frozen=True)
class Pairing:
    black: str
    white: str


def _expected(rating: float, opponent: float, opponent_rd: float) -> float:
    q = math.log(10) / 400
    g = 1 / math.sqrt(1 + 3 * (q * opponent_rd) ** 2 / math.pi**2)
    return 1 / (1 + 10 ** (-g * (rating - opponent) / 400))


def information(a: Candidate, b: Candidate) -> float:
    """The expected information of a game between `a` and `b`: p (1 - p) (rd_a² + rd_b²)."""
    p = _expected(a.rating, b.rating, math.hypot(a.rd, b.rd))
    return p * (1 - p) * (a.rd**2 + b.rd**2)


def claim(candidate: Candidate) -> float:
    """How strongly `candidate` asks to play next (see the module's docstring); infinite if it never played."""
    if candidate.waited is None:
        return math.inf
    return (candidate.waited + 1) * max(candidate.rd, RD_FLOOR) / RD_FLOOR


def next_pairing(
    candidates: Sequence[Candidate],
    rng: random.Random,
    *,
    recent_pairs: Mapping[frozenset[str], int] | None = None,
    recent_blacks: Mapping[tuple[str, str], int] | None = None,
) -> Pairing | None:
    """The next game among the idle `candidates`, or None when fewer than two are idle.

    `recent_pairs`: games each pair played recently (a discount); `recent_blacks[(a, b)]`: of those, games `a` had
    Black against `b` (to alternate colours).
    """
    if len(candidates) < 2:
        return None
    pairs = recent_pairs or {}
    blacks = recent_blacks or {}
    order = list(candidates)
    rng.shuffle(order)  # ties broken at random, not by name
    first = max(order, key=lambda c: (claim(c), c.rd))
    others = [c for c in order if c.key != first.key]

    def value(other: Candidate) -> float:
        return information(first, other) / (1 + pairs.get(frozenset((first.key, other.key)), 0))

    second = max(others, key=value)
    first_black = blacks.get((first.key, second.key), 0)
    second_black = blacks.get((second.key, first.key), 0)
    black_is_first = rng.random() < 0.5 if first_black == second_black else first_black < second_black
    return Pairing(first.key, second.key) if black_is_first else Pairing(second.key, first.key)
