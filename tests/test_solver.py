"""The exact solver, and the search that uses it, against a brute-force minimax over the rules engine.

The brute force is as plain as it can be: every legal move, to the end of the game, memoised on the
position string; it knows nothing of the solver's live cells, symmetries or move ordering. Limits in
these tests are nodes and depths, never time.
"""

from __future__ import annotations

import random

import pytest

from protocol.rules import BLACK, PASS, Move, Position
from sample_bots import strong
from sample_bots.search import DEFAULT, Searcher, Settings, choose_move
from sample_bots.solver import Solver, live_roots, solve

_memo: dict[str, int] = {}


def brute_margin(position: Position) -> int:
    """The final Black - White tree totals with perfect play. Komi is a constant, so it plays no part."""
    if position.is_over():
        black, white = position.scores()
        return black - white
    key = position.to_string().rsplit(" ", 1)[0]  # the komi field left out
    if key not in _memo:
        values = []
        for move in position.legal_moves():
            position.push(move)
            values.append(brute_margin(position))
            position.pop()
        _memo[key] = max(values) if position.turn is BLACK else min(values)
    return _memo[key]


def brute(position: Position) -> float:
    """The final score Black - White, komi included, with perfect play by both sides."""
    return brute_margin(position) - position.komi


def mover_value(score: float, position: Position) -> float:
    return score if position.turn is BLACK else -score


def random_position(rng: random.Random, width: int, height: int, plies: int, komi: float) -> Position:
    position = Position(width, height, komi)
    for _ in range(plies):
        placements = position.legal_placements()
        if not placements:
            break
        position.push(rng.choice(placements))
    return position


TINY = [
    ("2x2", "", 0.0),
    ("2x2", "", 3.5),
    ("2x3", "", 0.0),
    ("3x2", "", 0.5),
    ("2x3", "pass", 0.0),  # White to move after Black passed: a second pass ends the game at once
    ("2x4", "", 0.0),
    ("3x3", "", 0.0),
    ("3x3", "", 3.5),
    ("3x3", "b2b1 pass", 1.0),
    ("3x3", "a1b1 b2a2 pass", 0.0),
]


@pytest.mark.parametrize(("size", "moves", "komi"), TINY)
def test_the_solver_value_and_best_move_match_brute_force(size: str, moves: str, komi: float) -> None:
    width, height = (int(x) for x in size.split("x"))
    position = Position.from_moves(moves.split(), width, height, komi)
    exact = brute(position)
    solution = solve(position)
    assert solution.score == exact
    assert solution.margin - komi == exact
    position.push(solution.best_move)
    assert brute(position) == exact, f"{solution.best_move} does not keep the value {exact}"


@pytest.mark.parametrize(("size", "moves"), [("2x3", ""), ("3x2", "pass"), ("2x4", "b3b2"), ("3x3", "b2c2")])
def test_every_move_value_matches_brute_force(size: str, moves: str) -> None:
    width, height = (int(x) for x in size.split("x"))
    position = Position.from_moves(moves.split(), width, height, 0.5)
    solver = Solver(position)
    assert sorted(map(str, solver.root_moves())) == sorted(map(str, position.legal_moves()))
    for move in position.legal_moves():
        after = position.play(move)
        value = solver.move_value(move)
        assert value.score == brute(after), str(move)
        if not after.is_over():
            reply = after.play(value.best_move)
            assert brute(reply) == brute(after), f"{move} {value.best_move} is not a best reply"


def test_random_small_endgames_match_brute_force() -> None:
    """4x4 and 5x4 positions a few placements in, some just after a pass, some with an integer komi."""
    rng = random.Random(5)
    checked = 0
    while checked < 30:
        width, height = rng.choice([(4, 4), (5, 4), (4, 3)])
        position = random_position(rng, width, height, rng.randint(6, 10), rng.choice([0.0, 0.5, 2.0, 3.5]))
        if rng.random() < 0.3 and not position.is_over():
            position.push(PASS)
        if position.is_over() or live_roots(position) > 9:
            continue
        solution = solve(position)
        assert solution.score == brute(position), position.to_string()
        checked += 1


def test_a_finished_game_is_not_solved() -> None:
    with pytest.raises(ValueError, match="game is over"):
        Solver(Position.from_moves(["pass", "pass"], 3, 3))


