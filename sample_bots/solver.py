"""The exact value of an Alternator position: search to the end of the game, for every line.

Pure and synchronous, shared by the sample bots (to play perfectly once a position is small) and by
`alternator solve`. The value is the final margin the side to move can force, which is also what it
maximises: komi is a constant, so the moves that maximise Black - White also decide every win, loss
and draw. `solve(position)` returns the value as the final score (Black - White, komi included) and a
best move; `Solver.move_value(move)` gives the value after any legal move.

Why it is fast enough in pure Python: only the *live* part of the board is searched. A pit is
permanent and a root with no root beside it can never take part again, so the search works on the
roots that have a root neighbour and the edges between them, with everything else a constant. It
keeps a transposition table of value bounds (alpha-beta with a fail-soft window), keyed on a Zobrist
hash made canonical over the board symmetries that map the starting position onto itself: a
symmetry that swaps the cell colours also swaps the players, which leaves the mover's value alone.
Moves are tried best-first: the table's move, then by the margin they take at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from protocol.rules import BLACK, PASS, PASS_ID, Cell, Move, Position

__all__ = ["Solution", "SolveAborted", "Solver", "estimate_nodes", "live_roots", "solve"]

_INF = 1 << 30
_CHECK_EVERY = 256  # nodes between looks at the clock and the node limit (a few ms even on a busy machine)
_TT_LIMIT = 2_000_000  # entries; past this the table keeps what it has (about 0.3 GB at the limit)
_PROGRESS_EVERY_S = 1.0
# Measured on the empty boards 2x5 (10 live roots, 22,000 nodes) and 3x4 (12, 290,000): the nodes a
# solve takes grow about this much with each extra live root. An estimate for planning, not a promise.
_NODES_AT_12 = 300_000
_GROWTH_PER_ROOT = 3.4


def estimate_nodes(live: int) -> float:
    """About how many nodes solving a position with `live` roots in play takes (order of magnitude)."""
    return _NODES_AT_12 * _GROWTH_PER_ROOT ** (live - 12)


class SolveAborted(Exception):
    """The solver ran past its deadline or node limit before it knew the value."""


@dataclass(frozen=True)
class Solution:
    """The exact result of a position: `score` is the final Black - White (komi included) with best play."""

    score: float
    margin: int
    best_move: Move
    nodes: int
    seconds: float

    @property
    def black_margin(self) -> int:
        """Black's final tree total minus White's, before komi."""
        return self.margin


def live_roots(position: Position) -> int:
    """How many roots still have a root beside them: the cells that can still take part in a placement."""
    parent = position.parent
    width, height = position.width, position.height
    count = 0
    for i in range(width * height):
        if parent[i] >= 0:
            continue
        f, r = i % width, i // width
        if (
            (f > 0 and parent[i - 1] < 0)
            or (f + 1 < width and parent[i + 1] < 0)
            or (r > 0 and parent[i - width] < 0)
            or (r + 1 < height and parent[i + width] < 0)
        ):
            count += 1
    return count


def _symmetries(width: int, height: int) -> list[Callable[[int, int], tuple[int, int]]]:
    """The maps of the board onto itself, as functions of (file, rank): 8 on a square board, 4 otherwise."""
    w, h = width - 1, height - 1
    maps: list[Callable[[int, int], tuple[int, int]]] = [
        lambda f, r: (f, r),
        lambda f, r: (w - f, r),
        lambda f, r: (f, h - r),
        lambda f, r: (w - f, h - r),
    ]
    if width == height:
        maps += [
            lambda f, r: (r, f),
            lambda f, r: (w - r, f),
            lambda f, r: (r, h - f),
            lambda f, r: (w - r, h - f),
        ]
    return maps


class Solver:
    """Solves one position. Make one per position; its table is reused across calls on that position."""

    def __init__(self, position: Position, tt_limit: int = _TT_LIMIT) -> None:
        if position.is_over():
            raise ValueError("the game is over: its value is its score, there is nothing to solve")
        self.position = position.copy()
        self.komi = position.komi
        width, height = position.width, position.height
        n = width * height
        parent, sizes = position.parent, position.size

        def neighbours(i: int) -> list[int]:
            f, r = i % width, i // width
            near = [(f, r + 1), (f + 1, r), (f, r - 1), (f - 1, r)]
            return [rr * width + ff for ff, rr in near if 0 <= ff < width and 0 <= rr < height]

        live = [i for i in range(n) if parent[i] < 0 and any(parent[j] < 0 for j in neighbours(i))]
        self.cells = live
        local = {cell: k for k, cell in enumerate(live)}
        self.width = width
        # Per live cell: +1 dark (Black's), -1 light; its size; the margin from everything else is constant.
        self.sign = [1 if (c % width + c // width) % 2 == 0 else -1 for c in live]
        self.size = [sizes[c] for c in live]
        self.margin = position.black_margin
        # Directed placements between live cells, numbered; each undirected edge once as (a, b, a->b, b->a).
        self.moves: list[tuple[int, int]] = []
        self.edges: list[tuple[int, int, int, int]] = []
        for a in live:
            for b in neighbours(a):
                if b in local and a < b:
                    ab, ba = len(self.moves), len(self.moves) + 1
                    self.moves += [(local[a], local[b]), (local[b], local[a])]
                    self.edges.append((local[a], local[b], ab, ba))
        self.stm = 1 if position.turn is BLACK else -1
        self.passes = position.consecutive_passes
        self._build_hashing(position, neighbours)
        self.tt: dict[int, tuple[int, int, int]] = {}
        self.tt_limit = tt_limit
        self.nodes = 0
        self.deadline = float("inf")
        self.max_nodes = _INF * _INF
        self.countdown = _CHECK_EVERY
        self.on_progress: Callable[[int, float], None] | None = None
        self._started = self._reported = time.perf_counter()

    def _build_hashing(self, position: Position, neighbours: Callable[[int], list[int]]) -> None:
        """Zobrist keys per placement for each symmetry that maps the starting position onto itself."""
        width, height = position.width, position.height
        n = width * height
        parent = position.parent
        rng = random.Random(0xA17E)
        base_keys = {(p, q): rng.getrandbits(63) for p in range(n) for q in neighbours(p)}
        self.zturn = rng.getrandbits(63)
        self.zpass = [0, rng.getrandbits(63), rng.getrandbits(63)]
        keys: list[list[int]] = []
        turn_keys: list[int] = []
        perms: list[list[int]] = []
        for sym in _symmetries(width, height):
            image = [0] * n
            for i in range(n):
                f, r = sym(i % width, i // width)
                image[i] = r * width + f
            stems_kept = all(
                (parent[i] < 0) == (parent[image[i]] < 0) and (parent[i] < 0 or parent[image[i]] == image[parent[i]])
                for i in range(n)
            )
            if not stems_kept:
                continue
            swaps_colours = (image[0] % width + image[0] // width) % 2 == 1
            cells = self.cells
            keys.append([base_keys[image[cells[p]], image[cells[q]]] for p, q in self.moves])
            local = {cell: k for k, cell in enumerate(cells)}
            number = {pq: m for m, pq in enumerate(self.moves)}
            perm = [number[local[image[cells[p]]], local[image[cells[q]]]] for p, q in self.moves]
            perms.append(perm)
            # A symmetry that swaps the colours swaps the players too: the image has the other side to move.
            turn_keys.append(self.zturn if swaps_colours else 0)
        self.sym_keys = [tuple(ks[m] for ks in keys) for m in range(len(self.moves))]
        white = self.stm < 0
        self.hashes = tuple(t ^ (self.zturn if white else 0) for t in turn_keys)
        self.symmetry_count = len(keys)
        # The table keeps a best move in the frame of the symmetry whose hash was the key: `to_key[s][m]`
        # takes a move there, `from_key[s][m]` brings it back.
        self.to_key = perms
        self.from_key = [[0] * len(perm) for perm in perms]
        for perm, inverse in zip(perms, self.from_key, strict=True):
            for m, image_m in enumerate(perm):
                inverse[image_m] = m

    # -- the search ---------------------------------------------------------------------------------

    def _generate(self) -> list[tuple[int, int]]:
        """Legal placements as (gain for the mover, move number), best first."""
        size, sign, stm = self.size, self.sign, self.stm
        out = []
        for a, b, ab, ba in self.edges:
            sa = size[a]
            if sa:
                sb = size[b]
                if sb:
                    if sa >= sb:
                        out.append((2 * sa * sign[b] * stm, ab))
                    if sb >= sa:
                        out.append((2 * sb * sign[a] * stm, ba))
        out.sort(reverse=True)
        return out

    def _negamax(self, alpha: int, beta: int) -> int:
        """The mover's final margin (Black - White before komi, from its side), fail-soft within (alpha, beta)."""
        self.nodes += 1
        self.countdown -= 1
        if not self.countdown:
            self._check()
        stm = self.stm
        if self.passes >= 2:
            return stm * self.margin
        moves = self._generate()
        if not moves:
            return stm * self.margin  # only passes are left: the game ends as it stands
        hashes = self.hashes
        canonical = min(hashes)
        frame = hashes.index(canonical)
        key = canonical ^ self.zpass[self.passes]
        entry = self.tt.get(key)
        tt_move = -2
        lower, upper = -_INF, _INF
        if entry is not None:
            lower, upper, tt_move = entry
            if tt_move >= 0:
                tt_move = self.from_key[frame][tt_move]
            if lower >= beta:
                return lower
            if upper <= alpha:
                return upper
            if lower == upper:
                return lower
            alpha = max(alpha, lower)
            beta = min(beta, upper)
        order = [m for _gain, m in moves]
        order.append(PASS_ID)
        if tt_move != -2 and order[0] != tt_move:
            order.remove(tt_move)
            order.insert(0, tt_move)
        size, sign, moves_list, sym_keys = self.size, self.sign, self.moves, self.sym_keys
        best, best_move = -_INF, order[0]
        first = order[0]
        a = alpha
        old_passes = self.passes
        for m in order:
            self.stm = -stm
            if m == PASS_ID:
                if old_passes:
                    value = stm * self.margin  # a second pass in a row ends the game
                else:
                    self.passes = 1
                    self.hashes = tuple(h ^ self.zturn for h in hashes)
                    value = self._child(m == first, a, beta)
                    self.passes = 0
            else:
                p, q = moves_list[m]
                sp = size[p]
                size[p] = 0
                size[q] += sp
                delta = 2 * sp * sign[q]
                self.margin += delta
                self.passes = 0
                keys = sym_keys[m]
                self.hashes = tuple(h ^ k ^ self.zturn for h, k in zip(hashes, keys, strict=True))
                value = self._child(m == first, a, beta)
                self.margin -= delta
                size[q] -= sp
                size[p] = sp
                self.passes = old_passes
            self.stm = stm
            self.hashes = hashes
            if value > best:
                best, best_move = value, m
                if value > a:
                    a = value
                    if value >= beta:
                        break
        if best <= alpha:
            upper = best
        elif best >= beta:
            lower = best
        else:
            lower = upper = best
        if len(self.tt) < self.tt_limit or key in self.tt:
            self.tt[key] = (lower, upper, best_move if best_move < 0 else self.to_key[frame][best_move])
        return best

    def _child(self, first: bool, alpha: int, beta: int) -> int:
        """A child's value from the parent's side: the first move with the window, the rest with a null
        window first (principal-variation search), searched again only when they might be better."""
        if first or beta - alpha <= 1:
            return -self._negamax(-beta, -alpha)
        value = -self._negamax(-alpha - 1, -alpha)
        if alpha < value < beta:
            value = -self._negamax(-beta, -alpha)
        return value

    def _check(self) -> None:
        self.countdown = _CHECK_EVERY
        now = time.perf_counter()
        if self.nodes >= self.max_nodes or now >= self.deadline:
            raise SolveAborted(f"gave up after {self.nodes:,} nodes and {now - self._started:.1f} s")
        if self.on_progress is not None and now - self._reported >= _PROGRESS_EVERY_S:
            self._reported = now
            self.on_progress(self.nodes, now - self._started)

    # -- the public side ----------------------------------------------------------------------------

    def _limit(self, deadline: float | None, max_nodes: int | None) -> None:
        if self.nodes == 0:
            self._started = self._reported = time.perf_counter()
        self.deadline = float("inf") if deadline is None else deadline
        self.max_nodes = _INF * _INF if max_nodes is None else self.nodes + max_nodes
        self.countdown = 1 if deadline is not None and deadline <= time.perf_counter() else _CHECK_EVERY

    def _move(self, m: int) -> Move:
        if m == PASS_ID:
            return PASS
        p, q = self.moves[m]
        pit, root, width = self.cells[p], self.cells[q], self.width
        return Move(Cell(pit % width, pit // width), Cell(root % width, root // width))

    def _to_score(self, mover_margin: int) -> tuple[float, int]:
        margin = self.stm * mover_margin
        return margin - self.komi, margin

    def solve(self, deadline: float | None = None, max_nodes: int | None = None) -> Solution:
        """The exact value and a best move; SolveAborted past `deadline` (a perf_counter time) or `max_nodes`."""
        self._limit(deadline, max_nodes)
        start, nodes = time.perf_counter(), self.nodes
        value = self._negamax(-_INF, _INF)
        best = self._table_move()
        score, margin = self._to_score(value)
        return Solution(score, margin, self._move(best), self.nodes - nodes, time.perf_counter() - start)

    def _table_move(self) -> int:
        """The best move the table holds for the current position (a pass when no placement is legal)."""
        if not self._generate():
            return PASS_ID
        canonical = min(self.hashes)
        entry = self.tt.get(canonical ^ self.zpass[self.passes])
        if entry is None or entry[2] < 0:
            return PASS_ID
        return self.from_key[self.hashes.index(canonical)][entry[2]]

    def root_moves(self) -> list[Move]:
        """The legal moves here, in the order `move_values` takes them (likely best first)."""
        return [self._move(m) for _gain, m in self._generate()] + [PASS]

    def move_value(self, move: Move, deadline: float | None = None, max_nodes: int | None = None) -> Solution:
        """The exact result after `move` (a legal move here), with the opponent's best reply as its move."""
        self._limit(deadline, max_nodes)
        start, nodes = time.perf_counter(), self.nodes
        m = self._local(move)
        hashes, stm, old_passes = self.hashes, self.stm, self.passes
        self.stm = -stm
        if m == PASS_ID:
            self.passes = old_passes + 1
            self.hashes = tuple(h ^ self.zturn for h in hashes)
            delta = sp = p = q = 0
        else:
            p, q = self.moves[m]
            sp = self.size[p]
            self.size[p] = 0
            self.size[q] += sp
            delta = 2 * sp * self.sign[q]
            self.margin += delta
            self.passes = 0
            self.hashes = tuple(h ^ k ^ self.zturn for h, k in zip(hashes, self.sym_keys[m], strict=True))
        try:
            if self.passes >= 2:
                value, reply = -stm * self.margin, PASS_ID
            else:
                value = self._negamax(-_INF, _INF)
                reply = self._table_move()
            margin = -stm * value
            reply_move = PASS if reply == PASS_ID else self._move(reply)
        finally:
            self.margin -= delta
            if m != PASS_ID:
                self.size[q] -= sp
                self.size[p] = sp
            self.stm, self.hashes, self.passes = stm, hashes, old_passes
        return Solution(margin - self.komi, margin, reply_move, self.nodes - nodes, time.perf_counter() - start)

    def _local(self, move: Move) -> int:
        self.position.check(move)
        if move.pit is None or move.root is None:
            return PASS_ID
        width = self.width
        p = self.cells.index(move.pit.rank * width + move.pit.file)
        q = self.cells.index(move.root.rank * width + move.root.file)
        return self.moves.index((p, q))


def solve(
    position: Position, deadline: float | None = None, max_nodes: int | None = None, tt_limit: int = _TT_LIMIT
) -> Solution:
    """The exact result of `position` with best play and a move that keeps it; SolveAborted past the limits."""
    return Solver(position, tt_limit).solve(deadline, max_nodes)
