"""The exact value of an Alternator position: search to the end of the game, for every line.

Pure and synchronous, shared by the sample bots (to play perfectly once a position is small) and by
`alternator solve`. The value is the final margin the side to move can force, which is also what it
maximises: komi is a constant, so the moves that maximise Black - White also decide every win, loss
and draw. `solve(position)` returns the value as the final score (Black - White, komi included) and a
best move; `Solver.move_value(move)` gives the value after any legal move.

The best move comes from the root's own search, never from the transposition table: the table is an
accelerator that may be full or hold nothing, and a full table costs speed, never correctness.

Why it is fast enough in pure Python (benchmarks/bench_solver.py measures it; README, "Solving
positions", has what each part saved):
- Only the *live* part of the board is searched: a pit is permanent and a root with no root beside
  it can never take part again, so the search works on the roots that have a root neighbour and the
  edges between them, with everything else a constant. Children get only the edges still live.
- The root is solved by null-window searches (MTD(f)): each asks "is the value at least g?", with the
  table kept between them, until the lower and upper bounds meet; below the root every search is a
  null-window one.
- The table is keyed on the roots still in play and their sizes, and holds values relative to the
  margin as it stands: positions that differ only in trees already out of play share an entry. High in
  the tree the key is made canonical over the board's symmetries. Before any child is searched the
  table is asked about all of them (enhanced transposition cut-offs).
- A position whose live roots pair off into separate edges is valued without search, and an edge on its
  own whose trees differ in size is taken at once by the side it helps (`_separate_edges`, `_take_free`).
- After a pass the mover may end the game with a second one, and a pass is worth at most the margin as
  it stands: both are known before any search.
- Moves are tried table move first, then by the margin they take (three times over when the tree they
  make is out of play at once); at the root, moves that a symmetry of the position maps onto each
  other are searched once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from protocol.rules import BLACK, PASS, PASS_ID, Cell, Move, Position, roots_in_play

__all__ = ["Solution", "SolveAborted", "Solver", "estimate_nodes", "live_roots", "solve"]

_Edge = tuple[int, int, int, int, int, int, int]
"""An edge between two live cells a < b: (a, b, the move a->b, the move b->a, the bits of a and b, the
bits of b's other neighbours, the bits of a's other neighbours)."""

_INF = 1 << 30
_CHECK_EVERY = 256  # nodes between looks at the clock and the node limit (a few ms even on a busy machine)
_TT_LIMIT = 2_000_000  # entries; past this the table keeps what it has (about 0.3 GB at the limit)
_PROGRESS_EVERY_S = 1.0
# Live edges at a node from which its table key is made canonical over the symmetries (a pass over the
# live cells per symmetry: worth it only high in the tree).
_SYMMETRIC_KEYS_FROM = 8
# Measured on the empty boards 3x4 (12 live roots, 43,000 nodes), 2x7 (14, 190,000), 3x5 (15, 800,000)
# and 4x4 (16, 2,400,000): the nodes a solve takes grow about this much with each extra live root. An
# estimate for planning, not a promise: an endgame's roots in small groups solve many times faster.
_NODES_AT_12 = 45_000
_GROWTH_PER_ROOT = 2.6


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
    return roots_in_play(position)


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
    """Solves one position, and the positions that follow it: `follow` plays a game's later moves into it,
    so that a bot keeps one solver all game and what it learnt on one turn (even in a search it gave up)
    helps the next."""

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
        self.roots = (1 << len(live)) - 1  # a bit per live cell that is still a root
        self.margin = position.black_margin
        near = [[local[j] for j in neighbours(c) if j in local] for c in live]
        near_bits = [sum(1 << j for j in cells) for cells in near]
        # Directed placements between live cells, numbered; each undirected edge once (see _Edge). Per
        # placement (p, q), what the table key needs to know which roots it leaves out of play:
        # p's bit, q's neighbours, and p's other neighbours (each with its bit and its neighbours).
        self.moves: list[tuple[int, int]] = []
        self.edges: list[_Edge] = []
        self.effects: list[tuple[int, int, int, int, tuple[tuple[int, int, int], ...]]] = []
        for a in live:
            for b in neighbours(a):
                if b in local and a < b:
                    ab, ba = len(self.moves), len(self.moves) + 1
                    la, lb = local[a], local[b]
                    self.moves += [(la, lb), (lb, la)]
                    bits = (1 << la) | (1 << lb)
                    self.edges.append((la, lb, ab, ba, bits, near_bits[lb] & ~bits, near_bits[la] & ~bits))
                    for p, q in ((la, lb), (lb, la)):
                        others = tuple((r, 1 << r, near_bits[r]) for r in near[p] if r != q)
                        self.effects.append((p, q, 1 << p, near_bits[q], others))
        self.scale = 1 << len(self.moves).bit_length()  # above every move number
        self.stm = 1 if position.turn is BLACK else -1
        self.passes = position.consecutive_passes
        self.history = len(position.history)
        # Zobrist keys per (live cell, tree size), over the roots still in play only: once out of play a
        # root is a constant, so positions that differ only there share their entry. Entries hold values
        # relative to the margin as it stands, which is what makes that sound.
        rng = random.Random(0xA17E)
        total = sum(self.size)
        self.zsize = [[0] + [rng.getrandbits(63) for _ in range(total)] for _ in live]
        self.zturn = rng.getrandbits(63)
        self.zpass = [0, rng.getrandbits(63), rng.getrandbits(63)]
        key = self.seed = rng.getrandbits(63)  # not 0, and a different start from any other board
        for k, s in enumerate(self.size):
            key ^= self.zsize[k][s]
        self.key = key ^ (self.zturn if self.stm < 0 else 0) ^ self.zpass[self.passes]
        self._table_symmetries(position)
        self.root_images = self._root_images()
        self.tt: dict[int, tuple[int, int, int]] = {}
        self._proven: tuple[int, int] | None = None  # the last lower bound the root proved, and its move
        self._hint_key, self._first_hint = -1, -2  # the position `solve` was told a likely move for, and it
        # Per number of roots left (a ply, give or take passes): the last two moves that cut a node off
        # there, tried right after the table's move ("killers": 22-29% fewer nodes on 3x4, 2x7, 3x5).
        self.killers = [(-1, -1)] * (len(live) + 2)
        self.tt_limit = tt_limit
        self._counted = 0
        self._window = self.countdown = _CHECK_EVERY
        self.deadline = float("inf")
        self.max_nodes = _INF * _INF
        self.on_progress: Callable[[int, float], None] | None = None
        self._started = self._reported = time.perf_counter()

    @property
    def symmetry_count(self) -> int:
        """The symmetries of the position searched once at the root, the identity included."""
        return len(self.root_images) + 1

    def _table_symmetries(self, position: Position) -> None:
        """Per symmetry that maps this position onto itself (colour-swapping ones included: they swap the
        players too, which leaves the mover's value alone), the Zobrist keys of each live cell's image,
        the cells' images, and the maps of the move numbers there (`to_key`) and back (`from_key`)."""
        width, height = position.width, position.height
        n = width * height
        parent, sizes = position.parent, position.size
        cells = self.cells
        local = {cell: k for k, cell in enumerate(cells)}
        number = {pq: m for m, pq in enumerate(self.moves)}
        self.sym_keys: list[tuple[list[list[int]], bool]] = []
        self.sym_cells: list[list[int]] = []
        self.to_key: list[list[int]] = []
        for sym in _symmetries(width, height):
            image = [0] * n
            for i in range(n):
                f, r = sym(i % width, i // width)
                image[i] = r * width + f
            if any((parent[i] < 0) != (parent[image[i]] < 0) or sizes[i] != sizes[image[i]] for i in range(n)):
                continue
            swaps = (image[0] % width + image[0] // width) % 2 == 1
            self.sym_keys.append(([self.zsize[local[image[c]]] for c in cells], swaps))
            self.sym_cells.append([local[image[c]] for c in cells])
            self.to_key.append([number[local[image[cells[p]]], local[image[cells[q]]]] for p, q in self.moves])
        self.from_key = [[0] * len(self.moves) for _ in self.to_key]
        for perm, inverse in zip(self.to_key, self.from_key, strict=True):
            for m, image_m in enumerate(perm):
                inverse[image_m] = m
        self.sym_from = _SYMMETRIC_KEYS_FROM if len(self.sym_keys) > 1 else _INF

    def _root_images(self) -> list[list[int]]:
        """The symmetries other than the identity that map the current position onto itself and keep the
        cell colours (so the same side is to move in the image), each as a map of the move numbers."""
        size = self.size
        return [
            self.to_key[s]
            for s in range(1, len(self.sym_keys))
            if not self.sym_keys[s][1] and all(size[k] == size[image] for k, image in enumerate(self.sym_cells[s]))
        ]

    # -- the search ---------------------------------------------------------------------------------

    def _generate(self) -> list[tuple[int, int]]:
        """Legal placements as (gain for the mover, move number), best first."""
        size, sign, stm = self.size, self.sign, self.stm
        out = []
        for a, b, ab, ba, *_bits in self.edges:
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

    def _test(self, beta: int, edges: list[_Edge]) -> int:
        """Is the mover's final margin (Black - White before komi, from its side) at least `beta`? A
        null-window search: the value fail-soft, a lower bound when at least `beta`, else an upper one.
        `edges` holds every live edge (others may be in it too): the children get only the live ones."""
        self.countdown -= 1  # counts the node too (see `nodes`)
        if not self.countdown:
            self._check()
        stm = self.stm
        stand = stm * self.margin  # the margin if the game ended now
        tt = self.tt
        key = plain = self.key
        entry = tt.get(key)  # before the moves are made: most entries are found here, and cut at once
        if entry is not None:
            if entry[0] + stand >= beta:
                return entry[0] + stand
            if entry[1] + stand < beta:
                return entry[1] + stand
        size, sign, moves_list = self.size, self.sign, self.moves
        roots, scale = self.roots, self.scale
        mask = scale - 1
        passes = self.passes
        moves = []
        alive = []
        touched = twice = 0
        for edge in edges:
            a, b, ab, ba, bits, beside_b, beside_a = edge
            sa = size[a]
            if sa:
                sb = size[b]
                if sb:
                    alive.append(edge)
                    twice |= touched & bits
                    touched |= bits
                    # Order: the margin a move takes, three times over when the tree it makes is out of
                    # play at once (no other root beside it, so no reply can take it back): 7-14% fewer
                    # nodes. Times `scale` plus the move number: it sorts by that, and & `mask` gives the move.
                    if sa >= sb:
                        moves.append(scale * sa * sign[b] * stm * (1 if beside_b & roots else 3) + ab)
                    if sb >= sa:
                        moves.append(scale * sb * sign[a] * stm * (1 if beside_a & roots else 3) + ba)
        live = len(alive)
        if not live:
            return stand  # only passes are left: the game ends as it stands
        if not twice:
            return self._separate_edges(alive, stand, passes)
        if not passes and twice != touched:
            free = [edge for edge in alive if not edge[4] & twice and size[edge[0]] != size[edge[1]]]
            if free:
                return self._take_free(beta, free, [edge for edge in alive if edge not in free])
        frame = 0
        if live >= self.sym_from:
            key, frame = self._canonical(touched)
            entry = tt.get(key)
        tt_move = -2
        if entry is not None:
            if entry[0] + stand >= beta:
                return entry[0] + stand
            if entry[1] + stand < beta:
                return entry[1] + stand
            tt_move = entry[2]
            if frame and tt_move >= 0:
                tt_move = self.from_key[frame][tt_move]
        best, best_move = -_INF, -2
        if passes:
            # A second pass ends the game: the mover has at least the margin as it stands.
            best, best_move = stand, PASS_ID
            if stand >= beta:
                self._store(key, stand, beta, PASS_ID, stand)
                return stand
        moves.sort(reverse=True)
        order = [x & mask for x in moves]
        ply = roots.bit_count()
        for killer in self.killers[ply]:
            if killer >= 0 and killer != order[0] and killer in order:
                order.remove(killer)
                order.insert(0, killer)
        if tt_move >= 0 and order[0] != tt_move and tt_move in order:
            order.remove(tt_move)
            order.insert(0, tt_move)
        zsize, effects = self.zsize, self.effects
        zpass_now = self.zturn ^ self.zpass[passes]
        roots = self.roots
        # Enhanced transposition cut-offs: the table is asked about every child first. One it refutes
        # ends the node unsearched; one whose entry says it cannot reach beta needs no search either.
        plan = []
        for m in order:
            p, q, pbit, qnear, others = effects[m]
            sp, sq = size[p], size[q]
            left = roots ^ pbit
            h = plain ^ zsize[p][sp] ^ zsize[q][sq] ^ zpass_now
            if qnear & left:
                h ^= zsize[q][sq + sp]
            for r, rbit, rnear in others:
                if left & rbit and not left & rnear:
                    h ^= zsize[r][size[r]]
            child = tt.get(h)
            if child is not None:
                # The child's stand is the margin after the move, from the other side.
                after = stand + 2 * sp * sign[q] * stm
                if after - child[1] >= beta:
                    self._store(key, after - child[1], beta, self.to_key[frame][m], stand)
                    return after - child[1]
                if after - child[0] < beta:
                    if after - child[0] > best:
                        best, best_move = after - child[0], m
                    continue
            plan.append((m, h))
        if not passes:
            if stand >= beta:
                plan.append((PASS_ID, plain ^ zpass_now ^ self.zpass[1]))
            elif stand > best:
                # A pass is worth at most the margin as it stands (the other side may end the game), so
                # it cannot reach beta here: that bound is all the node needs to know of it.
                best, best_move = stand, PASS_ID
        self.stm = -stm
        child_beta = 1 - beta
        for m, h in plan:
            self.key = h
            if m == PASS_ID:
                self.passes = 1
                value = -self._test(child_beta, alive)
                self.passes = 0
            else:
                p, q = moves_list[m]
                sp, sq = size[p], size[q]
                size[p] = 0
                size[q] = sq + sp
                self.roots = roots ^ (1 << p)
                delta = 2 * sp * sign[q]
                self.margin += delta
                self.passes = 0
                value = -self._test(child_beta, alive)
                self.margin -= delta
                size[q] = sq
                size[p] = sp
                self.roots = roots
                self.passes = passes
            if value > best:
                best, best_move = value, m
                if value >= beta:
                    if m >= 0 and self.killers[ply][1] != m:
                        self.killers[ply] = (self.killers[ply][1], m)
                    break
        self.stm = stm
        self.key = plain
        self._store(key, best, beta, best_move if best_move < 0 else self.to_key[frame][best_move], stand)
        return best

    def _take_free(self, beta: int, free: list[_Edge], rest: list[_Edge]) -> int:
        """The value of a position with *free* edges, with the same side to move, no pass just made.

        A free edge is alone (neither end has another live neighbour) and its trees differ in size: its
        one placement helps one side only, which takes it whenever it likes, and the other side never
        will. With passing always allowed a move that changes nothing else is worth no tempo, so the
        value is that of the position with every free edge taken, by the side it helps."""
        size, sign, zsize = self.size, self.sign, self.zsize
        key, roots, margin = self.key, self.roots, self.margin
        taken = []
        for a, b, *_rest in free:
            p, q = (a, b) if size[a] > size[b] else (b, a)
            sp, sq = size[p], size[q]
            taken.append((p, q, sp, sq))
            size[p] = 0
            size[q] = sp + sq
            self.key ^= zsize[p][sp] ^ zsize[q][sq]  # both ends are out of play now
            self.roots ^= 1 << p
            self.margin += 2 * sp * sign[q]
        value = self._test(beta, rest)
        for p, q, sp, sq in taken:
            size[q] = sq
            size[p] = sp
        self.key, self.roots, self.margin = key, roots, margin
        return value

    def _store(self, key: int, value: int, beta: int, move: int, stand: int) -> None:
        """Keep a bound on the value, relative to the margin as it stands (`stand`), and the best move."""
        tt = self.tt
        if len(tt) < self.tt_limit or key in tt:
            lower = value - stand if value >= beta else -_INF
            upper = value - stand if value < beta else _INF
            old = tt.get(key)
            if old is not None:  # keep what the earlier searches proved of this position
                lower, upper = max(lower, old[0]), min(upper, old[1])
            tt[key] = (lower, upper, move)

    def _separate_edges(self, edges: list[_Edge], stand: int, passes: int) -> int:
        """The exact value when every live root has exactly one live neighbour, without search.

        Each edge is then a game of its own that one placement ends. When its trees differ in size it
        has one placement, which only the side it profits will ever make (when does not matter: nothing
        else can change it). When they are equal either side may take the other's tree: a switch worth
        2s to whoever takes it. The two sides take the switches in turn, biggest first, and after a pass
        the mover may instead end the game at once."""
        size, sign, stm = self.size, self.sign, self.stm
        value = stand
        switches = []
        for a, b, *_rest in edges:
            sa, sb = size[a], size[b]
            if sa == sb:
                switches.append(sa)
            elif sa > sb:
                value += 2 * sa * sign[b] * stm
            else:
                value += 2 * sb * sign[a] * stm
        switches.sort(reverse=True)
        value += 2 * (sum(switches[0::2]) - sum(switches[1::2]))
        return stand if passes and stand > value else value

    def _canonical(self, live: int) -> tuple[int, int]:
        """The table key of this position as the least of the keys of its images under the symmetries
        of the starting position, and which symmetry gave it (its *frame*: 0 is the identity). `live`
        has the bits of the roots in play."""
        size = self.size
        cells = []
        while live:
            low = live & -live
            cells.append(low.bit_length() - 1)
            live ^= low
        white = self.stm < 0
        seed = self.seed ^ self.zpass[self.passes]
        zturn = self.zturn
        best, frame = -1, 0
        for s, (image_keys, swaps) in enumerate(self.sym_keys):
            h = seed ^ zturn if white != swaps else seed
            for k in cells:
                h ^= image_keys[k][size[k]]
            if best < 0 or h < best:
                best, frame = h, s
        return best, frame

    @property
    def nodes(self) -> int:
        """Positions searched so far, by all calls: those of the countdown window under way included."""
        return self._counted + self._window - self.countdown

    def _restart_countdown(self, window: int) -> None:
        self._counted = self.nodes
        self._window = self.countdown = window

    def _check(self) -> None:
        self._restart_countdown(_CHECK_EVERY)
        now = time.perf_counter()
        if self.nodes >= self.max_nodes or now >= self.deadline:
            raise SolveAborted(f"gave up after {self.nodes:,} nodes and {now - self._started:.1f} s")
        if self.on_progress is not None and now - self._reported >= _PROGRESS_EVERY_S:
            self._reported = now
            self.on_progress(self.nodes, now - self._started)

    # -- moves outside the inner loop -----------------------------------------------------------------

    def _play(self, m: int) -> tuple[int, int, int, int, int, int]:
        """Play move number `m` (or PASS_ID); returns what `_unplay` needs to take it back."""
        undo = (m, self.size[self.moves[m][0]] if m >= 0 else 0, self.key, self.roots, self.passes, self.margin)
        key = self.key ^ self.zturn ^ self.zpass[self.passes]
        self.stm = -self.stm
        if m == PASS_ID:
            self.passes += 1
            self.key = key ^ self.zpass[self.passes]
            return undo
        size, zsize = self.size, self.zsize
        p, q, pbit, qnear, others = self.effects[m]
        sp, sq = size[p], size[q]
        size[p] = 0
        size[q] = sq + sp
        self.roots ^= pbit
        key ^= zsize[p][sp] ^ zsize[q][sq]
        if qnear & self.roots:
            key ^= zsize[q][sq + sp]
        for r, rbit, rnear in others:
            if self.roots & rbit and not self.roots & rnear:
                key ^= zsize[r][size[r]]
        self.key = key
        self.margin += 2 * sp * self.sign[q]
        self.passes = 0
        return undo

    def _unplay(self, undo: tuple[int, int, int, int, int, int]) -> None:
        m, sp, self.key, self.roots, self.passes, self.margin = undo
        self.stm = -self.stm
        if m >= 0:
            p, q = self.moves[m]
            self.size[q] -= sp
            self.size[p] = sp

    def _live_bits(self) -> tuple[int, int]:
        """The live edges here and the bits of the roots in play."""
        size = self.size
        live = touched = 0
        for a, b, _ab, _ba, bits, *_beside in self.edges:
            if size[a] and size[b]:
                live += 1
                touched |= bits
        return live, touched

    # -- the root: null-window searches, and a move that comes from the search itself -----------------

    def _root(self, beta: int, symmetric: bool) -> tuple[int, int]:
        """Is the mover's value at least `beta`? The fail-soft value of a null-window search at
        (beta - 1, beta), and the move that reached it when it is at least `beta` (-2 otherwise)."""
        self._counted += 1
        stand = self.stm * self.margin
        moves = self._generate()
        if not moves:
            return stand, PASS_ID
        best, best_move = -_INF, -2
        if self.passes:
            best, best_move = stand, PASS_ID
            if stand >= beta:
                return stand, PASS_ID
        order = [m for _gain, m in moves]
        _lower, hint = self._table_hint()
        if hint < 0 and self.key == self._hint_key:
            hint = self._first_hint
        if hint >= 0 and hint in order:
            order.remove(hint)
            order.insert(0, hint)
        if not self.passes:
            order.append(PASS_ID)
        seen: set[int] = set()
        for m in order:
            if m in seen:
                continue  # the mirror image of a move already searched: the same value
            if symmetric and m >= 0:
                seen.update(image[m] for image in self.root_images)
            undo = self._play(m)
            value = -self._test(1 - beta, self.edges)
            self._unplay(undo)
            if value > best:
                best, best_move = value, m
                if value >= beta:
                    break
        return best, best_move if best >= beta else -2

    def _table_hint(self) -> tuple[int, int]:
        """What the table knows of the current position, as a hint only: its lower bound and best move."""
        key, frame = self.key, 0
        live, touched = self._live_bits()
        if live >= self.sym_from:
            key, frame = self._canonical(touched)
        entry = self.tt.get(key)
        if entry is None or entry[0] <= -_INF // 2:
            return -_INF, -2 if entry is None else entry[2]
        move = entry[2]
        return entry[0] + self.stm * self.margin, move if move < 0 or not frame else self.from_key[frame][move]

    def has_bounds(self) -> bool:
        """Whether the table holds a bound on the current position's value (the searches start there)."""
        return self._table_hint()[0] > -_INF

    def _solve_here(self, first_guess: int | None = None) -> tuple[int, int]:
        """The exact value from the mover's side and a move that keeps it, by null-window searches."""
        lower, upper = -_INF, _INF
        self._proven = None
        symmetric = bool(self.root_images)
        guess, _hint = self._table_hint()
        if guess == -_INF:
            guess = self.stm * self.margin if first_guess is None else first_guess
        move = -2
        while lower < upper:
            beta = guess if guess > lower else lower + 1
            value, found = self._root(beta, symmetric)
            if value >= beta:
                lower, move = value, found
                self._proven = (lower, move)
            else:
                upper = value
            guess = value
        if move == -2:  # a guard: the lower bound always comes from a search that found its move
            value, move = self._root(lower, symmetric)
        return lower, move

    # -- the public side ----------------------------------------------------------------------------

    def _limit(self, deadline: float | None, max_nodes: int | None) -> None:
        if self.nodes == 0:
            self._started = self._reported = time.perf_counter()
        self.deadline = float("inf") if deadline is None else deadline
        self.max_nodes = _INF * _INF if max_nodes is None else self.nodes + max_nodes
        self._restart_countdown(1 if deadline is not None and deadline <= time.perf_counter() else _CHECK_EVERY)

    def _move(self, m: int) -> Move:
        if m == PASS_ID:
            return PASS
        p, q = self.moves[m]
        pit, root, width = self.cells[p], self.cells[q], self.width
        return Move(Cell(pit % width, pit // width), Cell(root % width, root // width))

    def _to_score(self, mover_margin: int) -> tuple[float, int]:
        margin = self.stm * mover_margin
        return margin - self.komi, margin

    def solve(
        self,
        deadline: float | None = None,
        max_nodes: int | None = None,
        guess: float | None = None,
        likely: Move | None = None,
    ) -> Solution:
        """The exact value and a best move; SolveAborted past `deadline` (a perf_counter time) or `max_nodes`.

        When the table knows nothing of the position, `guess` (a final score, Black - White with komi, as
        `Solution.score`) is where the null-window searches start, and `likely` (a legal move, say a
        search's choice) is the move they try first: hints that save nodes when good (2x7: from the
        value and its best move, 70,000 nodes, against 100,000 from the margin as it stands)."""
        self._limit(deadline, max_nodes)
        start, nodes = time.perf_counter(), self.nodes
        if self.passes >= 2:
            raise ValueError("the game is over: its value is its score, there is nothing to solve")
        self._hint_key, self._first_hint = self.key, -2 if likely is None else self._local(likely)
        mover_guess = None if guess is None else round(self.stm * (guess + self.komi))
        value, best = self._restoring(lambda: self._solve_here(mover_guess))
        score, margin = self._to_score(value)
        return Solution(score, margin, self._move(best), self.nodes - nodes, time.perf_counter() - start)

    def _restoring(self, search: Callable[[], tuple[int, int]]) -> tuple[int, int]:
        """Run `search`; when it gives up part-way down a line, put the position back as it was."""
        snapshot = (self.size.copy(), self.margin, self.stm, self.passes, self.key, self.roots)
        try:
            return search()
        except SolveAborted:
            size, self.margin, self.stm, self.passes, self.key, self.roots = snapshot
            self.size[:] = size
            raise

    def root_moves(self) -> list[Move]:
        """The legal moves here, likely best first (`alternator solve --all` values them in this order)."""
        return [self._move(m) for _gain, m in self._generate()] + [PASS]

    def move_value(self, move: Move, deadline: float | None = None, max_nodes: int | None = None) -> Solution:
        """The exact result after `move` (a legal move here), with the opponent's best reply as its move."""
        self._limit(deadline, max_nodes)
        start, nodes = time.perf_counter(), self.nodes
        m = self._local(move)
        undo = self._play(m)
        images = self.root_images
        self.root_images = []  # the symmetries of this position need not be those of the one after it
        try:
            if self.passes >= 2:
                value, reply = self.stm * self.margin, PASS_ID
            else:
                value, reply = self._restoring(self._solve_here)
            margin = self.stm * value
            reply_move = self._move(reply)
        finally:
            self._unplay(undo)
            self.root_images = images
        return Solution(margin - self.komi, margin, reply_move, self.nodes - nodes, time.perf_counter() - start)

    def proven_so_far(self) -> tuple[float, Move] | None:
        """After a solve that gave up: the best final score (Black - White, komi included) its finished
        null-window searches proved the mover can reach, and a move that reaches it; None if none did."""
        if self._proven is None:
            return None
        value, move = self._proven
        return self._to_score(value)[0], self._move(move)

    def follow(self, position: Position) -> bool:
        """Bring the solver to `position`, a later position of the same game, by playing the moves made
        since (the table is kept); False, changing nothing, when `position` does not follow this one."""
        done = self.history
        later = position.history
        if (
            (position.width, position.height, position.komi) != (self.position.width, self.position.height, self.komi)
            or len(later) < done
            or later[:done] != self.position.history
        ):
            return False
        for move in later[done:]:
            self.position.push(move)
            self._play(self._local_unchecked(move))
        self.history = len(later)
        self.root_images = self._root_images()
        return True

    def _local(self, move: Move) -> int:
        self.position.check(move)
        return self._local_unchecked(move)

    def _local_unchecked(self, move: Move) -> int:
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
