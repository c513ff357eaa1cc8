"""The exact solver, and the search that uses it, against a brute-force minimax over the rules engine.

The brute force is as plain as it can be: every legal move, to the end of the game, memoised on what the
position string names (the board's stems, whose turn, the passes); it knows nothing of the solver's live cells,
symmetries or move ordering. Limits in these tests are nodes and depths, never time.
"""

from __future__ import annotations

import random

import pytest

from protocol.rules import BLACK, PASS, Color, Move, Position
from sample_bots import strong
from sample_bots.search import DEFAULT, KeptSolver, Searcher, SearchInfo, Settings, _prefer_proven, choose_move
from sample_bots.solver import SolveAborted, Solver, live_roots, solve

_memo: dict[tuple[int, int, tuple[int, ...], Color, int], int] = {}


def brute_margin(position: Position) -> int:
    """The final Black - White tree totals with perfect play. Komi is a constant, so it plays no part."""
    if position.is_over():
        black, white = position.scores()
        return black - white
    # What the position string names, komi left out (the board is its stems), at a tenth of to_string's cost.
    key = (position.width, position.height, tuple(position.parent), position.turn, position.consecutive_passes)
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


# Every board up to 8 cells (both orientations), empty or a move or two in, some just after a pass.
SMALL_BOARDS = [(2, 2), (2, 3), (3, 2), (2, 4), (4, 2)]


def small_positions() -> list[Position]:
    rng = random.Random(28)
    positions = []
    for width, height in SMALL_BOARDS:
        positions.append(Position(width, height, 0.0))
        positions.append(Position.from_moves(["pass"], width, height, 0.5))
        for _ in range(6):
            position = random_position(rng, width, height, rng.randint(1, 4), rng.choice([0.0, 0.5, 3.5]))
            if rng.random() < 0.3 and not position.is_over():
                position.push(PASS)
            if not position.is_over():
                positions.append(position)
    return positions


@pytest.mark.parametrize("tt_limit", [0, 1, 100, 2_000_000], ids=["no-table", "1-entry", "100-entries", "normal"])
def test_every_small_board_gets_its_value_and_a_move_that_keeps_it_at_any_table_size(tt_limit: int) -> None:
    """The issue's bug: with the table full before the root's entry was written, the best move was a
    pass that gives the value away. The move comes from the root's own search, whatever the table holds."""
    for position in small_positions():
        exact = brute(position)
        solver = Solver(position, tt_limit)
        solution = solver.solve()
        assert solution.score == exact, position.to_string()
        assert brute(position.play(solution.best_move)) == exact, f"{position.to_string()}: {solution.best_move}"
        assert len(solver.tt) <= tt_limit
        for move in position.legal_moves():
            after = position.play(move)
            value = solver.move_value(move)
            assert value.score == brute(after), f"{position.to_string()}: {move}"
            if not after.is_over():
                reply = after.play(value.best_move)
                assert brute(reply) == brute(after), f"{position.to_string()}: {move} {value.best_move}"


@pytest.mark.parametrize("tt_limit", [3, 2_000_000], ids=["tiny-table", "normal"])
def test_random_positions_with_a_tiny_or_normal_table_keep_the_value(tt_limit: int) -> None:
    """A full table never yields a move that loses value: 3x3, 4x3 and 4x4 positions a few moves in."""
    rng = random.Random(280 + tt_limit)
    checked = 0
    while checked < 25:
        width, height = rng.choice([(3, 3), (4, 3), (3, 4), (4, 4)])
        position = random_position(rng, width, height, rng.randint(3, 9), rng.choice([0.0, 0.5, 3.5]))
        if rng.random() < 0.3 and not position.is_over():
            position.push(PASS)
        if position.is_over() or live_roots(position) > 8:
            continue
        solution = Solver(position, tt_limit).solve()
        exact = brute(position)
        assert solution.score == exact, position.to_string()
        assert brute(position.play(solution.best_move)) == exact, f"{position.to_string()}: {solution.best_move}"
        checked += 1


def test_many_random_endgames_match_brute_force_with_a_tiny_and_a_normal_table() -> None:
    """Positions up to 10 live roots on boards up to 5x4, a few just after a pass: enough of them that
    every shortcut of the solver (separate edges, free edges, the pass bound, symmetric keys) meets the
    cases where it could go wrong. A wrong shortcut showed here in 6 positions of the first 100."""
    rng = random.Random(1)
    checked = 0
    while checked < 100:
        width, height = rng.choice([(3, 4), (4, 3), (4, 4), (5, 3), (2, 6), (5, 4)])
        position = random_position(rng, width, height, rng.randint(2, 12), 0.0)
        if rng.random() < 0.3 and not position.is_over():
            position.push(PASS)
        if position.is_over() or live_roots(position) > 10:
            continue
        exact = brute(position)
        for tt_limit in (5, 2_000_000):
            solution = Solver(position, tt_limit).solve()
            assert solution.score == exact, position.to_string()
            assert brute(position.play(solution.best_move)) == exact, f"{position.to_string()}: {solution.best_move}"
        checked += 1


