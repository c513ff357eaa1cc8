"""Fitting the search's horizon evaluation (`Weights`, sample_bots/search.py) to the results of games.

The method is the one chess programmers call Texel tuning, with the final margin as the target: every
position of a set of finished games is first resolved to a quiet one by the search's own quiescence
search (the end of its principal line), then described by the features below, and a ridge least-squares
fit finds the weights whose sum best predicts the margin the game really ended with, from the side to
move. The search maximises that margin, so the best evaluation is its best prediction.

`features` is the definition, counted cell by cell; `Searcher.evaluate` computes the same sum from
bitboards, and the tests hold the two together. benchmarks/tune_evaluation.py plays the games and runs
the fit. Pure Python: the fit solves a system of about twenty equations.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from collections.abc import Iterable, Sequence

from protocol.rules import BLACK, Position
from sample_bots import strong
from sample_bots.search import _MAX_QDEPTH, DEFAULT, Searcher, Settings, Weights, position_neighbors

__all__ = ["FEATURES", "features", "fit", "predict", "quiet_leaf", "samples", "settings_of"]

_BUCKETS = len(Weights.BUCKETS)

FEATURES: tuple[str, ...] = (
    "margin",
    *(f"{group}[{size}]" for group in Weights.GROUPS for size in Weights.BUCKETS),
    "biggest_mine",
    "live",
    "after_pass",
    "tempo",
)
"""The names of `features`' entries, in the order of `Weights.vector()`; `group[s]` is the bucket of sizes from s."""


