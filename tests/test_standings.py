"""Standings: points, ranks, crosstable, losses by kind, the Elo fit and its margins, renderers, files, schema."""

from __future__ import annotations

import csv
import io
import math
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.rules import Result
from referee.record import Termination
from referee.stats.standings import (
    LOSS_KINDS,
    Anchor,
    BotStanding,
    ColourRecord,
    ScoredGame,
    Standings,
    compute_standings,
    parse_anchor,
    to_csv,
    to_markdown,
    to_text,
    write_standings,
)

K = math.log(10) / 400  # log-odds per Elo point
TINY_PRIOR = 1e-6  # practically the pure maximum-likelihood fit


def games(black: str, white: str, result: Result, count: int = 1, termination: str = "normal") -> list[ScoredGame]:
    return [ScoredGame(black, white, result, Termination(termination))] * count


def by_name(standings: Standings) -> dict[str, BotStanding]:
    return {bot.name: bot for bot in standings.bots}


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


# A small hand-scored tournament used by several tests.
#   A-B 1-0 (A black wins)          A: 1     B: 0
#   B-A 1/2                         A: 1/2   B: 1/2
#   A-C 0-1 on time (A forfeits)    A: 0     C: 1
#   C-B 1-0, B crashed              C: 1     B: 0
#   B-C 1-0                         B: 1     C: 0
SMALL = [
    ScoredGame("A", "B", "1-0"),
    ScoredGame("B", "A", "1/2-1/2"),
    ScoredGame("A", "C", "0-1", Termination.TIME),
    ScoredGame("C", "B", "1-0", Termination.CRASH),
    ScoredGame("B", "C", "1-0"),
]


def test_points_games_and_score_by_hand() -> None:
    s = compute_standings(SMALL, ["A", "B", "C"])
    rows = by_name(s)
    assert (rows["A"].games, rows["A"].wins, rows["A"].draws, rows["A"].losses, rows["A"].points) == (3, 1, 1, 1, 1.5)
    assert (rows["B"].games, rows["B"].wins, rows["B"].draws, rows["B"].losses, rows["B"].points) == (4, 1, 1, 2, 1.5)
    assert (rows["C"].games, rows["C"].wins, rows["C"].draws, rows["C"].losses, rows["C"].points) == (3, 2, 0, 1, 2.0)
    assert rows["A"].score_pct == pytest.approx(50.0)
    assert rows["B"].score_pct == pytest.approx(37.5)
    assert rows["C"].score_pct == pytest.approx(200 / 3)
    # C leads on points; A and B tie on 1.5 and the higher Elo goes first.
    assert rows["C"].rank == 1
    a_elo, b_elo = rows["A"].elo, rows["B"].elo
    assert a_elo is not None and b_elo is not None
    assert (rows["A"].rank, rows["B"].rank) == ((2, 3) if a_elo > b_elo else (3, 2))
    assert [bot.rank for bot in s.bots] == [1, 2, 3]


def test_crosstable_and_totals_by_hand() -> None:
    s = compute_standings(SMALL, ["A", "B", "C"])
    cell = {(a, b): (c.points, c.games) for a, row in s.crosstable.items() for b, c in row.items()}
    assert cell == {
        ("A", "B"): (1.5, 2),
        ("B", "A"): (0.5, 2),
        ("A", "C"): (0.0, 1),
        ("C", "A"): (1.0, 1),
        ("B", "C"): (1.0, 2),
        ("C", "B"): (1.0, 2),
    }
    assert list(s.crosstable) == [bot.name for bot in s.bots]  # rows in rank order
    t = s.totals
    assert (t.games, t.black_wins, t.white_wins, t.draws, t.forfeits) == (5, 3, 1, 1, 2)


def test_losses_by_kind_come_from_the_forfeiting_side() -> None:
    extra = [
        ScoredGame("C", "A", "1-0", Termination.ILLEGAL_MOVE),
        ScoredGame("A", "C", "1-0", Termination.UNRESPONSIVE),
    ]
    s = compute_standings([*SMALL, *extra], ["A", "B", "C"])
    rows = by_name(s)
    assert rows["A"].losses_by_kind == {
        "normal": 0, "time": 1, "illegal_move": 1, "protocol": 0, "crash": 0, "unresponsive": 0
    }  # fmt: skip
    assert rows["B"].losses_by_kind["normal"] == 1 and rows["B"].losses_by_kind["crash"] == 1
    assert rows["C"].losses_by_kind["normal"] == 1 and rows["C"].losses_by_kind["unresponsive"] == 1
    for bot in s.bots:
        assert list(bot.losses_by_kind)[: len(LOSS_KINDS)] == list(LOSS_KINDS)
        assert sum(bot.losses_by_kind.values()) == bot.losses
    forfeit_losses = {name: row.losses - row.losses_by_kind["normal"] for name, row in rows.items()}
    assert forfeit_losses == {"A": 2, "B": 1, "C": 1}
    assert s.totals.forfeits == 4


