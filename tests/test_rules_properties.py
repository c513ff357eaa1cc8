"""Property-based tests (hypothesis) of every fact RULES.md says always holds, over random games on
random board sizes, plus notation round-trips and exact take-backs."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.rules import (
    BLACK,
    PASS,
    WHITE,
    Cell,
    InvalidMoveError,
    Move,
    Position,
)

# 0 means "pass"; any other number picks a legal move by index, so passes are about one choice in ten.
choices = st.lists(st.integers(min_value=0, max_value=9999), max_size=60)
sizes = st.tuples(st.integers(min_value=2, max_value=6), st.integers(min_value=2, max_value=6))
komis = st.sampled_from([3.5, 0.0, 1.0, -2.5, 7.0, 0.5])

SETTINGS = settings(max_examples=120, deadline=None)


def _state(position: Position) -> tuple[Any, ...]:
    """Everything a position holds, incremental bookkeeping included."""
    roots = [position.size[i] if position.parent[i] < 0 else -1 for i in range(len(position.parent))]
    return (
        position.to_string(),
        list(position.parent),
        roots,
        list(position._live),
        position.placement_count(),
        position.black_margin,
        position.placements,
        position.turn,
        position.consecutive_passes,
        list(position.history),
        position.scores(),
    )


def _pick(position: Position, choice: int | None) -> Move:
    """The move a choice stands for; None means: play on to the end, first placement else pass."""
    moves = position.legal_moves()
    if choice is None:
        return moves[0]
    if choice == 0:
        return PASS
    return moves[choice % len(moves)]


def _play_game(width: int, height: int, komi: float, picks: list[int]) -> Position:
    """Play `picks` then to the end, checking every invariant at every move."""
    position = Position(width, height, komi)
    n = width * height
    states = [_state(position)]
    step = 0
    while not position.is_over():
        move = _pick(position, picks[step] if step < len(picks) else None)
        step += 1
        _check_invariants(position, n)
        black_before, _ = position.scores()
        margin_before = position.black_margin
        grown = position.tree_size(move.pit) if move.pit is not None else 0

        # push then pop restores the exact position.
        before = _state(position)
        position.push(move)
        position.pop()
        assert _state(position) == before

        position.push(move)
        states.append(_state(position))
        if move.pit is not None and move.root is not None:
            sign = 1 if move.root.color is BLACK else -1
            assert position.black_margin - margin_before == 2 * sign * grown
            assert position.scores()[0] - black_before == sign * grown
            assert position.has_dot(move.pit)
            assert position.tree_size(move.root) == position.tree_size(move.pit)
    _check_invariants(position, n)
    _check_end(position, n)

    # Taking every move back walks through exactly the same states, down to the empty board.
    for state in reversed(states[:-1]):
        position.pop()
        assert _state(position) == state
    assert position == Position(width, height, komi)
    return position


def _check_invariants(position: Position, n: int) -> None:
    black, white = position.scores()
    assert black + white == n
    placements = sum(1 for move in position.history if move.pit is not None)
    roots = sum(1 for q in position.parent if q < 0)
    assert roots == n - placements == n - position.placements
    assert placements <= n - 1
    # The tree sizes of the roots add up to the board, and Black's are the dark roots'.
    sizes = {i: position.size[i] for i in range(n) if position.parent[i] < 0}
    assert sum(sizes.values()) == n
    cells = [Cell(i % position.width, i // position.width) for i in range(n)]
    assert black == sum(size for i, size in sizes.items() if cells[i].color is BLACK)
    # The turn alternates from Black.
    assert position.turn is (BLACK if len(position.history) % 2 == 0 else WHITE)
    # Rebuilding from the position string gives the same legal moves and bookkeeping.
    rebuilt = Position.from_string(position.to_string())
    assert rebuilt == position
    assert rebuilt.legal_moves() == position.legal_moves()
    assert rebuilt.placement_count() == position.placement_count() == len(position.legal_placements())
    assert sorted(rebuilt._live) == sorted(position._live)
    for move in position.legal_moves():
        assert position.is_legal(move)
        assert Move.parse(str(move)) == move
        assert position.parse_move(str(move)) == move


def _check_end(position: Position, n: int) -> None:
    assert position.is_over() and position.legal_moves() == []
    history = position.history
    assert history[-2:] == [PASS, PASS]
    for a, b in itertools.pairwise(history[:-1]):
        assert not (a == PASS and b == PASS), "two passes in a row end the game"
    assert len(history) <= 2 * (n - 1) + 2, "at most one pass between placements, plus the final two"
    outcome = position.outcome()
    assert outcome is not None
    black, white = position.scores()
    assert (outcome.black_score, outcome.white_score) == (black, white + position.komi)
    assert outcome.margin == abs(black - white - position.komi)
    if black > white + position.komi:
        assert outcome.winner is BLACK and outcome.result() == "1-0"
    elif black < white + position.komi:
        assert outcome.winner is WHITE and outcome.result() == "0-1"
    else:
        assert outcome.winner is None and outcome.result() == "1/2-1/2" and float(position.komi).is_integer()


@SETTINGS
@given(sizes, komis, choices)
def test_every_invariant_holds_through_random_games(size: tuple[int, int], komi: float, picks: list[int]) -> None:
    _play_game(*size, komi, picks)


@settings(max_examples=15, deadline=None)
@given(
    st.tuples(st.integers(min_value=2, max_value=26), st.integers(min_value=2, max_value=26)),
    st.lists(st.integers(min_value=1, max_value=9999), max_size=30),
)
def test_invariants_on_any_board_size(size: tuple[int, int], picks: list[int]) -> None:
    position = Position(*size)
    n = size[0] * size[1]
    for choice in picks:
        if position.is_over():
            break
        before = _state(position)
        move = _pick(position, choice)
        position.push(move)
        _check_invariants(position, n)
        position.pop()
        assert _state(position) == before
        position.push(move)


@SETTINGS
@given(
    st.integers(min_value=2, max_value=26),
    st.integers(min_value=2, max_value=26),
    st.data(),
)
def test_notation_round_trips(width: int, height: int, data: st.DataObject) -> None:
    file = data.draw(st.integers(min_value=0, max_value=width - 1))
    rank = data.draw(st.integers(min_value=0, max_value=height - 1))
    pit = Cell(file, rank)
    for root in (Cell(file + 1, rank), Cell(file - 1, rank), Cell(file, rank + 1), Cell(file, rank - 1)):
        if 0 <= root.file < width and 0 <= root.rank < height:
            move = Move(pit, root)
            text = str(move)
            assert Move.parse(text) == move and str(Move.parse(text)) == text
            position = Position(width, height)
            assert position.move_of(position.id_of(move)) == move
            assert position.parse_move(text) == move


@SETTINGS
@given(st.text(alphabet="abyz0123456789 pas", max_size=8))
def test_any_text_is_a_move_written_exactly_so_or_invalid(text: str) -> None:
    try:
        move = Move.parse(text)
    except InvalidMoveError as error:
        assert repr(text) in str(error)
        return
    assert str(move) == text


@SETTINGS
@given(choices)
def test_worked_example_d4e4_is_never_legal_again(picks: list[int]) -> None:
    position = Position.from_moves(["d5d4", "d4e4", "e4e3"])
    assert position.scores() == (34, 30)
    d4e4 = Move.parse("d4e4")
    for choice in picks:
        assert not position.is_legal(d4e4)
        if position.is_over():
            break
        position.push(_pick(position, choice))
    assert not position.is_legal(d4e4)
