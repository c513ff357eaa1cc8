"""Who plays next on the ladder: the adaptive scheduler's pairing (referee/run/adaptive.py) over the ladder's games.

`Pairing` keeps what the adaptive policy reads, the per-pair totals of every game between versions (`add` after
each game), and `next_pairing(field, idle, waited, rng)` picks one game at a time (the runner asks again whenever
a slot is free):

1. **The fit**: `adaptive.neighbour_confidence` ranks the field (the playable versions) by a Bradley-Terry fit of
   those totals, with how sure each neighbouring order is (a version with no games sits in the middle, its
   order as unsure as can be). Warm-started from the last fit: a new game moves a few ratings a little.
2. **The pair**: `adaptive.continuous_pair`: a version that waited `STARVE_FACTOR` x (versions in the field)
   ladder games since its last one, or never played, plays first against its nearest neighbour (no entry
   starved: on average a version plays every field/2 games, so this is twice that); otherwise the least certain
   neighbouring order among the idle versions (more games where ratings are close or uncertain; the pairs of
   the last field/4 games are skipped while another is open, so that two equals do not take every game).
3. **Colours**: the version that had Black less often against this opponent recently gets Black (`rng` on a tie).

The ratings shown (Glicko-2, referee/ladder/rating.py) are the ladder's own; the fit only decides the pairing.
Pure: no clocks, files or randomness of its own (the caller passes `rng`), so it is tested with plain data.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from referee.run.adaptive import Pair, PairTotal, continuous_pair, neighbour_confidence, pair_of

__all__ = ["STARVE_FACTOR", "Pairing", "Pairs"]

STARVE_FACTOR = 1.0
"""A version that waited this many times the field's size in ladder games (twice the average wait) plays next."""


@dataclass(frozen=True)
class Pairing:
    black: str
    white: str


class Pairs:
    """The per-pair totals of the ladder's games (version keys), and the adaptive policy over them."""

    def __init__(self, games: Iterable[tuple[str, str, float]] = ()) -> None:
        self.totals: dict[Pair, PairTotal] = {}
        self._warm: dict[str, float] = {}
        for black, white, points in games:
            self.add(black, white, points)

    def add(self, black: str, white: str, black_points: float) -> None:
        """A scored game: `black_points` is 1, 1/2 or 0."""
        pair = pair_of(black, white)
        old = self.totals.get(pair, PairTotal(0, 0.0))
        points = black_points if pair[0] == black else 1.0 - black_points
        self.totals[pair] = PairTotal(old.games + 1, old.points + points)

    def order(self, field: Sequence[str]) -> list[str]:
        """The field ranked by the pairing's fit, best first."""
        order, _, result = neighbour_confidence(sorted(field), self.totals, self._warm)
        self._warm = result.ratings
        return order

    def next_pairing(
        self,
        field: Sequence[str],
        idle: Iterable[str],
        waited: Mapping[str, int | None],
        rng: random.Random,
        *,
        recent: Sequence[tuple[str, str]] = (),
    ) -> Pairing | None:
        """The next game among the `idle` versions of `field` (every playable version), or None.

        `waited[key]`: ladder games since that version's last game (None: it never played); `recent`: the last
        games' (black, white), oldest first (the repeat guard and the colours).
        """
        if len(field) < 2:
            return None
        order, confidences, result = neighbour_confidence(sorted(field), self.totals, self._warm)
        self._warm = result.ratings
        just_played = [pair_of(b, w) for b, w in recent[len(recent) - max(1, len(field) // 4) :]]
        pair = continuous_pair(
            order,
            confidences,
            idle=idle,
            waited=waited,
            starve_after=max(2, round(STARVE_FACTOR * len(field))),
            recent=just_played,
        )
        if pair is None:
            return None
        a, b = pair
        a_black = sum(1 for black, white in recent if (black, white) == (a, b))
        b_black = sum(1 for black, white in recent if (black, white) == (b, a))
        a_is_black = rng.random() < 0.5 if a_black == b_black else a_black < b_black
        return Pairing(a, b) if a_is_black else Pairing(b, a)