def test_an_unknown_termination_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="termination 'stalled' is not one of normal, time"):
        ScoredGame("A", "C", "1-0", "stalled")  # type: ignore[arg-type]


def test_tied_bots_share_a_rank() -> None:
    s = compute_standings(
        [*games("A", "B", "1-0"), *games("B", "A", "1-0"), *games("C", "A", "1/2-1/2"), *games("A", "C", "1/2-1/2")],
        ["A", "B", "C"],
    )
    assert [(bot.name, bot.rank) for bot in s.bots] == [("A", 1), ("B", 2), ("C", 2)]  # B, C: 1 point, same Elo
    even = compute_standings([*games("A", "B", "1-0"), *games("B", "A", "1-0")], ["A", "B"])
    assert [bot.rank for bot in even.bots] == [1, 1]
    assert all(bot.elo is not None and str(bot.elo) != "-0.0" for bot in even.bots)


def test_tie_on_points_broken_by_elo() -> None:
    # A and B both score 1 from one win, but B beat C (who beat D twice) while A beat D: B rates higher.
    results = [
        *games("A", "D", "1-0"),
        *games("B", "C", "1-0"),
        *games("C", "D", "1-0", 2),
    ]
    s = compute_standings(results, ["A", "B", "C", "D"])
    assert [bot.name for bot in s.bots] == ["C", "B", "A", "D"]
    assert [bot.points for bot in s.bots] == [2, 1, 1, 0]
    rows = by_name(s)
    assert rows["B"].elo is not None and rows["A"].elo is not None
    assert rows["B"].elo > rows["A"].elo


def test_tie_on_points_and_elo_shares_the_rank_listed_by_name() -> None:
    # Mirror-image records: equal points, equal Elo (up to float noise): one rank, listed alphabetically.
    results = [*games("b", "a", "1-0"), *games("a", "b", "1-0"), *games("b", "zz", "1/2-1/2")]
    results += games("a", "zz", "1/2-1/2")
    s = compute_standings(results, ["zz", "b", "a"])
    assert [bot.name for bot in s.bots] == ["a", "b", "zz"]
    assert [bot.rank for bot in s.bots] == [1, 1, 3]


def test_two_bots_75_percent_matches_the_closed_form() -> None:
    # A scores 75% over 100 games, 50 with each colour: 40-10 as Black (who moves first), 35-15 as White. No draws:
    # nu = 0 and the model is logistic in x = k (D + F) with Black, k (D - F) with White (D = R_A - R_B, F the
    # first move's worth). Two cells, two parameters: the MLE reproduces both cells,
    #   k (D + F) = ln 4, k (D - F) = ln 7/3, so D = (ln 4 + ln 7/3) / 2k = 194.0, F = (ln 4 - ln 7/3) / 2k = 46.8.
    # Information: h1 [1 1; 1 1] + h2 [1 -1; -1 1], h1 = 50 * .8 * .2 k^2, h2 = 50 * .7 * .3 k^2, so
    # var D = (1/h1 + 1/h2) / 4 and var F the same; each rating is +-D/2 around the mean, its margin 1.96 sd(D) / 2.
    results = (
        games("A", "B", "1-0", 40)
        + games("A", "B", "0-1", 10)
        + games("B", "A", "0-1", 35)
        + games("B", "A", "1-0", 15)
    )
    s = compute_standings(results, ["A", "B"], prior_draws=TINY_PRIOR)
    a, b = s.bots
    d = (math.log(4) + math.log(7 / 3)) / (2 * K)
    f = (math.log(4) - math.log(7 / 3)) / (2 * K)
    assert (round(d, 1), round(f, 1)) == (194.0, 46.8)
    assert a.name == "A" and a.elo is not None and b.elo is not None
    assert a.elo == pytest.approx(d / 2, abs=0.01) and b.elo == pytest.approx(-d / 2, abs=0.01)
    assert s.first_move_elo == pytest.approx(f, abs=0.01)
    assert s.draw_nu == 0 and s.draw_pct_equal == 0 and s.draw_nu_interval == [0, 0]
    h1, h2 = 50 * 0.8 * 0.2 * K**2, 50 * 0.7 * 0.3 * K**2
    var = (1 / h1 + 1 / h2) / 4
    assert a.elo_margin == pytest.approx(1.96 * math.sqrt(var) / 2, rel=1e-3)
    assert b.elo_margin == pytest.approx(a.elo_margin)
    assert s.first_move_margin == pytest.approx(1.96 * math.sqrt(var), rel=1e-3)
    assert a.as_black == ColourRecord(games=50, wins=40, draws=0, losses=10)
    assert a.as_white == ColourRecord(games=50, wins=35, draws=0, losses=15)
    assert b.as_black == ColourRecord(games=50, wins=15, draws=0, losses=35)
    assert b.as_white == ColourRecord(games=50, wins=10, draws=0, losses=40)


