"""Opening order and start, and balanced books (`alternator openings`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol.rules import Position
from referee.cli import main
from referee.run.openings import RatedOpening, arrange, balanced_book, format_book
from referee.run.runner import GAMES_FILE
from referee.run.schedule import parse_openings
from sample_bots.solver import solve

BOOK = [("a1a2",), ("b1b2",), ("c1c2",), ("d1d2",)]


def test_sequential_from_a_start_keeps_every_opening() -> None:
    assert arrange(BOOK) == BOOK
    assert arrange(BOOK, "sequential", 3) == [("c1c2",), ("d1d2",), ("a1a2",), ("b1b2",)]
    shuffled = arrange(BOOK, "random", 1, seed=4)
    assert sorted(shuffled) == sorted(BOOK) and shuffled == arrange(BOOK, "random", 1, seed=4)
    assert any(arrange(BOOK, "random", 1, seed=s) != BOOK for s in range(5))
    assert arrange(BOOK, "random", 2, seed=4) == shuffled[1:] + shuffled[:1]
    with pytest.raises(ValueError, match="give 1 to 4"):
        arrange(BOOK, "sequential", 5)


def test_a_match_takes_the_file_in_the_order_and_from_the_start_asked(tmp_path: Path) -> None:
    book = tmp_path / "book.txt"
    book.write_text("# four openings\n" + "\n".join(" ".join(o) for o in BOOK) + "\n")
    out = tmp_path / "m"
    argv = ["match", "--black", "random", "--white", "greedy", "--size", "4x4", "--games", "4", "-j", "1"]
    argv += ["--openings-file", str(book), "--openings-start", "3", "--out", str(out)]
    assert main(argv) == 0
    records = [json.loads(line) for line in (out / GAMES_FILE).read_text().splitlines()]
    openings = [tuple(r["settings"]["opening"]) for r in sorted(records, key=lambda r: r["game_id"])]
    assert openings == [("c1c2",), ("c1c2",), ("d1d2",), ("d1d2",)]
    assert main(["match", "--black", "random", "--white", "greedy", "--openings-order", "random"]) == 2


def test_a_balanced_book_keeps_only_near_even_openings_and_is_reproducible() -> None:
    def rate(position: Position) -> tuple[float, bool]:
        return solve(position).score, True

    kept: list[tuple[RatedOpening, bool]] = []
    book = balanced_book(
        4, 4, 0.5, plies=6, count=3, max_score=1.5, seed=2, rate=rate, on_rated=lambda o, k: kept.append((o, k))
    )
    assert len(book) == 3 and all(abs(o.score) <= 1.5 and o.exact for o in book)
    assert any(not k for _, k in kept)  # some candidates were rated and left out
    assert balanced_book(4, 4, 0.5, plies=6, count=3, max_score=1.5, seed=2, rate=rate) == book
    text = format_book(book, ["a test"])
    assert parse_openings(text, 4, 4, 0.5, source="book") == [o.moves for o in book]
    for opening in book:  # each really is that close to even with perfect play
        assert abs(solve(Position.from_moves(list(opening.moves), 4, 4, 0.5)).score) <= 1.5


def test_the_openings_command_writes_a_book_a_match_can_use(tmp_path: Path) -> None:
    out = tmp_path / "book.txt"
    argv = ["openings", "--size", "4x4", "--komi", "0.5", "--plies", "6", "--count", "2", "--max-score", "1.5"]
    assert main([*argv, "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# alternator openings --size 4x4") and "(exact)" in text
    assert len(parse_openings(text, 4, 4, 0.5, source=str(out))) == 2
