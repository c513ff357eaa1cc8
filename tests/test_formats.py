"""The formats as pure schedulers: round robin and gauntlet unchanged, Swiss pairings on hand-worked fields,
knockout brackets of 2 to 9 entrants, the adaptive policy; a run interrupted anywhere continues with the same
pairings."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.run.adaptive import Adaptive, PairTotal, choose_pairs, fit, neighbour_confidence, totals
from referee.run.formats import knockout_seeds
from referee.run.knockout import Knockout, bracket_order
from referee.run.schedule import (
    FixedPairings,
    Format,
    Progress,
    ScheduledGame,
    ScheduleError,
    Scheduler,
    make_schedule,
    pairings,
)
from referee.run.swiss import BYE_POINTS, Swiss, max_rounds

Result = Callable[[ScheduledGame], float]


def names(n: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(n)]


def play_out(
    scheduler: Scheduler, bots: list[str], result: Result, *, stop_after: int | None = None
) -> tuple[list[ScheduledGame], dict[int, float]]:
    """Run a scheduler to its end (or until `stop_after` results), one game at a time, in number order."""
    scheduled: list[ScheduledGame] = []
    points: dict[int, float] = {}
    while True:
        progress = Progress(bots, scheduled, points)
        new = scheduler.next_games(progress)
        assert [g.number for g in new] == list(range(len(scheduled) + 1, len(scheduled) + len(new) + 1))
        scheduled.extend(new)
        pending = [g for g in scheduled if g.number not in points]
        if not pending or (stop_after is not None and len(points) >= stop_after):
            return scheduled, points
        points[pending[0].number] = result(pending[0])


def by_seed(bots: list[str]) -> Result:
    """The bot listed first wins every game."""
    return lambda game: 1.0 if bots.index(game.black) < bots.index(game.white) else 0.0


def draws(game: ScheduledGame) -> float:
    return 0.5


# -- round robin and gauntlet on the pull scheduler -----------------------------------------------------------


@given(st.integers(2, 8), st.integers(1, 6), st.sampled_from([Format.ROUND_ROBIN, Format.GAUNTLET]))
def test_fixed_formats_pull_the_same_games_in_the_same_order_as_the_static_schedule(
    n: int, games: int, fmt: Format
) -> None:
    openings = [("a1a2",), ("b1b2",), ("c1c2",)]
    scheduler = FixedPairings(fmt, games, openings)
    assert scheduler.next_games(Progress(names(n), [], {})) == make_schedule(names(n), fmt, games, openings)
    stored = make_schedule(names(n), fmt, games, openings)
    assert scheduler.next_games(Progress(names(n), stored, {})) == []  # an old directory resumes as it was


def test_more_games_per_pairing_number_the_new_games_as_the_static_schedule_did() -> None:
    small = make_schedule(names(4), Format.ROUND_ROBIN, 2, [])
    added = FixedPairings(Format.ROUND_ROBIN, 4, []).next_games(Progress(names(4), small, {}))
    assert small + added == make_schedule(names(4), Format.ROUND_ROBIN, 4, [])


def test_fewer_games_per_pairing_than_stored_is_refused_with_what_to_do() -> None:
    stored = make_schedule(names(3), Format.ROUND_ROBIN, 4, [])
    with pytest.raises(ScheduleError, match="raise the games per pairing to at least what it was"):
        FixedPairings(Format.ROUND_ROBIN, 2, []).check(Progress(names(3), stored, {}))


def test_a_latecomer_gets_its_games_after_the_stored_ones_and_a_retired_bot_none() -> None:
    stored = make_schedule(names(3), Format.ROUND_ROBIN, 2, [])
    new = FixedPairings(Format.ROUND_ROBIN, 2, []).next_games(Progress(names(4), stored, {}))
    assert [g.number for g in new] == [7, 8, 9, 10, 11, 12]
    assert all("d" in (g.black, g.white) for g in new)
    assert Counter(frozenset((g.black, g.white)) for g in new) == {frozenset(("a", "d")): 2, frozenset(("b", "d")): 2,
                                                                    frozenset(("c", "d")): 2}  # fmt: skip
    # b retires: no game is added for it, and its stored games are no obstacle.
    assert FixedPairings(Format.ROUND_ROBIN, 2, []).next_games(Progress(["a", "c", "d"], stored + new, {})) == []


def test_a_gauntlet_with_two_seeds_pairs_each_seed_with_every_other_bot() -> None:
    pairs = {frozenset(p) for p in pairings(names(5), Format.GAUNTLET, seeds=2)}
    assert pairs == {frozenset((s, o)) for s in "ab" for o in "cde"}
    assert pairings(names(5), Format.GAUNTLET) == pairings(names(5), Format.GAUNTLET, seeds=1)
    with pytest.raises(ValueError, match="1 to 4 seeds"):
        pairings(names(5), Format.GAUNTLET, seeds=5)


def test_explicit_pairings_play_only_the_listed_pairs_first_named_black_first() -> None:
    scheduler = FixedPairings(Format.PAIRINGS, 2, [], pairs=[("c", "a"), ("b", "d")])
    games = scheduler.next_games(Progress(names(4), [], {}))
    assert [(g.black, g.white) for g in games] == [("c", "a"), ("b", "d"), ("a", "c"), ("d", "b")]


# -- Swiss -------------------------------------------------------------------------------------------------


def rounds_of(swiss: Swiss, games: list[ScheduledGame]) -> list[list[tuple[str, str]]]:
    """Each round's encounters as (Black first, White first)."""
    out: dict[int, list[tuple[str, str]]] = {}
    for game in games:
        if game.round == 0:
            out.setdefault(game.pairing // swiss.boards, []).append((game.black, game.white))
    return [out[r] for r in sorted(out)]


def test_swiss_four_bots_hand_worked() -> None:
    # Round 1: a-c and b-d (the top half meets the bottom half), the higher ranked with Black first.
    # a wins its pair 2-0; b and d split theirs. Round 2: a (2) meets b (1, ranked above d by seed); d meets c.
    # Colours: a and b both had Black first once, and both last time: the lower ranked (b) takes Black first in
    # this odd round; c and d both had White first, so again the lower ranked (c). Round 3: the one that has had
    # Black first less often takes it (d: never; c: once, against b's twice).
    bots = names(4)
    swiss = Swiss(bots, 3, [])

    def result(game: ScheduledGame) -> float:
        if {game.black, game.white} == {"a", "c"}:
            return 1.0 if game.black == "a" else 0.0
        return 1.0  # Black wins: b-d split 1-1, and later rounds' pairs too

    games, _ = play_out(swiss, bots, result)
    assert rounds_of(swiss, games) == [[("a", "c"), ("b", "d")], [("b", "a"), ("c", "d")], [("d", "a"), ("c", "b")]]


def test_swiss_five_bots_hand_worked_byes_go_to_the_lowest_ranked_without_one() -> None:
    # Every encounter drawn. Round 1: e (last) has the bye; a-c, b-d. Round 2: e leads with the bye's 2 points
    # and meets a; d is the lowest without a bye; b-c. Round 3: d and e lead (3), c (lowest of 2 without a bye)
    # has the bye; d-e, a-b.
    bots = names(5)
    swiss = Swiss(bots, 3, [])
    games, points = play_out(swiss, bots, draws)
    rounds = [sorted(tuple(sorted(e)) for e in r) for r in rounds_of(swiss, games)]
    assert rounds == [[("a", "c"), ("b", "d")], [("a", "e"), ("b", "c")], [("a", "b"), ("d", "e")]]
    state = swiss.state(Progress(bots, games, points))
    assert state.byes == {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1}
    assert state.score["e"] == 1 + 1 + BYE_POINTS


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.data())
def test_swiss_never_rematches_gives_at_most_one_bye_and_balances_colours(n: int, data: st.DataObject) -> None:
    bots = names(n)
    rounds = data.draw(st.integers(1, max_rounds(n)))
    swiss = Swiss(bots, rounds, [("a1a2",)] * rounds)
    rng = random.Random(data.draw(st.integers(0, 10_000)))
    games, points = play_out(swiss, bots, lambda game: rng.choice((0.0, 0.5, 1.0)))
    assert len(games) == rounds * (n // 2) * 2
    met = Counter(frozenset((g.black, g.white)) for g in games if g.round == 0)
    if rounds <= (n + 1) // 2:  # far from a full round robin the search always finds a pairing without rematches
        assert set(met.values()) == {1}
    state = swiss.state(Progress(bots, games, points))
    assert max(state.byes.values()) <= 1 if rounds <= n else True
    assert sum(state.byes.values()) == rounds * (n % 2)
    for bot in bots:  # a game pair per encounter: as many games with Black as with White
        assert sum(g.black == bot for g in games) == sum(g.white == bot for g in games)
        encounters = sum(bot in (g.black, g.white) for g in games if g.round == 0)
        # Black first at most one more one way; in a Swiss as long as a full round robin the last rounds' pairings
        # are forced (every other opponent met), and two bots leaning the same way may have to meet.
        assert abs(2 * state.first_black[bot] - encounters) <= (2 if rounds < n - 1 else 3)
    for game in games:  # one opening per encounter
        assert game.opening == ("a1a2",)


def test_swiss_tiebreaks_rank_by_score_then_buchholz_then_sonneborn_berger() -> None:
    bots = names(4)
    swiss = Swiss(bots, 3, [])
    games, points = play_out(swiss, bots, by_seed(bots))
    rows = swiss.tiebreaks(swiss.state(Progress(bots, games, points)))
    assert [(r.name, r.score) for r in rows] == [("a", 6), ("b", 4), ("c", 2), ("d", 0)]
    b = rows[1]
    assert b.buchholz == 6 + 2 + 0 and b.sonneborn_berger == 2 * 2 + 2 * 0  # beat c (2) and d (0) twice


def test_swiss_head_to_head_breaks_a_tie_on_score_buchholz_and_sb() -> None:
    # Two bots, one round: b beats a 2-0 ... then a and b are not tied. Instead: three rounds of four bots where a
    # and b draw everything but b beat a in their pair 1.5-0.5: same score, same Buchholz, their SB differs;
    # so check the head-to-head column is filled only for exact ties.
    bots = names(2)
    swiss = Swiss(bots, 1, [])
    games, points = play_out(swiss, bots, draws)
    rows = swiss.tiebreaks(swiss.state(Progress(bots, games, points)))
    assert [r.head_to_head for r in rows] == [1.0, 1.0]
    assert [r.name for r in rows] == ["a", "b"]  # still tied: the seed


def test_swiss_refuses_more_rounds_than_a_round_robin() -> None:
    with pytest.raises(ValueError, match="1 to 3 rounds"):
        Swiss(names(4), 4, [])


# -- knockout ----------------------------------------------------------------------------------------------


def test_bracket_order_keeps_the_top_seeds_apart() -> None:
    assert bracket_order(2) == [1, 2]
    assert bracket_order(4) == [1, 4, 2, 3]
    assert bracket_order(8) == [1, 8, 4, 5, 2, 7, 3, 6]


@pytest.mark.parametrize("n", range(2, 10))
def test_knockout_brackets_of_2_to_9_entrants_byes_to_the_top_seeds(n: int) -> None:
    bots = names(n)
    knockout = Knockout(bots, 2, [])
    games, points = play_out(knockout, bots, by_seed(bots))
    summary = knockout.summary(Progress(bots, games, points))
    size = 1 << (n - 1).bit_length()
    byes = [e for e in summary.bracket if e.note == "bye"]
    assert sorted(e.top_seed or 0 for e in byes) == list(range(1, size - n + 1))
    played = [e for e in summary.bracket if e.games]
    assert len(played) == n - 1 and len(games) == 2 * (n - 1)
    assert summary.champion == "a"
    final = summary.bracket[-1]
    assert {final.top, final.bottom} == {"a", "b"}  # the top two seeds meet only in the final
    for encounter in played:  # each encounter a game pair from one opening, colours swapped
        pair = [g for g in games if {g.black, g.white} == {encounter.top, encounter.bottom}]
        assert sorted((g.black, g.white) for g in pair) == sorted([(encounter.top, encounter.bottom),
                                                                  (encounter.bottom, encounter.top)])  # fmt: skip


@pytest.mark.parametrize("n", range(2, 10))
def test_knockout_tied_encounters_play_tiebreak_pairs_then_the_higher_seed_advances(n: int) -> None:
    bots = names(n)
    knockout = Knockout(bots, 2, [("a1a2",), ("b1b2",), ("c1c2",)], tiebreak_pairs=2)
    games, points = play_out(knockout, bots, draws)
    summary = knockout.summary(Progress(bots, games, points))
    played = [e for e in summary.bracket if e.games]
    assert all(e.games == 6 and e.winner == e.top for e in played)
    assert all(e.note == "tied after 2 tie-break pair(s): the higher seed advances" for e in played)
    assert "the higher seed advances" in summary.rules[0]
    assert summary.champion == "a"
    # Each tie-break pair has an opening of its own.
    first = [g for g in games if g.pairing == games[0].pairing]
    assert [g.opening for g in first] == [("a1a2",)] * 2 + [("b1b2",)] * 2 + [("c1c2",)] * 2


def test_a_knockout_tiebreak_pair_that_decides_says_so() -> None:
    bots = names(2)
    knockout = Knockout(bots, 2, [], tiebreak_pairs=3)
    results = iter([1.0, 1.0, 1.0, 0.5])  # 1-1 in the pair, then b wins the tie-break pair 1.5-0.5... as Black

    games, points = play_out(knockout, bots, lambda game: next(results))
    summary = knockout.summary(Progress(bots, games, points))
    final = summary.bracket[0]
    assert final.games == 4 and final.note == "after 1 tie-break pair(s)"
    assert final.winner == ("a" if final.top_points > final.bottom_points else "b")


def test_knockout_seeding_by_rating_order_or_seeded_shuffle() -> None:
    bots = ["x", "y", "z", "w"]
    assert knockout_seeds(bots, "order", {}, 1) == bots
    assert knockout_seeds(bots, "rating", {"z": 2000, "x": 1500, "w": 1800}, 1) == ["z", "w", "x", "y"]
    shuffled = knockout_seeds(bots, "random", {}, 7)
    assert sorted(shuffled) == sorted(bots) and shuffled == knockout_seeds(bots, "random", {}, 7)


def test_knockout_refuses_an_odd_number_of_games() -> None:
    with pytest.raises(ValueError, match="even --games"):
        Knockout(names(4), 3, [])


# -- resume: the same pairings after an interruption anywhere ------------------------------------------------


@pytest.mark.parametrize("make", [lambda b: Swiss(b, 4, []), lambda b: Knockout(b, 2, [], tiebreak_pairs=1)])
@pytest.mark.parametrize("stop_after", [1, 3, 5, 8])
def test_an_interrupted_run_continues_with_the_pairings_of_an_uninterrupted_one(
    make: Callable[[list[str]], Scheduler], stop_after: int
) -> None:
    bots = names(7)
    rng = random.Random(5)
    table = [rng.choice((0.0, 0.5, 1.0)) for _ in range(200)]
    result: Result = lambda game: table[game.number]  # noqa: E731 - the same result for the same game
    whole, _ = play_out(make(bots), bots, result)
    # Stopped after a few results (a game in progress is lost), then a new scheduler (a new process) resumes.
    part, points = play_out(make(bots), bots, result, stop_after=stop_after)
    fresh = make(bots)
    scheduled, done = list(part), dict(points)
    while True:
        scheduled.extend(fresh.next_games(Progress(bots, scheduled, done)))
        pending = [g for g in scheduled if g.number not in done]
        if not pending:
            break
        done[pending[-1].number] = result(pending[-1])  # finished in another order this time

    # The same encounters with the same games; a knockout numbers its games as encounters become ready, so
    # when results come in another order only the numbers may differ.
    def key(game: ScheduledGame) -> tuple[int, int, str, str, tuple[str, ...]]:
        return (game.pairing, game.round, game.black, game.white, game.opening)

    assert sorted(map(key, scheduled)) == sorted(map(key, whole))
    if isinstance(fresh, Swiss):  # rounds are paired whole: the very same numbers
        assert scheduled == whole


# -- adaptive ----------------------------------------------------------------------------------------------


def test_the_fit_of_a_three_to_one_score_is_191_elo() -> None:
    result = fit(["a", "b"], {("a", "b"): PairTotal(400, 300.0)})
    difference = result.ratings["a"] - result.ratings["b"]
    assert 185 < difference < 191  # 191 Elo without the prior's pull towards the phantom


def test_the_least_certain_neighbouring_pair_is_played_next_and_busy_pairs_are_skipped() -> None:
    # a beat b 20 times, c beat d 20 times, b and c won a game each: b and c are the uncertain middle.
    pairs = totals([("a", "b", 1.0)] * 20 + [("b", "c", 1.0), ("c", "b", 1.0)] + [("c", "d", 1.0)] * 20)
    order, confidences, _ = neighbour_confidence(["a", "b", "c", "d"], pairs)
    assert order[0] == "a" and order[-1] == "d"
    assert choose_pairs(confidences) == [("b", "c")]
    assert ("b", "c") not in choose_pairs(confidences, busy=[("b", "c")])
    middle = next(c for u, lo, c in confidences if {u, lo} == {"b", "c"})
    assert middle == min(c for _, _, c in confidences) and middle < 0.8


def test_adaptive_stops_when_the_order_is_decided_and_names_what_is_left_when_the_budget_ends() -> None:
    bots = names(4)
    elo = {"a": 600, "b": 400, "c": 200, "d": 0}
    rng = random.Random(3)

    def result(game: ScheduledGame) -> float:
        p = 1 / (1 + 10 ** ((elo[game.white] - elo[game.black]) / 400))
        return 1.0 if rng.random() < p else 0.0

    games, points = play_out(Adaptive(2000, []), bots, result)
    assert len(games) < 2000
    summary = Adaptive(2000, []).summary(Progress(bots, games, points))
    assert summary.order == ["a", "b", "c", "d"] and summary.undecided == []
    tight, tight_points = play_out(Adaptive(6, []), bots, result)
    assert len(tight) == 6
    left = Adaptive(6, []).summary(Progress(bots, tight, tight_points))
    assert left.undecided and "below 98.33%" in left.notes[0]  # 95% for the whole order of four: 5%/3 each


def test_adaptive_keeps_parallel_pairs_in_flight_and_within_the_budget() -> None:
    adaptive = Adaptive(10, [], parallel=2)
    first = adaptive.next_games(Progress(names(5), [], {}))
    assert len(first) == 4 and len({frozenset((g.black, g.white)) for g in first}) == 2
    assert adaptive.next_games(Progress(names(5), first, {})) == []  # two pairs in flight already


def test_an_adaptive_latecomer_is_placed_by_games_against_the_pool() -> None:
    bots = names(4)
    elo = {"a": 600, "b": 400, "c": 200, "d": 0, "e": 300}
    rng = random.Random(8)

    def result(game: ScheduledGame) -> float:
        p = 1 / (1 + 10 ** ((elo[game.white] - elo[game.black]) / 400))
        return 1.0 if rng.random() < p else 0.0

    games, points = play_out(Adaptive(4000, []), bots, result)
    joined = Adaptive(4000, [])
    new = joined.next_games(Progress([*bots, "e"], games, points))
    assert new and all("e" in (g.black, g.white) for g in new)
    more, done = play_out_from(joined, [*bots, "e"], games, points, result)
    assert joined.summary(Progress([*bots, "e"], more, done)).order == ["a", "b", "e", "c", "d"]


def play_out_from(
    scheduler: Scheduler, bots: list[str], games: list[ScheduledGame], points: dict[int, float], result: Result
) -> tuple[list[ScheduledGame], dict[int, float]]:
    scheduled, done = list(games), dict(points)
    while True:
        scheduled.extend(scheduler.next_games(Progress(bots, scheduled, done)))
        pending = [g for g in scheduled if g.number not in done]
        if not pending:
            return scheduled, done
        done[pending[0].number] = result(pending[0])
