"""The ladder's pure parts: Glicko-2 against Glickman's worked example, and the pairing policy's promises (the
adaptive scheduler of referee/run/adaptive.py, run for ever)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from referee.ladder.policy import Pairs
from referee.ladder.rating import Rating, age, expected_score, rate
from referee.run.adaptive import continuous_pair, neighbour_confidence


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


def simulate(
    strengths: dict[str, float], games: int, seed: int = 7, *, joins: dict[str, int] | None = None
) -> tuple[Counter[frozenset[str]], Counter[str], Counter[str], list[tuple[str, str]]]:
    """A one-slot ladder of bots of true Elo `strengths` (`joins[name]`: the game before which it joins): games
    per pair, games per bot, each bot's longest wait, and the games played."""
    rng = random.Random(seed)
    pairs = Pairs()
    last: dict[str, int] = {}
    per_pair: Counter[frozenset[str]] = Counter()
    per_bot: Counter[str] = Counter()
    longest: Counter[str] = Counter()
    played: list[tuple[str, str]] = []
    for number in range(games):
        field = [name for name in strengths if (joins or {}).get(name, 0) <= number]
        waited = {name: number - last[name] if name in last else None for name in field}
        for name, wait in waited.items():
            longest[name] = max(longest[name], number if wait is None else wait)
        pairing = pairs.next_pairing(field, field, waited, rng, recent=played[-200:])
        assert pairing is not None and pairing.black != pairing.white
        black, white = pairing.black, pairing.white
        p = 1 / (1 + 10 ** ((strengths[white] - strengths[black]) / 400))
        pairs.add(black, white, 1.0 if rng.random() < p else 0.0)
        for name in (black, white):
            last[name] = number
            per_bot[name] += 1
        per_pair[frozenset((black, white))] += 1
        played.append((black, white))
    return per_pair, per_bot, longest, played


def test_an_entry_that_never_played_goes_first() -> None:
    strengths = {f"e{i}": 100.0 * i for i in range(6)} | {"new": 250.0}
    _, _, _, played = simulate(strengths, 61, joins={"new": 60})
    assert "new" in played[60]


def test_no_entry_is_starved_and_close_or_uncertain_pairs_play_more() -> None:
    """Every entry plays often, however far its strength from the rest; close neighbours meet most."""
    strengths = {f"e{i}": 150.0 * i for i in range(12)} | {"outlier": 4000.0, "twin": 750.0}
    per_pair, per_bot, longest, _ = simulate(strengths, 1200)
    assert set(per_bot) == set(strengths)
    # 14 entries, 2 a game: on average one plays every 7 games; none waits over 14 before it is called.
    assert max(longest.values()) <= 2 * len(strengths) + 1
    assert per_bot["outlier"] > 1200 * 2 / 14 / 3  # kept in play, though nobody is near it
    # e5 (750) and its twin: as close as can be, they meet far more than two bots 300 apart.
    assert per_pair[frozenset(("e5", "twin"))] > 2 * per_pair[frozenset(("e1", "e3"))]
    assert per_pair[frozenset(("e5", "twin"))] > 1200 / 91  # more than an even share of the 91 pairs


def test_a_new_version_plays_more_until_it_is_placed() -> None:
    strengths = {f"e{i}": 150.0 * i for i in range(10)} | {"v2": 700.0}
    _, _, _, played = simulate(strengths, 500, joins={"v2": 400})
    late = Counter(name for pair in played[400:] for name in pair)
    assert late["v2"] > 2 * 100 * 2 / 11  # over twice its even share of the 100 games since it joined


def test_the_policy_pairs_only_idle_entries_and_alternates_colours() -> None:
    pairs = Pairs([("a", "b", 1.0), ("b", "c", 1.0)])
    field = ["a", "b", "c", "d"]
    waited: dict[str, int | None] = {"a": 0, "b": 0, "c": 0, "d": 0}
    rng = random.Random(1)
    for _ in range(20):
        pairing = pairs.next_pairing(field, ["a", "c", "d"], waited, rng)
        assert pairing is not None and "b" not in (pairing.black, pairing.white)
    assert pairs.next_pairing(field, ["a"], waited, rng) is None
    assert pairs.next_pairing(["a"], ["a"], waited, rng) is None
    recent = [("a", "b"), ("a", "b"), ("b", "a")]
    for seed in range(5):
        pairing = pairs.next_pairing(["a", "b"], ["a", "b"], {"a": 0, "b": 0}, random.Random(seed), recent=recent)
        assert pairing is not None and pairing.black == "b"


def test_continuous_pair_calls_the_starved_then_the_least_certain() -> None:
    order, confidences, _ = neighbour_confidence(["a", "b", "c", "d"], {})
    idle = ["a", "b", "c", "d"]
    # Nobody starved: one of the neighbouring pairs (all equally unsure), never one already playing.
    none_waited = dict.fromkeys(idle, 0)
    assert continuous_pair(order, confidences, idle=idle, waited=none_waited, starve_after=4) in {
        ("a", "b"), ("b", "c"), ("c", "d")
    }  # fmt: skip
    # d waited 5 >= 4: it plays next, against its nearest idle neighbour.
    starved = none_waited | {"d": 5}
    pair = continuous_pair(order, confidences, idle=idle, waited=starved, starve_after=4)
    assert pair is not None and "d" in pair
    assert continuous_pair(order, confidences, idle=["a"], waited=starved, starve_after=4) is None
