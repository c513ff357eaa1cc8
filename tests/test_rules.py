"""Tests of protocol.rules: the worked example, every illegal case and its message, notation, position
strings, the integer-level API, and random games checked move by move against the naive oracle."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter

import pytest

from protocol.rules import (
    BLACK,
    PASS,
    PASS_ID,
    WHITE,
    Cell,
    IllegalMoveError,
    InvalidMoveError,
    InvalidPositionError,
    Move,
    Outcome,
    Position,
    parse_size,
)
from tests.rules_oracle import OracleGame


def test_importing_the_rules_imports_neither_trio_nor_pydantic() -> None:
    code = "import protocol.rules, sys; assert 'trio' not in sys.modules and 'pydantic' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- board ----------------------------------------------------------------------------------------


def test_a1_is_dark_and_colours_alternate() -> None:
    assert Cell.parse("a1").color is BLACK
    assert Cell.parse("b1").color is WHITE
    assert Cell.parse("a2").color is WHITE
    assert Cell.parse("h8").color is BLACK
    assert Cell.parse("a8").color is WHITE


@pytest.mark.parametrize(("width", "height"), [(2, 2), (3, 2), (8, 8), (5, 3), (26, 26), (2, 26)])
def test_a_new_board_is_all_untouched_roots(width: int, height: int) -> None:
    position = Position(width, height)
    n = width * height
    assert position.scores() == ((n + 1) // 2, n // 2)
    assert position.turn is BLACK and not position.is_over() and position.outcome() is None
    # Every ordered pair of adjacent cells is a legal cherry, then pass.
    assert len(position.legal_moves()) == 2 * ((width - 1) * height + width * (height - 1)) + 1
    assert position.legal_moves()[-1] == PASS


@pytest.mark.parametrize(("width", "height"), [(1, 8), (8, 1), (27, 8), (8, 27), (0, 0)])
def test_unsupported_board_sizes_are_refused(width: int, height: int) -> None:
    with pytest.raises(InvalidPositionError, match=f"a {width}x{height} board is not supported"):
        Position(width, height)


def test_komi_must_be_finite() -> None:
    with pytest.raises(InvalidPositionError, match="finite"):
        Position(komi=float("nan"))


# -- the worked example of RULES.md ---------------------------------------------------------------


def test_worked_example() -> None:
    position = Position()
    assert position.scores() == (32, 32)
    expected = [
        ("d5d4", "d4", 2, BLACK, (33, 31)),
        ("d4e4", "e4", 3, WHITE, (31, 33)),
        ("e4e3", "e3", 4, BLACK, (34, 30)),
    ]
    for text, root, size, owner, scores in expected:
        position.push(position.parse_move(text))
        assert position.root_of(Cell.parse(text[:2])) == Cell.parse(root)
        assert position.tree_size(Cell.parse(root)) == size
        assert Cell.parse(root).color is owner
        assert position.scores() == scores
    with pytest.raises(IllegalMoveError) as error:
        position.parse_move("f3e3")
    assert str(error.value) == "f3e3: the tree at f3 (size 1) is smaller than the tree at e3 (size 4)"
    assert not position.is_legal(Move.parse("f3e3"))
    after = position.play("e3f3")
    assert after.tree_size(Cell.parse("f3")) == 5 and Cell.parse("f3").color is WHITE
    assert after.scores() == (34 - 4, 30 + 4)
    assert position.scores() == (34, 30), "play leaves the original unchanged"
    # d4 has a dot now and for ever: no later position allows d4e4.
    rng = random.Random(7)
    for _ in range(40):
        with pytest.raises(IllegalMoveError, match=r"^d4e4: d4 already has a dot$"):
            position.check(Move.parse("d4e4"))
        if position.is_over():
            break
        position.push(rng.choice(position.legal_moves()))


# -- every way a move can be wrong, with its message ----------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "d5", "d5d", "D5D4", "d0d1", "d5 d4", " d5d4", "pass ", "PASS", "d5-d4", "d5d4d3", "55", "d05d4", "d100d99"],
)
def test_malformed_moves_are_invalid_not_illegal(text: str) -> None:
    with pytest.raises(InvalidMoveError, match="is not a move") as error:
        Position().parse_move(text)
    assert not isinstance(error.value, IllegalMoveError)
    assert isinstance(error.value, ValueError)


ILLEGAL_CASES = [
    # (moves before, move, exact message)
    ([], "z9z8", "z9z8: z9 is off the 8x8 board"),
    ([], "h8i8", "h8i8: i8 is off the 8x8 board"),
    ([], "a1a9", "a1a9: a9 is off the 8x8 board"),
    (["d5d4"], "d4e4", None),  # legal: d4 is still a root
    (["d5d4", "d4e4"], "d4e4", "d4e4: d4 already has a dot"),
    (["d5d4"], "e4d5", "e4d5: d5 already has a dot"),
    ([], "a1c1", "a1c1: a1 and c1 are not adjacent"),
    ([], "a1b2", "a1b2: a1 and b2 are not adjacent"),
    ([], "a1a1", "a1a1: the pit and the root must be different (adjacent) cells"),
    (["d5d4", "d4e4", "e4e3"], "f3e3", "f3e3: the tree at f3 (size 1) is smaller than the tree at e3 (size 4)"),
    (["a1a2", "pass", "pass"], "b1b2", "b1b2: the game is over"),
    (["pass", "pass"], "pass", "pass: the game is over"),
]


@pytest.mark.parametrize(("before", "text", "message"), ILLEGAL_CASES)
def test_illegal_moves_say_exactly_why(before: list[str], text: str, message: str | None) -> None:
    position = Position.from_moves(before)
    move = Move.parse(text)
    if message is None:
        position.check(move)
        return
    for attempt in (position.check, position.push, lambda m: position.parse_move(str(m))):
        with pytest.raises(IllegalMoveError) as error:
            attempt(move)
        assert str(error.value) == message
        assert not isinstance(error.value, InvalidMoveError)
    assert not position.is_legal(move)
    assert position.history == [Move.parse(m) for m in before], "a refused move changes nothing"


def test_off_board_on_a_small_board_names_its_size() -> None:
    with pytest.raises(IllegalMoveError, match=r"^c1b1: c1 is off the 2x3 board$"):
        Position(2, 3).check(Move.parse("c1b1"))
    with pytest.raises(IllegalMoveError, match=r"^a4a3: a4 is off the 2x3 board$"):
        Position(2, 3).check(Move.parse("a4a3"))


def test_a_cell_past_any_edge_is_illegal_not_a_crash() -> None:
    # A search that steps to a neighbour past the edge of a 26-wide board, or below a1, asks about such cells.
    position = Position(26, 26)
    for move, shown in [
        (Move(Cell(25, 0), Cell(26, 0)), "Cell(26, 0)"),
        (Move(Cell(0, 0), Cell(-1, 0)), "Cell(-1, 0)"),
        (Move(Cell(0, 0), Cell(0, -1)), "Cell(0, -1)"),
    ]:
        assert not position.is_legal(move)
        with pytest.raises(IllegalMoveError, match=re.escape(f"{shown} is off the 26x26 board")):
            position.check(move)


def test_from_moves_names_the_bad_move_and_its_number() -> None:
    with pytest.raises(IllegalMoveError, match=r"^move 3: d4e4: d4 already has a dot$"):
        Position.from_moves(["d5d4", "d4e4", "d4e4"])
    with pytest.raises(InvalidMoveError, match=r"^move 2: 'x' is not a move"):
        Position.from_moves(["d5d4", "x"])


def test_pop_with_nothing_to_take_back() -> None:
    with pytest.raises(IndexError, match="no moves to take back"):
        Position().pop()


# -- end of game and outcome ----------------------------------------------------------------------


def test_two_passes_end_the_game_and_a_placement_between_resets() -> None:
    position = Position.from_moves(["pass", "d5d4", "pass"])
    assert not position.is_over() and position.turn is WHITE
    position.push(PASS)
    assert position.is_over() and position.legal_moves() == [] and position.placement_count() == 0
    # Placements would still fit on the board, but none is legal once the game is over.
    assert position.legal_placements() == [] and not position.has_legal_placement()
    outcome = position.outcome()
    assert outcome == Outcome(WHITE, 33.0, 34.5)
    assert outcome.winner is WHITE and outcome.margin == 1.5 and outcome.result() == "0-1"
    assert str(outcome) == "white wins by 1.5, 33-34.5"


def test_whole_number_komi_allows_a_draw() -> None:
    position = Position(komi=0).play("pass").play("pass")
    outcome = position.outcome()
    assert outcome is not None and outcome.winner is None and outcome.margin == 0
    assert outcome.result() == "1/2-1/2" and str(outcome) == "draw, 32-32"
    black_win = Position(2, 2, komi=1).play("b1a1").play("pass").play("pass").outcome()
    assert black_win is not None and black_win.winner is BLACK and black_win.result() == "1-0"
    assert (black_win.black_score, black_win.white_score, black_win.margin) == (3.0, 2.0, 1.0)


def test_no_placement_left_means_only_pass() -> None:
    # On 2x2, a1->b1 then a2->b2: b1 and b2 are adjacent roots of size 2, so b1b2 is still legal; then none.
    position = Position.from_moves(["a1b1", "a2b2", "b1b2"], 2, 2)
    assert not position.has_legal_placement()
    assert position.legal_moves() == [PASS]
    assert position.scores() == (4, 0)  # one tree of 4, rooted at the dark b2


# -- notation -------------------------------------------------------------------------------------


def test_notation_round_trips_on_every_board_size() -> None:
    # A cell's name does not depend on the board, and every board's cells and placements are among the
    # 26x26 board's, so round-tripping all of those covers every size.
    for file in range(26):
        for rank in range(26):
            pit = Cell(file, rank)
            assert Cell.parse(str(pit)) == pit
            for root in (Cell(file + 1, rank), Cell(file, rank + 1)):
                if root.file < 26 and root.rank < 26:
                    for move in (Move(pit, root), Move(root, pit)):
                        assert Move.parse(str(move)) == move
    assert str(Move.parse("pass")) == "pass" and Move.parse("pass") is PASS and PASS.is_pass
    assert str(Move.parse("z26y26")) == "z26y26" and Move.parse("c12c11") == Move(Cell(2, 11), Cell(2, 10))


@pytest.mark.parametrize(("width", "height"), [(2, 2), (3, 2), (8, 8), (26, 26), (26, 2), (7, 19)])
def test_placement_ids_and_moves_convert_both_ways(width: int, height: int) -> None:
    position = Position(width, height)
    ids = position.placement_ids()
    assert ids == list(range(len(ids))), "on an empty board every placement is legal, ids in order"
    for placement_id in ids:
        text = str(position.move_of(placement_id))
        assert position.id_of(Move.parse(text)) == placement_id
        assert Move.parse(text).pit is not None


def test_id_of_refuses_non_placements() -> None:
    position = Position(4, 4)
    assert position.id_of(PASS) == PASS_ID and position.move_of(PASS_ID) is PASS
    with pytest.raises(IllegalMoveError, match=r"^a1c1: a1 and c1 are not adjacent$"):
        position.id_of(Move.parse("a1c1"))
    with pytest.raises(IllegalMoveError, match=r"^e1d1: e1 is off the 4x4 board$"):
        position.id_of(Move.parse("e1d1"))


# -- position strings and the diagram -------------------------------------------------------------


def test_position_string_of_the_empty_board_and_the_worked_example() -> None:
    assert Position().to_string() == "8/8/8/8/8/8/8/8 b 0 3.5"
    position = Position.from_moves(["d5d4", "d4e4", "e4e3", "pass"], komi=0)
    assert position.to_string() == "8/8/8/3s4/3es3/8/8/8 b 1 0"
    back = Position.from_string(position.to_string())
    assert back == position and back.scores() == position.scores()
    assert back.legal_moves() == position.legal_moves()
    assert back.tree_size(Cell.parse("d5")) == 4


def test_position_string_round_trips_through_random_games() -> None:
    rng = random.Random(3)
    for width, height in [(2, 2), (3, 5), (8, 8), (26, 3)]:
        position = Position(width, height, komi=rng.choice([0, 3.5, -2, 7.25]))
        while not position.is_over():
            text = position.to_string()
            back = Position.from_string(text)
            assert back == position and back.to_string() == text
            assert back.legal_moves() == position.legal_moves()
            assert (back.scores(), back.placement_count()) == (position.scores(), position.placement_count())
            position.push(rng.choice(position.legal_moves()))
        assert Position.from_string(position.to_string()).is_over()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ew/2 b 0 3.5", "the stems from a2 go round in a cycle"),
        ("2/ew b 0 3.5", "the stems from a1 go round in a cycle"),
        ("n1/2 b 0 3.5", "the stem of a2 points off the board"),
        ("2/1e b 0 3.5", "the stem of b1 points off the board"),
        ("2/s1 b 0 3.5", "the stem of a1 points off the board"),
        ("w1/2 b 0 3.5", "the stem of a2 points off the board"),
        ("2/2 b 0", "expected 4 fields"),
        ("2/2 b 0 3.5 x", "expected 4 fields"),
        ("2/2 x 0 3.5", "the turn must be b or w"),
        ("2/2 b 3 3.5", "the passes just made must be 0, 1 or 2"),
        ("2/2 b 0 lots", "the komi must be a number"),
        ("2/2 b 0 inf", "the komi must be a finite number"),
        ("2/x1 b 0 3.5", "'x' is not a stem direction"),
        ("2/3 b 0 3.5", "the ranks are not all the same width"),
        ("2 b 0 3.5", "1 ranks; a board has 2 to 26 ranks"),
        ("1/1 b 0 3.5", "a 1x2 board is not supported"),
        ("99999999999/2 b 0 3.5", "more than 26 cells"),
        ("0/0 b 0 3.5", "the rank '0' has a run of 0 roots"),
        ("20e6/2 b 0 3.5", "the rank '20e6' has more than 26 cells"),
    ],
)
def test_bad_position_strings_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(InvalidPositionError) as error:
        Position.from_string(text)
    assert reason in str(error.value)
    assert repr(text) in str(error.value)


def test_diagram_shows_stems_sizes_owners_and_scores() -> None:
    position = Position.from_moves(["d5d4", "d4e4", "e4e3"])
    lines = position.diagram().splitlines()
    assert lines[0].split() == list("abcdefgh")
    rank5 = lines[1 + 8 - 5].split()
    assert rank5 == ["5", ".", ".", ".", "v", ".", ".", ".", "."]
    assert lines[1 + 8 - 4].split() == ["4", ".", ".", ".", ">", "v", ".", ".", "."]
    assert lines[1 + 8 - 3].split() == ["3", ".", ".", ".", ".", "4B", ".", ".", "."]
    assert lines[-1] == "Black 34, White 30 + komi 3.5 = 33.5; white to move after 3 moves"
    assert str(position) == position.diagram()
    assert repr(position) == "Position.from_string('8/8/8/3s4/3es3/8/8/8 w 0 3.5')"
    assert eval(repr(position)) == position


# -- the integer-level API ------------------------------------------------------------------------


def test_int_api_matches_move_api() -> None:
    rng = random.Random(11)
    position = Position(5, 4)
    while not position.is_over():
        ids = position.placement_ids()
        assert [position.move_of(i) for i in ids] == position.legal_placements()
        assert position.placement_count() == len(ids)
        assert position.has_legal_placement() == bool(ids)
        choice = position.random_placement_id(rng)
        assert choice in ids or (choice == PASS_ID and not ids)
        if rng.random() < 0.1:
            choice = PASS_ID
        position.push_id(choice)
        assert position.history[-1] == position.move_of(choice)
    assert position.random_placement_id(rng) == PASS_ID
    with pytest.raises(IllegalMoveError, match="the game is over"):
        position.push_id(PASS_ID)


def test_push_id_refuses_an_illegal_placement_with_the_reason() -> None:
    position = Position.from_moves(["d5d4", "d4e4", "e4e3"])
    with pytest.raises(IllegalMoveError, match=r"^f3e3: the tree at f3 \(size 1\) is smaller"):
        position.push_id(position.id_of(Move.parse("f3e3")))
    with pytest.raises(IllegalMoveError, match=r"^d4c4: d4 already has a dot$"):
        position.push_id(position.id_of(Move.parse("d4c4")))
    for bad in (-2, 10**6, len(Position().placement_ids())):
        with pytest.raises(
            IllegalMoveError, match=f"^{bad} is not a placement id on the 8x8 board: ids run from 0 to 223"
        ):
            position.push_id(bad)
    assert len(position.history) == 3


def test_random_placement_id_is_uniform_over_legal_placements() -> None:
    # Unequal trees make some edges offer one direction and others two: each placement must still be as likely.
    position = Position.from_moves(["b2b1", "c3c2", "pass"], 4, 3)
    ids = position.placement_ids()
    rng = random.Random(5)
    draws = 200 * len(ids)
    counts = Counter(position.random_placement_id(rng) for _ in range(draws))
    assert set(counts) == set(ids)
    for placement_id in ids:
        assert 140 < counts[placement_id] < 260, (position.move_of(placement_id), counts[placement_id])


# -- differential: the engine against the naive oracle, at every position of random games ----------


def _compare(position: Position, oracle: OracleGame) -> None:
    assert [str(m) for m in position.legal_moves()] == oracle.legal_moves()
    placements = [m for m in oracle.legal_moves() if m != "pass"]
    assert (position.placement_count(), position.has_legal_placement()) == (len(placements), bool(placements))
    assert position.scores() == oracle.scores()
    assert position.is_over() == oracle.is_over()
    assert str(position.turn) == oracle.turn
    outcome = position.outcome()
    expected = oracle.outcome()
    if expected is None:
        assert outcome is None
    else:
        assert outcome is not None
        assert (None if outcome.winner is None else str(outcome.winner), outcome.black_score, outcome.white_score) == (
            expected
        )


def _probe_illegal(position: Position, oracle: OracleGame, rng: random.Random) -> None:
    """A few random (often illegal) moves: both must agree on legality, and on the reason."""
    reasons = {
        "off": "off the",
        "pit-dot": "already has a dot",
        "root-dot": "already has a dot",
        "not-adjacent": "are not adjacent",
        "smaller": "is smaller than",
        "over": "the game is over",
    }
    for _ in range(3):
        f, r = rng.randrange(min(position.width + 1, 26)), rng.randrange(position.height + 1)
        df, dr = rng.choice([(0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (2, 0)])
        if f + df < 0 or r + dr < 0 or f + df > 25:
            continue
        move = Move(Cell(f, r), Cell(f + df, r + dr))
        reason = oracle.why_illegal(str(move))
        if reason is None:
            assert position.is_legal(move)
        else:
            with pytest.raises(IllegalMoveError, match=reasons[reason]):
                position.check(move)


@pytest.mark.parametrize(
    ("width", "height", "games", "komi"),
    [(2, 2, 60, 0), (3, 2, 60, 3.5), (4, 4, 30, 1), (5, 3, 30, 3.5), (8, 8, 8, 3.5), (26, 26, 2, 3.5)],
)
def test_engine_agrees_with_oracle_through_random_games(width: int, height: int, games: int, komi: float) -> None:
    rng = random.Random(width * 100 + height)
    # On 26x26 the oracle is slow: compare at every 8th position.
    every = 8 if width * height > 100 else 1
    # On big boards, rare passes so that games go on to the end, where no placement is left.
    pass_chance = 0.08 if width * height <= 64 else 0.002
    longest = 0
    for _ in range(games):
        position, oracle = Position(width, height, komi), OracleGame(width, height, komi)
        while True:
            if len(position.history) % every == 0 or position.is_over():
                _compare(position, oracle)
                _probe_illegal(position, oracle, rng)
            if position.is_over():
                longest = max(longest, position.placements)
                break
            moves = position.legal_moves()
            # Pass now and then, so that passes, resets and early ends are covered too.
            move = PASS if rng.random() < pass_chance else rng.choice(moves)
            position.push(move)
            oracle.play(str(move))
    assert longest > width * height // 3, "the games were long enough to test something"


@pytest.mark.parametrize(("text", "size"), [("8", (8, 8)), ("9x7", (9, 7)), (" 26X2 ", (26, 2)), ("2", (2, 2))])
def test_board_sizes_are_written_as_a_number_or_files_x_ranks(text: str, size: tuple[int, int]) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("8by8", "'8by8' is not a board size: write a number like 8, or files x ranks like 9x7"),
        ("", "'' is not a board size"),
        ("27x8", "'27x8': a 27x8 board is not supported; width and height must be 2 to 26"),
        ("1", "'1': a 1x1 board is not supported"),
    ],
)
def test_a_bad_board_size_says_what_a_size_looks_like(text: str, says: str) -> None:
    with pytest.raises(InvalidPositionError) as error:
        parse_size(text)
    assert says in str(error.value)


# -- edges found by mutating the rules ---------------------------------------------------------------


@pytest.mark.parametrize("move", [Move(None, Cell.parse("a1")), Move(Cell.parse("a1"), None)])
def test_a_half_empty_move_is_no_pass(move: Move) -> None:
    position = Position(4, 4)
    assert not move.is_pass and str(move) != "pass"
    for attempt in (position.check, position.push, position.id_of):
        with pytest.raises(IllegalMoveError, match="a placement needs both a pit and a root cell"):
            attempt(move)
    assert not position.is_legal(move) and position.history == []


def test_a_pit_equal_to_its_root_is_refused_on_every_path() -> None:
    position = Position(4, 4)
    for attempt in (position.check, position.id_of):
        with pytest.raises(
            IllegalMoveError, match=r"^b2b2: the pit and the root must be different \(adjacent\) cells$"
        ):
            attempt(Move.parse("b2b2"))


def test_positions_differ_when_anything_that_decides_the_game_differs() -> None:
    base = Position.from_moves(["a1a2"], 4, 4)
    assert base == Position.from_moves(["a1a2"], 4, 4)
    assert base != Position.from_moves(["a1b1"], 4, 4)  # another stem
    assert base != Position.from_moves(["a1a2", "pass"], 4, 4)  # another turn, one pass made
    assert base != Position.from_moves(["a1a2"], 4, 4, komi=0.5)  # another komi
    assert base != Position.from_moves(["a1a2"], 4, 5)  # another board
    passed = Position.from_moves(["pass", "a1a2", "pass"], 4, 4)
    assert passed != Position.from_moves(["a1a2", "pass", "pass"], 4, 4)  # the same board, the game over in one
    assert base != "a1a2" and base.__eq__("a1a2") is NotImplemented


def test_push_id_zero_is_the_first_placement() -> None:
    position = Position(3, 3)
    first = position.move_of(0)
    assert first == position.legal_placements()[0] and not first.is_pass
    position.push_id(0)
    assert position.history == [first]
    assert position == Position.from_moves([str(first)], 3, 3)
    assert first.root is not None and position.tree_size(first.root) == 2
