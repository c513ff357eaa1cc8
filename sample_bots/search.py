"""An alpha-beta searcher for Alternator, and the rule that decides how long it may think.

Pure and synchronous: `choose_move(position, seconds)` searches a copy of the position with iterative
deepening, a principal-variation search, a transposition table keyed on an incremental Zobrist hash
of the stems, capture-first move ordering with killers, and a quiescence search over captures. Once
few roots are left in play it hands the position to the exact solver (sample_bots/solver.py).
`budget(...)` turns the clock fields of a turn into the seconds to spend on it.

Scores are final margins from the mover's side, komi included: a finished game scores its margin and
an unfinished line its margin so far (or, with `Settings.contested`, that margin with the trees that
may still change hands counted in part; with `Settings.weights`, a prediction of the final margin
fitted to games), on one scale, so the search maximises the margin rather than
settling for the first win it can prove. Whether a score is *proven* is tracked apart from its size:
a node is exact only when every move there was searched (or a proven move refuted the window) and
every child was exact, so a line that forward pruning, the horizon or the quiescence search cut
short never makes a proof. Iterative deepening stops early only on a proven root.

Why this shape: a placement (p, q) moves 2·size(p) points to the owner of q's colour, and adjacent
cells always have opposite colours, so each pair of adjacent roots offers exactly one *capture* to
each player (the opponent's tree into one's own root) when the sizes allow it. Captures grow the
capturing tree, which its other neighbours may then capture in turn: long forcing chains that a
quiescence search over captures resolves. The search keeps its own compact state (tree sizes, 0 for
a pit) rather than `Position`, because the per-node overhead of the public API (checks, history)
would cost most of the speed; the move it returns is checked against the real position.
"""

from __future__ import annotations

import gc
import random
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from protocol.rules import BLACK, PASS, Cell, Move, Position
from sample_bots.solver import SolveAborted, Solver, estimate_nodes, live_roots

__all__ = ["DEFAULT", "KeptSolver", "SearchInfo", "Searcher", "Settings", "Table", "budget", "choose_move"]

_SOLVE_TT_LIMIT = 400_000
# The solver's nodes a second, for deciding whether to try it: 150,000 to 250,000 on the empty boards
# (benchmarks/bench_solver.py: 2x7 100,000 nodes in 0.56 s of CPU, 4x4 900,000 in 5.1 s, on a busy machine).
_SOLVER_NODES_PER_SECOND = 200_000
_GUESS_ABOVE = 2.0  # how far above the probe's score the solver's first null-window search starts

_INF = 1e9
_PASS = -1
_MAX_QDEPTH = 8
_TIME_CHECK_CELLS = 4096  # look at the clock every 4096 / cells nodes: a node's cost grows with the board
_TT_LIMIT = 400_000  # entries before the table is cleared, to bound memory
_EXACT, _LOWER, _UPPER = 0, 1, 2
_NONE = -2  # no move
_NULL_WINDOW = 1e-3
_EXACT_DEPTH = 1 << 20  # the depth a proven table entry is stored with: good for any search depth


@dataclass(frozen=True)
class Weights:
    """A horizon evaluation fitted to games: what each feature of a quiet position adds to the final margin
    expected from the mover's side (see `Searcher.evaluate` and benchmarks/tune_evaluation.py).

    A contested tree (one a neighbouring root no bigger than it may take) adds its size times a weight
    chosen by whose it is (the mover's or the other side's), whether a strictly smaller root may take it
    or only one of its own size, and its size bucket (`BUCKETS`): on top of the margin, which counts it
    already.
    """

    BUCKETS: ClassVar[tuple[int, ...]] = (1, 2, 3, 5)
    """The smallest size in each bucket: sizes 1, 2, 3-4 and 5 or more."""
    GROUPS: ClassVar[tuple[str, ...]] = ("mine_smaller", "mine_equal", "theirs_smaller", "theirs_equal")

    margin: float
    mine_smaller: tuple[float, float, float, float]
    mine_equal: tuple[float, float, float, float]
    theirs_smaller: tuple[float, float, float, float]
    theirs_equal: tuple[float, float, float, float]
    biggest_mine: float
    """Per unit of the mover's biggest contested tree."""
    live: float
    """Per live edge (a pair of adjacent roots: a placement still possible)."""
    after_pass: float
    """When the other side has just passed."""
    tempo: float
    """For being the one to move."""

    def vector(self) -> tuple[float, ...]:
        """The weights in one sequence: the margin, the four groups by bucket, then the rest in field order."""
        groups = (self.mine_smaller, self.mine_equal, self.theirs_smaller, self.theirs_equal)
        return (
            self.margin,
            *(w for group in groups for w in group),
            self.biggest_mine,
            self.live,
            self.after_pass,
            self.tempo,
        )

    @classmethod
    def from_vector(cls, values: Sequence[float]) -> Weights:
        k = len(cls.BUCKETS)
        if len(values) != 1 + 4 * k + 4:
            raise ValueError(f"{len(values)} weights: Weights has {1 + 4 * k + 4}")
        groups = [tuple(values[1 + g * k : 1 + (g + 1) * k]) for g in range(4)]
        return cls(values[0], *groups, *values[1 + 4 * k :])  # type: ignore[arg-type]


