"""The ladder's pure parts: Glicko-2 against Glickman's worked example, and the pairing policy's promises."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from referee.ladder.policy import Candidate, information, next_pairing
from referee.ladder.rating import Rating, age, expected_score, rate


def test_glicko2_reproduces_glickmans_worked_example() -> None:
    # http://www.glicko.net/glicko/glicko2.pdf: a 1500 (RD 200) player beats 1400 (RD 30), loses to 1550 (RD 100)
    # and to 1700 (RD 300) in one rating period, tau 0.5.
    player = Rating(1500, 200, 0.06)
    results = [(Rating(1400, 30), 1.0), (Rating(1550, 100), 0.0), (Rating(1700, 300), 0.0)]
    after = rate(player, results, tau=0.5)
    assert after.rating == pytest.approx(1464.06, abs=0.01)
    assert after.rd == pytest.approx(151.52, abs=0.01)
    assert after.volatility == pytest.approx(0.05999, abs=0.00001)


def test_a_period_without_games_only_widens_the_deviation() -> None:
    player = Rating(1500, 200, 0.06)
    after = rate(player, [])
    assert after.rating == 1500 and after.volatility == 0.06
    assert after.rd == pytest.approx(math.sqrt((200 / 173.7178) ** 2 + 0.06**2) * 173.7178)
    assert age(Rating(1500, 340, 0.06), 1000).rd == 350


def test_a_win_raises_a_loss_lowers_and_games_shrink_the_uncertainty() -> None:
    a, b = Rating(), Rating()
    assert rate(a, [(b, 1.0)]).rating > 1500 > rate(a, [(b, 0.0)]).rating
    assert rate(a, [(b, 0.5)]).rating == pytest.approx(1500)
    assert rate(a, [(b, 1.0)]).rd < 350
    assert expected_score(Rating(1700, 50), Rating(1500, 50)) > 0.7


def candidates(count: int, rd: float = 60.0) -> list[Candidate]:
    return [Candidate(f"e{i}", 1500 + 40 * i, rd, 0) for i in range(count)]


def test_an_entry_that_never_played_goes_first() -> None:
    pool = [*candidates(5), Candidate("new", 1500, 350, None)]
    for seed in range(20):
        pairing = next_pairing(pool, random.Random(seed))
        assert pairing is not None and "new" in (pairing.black, pairing.white)


def test_the_opponent_is_the_closest_and_most_uncertain() -> None:
    first = Candidate("a", 1500, 60, 100)  # waited longest: chosen first
    close = Candidate("close", 1510, 60, 0)
    far = Candidate("far", 1900, 60, 0)
    assert information(first, close) > information(first, far)
    for seed in range(10):
        pairing = next_pairing([first, close, far], random.Random(seed))
        assert pairing is not None and {pairing.black, pairing.white} == {"a", "close"}
    uncertain = Candidate("unsure", 1600, 300, 0)
    assert information(first, uncertain) > information(first, close)


def test_no_entry_is_starved_and_uncertain_entries_play_more() -> None:
    """A simulated ladder: every entry plays often, however far its rating from the rest; uncertain ones more."""
    rng = random.Random(7)
    ratings = {f"e{i}": (1000.0 + 100 * i, 50.0) for i in range(12)}
    ratings["outlier"] = (3000.0, 50.0)
    ratings["unsure"] = (1500.0, 300.0)
    last: dict[str, int] = {}
    games: Counter[str] = Counter()
    longest_wait: Counter[str] = Counter()
    for number in range(1, 3001):
        pool = [Candidate(key, r, rd, number - last[key] if key in last else None) for key, (r, rd) in ratings.items()]
        for candidate in pool:
            if candidate.waited is not None:
                longest_wait[candidate.key] = max(longest_wait[candidate.key], candidate.waited)
        pairing = next_pairing(pool, rng)
        assert pairing is not None and pairing.black != pairing.white
        for key in (pairing.black, pairing.white):
            last[key] = number
            games[key] += 1
    assert set(games) == set(ratings)
    assert max(longest_wait.values()) < 40  # 14 entries, 2 per game: every one plays at least every 40 games
    assert games["unsure"] > 2 * games["e5"]


def test_colours_alternate_within_a_pair() -> None:
    a, b = Candidate("a", 1500, 60, 10), Candidate("b", 1500, 60, 0)
    pairing = next_pairing([a, b], random.Random(1), recent_blacks={("a", "b"): 3, ("b", "a"): 1})
    assert pairing is not None and pairing.black == "b"
    assert next_pairing([a], random.Random(1)) is None
