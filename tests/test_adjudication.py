"""Adjudication on hand-made positions and score sequences, and in real games: off by default, recorded as such."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from protocol.rules import BLACK, WHITE, Position
from referee.cli import main
from referee.commands.replay import RecordCheckError, check_record
from referee.play.adjudication import Adjudication, Adjudicator, parse_draw, parse_resign, roots_in_play
from referee.record import GameRecord
from referee.run.runner import GAMES_FILE
from sample_bots.solver import solve

# A 4x4 endgame, made by hand: six placements leave ten roots in play.
ENDGAME = ["a1a2", "b1b2", "c1c2", "d1d2", "a4a3", "b4b3"]


def info(score: float) -> list[dict[str, object]]:
    return [{"depth": 3, "score": score}]


def test_the_solver_ends_a_small_endgame_with_the_result_and_scores_best_play_reaches() -> None:
    position = Position.from_moves(ENDGAME, 4, 4, 0.5)
    assert roots_in_play(position) == 10
    exact = solve(position)
    verdict = Adjudicator(Adjudication(solver=True)).after_move(position, WHITE, [])
    assert verdict is not None and verdict.kind == "solver"
    assert verdict.winner == (BLACK if exact.score > 0 else WHITE if exact.score < 0 else None)
    assert verdict.scores is not None and verdict.scores[0] - verdict.scores[1] == pytest.approx(exact.score)
    assert verdict.scores[0] + verdict.scores[1] == pytest.approx(16.5)
    # Played out perfectly, the game ends with those very scores.
    played = position.copy()
    while not played.is_over():
        played.push(solve(played).best_move)
    outcome = played.score_outcome()
    assert (outcome.black_score, outcome.white_score) == verdict.scores
    assert "adjudicated by the exact solver with 10 roots in play" in verdict.reason


def test_the_solver_waits_for_few_enough_roots_and_a_budget_it_can_meet() -> None:
    position = Position.from_moves(ENDGAME, 4, 4, 0.5)
    assert Adjudicator(Adjudication(solver=True, solver_roots=9)).after_move(position, WHITE, []) is None
    tight = Adjudicator(Adjudication(solver=True, solver_nodes=5))
    assert tight.after_move(position, WHITE, []) is None
    position.push(position.legal_placements()[0])
    if roots_in_play(position) > 8:  # one root fewer is not worth another try of the whole budget
        assert not tight.wants_solver(position)
        position.push(position.legal_placements()[0])
    assert tight.wants_solver(position)  # two fewer: tried again, and it fails again
    assert tight.after_move(position, BLACK, []) is None and tight.solver_nodes == 10


def test_resign_needs_both_bots_to_agree_for_n_moves_each() -> None:
    rules = Adjudication(**parse_resign("movecount=3 score=10"))
    position = Position(8, 8, 3.5)
    judge = Adjudicator(rules)
    for mover, score in [(BLACK, -12), (WHITE, 15), (BLACK, -11), (WHITE, 14)]:
        assert judge.after_move(position, mover, info(score)) is None
    assert judge.after_move(position, BLACK, info(-10)) is None  # White has agreed only twice
    verdict = judge.after_move(position, WHITE, info(10))
    assert verdict is not None and verdict.kind == "resign" and verdict.winner is WHITE and verdict.scores is None
    assert "black resigns" in verdict.reason
    # One side's opinion is not enough, nor is a move without a score.
    lone = Adjudicator(rules)
    for mover, infos in [(BLACK, info(-50)), (WHITE, info(5)), (BLACK, info(-50)), (WHITE, []), (BLACK, info(-50))]:
        assert lone.after_move(position, mover, infos) is None
    assert lone.after_move(position, WHITE, info(50)) is None


def test_a_draw_needs_both_scores_near_zero_from_the_move_number_on() -> None:
    rules = Adjudication(**parse_draw("movenumber=4 movecount=2 score=1"))
    judge = Adjudicator(rules)
    position = Position(4, 4, 0.5)
    for mover, score in [(BLACK, 0.5), (WHITE, -0.5), (BLACK, 0.2)]:
        position.push(position.legal_placements()[0])
        assert judge.after_move(position, mover, info(score)) is None  # fewer than 4 moves played
    position.push(position.legal_placements()[0])
    verdict = judge.after_move(position, WHITE, info(-1.0))
    assert verdict is not None and verdict.kind == "draw" and verdict.winner is None


def test_bad_resign_and_draw_words_are_refused() -> None:
    with pytest.raises(ValueError, match="give movecount=N score=N"):
        parse_resign("moves=3 score=1")
    with pytest.raises(ValueError, match="give movecount=N too"):
        parse_draw("score=1")
    with pytest.raises(ValueError, match="a whole number of moves"):
        parse_resign("movecount=2.5 score=3")


def test_solver_adjudication_in_real_games_is_recorded_and_changes_no_result(tmp_path: Path) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", "greedy", "--white", "greedy", "--size", "4x4", "--komi", "0.5", "--games", "2"]
    assert main([*argv, "--adjudicate", "solver", "--opening", "a1a2 d4d3", "-j", "1", "--out", str(out)]) == 0
    records = [json.loads(line) for line in (out / GAMES_FILE).read_text().splitlines()]
    for record in records:
        check_record(GameRecord.model_validate(record))  # `alternator replay` solves it again
        flipped = {**record, "result": "1/2-1/2", "winner": None}
        with pytest.raises(RecordCheckError, match="but best play from the final position gives"):
            check_record(GameRecord.model_validate(flipped))
        assert record["adjudicated"] == "solver" and record["termination"] == "normal"
        assert record["settings"]["adjudication"]["solver"] is True
        moves = [*record["settings"]["opening"], *(m["move"] for m in record["moves"])]
        exact = solve(Position.from_moves(moves, 4, 4, 0.5)).score
        assert record["result"] == ("1-0" if exact > 0 else "0-1" if exact < 0 else "1/2-1/2")
    plain = tmp_path / "plain"
    assert main([*argv, "--opening", "a1a2 d4d3", "-j", "1", "--out", str(plain)]) == 0
    assert all(json.loads(line)["adjudicated"] is None for line in (plain / GAMES_FILE).read_text().splitlines())


def test_resign_and_draw_by_the_bots_scores_in_real_games(tmp_path: Path) -> None:
    probe = Path(__file__).parent / "bots" / "probebot.py"

    def bot(name: str, score: float) -> str:
        return f"name={name} cmd='{sys.executable} {probe} {tmp_path / name}.log --score {score}'"

    argv = ["match", "--size", "6x6", "--games", "2", "-j", "1", "--resign", "movecount=2,score=10"]
    assert (
        main([*argv, "--black", bot("hopeful", 20), "--white", bot("hopeless", -20), "--out", str(tmp_path / "r")]) == 0
    )
    for record in (json.loads(line) for line in (tmp_path / "r" / GAMES_FILE).read_text().splitlines()):
        winner = "black" if record["black"]["name"] == "hopeful" else "white"
        assert (record["adjudicated"], record["winner"], record["termination"]) == ("resign", winner, "normal")
        assert len(record["moves"]) == 4  # two moves each, then the resignation
        check_record(GameRecord.model_validate(record))
    argv = ["match", "--size", "6x6", "--games", "1", "-j", "1", "--draw", "movenumber=3,movecount=2,score=1"]
    assert main([*argv, "--black", bot("calm", 0.5), "--white", bot("quiet", -0.5), "--out", str(tmp_path / "d")]) == 0
    (record,) = (json.loads(line) for line in (tmp_path / "d" / GAMES_FILE).read_text().splitlines())
    assert (record["adjudicated"], record["result"]) == ("draw", "1/2-1/2") and len(record["moves"]) == 4
