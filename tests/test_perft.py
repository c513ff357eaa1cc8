"""Perft: the engine's counts against the golden file, against the naive oracle, and against a plain
push/pop count through the public API (which checks the engine's bulk-counting shortcut)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from protocol.rules import PASS, Position, perft
from tests.rules_oracle import OracleGame, oracle_perft

GOLDEN = json.loads((Path(__file__).parent / "golden" / "perft.json").read_text())["boards"]
GOLDEN_CASES = [(board, int(depth), count) for board, counts in GOLDEN.items() for depth, count in counts.items()]

# The golden figures the oracle can recheck in a second or so each. The rest were checked once, offline:
# 8x8 depth 3 (the oracle took about 130 s), 4x4 depth 4 (about 13 s), 26x26 depth 2 (about 11 minutes).
ORACLE_CHEAP = {"8x8": 2, "4x4": 3, "2x2": 9, "3x2": 5, "3x3": 3, "5x3": 2, "26x26": 1}


def _size(board: str) -> tuple[int, int]:
    width, height = board.split("x")
    return int(width), int(height)


def test_golden_file_has_the_required_figures() -> None:
    assert GOLDEN["8x8"] == {"1": 225, "2": 48425, "3": 9961696}
    assert GOLDEN["4x4"] == {"1": 49, "2": 1993, "3": 66672, "4": 1821168}


@pytest.mark.parametrize(("board", "depth", "count"), GOLDEN_CASES)
def test_engine_matches_golden(board: str, depth: int, count: int) -> None:
    position = Position(*_size(board))
    assert perft(position, depth) == count


@pytest.mark.parametrize(
    ("board", "depth", "count"), [case for case in GOLDEN_CASES if case[1] <= ORACLE_CHEAP[case[0]]]
)
def test_oracle_matches_golden(board: str, depth: int, count: int) -> None:
    assert oracle_perft(OracleGame(*_size(board)), depth) == count


def _plain_perft(position: Position, depth: int) -> int:
    """Perft the obvious way, through the public Move API only."""
    if depth == 0:
        return 1
    total = 0
    for move in position.legal_moves():
        position.push(move)
        total += _plain_perft(position, depth - 1)
        position.pop()
    return total


def _random_positions(width: int, height: int, count: int, seed: int) -> list[list[str]]:
    """Move lists reaching varied positions, some ending in a pass (so perft meets game ends)."""
    rng = random.Random(seed)
    games = []
    for _ in range(count):
        position = Position(width, height)
        for _ in range(rng.randrange(width * height)):
            if position.is_over():
                break
            moves = position.legal_moves()
            position.push(PASS if rng.random() < 0.15 else rng.choice(moves))
        if position.is_over():
            position.pop()
        games.append([str(m) for m in position.history])
    return games


@pytest.mark.parametrize(
    ("width", "height", "depth", "games"),
    [(2, 2, 4, 12), (3, 2, 3, 12), (4, 4, 2, 10), (5, 3, 2, 10), (3, 3, 3, 6), (8, 8, 1, 5), (2, 6, 3, 6)],
)
def test_engine_and_oracle_agree_on_perft_from_random_positions(
    width: int, height: int, depth: int, games: int
) -> None:
    for moves in _random_positions(width, height, games, seed=width * 31 + height):
        position = Position.from_moves(moves, width, height)
        oracle = OracleGame(width, height)
        for move in moves:
            oracle.play(move)
        for d in range(depth + 1):
            assert perft(position, d) == oracle_perft(oracle, d), (moves, d)


@pytest.mark.parametrize(("width", "height", "depth"), [(8, 8, 3), (5, 5, 3), (2, 2, 6), (3, 2, 5), (9, 4, 3)])
def test_bulk_counting_matches_plain_push_pop(width: int, height: int, depth: int) -> None:
    for moves in _random_positions(width, height, 4, seed=width + 7 * height):
        position = Position.from_moves(moves, width, height)
        if depth == 3 and width * height >= 25 and len(moves) < width * height // 3:
            continue  # early positions at depth 3 make the plain count slow; later ones cover the same code
        before = (position.to_string(), list(position.history), list(position._live), position.placement_count())
        assert perft(position, depth) == _plain_perft(position, depth), moves
        after = (position.to_string(), list(position.history), list(position._live), position.placement_count())
        assert after == before, "perft leaves the position exactly as it was"


def test_depth_zero_and_finished_games() -> None:
    assert perft(Position(), 0) == 1
    over = Position.from_moves(["d5d4", "pass", "pass"])
    assert perft(over, 0) == 1
    assert [perft(over, d) for d in (1, 2, 3)] == [0, 0, 0]
    one_pass = Position.from_moves(["pass"], 2, 2)
    # After one pass: 8 placements (each followed by 8 - their losses + pass) and a pass that ends the game.
    assert perft(one_pass, 1) == 9
    assert perft(one_pass, 2) == perft(Position(2, 2), 2) - perft(Position(2, 2), 1)
