"""The incremental standings tally gives exactly what `compute_standings` gives over the same games."""

from __future__ import annotations

import random

import pytest

from protocol.rules import Result
from referee.record import Termination
from referee.stats.standings import ScoredGame, StandingsTally, compute_standings

RESULTS: list[Result] = ["1-0", "0-1", "1/2-1/2"]
FORFEITS = [Termination.TIME, Termination.CRASH, Termination.ILLEGAL_MOVE]


def random_games(count: int, bots: list[str], seed: int) -> list[ScoredGame]:
    rng = random.Random(seed)
    games = []
    for _ in range(count):
        black, white = rng.sample(bots, 2)
        result = rng.choice(RESULTS)
        termination = Termination.NORMAL if result == "1/2-1/2" or rng.random() < 0.8 else rng.choice(FORFEITS)
        games.append(ScoredGame(black, white, result, termination))
    return games


def test_a_tally_built_game_by_game_matches_compute_standings() -> None:
    bots = ["a", "b", "c", "d", "idle"]
    games = random_games(2000, bots[:4], seed=7)
    tally = StandingsTally()
    for number, game in enumerate(games, start=1):
        tally.add(game)
        if number in (1, 17, 500, 2000):
            assert tally.standings(bots) == compute_standings(games[:number], bots)
    assert StandingsTally(games).standings(bots, prior_draws=2) == compute_standings(games, bots, prior_draws=2)
    standings = tally.standings(bots)
    assert standings.totals.games == 2000
    assert sum(row.losses_by_kind.get("illegal_move", 0) for row in standings.bots) > 0  # forfeits by kind are counted


def test_an_empty_tally_is_the_empty_standings() -> None:
    assert StandingsTally().standings(["x", "y"]) == compute_standings([], ["x", "y"])


def test_a_warm_started_tally_agrees_with_fits_from_scratch() -> None:
    bots = ["a", "b", "c", "d"]
    games = random_games(3000, bots, seed=3)
    tally = StandingsTally(warm_start=True)
    for number, game in enumerate(games, start=1):
        tally.add(game)
        if number in (10, 300, 1500, 3000):
            warm, cold = tally.standings(bots), compute_standings(games[:number], bots)
            assert [bot.name for bot in warm.bots] == [bot.name for bot in cold.bots]
            for w, c in zip(warm.bots, cold.bots, strict=True):
                assert w.elo == pytest.approx(c.elo, abs=1e-6) and w.elo_margin == pytest.approx(c.elo_margin, rel=1e-9)
            assert warm.first_move_elo == pytest.approx(cold.first_move_elo, abs=1e-6)
            assert warm.draw_nu == pytest.approx(cold.draw_nu, rel=1e-9)


def test_games_counted_as_a_database_keeps_them_give_the_same_standings() -> None:
    bots = ["a", "b", "c"]
    games = [
        ScoredGame(g.black, g.white, g.result, g.termination, 10.0 + n % 7, None if n % 3 else 2.5)
        for n, g in enumerate(random_games(300, bots, seed=11))
    ]
    stored = StandingsTally()
    for game in games:
        stored.add_stored(
            game.black,
            game.white,
            game.result,
            str(game.termination),
            game.black_off_turn_cpu_ms,
            game.white_off_turn_cpu_ms,
        )
    assert stored.standings(bots) == StandingsTally(iter(games)).standings(bots)  # a stream, as a list


def test_a_stored_game_no_run_could_score_is_refused_as_a_scored_game_is() -> None:
    with pytest.raises(ValueError, match="a forfeit \\(time\\) cannot be a draw"):
        StandingsTally().add_stored("a", "b", "1/2-1/2", "time")
    with pytest.raises(ValueError, match="is not one of"):
        StandingsTally().add_stored("a", "b", "1-0", "walkover")
