"""The strong sample bot: its search finds winning moves, always answers legally and in time, and its
clock budget keeps a margin whatever the time control; one real subprocess plays a scripted turn."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.kit import Clock
from protocol.messages import Info, MoveReply, parse_bot_line
from protocol.rules import PASS, Move, Position
from sample_bots import greedy, strong
from sample_bots import search as search_module
from sample_bots.alphabeta import make_chooser, moves_left_estimate, seconds_for
from sample_bots.search import budget, choose_move

ROOT = Path(__file__).resolve().parent.parent


def solve(position: Position) -> int:
    """The exact value of a small position for the side to move (1 win, 0 draw, -1 loss), by brute force."""
    outcome = position.outcome()
    if outcome is not None:
        return 0 if outcome.winner is None else (1 if outcome.winner is position.turn else -1)
    best = -1
    for move in position.legal_moves():
        position.push(move)
        value = -solve(position)
        position.pop()
        if value > best:
            best = value
            if best == 1:
                break
    return best


def clock(
    my_ms: int | None = None,
    increment_ms: int = 0,
    move_limit_ms: int | None = None,
    moves_to_go: int | None = None,
    received_at: float | None = None,
) -> Clock:
    return Clock(
        my_ms=my_ms,
        opponent_ms=my_ms,
        increment_ms=increment_ms,
        move_limit_ms=move_limit_ms,
        moves_to_go=moves_to_go,
        received_at=time.monotonic() if received_at is None else received_at,
    )


# -- the search ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("position_text", "winning_move"),
    [
        # White to move; attaching Black's tree of 3 at c1 to d1 is the only move that wins.
        ("1e2/sne1/sses/1e2 w 0 0.5", "c1d1"),
        # Attaching Black's tree of 3 at b2 to c2 is the only move that wins.
        ("sw1w/1sws/s3/1ee1 w 0 0.5", "b2c2"),
    ],
)
def test_finds_the_only_winning_capture(position_text: str, winning_move: str) -> None:
    position = Position.from_string(position_text)
    winners = [m for m in position.legal_moves() if solve(position.play(m)) == -1]
    assert [str(m) for m in winners] == [winning_move]  # the position is what the test claims
    info = choose_move(position, 2.0)
    assert str(info.move) == winning_move
    assert info.proven  # the solver (or a full-width search) saw every line to the end
    assert str(info.pv[0]) == winning_move


def test_plays_perfectly_in_small_endgames() -> None:
    """On random 4x4 endgames (some just after a pass) the move keeps the exact game value."""
    rng = random.Random(11)
    checked = 0
    while checked < 25:
        position = Position(4, 4, rng.choice([0.5, 1.0, 2.5]))
        for _ in range(rng.randint(7, 11)):
            placements = position.legal_placements()
            if not placements:
                break
            position.push(rng.choice(placements))
        if rng.random() < 0.3:
            position.push(PASS)
        if position.is_over():
            continue
        value = solve(position)
        move = choose_move(position, 2.0).move
        assert position.is_legal(move)
        assert -solve(position.play(move)) == value, f"{move} in {position.to_string()} loses value {value}"
        checked += 1


def test_passes_when_no_placement_is_left() -> None:
    position = Position.from_moves(["b1a1", "a2b2"], 2, 2, 0.5)
    assert position.legal_moves() == [PASS]
    assert choose_move(position, 0.5).move == PASS


def test_no_move_in_a_finished_game() -> None:
    position = Position.from_moves(["pass", "pass"], 4, 4)
    with pytest.raises(ValueError, match="game is over"):
        choose_move(position, 0.1)


class VirtualClock:
    """Stands in for the search's `time.perf_counter`: each reading moves time on by `tick` seconds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tick: float = 0.0005) -> None:
        self.tick = tick
        self.now = 0.0
        monkeypatch.setattr(search_module, "time", self)

    def perf_counter(self) -> float:
        self.now += self.tick
        return self.now


