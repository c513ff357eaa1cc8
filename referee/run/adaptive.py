"""Adaptive scheduling: play next the game pair whose result the ranking most needs, until the order is decided.

Two layers. The pairing policy (`fit`, `neighbour_confidence`, `choose_pairs`, and `continuous_pair` for a
competition that never ends) is pure arithmetic over per-pair totals, with no notion of games, numbers or a run,
so that a continuous ladder (referee/ladder/policy.py) reuses it. `Adaptive` is the `referee.run.schedule.Scheduler`
of `--format adaptive`, which turns its choices into games.

The fit: a logistic (Bradley-Terry) model on the Elo scale, a draw counting half a win, each bot given
`PRIOR_DRAWS` virtual draws against a phantom rated 0 (it keeps an unbeaten bot's rating finite and puts
a bot with no games in the middle of the pool), fitted by coordinate Newton steps (a sweep costs the number
of pairs that have met, and after the first only the bots whose rating still moves are visited, so a pool of
1,000 bots stays cheap from a warm start). The uncertainty of the order of two
bots i and j is the variance of Ri - Rj: from the inverse of the information matrix for pools of up to
`FULL_COVARIANCE_BOTS`, and above that from its diagonal with a first-order correction for their games
against each other. The confidence that i is above j is Phi((Ri - Rj) / sd).

The policy: rank the pool by the fit; the whole order is decided at the stated confidence (default 95 %) when
every neighbouring pair is ordered at 1 - (1 - confidence) / (bots - 1) (Bonferroni: the chances that some
neighbouring order is wrong add up to at most 1 - confidence), since the neighbours decide the whole chain.
Until then, play the neighbouring
pair whose order is least certain (the one a result moves most), skipping pairs already being played so
that several game pairs can run at once.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from referee.run.schedule import Progress, ScheduledGame, opening_at
from referee.stats.standings import FormatSummary

PRIOR_DRAWS = 1.0
DEFAULT_CONFIDENCE = 0.95
FULL_COVARIANCE_BOTS = 64
_K = math.log(10.0) / 400.0
_TOLERANCE_ELO = 1e-3
_MAX_SWEEPS = 500

Pair = tuple[str, str]
"""Two bot names, in sorted order."""


@dataclass(frozen=True)
class PairTotal:
    """What two bots did against each other: games, and the points of the first (by name) of them."""

    games: int
    points: float


@dataclass(frozen=True)
class Fit:
    """Ratings (Elo, the phantom at 0) and what the ordering needs of their uncertainty."""

    ratings: dict[str, float]
    information: dict[str, float]
    """The diagonal of the information matrix, per bot."""
    covariance: dict[Pair, float] | None
    """Full covariances of neighbouring pairs (small pools), else None."""
    variances: dict[str, float] | None

    def order(self, bots: Iterable[str]) -> list[str]:
        """Best first; ties by name."""
        return sorted(bots, key=lambda name: (-self.ratings[name], name))


def pair_of(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


def totals(games: Iterable[tuple[str, str, float]]) -> dict[Pair, PairTotal]:
    """Per-pair totals of (black, white, Black's points) results."""
    counts: dict[Pair, list[float]] = {}
    for black, white, points in games:
        pair = pair_of(black, white)
        entry = counts.setdefault(pair, [0, 0.0])
        entry[0] += 1
        entry[1] += points if pair[0] == black else 1.0 - points
    return {pair: PairTotal(int(games), points) for pair, (games, points) in counts.items()}


def _expected(difference_elo: float) -> float:
    return 1.0 / (1.0 + math.exp(-_K * difference_elo))


def fit(bots: Sequence[str], pairs: Mapping[Pair, PairTotal], start: Mapping[str, float] | None = None) -> Fit:
    """Fit the ratings of `bots` to the results `pairs` (pairs with another bot are left out)."""
    field = set(bots)
    neighbours: dict[str, list[tuple[str, int, float]]] = {name: [] for name in bots}
    for (a, b), total in pairs.items():
        if a in field and b in field and total.games:
            neighbours[a].append((b, total.games, total.points))
            neighbours[b].append((a, total.games, total.games - total.points))
    rating = {name: (start or {}).get(name, 0.0) for name in bots}
    # Gauss-Seidel sweeps that visit, after the first, only the bots whose rating moved and their opponents: from
    # a warm start (the last fit) a few new games touch a few bots, not the whole pool.
    opponents = {name: [other for other, _, _ in row] for name, row in neighbours.items()}
    dirty = set(bots)
    exp, minus_k = math.exp, -_K  # `_expected` written out in the inner loop: a call cost as much as its sum
    for _ in range(_MAX_SWEEPS):
        current = [name for name in bots if name in dirty]
        dirty = set()
        for name in current:
            r = rating[name]
            p0 = _expected(r)  # the phantom, rated 0
            gradient = PRIOR_DRAWS * (0.5 - p0)
            information = PRIOR_DRAWS * p0 * (1.0 - p0)
            for other, games, points in neighbours[name]:
                p = 1.0 / (1.0 + exp(minus_k * (r - rating[other])))
                gradient += points - games * p
                information += games * p * (1.0 - p)
            step = gradient / (_K * information)
            step = max(-400.0, min(400.0, step))
            rating[name] = r + step
            if abs(step) >= _TOLERANCE_ELO:
                dirty.add(name)
                dirty.update(opponents[name])
        if not dirty:
            break
    diagonal: dict[str, float] = {}
    for name in bots:
        p0 = _expected(rating[name])
        info = PRIOR_DRAWS * p0 * (1.0 - p0)
        for other, games, _ in neighbours[name]:
            p = _expected(rating[name] - rating[other])
            info += games * p * (1.0 - p)
        diagonal[name] = _K * _K * info
    covariance: dict[Pair, float] | None = None
    variances: dict[str, float] | None = None
    if len(bots) <= FULL_COVARIANCE_BOTS:
        inverse = _inverse_information(list(bots), rating, neighbours, diagonal)
        index = {name: i for i, name in enumerate(bots)}
        variances = {name: inverse[index[name]][index[name]] for name in bots}
        covariance = {
            pair_of(a, b): inverse[index[a]][index[b]] for i, a in enumerate(bots) for b in list(bots)[i + 1 :]
        }
    return Fit(rating, diagonal, covariance, variances)


def _inverse_information(
    bots: list[str],
    rating: Mapping[str, float],
    neighbours: Mapping[str, list[tuple[str, int, float]]],
    diagonal: Mapping[str, float],
) -> list[list[float]]:
    n = len(bots)
    index = {name: i for i, name in enumerate(bots)}
    matrix = [[0.0] * n for _ in range(n)]
    for name in bots:
        i = index[name]
        matrix[i][i] = diagonal[name]
        for other, games, _ in neighbours[name]:
            p = _expected(rating[name] - rating[other])
            matrix[i][index[other]] -= _K * _K * games * p * (1.0 - p)
    lower = _cholesky(matrix)
    columns = [_solve(lower, [1.0 if row == column else 0.0 for row in range(n)]) for column in range(n)]
    return [[columns[j][i] for j in range(n)] for i in range(n)]


def _cholesky(matrix: list[list[float]]) -> list[list[float]]:
    n = len(matrix)
    lower = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            total = matrix[i][j] - sum(lower[i][k] * lower[j][k] for k in range(j))
            lower[i][j] = math.sqrt(max(total, 1e-300)) if i == j else total / lower[j][j]
    return lower


def _solve(lower: list[list[float]], rhs: list[float]) -> list[float]:
    n = len(lower)
    y = [0.0] * n
    for i in range(n):
        y[i] = (rhs[i] - sum(lower[i][k] * y[k] for k in range(i))) / lower[i][i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum(lower[k][i] * x[k] for k in range(i + 1, n))) / lower[i][i]
    return x


def difference_variance(result: Fit, a: str, b: str, pairs: Mapping[Pair, PairTotal]) -> float:
    """The variance of Ra - Rb (Elo squared)."""
    if result.covariance is not None and result.variances is not None:
        return max(1e-9, result.variances[a] + result.variances[b] - 2.0 * result.covariance[pair_of(a, b)])
    ia, ib = result.information[a], result.information[b]
    total = pairs.get(pair_of(a, b))
    cross = 0.0
    if total is not None and total.games:
        p = _expected(result.ratings[a] - result.ratings[b])
        cross = _K * _K * total.games * p * (1.0 - p) / (ia * ib)
    return max(1e-9, 1.0 / ia + 1.0 / ib - 2.0 * cross)


def neighbour_confidence(
    bots: Sequence[str], pairs: Mapping[Pair, PairTotal], start: Mapping[str, float] | None = None
) -> tuple[list[str], list[tuple[str, str, float]], Fit]:
    """The order (best first) and, for each neighbouring pair in it, the confidence that the upper is above the
    lower."""
    result = fit(bots, pairs, start)
    order = result.order(bots)
    confidences = []
    for upper, lower in itertools.pairwise(order):
        sd = math.sqrt(difference_variance(result, upper, lower, pairs))
        z = (result.ratings[upper] - result.ratings[lower]) / sd
        confidences.append((upper, lower, 0.5 * math.erfc(-z / math.sqrt(2.0))))
    return order, confidences, result


def pair_threshold(confidence: float, bots: int) -> float:
    """The confidence each neighbouring order needs for the whole order of `bots` to be decided at `confidence`."""
    return 1.0 - (1.0 - confidence) / max(1, bots - 1)


def choose_pairs(
    confidences: Sequence[tuple[str, str, float]],
    *,
    busy: Iterable[Pair] = (),
    count: int = 1,
    confidence: float = DEFAULT_CONFIDENCE,
    excluded: Iterable[str] = (),
) -> list[Pair]:
    """Up to `count` neighbouring pairs to play next: the least certain first, skipping pairs being played and
    bots excluded (suspended). [] when every neighbouring order is decided (or all undecided pairs are busy)."""
    taken = set(busy)
    out = set(excluded)
    undecided = sorted((c, upper, lower) for upper, lower, c in confidences if c < confidence)
    chosen: list[Pair] = []
    for _, upper, lower in undecided:
        pair = pair_of(upper, lower)
        if pair in taken or upper in out or lower in out:
            continue
        chosen.append(pair)
        taken.add(pair)
        if len(chosen) == count:
            break
    return chosen


def continuous_pair(
    order: Sequence[str],
    confidences: Sequence[tuple[str, str, float]],
    *,
    idle: Iterable[str],
    waited: Mapping[str, int | None],
    starve_after: int,
    recent: Iterable[Pair] = (),
) -> Pair | None:
    """The next pair for a competition that never ends (a ladder), among the `idle` bots of `order` (best first,
    with its neighbouring `confidences` from `neighbour_confidence`); None when fewer than two are idle.

    1. **No bot starved**: a bot that has waited `starve_after` games or more since its last (`waited[bot]`; None:
       it never played, the longest wait of all) plays first, the longest waiting first, against its nearest idle
       neighbour in the order.
    2. **Otherwise the least certain neighbouring order** (`choose_pairs` with no confidence at which it stops:
       close or uncertain neighbours play most), skipping the `recent` pairs (just played: a pair of equals stays
       at 1/2 however often it plays, and would otherwise take every game) while another pair is open.
    3. **Otherwise** (every neighbouring pair has a side playing): the two idle bots next to each other in the
       order, among the idle ones, that waited longest.
    """
    free = set(idle)
    playing = [name for name in order if name in free]
    if len(playing) < 2:
        return None

    def wait(name: str) -> float:
        value = waited.get(name, 0)
        return math.inf if value is None else float(value)

    starved = [name for name in playing if wait(name) >= starve_after]
    if starved:
        first = max(starved, key=lambda name: (wait(name), -order.index(name)))
        at = playing.index(first)
        nearest = [playing[i] for i in (at - 1, at + 1) if 0 <= i < len(playing)]
        rank = {name: i for i, name in enumerate(order)}
        second = min(nearest, key=lambda name: (abs(rank[name] - rank[first]), rank[name]))
        return pair_of(first, second)
    busy = set(order) - free
    for skip in (set(recent), set()):
        chosen = choose_pairs(confidences, busy=skip, count=1, confidence=math.inf, excluded=busy)
        if chosen:
            return chosen[0]
    upper, lower = max(itertools.pairwise(playing), key=lambda pair: wait(pair[0]) + wait(pair[1]))
    return pair_of(upper, lower)


class Adaptive:
    """`--format adaptive --max-games N`: game pairs chosen by `choose_pairs` until the order is decided or the
    budget spent. `parallel`: game pairs in flight at once (the run's concurrency, in pairs)."""

    def __init__(
        self,
        max_games: int,
        openings: Sequence[tuple[str, ...]],
        *,
        parallel: int = 1,
        confidence: float = DEFAULT_CONFIDENCE,
    ) -> None:
        if max_games < 2:
            raise ValueError(f"--max-games must be at least 2 (one game pair), got {max_games}")
        if not 0.5 < confidence < 1.0:
            raise ValueError(f"the confidence is between 0.5 and 1, got {confidence}")
        self.max_games = max_games
        self.openings = openings
        self.parallel = max(1, parallel)
        self.confidence = confidence
        self._warm: dict[str, float] = {}  # the last fit: a start that converges in a few sweeps

    def _state(self, progress: Progress) -> tuple[list[str], list[tuple[str, str, float]], dict[Pair, PairTotal]]:
        field = set(progress.bots)
        games = [
            (g.black, g.white, progress.points[g.number])
            for g in progress.scheduled
            if g.number in progress.points and g.black in field and g.white in field
        ]
        pairs = totals(games)
        order, confidences, result = neighbour_confidence(progress.bots, pairs, self._warm)
        self._warm = result.ratings
        return order, confidences, pairs

    def next_games(self, progress: Progress) -> list[ScheduledGame]:
        if len(progress.bots) < 2:
            return []
        in_flight = progress.in_flight()
        busy = {pair_of(g.black, g.white) for g in in_flight}
        room = min(self.parallel - len(busy), (self.max_games - len(progress.scheduled)) // 2)
        if room <= 0:
            return []
        _, confidences, _ = self._state(progress)
        threshold = pair_threshold(self.confidence, len(progress.bots))
        chosen = choose_pairs(confidences, busy=busy, count=room, confidence=threshold, excluded=progress.withdrawn)
        met: dict[Pair, int] = {}
        encounters = 0
        for game in progress.scheduled:
            if game.round == 0:
                met[pair_of(game.black, game.white)] = met.get(pair_of(game.black, game.white), 0) + 1
                encounters += 1
        number = progress.next_number
        games: list[ScheduledGame] = []
        for a, b in chosen:
            k = met.get((a, b), 0)
            first, second = (a, b) if k % 2 == 0 else (b, a)
            opening = opening_at(self.openings, k)
            games.append(ScheduledGame(number, encounters, 0, first, second, opening))
            games.append(ScheduledGame(number + 1, encounters, 1, second, first, opening))
            number += 2
            encounters += 1
        return games

    def expected_total(self, progress: Progress) -> int:
        return max(len(progress.scheduled), self.max_games)

    def summary(self, progress: Progress) -> FormatSummary:
        order, confidences, _ = self._state(progress)
        threshold = pair_threshold(self.confidence, len(progress.bots))
        undecided = [f"{u} > {lo} ({100 * c:.1f}%)" for u, lo, c in confidences if c < threshold]
        decided = not undecided
        verdict = (
            f"the whole order is decided at {100 * self.confidence:g}% (every neighbouring order at"
            f" {100 * threshold:.2f}%)"
            if decided
            else f"{len(undecided)} neighbouring order(s) below {100 * threshold:.2f}%"
        )
        return FormatSummary(
            format="adaptive",
            rules=[
                "Adaptive: game pairs between the neighbours whose order is least certain, until the whole order is"
                f" decided at {100 * self.confidence:g}% or {self.max_games} games are played."
            ],
            order=order,
            undecided=undecided,
            notes=[f"{len(progress.points)} of at most {self.max_games} games played: {verdict}"],
        )
