"""The SPRT and Elo maths of referee/stats/sprt.py: hand-computed values, exact properties, limits."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.stats.sprt import (
    PENTANOMIAL_OUTCOMES,
    TRINOMIAL_OUTCOMES,
    SprtParameters,
    Verdict,
    elo_estimate,
    llr,
    llr_pentanomial,
    llr_trinomial,
    logistic_score,
    pentanomial,
    score_elo,
    sprt_status,
)


def test_logistic_score_and_its_inverse() -> None:
    assert logistic_score(0) == 0.5
    assert logistic_score(400) == pytest.approx(10 / 11)  # 1 / (1 + 10^-1)
    assert logistic_score(-400) == pytest.approx(1 / 11)
    assert score_elo(0.75) == pytest.approx(400 * math.log10(3))  # 190.85
    for elo in (-700.0, -5.0, 0.0, 35.5, 900.0):
        assert score_elo(logistic_score(elo)) == pytest.approx(elo)
    with pytest.raises(ValueError, match="no finite Elo"):
        score_elo(1.0)


def test_wald_bounds() -> None:
    p = SprtParameters(elo0=0, elo1=5, alpha=0.05, beta=0.05)
    assert p.upper_bound == pytest.approx(math.log(19)) == pytest.approx(2.944, abs=1e-3)
    assert p.lower_bound == pytest.approx(-math.log(19))
    q = SprtParameters(elo0=0, elo1=5, alpha=0.1, beta=0.2)
    assert q.upper_bound == pytest.approx(math.log(0.8 / 0.1))
    assert q.lower_bound == pytest.approx(math.log(0.2 / 0.9))


def test_wins_and_losses_only_give_walds_classic_llr() -> None:
    # With two outcomes the distribution with mean s is Bernoulli(s): LLR = W ln(s1/s0) + L ln((1-s1)/(1-s0)).
    # 6 wins, 4 losses, elo 0 against 100: s0 = 0.5, s1 = 1/(1+10^-0.25) = 0.6400650
    # LLR = 6 ln(1.2801300) + 4 ln(0.7198700) = 6 * 0.2469636 + 4 * (-0.3287210) = 1.4817816 - 1.3148840 = 0.1668976
    # (the unseen draws get a count of 1e-3, which moves it by 4e-5).
    assert llr_trinomial(6, 0, 4, 0, 100) == pytest.approx(0.16690, abs=1e-4)
    # The same from pairs scoring 2 or 0 points (pentanomial), and for another table against a formula.
    assert llr_pentanomial((4, 0, 0, 0, 6), 0, 100) == pytest.approx(0.16690, abs=1e-4)
    s0, s1 = logistic_score(-20), logistic_score(30)
    walds = 17 * math.log(s1 / s0) + 9 * math.log((1 - s1) / (1 - s0))
    assert llr_trinomial(17, 0, 9, -20, 30) == pytest.approx(walds, abs=1e-3)


def test_llr_of_a_table_with_draws_by_hand() -> None:
    # 6 wins, 2 draws, 2 losses; H0: elo 0 (s0 = 0.5), H1: elo 100 (s1 = 0.6400650).
    # A distribution with mean s is (q_W, q_D, q_L) = (s - q/2, q, 1 - s - q/2); the log-likelihood
    # 6 ln q_W + 2 ln q + 2 ln q_L is largest where -3/q_W + 2/q - 1/q_L = 0.
    # H0: q_W = q_L = 0.5 - q/2 gives 2/q = 4/(0.5 - q/2), q = 0.2: (0.4, 0.2, 0.4),
    #     8 ln 0.4 + 2 ln 0.2 = -7.330326 - 3.218876 = -10.549202.
    # H1: q = 0.209905 (solved numerically): (0.535113, 0.209905, 0.254983),
    #     6 ln 0.535113 + 2 ln 0.209905 + 2 ln 0.254983 = -3.751662 - 3.122200 - 2.732718 = -9.606580.
    # LLR = -9.606580 + 10.549202 = 0.94262 (the rounding of the q's leaves 4e-4).
    assert llr_trinomial(6, 2, 2, 0, 100) == pytest.approx(0.9422, abs=1e-3)
    # The same maximization by a ternary search over q, independent of the module's method.
    assert llr_trinomial(6, 2, 2, 0, 100) == pytest.approx(
        _best_loglik(6, 2, 2, s1=logistic_score(100)) - _best_loglik(6, 2, 2, s1=0.5), abs=1e-9
    )
    # The same table through the generic function (counts in outcome order: loss, draw, win).
    assert llr((2, 2, 6), TRINOMIAL_OUTCOMES, 0, 100) == llr_trinomial(6, 2, 2, 0, 100)


def _best_loglik(wins: int, draws: int, losses: int, *, s1: float) -> float:
    """max over q of W ln(s - q/2) + D ln q + L ln(1 - s - q/2): the trinomial with mean s, by ternary search."""

    def loglik(q: float) -> float:
        return wins * math.log(s1 - q / 2) + draws * math.log(q) + losses * math.log(1 - s1 - q / 2)

    low, high = 1e-12, min(2 * s1, 2 * (1 - s1)) - 1e-12
    for _ in range(300):
        a, b = low + (high - low) / 3, high - (high - low) / 3
        if loglik(a) < loglik(b):
            low = a
        else:
            high = b
    return loglik(low)


def test_pairs_that_are_two_single_outcomes_agree_with_games() -> None:
    # Pairs scoring only 0, 1 or 2 points are, for the test, games lost, drawn and won (but for the 1e-3
    # given to the pair outcomes never seen).
    assert llr_pentanomial((3, 0, 4, 0, 5), 0, 50) == pytest.approx(llr_trinomial(5, 4, 3, 0, 50), abs=1e-3)


def test_near_h0_the_llr_is_van_den_berghs_approximation() -> None:
    # For s1 - s0 small compared with sigma, LLR ~ N/2 ln(sigma0^2 / sigma1^2) (fastchess's formula), where
    # sigma_i^2 = sigma^2 + (s - s_i)^2. Pairs (1, 2, 4, 2, 1): s = 1/2, sigma^2 = 2 (.1 * .5^2 + .2 * .25^2) = 0.075.
    approximation = 10 / 2 * math.log(0.075 / (0.075 + (logistic_score(5) - 0.5) ** 2))  # -0.0034501
    assert llr_pentanomial((1, 2, 4, 2, 1), 0, 5) == pytest.approx(approximation, rel=1e-3)


def test_no_results_no_evidence() -> None:
    assert llr_trinomial(0, 0, 0, 0, 5) == 0.0
    assert sprt_status(SprtParameters(), (0, 0, 0, 0, 0)).verdict is None


counts3 = st.tuples(*[st.integers(1, 60)] * 3)
counts5 = st.tuples(*[st.integers(1, 40)] * 5)
elo_pairs = st.tuples(st.floats(-300, 300), st.floats(1, 300)).map(lambda t: (t[0], t[0] + t[1]))


def _mean(counts: tuple[int, ...], outcomes: tuple[float, ...]) -> float:
    return sum(c * x for c, x in zip(counts, outcomes, strict=True)) / sum(counts)


@settings(deadline=None)  # pure arithmetic; a loaded machine must not fail it
@given(counts5, elo_pairs)
def test_the_llr_favours_the_hypothesis_the_mean_is_beyond(counts: tuple[int, ...], elos: tuple[float, float]) -> None:
    # LLR = N (D(s0) - D(s1)), D(s) the least divergence from the results of a distribution with mean s:
    # convex, zero at the observed mean, so it grows away from it on both sides.
    elo0, elo1 = elos
    s, s0, s1 = _mean(counts, PENTANOMIAL_OUTCOMES), logistic_score(elo0), logistic_score(elo1)
    value = llr_pentanomial(counts, elo0, elo1)
    if s >= s1:
        assert value > 0
    if s <= s0:
        assert value < 0


@settings(deadline=None)  # pure arithmetic; a loaded machine must not fail it
@given(counts3, elo_pairs, st.integers(2, 9))
def test_llr_grows_in_proportion_to_the_games(counts: tuple[int, ...], elos: tuple[float, float], k: int) -> None:
    # The same distribution of results over k times as many games is k times the evidence.
    scaled = tuple(k * c for c in counts)
    assert llr(scaled, TRINOMIAL_OUTCOMES, *elos) == pytest.approx(k * llr(counts, TRINOMIAL_OUTCOMES, *elos))


@settings(deadline=None)  # pure arithmetic; a loaded machine must not fail it
@given(st.integers(2, 60), st.integers(1, 60), st.integers(1, 60), st.floats(0, 300), st.floats(1, 300))
def test_a_win_instead_of_a_loss_raises_the_llr(losses: int, draws: int, wins: int, below: float, above: float) -> None:
    # With elo0 <= 0 < elo1: sigma0^2 changes by (1 - 2 s0)/N >= 0 and sigma1^2 by (1 - 2 s1)/N < 0.
    elo0, elo1 = -below, above
    before = llr_trinomial(wins, draws, losses, elo0, elo1)
    after = llr_trinomial(wins + 1, draws, losses - 1, elo0, elo1)
    assert after > before


@settings(deadline=None)  # pure arithmetic; a loaded machine must not fail it
@given(counts5, elo_pairs)
def test_swapping_the_bots_negates_the_llr(counts: tuple[int, ...], elos: tuple[float, float]) -> None:
    # The second bot's pairs are the first's reversed; "stronger by elo1" becomes "weaker by elo1".
    elo0, elo1 = elos
    mirrored = llr_pentanomial(tuple(reversed(counts)), -elo1, -elo0)
    assert mirrored == pytest.approx(-llr_pentanomial(counts, elo0, elo1), abs=1e-9)


def test_all_wins_accept_h1_after_a_finite_number_of_pairs() -> None:
    # Every pair won 2-0: the likeliest distribution with mean s puts s on "won" and the rest on "lost",
    # so each pair adds about ln(s1/s0): 0.01427 for [0, 5], crossing ln(19) = 2.944 after about 206 pairs.
    params = SprtParameters(elo0=0, elo1=5)
    expected = math.log(19) / math.log(logistic_score(5) / 0.5)
    first = next(n for n in range(1, 1000) if sprt_status(params, (0, 0, 0, 0, n)).verdict is not None)
    assert sprt_status(params, (0, 0, 0, 0, first)).verdict is Verdict.H1
    assert expected - 1 <= first <= expected + 2
    # With a bigger elo1 it takes a few pairs: ln(L(200)/0.5) = 0.418 a pair against ln(9) = 2.197.
    loose = SprtParameters(elo0=0, elo1=200, alpha=0.1, beta=0.1)
    winning = [sprt_status(loose, (0, 0, 0, 0, n)) for n in range(1, 8)]
    assert [s.verdict for s in winning] == [None] * 5 + [Verdict.H1] * 2
    assert winning[0].llr == pytest.approx(math.log(logistic_score(200) / 0.5), rel=1e-2)
    # All losses accept H0: ln((1 - L(200)) / 0.5) = -0.733 a pair against ln(1/9) = -2.197: after 3 pairs.
    losing = [sprt_status(loose, (n, 0, 0, 0, 0)) for n in range(1, 5)]
    assert [s.verdict for s in losing] == [None] * 2 + [Verdict.H0] * 2
    assert losing[0].llr == pytest.approx(math.log((1 - logistic_score(200)) / 0.5), rel=1e-2)


def test_one_even_pair_is_not_a_verdict() -> None:
    # A single 1-1 pair has no variance; the 1e-3 given to unseen outcomes keeps its evidence finite and
    # modest (a distribution with mean L(200) must move about half the pairs to 2 points: ln 0.48 a pair).
    loose = SprtParameters(elo0=0, elo1=200, alpha=0.1, beta=0.1)
    assert sprt_status(loose, (0, 0, 1, 0, 0)).verdict is None
    assert sprt_status(loose, (0, 0, 1, 0, 0)).llr == pytest.approx(math.log(0.48), abs=0.02)


def test_an_even_score_drifts_to_h0_when_h1_says_stronger() -> None:
    params = SprtParameters(elo0=0, elo1=5)
    block = (1, 2, 4, 2, 1)  # 10 pairs with a mean of exactly 1/2
    values = [llr_pentanomial(tuple(k * c for c in block), 0, 5) for k in range(1, 1000)]
    assert all(b < a < 0 for a, b in itertools.pairwise(values))
    # The evidence is linear in the pairs, so H0 comes after ln(19) / |LLR of one block| blocks (about 854).
    blocks = math.ceil(-math.log(19) / values[0])
    assert 800 < blocks < 900
    assert sprt_status(params, tuple(blocks * c for c in block)).verdict is Verdict.H0
    assert sprt_status(params, tuple((blocks - 1) * c for c in block)).verdict is None
    # elo0 < 0 = elo1 (a non-regression test): an even score is H1's own value, so it drifts the other way.
    assert llr_pentanomial(tuple(50 * c for c in block), -5, 0) > 0


def test_pairing_the_games() -> None:
    assert pentanomial([1, 1, 0, 1, 0.5, 0.5, 0, 0, 1]) == (1, 0, 2, 0, 1)  # the last game has no partner
    assert pentanomial([0.5, 1, 0, 0.5]) == (0, 1, 0, 1, 0)
    assert pentanomial([]) == (0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="games 1 and 2"):
        pentanomial([0.3, 1])


def test_the_elo_estimate_by_hand() -> None:
    # 5 wins, 4 draws, 3 losses: s = 7/12 = 0.583333
    # var = (5 (5/12)^2 + 4 (1/12)^2 + 3 (7/12)^2) / 12 = (125 + 4 + 147) / 144 / 12 = 276/1728 = 0.159722
    # s +- 1.959964 * sqrt(0.159722 / 12) = 0.583333 +- 0.226122 = (0.357211, 0.809455)
    estimate = elo_estimate((3, 4, 5), TRINOMIAL_OUTCOMES)
    assert estimate.score == pytest.approx(7 / 12)
    assert estimate.elo == pytest.approx(-400 * math.log10(12 / 7 - 1))  # +58.45
    assert estimate.lower == pytest.approx(-400 * math.log10(1 / 0.357211 - 1), abs=0.01)  # -102.06
    assert estimate.upper == pytest.approx(-400 * math.log10(1 / 0.809455 - 1), abs=0.01)  # +251.28
    assert estimate.upper is not None and estimate.lower is not None
    assert estimate.margin == pytest.approx((estimate.upper - estimate.lower) / 2)
    # A perfect score has no finite Elo; nothing played has no estimate at all.
    assert elo_estimate((0, 0, 0, 0, 3), PENTANOMIAL_OUTCOMES).elo is None
    assert elo_estimate((0, 0, 0, 0, 0), PENTANOMIAL_OUTCOMES).score is None
    # Near 100% the interval is open above.
    assert elo_estimate((0, 0, 1, 0, 3), PENTANOMIAL_OUTCOMES).upper is None


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"elo0": 5, "elo1": 5}, "elo1 (5) must be greater than elo0 (5)"),
        ({"elo0": 0, "elo1": -3}, "must be greater than elo0"),
        ({"alpha": 0}, "alpha 0 must be between 0 and 0.5"),
        ({"beta": 0.7}, "beta 0.7 must be between 0 and 0.5"),
        ({"alpha": math.nan}, "alpha nan"),
        ({"elo1": 5000}, "elo1 5000 must be an Elo difference from -2000 to 2000"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, float], words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        SprtParameters(**kwargs)


# --- the figures testers read, against hand-worked examples ---------------------------------------------


def test_los_nelo_and_draw_ratio_by_hand() -> None:
    from referee.stats.sprt import NELO_SCALE, draw_ratio, likelihood_of_superiority, normalized_elo, pair_moments

    # Pentanomial [0, 0, 2, 0, 2]: pair means 1/2, 1/2, 1, 1 -> s = 3/4, var = 4 * (1/4)^2 / 4 = 1/16.
    penta = (0, 0, 2, 0, 2)
    assert pair_moments(penta) == (0.75, 0.0625)
    # LOS = Phi((s - 1/2) / sqrt(var / N)) = Phi(0.25 / 0.125) = Phi(2) = 0.977250
    los = likelihood_of_superiority(penta)
    assert los == pytest.approx(0.9772499, abs=1e-6)
    # nElo = (s - 1/2) / sqrt(2 var) * 800 / ln 10 = 0.25 / 0.353553 * 347.4356 = 245.67
    nelo = normalized_elo(penta)
    assert nelo is not None
    assert pytest.approx(347.43558552) == NELO_SCALE
    assert nelo[0] == pytest.approx(0.25 / math.sqrt(0.125) * 347.43558552, rel=1e-9)
    assert nelo[0] == pytest.approx(245.67, abs=0.01)
    # margin = 1.96 sqrt(var / N) / sqrt(2 var) * 347.44 = 1.959964 / sqrt(8) * 347.4356 = 240.76
    assert nelo[1] == pytest.approx(1.959964 / math.sqrt(8) * 347.43558552, rel=1e-6)
    # Draw ratio: drawn games over games, as cutechess prints it.
    assert draw_ratio(5, 2, 3) == 0.2
    assert draw_ratio(0, 0, 0) is None


def test_even_and_one_sided_pentanomials() -> None:
    from referee.stats.sprt import likelihood_of_superiority, normalized_elo

    even = (1, 2, 4, 2, 1)
    assert likelihood_of_superiority(even) == 0.5
    nelo = normalized_elo(even)
    assert nelo is not None and nelo[0] == 0.0 and math.copysign(1, nelo[0]) == 1  # +0.0, never -0.0
    assert likelihood_of_superiority((0, 0, 0, 0, 3)) == 1.0  # no spread: certain
    assert likelihood_of_superiority((3, 0, 0, 0, 0)) == 0.0
    assert likelihood_of_superiority((0, 0, 3, 0, 0)) == 0.5
    assert normalized_elo((0, 0, 0, 0, 3)) is None  # no spread, no normalization
    assert likelihood_of_superiority((0, 0, 0, 0, 0)) is None


def test_pairs_count_when_both_games_are_in_whatever_the_order() -> None:
    from referee.stats.sprt import CountedGame, PairCounter, count_in_order

    # Games 1-2 are pair 0, 3-4 pair 1. Commit order: 3, 1, 4, 2 (out of order).
    games = [CountedGame(3, 1, 1.0), CountedGame(1, 0, 0.5), CountedGame(4, 1, 1.0), CountedGame(2, 0, 0.0)]
    counter = PairCounter(None)
    assert [counter.add(g) for g in games] == [False, False, True, True]
    assert counter.pairs == [0, 1, 0, 0, 1]  # pair 0: 1/2 point; pair 1: 2 points
    stats, counted = count_in_order(games, None)
    assert (stats.wins, stats.draws, stats.losses) == (2, 1, 1)
    assert stats.pairs == (0, 1, 0, 0, 1) and counted == [3, 1, 4, 2]
    assert stats.score == 0.625 and stats.draw_ratio == 0.25


def test_counting_stops_at_the_verdict_so_a_late_commit_changes_nothing() -> None:
    from referee.stats.sprt import CountedGame, SprtParameters, count_in_order

    sprt = SprtParameters(elo0=0, elo1=200, alpha=0.1, beta=0.1)
    wins = [CountedGame(n, (n - 1) // 2, 1.0) for n in range(1, 41)]
    stats, counted = count_in_order(wins, sprt)
    assert stats.sprt is not None and stats.sprt.verdict is Verdict.H1
    decided_after = len(counted)
    assert decided_after % 2 == 0 and decided_after < 40
    # The same games with one more commit after the verdict: the same figures.
    again, _ = count_in_order([*wins[:decided_after], CountedGame(99, 49, 0.0)], sprt)
    assert again == stats