def test_two_bots_with_the_default_prior_solve_the_one_dimensional_equation() -> None:
    # Colours balanced and the same score with each (38-12 as Black and as White): the first move is worth 0 by
    # symmetry (its prior is centred on 0 too), and with one virtual draw each against a phantom at 0 the fit
    # is R_A = -R_B = x, where 76 - 100 sigmoid(2 k x) + (0.5 - sigmoid(k x)) = 0 (the gradient for A).
    # Solved here by bisection, independently of the Newton code; the prior shrinks the MLE 400 log10(76/24) / 2.
    def gradient(x: float) -> float:
        return 76 - 100 * sigmoid(2 * K * x) + (0.5 - sigmoid(K * x))

    lo, hi = 0.0, 400.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gradient(mid) > 0 else (lo, mid)
    results = (
        games("A", "B", "1-0", 38)
        + games("A", "B", "0-1", 12)
        + games("B", "A", "0-1", 38)
        + games("B", "A", "1-0", 12)
    )
    s = compute_standings(results, ["A", "B"])
    a, b = s.bots
    assert a.elo == pytest.approx(lo, abs=1e-6)
    assert b.elo == pytest.approx(-lo, abs=1e-6)
    assert s.first_move_elo == pytest.approx(0, abs=1e-9)
    assert 99 < lo < 200 * math.log10(76 / 24)


# The hand-worked example with draws: three bots, every colour of every pair, some of each result.
# (black, white): (Black's wins, draws, White's wins)
DRAWN_TABLE: dict[tuple[str, str], tuple[int, int, int]] = {
    ("A", "B"): (6, 2, 2),
    ("B", "A"): (3, 3, 4),
    ("A", "C"): (7, 1, 2),
    ("C", "A"): (2, 2, 6),
    ("B", "C"): (5, 3, 2),
    ("C", "B"): (3, 3, 4),
}


def drawn_table_games() -> list[ScoredGame]:
    out: list[ScoredGame] = []
    for (black, white), (won, drawn, lost) in DRAWN_TABLE.items():
        out += (
            games(black, white, "1-0", won) + games(black, white, "1/2-1/2", drawn) + games(black, white, "0-1", lost)
        )
    return out


def davidson_log_likelihood(rating: dict[str, float], first_move: float, nu: float) -> float:
    """Davidson's model in its classical form (strengths pi = 10^(R/400), Black's times 10^(F/400)):
    P(Black wins) = pi_b / (pi_b + pi_w + nu sqrt(pi_b pi_w)), P(draw) = nu sqrt(pi_b pi_w) / (...)."""
    total = 0.0
    for (black, white), (won, drawn, lost) in DRAWN_TABLE.items():
        pi_b, pi_w = 10 ** ((rating[black] + first_move) / 400), 10 ** (rating[white] / 400)
        tie = nu * math.sqrt(pi_b * pi_w)
        z = pi_b + pi_w + tie
        total += won * math.log(pi_b / z) + drawn * math.log(tie / z) + lost * math.log(pi_w / z)
    return total


def brute_force_maximum(f: Callable[[list[float]], float], x: list[float]) -> list[float]:
    """Coordinate ascent: each coordinate in turn is set where f's slope along it (a central difference) changes
    sign, found by bisection; until nothing moves (f is concave, so each slope falls as its coordinate rises)."""
    x = list(x)
    for _ in range(20000):
        moved = 0.0
        for index in range(len(x)):

            def slope(t: float, index: int = index) -> float:
                h = 1e-3
                return (f([t + h if k == index else v for k, v in enumerate(x)])
                        - f([t - h if k == index else v for k, v in enumerate(x)])) / (2 * h)  # fmt: skip

            lo, hi = x[index] - 1.0, x[index] + 1.0
            while slope(lo) < 0:
                lo -= 2 * (hi - lo)
            while slope(hi) > 0:
                hi += 2 * (hi - lo)
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
            moved = max(moved, abs((lo + hi) / 2 - x[index]))
            x[index] = (lo + hi) / 2
        if moved < 1e-9:
            return x
    raise AssertionError("the search did not settle")


def inverse(matrix: list[list[float]]) -> list[list[float]]:
    """Gauss-Jordan elimination (small, well-conditioned matrices)."""
    n = len(matrix)
    rows = [list(row) + [1.0 if i == j else 0.0 for j in range(n)] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col][col]
        rows[col] = [v / head for v in rows[col]]
        for r in range(n):
            if r != col:
                factor = rows[r][col]
                rows[r] = [v - factor * w for v, w in zip(rows[r], rows[col], strict=True)]
    return [row[n:] for row in rows]