def test_symmetry_is_used_only_when_the_position_has_it() -> None:
    assert Solver(Position(3, 3)).symmetry_count == 8
    assert Solver(Position(2, 4)).symmetry_count == 4
    assert Solver(Position.from_moves(["b2b1"], 3, 3)).symmetry_count == 2
    assert Solver(Position.from_moves(["a1b1"], 3, 3)).symmetry_count == 1


def test_node_limit_aborts_and_a_later_call_still_solves() -> None:
    from sample_bots.solver import SolveAborted

    solver = Solver(Position(3, 3, 0.0))
    with pytest.raises(SolveAborted):
        solver.solve(max_nodes=100)
    assert solver.solve().score == brute(Position(3, 3, 0.0))


# -- the search bots reach the exact values ------------------------------------------------------------


@pytest.mark.parametrize("settings", [DEFAULT, strong.SETTINGS], ids=["alphabeta", "strong"])
@pytest.mark.parametrize(("size", "moves", "komi"), TINY)
def test_the_search_bots_keep_the_exact_value(size: str, moves: str, komi: float, settings: Settings) -> None:
    width, height = (int(x) for x in size.split("x"))
    position = Position.from_moves(moves.split(), width, height, komi)
    # A generous time with a node limit: the solver's node limit, not the clock, decides.
    info = choose_move(position, 600.0, max_depth=40, settings=settings, solver_nodes=2_000_000)
    assert info.proven
    assert info.score == mover_value(brute(position), position)
    assert brute(position.play(info.move)) == brute(position)


def test_alphabeta_plays_small_games_perfectly_against_itself() -> None:
    """Whole games on 2x4 and 3x3: every move the bot makes keeps the game's exact value."""
    for width, height, komi in [(2, 4, 0.0), (4, 2, 0.5), (3, 3, 3.5)]:
        position = Position(width, height, komi)
        value = brute(position)
        while not position.is_over():
            position.push(choose_move(position, 600.0, solver_nodes=2_000_000).move)
            assert brute(position) == value, " ".join(map(str, position.history))
        assert position.outcome() is not None


# -- no false proofs from selective search ------------------------------------------------------------


# Late-move reductions from the second move on, at the root and inside, and the null move (a pass searched
# shallower): shallower searches must not make proofs either (a reduced child is proven only if its own
# subtree was searched to the end).
REDUCED = Settings(reduce_from=1, root_reduce_from=1, root_reduce_twice_from=2, null_reduction=1, pass_early=True)
SEARCHES = [DEFAULT, strong.SETTINGS, REDUCED]
SEARCH_IDS = ["alphabeta", "strong", "reduced"]


@pytest.mark.parametrize("settings", SEARCHES, ids=SEARCH_IDS)
def test_the_pruned_search_does_not_prove_a_losing_move_on_2x4(settings: Settings) -> None:
    """The issue's case: on the empty 2x4 board (komi 0) `b3b2` was reported as a proven win by 2 at
    depth 6, but `a1a2` refutes it and Black loses by 2. The refutation is pruned below the root."""
    position = Position(2, 4, 0.0)
    assert brute(position.play(Move.parse("b3b2"))) == -2
    iterations: list[tuple[str, float, bool]] = []
    info = Searcher(position, settings=settings).search(
        600.0, max_depth=24, on_iteration=lambda i: iterations.append((str(i.move), i.score, i.proven))
    )
    assert len(iterations) == 24  # no false proof stopped it early
    for move, score, proven in iterations:
        if proven:
            assert score == brute(position) and brute(position.play(Move.parse(move))) == score
    assert not info.proven or info.score == 2


@pytest.mark.parametrize("settings", SEARCHES, ids=SEARCH_IDS)
def test_every_proof_of_the_search_is_true(settings: Settings) -> None:
    """Wherever the search (without the solver) says proven, the value is the exact one: the largest
    margin the mover can force, not merely some win, and the move keeps it."""
    rng = random.Random(8)
    proofs = 0
    for _ in range(40):
        width, height = rng.choice([(3, 3), (4, 3), (4, 4)])
        position = random_position(rng, width, height, rng.randint(2, 9), rng.choice([0.0, 0.5, 3.5]))
        if position.is_over() or live_roots(position) > 9:
            continue
        info = Searcher(position, settings=settings).search(600.0, max_depth=16)
        if info.proven:
            proofs += 1
            assert info.score == mover_value(brute(position), position), position.to_string()
            assert brute(position.play(info.move)) == brute(position), position.to_string()
    assert proofs >= 5  # full-width endgames do get proven
