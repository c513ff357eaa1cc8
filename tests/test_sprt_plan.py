"""SPRT planning: the calculator against hand-worked values and a simulation; the early-stop Elo correction."""

from __future__ import annotations

import math
import random
import re
import statistics
from pathlib import Path

import pytest

from referee.cli import main
from referee.stats.sprt import SprtParameters, llr_pentanomial, logistic_score, score_elo
from referee.stats.sprt_plan import OVERSHOOT, _outcome_cdf, pair_distribution, plan, simulate, stopped_elo

WIDE = SprtParameters(0, 40, 0.05, 0.05)


def test_the_calculator_matches_the_brownian_formulas_worked_by_hand() -> None:
    # At the midpoint of the bounds the LLR has no drift: pass 1/2 and E[t] = -a b / sigma^2 pairs.
    parameters = SprtParameters(0, 5, 0.05, 0.05)
    s0, s1 = 0.5, logistic_score(5)
    s = (s0 + s1) / 2
    pair_variance = (s - 0.4 / 4 - s * s) / 2
    sigma2 = (s1 - s0) ** 2 / pair_variance
    b = math.log(0.95 / 0.05) + OVERSHOOT * math.sqrt(sigma2)
    midpoint = plan(parameters, score_elo(s), 0.4)
    assert midpoint.pass_probability == pytest.approx(0.5, abs=1e-6)
    assert midpoint.expected_pairs == pytest.approx(b * b / sigma2, rel=1e-6)
    assert midpoint.expected_games == pytest.approx(25380, abs=1)  # `sprt-calc --elo1 5 --draw-ratio 0.4`
    # At elo0 and elo1 the chances are about alpha and 1 - beta (a little safer for the overshoot), symmetric.
    low, high = plan(parameters, 0, 0.4), plan(parameters, 5, 0.4)
    assert 0.045 < low.pass_probability < 0.05 and high.pass_probability == pytest.approx(1 - low.pass_probability)
    assert low.expected_games == pytest.approx(high.expected_games, rel=1e-3)
    # More draws, less variance per game: fewer games for the same answer.
    assert plan(parameters, 0, 0.6).expected_games < plan(parameters, 0, 0.2).expected_games
    with pytest.raises(ValueError, match="cannot go with a draw ratio"):
        plan(parameters, 800, 0.5)


def test_pairs_of_independent_games_have_the_convolved_distribution() -> None:
    pairs = pair_distribution(0, 0.5)
    assert pairs == pytest.approx((1 / 16, 1 / 4, 3 / 8, 1 / 4, 1 / 16))
    assert sum(p * x for p, x in zip(pairs, (0, 0.25, 0.5, 0.75, 1), strict=True)) == pytest.approx(0.5)


@pytest.mark.parametrize("elo", [0.0, 40.0])
def test_the_calculator_agrees_with_the_simulated_test(elo: float) -> None:
    expected = plan(WIDE, elo, 0.3)
    result = simulate(WIDE, elo, 0.3, 200, seed=3)
    assert result.unfinished == 0
    assert abs(result.pass_rate - expected.pass_probability) < 0.05  # 200 runs: 3.5 standard errors at 5%
    assert result.mean_games == pytest.approx(expected.expected_games, rel=0.15)


def test_the_outcome_distribution_is_a_distribution() -> None:
    a, b = -3.0, 3.0
    for mu in (-0.5, 0.0, 0.2):
        values = [_outcome_cdf(10.0, y, mu, a, b) for y in (-3.0, -1.0, 0.0, 1.0, 2.999)]
        assert values == sorted(values) and values[0] >= 0 and values[-1] <= 1
        assert _outcome_cdf(10.0, b, mu, a, b) >= values[-1]
    # No bounds in reach: the motion at t is normal with mean mu t, variance t.
    assert _outcome_cdf(4.0, 1.0, 0.1, -80, 80) == pytest.approx(statistics.NormalDist(0.4, 2).cdf(1.0), abs=1e-9)


def test_the_elo_of_a_stopped_test_is_less_biased_than_the_plain_estimate() -> None:
    rng = random.Random(5)
    weights = pair_distribution(20, 0.3)
    a, b = math.log(0.05 / 0.95), math.log(0.95 / 0.05)
    plain, corrected = [], []
    for _ in range(60):
        counts = [0, 0, 0, 0, 0]
        while a < llr_pentanomial(counts, 0, 40) < b:
            counts[rng.choices(range(5), weights)[0]] += 1
        n = sum(counts)
        mean = sum(c * x for c, x in zip(counts, (0, 0.25, 0.5, 0.75, 1), strict=True)) / n
        plain.append(score_elo(min(max(mean, 1e-3), 1 - 1e-3)))
        estimate = stopped_elo(WIDE, counts)
        assert estimate is not None and estimate.low < estimate.elo < estimate.high
        corrected.append(estimate.elo)
    assert abs(statistics.median(corrected) - 20) < abs(statistics.median(plain) - 20)


def test_the_command_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sprt-calc", "--elo0", "0", "--elo1", "5", "--draw-ratio", "0.4", "--elo", "2.5"]) == 0
    out = capsys.readouterr().out
    assert "+2.50    50.0%           25380" in out
    assert main(["sprt-calc", "--draw-ratio", "1.5"]) == 2


def test_after_a_decided_sprt_both_estimates_are_shown_each_labelled() -> None:
    from referee.stats.sprt_plan import early_stop_lines

    lines = early_stop_lines(WIDE, [2, 10, 30, 40, 18], (60.0, 30.0, 90.0))
    assert lines[0] == "Elo, plain estimate (as if the number of games had been fixed): +60.0 [+30.0, +90.0]"
    assert lines[1].startswith("Elo, corrected for the SPRT's early stop (median-unbiased): +")


def test_a_decided_match_prints_both_estimates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seeded = "python -m sample_bots.random --seed 1"  # reproducible: its moves mix the seed with the game id
    argv = ["match", "--black", "greedy", "--white", seeded, "--size", "4x4", "--sprt", "elo0=0", "elo1=300"]
    assert main([*argv, "--games", "200", "--openings-plies", "2", "-j", "1", "--out", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"SPRT: H[01] accepted after \d+ games", out), out
    assert "Elo, plain estimate (as if the number of games had been fixed): " in out
    assert "Elo, corrected for the SPRT's early stop (median-unbiased): " in out