def test_the_fit_with_draws_and_an_anchor_matches_a_brute_force_maximum() -> None:
    # Parameters with B anchored at 0 (the model's own units): R_A, R_C, the first move F and ln nu. The maximum
    # is found by a plain search, the margins from a finite-difference Hessian of the same likelihood: nothing of
    # the Newton code. Reported values are the model's times 2 / (2 + nu) (the Elo scale), B's anchor is 1500.
    def f(x: list[float]) -> float:
        return davidson_log_likelihood({"A": x[0], "B": 0.0, "C": x[1]}, x[2], math.exp(x[3]))

    best = brute_force_maximum(f, [0.0, 0.0, 0.0, 0.0])
    r_a, r_c, first, log_nu = best
    nu = math.exp(log_nu)
    step = [0.05, 0.05, 0.05, 1e-4]
    hessian = [[0.0] * 4 for _ in range(4)]
    for i in range(4):
        for j in range(4):

            def at(di: float, dj: float, i: int = i, j: int = j) -> float:
                x = list(best)
                x[i] += di * step[i]
                x[j] += dj * step[j]
                return f(x)

            hessian[i][j] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * step[i] * step[j])
    covariance = inverse([[-v for v in row] for row in hessian])
    scale = 2 / (2 + nu)

    anchor = Anchor(name="B", rating=1500)
    s = compute_standings(drawn_table_games(), ["A", "B", "C"], prior_draws=TINY_PRIOR, anchor=anchor)
    rows = by_name(s)
    assert s.anchor == anchor
    assert s.draw_nu == pytest.approx(nu, rel=1e-5)
    assert s.draw_pct_equal == pytest.approx(100 * nu / (2 + nu), rel=1e-5)
    assert s.first_move_elo == pytest.approx(scale * first, abs=1e-3)
    assert rows["A"].elo == pytest.approx(1500 + scale * r_a, abs=1e-3)
    assert rows["B"].elo == 1500 and rows["B"].elo_margin == 0
    assert rows["C"].elo == pytest.approx(1500 + scale * r_c, abs=1e-3)
    assert rows["A"].elo_margin == pytest.approx(scale * 1.96 * math.sqrt(covariance[0][0]), rel=1e-3)
    assert rows["C"].elo_margin == pytest.approx(scale * 1.96 * math.sqrt(covariance[1][1]), rel=1e-3)
    assert s.first_move_margin == pytest.approx(scale * 1.96 * math.sqrt(covariance[2][2]), rel=1e-3)
    low, high = s.draw_nu_interval or [0, 0]
    spread = 1.96 * math.sqrt(covariance[3][3])
    assert low == pytest.approx(nu * math.exp(-spread), rel=1e-3)
    assert high == pytest.approx(nu * math.exp(spread), rel=1e-3)
    # The figures themselves, so that a change of model shows here in numbers.
    assert (round(scale * r_a, 1), round(scale * r_c, 1), round(scale * first, 1), round(nu, 3)) == EXPECTED_DRAWN

    # Without the anchor the same fit is relative to the field mean: the same differences, other margins.
    free = by_name(compute_standings(drawn_table_games(), ["A", "B", "C"], prior_draws=TINY_PRIOR))
    anchored = {name: rows[name].elo or 0.0 for name in "ABC"}
    mean = sum(anchored.values()) / 3
    for name in "ABC":
        assert free[name].elo == pytest.approx(anchored[name] - mean, abs=1e-6)
    assert free["B"].elo_margin is not None and free["B"].elo_margin > 0


EXPECTED_DRAWN = (93.5, -74.7, 39.4, 0.678)


def test_per_colour_results_by_hand() -> None:
    rows = by_name(compute_standings(drawn_table_games(), ["A", "B", "C"]))
    # A as Black: against B 6-2-2, against C 7-1-2; as White: against B (B's 3-3-4 as Black) 4-3-3, against C 6-2-2.
    assert rows["A"].as_black == ColourRecord(games=20, wins=13, draws=3, losses=4)
    assert rows["A"].as_white == ColourRecord(games=20, wins=10, draws=5, losses=5)
    # B as Black: 3-3-4 against A, 5-3-2 against C; as White: 2-2-6 against A, 4-3-3 against C.
    assert rows["B"].as_black == ColourRecord(games=20, wins=8, draws=6, losses=6)
    assert rows["B"].as_white == ColourRecord(games=20, wins=6, draws=5, losses=9)
    # C as Black: 2-2-6 against A, 3-3-4 against B; as White: 2-1-7 against A, 2-3-5 against B.
    assert rows["C"].as_black == ColourRecord(games=20, wins=5, draws=5, losses=10)
    assert rows["C"].as_white == ColourRecord(games=20, wins=4, draws=4, losses=12)
    for bot in rows.values():
        assert bot.as_black is not None and bot.as_white is not None
        assert bot.as_black.wins + bot.as_white.wins == bot.wins
        assert bot.as_black.draws + bot.as_white.draws == bot.draws
        assert bot.as_black.games + bot.as_white.games == bot.games


