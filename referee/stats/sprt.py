"""The statistics of a regression test: the SPRT that stops a match once it has an answer, and the Elo estimate.

Pure: plain functions over counts of results, no I/O, no clock. The model is the one fishtest uses for chess
engines with logistic Elo bounds, the *generalized* sequential probability ratio test (GSPRT); fastchess uses
a close approximation of the same LLR, N/2 ln(sigma0^2 / sigma1^2) with sigma_i^2 = sum_k p_k (x_k - s_i)^2:

* A game scores x = 1 (win), 1/2 (draw) or 0 (loss) for the first bot: the *trinomial* model. When games are
  played in pairs from one opening with colours swapped, the unit is the pair and x is its mean score, one of
  0, 1/4, 1/2, 3/4, 1: the *pentanomial* model, which also captures how the two games of a pair depend on each
  other (the opening, the colour advantage), so its variance is the honest one. `alternator match` uses it.
* The hypotheses are about the expected score s of one unit: H0: s = s0 = L(elo0) and H1: s = s1 = L(elo1),
  with the logistic curve L(elo) = 1 / (1 + 10^(-elo/400)).
* From N units with empirical frequencies p_k of the outcomes x_k (an outcome never seen is given a tiny
  count, 1e-3, as fishtest does, so that a run of identical results still has finite evidence), the
  generalized log-likelihood ratio compares the best distribution of results each hypothesis allows:

      LLR = N * sum_k p_k ln(q1_k / q0_k)

  where q_i is the maximum-likelihood distribution on the same outcomes with mean s_i. It has the form
  q_i,k = p_k / (1 + theta_i (x_k - s_i)), theta_i the root of sum_k p_k (x_k - s_i) / (1 + theta_i (x_k - s_i)) = 0
  (Michel Van den Bergh's support_MLE_multinomial note; fishtest's `LLRcalc.MLE_expected`); the left
  side falls strictly with theta, so bisection finds it. With two outcomes
  (wins and losses only) q_i is Bernoulli(s_i) and this is Wald's classic
  LLR = W ln(s1/s0) + L ln((1-s1)/(1-s0)).
* Wald's bounds: the match stops with H1 accepted when LLR >= ln((1 - beta) / alpha), with H0 accepted when
  LLR <= ln(beta / (1 - alpha)); alpha is the chance of accepting H1 when H0 is true, beta the chance of
  accepting H0 when H1 is true.

The Elo estimate is the logistic inverse of the mean score, elo = -400 log10(1/s - 1), with a 95% interval
mapped through the same curve from s +- 1.96 sigma / sqrt(N) (pentanomial sigma when the games are paired).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

TRINOMIAL_OUTCOMES = (0.0, 0.5, 1.0)
"""The score of one game for the first bot: loss, draw, win (the order of trinomial counts)."""

PENTANOMIAL_OUTCOMES = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The mean score of a pair of games for the first bot: 0, 1/2, 1, 3/2 or 2 points out of 2 (the order of
pentanomial counts)."""

REGULARIZATION = 1e-3
"""The count given to an outcome never seen (fishtest's `regularize`): keeps the variance above zero."""

MAX_ELO = 2000  # a score of 0.99999: beyond it a test has nothing to tell

Z95 = NormalDist().inv_cdf(0.975)  # 1.959963...


def logistic_score(elo: float) -> float:
    """The expected score of a bot `elo` points stronger than its opponent: 1 / (1 + 10^(-elo/400))."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def score_elo(score: float) -> float:
    """The Elo difference whose expected score is `score` (0 < score < 1): -400 log10(1/score - 1)."""
    if not 0.0 < score < 1.0:
        raise ValueError(f"a score of {score} has no finite Elo difference; give one strictly between 0 and 1")
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass(frozen=True)
class SprtParameters:
    """The question a match answers: is the first bot about `elo1` stronger (H1), or at most `elo0` (H0)?"""

    elo0: float = 0.0
    elo1: float = 5.0
    alpha: float = 0.05  # the chance of accepting H1 when H0 is true (a false "stronger")
    beta: float = 0.05  # the chance of accepting H0 when H1 is true (a missed improvement)

    def __post_init__(self) -> None:
        for name in ("elo0", "elo1"):
            value = getattr(self, name)
            if not (math.isfinite(value) and abs(value) <= MAX_ELO):
                raise ValueError(f"{name} {value:g} must be an Elo difference from -{MAX_ELO} to {MAX_ELO}")
        if not self.elo1 > self.elo0:
            raise ValueError(
                f"elo1 ({self.elo1:g}) must be greater than elo0 ({self.elo0:g}): H1 says the bot is stronger by"
                " elo1, H0 by at most elo0, e.g. elo0=0 elo1=5"
            )
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 < value < 0.5):
                raise ValueError(f"{name} {value:g} must be between 0 and 0.5 (an error rate), e.g. {name}=0.05")

    @property
    def lower_bound(self) -> float:
        """H0 is accepted when the LLR falls to this: ln(beta / (1 - alpha))."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper_bound(self) -> float:
        """H1 is accepted when the LLR rises to this: ln((1 - beta) / alpha)."""
        return math.log((1.0 - self.beta) / self.alpha)


