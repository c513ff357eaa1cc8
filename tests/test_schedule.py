"""The tournament schedule: pair counts, colour balance, paired openings, determinism, prefix stability."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.rules import Position
from referee.run.schedule import (
    Format,
    OpeningsFileError,
    ScheduledGame,
    make_schedule,
    parse_openings,
    pick_next,
    playing_order,
    random_opening,
    random_openings,
    read_openings_file,
)

bot_counts = st.integers(min_value=2, max_value=8)
game_counts = st.integers(min_value=1, max_value=7)
formats = st.sampled_from([Format.ROUND_ROBIN, Format.GAUNTLET])


def names(n: int) -> list[str]:
    return [f"bot{i}" for i in range(n)]


def pair_key(game: ScheduledGame) -> frozenset[str]:
    return frozenset((game.black, game.white))


@given(bot_counts, game_counts)
def test_round_robin_every_pair_plays_the_games_per_pairing(n: int, games: int) -> None:
    schedule = make_schedule(names(n), Format.ROUND_ROBIN, games, [])
    counts = Counter(pair_key(g) for g in schedule)
    assert len(counts) == n * (n - 1) // 2
    assert set(counts.values()) == {games}
    assert [g.number for g in schedule] == list(range(1, len(schedule) + 1))


@given(bot_counts, game_counts)
def test_gauntlet_pairs_the_first_bot_with_each_other_and_no_one_else(n: int, games: int) -> None:
    bots = names(n)
    schedule = make_schedule(bots, Format.GAUNTLET, games, [])
    counts = Counter(pair_key(g) for g in schedule)
    assert set(counts) == {frozenset((bots[0], other)) for other in bots[1:]}
    assert set(counts.values()) == {games}


@given(bot_counts, game_counts, formats)
def test_colours_are_balanced_for_every_pair_and_every_bot(n: int, games: int, fmt: Format) -> None:
    schedule = make_schedule(names(n), fmt, games, [])
    for pair in {pair_key(g) for g in schedule}:
        blacks = Counter(g.black for g in schedule if pair_key(g) == pair)
        a, b = sorted(pair)
        assert abs(blacks[a] - blacks[b]) == games % 2
    if fmt is Format.ROUND_ROBIN:
        blacks = Counter(g.black for g in schedule)
        whites = Counter(g.white for g in schedule)
        assert all(abs(blacks[bot] - whites[bot]) <= 1 for bot in names(n))


@given(bot_counts, game_counts, formats, st.integers(min_value=1, max_value=4))
def test_every_opening_is_played_twice_with_colours_swapped(n: int, games: int, fmt: Format, plies: int) -> None:
    openings = random_openings(5, 5, 3.5, plies, "seed", (games + 1) // 2)
    schedule = make_schedule(names(n), fmt, games, openings)
    by_pairing: dict[int, list[ScheduledGame]] = {}
    for game in schedule:
        by_pairing.setdefault(game.pairing, []).append(game)
    for played in by_pairing.values():
        assert [g.round for g in played] == list(range(games))
        for first, second in zip(played[0::2], played[1::2], strict=False):
            assert first.opening == second.opening == openings[first.round // 2]
            assert (first.black, first.white) == (second.white, second.black)
    # Every pairing gets the same openings in the same rounds.
    assert len({tuple(g.opening for g in played) for played in by_pairing.values()}) == 1


@given(bot_counts, game_counts, formats, st.integers(min_value=1, max_value=5))
def test_more_games_per_pairing_only_adds_games(n: int, games: int, fmt: Format, more: int) -> None:
    openings = random_openings(4, 4, 3.5, 2, 1, (games + more + 1) // 2)
    small = make_schedule(names(n), fmt, games, openings[: (games + 1) // 2])
    large = make_schedule(names(n), fmt, games + more, openings)
    assert small == large[: len(small)]


def test_the_schedule_is_deterministic_from_its_inputs() -> None:
    def build(seed: int) -> list[ScheduledGame]:
        return make_schedule(names(4), Format.ROUND_ROBIN, 4, random_openings(8, 8, 3.5, 3, seed, 2))

    assert build(5) == build(5)
    assert build(5) != build(6)


@settings(max_examples=30)
@given(
    st.integers(min_value=2, max_value=9),
    st.integers(min_value=2, max_value=9),
    st.integers(min_value=0, max_value=6),
    st.integers(),
    st.integers(min_value=0, max_value=20),
)
def test_random_openings_are_legal_and_do_not_depend_on_how_many_are_asked_for(
    width: int, height: int, plies: int, seed: int, index: int
) -> None:
    opening = random_opening(width, height, 3.5, plies, seed, index)
    position = Position(width, height, 3.5)
    for move in opening:
        position.push(position.parse_move(move))  # raises if illegal
        assert move != "pass"
    # Short only when the board ran out of placements.
    assert len(opening) == plies or not position.has_legal_placement()
    assert random_openings(width, height, 3.5, plies, seed, index + 3)[index : index + 1] == (
        [opening] if plies else []
    )


def test_openings_differ_between_indices_and_seeds() -> None:
    assert len(set(random_openings(8, 8, 3.5, 4, 1, 10))) == 10
    assert random_openings(8, 8, 3.5, 4, 1, 3) != random_openings(8, 8, 3.5, 4, 2, 3)


def test_an_empty_openings_list_starts_every_game_from_the_empty_board() -> None:
    schedule = make_schedule(names(3), Format.ROUND_ROBIN, 3, [])
    assert {g.opening for g in schedule} == {()}


def test_fewer_openings_than_game_pairs_are_reused_in_order() -> None:
    openings = [("a1a2",), ("b1b2",)]
    schedule = make_schedule(names(2), Format.ROUND_ROBIN, 6, openings)
    assert [g.opening for g in schedule] == [("a1a2",)] * 2 + [("b1b2",)] * 2 + [("a1a2",)] * 2


@pytest.mark.parametrize(
    ("bots", "message"),
    [(["a"], "at least two bots"), (["a", "b", "a"], "unique")],
)
def test_bad_bot_lists_are_refused(bots: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_schedule(bots, Format.ROUND_ROBIN, 2, [])


def test_zero_games_per_pairing_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        make_schedule(names(2), Format.ROUND_ROBIN, 0, [])


def test_an_openings_file_is_read_with_comments_blank_lines_and_commas() -> None:
    text = "# openings for 4x4\n\nb2b1 c2c1\n a3a4, b3b4  # two moves\nd4d3\n"
    assert parse_openings(text, 4, 4, 3.5, source="o.txt") == [("b2b1", "c2c1"), ("a3a4", "b3b4"), ("d4d3",)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("b2b1\nb2b3\nzz\n", r"o\.txt: line 3: move 1 \('zz'\) on a 4x4 board: "),
        ("b2b1 b2c2\n", r"o\.txt: line 1: move 2 \('b2c2'\) on a 4x4 board: b2c2: b2 already has a dot"),
        ("a1a2\n\na1e1\n", r"o\.txt: line 3: move 1 \('a1e1'\) on a 4x4 board: .*off the 4x4 board"),
        ("a1a2\npass pass\n", r"o\.txt: line 2: the opening ends the game"),
        ("# nothing\n\n", r"o\.txt: no openings"),
    ],
)
def test_a_bad_openings_file_names_the_line_and_the_problem(text: str, message: str) -> None:
    with pytest.raises(OpeningsFileError, match=message):
        parse_openings(text, 4, 4, 3.5, source="o.txt")


def test_a_missing_openings_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(OpeningsFileError, match="cannot read the openings file"):
        read_openings_file(tmp_path / "none.txt", 8, 8, 3.5)


def test_a_slot_prefers_games_whose_bots_it_has_running() -> None:
    pending = [
        ScheduledGame(1, 0, 0, "a", "b", ()),
        ScheduledGame(2, 1, 0, "c", "d", ()),
        ScheduledGame(3, 2, 0, "c", "a", ()),
        ScheduledGame(4, 3, 0, "d", "c", ()),
    ]
    assert pick_next(pending, set(), window=4) == 0
    assert pick_next(pending, {"c"}, window=4) == 1
    assert pick_next(pending, {"c", "d"}, window=4) == 1
    assert pick_next(pending, {"a", "c"}, window=4) == 2
    assert pick_next(pending, {"a", "c"}, window=2) == 0  # beyond the window: order wins


def test_a_game_whose_two_bots_another_slot_has_is_left_to_that_slot() -> None:
    # The second game of a's and b's game pair is first; another slot has a and b (it plays their first game).
    pending = [
        ScheduledGame(4, 0, 1, "b", "a", ()),
        ScheduledGame(2, 1, 0, "a", "c", ()),
        ScheduledGame(5, 1, 1, "c", "a", ()),
    ]
    assert pick_next(pending, set(), window=4, elsewhere=[{"a", "b"}]) == 1
    assert pick_next(pending, {"c"}, window=4, elsewhere=[{"a", "b"}]) == 1
    assert pick_next(pending, {"a", "b"}, window=4, elsewhere=[{"a", "b"}]) == 0  # this slot has both too
    assert pick_next(pending, set(), window=4, elsewhere=[{"d"}, {"a", "b", "c"}]) == 0  # every game is another's
    assert pick_next(pending, set(), window=1, elsewhere=[{"a", "b"}]) == 0  # nothing else in the window


def test_game_pairs_are_played_back_to_back_and_keep_their_numbers() -> None:
    schedule = make_schedule(["a", "b", "c"], Format.ROUND_ROBIN, 4, [])
    played = sorted(schedule, key=playing_order)
    assert [(g.pairing, g.round) for g in played] == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1),
        (0, 2), (0, 3), (1, 2), (1, 3), (2, 2), (2, 3),
    ]  # fmt: skip
    assert [g.number for g in played[:4]] == [1, 4, 2, 5]
    for first, second in zip(played[::2], played[1::2], strict=True):
        assert (first.black, first.white) == (second.white, second.black) and first.opening == second.opening