def test_an_anchor_outside_the_field_is_refused_and_one_without_games_waits() -> None:
    with pytest.raises(ValueError, match="the anchor 'X' is not in the field"):
        compute_standings(drawn_table_games(), ["A", "B", "C"], anchor=Anchor(name="X", rating=0))
    s = compute_standings(drawn_table_games(), ["A", "B", "C", "new"], anchor=Anchor(name="new", rating=2000))
    assert s.anchor is None  # the anchor has not played yet: relative to the field mean, and it says so
    assert sum(bot.elo for bot in s.bots if bot.elo is not None) == pytest.approx(0, abs=1e-9)
    assert "relative to the field mean" in to_text(s)


@pytest.mark.parametrize(
    ("text", "expected"), [("base=1500", ("base", 1500.0)), ("a=b=-20.5", ("a=b", -20.5)), (" x = 0 ", ("x", 0.0))]
)
def test_parse_anchor(text: str, expected: tuple[str, float]) -> None:
    anchor = parse_anchor(text)
    assert (anchor.name, anchor.rating) == expected


@pytest.mark.parametrize("text", ["base", "=1500", "base=", "base=nan", "base=inf", "base=high"])
def test_parse_anchor_refuses_what_is_not_name_equals_rating(text: str) -> None:
    with pytest.raises(ValueError, match="is not NAME=RATING"):
        parse_anchor(text)


def test_three_bots_transitive_table_in_closed_form() -> None:
    # Odds 3:1 for A over B and for B over C imply 9:1 for A over C; with exactly those scores with each colour
    # (15-5, 15-5, 18-2 in 20 games a colour) the MLE reproduces them with no first-move term:
    # A = +190.85, B = 0, C = -190.85.
    def both_colours(x: str, y: str, won: int, lost: int) -> list[ScoredGame]:
        return games(x, y, "1-0", won) + games(x, y, "0-1", lost) + games(y, x, "0-1", won) + games(y, x, "1-0", lost)

    results = both_colours("A", "B", 15, 5) + both_colours("B", "C", 15, 5) + both_colours("A", "C", 18, 2)
    s = compute_standings(results, ["C", "B", "A"], prior_draws=TINY_PRIOR)
    rows = by_name(s)
    d = 400 * math.log10(3)
    assert rows["A"].elo == pytest.approx(d, abs=0.01)
    assert rows["B"].elo == pytest.approx(0, abs=0.01)
    assert rows["C"].elo == pytest.approx(-d, abs=0.01)
    assert s.first_move_elo == pytest.approx(0, abs=1e-6)


def test_a_field_that_drew_every_game_stays_finite_and_even() -> None:
    results = games("A", "B", "1/2-1/2", 10) + games("B", "C", "1/2-1/2", 10) + games("C", "A", "1/2-1/2", 10)
    s = compute_standings(results, ["A", "B", "C"])
    assert s.draw_nu is not None and math.isfinite(s.draw_nu) and s.draw_nu > 20
    assert s.draw_pct_equal is not None and 90 < s.draw_pct_equal < 100
    for bot in s.bots:
        assert bot.elo == pytest.approx(0, abs=1e-6)
        assert bot.elo_margin is not None and math.isfinite(bot.elo_margin)


def test_cyclic_table_zeroes_the_likelihood_gradient() -> None:
    # No closed form: A beats B, B beats C, C beats A, with unequal numbers of games and some draws.
    # At the maximum every bot's actual score equals its expected score, Black's total score equals its expected
    # one (the first-move term) and the draws their expected number (nu), under the model in its own units
    # (the reported values divided by 2 / (2 + nu)).
    results = (
        games("A", "B", "1-0", 9) + games("B", "A", "1-0", 1)
        + games("B", "C", "1-0", 6) + games("C", "B", "1/2-1/2", 4) + games("C", "B", "1-0", 2)
        + games("C", "A", "1-0", 5) + games("A", "C", "1-0", 4) + games("A", "C", "1/2-1/2", 3)
    )  # fmt: skip
    s = compute_standings(results, ["A", "B", "C"], prior_draws=TINY_PRIOR)
    assert s.draw_nu is not None and s.first_move_elo is not None
    nu, scale = s.draw_nu, 2 / (2 + s.draw_nu)
    elo = {bot.name: (bot.elo or 0.0) / scale for bot in s.bots}
    first = s.first_move_elo / scale
    residual = dict.fromkeys("ABC", 0.0)
    black_residual = draw_residual = 0.0
    for game in results:
        u = K * (elo[game.black] - elo[game.white] + first) / 2
        z = math.exp(u) + math.exp(-u) + nu
        expected = (math.exp(u) + nu / 2) / z
        residual[game.black] += game.black_points - expected
        residual[game.white] -= game.black_points - expected
        black_residual += game.black_points - expected
        draw_residual += (game.result == "1/2-1/2") - nu / z
    for me in "ABC":
        assert residual[me] == pytest.approx(0, abs=1e-4)
    assert black_residual == pytest.approx(0, abs=1e-4) and draw_residual == pytest.approx(0, abs=1e-4)
    assert sum(elo.values()) == pytest.approx(0, abs=1e-9)
    # The ratings are not all equal (the cycle is lopsided), so the check above is not trivially met.
    assert max(elo.values()) > 20