def llr(counts: Sequence[float], outcomes: Sequence[float], elo0: float, elo1: float) -> float:
    """The GSPRT log-likelihood ratio of H1 (logistic `elo1`) against H0 (`elo0`) after `counts[k]` units
    scoring `outcomes[k]` (see the module docstring for the formula). 0 when there are no results."""
    if len(counts) != len(outcomes):
        raise ValueError(f"{len(counts)} counts for {len(outcomes)} outcomes")
    if any(c < 0 for c in counts):
        raise ValueError(f"counts cannot be negative: {list(counts)}")
    units = sum(counts)
    if units == 0:
        return 0.0
    regularized = [c if c > 0 else REGULARIZATION for c in counts]
    total = sum(regularized)
    pdf = [c / total for c in regularized]
    # ln(q1_k / q0_k) = ln(1 + theta0 (x_k - s0)) - ln(1 + theta1 (x_k - s1))
    log0 = _mle_log_denominators(pdf, outcomes, logistic_score(elo0))
    log1 = _mle_log_denominators(pdf, outcomes, logistic_score(elo1))
    return units * sum(p * (a - b) for p, a, b in zip(pdf, log0, log1, strict=True))


def _mle_log_denominators(pdf: Sequence[float], outcomes: Sequence[float], mean: float) -> list[float]:
    """ln(1 + theta (x_k - mean)) for the theta that makes q_k = p_k / (1 + theta (x_k - mean)) the
    maximum-likelihood distribution with that mean (every p_k > 0, min x < mean < max x)."""
    d = [x - mean for x in outcomes]
    if not min(d) < 0 < max(d):
        raise ValueError(f"a mean of {mean} is not strictly inside the outcomes {list(outcomes)}")
    # 1 + theta d_k > 0 for every k bounds theta; f(theta) = sum p_k d_k / (1 + theta d_k) falls from +inf to -inf
    # (f' = -sum p_k d_k^2 / (1 + theta d_k)^2 < 0). Newton's steps from 0, kept inside the bracket of the root (a
    # step that would leave it halves the bracket instead): 5-10 steps to the last bit, where halving alone took
    # ~55 (an LLR after every game pair of a simulated test: 13 times faster).
    low, high = -1.0 / max(d), -1.0 / min(d)
    terms = list(zip(pdf, d, strict=True))
    theta = 0.0
    for _ in range(200):
        f = slope = 0.0
        for p, dk in terms:
            ratio = dk / (1.0 + theta * dk)
            f += p * ratio
            slope += p * ratio * ratio  # -f'
        if f > 0:
            low = theta
        elif f < 0:
            high = theta
        else:
            break
        step = theta + f / slope
        if not low < step < high:
            step = (low + high) / 2
        if step == theta:
            break
        theta = step
    return [math.log1p(theta * dk) for dk in d]


def llr_trinomial(wins: int, draws: int, losses: int, elo0: float, elo1: float) -> float:
    """The LLR from single games (wins, draws, losses of the first bot)."""
    return llr((losses, draws, wins), TRINOMIAL_OUTCOMES, elo0, elo1)


def llr_pentanomial(counts: Sequence[int], elo0: float, elo1: float) -> float:
    """The LLR from game pairs: `counts[j]` pairs in which the first bot scored j/2 points (j = 0..4)."""
    if len(counts) != 5:
        raise ValueError(f"a pentanomial has 5 counts (pairs scoring 0, 1/2, 1, 3/2, 2), got {len(counts)}")
    return llr(counts, PENTANOMIAL_OUTCOMES, elo0, elo1)


def pentanomial(points: Sequence[float]) -> tuple[int, int, int, int, int]:
    """Pair up per-game points of the first bot (games 1+2, 3+4, ...) and count pairs by their total, 0 to 2
    in half points. A last game without its partner is left out."""
    counts = [0] * 5
    for i in range(0, len(points) - 1, 2):
        total = points[i] + points[i + 1]
        index = round(2 * total)
        if not (0 <= index <= 4 and math.isclose(index, 2 * total)):
            raise ValueError(
                f"games {i + 1} and {i + 2} score {points[i]} and {points[i + 1]}: each must be 0, 1/2 or 1"
            )
        counts[index] += 1
    return counts[0], counts[1], counts[2], counts[3], counts[4]