@dataclass(frozen=True)
class Settings:
    """How wide the search looks and when the exact solver takes over: the search bots differ only here."""

    cap_width: int = 5
    """Captures tried at each interior node."""
    quiet_width: int = 2
    """Other placements tried at each interior node (narrow and deep measured best)."""
    q_width: int = 2
    """Captures tried at each quiescence node."""
    full_width: int = 8
    """With no more legal placements than this, a node searches them all, so endgames can be proven."""
    solve_live_roots: int = 14
    """Positions with at most this many roots still in play go to the exact solver first."""
    solve_share: float = 0.5
    """The share of the turn's time the solver may take before the search takes over."""
    solve_reach: float = 8.0
    """Try the solver when its estimate (for a compact board) is at most this many times what its share
    of the time affords: an endgame's roots lie in small groups, which solve 10 to 30 times faster."""
    small_board: int = 16
    """On a board of at most this many cells the solver is the main tool: it may take `small_share`."""
    small_share: float = 0.9
    """The share of the turn the solver may take on a small board (the empty 2x7 takes some 190,000
    nodes, most of a second: at 1 s a move the first move of a 14-cell board needs most of the turn)."""
    small_probe: float = 0.1
    """On a small board whose value the solver's table knows nothing of, this share of the turn goes to
    a search first: its score is where the solver's null-window searches start (on the empty 2x7 the
    right start saves a third of the nodes), and its move is there if the solver does not finish."""
    root_width: int = 0
    """After the first iteration, search only this many root moves, the best of the last one (0: all)."""
    keep_table: bool = False
    """Keep the transposition table from one move to the next of a game (the bot passes it back in)."""
    reserve: tuple[float, float] = (0.06, 0.08)
    """The safety margin kept back from the time available for a move: these seconds plus this share of it,
    for what the referee counts and the search does not see (reading the turn, the reply, scheduling)."""
    contested: float = 1.0
    """At the horizon a tree that a neighbouring root may take counts this share of its size (1: the
    bare margin); see `Searcher.evaluate`."""
    reduce_from: int = 0
    """Inside the tree, with 3 or more plies left, the moves from this one on in the order are searched
    a ply shallower first, and again at full depth only if they beat the best so far (0: never)."""
    root_reduce_from: int = 0
    """The same at the root, by the order of the last iteration (0: never)."""
    root_reduce_twice_from: int = 0
    """At the root, with 4 or more plies left, the moves from this one on are searched two plies shallower
    first (0: never)."""
    null_reduction: int = 0
    """Inside the tree, before the moves, a pass searched this many plies shallower (with a window at
    beta): if even that holds beta, the node fails high at once (0: never)."""
    weights: Weights | None = None
    """A fitted horizon evaluation; it replaces `contested` (see `Searcher.evaluate`)."""
    pass_early: bool = False
    """Inside the tree, try the pass (the one move that gives nothing away: every placement either takes
    a tree or gives one) right after the captures, not last."""


DEFAULT = Settings()

Table = dict[int, tuple[int, int, float, int, bool]]
"""A transposition table: hash -> (depth, bound kind, score, best move, proven)."""


class _Timeout(Exception):
    """Raised inside the search when the hard deadline has passed; unwinds to the root."""


@dataclass(frozen=True)
class SearchInfo:
    """What one finished (or cut short) iteration found, from the mover's point of view.

    `score` is the final margin (komi included) the mover expects; `proven` says it is the exact value
    of the position, found by searching every line to the end of the game.
    """

    move: Move
    score: float
    depth: int
    nodes: int
    pv: list[Move]
    seconds: float
    proven: bool = False