def test_all_wins_stays_finite_and_ordered() -> None:
    # The MLE is infinite here; the virtual draws keep it finite, symmetric and ordered.
    s = compute_standings(games("A", "B", "1-0", 10), ["A", "B"])
    a, b = s.bots
    assert a.elo is not None and b.elo is not None and a.elo_margin is not None
    assert math.isfinite(a.elo) and math.isfinite(a.elo_margin)
    assert a.elo == pytest.approx(-b.elo) and a.elo > 100
    more = compute_standings(games("A", "B", "1-0", 40), ["A", "B"]).bots[0]
    assert more.elo is not None and more.elo > a.elo  # more evidence, stronger rating

    # A beats everyone, B beats C, C loses everything.
    chain = games("A", "B", "1-0", 5) + games("C", "A", "0-1", 5) + games("B", "C", "1-0", 5)
    rows = compute_standings(chain, ["C", "B", "A"]).bots
    assert [bot.name for bot in rows] == ["A", "B", "C"]
    elos = [bot.elo for bot in rows if bot.elo is not None]
    assert len(elos) == 3 and all(math.isfinite(e) for e in elos)
    assert elos[0] > elos[1] > elos[2]
    assert sum(elos) == pytest.approx(0, abs=1e-9)


def test_empty_results() -> None:
    s = compute_standings([], ["b", "a"])
    assert [bot.name for bot in s.bots] == ["a", "b"]
    for bot in s.bots:
        assert (bot.games, bot.points, bot.score_pct, bot.elo, bot.elo_margin) == (0, 0, None, None, None)
    assert s.totals.games == 0
    assert s.crosstable["a"]["b"].games == 0
    for render in (to_text, to_markdown, to_csv):
        assert "a" in render(s)
    empty = compute_standings([], [])
    assert empty.bots == [] and empty.crosstable == {}
    assert to_csv(empty).startswith("rank,name")
    assert "0 games" in to_text(empty) and "0 games" in to_markdown(empty)


def test_a_bot_with_no_games_has_no_elo_and_stays_out_of_the_mean() -> None:
    results = games("A", "B", "1-0", 3) + games("B", "A", "1-0", 1)
    s = compute_standings(results, ["idle", "A", "B"])
    rows = by_name(s)
    assert rows["idle"].elo is None and rows["idle"].elo_margin is None and rows["idle"].score_pct is None
    assert rows["A"].elo is not None and rows["B"].elo is not None
    assert rows["A"].elo + rows["B"].elo == pytest.approx(0, abs=1e-9)
    assert [bot.name for bot in s.bots] == ["A", "B", "idle"]
    assert rows["idle"].rank == 3
    # The same games without the idle bot give the same ratings.
    alone = {bot.name: bot.elo for bot in compute_standings(results, ["A", "B"]).bots}
    assert alone["A"] == pytest.approx(rows["A"].elo)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ScoredGame("A", "B", "*"), "not one of"),
        (lambda: ScoredGame("A", "B", "2-0"), "not one of"),  # type: ignore[arg-type]
        (lambda: ScoredGame("A", "B", "1-0", Termination.VOID), "not scored"),
        (lambda: ScoredGame("A", "B", "1-0", Termination.ABORTED), "not scored"),
        (lambda: ScoredGame("A", "A", "1-0"), "cannot play itself"),
        (lambda: ScoredGame("A", "B", "1/2-1/2", Termination.TIME), "cannot be a draw"),
    ],
)
def test_bad_game_results_are_refused(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="'X' is not in the field"):
        compute_standings(games("A", "X", "1-0"), ["A", "B"])
    with pytest.raises(ValueError, match="listed twice"):
        compute_standings([], ["A", "A"])
    with pytest.raises(ValueError, match="prior_draws must be a positive"):
        compute_standings([], ["A"], prior_draws=0)


def test_a_termination_string_becomes_the_enum() -> None:
    from referee.record import Termination

    game = ScoredGame("A", "B", "1-0", "time")  # type: ignore[arg-type]
    assert game.termination is Termination.TIME
    assert game.loser == "B"