@pytest.mark.parametrize("seconds", [0.0, 0.001, 0.01])
def test_tiny_budgets_still_give_a_legal_move(seconds: float, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(2)
    for _ in range(5):
        position = Position()
        for _ in range(rng.randint(0, 30)):
            placements = position.legal_placements()
            if not placements:
                break
            position.push(rng.choice(placements))
        virtual = VirtualClock(monkeypatch)
        move = choose_move(position, seconds).move
        assert position.is_legal(move)
        # Stopped within a few readings of the clock past the deadline (its first look past it ends the search;
        # unwinding and reporting read the clock a few times more), however slow the machine.
        assert virtual.now <= seconds + 8 * virtual.tick


def test_keeps_to_its_time_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a virtual clock that moves only when the search reads it, so a busy machine changes nothing.
    virtual = VirtualClock(monkeypatch, tick=0.002)
    info = choose_move(Position(), 0.2)
    assert virtual.now <= 0.2 + 2 * virtual.tick
    assert info.depth >= 1 and info.nodes > 0
    assert Position().is_legal(info.move)
    # Unless told to use it all, no iteration starts after half the time: it would rarely finish.
    virtual = VirtualClock(monkeypatch, tick=0.002)
    iterations: list[float] = []
    choose_move(Position(), 0.2, on_iteration=lambda _: iterations.append(virtual.now))
    assert iterations and all(at <= 0.1 + virtual.tick for at in iterations[:-1])


def test_seed_varies_play_but_stays_legal() -> None:
    position = Position(6, 6)
    moves = {str(choose_move(position, 1.0, max_depth=1, seed=seed).move) for seed in range(8)}
    assert len(moves) > 1
    assert all(position.is_legal(Move.parse(m)) for m in moves)


@pytest.mark.parametrize("strong_is_black", [True, False])
def test_beats_greedy_on_a_small_board(strong_is_black: bool) -> None:
    # Depth-limited with time to spare, so the result does not depend on the machine's speed.
    position = Position(6, 6, 0.5)
    no_clock = clock()
    while not position.is_over():
        if (position.turn.value == "black") == strong_is_black:
            move = choose_move(position, 5.0, max_depth=2).move
        else:
            move = greedy.choose(position, no_clock)
        position.push(move)
    outcome = position.outcome()
    assert outcome is not None and outcome.winner is not None
    assert (outcome.winner.value == "black") == strong_is_black, str(outcome)


# -- the clock ------------------------------------------------------------------------------------


def test_budget_fixed_time_per_move_uses_most_of_it() -> None:
    seconds = budget(None, move_limit_ms=1000)
    assert 0.7 <= seconds <= 0.9
    assert budget(None, move_limit_ms=50) == 0.0  # too short to search: answer at once


def test_budget_fischer_shares_the_clock() -> None:
    seconds = budget(60_000, 0, moves_left=20)
    assert 2.0 <= seconds <= 3.0
    with_increment = budget(60_000, 2_000, moves_left=20)
    assert with_increment > seconds + 1.0
    # A big increment never tempts it to spend more than half of what is left.
    assert budget(1_000, 10_000, moves_left=20) <= 0.5


def test_budget_periods_spread_the_clock_to_the_refill() -> None:
    assert 0.9 <= budget(10_000, moves_to_go=10) <= 1.0
    last = budget(10_000, moves_to_go=1)
    assert 8.0 <= last < 10.0


def test_budget_takes_the_tighter_of_clock_and_move_limit() -> None:
    assert budget(60_000, move_limit_ms=500, moves_left=5) <= 0.5
    assert budget(300, move_limit_ms=10_000, moves_left=1) <= 0.15


@settings(max_examples=300, deadline=None)
@given(
    remaining=st.none() | st.integers(0, 10_000_000),
    increment=st.integers(0, 100_000),
    limit=st.none() | st.integers(0, 1_000_000),
    to_go=st.none() | st.integers(1, 200),
    moves_left=st.integers(0, 100),
    reserve=st.sampled_from([search_module.DEFAULT.reserve, strong.SETTINGS.reserve]),
)
def test_budget_always_keeps_a_margin(
    remaining: int | None,
    increment: int,
    limit: int | None,
    to_go: int | None,
    moves_left: int,
    reserve: tuple[float, float],
) -> None:
    seconds = budget(remaining, increment, limit, to_go, moves_left, reserve)
    assert seconds >= 0.0
    base, share = reserve
    for available_ms in (remaining, limit):
        if available_ms is not None:
            available = available_ms / 1000
            assert seconds <= max(0.0, available - base - share * available + 1e-9)


def test_strong_keeps_less_of_a_short_move_back() -> None:
    """At 0.2 s a move alphabeta searches 0.124 s and its moves took about 0.13 s as the referee counts
    them (at most 0.145 s); strong keeps 40 ms back instead of 76 ms."""
    assert budget(None, move_limit_ms=200) == pytest.approx(0.124)
    assert budget(None, move_limit_ms=200, reserve=strong.SETTINGS.reserve) == pytest.approx(0.16)
    assert budget(None, move_limit_ms=1000, reserve=strong.SETTINGS.reserve) == pytest.approx(0.92)


def test_seconds_for_counts_time_already_spent() -> None:
    position = Position()
    fresh = seconds_for(position, clock(move_limit_ms=1000))
    late = seconds_for(position, clock(move_limit_ms=1000, received_at=time.monotonic() - 0.3))
    assert fresh - late >= 0.29
    assert seconds_for(position, clock(move_limit_ms=1000), max_time=0.1) == 0.1


def test_moves_left_estimate_shrinks_as_the_board_fills() -> None:
    position = Position()
    early = moves_left_estimate(position)
    rng = random.Random(4)
    for _ in range(40):
        position.push(rng.choice(position.legal_placements()))
    assert 15 <= early <= 30
    assert 2 <= moves_left_estimate(position) < early


# -- the real bot ---------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["sample_bots.alphabeta", "sample_bots.strong"])
def test_bot_process_plays_a_scripted_turn(module: str) -> None:
    time_control = {"base_ms": None, "increment_ms": 0, "moves_per_period": None, "move_time_ms": 500}
    lines = [
        {"type": "hello", "protocol": 1, "referee": "test"},
        {
            "type": "new_game",
            "game_id": "g1",
            "color": "white",
            "width": 4,
            "height": 4,
            "komi": 0.5,
            "time_control": time_control,
            "opponent": "someone",
        },
        {
            "type": "turn",
            "game_id": "g1",
            "moves": ["b1a1"],
            "clock": {
                "black_ms": None,
                "white_ms": None,
                "increment_ms": 0,
                "move_limit_ms": 500,
                "moves_to_go": None,
            },
        },
    ]
    # The script ends with the end of input, not quit: the kit reads ahead, and a quit read during the
    # turn would abandon the move 0.25 s later (as the referee means it to); the end of input lets it finish.
    script = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(
        [sys.executable, "-m", module, "--seed", "1"],
        input=script.encode(),
        capture_output=True,
        cwd=ROOT,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr.decode()
    replies = [parse_bot_line(line) for line in done.stdout.splitlines()]
    kinds = [reply.type for reply in replies]
    assert kinds[:2] == ["hello", "ready"]
    assert kinds[-1] == "move"
    assert set(kinds[2:-1]) == {"info"}
    infos = [reply for reply in replies if isinstance(reply, Info)]
    assert infos and all(info.depth is not None and info.pv for info in infos)
    move = replies[-1]
    assert isinstance(move, MoveReply)
    assert Position.from_moves(["b1a1"], 4, 4, 0.5).is_legal(Move.parse(move.move))


def test_a_kept_table_carries_over_within_a_game_and_not_into_the_next() -> None:
    choose = make_chooser(max_depth=2, settings=search_module.Settings(keep_table=True))
    no_clock = clock(move_limit_ms=60_000)
    position = Position(5, 5, 0.5)
    for _ in range(4):
        move = choose(position, no_clock)
        assert position.is_legal(move)
        position.push(move)
    table = choose.table
    assert table  # filled by the searches, and the same dict all game
    choose(Position(5, 5, 0.5), no_clock)  # a shorter history: a new game
    assert choose.table is not table
    choose(Position(4, 4, 0.5), no_clock)  # another board: a new game
    assert choose.table is not table


# -- the horizon's evaluation ---------------------------------------------------------------------------


def test_contested_trees_count_in_part_at_the_horizon() -> None:
    """2x2 after a1b1, White to move: White's tree of 2 at b1 may be taken from Black's b2 (size 1),
    and White's a2 and Black's b2 may take each other; no tree is safe, so each counts half, where
    the bare margin counts them whole. Values are from the mover's (White's) side."""
    position = Position.from_moves(["a1b1"], 2, 2, komi=0.0)
    assert position.black_margin == 1 - 3
    assert search_module.Searcher(position).evaluate() == 2.0
    halves = search_module.Searcher(position, settings=search_module.Settings(contested=0.5))
    assert halves.evaluate() == -(-0.5 * 2 - 0.5 * 1 + 0.5 * 1)


def test_a_safe_tree_counts_whole() -> None:
    """2x3 after a1b1 b2a2, Black to move: White's 2 at b1 touches only pits, so it is safe and counts
    whole; White's 2 at a2 may be taken from a3, and a3 and b3 may take each other: those count half."""
    position = Position.from_moves(["a1b1", "b2a2"], 2, 3, komi=0.0)
    assert position.black_margin == 1 - 5
    searcher = search_module.Searcher(position, settings=search_module.Settings(contested=0.5))
    assert searcher.evaluate() == -2 - 0.5 * 2 + 0.5 * 1 - 0.5 * 1


def _mirrored_with_colours_swapped(position: Position) -> Position:
    """The position mirrored left to right on an even-width board (every cell changes colour), with the
    other side to move: the same game with the players' roles exchanged."""
    width = position.width

    def mirror(move: Move) -> str:
        if move.pit is None or move.root is None:
            return "pass"
        pit, root = move.pit, move.root
        return f"{chr(97 + width - 1 - pit.file)}{pit.rank + 1}{chr(97 + width - 1 - root.file)}{root.rank + 1}"

    mirrored = Position.from_moves([mirror(m) for m in position.history], width, position.height, position.komi)
    board, turn, passes, komi = mirrored.to_string().split()
    return Position.from_string(f"{board} {'w' if turn == 'b' else 'b'} {passes} {komi}")


@pytest.mark.parametrize(
    "settings",
    [search_module.Settings(contested=c) for c in (1.0, 0.5, 0.0)] + [search_module.Settings(weights=strong.FITTED)],
    ids=["contested=1.0", "contested=0.5", "contested=0.0", "fitted"],
)
def test_the_evaluation_is_symmetric_under_a_colour_swap(settings: search_module.Settings) -> None:
    rng = random.Random(5)
    for _ in range(60):
        width, height = rng.choice([(2, 3), (4, 4), (6, 5), (8, 8)])
        position = Position(width, height, 0.0)
        for _ in range(rng.randint(1, width * height // 2)):
            placements = position.legal_placements()
            if not placements:
                break
            position.push(rng.choice(placements))
        swapped = _mirrored_with_colours_swapped(position)
        assert swapped.black_margin == -position.black_margin
        value = search_module.Searcher(position, settings=settings).evaluate()
        assert search_module.Searcher(swapped, settings=settings).evaluate() == value, position.to_string()
