"""The fitted horizon evaluation (`Weights`) and the fit that finds it (sample_bots/tuning.py).

The search evaluates from bitboards grouped by tree size; `tuning.features` counts the same features
cell by cell, and these tests hold the two together, check the fit on targets it must reproduce, and
check that the quiescence line the fit resolves positions with ends where `Searcher.quiesce` stops.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from protocol.rules import BLACK, PASS, Position
from sample_bots import strong
from sample_bots.search import _MAX_QDEPTH, Searcher, Settings, Weights
from sample_bots.tuning import FEATURES, features, fit, predict, quiet_leaf, samples, settings_of
from tests.test_search_generation import random_positions

FITTED = Settings(weights=strong.FITTED)
ROOT = Path(__file__).resolve().parent.parent


def test_the_weights_round_trip_through_their_vector() -> None:
    vector = strong.FITTED.vector()
    assert len(vector) == len(FEATURES)
    assert Weights.from_vector(vector) == strong.FITTED
    with pytest.raises(ValueError, match="weights"):
        Weights.from_vector(vector[:-1])


def test_the_search_evaluates_the_features_it_was_fitted_on() -> None:
    """Bitboards against the cell-by-cell definition, on boards of several shapes, after a pass too."""
    checked_after_pass = 0
    for position in random_positions(seed=14, count=400):
        expected = predict(strong.FITTED, features(position))
        assert Searcher(position, settings=FITTED).evaluate() == pytest.approx(expected), position.to_string()
        checked_after_pass += position.consecutive_passes
    assert checked_after_pass > 10


def test_the_features_of_a_small_position_by_hand() -> None:
    # 3x2: a1, c1 and b2 are dark (Black's), b1, a2 and c2 light. After a1b1 White's tree of 2 at b1 has
    # roots of 1 beside it (c1, b2); every other root is a tree of 1 beside another.
    position = Position(3, 2, 0.5).play("a1b1")
    values = dict(zip(FEATURES, features(position), strict=True))
    expected = {
        "margin": 4 - 2 + 0.5,  # White to move: b1's tree, a2 and c2 against c1 and b2
        "mine_smaller[2]": 2,
        "mine_equal[1]": 2,
        "theirs_equal[1]": 2,
        "biggest_mine": 2,
        "live": 5,  # b1-c1, b1-b2, a2-b2, b2-c2, c1-c2
        "tempo": 1,
    }
    assert values == {name: expected.get(name, 0) for name in FEATURES}
    position.push(PASS)  # the same trees from Black's side, just after a pass
    values = dict(zip(FEATURES, features(position), strict=True))
    expected.update({"margin": -2.5, "mine_smaller[2]": 0, "theirs_smaller[2]": 2, "biggest_mine": 1, "after_pass": 1})
    assert values == {name: expected.get(name, 0) for name in FEATURES}


def test_the_fit_reproduces_targets_made_by_known_weights() -> None:
    rows = [(features(p), predict(strong.FITTED, features(p))) for p in random_positions(seed=3, count=300)]
    fitted = fit(rows, ridge=1e-6)
    assert max(abs(predict(fitted, values) - target) for values, target in rows) < 1e-4


def test_the_fit_finds_a_plain_linear_rule() -> None:
    """Targets of twice the margin plus 3: the weights are exactly that, whatever else varies."""
    rows = [(values, 2 * values[0] + 3) for values in (features(p) for p in random_positions(seed=4, count=200))]
    fitted = fit(rows, ridge=1e-9)
    assert fitted.margin == pytest.approx(2.0, abs=1e-5)
    assert fitted.tempo == pytest.approx(3.0, abs=1e-4)
    assert max(abs(w) for w in fitted.vector()[1:-1]) < 1e-4


def test_a_feature_that_never_occurs_gets_no_weight() -> None:
    rows = [(features(p), features(p)[0]) for p in random_positions(seed=5, count=100)]
    assert all(values[1] == 0 for values, _t in rows)  # a tree of 1 never has a strictly smaller neighbour
    assert fit(rows, ridge=0.0).mine_smaller[0] == 0.0


@pytest.mark.parametrize("settings", [Settings(), strong.SETTINGS, FITTED], ids=["alphabeta", "strong", "fitted"])
def test_the_quiet_leaf_is_where_the_quiescence_search_stops(settings: Settings) -> None:
    """The value `Searcher.quiesce` returns is the evaluation at the end of `quiet_leaf`'s line."""
    for position in random_positions(seed=6, count=150):
        value = Searcher(position, settings=settings).quiesce(-1e9, 1e9, _MAX_QDEPTH)
        leaf = quiet_leaf(position, settings)
        leaf_searcher = Searcher(leaf, settings=settings)
        if leaf.is_over() or not leaf.has_legal_placement():
            at_leaf = leaf_searcher.terminal()
        else:
            at_leaf = leaf_searcher.evaluate()
        sign = 1 if leaf.turn is position.turn else -1
        assert value == pytest.approx(sign * at_leaf), position.to_string()
        assert leaf.history[: len(position.history)] == position.history


