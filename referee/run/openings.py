"""Openings: the order a run takes them in, and balanced books (`alternator openings`).

The file format (read by `referee.run.schedule.parse_openings`): one opening per line, its moves in RULES.md
notation separated by spaces (or commas), from the empty board; blank lines and lines starting with `#` are
skipped. Each opening starts one pair of games, colours swapped. `arrange` applies `--openings-order` and
`--openings-start` (cutechess's `order=` and `start=`): sequential from opening N, or shuffled by the seed and
then from opening N. A balanced book holds positions the exact solver (small boards, or few roots in play)
or the strong sample bot's search rates near even: fishtest's experience is that tests from balanced
openings are more sensitive, since fewer pairs are decided by the opening alone (`balanced_book`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from protocol.rules import Position

__all__ = ["OpeningsOrder", "RatedOpening", "arrange", "balanced_book", "format_book", "rate_opening"]

OpeningsOrder = Literal["sequential", "random"]


def arrange(
    openings: Sequence[tuple[str, ...]], order: OpeningsOrder = "sequential", start: int = 1, seed: int | str = 1
) -> list[tuple[str, ...]]:
    """The openings in playing order: shuffled by `seed` if `order` is random, then starting from opening `start`
    (1-based, as in the file; the ones before it come last, so every opening is still used).

    ValueError when `start` is past the last opening.
    """
    arranged = list(openings)
    if not arranged:
        if start != 1:
            raise ValueError(f"--openings-start {start}: there are no openings to start from")
        return arranged
    if not 1 <= start <= len(arranged):
        raise ValueError(f"--openings-start {start}: give 1 to {len(arranged)} (the openings there are)")
    if order == "random":
        random.Random(f"openings-order:{seed}").shuffle(arranged)
    return arranged[start - 1 :] + arranged[: start - 1]


@dataclass(frozen=True)
class RatedOpening:
    """An opening and how it was rated: Black's expected final margin with komi (0: even), and by what."""

    moves: tuple[str, ...]
    score: float
    exact: bool


Rater = Callable[[Position], tuple[float, bool]]


def rate_opening(
    position: Position, *, solver_roots: int = 16, solver_nodes: int = 300_000, search_s: float = 0.2
) -> tuple[float, bool]:
    """Black's final margin (komi included) with best play, exact when the solver proves it within its budget,
    else as the strong sample bot's search rates it in `search_s` (its score is the mover's: turned to Black's)."""
    from referee.play.adjudication import roots_in_play
    from sample_bots.search import choose_move
    from sample_bots.solver import SolveAborted, solve
    from sample_bots.strong import SETTINGS

    if roots_in_play(position) <= solver_roots:
        try:
            return solve(position, None, solver_nodes).score, True
        except SolveAborted:
            pass
    info = choose_move(position.copy(), search_s, settings=SETTINGS, use_all=True)
    sign = 1 if position.turn == "black" else -1
    return sign * info.score, info.proven


def _random_openings(width: int, height: int, komi: float, plies: int, seed: int | str) -> Iterator[Position]:
    rng = random.Random(f"balanced-book:{seed}")
    seen: set[tuple[str, ...]] = set()
    misses = 0
    while misses < 1000:
        position = Position(width, height, komi)
        for _ in range(plies):
            placements = position.legal_placements()
            if not placements:
                break
            position.push(rng.choice(placements))
        key = tuple(str(m) for m in position.history)
        if len(key) < plies or key in seen or position.is_over():
            misses += 1
            continue
        seen.add(key)
        yield position


def balanced_book(
    width: int,
    height: int,
    komi: float,
    *,
    plies: int,
    count: int,
    max_score: float,
    seed: int | str = 1,
    rate: Rater = rate_opening,
    tries: int | None = None,
    on_rated: Callable[[RatedOpening, bool], None] | None = None,
) -> list[RatedOpening]:
    """Up to `count` distinct openings of `plies` random placements whose rating is within `max_score` of even.

    Candidates come from a seeded generator (the same seed, the same book); at most `tries` are rated
    (default 20 per opening wanted). `on_rated(opening, kept)` is told of each candidate, for progress.
    """
    kept: list[RatedOpening] = []
    limit = tries if tries is not None else 20 * count
    for rated_count, position in enumerate(_random_openings(width, height, komi, plies, seed)):
        if len(kept) >= count or rated_count >= limit:
            break
        score, exact = rate(position)
        opening = RatedOpening(tuple(str(m) for m in position.history), score, exact)
        keep = abs(score) <= max_score
        if keep:
            kept.append(opening)
        if on_rated is not None:
            on_rated(opening, keep)
    return kept


def format_book(openings: Sequence[RatedOpening], header: Sequence[str] = ()) -> str:
    """The book as an openings file: comment lines first, then one opening per line with its rating."""
    lines = [f"# {line}" for line in header]
    for opening in openings:
        how = "exact" if opening.exact else "search"
        lines.append(f"{' '.join(opening.moves)}  # {opening.score:+g} ({how})")
    return "\n".join(lines) + "\n"
