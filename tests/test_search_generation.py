"""The search's bitboard move generation and evaluation against plain scans of the board.

The search finds its first few captures and other placements, counts the legal placements and
counts the contested trees from bitboards grouped by tree size (sample_bots/search.py, `_classes`);
these tests hold them to the definitions: the rules engine's legal placements, the full sorted
order of `generate`, and a cell-by-cell count, on random positions of boards of several shapes.
"""

from __future__ import annotations

import random

import pytest

from protocol.rules import PASS, Move, Position
from sample_bots import strong
from sample_bots.search import Searcher, Settings

SHAPES = [(2, 2), (2, 5), (3, 3), (5, 3), (4, 6), (8, 8), (9, 7)]


def random_positions(seed: int, count: int) -> list[Position]:
    """Positions after random placements (and now and then a pass) on boards of several shapes."""
    rng = random.Random(seed)
    positions: list[Position] = []
    while len(positions) < count:
        width, height = rng.choice(SHAPES)
        position = Position(width, height, rng.choice([0.0, 0.5, 3.5]))
        for _ in range(rng.randint(0, width * height)):
            placements = position.legal_placements()
            if not placements:
                break
            position.push(rng.choice(placements))
        if rng.random() < 0.2:
            position.push(PASS)
        if not position.is_over():
            positions.append(position)
    return positions


def move_id(position: Position, move: Move) -> int:
    """The search's id of a placement: pit index * cells + root index."""
    assert move.pit is not None and move.root is not None
    n = position.width * position.height
    return position.cell_index(move.pit) * n + position.cell_index(move.root)


def test_generate_lists_exactly_the_legal_placements() -> None:
    for position in random_positions(1, 150):
        searcher = Searcher(position)
        caps, rest = searcher.generate()
        ids = sorted(m for _key, m in caps + rest)
        assert ids == sorted(move_id(position, m) for m in position.legal_placements()), position.to_string()
        assert searcher._placement_count(searcher._classes()) == position.placement_count()


@pytest.mark.parametrize("k", [1, 2, 5, 8, 300])
def test_the_first_captures_and_quiet_moves_are_the_full_orders_first(k: int) -> None:
    """`_captures` and `_quiet` give exactly the first k moves of `generate`'s sorted lists, ties included."""
    for position in random_positions(2, 150):
        searcher = Searcher(position)
        caps, rest = searcher.generate()
        classes = searcher._classes()
        assert searcher._captures(k, classes) == [m for _key, m in caps][:k], position.to_string()
        assert searcher._quiet(k, classes) == [m for _key, m in rest][:k], position.to_string()


def naive_contested(position: Position) -> int:
    """The contested trees' sizes, Black's less White's, cell by cell: a tree is contested when a
    neighbouring root is no bigger than it."""
    width, height = position.width, position.height
    total = 0
    for i in range(width * height):
        if position.parent[i] >= 0:
            continue
        f, r = i % width, i // width
        near = [(f + 1, r), (f - 1, r), (f, r + 1), (f, r - 1)]
        cells = [y * width + x for x, y in near if 0 <= x < width and 0 <= y < height]
        if any(position.parent[j] < 0 and position.size[j] <= position.size[i] for j in cells):
            total += position.size[i] if (f + r) % 2 == 0 else -position.size[i]
    return total


@pytest.mark.parametrize("contested", [0.0, 0.5, 1.0])
def test_the_evaluation_matches_a_cell_by_cell_count(contested: float) -> None:
    settings = Settings(contested=contested)
    for position in random_positions(3, 150):
        sign = 1 if position.turn.value == "black" else -1
        expected = sign * (position.black_margin - (1.0 - contested) * naive_contested(position) - position.komi)
        assert Searcher(position, settings=settings).evaluate() == pytest.approx(expected), position.to_string()


def test_moves_made_and_taken_back_keep_the_bitboards_in_step() -> None:
    rng = random.Random(4)
    for position in random_positions(4, 40):
        searcher = Searcher(position)
        start = searcher._state()
        made = []
        for _ in range(rng.randint(1, 12)):
            caps, rest = searcher.generate()
            moves = [m for _key, m in caps + rest] + [-1]
            if searcher.passes >= 2:
                break
            m = rng.choice(moves)
            made.append((m, searcher._make(m)))
            # The bitboards say what the size list says.
            size = searcher.size
            assert searcher.roots == sum(1 << i for i, s in enumerate(size) if s)
            for s in range(1, len(size) + 1):
                assert searcher.by_size[s] == sum(1 << i for i, t in enumerate(size) if t == s)
                assert bool(searcher.present >> s & 1) == bool(searcher.by_size[s])
        for m, token in reversed(made):
            searcher._unmake(m, token)
        assert searcher._state() == start


def test_a_search_cut_short_leaves_the_position_as_it_found_it() -> None:
    """Running out of time deep in the tree skips the take-backs on the way up; the searcher puts the
    position back, so the principal variation it reports is read from the right position."""
    position = Position(8, 8)
    searcher = Searcher(position, settings=strong.SETTINGS)
    start = searcher._state()
    info = searcher.search(0.02, use_all=True)
    assert searcher._state() == start
    assert position.is_legal(info.move)
    line = position.copy()
    for move in info.pv:
        assert line.is_legal(move)
        line.push(move)