def test_samples_take_the_final_margin_from_the_side_to_move_at_the_leaf() -> None:
    start = Position(4, 4, 0.5)
    moves = ["a1a2", "b2b1", "c3c4", "pass", "d4d3"]
    settings = dataclasses.replace(FITTED, q_width=0)  # no captures in the quiescence: the leaf is the position
    rows = samples([(start, moves, 7.5)], settings)
    assert len(rows) == len(moves)
    position = start.copy()
    for (values, target), text in zip(rows, moves, strict=True):
        assert values == features(position)
        assert target == (7.5 if position.turn is BLACK else -7.5)
        position.push(position.parse_move(text))


def test_the_tuning_script_plays_and_fits(tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    script = ROOT / "benchmarks" / "tune_evaluation.py"
    play = [sys.executable, str(script), "play", str(games), "--games", "2", "--seconds", "0.005", "--size", "4"]
    subprocess.run(play, check=True, capture_output=True, text=True, timeout=120)
    lines = [json.loads(line) for line in games.read_text().splitlines()]
    assert len(lines) == 2 and all(line["size"] == 4 and line["moves"] for line in lines)
    for line in lines:  # each is a finished game with the margin it says
        position = Position(4, 4, line["komi"])
        for text in line["moves"]:
            position.push(position.parse_move(text))
        outcome = position.outcome()
        assert outcome is not None and outcome.black_score - outcome.white_score == line["margin"]
    fitted = subprocess.run(
        [sys.executable, str(script), "fit", str(games)], check=True, capture_output=True, text=True, timeout=120
    )
    assert "held-out games, the new fit" in fitted.stdout and "Weights(margin=" in fitted.stdout
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"moves": []}\n')
    failed = subprocess.run([sys.executable, str(script), "fit", str(broken)], capture_output=True, text=True)
    assert failed.returncode != 0 and "broken.jsonl:1: not a game line" in failed.stderr


def test_a_side_is_read_with_its_overrides() -> None:
    settings = settings_of("strong,weights=none,q_width=2,reserve=0.01/0.02,keep_table=no")
    assert settings.weights is None and settings.q_width == 2 and settings.reserve == (0.01, 0.02)
    assert settings.keep_table is False and settings.solve_live_roots == strong.SETTINGS.solve_live_roots
    assert settings_of("strong").weights == strong.FITTED and settings_of("alphabeta") == Settings()
    for spec, words in [
        ("bogus", "a side is alphabeta or strong"),
        ("strong,nope=1", "Settings has no 'nope'"),
        ("strong,weights=mine", "`fitted`"),
        ("alphabeta,cap_width=x", "cap_width is a number"),
    ]:
        with pytest.raises(ValueError, match=words):
            settings_of(spec)
