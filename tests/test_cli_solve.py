"""`alternator solve`: the value and best move on standard output, every move with --all, and one clear
line with exit status 2 for every kind of bad input."""

from __future__ import annotations

import pytest

from protocol.rules import Move, Position
from referee.cli import main
from sample_bots.solver import Solver
from tests.test_solver import brute


def test_prints_the_exact_value_and_a_best_move(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--size", "2x4", "--komi", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2x4, the empty board, black to move, komi 0"
    assert out[1] == "value: +2 (Black wins by 2 with perfect play)"
    best = Move.parse(out[2].removeprefix("best move: "))
    assert brute(Position(2, 4, 0.0).play(best)) == 2


def test_the_issue_s_3x5_position_gets_a_best_move_that_keeps_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    """It printed `best move: pass` (worth +15 to White) with the value +7: the table had filled before the
    root's entry was written. The move now comes from the root's own search."""
    assert main(["solve", "--size", "3x5", "--moves", "a2a1", "--komi", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "value: +7 (Black wins by 7 with perfect play)"
    best = Move.parse(out[2].removeprefix("best move: "))
    assert not best.is_pass
    position = Position.from_moves(["a2a1"], 3, 5, 0.0)
    assert Solver(position).move_value(best).score == 7


def test_all_gives_every_move_its_value(capsys: pytest.CaptureFixture[str]) -> None:
    position = Position.from_moves(["b2b1", "pass"], 3, 3, 1.0)
    assert main(["solve", "--size", "3", "--moves", "b2b1 pass", "--komi", "1", "--all"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "after a pass" in out[0]
    rows = [line.split() for line in out if line.startswith("  ")]
    assert len(rows) == len(position.legal_moves())
    values = {Move.parse(row[0]): float(row[1]) for row in rows}
    for move, value in values.items():
        assert value == brute(position.play(move)), str(move)
    assert [float(row[1]) for row in rows] == sorted(values.values(), reverse=True)  # best first for Black
    assert out[1].startswith(f"value: {'+' if brute(position) >= 0 else ''}")


def test_a_finished_game_prints_its_score(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--size", "3", "--moves", "pass pass"]) == 0
    assert "the game is over: white wins by 2.5" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--size", "1x4"], "1x4 board is not supported"),
        (["--size", "huge"], "is not a board size"),
        (["--size", "3", "--moves", "a1a3"], "move 1 is illegal: a1a3: a1 and a3 are not adjacent"),
        (["--size", "3", "--moves", "a1b1 zz"], "move 2: 'zz' is not a move"),
        (["--size", "3", "--moves", "pass pass a1b1"], "move 3 is illegal: a1b1: the game is over"),
        (["--size", "3", "--time-limit", "0"], "--time-limit 0.0: give a number of seconds"),
        (["--size", "8"], "64 roots are still in play: solving would take about"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("alternator solve: error: ")
    assert message in err[0]


def test_time_limit_gives_up_with_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    # 3x4 takes some 40,000 nodes: far more than any machine finishes in a millisecond.
    assert main(["solve", "--size", "3x4", "--time-limit", "0.001"]) == 1
    assert "no answer within --time-limit" in capsys.readouterr().err