class Verdict(enum.StrEnum):
    H0 = "H0"  # the first bot is not stronger by elo1 (it is about elo0 or weaker)
    H1 = "H1"  # the first bot is stronger by about elo1


@dataclass(frozen=True)
class SprtStatus:
    """Where the test stands: the LLR between its two bounds, and the verdict once it crosses one."""

    parameters: SprtParameters
    llr: float
    verdict: Verdict | None

    @property
    def lower_bound(self) -> float:
        return self.parameters.lower_bound

    @property
    def upper_bound(self) -> float:
        return self.parameters.upper_bound


def sprt_status(parameters: SprtParameters, pairs: Sequence[int]) -> SprtStatus:
    """The test after the game pairs counted in `pairs` (a pentanomial, see `pentanomial`)."""
    value = llr_pentanomial(pairs, parameters.elo0, parameters.elo1)
    verdict = None
    if value >= parameters.upper_bound:
        verdict = Verdict.H1
    elif value <= parameters.lower_bound:
        verdict = Verdict.H0
    return SprtStatus(parameters, value, verdict)


@dataclass(frozen=True)
class EloEstimate:
    """The first bot's Elo advantage from its mean score, with a 95% interval (None where not finite)."""

    score: float | None  # mean score per game, 0..1 (None: no results)
    elo: float | None  # None when the score is 0 or 1 (every game lost or won) or there are no results
    lower: float | None  # 95% interval; None when unbounded on that side
    upper: float | None

    @property
    def margin(self) -> float | None:
        """Half the width of the interval, as `+12.3 +- 8.1` prints it."""
        if self.lower is None or self.upper is None:
            return None
        return (self.upper - self.lower) / 2


def elo_estimate(counts: Sequence[float], outcomes: Sequence[float]) -> EloEstimate:
    """The Elo estimate from `counts[k]` units scoring `outcomes[k]` (raw counts: no regularization)."""
    units = sum(counts)
    if units == 0:
        return EloEstimate(None, None, None, None)
    score = sum(c * x for c, x in zip(counts, outcomes, strict=True)) / units
    variance = sum(c * (x - score) ** 2 for c, x in zip(counts, outcomes, strict=True)) / units
    spread = Z95 * math.sqrt(variance / units)

    def elo_or_none(s: float) -> float | None:
        return score_elo(s) if 0.0 < s < 1.0 else None

    return EloEstimate(score, elo_or_none(score), elo_or_none(score - spread), elo_or_none(score + spread))


# --- the figures testers read (cutechess, fastchess, fishtest) -------------------------------------------

NELO_SCALE = 800.0 / math.log(10.0)
"""nElo per unit of (score - 1/2) / sigma: fishtest's and fastchess's normalization (347.4...)."""


def pair_moments(pairs: Sequence[int]) -> tuple[float, float] | None:
    """The mean and the variance of a pair's mean score (0, 1/4, ..., 1) over the pentanomial `pairs`;
    None when there are no pairs."""
    n = sum(pairs)
    if n == 0:
        return None
    mean = sum(c * x for c, x in zip(pairs, PENTANOMIAL_OUTCOMES, strict=True)) / n
    variance = sum(c * (x - mean) ** 2 for c, x in zip(pairs, PENTANOMIAL_OUTCOMES, strict=True)) / n
    return mean, variance


def likelihood_of_superiority(pairs: Sequence[int]) -> float | None:
    """LOS, as fastchess computes it from the pentanomial: the probability that the first bot is the stronger,
    Phi((s - 1/2) / sqrt(var / N)). 1 or 0 when every pair scored the same and not 1/2; None without pairs."""
    moments = pair_moments(pairs)
    if moments is None:
        return None
    mean, variance = moments
    if variance == 0.0:
        return 0.5 if mean == 0.5 else (1.0 if mean > 0.5 else 0.0)
    return NormalDist().cdf((mean - 0.5) / math.sqrt(variance / sum(pairs)))


def normalized_elo(pairs: Sequence[int]) -> tuple[float, float] | None:
    """nElo and its 95% margin from the pentanomial, as fishtest and fastchess compute it:
    nElo = (s - 1/2) / sqrt(2 var) * 800 / ln 10, with var the variance of a pair's mean score (sqrt(2 var)
    is then the spread of one game). None without pairs or when every pair scored the same."""
    moments = pair_moments(pairs)
    if moments is None or moments[1] == 0.0:
        return None
    mean, variance = moments
    sigma_game = math.sqrt(2.0 * variance)
    nelo = (mean - 0.5) / sigma_game * NELO_SCALE
    margin = Z95 * math.sqrt(variance / sum(pairs)) / sigma_game * NELO_SCALE
    return nelo + 0.0, margin


