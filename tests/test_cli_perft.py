"""`alternator perft` through referee.cli.main, and once as a real `python -m referee` process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from protocol.rules import Position, perft
from referee.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["perft", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_count_alone_on_the_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = _run(capsys, "--depth", "2")
    assert code == 0 and lines == ["48425"]
    assert "perft(2) on 8x8" in err and " s" in err


def test_size_moves_and_komi(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = _run(capsys, "--size", "4x4", "--depth", "3")
    assert code == 0 and lines[-1] == "66672"
    code, lines, _ = _run(capsys, "--size", "5x3", "--depth", "2", "--moves", "a1a2  b2b1 pass", "--komi", "0")
    expected = perft(Position.from_moves(["a1a2", "b2b1", "pass"], 5, 3, komi=0), 2)
    assert code == 0 and lines[-1] == str(expected)
    code, lines, _ = _run(capsys, "--size", "2x2", "--depth", "1", "--moves", "pass pass")
    assert code == 0 and lines == ["0"], "a finished game has no moves"
    code, lines, _ = _run(capsys, "--depth", "0")
    assert code == 0 and lines == ["1"]


def test_divide_lists_each_first_move_then_the_total(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = _run(capsys, "--size", "3x2", "--depth", "3", "--divide", "--moves", "a1b1")
    position = Position.from_moves(["a1b1"], 3, 2)
    expected = []
    for move in position.legal_moves():
        position.push(move)
        expected.append(f"{move}: {perft(position, 2)}")
        position.pop()
    assert code == 0
    assert lines[:-1] == expected
    assert lines[-1] == str(sum(int(line.split(": ")[1]) for line in expected)) == str(perft(position, 3))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--moves", "d5d4 d4e4 d4e4"], "--moves: move 3 is illegal: d4e4: d4 already has a dot"),
        (["--moves", "d5d4 d4e4 e4e3 f3e3"], "move 4 is illegal: f3e3: the tree at f3 (size 1) is smaller"),
        (["--moves", "z9z8"], "move 1 is illegal: z9z8: z9 is off the 8x8 board"),
        (["--moves", "a1c1"], "move 1 is illegal: a1c1: a1 and c1 are not adjacent"),
        (["--moves", "a1a1"], "move 1 is illegal: a1a1: the pit and the root must be different (adjacent) cells"),
        (["--moves", "pass pass a1a2"], "move 3 is illegal: a1a2: the game is over"),
        (["--moves", "d5d4 e4"], "--moves: move 2: 'e4' is not a move"),
        (["--size", "8by8"], "--size '8by8' is not a board size: write a number like 8, or files x ranks like 9x7"),
        (["--size", "27x8"], "--size '27x8': a 27x8 board is not supported; width and height must be 2 to 26"),
        (["--size", "1x5"], "a 1x5 board is not supported"),
        (["--depth", "-1"], "--depth -1: the depth must be 0 or more"),
    ],
)
def test_errors_name_the_problem(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    if "--depth" not in args:
        args = [*args, "--depth", "1"]
    code, lines, err = _run(capsys, *args)
    assert code == 2 and lines == []
    assert err.startswith("alternator perft: error: ")
    assert message in err


def test_depth_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["perft"])
    assert exit_info.value.code == 2
    assert "--depth" in capsys.readouterr().err


def test_real_process() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "referee", "perft", "--size", "4x4", "--depth", "3", "--divide"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "66672"
    # After a pass, the second pass would end the game: 1993 - 49 positions.
    assert len(lines) == 49 + 1 and lines[:2] == ["a1b1: 1514", "a1a2: 1514"] and lines[-2] == "pass: 1944"
    assert sum(int(line.split(": ")[1]) for line in lines[:-1]) == 66672
    assert "perft(3) on 4x4" in result.stderr