def test_text_table_is_fixed_width_and_in_rank_order() -> None:
    s = compute_standings(SMALL, ["A", "B", "C"])
    text = to_text(s)
    lines = text.splitlines()
    header, *rows = lines[: 1 + len(s.bots)]
    assert header.split()[:3] == ["#", "Bot", "Games"]
    assert [row.split()[1] for row in rows] == [bot.name for bot in s.bots]
    # Numbers are right-aligned: the points column ends at the same offset on every line.
    end = header.index("Points") + len("Points")
    for row, bot in zip(rows, s.bots, strict=True):
        points = f"{bot.points:g}" if bot.points == int(bot.points) else f"{bot.points:.1f}"
        assert row[end - len(points) : end] == points
    assert "time 1" in text and "crash 1" in text
    assert "Crosstable" in text and "1.5/2" in text
    assert "5 games: Black won 3, White won 1, 1 drawn; 2 decided by forfeit." in text


def test_markdown_tables() -> None:
    s = compute_standings([*SMALL, *games("A", "we|ird", "1-0")], ["A", "B", "C", "we|ird"])
    md = to_markdown(s)
    table = [line for line in md.splitlines() if line.startswith("| ") and "Games" not in line]
    assert len(table) == 2 * len(s.bots) + 1  # standings rows, crosstable header, crosstable rows
    assert "we\\|ird" in md and "we|ird |" not in md
    first = s.bots[0]
    assert f"| 1 | {first.name} | {first.games} | {first.wins} |" in md


def test_names_a_spreadsheet_or_a_markdown_renderer_would_run_are_neutralised() -> None:
    names = ['=HYPERLINK("http://x")', "+1", "-cmd", "@SUM(A1)", "\tx", "<img src=x onerror=alert(1)>", "a_b*c*"]
    results = [g for name in names for g in games(name, "A", "1-0")]
    s = compute_standings(results, ["A", *names])
    rows = list(csv.DictReader(io.StringIO(to_csv(s))))
    for row in rows:
        assert not row["name"].startswith(("=", "+", "-", "@", "\t", "\r")), row["name"]
    assert {row["name"].removeprefix("'") for row in rows} == {"A", *names}  # shown, as text
    md = to_markdown(s)
    assert "<img" not in md and "&lt;img src=x onerror=alert\\(1\\)&gt;" in md
    assert "a\\_b\\*c\\*" in md


def test_csv_rows_parse_back() -> None:
    s = compute_standings([*SMALL, ScoredGame("C", "A", "1-0", Termination.PROTOCOL)], ["A", "B", "C", "idle"])
    rows = list(csv.DictReader(io.StringIO(to_csv(s))))
    assert [row["name"] for row in rows] == [bot.name for bot in s.bots]
    for row, bot in zip(rows, s.bots, strict=True):
        assert int(row["rank"]) == bot.rank and int(row["games"]) == bot.games
        assert float(row["points"]) == bot.points
        assert int(row["losses_time"]) == bot.losses_by_kind["time"]
        assert int(row["losses_protocol"]) == bot.losses_by_kind["protocol"]
        if bot.elo is None:
            assert row["elo"] == "" and row["elo_margin"] == "" and row["score_pct"] == ""
        else:
            assert float(row["elo"]) == pytest.approx(bot.elo, abs=0.005)


def test_write_standings_writes_three_files_atomically(tmp_path: Path) -> None:
    s = compute_standings(SMALL, ["A", "B", "C"])
    out = tmp_path / "out" / "nested"
    written = write_standings(s, out)
    assert sorted(p.name for p in written) == ["standings.csv", "standings.json", "standings.md"]
    assert sorted(p.name for p in out.iterdir()) == ["standings.csv", "standings.json", "standings.md"]  # no temps
    assert Standings.model_validate_json((out / "standings.json").read_text()) == s
    assert (out / "standings.csv").read_text() == to_csv(s)
    assert (out / "standings.md").read_text() == to_markdown(s)
    # Writing again replaces the files.
    later = compute_standings([*SMALL, *games("A", "C", "1-0")], ["A", "B", "C"])
    write_standings(later, out)
    assert Standings.model_validate_json((out / "standings.json").read_text()).totals.games == 6