class _Board:
    """What never changes on a W x H board, built once per size: colours, edges, neighbours, hash keys."""

    _cache: ClassVar[dict[tuple[int, int], _Board]] = {}

    def __init__(self, width: int, height: int) -> None:
        n = width * height
        self.dark = [(i % width + i // width) % 2 == 0 for i in range(n)]
        self.nbrs = [tuple(position_neighbors(i, width, height)) for i in range(n)]
        # Each undirected edge as (dark end, light end, dark->light move id, light->dark move id);
        # a move id is pit * n + root.
        self.edges = [(i, j, i * n + j, j * n + i) for i in range(n) if self.dark[i] for j in self.nbrs[i]]
        rng = random.Random(0x5EED)  # fixed keys: reproducible searches
        # One key per possible stem, indexed by move id; only adjacent pairs need one.
        self.zkey = [0] * (n * n)
        for _a, _b, ab, ba in self.edges:
            self.zkey[ab] = rng.getrandbits(62)
            self.zkey[ba] = rng.getrandbits(62)
        self.zturn = rng.getrandbits(62)
        self.zpass = [0, rng.getrandbits(62), rng.getrandbits(62)]
        # Bitboards (bit i is cell i): every cell, the cells not on the first / last file (what a
        # shift by one file may land on without wrapping to the next rank), Black's and White's cells.
        self.full = (1 << n) - 1
        self.not_first = sum(1 << i for i in range(n) if i % width)
        self.not_last = sum(1 << i for i in range(n) if i % width != width - 1)
        self.dark_bits = sum(1 << i for i in range(n) if self.dark[i])
        self.light_bits = self.full ^ self.dark_bits

    @classmethod
    def of(cls, width: int, height: int) -> _Board:
        board = cls._cache.get((width, height))
        if board is None:
            board = cls._cache[width, height] = cls(width, height)
        return board


class Searcher:
    """Searches one position. Create one per move; `search` may be called once."""

    def __init__(
        self, position: Position, seed: int | None = None, settings: Settings = DEFAULT, table: Table | None = None
    ) -> None:
        width, height = position.width, position.height
        self.cap_width = settings.cap_width
        self.quiet_width = settings.quiet_width
        self.q_width = settings.q_width
        self.full_width = settings.full_width
        self.root_width = settings.root_width
        self.contested = settings.contested
        self.weights = settings.weights
        # The bare margin at the horizon: no size classes needed.
        self.plain = settings.contested == 1.0 and settings.weights is None
        self.reduce_from = settings.reduce_from
        self.root_reduce_from = settings.root_reduce_from
        self.root_reduce_twice_from = settings.root_reduce_twice_from
        self.pass_early = settings.pass_early
        self.null_reduction = settings.null_reduction
        n = self.n = width * height
        self.width = width
        self.komi = position.komi
        # The fitted evaluation's weights by tree size (empty without one).
        self._fit = _fitted_tables(settings.weights, n) if settings.weights is not None else ([], [], [], [])
        board = _Board.of(width, height)
        self.dark = board.dark
        self.nbrs = board.nbrs
        self.zkey = board.zkey
        self.zturn = board.zturn
        self.zpass = board.zpass
        # size[i] is the size of the tree rooted at i, or 0 when i is a pit: one test covers
        # both "is a root" and the size rule.
        self.size = [position.size[i] if position.parent[i] < 0 else 0 for i in range(n)]
        self.full = board.full
        self.not_first = board.not_first
        self.not_last = board.not_last
        self.dark_bits = board.dark_bits
        self.light_bits = board.light_bits
        # The same state as bitboards: the roots, the roots by the size of their tree, and the sizes
        # that have a root (bit s set when by_size[s] is not empty). Move generation and the
        # evaluation work on whole sets of cells at once from these (see `_classes`).
        self.roots = 0
        self.by_size = [0] * (n + 1)
        self.present = 0
        for i, s in enumerate(self.size):
            if s:
                self.roots |= 1 << i
                self.by_size[s] |= 1 << i
                self.present |= 1 << s
        self.margin = position.black_margin
        self.stm = 1 if position.turn is BLACK else -1
        self.passes = position.consecutive_passes
        h = 0
        for i in range(n):
            j = position.parent[i]
            if j >= 0:
                h ^= self.zkey[i * n + j]
        if self.stm < 0:
            h ^= self.zturn
        self.hash = h
        # Keyed on the stems, the side to move and the passes: valid for every position of a game.
        self.tt: Table = {} if table is None else table
        # Whether the value the last negamax or quiesce call returned is proven (see the module docstring).
        self.exact = False
        # Interior nodes' move lists by position: each iteration of the deepening revisits the last one's nodes.
        self.generated: dict[int, tuple[list[int], list[int], bool, int]] = {}
        self.killers: dict[int, list[int]] = {}
        self.history: dict[int, int] = {}
        self.nodes = 0
        self.deadline = _INF
        self.max_nodes = _INF  # a node limit (`choose_move(max_nodes=...)`), looked at with the clock
        self.check_every = max(1, _TIME_CHECK_CELLS // n)
        self.countdown = 1  # the first node looks at the clock: a zero budget stops at once
        self.rng = random.Random(seed) if seed is not None else None

    # -- helpers ------------------------------------------------------------------------------------

    def to_move(self, m: int) -> Move:
        if m == _PASS:
            return PASS
        p, q = divmod(m, self.n)
        w = self.width
        return Move(Cell(p % w, p // w), Cell(q % w, q // w))

    def _classes(self) -> tuple[list[int], list[int], list[int]]:
        """The trees that can still take part, grouped by size: what generation and evaluation work on.

        Returns the sizes of the trees whose root has a root beside it, ascending; for each, those
        roots as a bitboard; and for each, the union of the roots of that size or smaller. A whole size
        class is handled with a few integer operations, where a scan of the board costs one Python
        step per edge: about ten times faster on the open 8x8 board, where every tree has size 1.
        """
        r = self.roots
        w = self.width
        live = r & ((r >> w) | ((r << w) & self.full) | ((r >> 1) & self.not_last) | ((r << 1) & self.not_first))
        sizes: list[int] = []
        sets: list[int] = []
        unions: list[int] = []
        union = 0
        present = self.present
        by_size = self.by_size
        while present:
            low = present & -present
            present ^= low
            size = low.bit_length() - 1
            cells = by_size[size] & live
            if cells:
                union |= cells
                sizes.append(size)
                sets.append(cells)
                unions.append(union)
        return sizes, sets, unions

    def evaluate(self, classes: tuple[list[int], list[int], list[int]] | None = None) -> float:
        """The value at the horizon from the mover's side, komi included: the margin so far, with a
        contested tree counted at `Settings.contested` of its size.

        A tree is contested when a neighbouring root is no bigger than it, so it may be attached there
        and change hands; otherwise it can never be taken (a root only grows), and it counts whole.
        Which side holds a contested tree at the horizon depends mostly on where the search stopped.
        With `Settings.weights`, the value is instead the fitted prediction of the final margin (`_fitted`).
        """
        if self.plain:
            return self.stm * (self.margin - self.komi)
        if self.weights is not None:
            return self._fitted(self._classes() if classes is None else classes)
        lam = self.contested
        sizes, sets, unions = self._classes() if classes is None else classes
        w, full, not_first, not_last, dark = self.width, self.full, self.not_first, self.not_last, self.dark_bits
        contested = 0  # the contested trees' sizes, Black's less White's
        for size, cells, smaller in zip(sizes, sets, unions, strict=True):
            # The roots of this size with a root of this size or smaller beside them.
            taken = cells & (
                (smaller >> w) | ((smaller << w) & full) | ((smaller >> 1) & not_last) | ((smaller << 1) & not_first)
            )
            if taken:
                black = taken & dark
                contested += size * (black.bit_count() - (taken ^ black).bit_count())
        return self.stm * (self.margin - (1.0 - lam) * contested - self.komi)

    def _fitted(self, classes: tuple[list[int], list[int], list[int]]) -> float:
        """`Weights`' evaluation: the margin, and each contested tree by whose it is, what may take it and
        its size."""
        weights = self.weights
        assert weights is not None
        mine_smaller, mine_equal, theirs_smaller, theirs_equal = self._fit
        sizes, sets, unions = classes
        w, full, not_first, not_last = self.width, self.full, self.not_first, self.not_last
        mine_bits = self.dark_bits if self.stm > 0 else self.light_bits
        value = 0.0
        biggest = 0
        below = 0  # the cells beside a root of a smaller size than this class's
        for size, cells, smaller in zip(sizes, sets, unions, strict=True):
            # The roots of this size with a root of this size or smaller beside them.
            near = (smaller >> w) | ((smaller << w) & full) | ((smaller >> 1) & not_last) | ((smaller << 1) & not_first)
            taken = cells & near
            if taken:
                by_smaller = taken & below
                mine = taken & mine_bits
                mine_by_smaller = by_smaller & mine_bits
                if mine:
                    biggest = size
                value += (
                    mine_smaller[size] * mine_by_smaller.bit_count()
                    + mine_equal[size] * (mine ^ mine_by_smaller).bit_count()
                    + theirs_smaller[size] * (by_smaller ^ mine_by_smaller).bit_count()
                    + theirs_equal[size] * (taken ^ mine ^ by_smaller ^ mine_by_smaller).bit_count()
                )
            below = near
        across, up = self._live_edges()
        value += weights.biggest_mine * biggest + weights.live * (across.bit_count() + up.bit_count())
        if self.passes:
            value += weights.after_pass
        return value + weights.margin * self.stm * (self.margin - self.komi) + weights.tempo

    def terminal(self) -> float:
        """The final margin of a finished game, from the mover's side; a proven value."""
        self.exact = True
        return self.stm * (self.margin - self.komi)

    def _live_edges(self) -> tuple[int, int]:
        """The live edges as bitboards: cells whose right-hand neighbour, and whose upper one, is a root too."""
        r = self.roots
        return r & (r >> 1) & self.not_last, r & (r >> self.width)

    def generate(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Legal placements split into captures and the rest, each as (ordering key, move id), best first.

        A capture's key is its gain, less what the opponent wins back at once if the grown tree is
        left next to a root it may be attached to (a one-step static exchange); the rest are keyed
        by how little they give away. Ties go to the higher move id. `_captures` and `_quiet` give
        the first few of the same orders without looking at every edge.
        """
        size = self.size
        nbrs = self.nbrs
        n = self.n
        w = self.width
        mine_is_dark = self.stm > 0
        caps: list[tuple[int, int]] = []
        rest: list[tuple[int, int]] = []
        across, up = self._live_edges()
        for edges, step in ((across, 1), (up, w)):
            while edges:
                low = edges & -edges
                edges ^= low
                a = low.bit_length() - 1
                b = a + step
                mine, theirs = (a, b) if self.dark[a] == mine_is_dark else (b, a)
                s_mine = size[mine]
                s_theirs = size[theirs]
                # Taking their tree onto my root wins s_theirs; giving mine onto theirs loses s_mine.
                if s_theirs >= s_mine:
                    grown = s_mine + s_theirs
                    key = s_theirs
                    for r in nbrs[mine]:
                        if r != theirs and 0 < size[r] <= grown:
                            key -= grown
                            break
                    caps.append((key, theirs * n + mine))
                if s_mine >= s_theirs:
                    rest.append((-s_mine, mine * n + theirs))
        caps.sort(reverse=True)
        rest.sort(reverse=True)
        return caps, rest

    def _colours(self) -> tuple[int, int]:
        """The mover's cells and the other side's, as bitboards."""
        if self.stm > 0:
            return self.dark_bits, self.light_bits
        return self.light_bits, self.dark_bits

    def _captures(self, k: int, classes: tuple[list[int], list[int], list[int]]) -> list[int]:
        """The first `k` captures in `generate`'s order, from the size classes.

        Their trees are taken biggest first; for each pair of sizes (theirs, mine) the grown tree is
        safe unless one of my root's other neighbours is a root no bigger than it. Safe captures key
        on the size taken, unsafe ones on minus my tree's size, so every safe one comes first.
        """
        sizes, sets, unions = classes
        w, full, not_first, not_last = self.width, self.full, self.not_first, self.not_last
        mine_bits, theirs_bits = self._colours()
        out: list[int] = []
        # By my tree's size (its index in `sizes`): the unsafe captures' pits, by where my root is.
        unsafe = [[0, 0, 0, 0] for _ in sizes]
        for t_index in range(len(sizes) - 1, -1, -1):
            theirs = sets[t_index] & theirs_bits
            if not theirs:
                continue
            s = sizes[t_index]
            # My roots with their tree of size s above, below, right or left of them.
            t_up = theirs >> w
            t_down = (theirs << w) & full
            t_right = (theirs >> 1) & not_last
            t_left = (theirs << 1) & not_first
            near = t_up | t_down | t_right | t_left
            # The safe captures' pits by where my root is relative to them: above, right, left, below.
            above = right = left = below = 0
            for m_index in range(t_index + 1):
                mine = sets[m_index] & mine_bits & near
                if not mine:
                    continue
                s_mine = sizes[m_index]
                no_bigger = unions[bisect_right(sizes, s + s_mine) - 1]
                # My roots with a root no bigger than the grown tree above, below, right, left.
                b_up = no_bigger >> w
                b_down = (no_bigger << w) & full
                b_right = (no_bigger >> 1) & not_last
                b_left = (no_bigger << 1) & not_first
                group = unsafe[m_index]
                takers = mine & t_up  # their tree above my root: the pit is my root's cell + w
                if takers:
                    bad = takers & (b_down | b_right | b_left)
                    below |= (takers ^ bad) << w
                    group[3] |= bad << w
                takers = mine & t_down
                if takers:
                    bad = takers & (b_up | b_right | b_left)
                    above |= (takers ^ bad) >> w
                    group[0] |= bad >> w
                takers = mine & t_right
                if takers:
                    bad = takers & (b_up | b_down | b_left)
                    left |= (takers ^ bad) << 1
                    group[2] |= bad << 1
                takers = mine & t_left
                if takers:
                    bad = takers & (b_up | b_down | b_right)
                    right |= (takers ^ bad) >> 1
                    group[1] |= bad >> 1
            if above | right | left | below:
                _first_ids(out, k, self.n, w, above, right, left, below)
                if len(out) >= k:
                    return out[:k]
        for group in unsafe:
            _first_ids(out, k, self.n, w, group[0], group[1], group[2], group[3])
            if len(out) >= k:
                return out[:k]
        return out

    def _quiet(self, k: int, classes: tuple[list[int], list[int], list[int]]) -> list[int]:
        """The first `k` other placements in `generate`'s order: my smallest trees onto a neighbouring root."""
        _sizes, sets, unions = classes
        w, full, not_first, not_last = self.width, self.full, self.not_first, self.not_last
        mine_bits, theirs_bits = self._colours()
        out: list[int] = []
        for index, cells in enumerate(sets):
            mine = cells & mine_bits
            if not mine:
                continue
            smaller = unions[index] & theirs_bits
            # My roots of this size by where a root no bigger lies: above, right, left, below.
            above = mine & (smaller >> w)
            right = mine & (smaller >> 1) & not_last
            left = mine & (smaller << 1) & not_first
            below = mine & (smaller << w) & full
            if above | right | left | below:
                _first_ids(out, k, self.n, w, above, right, left, below)
                if len(out) >= k:
                    return out[:k]
        return out

    def _placement_count(self, classes: tuple[list[int], list[int], list[int]]) -> int:
        """The number of legal placements: one per live edge, two where the trees are the same size."""
        across, up = self._live_edges()
        count = across.bit_count() + up.bit_count()
        w, not_last = self.width, self.not_last
        for cells in classes[1]:
            count += (cells & (cells >> 1) & not_last).bit_count() + (cells & (cells >> w)).bit_count()
        return count

    def _any_placement(self) -> bool:
        across, up = self._live_edges()
        return bool(across | up)

    def _make(self, m: int) -> int:
        """Play move id `m`; returns what `_unmake` needs (the pit's size, or the old pass count)."""
        self.hash ^= self.zturn
        self.stm = -self.stm
        if m == _PASS:
            old = self.passes
            self.passes = old + 1
            return old
        n = self.n
        p = m // n
        q = m - p * n
        size = self.size
        sp = size[p]
        sq = size[q]
        grown = sp + sq
        size[p] = 0
        size[q] = grown
        by_size = self.by_size
        bit_p = 1 << p
        bit_q = 1 << q
        left = by_size[sp] ^ bit_p
        by_size[sp] = left
        if not left:
            self.present &= ~(1 << sp)
        left = by_size[sq] ^ bit_q
        by_size[sq] = left
        if not left:
            self.present &= ~(1 << sq)
        by_size[grown] |= bit_q
        self.present |= 1 << grown
        self.roots ^= bit_p
        self.margin += 2 * sp if self.dark[q] else -2 * sp
        self.hash ^= self.zkey[m]
        old = self.passes
        self.passes = 0
        return sp * 4 + old

    def _unmake(self, m: int, token: int) -> None:
        self.hash ^= self.zturn
        self.stm = -self.stm
        if m == _PASS:
            self.passes = token
            return
        sp, old = divmod(token, 4)
        n = self.n
        p = m // n
        q = m - p * n
        size = self.size
        grown = size[q]
        sq = grown - sp
        size[q] = sq
        size[p] = sp
        by_size = self.by_size
        bit_p = 1 << p
        bit_q = 1 << q
        left = by_size[grown] ^ bit_q
        by_size[grown] = left
        if not left:
            self.present &= ~(1 << grown)
        by_size[sq] |= bit_q
        by_size[sp] |= bit_p
        self.present |= (1 << sq) | (1 << sp)
        self.roots |= bit_p
        self.margin -= 2 * sp if self.dark[q] else -2 * sp
        self.hash ^= self.zkey[m]
        self.passes = old

    def _state(self) -> tuple[list[int], list[int], int, int, int, int, int, int]:
        """A copy of the position's state, to put back after a search cut short deep in the tree."""
        return (
            self.size.copy(),
            self.by_size.copy(),
            self.present,
            self.roots,
            self.margin,
            self.stm,
            self.passes,
            self.hash,
        )

    def _restore(self, state: tuple[list[int], list[int], int, int, int, int, int, int]) -> None:
        size, by_size, self.present, self.roots, self.margin, self.stm, self.passes, self.hash = state
        self.size = size.copy()
        self.by_size = by_size.copy()

    def _tick(self) -> None:
        self.nodes += 1
        self.countdown -= 1
        if not self.countdown:
            self.countdown = self.check_every
            if self.nodes >= self.max_nodes or time.perf_counter() >= self.deadline:
                raise _Timeout
            if self.max_nodes - self.nodes < self.check_every:
                self.countdown = int(self.max_nodes - self.nodes)  # stop exactly at the node limit

    # -- search -------------------------------------------------------------------------------------

    def quiesce(self, alpha: float, beta: float, qdepth: int) -> float:
        self._tick()
        if self.passes >= 2:
            return self.terminal()
        # Charging the mover for the opponent's biggest capture (half of it) measured weaker in
        # self-play, 25% against the bare margin; so did a null move here (the opponent's captures
        # after the mover does nothing), no better than the contested share alone.
        # Standing pat needs no move list (the cheap, common case); it is never a proof.
        self.exact = False
        classes = None
        if self.plain:
            stand = self.stm * (self.margin - self.komi)
            if stand >= beta:
                return stand
        else:
            classes = self._classes()
            stand = self.evaluate(classes)
            if stand >= beta:
                return stand
        # Nobody can place any more (no root has a root beside it: the size classes are empty): the game is
        # decided as it stands.
        if not (classes[0] if classes is not None else self._any_placement()):
            return self.terminal()
        if qdepth <= 0:
            return stand
        caps = self._captures(self.q_width, self._classes() if classes is None else classes)
        if stand > alpha:
            alpha = stand
        best = stand
        for m in caps:
            token = self._make(m)
            value = -self.quiesce(-beta, -alpha, qdepth - 1)
            self._unmake(m, token)
            self.exact = False
            if value > best:
                best = value
                if value > alpha:
                    alpha = value
                    if value >= beta:
                        break
        return best

    def negamax(self, depth: int, alpha: float, beta: float, ply: int) -> float:
        self._tick()
        if self.passes >= 2:
            return self.terminal()
        if depth <= 0:
            return self.quiesce(alpha, beta, _MAX_QDEPTH)
        key = self.hash ^ self.zpass[self.passes]
        entry = self.tt.get(key)
        tt_move = _NONE
        if entry is not None:
            e_depth, e_flag, e_value, tt_move, e_exact = entry
            if e_depth >= depth:
                self.exact = e_exact
                if e_flag == _EXACT:
                    return e_value
                if e_flag == _LOWER:
                    if e_value >= beta:
                        return e_value
                elif e_value <= alpha:
                    return e_value
        generated = self.generated.get(key)
        if generated is None:
            if len(self.generated) >= _TT_LIMIT // 4:
                self.generated.clear()
            generated = self.generated[key] = self._node_moves()
        caps, rest, complete, live = generated
        if not caps and not rest:
            return self.terminal()
        reduction = self.null_reduction
        if reduction and depth > reduction and not complete and not self.passes and beta < _INF:
            # A pass that holds beta even searched `reduction` plies shallower: the node fails high.
            token = self._make(_PASS)
            value = -self.negamax(depth - 1 - reduction, -beta, -beta + _NULL_WINDOW, ply + 1)
            self._unmake(_PASS, token)
            if value >= beta:
                # A pass is a legal move, so its value bounds the node's: proven if it is.
                exact = self.exact
                self.tt[key] = (_EXACT_DEPTH if exact else depth, _LOWER, value, _PASS, exact)
                return value
        order = self._order(caps, rest, complete, tt_move, ply)
        # Proven only if no legal move is left out (a pass is always legal) and every child is proven.
        if complete:
            exact = len(order) == len(caps) + len(rest) + 1
        else:
            exact = len(order) > live and len(order) == self._placement_count(self._classes()) + 1
        alpha0 = alpha
        best = -_INF
        best_move = order[0]
        # Late moves are looked at one ply less deep first, and again at full depth if they beat alpha.
        late = self.reduce_from if self.reduce_from and depth >= 3 else len(order)
        for i, m in enumerate(order):
            token = self._make(m)
            if not i:
                value = -self.negamax(depth - 1, -beta, -alpha, ply + 1)
            else:
                if i >= late:
                    value = -self.negamax(depth - 2, -alpha - _NULL_WINDOW, -alpha, ply + 1)
                    if value > alpha:
                        value = -self.negamax(depth - 1, -alpha - _NULL_WINDOW, -alpha, ply + 1)
                else:
                    value = -self.negamax(depth - 1, -alpha - _NULL_WINDOW, -alpha, ply + 1)
                if alpha < value < beta:
                    value = -self.negamax(depth - 1, -beta, -alpha, ply + 1)
            self._unmake(m, token)
            child_exact = self.exact
            exact = exact and child_exact
            if value > best:
                best = value
                best_move = m
                if value > alpha:
                    alpha = value
                    if value >= beta:
                        if m != _PASS and self.dark[m % self.n] != (self.stm > 0):
                            self._remember_cutoff(m, ply, depth)
                        # The bound is this move's value alone: proven if it is, whatever was skipped.
                        exact = child_exact
                        break
        flag = _EXACT if alpha0 < best < beta else (_LOWER if best >= beta else _UPPER)
        if len(self.tt) >= _TT_LIMIT:
            self.tt.clear()
        self.tt[key] = (_EXACT_DEPTH if exact else depth, flag, best, best_move, exact)
        self.exact = exact
        return best

    def _remember_cutoff(self, m: int, ply: int, depth: int) -> None:
        ks = self.killers.setdefault(ply, [])
        if m not in ks:
            ks.insert(0, m)
            del ks[2:]
        self.history[m] = self.history.get(m, 0) + depth * depth

    def _node_moves(self) -> tuple[list[int], list[int], bool, int]:
        """An interior node's candidate moves: (captures, other placements, whether those are all the
        legal placements, the number of live edges).

        With few live edges every placement is listed (`generate`); otherwise only the first
        captures and other placements of the same orders, as many as `_order` may take.
        """
        across, up = self._live_edges()
        live = across.bit_count() + up.bit_count()
        if live <= self.full_width:
            caps, rest = self.generate()
            return [m for _k, m in caps], [m for _k, m in rest], True, live
        classes = self._classes()
        return self._captures(self.cap_width, classes), self._quiet(4 * self.quiet_width, classes), False, live

    def _order(self, caps: list[int], rest: list[int], complete: bool, tt_move: int, ply: int) -> list[int]:
        """Inside the tree: the TT move, the best captures, killers, a few other moves, then pass.

        Only the most promising moves are searched below the root (forward pruning): early in the
        game there are over two hundred legal placements, most of them alike. With few legal
        placements left, all of them are searched, so that endgames can be proven. `complete` says
        whether `caps` and `rest` hold every legal placement (else only the first of each order).
        """
        order = caps + rest if complete and len(caps) + len(rest) <= self.full_width else caps[: self.cap_width]
        if self.pass_early:
            order.insert(min(len(caps), len(order)), _PASS)
        if rest and (not complete or len(order) < len(caps) + len(rest)):
            killers = self.killers.get(ply, ())
            history = self.history
            quiet = rest
            for k in killers:
                # A killer is a placement of this ply's side onto the other's root: legal means quiet.
                if (k in quiet) if complete else self._legal(k):
                    order.append(k)
            width = self.quiet_width
            ranked = sorted(quiet[: 4 * width], key=lambda m: history.get(m, 0), reverse=True)
            for m in ranked[:width]:
                if m not in order:
                    order.append(m)
        if not self.pass_early:
            order.append(_PASS)
        if tt_move != _NONE:
            if tt_move in order:
                order.remove(tt_move)
                order.insert(0, tt_move)
            elif tt_move == _PASS or self._legal(tt_move):
                order.insert(0, tt_move)
        return order

    def pv(self, first: int, depth: int) -> list[int]:
        """The principal variation, read back from the transposition table."""
        line = [first]
        tokens = [self._make(first)]
        try:
            while len(line) < max(depth, 1) and self.passes < 2:
                entry = self.tt.get(self.hash ^ self.zpass[self.passes])
                if entry is None:
                    break
                m = entry[3]
                if m != _PASS and not self._legal(m):
                    break
                line.append(m)
                tokens.append(self._make(m))
        finally:
            for m, token in zip(reversed(line), reversed(tokens), strict=True):
                self._unmake(m, token)
        return line

    def _legal(self, m: int) -> bool:
        p, q = divmod(m, self.n)
        return 0 < self.size[q] <= self.size[p]

    def search(
        self,
        seconds: float,
        max_depth: int = 64,
        on_iteration: Callable[[SearchInfo], None] | None = None,
        use_all: bool = False,
    ) -> SearchInfo:
        """Iterative deepening within `seconds` (a hard limit); returns the deepest result found.

        Unless `use_all`, no new iteration starts after half the time: it would rarely finish, and
        time saved is worth having on a game clock. With a fixed time per move nothing is saved.
        """
        start = time.perf_counter()
        self.deadline = start + max(seconds, 0.0)
        if self.passes >= 2:
            raise ValueError("the game is over: there is no move to choose")
        caps, rest = self.generate()
        if not caps and not rest:
            return SearchInfo(PASS, self.terminal(), 0, 0, [PASS], 0.0, proven=True)
        if self.rng is not None:
            # Shuffle within equal ordering keys only (the sorts are stable), so play varies
            # without weakening the order.
            for moves in (caps, rest):
                self.rng.shuffle(moves)
                moves.sort(key=lambda km: km[0], reverse=True)
        root = [m for _k, m in caps + rest] + [_PASS]
        best_move = root[0]
        best_score = -_INF
        result = SearchInfo(self.to_move(best_move), self.evaluate(), 0, 0, [self.to_move(best_move)], 0.0)
        scores: dict[int, float] = {}
        saved = self._state()
        for depth in range(1, max_depth + 1):
            searched = root[: self.root_width] if self.root_width and depth > 1 else root
            try:
                iteration_best, iteration_score, proven = self._root(searched, depth, scores)
                proven = proven and len(searched) == len(root)
            except _Timeout:
                # The moves on the way down to where the clock ran out were not taken back.
                self._restore(saved)
                # A move that beat the previous best in the cut-short iteration was fully searched.
                # (Root move 0 is the previous best, so the partial best is never a worse choice.)
                if self._partial is not None:
                    best_move, best_score = self._partial
                    result = self._info(best_move, best_score, depth - 1, start)
                break
            best_move, best_score = iteration_best, iteration_score
            result = self._info(best_move, best_score, depth, start, proven)
            if on_iteration is not None:
                on_iteration(result)
            root.sort(key=lambda m: scores.get(m, -_INF), reverse=True)
            elapsed = time.perf_counter() - start
            if proven or (elapsed > 0.5 * seconds and not use_all):
                # A proven result needs no deeper look; another iteration would likely not finish.
                break
        return result

    _partial: tuple[int, float] | None = None

    def _root(self, root: list[int], depth: int, scores: dict[int, float]) -> tuple[int, float, bool]:
        """One iteration over every root move: the best move, its score, and whether that is proven."""
        alpha, beta = -_INF, _INF
        best_move, best = root[0], -_INF
        proven = True
        self._partial = None
        late = self.root_reduce_from if self.root_reduce_from and depth >= 3 else len(root)
        later = self.root_reduce_twice_from if self.root_reduce_twice_from and depth >= 4 else len(root)
        for i, m in enumerate(root):
            token = self._make(m)
            if i == 0:
                value = -self.negamax(depth - 1, -beta, -alpha, 1)
            else:
                if i >= late:
                    value = -self.negamax(depth - (3 if i >= later else 2), -alpha - _NULL_WINDOW, -alpha, 1)
                    if value > alpha:
                        value = -self.negamax(depth - 1, -alpha - _NULL_WINDOW, -alpha, 1)
                else:
                    value = -self.negamax(depth - 1, -alpha - _NULL_WINDOW, -alpha, 1)
                if value > alpha:
                    value = -self.negamax(depth - 1, -beta, -alpha, 1)
            self._unmake(m, token)
            proven = proven and self.exact
            scores[m] = value if value > alpha or i == 0 else alpha - 1e-6 * i
            if value > best:
                best, best_move = value, m
                alpha = max(alpha, value)
                self._partial = (m, value)
        return best_move, best, proven

    def _info(self, m: int, score: float, depth: int, start: float, proven: bool = False) -> SearchInfo:
        return SearchInfo(
            self.to_move(m),
            score,
            depth,
            self.nodes,
            [self.to_move(x) for x in self.pv(m, depth)],
            time.perf_counter() - start,
            proven,
        )


def _fitted_tables(weights: Weights, n: int) -> tuple[list[float], list[float], list[float], list[float]]:
    """Each of `weights`' four contested-tree weights as a table by tree size, times the size: what one
    such tree of each size adds."""
    buckets = [bisect_right(Weights.BUCKETS, size) - 1 for size in range(n + 1)]
    return tuple(  # type: ignore[return-value]
        [table[max(b, 0)] * size for size, b in enumerate(buckets)]
        for table in (weights.mine_smaller, weights.mine_equal, weights.theirs_smaller, weights.theirs_equal)
    )


def _first_ids(out: list[int], k: int, n: int, w: int, above: int, right: int, left: int, below: int) -> None:
    """Append move ids to `out`, highest first, until it holds `k` or more: for each cell set in any of
    the four bitboards (highest cell first), the move from that cell to its neighbour above, right,
    left or below, wherever it is set in that direction's bitboard (so the higher neighbour first)."""
    cells = above | right | left | below
    while cells and len(out) < k:
        c = cells.bit_length() - 1
        bit = 1 << c
        cells ^= bit
        base = c * n + c
        if above & bit:
            out.append(base + w)
        if right & bit:
            out.append(base + 1)
        if left & bit:
            out.append(base - 1)
        if below & bit:
            out.append(base - w)


def position_neighbors(i: int, width: int, height: int) -> list[int]:
    f, r = i % width, i // width
    return [
        rr * width + ff
        for ff, rr in ((f, r + 1), (f + 1, r), (f, r - 1), (f - 1, r))
        if 0 <= ff < width and 0 <= rr < height
    ]


def choose_move(
    position: Position,
    seconds: float,
    max_depth: int = 64,
    seed: int | None = None,
    on_iteration: Callable[[SearchInfo], None] | None = None,
    use_all: bool = False,
    settings: Settings = DEFAULT,
    solver_nodes: int | None = None,
    table: Table | None = None,
    max_nodes: int | None = None,
    kept: KeptSolver | None = None,
) -> SearchInfo:
    """Search `position` for at most about `seconds` and return the best move found, checked legal.

    `max_nodes` (a referee's node limit) stops the search at exactly that many nodes (give it as `solver_nodes`
    too to bound the solver): with the time not binding and `use_all`, a position gives the same move on any
    machine.

    With few roots in play (`settings.solve_live_roots`), the exact solver tries first, within a share
    of the time (and `solver_nodes`, if given, so that tests need not depend on the machine's speed).
    A `table` kept from the previous move of the same game gives the search a warm start, and `kept`
    does the same for the solver: what it learnt on earlier turns, even in a solve it gave up, is kept.
    """
    # The search makes no reference cycles, so the cyclic collector has nothing to find; a full
    # collection over a large transposition table could stall a move by tens of milliseconds.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        info = probe = None
        left = seconds
        live = 0 if position.is_over() else live_roots(position)
        small = position.width * position.height <= settings.small_board
        share = (settings.small_share if small else settings.solve_share) * max(seconds, 0.0)
        # Only when the solver likely finishes in its share: a failed try is time lost.
        if 0 < live <= settings.solve_live_roots and (
            solver_nodes is not None or estimate_nodes(live) <= settings.solve_reach * share * _SOLVER_NODES_PER_SECOND
        ):
            start = time.perf_counter()
            kept = kept or KeptSolver()
            guess = likely = None
            if small and settings.small_probe > 0 and not kept.for_position(position).has_bounds():
                probe = Searcher(position, seed, settings, table).search(settings.small_probe * seconds, max_depth)
                if probe.proven:
                    info = probe
                    if on_iteration is not None:
                        on_iteration(probe)
                # A little above the probe's score: a first null-window search that fails low is the
                # cheaper kind (2x7: 77,000 nodes from the value, 99,000 from 2 below, 87,000 from 2 above).
                hope = probe.score + _GUESS_ABOVE
                guess = hope if position.turn is BLACK else -hope
                likely = probe.move
            if info is None:
                info = _solve(position, start + share, solver_nodes, on_iteration, kept, guess, likely)
            left = seconds - (time.perf_counter() - start)
        if info is None:
            searcher = Searcher(position, seed, settings, table)
            if max_nodes is not None:
                searcher.max_nodes = max_nodes
            info = searcher.search(left, max_depth, on_iteration, use_all)
            if probe is not None and probe.depth > info.depth:
                info = probe  # the solver left the search too little time to look deeper than the probe
            info = _prefer_proven(info, position, kept)
    finally:
        if was_enabled:
            gc.enable()
    position.check(info.move)
    return info


def _prefer_proven(info: SearchInfo, position: Position, kept: KeptSolver | None) -> SearchInfo:
    """The search's choice, or the move a solve that gave up had proven to reach at least as much as the
    search (not proven) only expects: a guarantee beats a hope of the same size."""
    if info.proven or kept is None or kept.solver is None or kept.solver.history != len(position.history):
        return info
    proven = kept.solver.proven_so_far()
    if proven is None:
        return info
    score, move = proven
    mover_score = score if position.turn is BLACK else -score
    if mover_score < info.score or move == info.move:
        return info
    return SearchInfo(move, mover_score, info.depth, info.nodes, [move], info.seconds)


class KeptSolver:
    """One game's exact solver, kept from move to move (`Solver.follow`), so that its table carries over."""

    def __init__(self) -> None:
        self.solver: Solver | None = None

    def for_position(self, position: Position) -> Solver:
        """The kept solver brought to `position`, or a new one when `position` is not of the same game."""
        if self.solver is None or not self.solver.follow(position):
            self.solver = Solver(position, _SOLVE_TT_LIMIT)
        return self.solver


def _solve(
    position: Position,
    deadline: float,
    max_nodes: int | None,
    on_iteration: Callable[[SearchInfo], None] | None,
    kept: KeptSolver | None,
    guess: float | None = None,
    likely: Move | None = None,
) -> SearchInfo | None:
    """The solver's exact answer as a SearchInfo, or None when it could not finish in time."""
    start = time.perf_counter()
    solver = (kept or KeptSolver()).for_position(position)
    try:
        solution = solver.solve(deadline, max_nodes, guess, likely)
    except SolveAborted:
        return None
    sign = 1 if position.turn is BLACK else -1
    info = SearchInfo(
        solution.best_move,
        sign * solution.score,
        live_roots(position),
        solution.nodes,
        [solution.best_move],
        time.perf_counter() - start,
        proven=True,
    )
    if on_iteration is not None:
        on_iteration(info)
    return info


def budget(
    remaining_ms: int | None,
    increment_ms: int = 0,
    move_limit_ms: int | None = None,
    moves_to_go: int | None = None,
    moves_left: int = 30,
    reserve: tuple[float, float] = DEFAULT.reserve,
) -> float:
    """Seconds to think about this move, given the clock fields of the turn.

    `moves_left` estimates how many more moves this side will make (used with a Fischer clock).
    Whatever the time control, the answer leaves a safety margin (`reserve`: seconds, share of the
    time available) for what the referee counts and the search does not see: reading the turn,
    start-up of the reply, scheduling on a busy machine.
    """
    base, share_kept = reserve

    def kept(seconds: float) -> float:
        return base + share_kept * seconds

    limits: list[float] = []
    if move_limit_ms is not None:
        limit = move_limit_ms / 1000
        limits.append(limit - kept(limit))
    if remaining_ms is not None:
        left = remaining_ms / 1000
        usable = left - kept(left)
        if moves_to_go is not None and moves_to_go > 0:
            # Periods: the clock is filled up after moves_to_go moves; share it evenly, keeping
            # a little back in case the period ends the game sooner than expected.
            share = usable / moves_to_go
            limits.append(min(share, usable))
        else:
            share = usable / max(moves_left, 4) + 0.8 * increment_ms / 1000
            limits.append(min(share, 0.5 * usable))
    if not limits:
        return 5.0  # no clock at all: think a while, but not forever
    return max(0.0, min(limits))