def test_the_2x4_position_of_the_issue_gets_a_sound_move_with_a_100_entry_table() -> None:
    position = Position(2, 4, 0.0)
    solution = Solver(position, tt_limit=100).solve()
    assert solution.score == 2 and not solution.best_move.is_pass
    assert brute(position.play(solution.best_move)) == 2


def test_a_solver_kept_along_a_game_gives_the_exact_value_at_every_turn() -> None:
    """`follow` plays the game's moves into the solver and keeps its table: every later answer is still exact."""
    rng = random.Random(3)
    for width, height in [(3, 3), (2, 4), (4, 2)]:
        position = Position(width, height, 0.5)
        solver = Solver(position, tt_limit=50)
        while not position.is_over():
            assert solver.follow(position)
            solution = solver.solve()
            assert solution.score == brute(position), position.to_string()
            assert brute(position.play(solution.best_move)) == solution.score
            position.push(rng.choice(position.legal_moves()))
        assert not solver.follow(Position(width, height, 0.5).play(position.history[0]).play("pass").play("pass"))
    assert not Solver(Position(3, 3)).follow(Position(3, 4))


def test_a_solve_that_gives_up_keeps_what_it_proved_and_the_bot_can_use_it() -> None:
    position = Position(3, 4, 0.0)
    exact = solve(position).score  # too big a board for the brute force; the solver is checked against it above
    kept = KeptSolver()
    solver = kept.for_position(position)
    with pytest.raises(SolveAborted):
        solver.solve(max_nodes=15_000)  # past the first null-window searches (26,000 nodes in all)
    proven = solver.proven_so_far()
    assert proven is not None
    score, move = proven
    assert score <= exact
    assert Solver(position).move_value(move).score >= score
    # The search's unproven hope no bigger than the proven bound: the proven move is played.
    hope = SearchInfo(PASS, score - 2, 3, 100, [PASS], 0.1)
    assert _prefer_proven(hope, position, kept).move == move
    # A bigger hope: the search's own move stands.
    assert _prefer_proven(SearchInfo(PASS, score + 2, 3, 100, [PASS], 0.1), position, kept).move == PASS


@pytest.mark.parametrize("guess", [-40.5, -3.0, 0.0, 2.5, 9.0, 40.0])
def test_any_first_guess_or_likely_move_gives_the_same_value_and_a_move_that_keeps_it(guess: float) -> None:
    """The guess only says where the null-window searches start, and the likely move which move they try
    first (the bots pass a short search's score and move): any of them, good or bad, gives the same value."""
    for number, position in enumerate(small_positions()[::3]):
        moves = position.legal_moves()
        solution = Solver(position).solve(guess=guess, likely=moves[number % len(moves)])
        assert solution.score == brute(position), position.to_string()
        assert brute(position.play(solution.best_move)) == solution.score, position.to_string()


def test_a_finished_game_is_not_solved() -> None:
    with pytest.raises(ValueError, match="game is over"):
        Solver(Position.from_moves(["pass", "pass"], 3, 3))


def test_symmetry_is_used_only_when_the_position_has_it() -> None:
    """Only the symmetries that keep the cell colours count: one that swaps them swaps the players."""
    assert Solver(Position(3, 3)).symmetry_count == 8
    assert Solver(Position(2, 4)).symmetry_count == 2  # the half turn; the mirrors swap the colours
    assert Solver(Position(4, 4)).symmetry_count == 4
    assert Solver(Position.from_moves(["b2b1"], 3, 3)).symmetry_count == 2
    assert Solver(Position.from_moves(["a1b1"], 3, 3)).symmetry_count == 1


def test_node_limit_aborts_and_a_later_call_still_solves() -> None:
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


@pytest.mark.parametrize("settings", [DEFAULT, strong.SETTINGS], ids=["alphabeta", "strong"])
def test_on_a_small_board_a_starved_solver_leaves_a_sound_choice(settings: Settings) -> None:
    """With the solver cut off after 10 nodes, the short search's score that started it and the search
    after it still give a legal move, and a score called proven is the exact value."""
    position = Position(2, 4, 0.0)
    info = choose_move(position, 0.3, max_depth=40, settings=settings, solver_nodes=10)
    assert info.move in position.legal_moves()
    if info.proven:
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