NAMES = ["a", "b", "c", "d", "e"]
game_strategy = st.builds(
    lambda pair, result, forfeit: ScoredGame(
        pair[0], pair[1], result, Termination(forfeit if result != "1/2-1/2" and forfeit else "normal")
    ),
    st.lists(st.sampled_from(NAMES), min_size=2, max_size=2, unique=True),
    st.sampled_from(["1-0", "0-1", "1/2-1/2"]),
    st.sampled_from(["", "time", "crash", "protocol"]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(game_strategy, max_size=40))
def test_invariants_on_random_tournaments(results: list[ScoredGame]) -> None:
    s = compute_standings(results, NAMES)
    assert sum(bot.points for bot in s.bots) == pytest.approx(len(results))
    assert sum(bot.games for bot in s.bots) == 2 * len(results)
    assert s.totals.black_wins + s.totals.white_wins + s.totals.draws == len(results)
    for bot in s.bots:
        assert bot.wins + bot.draws + bot.losses == bot.games
        assert sum(bot.losses_by_kind.values()) == bot.losses
        assert (bot.elo is None) == (bot.games == 0) == (bot.elo_margin is None)
        if bot.elo is not None and bot.elo_margin is not None:
            assert math.isfinite(bot.elo) and 0 < bot.elo_margin < 2000
    for a, row in s.crosstable.items():
        for b, cell in row.items():
            back = s.crosstable[b][a]
            assert cell.games == back.games and cell.points + back.points == pytest.approx(cell.games)
    points = [bot.points for bot in s.bots]
    assert points == sorted(points, reverse=True)
    rated = [bot.elo for bot in s.bots if bot.elo is not None]
    assert sum(rated) == pytest.approx(0, abs=1e-6)


def test_margins_cover_the_true_ratings_about_95_percent_of_the_time() -> None:
    # Simulated round robins between bots of known strength (fixed seeds, so the test is deterministic):
    # the 95% intervals should hold the true rating (relative to the field mean) about 95% of the time.
    # Margins half as wide would cover ~68%, twice as wide ~100%: both fall outside the bounds below.
    inside = total = 0
    for seed in range(10):
        rng = random.Random(seed)
        names = [f"bot{i}" for i in range(20)]
        strength = {name: rng.gauss(0, 150) for name in names}
        mean = sum(strength.values()) / len(names)
        results = []
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                for game in range(6):
                    black, white = (a, b) if game % 2 else (b, a)
                    p_black = 1 / (1 + 10 ** ((strength[white] - strength[black]) / 400))
                    draw = 0.4 * min(p_black, 1 - p_black)  # some draws, expected score still p_black
                    u = rng.random()
                    result: Result = "1-0" if u < p_black - draw / 2 else "1/2-1/2" if u < p_black + draw / 2 else "0-1"
                    results.append(ScoredGame(black, white, result))
        for bot in compute_standings(results, names).bots:
            assert bot.elo is not None and bot.elo_margin is not None
            inside += abs(bot.elo - (strength[bot.name] - mean)) <= bot.elo_margin
            total += 1
    assert 0.90 <= inside / total <= 0.99, f"{inside}/{total} intervals hold the true rating"


def test_a_rating_a_hair_below_zero_prints_as_plus_zero() -> None:
    # The demo tournament printed "-0 ± 259" for a bot the fit put a rounding error below zero.
    results = [ScoredGame("A", "B", "1-0"), ScoredGame("B", "A", "1-0")]
    standings = compute_standings(results, ["A", "B"])
    bots = [bot.model_copy(update={"elo": -1e-9}) for bot in standings.bots]
    text = to_text(standings.model_copy(update={"bots": bots}))
    assert "-0 ±" not in text and "+0 ±" in text


def test_text_and_markdown_print_the_fitted_elo_and_margin() -> None:
    # The 75% table of the closed-form test above: +97.0 / -97.0 (margins 39.95), the first move +46.8 ± 79.5.
    results = (
        games("A", "B", "1-0", 40)
        + games("A", "B", "0-1", 10)
        + games("B", "A", "0-1", 35)
        + games("B", "A", "1-0", 15)
    )
    standings = compute_standings(results, ["A", "B"], prior_draws=TINY_PRIOR)
    for rendered in (to_text(standings), to_markdown(standings)):
        assert "+97 ± 40" in rendered and "-97 ± 40" in rendered
        assert "+0 ±" not in rendered
        assert "40-0-10" in rendered and "35-0-15" in rendered  # A as Black, A as White
        assert "First move (Black): +47 ± 80 Elo; no game drawn (nu = 0)." in rendered
        assert "relative to the field mean" in rendered
    rows = {row["name"]: row for row in csv.DictReader(io.StringIO(to_csv(standings)))}
    assert (rows["A"]["elo"], rows["A"]["elo_margin"]) == ("97.00", "39.95")
    assert (rows["B"]["elo"], rows["B"]["elo_margin"]) == ("-97.00", "39.95")
    assert [rows["A"][f"black_{k}"] for k in ("wins", "draws", "losses")] == ["40", "0", "10"]
    assert [rows["B"][f"white_{k}"] for k in ("wins", "draws", "losses")] == ["10", "0", "40"]
    anchored = compute_standings(results, ["A", "B"], prior_draws=TINY_PRIOR, anchor=Anchor(name="B", rating=1000))
    text = to_text(anchored)
    assert (
        "1194 ± 80" in text
        and "1000 ± 0" in text
        and "+1194" not in text
        and "anchored: B = 1000 (margins are from it)" in text
    )