def draw_ratio(wins: int, draws: int, losses: int) -> float | None:
    """Drawn games over all games, as cutechess prints it; None with no games."""
    games = wins + draws + losses
    return draws / games if games else None


@dataclass(frozen=True)
class MatchStatistics:
    """Everything a tester reads about the first bot against the second, from the games counted.

    Wins, draws and losses count every counted game; the Elo estimate, nElo, LOS and the SPRT count the
    finished pairs (the pentanomial), as fastchess does.
    """

    wins: int
    draws: int
    losses: int
    pairs: tuple[int, int, int, int, int]
    elo: EloEstimate
    nelo: tuple[float, float] | None
    los: float | None
    draw_ratio: float | None
    sprt: SprtStatus | None

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float | None:
        """The first bot's points per game."""
        return (self.wins + self.draws / 2) / self.games if self.games else None


def match_statistics(
    wins: int,
    draws: int,
    losses: int,
    pairs: Sequence[int],
    sprt: SprtParameters | None,
    status: SprtStatus | None = None,
) -> MatchStatistics:
    """The statistics of a two-bot run from its counts (`status`: the SPRT over these pairs, if known)."""
    penta = (pairs[0], pairs[1], pairs[2], pairs[3], pairs[4])
    return MatchStatistics(
        wins=wins,
        draws=draws,
        losses=losses,
        pairs=penta,
        elo=elo_estimate(penta, PENTANOMIAL_OUTCOMES),
        nelo=normalized_elo(penta),
        los=likelihood_of_superiority(penta),
        draw_ratio=draw_ratio(wins, draws, losses),
        sprt=status if status is not None else sprt_status(sprt, penta) if sprt is not None else None,
    )


@dataclass(frozen=True)
class CountedGame:
    """One scored game of a two-bot run, in commit order: its pair (from 0) and the first bot's points."""

    number: int
    pair: int
    points: float


class PairCounter:
    """Counts the games of a two-bot run as they are committed: a pair counts when its second game is in
    (pairs may finish out of order), the SPRT is evaluated after every counted pair, and once it has a verdict
    nothing more is counted, so a game committed after it (a race at the end) never changes a figure.

    Pure and incremental: one LLR per pair. Fed the same games in the same (commit) order, it gives the same
    figures, which is how the verdict is reproduced from the database alone (`count_in_order`).
    """

    def __init__(self, sprt: SprtParameters | None) -> None:
        self.sprt = sprt
        self.wins = self.draws = self.losses = 0
        self.pairs = [0, 0, 0, 0, 0]
        self.counted: list[int] = []
        self.llr_history: list[float] = []
        """The LLR after each counted pair (with an SPRT): the curve the report and the live page draw."""
        self.status: SprtStatus | None = sprt_status(sprt, self.pairs) if sprt is not None else None
        self._open: dict[int, float] = {}

    @property
    def verdict(self) -> Verdict | None:
        return None if self.status is None else self.status.verdict

    def add(self, game: CountedGame) -> bool:
        """Count one game; True when it completed a pair (False too once the SPRT has its verdict)."""
        if self.verdict is not None:
            return False
        if game.points not in (0.0, 0.5, 1.0):
            raise ValueError(f"game {game.number}: {game.points} points; a game scores 0, 1/2 or 1")
        self.counted.append(game.number)
        if game.points == 1.0:
            self.wins += 1
        elif game.points == 0.5:
            self.draws += 1
        else:
            self.losses += 1
        if game.pair not in self._open:
            self._open[game.pair] = game.points
            return False
        self.pairs[round(2 * (self._open.pop(game.pair) + game.points))] += 1
        if self.sprt is not None:
            self.status = sprt_status(self.sprt, self.pairs)
            self.llr_history.append(self.status.llr)
        return True

    def statistics(self) -> MatchStatistics:
        return match_statistics(self.wins, self.draws, self.losses, self.pairs, self.sprt, self.status)


def count_in_order(games: Iterable[CountedGame], sprt: SprtParameters | None) -> tuple[MatchStatistics, list[int]]:
    """The statistics of `games` counted in the order given (see `PairCounter`), and the numbers of the games
    counted (one at a time: `games` may be a stream of a run's 50,000)."""
    counter = PairCounter(sprt)
    for game in games:
        counter.add(game)
    return counter.statistics(), counter.counted