def features(position: Position) -> list[float]:
    """What `Weights` weighs in `position`, from the side to move, counted cell by cell.

    A tree is contested when a neighbouring root is no bigger than it; it is in a `smaller` group when a
    strictly smaller root is beside it, else in an `equal` one. Each contested tree adds its size to
    its group's entry for its size bucket.
    """
    width, n = position.width, position.width * position.height
    mover_dark = position.turn is BLACK
    sign = 1 if mover_dark else -1
    size = [position.size[i] if position.parent[i] < 0 else 0 for i in range(n)]
    values = [0.0] * len(FEATURES)
    values[0] = sign * (position.black_margin - position.komi)
    biggest = live = 0
    for i, s in enumerate(size):
        if not s:
            continue
        around_i = position_neighbors(i, width, position.height)
        around = [size[j] for j in around_i if size[j]]
        live += sum(1 for j in around_i if j > i and size[j])
        if not around or min(around) > s:
            continue
        mine = ((i % width + i // width) % 2 == 0) == mover_dark
        group = (0 if mine else 2) + (0 if min(around) < s else 1)
        values[1 + group * _BUCKETS + bisect_right(Weights.BUCKETS, s) - 1] += s
        if mine:
            biggest = max(biggest, s)
    values[-4] = biggest
    values[-3] = live
    values[-2] = 1.0 if position.consecutive_passes else 0.0
    values[-1] = 1.0
    return values


def predict(weights: Weights, values: Sequence[float]) -> float:
    return sum(w * v for w, v in zip(weights.vector(), values, strict=True))


def quiet_leaf(position: Position, settings: Settings = DEFAULT) -> Position:
    """Where the search's quiescence search would stop from `position`: the end of its principal line.

    The same search as `Searcher.quiesce` (the same captures, widths and evaluation, from `settings`),
    with the line kept.
    """
    searcher = Searcher(position, settings=settings)

    def quiesce(alpha: float, beta: float, qdepth: int) -> tuple[float, list[int]]:
        if searcher.passes >= 2:
            return searcher.terminal(), []
        classes = searcher._classes()
        stand = searcher.evaluate(classes)
        if stand >= beta:
            return stand, []
        if not searcher._any_placement():
            return searcher.terminal(), []
        if qdepth <= 0:
            return stand, []
        alpha = max(alpha, stand)
        best, line = stand, []
        for m in searcher._captures(searcher.q_width, classes):
            token = searcher._make(m)
            value, below = quiesce(-beta, -alpha, qdepth - 1)
            searcher._unmake(m, token)
            if -value > best:
                best, line = -value, [m, *below]
                alpha = max(alpha, best)
                if best >= beta:
                    break
        return best, line

    leaf = position.copy()
    for m in quiesce(-1e9, 1e9, _MAX_QDEPTH)[1]:
        leaf.push(searcher.to_move(m))
    return leaf


def samples(
    games: Iterable[tuple[Position, Sequence[str], float]], settings: Settings = DEFAULT
) -> list[tuple[list[float], float]]:
    """(features, final margin from the side to move) at the quiet leaf of every position of each game.

    A game is (its start, its moves, its final margin Black - White with komi). Leaves where the game is
    over are left out: the search scores those exactly.
    """
    out: list[tuple[list[float], float]] = []
    for start, moves, margin in games:
        position = start.copy()
        for text in moves:
            if position.is_over():
                break
            leaf = quiet_leaf(position, settings)
            if not leaf.is_over():
                out.append((features(leaf), margin if leaf.turn is BLACK else -margin))
            position.push(position.parse_move(text))
    return out


def fit(rows: Sequence[tuple[Sequence[float], float]], ridge: float = 1.0) -> Weights:
    """The weights minimising the squared error of `predict` over `rows`, plus `ridge` times their squares
    (which also sets a feature that never occurs to 0)."""
    k = len(FEATURES)
    matrix = [[0.0] * (k + 1) for _ in range(k)]  # the normal equations, the right-hand side last
    for values, target in rows:
        for i, vi in enumerate(values):
            if vi:
                row = matrix[i]
                for j, vj in enumerate(values):
                    row[j] += vi * vj
                row[k] += vi * target
    for i in range(k):
        matrix[i][i] += ridge
    return Weights.from_vector(_solve(matrix))


def _solve(matrix: list[list[float]]) -> list[float]:
    """Gaussian elimination with partial pivoting on an augmented k x (k + 1) matrix."""
    k = len(matrix)
    for col in range(k):
        pivot = max(range(col, k), key=lambda r: abs(matrix[r][col]))
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        top = matrix[col]
        if abs(top[col]) < 1e-9:
            continue  # a feature that never occurs (with no ridge): its weight stays 0
        for r in range(col + 1, k):
            factor = matrix[r][col] / top[col]
            if factor:
                row = matrix[r]
                for c in range(col, k + 1):
                    row[c] -= factor * top[c]
    solution = [0.0] * k
    for r in range(k - 1, -1, -1):
        row = matrix[r]
        if abs(row[r]) >= 1e-9:
            solution[r] = (row[k] - sum(row[c] * solution[c] for c in range(r + 1, k))) / row[r]
    return solution


def settings_of(spec: str) -> Settings:
    """The Settings of `alphabeta` or `strong`, with `,name=value` overrides (`strong,weights=none,q_width=2`
    is strong 1.2, contested trees at half; `weights=fitted` is strong's fitted evaluation)."""
    base, *overrides = spec.split(",")
    known = {"alphabeta": DEFAULT, "strong": strong.SETTINGS}
    if base not in known:
        raise ValueError("a side is alphabeta or strong, with ,name=value overrides")
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    changes: dict[str, object] = {}
    for override in overrides:
        name, _, text = override.partition("=")
        if name not in fields:
            raise ValueError(f"{override!r}: Settings has no {name!r} (it has {', '.join(fields)})")
        current = getattr(DEFAULT, name)
        if name == "weights":
            weights = {"fitted": strong.FITTED, "none": None}
            if text not in weights:
                raise ValueError(
                    f"{override!r}: the weights are `fitted` (strong's) or `none` (contested trees at half)"
                )
            changes[name] = weights[text]
        elif isinstance(current, bool):
            changes[name] = text.lower() in ("1", "true", "yes")
        elif isinstance(current, tuple):
            changes[name] = tuple(float(x) for x in text.split("/"))
        else:
            try:
                changes[name] = type(current)(text)
            except ValueError:
                raise ValueError(f"{override!r}: {name} is a number") from None
    return dataclasses.replace(known[base], **changes)  # type: ignore[arg-type]
