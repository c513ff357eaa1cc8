"""The rules of Alternator, exactly as ../shared/RULES.md states them: board, moves, scores, notation.

A pure module with no I/O and no third-party imports, shared by the referee (to adjudicate), the bot
kit and the sample bots (to search), and the tools that replay records. Positions are mutable with
`push`/`pop` so that a search can try a move and take it back cheaply; `copy` gives an independent one.

Two levels of API. The `Move` level (`legal_moves`, `push`, `check`, ...) is what the referee and
people use. The integer level is for search inner loops and avoids creating objects: a placement is
named by its *placement id*, its index in the board's fixed list of (pit, root) pairs ordered by pit
then root (`Position.move_of(id)` / `Position.id_of(move)` convert), and `PASS_ID` (-1) is a pass.
`placement_ids()` lists the legal ones, `placement_count()` counts them in O(1),
`random_placement_id(rng)` draws one uniformly in O(1), `push_id(id)` plays one and `pop()` takes any
move back. All of them keep the same history as the `Move` level, so the two can be mixed freely.
"""

from __future__ import annotations

import enum
import math
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Literal, NamedTuple

__all__ = [
    "BLACK",
    "DEFAULT_KOMI",
    "MAX_SIZE",
    "MIN_SIZE",
    "PASS",
    "PASS_ID",
    "WHITE",
    "Cell",
    "Color",
    "IllegalMoveError",
    "InvalidMoveError",
    "InvalidPositionError",
    "Move",
    "Outcome",
    "Position",
    "Result",
    "parse_size",
    "perft",
    "result_for",
    "roots_in_play",
]

MIN_SIZE = 2
MAX_SIZE = 26
DEFAULT_KOMI = 3.5
FILES = "abcdefghijklmnopqrstuvwxyz"
PASS_ID = -1


class Color(enum.StrEnum):
    """A player, named after the colour of the cells they own: the one colour type of the whole tree.

    A `StrEnum`, so that messages and records carry it as the plain strings "black" and "white".
    """

    BLACK = "black"
    WHITE = "white"

    other: Color
    """The opponent's colour (set on each member below: a plain attribute, read on every move)."""

    def __str__(self) -> str:
        return self.value


BLACK = Color.BLACK
WHITE = Color.WHITE
BLACK.other = WHITE
WHITE.other = BLACK


class InvalidMoveError(ValueError):
    """A move text that is not a move at all (not `pass`, not two cells)."""


class IllegalMoveError(ValueError):
    """A well-formed move that the rules forbid in this position."""


class InvalidPositionError(ValueError):
    """A position string, or a board size, that does not describe a valid position."""


_CELL_RE = re.compile(r"([a-z])([1-9][0-9]?)")
_SIZE_RE = re.compile(r"\s*([0-9]+)\s*(?:[xX]\s*([0-9]+))?\s*")
_MOVE_RE = re.compile(r"([a-z][1-9][0-9]?)([a-z][1-9][0-9]?)")


class Cell(NamedTuple):
    """A cell by 0-based file (column, `a` = 0) and rank (row, `1` = 0)."""

    file: int
    rank: int

    @classmethod
    def parse(cls, text: str) -> Cell:
        match = _CELL_RE.fullmatch(text)
        if match is None:
            raise InvalidMoveError(f"{text!r} is not a cell: expected a file letter and a rank number, like d5")
        return cls(FILES.index(match[1]), int(match[2]) - 1)

    @property
    def color(self) -> Color:
        """Dark (black) when file + rank is even: `a1` is dark."""
        return BLACK if (self.file + self.rank) % 2 == 0 else WHITE

    def __str__(self) -> str:
        if 0 <= self.file < len(FILES) and self.rank >= 0:
            return f"{FILES[self.file]}{self.rank + 1}"
        # Off every board (a search stepping past an edge): say what it is rather than fail or alias z1.
        return f"Cell({self.file}, {self.rank})"


class Move(NamedTuple):
    """A placement (a dot on `pit`, a stem to `root`), or a pass when both are None."""

    pit: Cell | None
    root: Cell | None

    @classmethod
    def parse(cls, text: str) -> Move:
        """Parse RULES.md notation: `d5d4` (pit then root) or `pass`."""
        if text == "pass":
            return PASS
        match = _MOVE_RE.fullmatch(text)
        if match is None:
            raise InvalidMoveError(
                f"{text!r} is not a move: expected 'pass' or a pit and a root cell with nothing between, like d5d4"
            )
        return cls(Cell.parse(match[1]), Cell.parse(match[2]))

    @property
    def is_pass(self) -> bool:
        return self.pit is None and self.root is None

    def __str__(self) -> str:
        if self.pit is None and self.root is None:
            return "pass"
        return f"{self.pit or '?'}{self.root or '?'}"  # a half-empty move is no pass (the rules refuse it)


PASS = Move(None, None)

Result = Literal["1-0", "0-1", "1/2-1/2", "*"]
"""A game's result as chess writes it: 1-0 Black won, 0-1 White won, 1/2-1/2 a draw, * no result (void, aborted)."""


def result_points(result: str) -> float:
    """The points Black scores by `result`: 1 (1-0), 0 (0-1), 1/2 (1/2-1/2); White scores the rest. The one
    place a result becomes points; ValueError for * (a void or aborted game scores nothing)."""
    try:
        return _BLACK_POINTS[result]
    except KeyError:
        raise ValueError(f"result {result!r} scores no points; only 1-0, 0-1 and 1/2-1/2 are scored") from None


_BLACK_POINTS = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}


def result_for(winner: Color | None) -> Result:
    """The result of a game `winner` won (None: a draw): the one place result strings are built."""
    if winner is None:
        return "1/2-1/2"
    return "1-0" if winner is BLACK else "0-1"


@dataclass(frozen=True)
class Outcome:
    """The result of a finished game. Scores are tree totals; White's includes the komi."""

    winner: Color | None
    black_score: float
    white_score: float

    @property
    def margin(self) -> float:
        """How many points the winner won by (0 for a draw)."""
        return abs(self.black_score - self.white_score)

    def result(self) -> Result:
        """`1-0` (Black wins), `0-1` (White wins) or `1/2-1/2`."""
        return result_for(self.winner)

    def __str__(self) -> str:
        scores = f"{_num(self.black_score)}-{_num(self.white_score)}"
        if self.winner is None:
            return f"draw, {scores}"
        return f"{self.winner} wins by {_num(self.margin)}, {scores}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _check_komi(komi: float) -> float:
    value = float(komi)
    if not math.isfinite(value):
        raise InvalidPositionError(f"the komi must be a finite number, not {komi!r}")
    return value


class _Geometry:
    """Everything about a W x H board that never changes: cells, neighbours, colours, move tables.

    Besides the directed placements (pit, root) it numbers the undirected *edges*, the pairs of adjacent
    cells: a placement is legal exactly when its edge is *live* (both ends are roots) and the pit's tree
    is at least as big, so every live edge carries one or two legal placements.
    """

    _cache: ClassVar[dict[tuple[int, int], _Geometry]] = {}

    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        n = self.ncells = width * height
        self.cells = [Cell(i % width, i // width) for i in range(n)]
        self.index = {c: i for i, c in enumerate(self.cells)}
        # 1 for a dark (black) cell, 0 for a light one: the sign of the margin change when it is a root.
        self.dark = [1 if c.color is BLACK else 0 for c in self.cells]
        # A pit's stem letter by parent - pit (a rank up is +width; boards are 2 wide or more, so no two collide).
        self.stem_letters = {rank * width + file: letter for (file, rank), letter in _STEM_LETTERS.items()}
        neighbors: list[tuple[int, ...]] = []
        for c in self.cells:
            nbs = []
            for df, dr in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                f, r = c.file + df, c.rank + dr
                if 0 <= f < width and 0 <= r < height:
                    nbs.append(r * width + f)
            neighbors.append(tuple(sorted(nbs)))
        self.neighbors = neighbors
        # Directed placements (pit, root) in canonical order: the index in this list is the placement id.
        self.placements = [(p, q) for p in range(n) for q in neighbors[p]]
        self.move_list = [Move(self.cells[p], self.cells[q]) for p, q in self.placements]
        self.placement_id = {pq: i for i, pq in enumerate(self.placements)}
        self.move_ids = {m: i for i, m in enumerate(self.move_list)}
        # Undirected edges a < b as (a, b, id of a->b, id of b->a); per cell, its (neighbour, edge) pairs.
        self.edges = [(a, b, self.placement_id[a, b], self.placement_id[b, a]) for a, b in self.placements if a < b]
        edge_of = {(a, b): e for e, (a, b, _, _) in enumerate(self.edges)}
        self.cell_edges = [tuple((q, edge_of[min(p, q), max(p, q)]) for q in neighbors[p]) for p in range(n)]
        # Undoing a move re-inserts live edges in the reverse order they were removed in.
        self.cell_edges_reversed = [tuple(reversed(pairs)) for pairs in self.cell_edges]

    @classmethod
    def of(cls, width: int, height: int) -> _Geometry:
        key = (width, height)
        geometry = cls._cache.get(key)
        if geometry is None:
            if not (MIN_SIZE <= width <= MAX_SIZE and MIN_SIZE <= height <= MAX_SIZE):
                raise InvalidPositionError(
                    f"a {width}x{height} board is not supported: width and height must be {MIN_SIZE} to {MAX_SIZE}"
                )
            geometry = cls._cache[key] = cls(width, height)
        return geometry


# Stem directions in the position string: the letter says where the pit's stem points.
_STEM_LETTERS = {(0, 1): "n", (1, 0): "e", (0, -1): "s", (-1, 0): "w"}
_STEM_OFFSETS = {letter: delta for delta, letter in _STEM_LETTERS.items()}
_STEM_ARROWS = {"n": "^", "e": ">", "s": "v", "w": "<"}
_ROW_TOKEN_RE = re.compile(r"([0-9]+)|(.)")


class Position:
    """A position of a game of Alternator: the board, whose turn it is, and how the game got here.

    Cells are held as indices `rank * width + file`. `parent[i]` is the cell the stem of pit `i` points
    to, or -1 when `i` is a root; `size[i]` is the size of the tree rooted at root `i` (for a pit, the
    size its tree had when it was attached, which is what taking the move back subtracts).

    Incremental state, updated in O(1) per move (only the edges around the pit and the root change):
    `_live` lists the live edges (two adjacent roots) with `_live_pos` giving each live edge's index in
    it, and `_count` is the number of legal placements, the sum over live edges of 1, or 2 when both
    trees have the same size.
    """

    __slots__ = (
        "_count",
        "_geo",
        "_live",
        "_live_pos",
        "_undo",
        "black_margin",
        "consecutive_passes",
        "history",
        "komi",
        "parent",
        "placements",
        "size",
        "turn",
    )

    def __init__(self, width: int = 8, height: int = 8, komi: float = DEFAULT_KOMI) -> None:
        self._geo = _Geometry.of(width, height)
        n = self._geo.ncells
        self.komi = _check_komi(komi)
        self.parent = [-1] * n
        self.size = [1] * n
        self.turn = BLACK
        self.consecutive_passes = 0
        self.placements = 0
        # Black's tree total minus White's, before komi.
        self.black_margin = sum(1 if d else -1 for d in self._geo.dark)
        self.history: list[Move] = []
        self._undo: list[tuple[int, int, int]] = []
        nedges = len(self._geo.edges)
        self._live = list(range(nedges))
        self._live_pos = list(range(nedges))
        self._count = 2 * nedges

    # -- geometry ---------------------------------------------------------------------------------

    @property
    def width(self) -> int:
        return self._geo.width

    @property
    def height(self) -> int:
        return self._geo.height

    @property
    def size_text(self) -> str:
        return f"{self._geo.width}x{self._geo.height}"

    def cell_index(self, cell: Cell) -> int:
        """The index of an on-board cell; IllegalMoveError naming the board when it is off it."""
        i = self._geo.index.get(cell)
        if i is None:
            raise IllegalMoveError(f"{cell} is off the {self.size_text} board")
        return i

    def move_of(self, placement_id: int) -> Move:
        """The Move a placement id (or PASS_ID) stands for on this board."""
        if placement_id == PASS_ID:
            return PASS
        return self._geo.move_list[placement_id]

    def id_of(self, move: Move) -> int:
        """The placement id of `move` (PASS_ID for a pass); IllegalMoveError if no placement on this board."""
        if move.pit is None or move.root is None:
            if move.pit is None and move.root is None:
                return PASS_ID
            raise IllegalMoveError(f"{move!r}: a placement needs both a pit and a root cell")
        placement_id = self._geo.move_ids.get(move)
        if placement_id is None:
            for cell in (move.pit, move.root):
                if cell not in self._geo.index:
                    raise IllegalMoveError(f"{move}: {cell} is off the {self.size_text} board")
            if move.pit == move.root:
                raise IllegalMoveError(f"{move}: the pit and the root must be different (adjacent) cells")
            raise IllegalMoveError(f"{move}: {move.pit} and {move.root} are not adjacent")
        return placement_id

    # -- queries ----------------------------------------------------------------------------------

    def is_over(self) -> bool:
        """The game ends when the two players pass on consecutive turns."""
        return self.consecutive_passes >= 2

    def root_of(self, cell: Cell) -> Cell:
        """The root of the tree that `cell` belongs to."""
        return self._geo.cells[self._root_index(self.cell_index(cell))]

    def tree_size(self, cell: Cell) -> int:
        """The size of the tree that `cell` belongs to."""
        return self.size[self._root_index(self.cell_index(cell))]

    def _root_index(self, i: int) -> int:
        parent = self.parent
        while parent[i] >= 0:
            i = parent[i]
        return i

    def has_dot(self, cell: Cell) -> bool:
        return self.parent[self.cell_index(cell)] >= 0

    def scores(self) -> tuple[int, int]:
        """Black's and White's tree totals, before komi. They always add up to W·H."""
        n = self._geo.ncells
        return (n + self.black_margin) // 2, (n - self.black_margin) // 2

    def outcome(self) -> Outcome | None:
        """The result if the game is over, else None."""
        if not self.is_over():
            return None
        return self.score_outcome()

    def score_outcome(self) -> Outcome:
        """The result the board would give if the game ended now (used for adjudication too)."""
        black, white = self.scores()
        white_total = white + self.komi
        winner = BLACK if black > white_total else WHITE if white_total > black else None
        return Outcome(winner, float(black), white_total)

    def _live_ids(self) -> list[int]:
        """The legal placement ids, in the order of the live-edge list (not canonical)."""
        size, edges = self.size, self._geo.edges
        ids = []
        for e in self._live:
            a, b, ab, ba = edges[e]
            sa, sb = size[a], size[b]
            if sa >= sb:
                ids.append(ab)
            if sb >= sa:
                ids.append(ba)
        return ids

    def placement_ids(self) -> list[int]:
        """The legal placement ids in canonical order (by pit, then root); [] once the game is over."""
        if self.consecutive_passes >= 2:
            return []
        ids = self._live_ids()
        ids.sort()
        return ids

    def placement_count(self) -> int:
        """How many placements are legal (0 once the game is over), in O(1)."""
        return 0 if self.consecutive_passes >= 2 else self._count

    def random_placement_id(self, rng: random.Random) -> int:
        """A legal placement id drawn uniformly by `rng`, or PASS_ID when no placement is legal (or game over)."""
        live = self._live
        if not live or self.consecutive_passes >= 2:
            return PASS_ID
        size, edges, draw = self.size, self._geo.edges, rng.random
        slots = 2 * len(live)
        # Each live edge offers both directions with equal chance; an illegal direction is drawn again, so
        # every legal placement has the same chance (at most half the draws are rejected).
        while True:
            x = int(draw() * slots)
            a, b, ab, ba = edges[live[x >> 1]]
            if x & 1:
                if size[b] >= size[a]:
                    return ba
            elif size[a] >= size[b]:
                return ab

    def legal_placements(self) -> list[Move]:
        """Every legal placement, in a fixed order (by pit, then root, each by index)."""
        moves = self._geo.move_list
        return [moves[i] for i in self.placement_ids()]

    def legal_moves(self) -> list[Move]:
        """Every legal move: the legal placements, then `pass`; none once the game is over."""
        if self.consecutive_passes >= 2:
            return []
        moves = self.legal_placements()
        moves.append(PASS)
        return moves

    def has_legal_placement(self) -> bool:
        """True when some placement is legal: two adjacent cells are both roots and the game is not over."""
        return bool(self._live) and self.consecutive_passes < 2

    def check(self, move: Move) -> None:
        """Raise IllegalMoveError saying exactly why, unless `move` is legal here."""
        if self.consecutive_passes >= 2:
            raise IllegalMoveError(f"{move}: the game is over")
        if move.pit is None and move.root is None:
            return
        self._check_placement(move)

    def _check_placement(self, move: Move) -> None:
        if move.pit is None or move.root is None:
            raise IllegalMoveError(f"{move!r}: a placement needs both a pit and a root cell")
        index = self._geo.index
        p = index.get(move.pit, -1)
        q = index.get(move.root, -1)
        for i, cell in ((p, move.pit), (q, move.root)):
            if i < 0:
                raise IllegalMoveError(f"{move}: {cell} is off the {self.size_text} board")
        if p == q:
            raise IllegalMoveError(f"{move}: the pit and the root must be different (adjacent) cells")
        if self.parent[p] >= 0:
            raise IllegalMoveError(f"{move}: {move.pit} already has a dot")
        if self.parent[q] >= 0:
            raise IllegalMoveError(f"{move}: {move.root} already has a dot")
        if q not in self._geo.neighbors[p]:
            raise IllegalMoveError(f"{move}: {move.pit} and {move.root} are not adjacent")
        if self.size[p] < self.size[q]:
            raise IllegalMoveError(
                f"{move}: the tree at {move.pit} (size {self.size[p]}) is smaller than"
                f" the tree at {move.root} (size {self.size[q]})"
            )

    def is_legal(self, move: Move) -> bool:
        try:
            self.check(move)
        except IllegalMoveError:
            return False
        return True

    def parse_move(self, text: str) -> Move:
        """Parse a move text and check it is legal here: InvalidMoveError or IllegalMoveError."""
        move = Move.parse(text)
        self.check(move)
        return move

    # -- making and taking back moves -------------------------------------------------------------

    def push(self, move: Move) -> None:
        """Play a legal move (checked: IllegalMoveError says why it is not)."""
        self.check(move)
        if move.pit is None:
            self._push_pass()
            self.history.append(PASS)
        else:
            p, q = self._geo.placements[self._geo.move_ids[move]]
            self._push_placement(p, q)
            self.history.append(move)

    def push_id(self, placement_id: int) -> None:
        """Play a placement by id, or a pass for PASS_ID; IllegalMoveError if it is not legal here.

        The cheap way to play for a search: no parsing, no Move objects made.
        """
        if self.consecutive_passes >= 2:
            raise IllegalMoveError(f"{self.move_of(placement_id)}: the game is over")
        if placement_id == PASS_ID:
            self._push_pass()
            self.history.append(PASS)
            return
        placements = self._geo.placements
        if not 0 <= placement_id < len(placements):
            raise IllegalMoveError(
                f"{placement_id} is not a placement id on the {self.size_text} board:"
                f" ids run from 0 to {len(placements) - 1}, and {PASS_ID} is a pass"
            )
        p, q = placements[placement_id]
        parent, size = self.parent, self.size
        if parent[p] >= 0 or parent[q] >= 0 or size[p] < size[q]:
            self._check_placement(self._geo.move_list[placement_id])
        self._push_placement(p, q)
        self.history.append(self._geo.move_list[placement_id])

    def play(self, move: Move | str) -> Position:
        """A new position after `move` (a Move or its text); this one is left unchanged."""
        if isinstance(move, str):
            move = Move.parse(move)
        position = self.copy()
        position.push(move)
        return position

    def pop(self) -> Move:
        """Take back the last move, returning it."""
        if not self._undo:
            raise IndexError("pop from a position with no moves to take back")
        self._unpush()
        return self.history.pop()

    def _push_pass(self) -> None:
        self._undo.append((-1, -1, self.consecutive_passes))
        self.consecutive_passes += 1
        self.turn = WHITE if self.turn is BLACK else BLACK

    def _push_placement(self, p: int, q: int) -> None:
        """Attach the tree of root p to root q (legality already known), updating the live edges."""
        parent, size, live, live_pos = self.parent, self.size, self._live, self._live_pos
        self._undo.append((p, q, self.consecutive_passes))
        sp, sq = size[p], size[q]
        count = self._count
        # p becomes a pit: every live edge at p dies (swap-remove from the live list).
        for r, e in self._geo.cell_edges[p]:
            if parent[r] < 0:
                count -= 2 if size[r] == sp else 1
                last = live.pop()
                if last != e:
                    i = live_pos[e]
                    live[i] = last
                    live_pos[last] = i
        parent[p] = q
        # q's tree grows: its live edges stay live but may gain or lose their second direction.
        grown = sq + sp
        for r, _ in self._geo.cell_edges[q]:
            if parent[r] < 0:
                sr = size[r]
                count += (sr == grown) - (sr == sq)
        size[q] = grown
        self._count = count
        self.placements += 1
        self.black_margin += 2 * sp if self._geo.dark[q] else -2 * sp
        self.consecutive_passes = 0
        self.turn = WHITE if self.turn is BLACK else BLACK

    def _unpush(self) -> None:
        p, q, passes = self._undo.pop()
        self.turn = WHITE if self.turn is BLACK else BLACK
        self.consecutive_passes = passes
        if p < 0:
            return
        parent, size, live, live_pos = self.parent, self.size, self._live, self._live_pos
        sp = size[p]
        grown = size[q]
        sq = grown - sp
        count = self._count
        for r, _ in self._geo.cell_edges[q]:
            if parent[r] < 0:
                sr = size[r]
                count -= (sr == grown) - (sr == sq)
        size[q] = sq
        parent[p] = -1
        # Exactly reverse the swap-removals, so the live list (and so random draws) is as it was.
        # A dead edge's _live_pos still holds the index it was removed from.
        for r, e in self._geo.cell_edges_reversed[p]:
            if parent[r] < 0:
                count += 2 if size[r] == sp else 1
                i = live_pos[e]
                if i == len(live):
                    live.append(e)
                else:
                    moved = live[i]
                    live_pos[moved] = len(live)
                    live.append(moved)
                    live[i] = e
        self._count = count
        self.placements -= 1
        self.black_margin -= 2 * sp if self._geo.dark[q] else -2 * sp

    def _perft2(self) -> int:
        """perft(self, 2) for a game not over, counting each child's legal placements without playing it."""
        parent, size, cell_edges = self.parent, self.size, self._geo.cell_edges
        count = self._count
        total = 0
        for e in self._live:
            a, b, _, _ = self._geo.edges[e]
            sa, sb = size[a], size[b]
            for p, q, sp, sq in ((a, b, sa, sb), (b, a, sb, sa)):
                if sp < sq:
                    continue
                child = count
                for r, _ in cell_edges[p]:
                    if parent[r] < 0:
                        child -= 2 if size[r] == sp else 1
                grown = sq + sp
                for r, _ in cell_edges[q]:
                    if r != p and parent[r] < 0:
                        sr = size[r]
                        child += (sr == grown) - (sr == sq)
                total += child + 1  # the child's placements and its pass
        # After a pass the board is the same; a second pass in a row ends the game, leaving no moves.
        total += 0 if self.consecutive_passes >= 1 else count + 1
        return total

    def copy(self) -> Position:
        position = Position.__new__(Position)
        position._geo = self._geo
        position.komi = self.komi
        position.parent = self.parent.copy()
        position.size = self.size.copy()
        position.turn = self.turn
        position.consecutive_passes = self.consecutive_passes
        position.placements = self.placements
        position.black_margin = self.black_margin
        position.history = self.history.copy()
        position._undo = self._undo.copy()
        position._live = self._live.copy()
        position._live_pos = self._live_pos.copy()
        position._count = self._count
        return position

    @classmethod
    def from_moves(
        cls, moves: Iterable[str | Move], width: int = 8, height: int = 8, komi: float = DEFAULT_KOMI
    ) -> Position:
        """The position reached from the empty board by `moves`; the first bad move raises, naming its number."""
        position = cls(width, height, komi)
        for number, move in enumerate(moves, 1):
            try:
                position.push(move if isinstance(move, Move) else Move.parse(move))
            except (InvalidMoveError, IllegalMoveError) as error:
                raise type(error)(f"move {number}: {error}") from None
        return position

    # -- text forms -------------------------------------------------------------------------------

    def to_string(self) -> str:
        """A compact string that names this position exactly (not its history); `from_string` reads it.

        Ranks top to bottom separated by `/`; in each, a run of roots is a number and a pit is the
        direction of its stem (`n` up, `e` right, `s` down, `w` left); then whose turn, the number of
        passes just made, and the komi. The empty standard board is `8/8/8/8/8/8/8/8 b 0 3.5`.
        """
        geo = self._geo
        width, parent, letters = geo.width, self.parent, geo.stem_letters
        rows = []
        for start in range(geo.ncells - width, -1, -width):  # the top rank first
            row: list[str] = []
            run = 0
            for i in range(start, start + width):
                to = parent[i]  # where the stem of i points
                if to < 0:
                    run += 1
                    continue
                if run:
                    row.append(str(run))
                    run = 0
                row.append(letters[to - i])
            if run:
                row.append(str(run))
            rows.append("".join(row))
        return f"{'/'.join(rows)} {'b' if self.turn is BLACK else 'w'} {self.consecutive_passes} {_num(self.komi)}"

    @classmethod
    def from_string(cls, text: str) -> Position:
        """Read a position string (see `to_string`); InvalidPositionError says what is wrong."""
        fields = text.split()
        if len(fields) != 4:
            raise InvalidPositionError(f"{text!r}: expected 4 fields (board, turn, passes, komi), got {len(fields)}")
        board, turn, passes, komi_text = fields
        ranks = board.split("/")
        if not MIN_SIZE <= len(ranks) <= MAX_SIZE:
            raise InvalidPositionError(
                f"{text!r}: {len(ranks)} ranks; a board has {MIN_SIZE} to {MAX_SIZE} ranks separated by '/'"
            )
        grid: list[list[str | None]] = []
        for row_text in ranks:
            row: list[str | None] = []
            for number, letter in _ROW_TOKEN_RE.findall(row_text):
                if number:
                    if int(number) == 0:
                        raise InvalidPositionError(
                            f"{text!r}: the rank {row_text!r} has a run of 0 roots; runs count from 1"
                        )
                    if int(number) > MAX_SIZE - len(row):
                        raise InvalidPositionError(f"{text!r}: the rank {row_text!r} has more than {MAX_SIZE} cells")
                    row.extend([None] * int(number))
                elif letter in _STEM_ARROWS:
                    row.append(letter)
                else:
                    raise InvalidPositionError(f"{text!r}: {letter!r} is not a stem direction (n, e, s, w) or a count")
            grid.append(row)
        height, width = len(grid), len(grid[0])
        if any(len(row) != width for row in grid):
            widths = ", ".join(str(len(row)) for row in grid)
            raise InvalidPositionError(f"{text!r}: the ranks are not all the same width ({widths} cells)")
        if turn not in ("b", "w"):
            raise InvalidPositionError(f"{text!r}: the turn must be b or w, not {turn!r}")
        if passes not in ("0", "1", "2"):
            raise InvalidPositionError(f"{text!r}: the passes just made must be 0, 1 or 2, not {passes!r}")
        try:
            komi = float(komi_text)
        except ValueError:
            raise InvalidPositionError(f"{text!r}: the komi must be a number, not {komi_text!r}") from None
        try:
            position = cls(width, height, komi)  # checks the size and that the komi is finite
        except InvalidPositionError as error:
            raise InvalidPositionError(f"{text!r}: {error}") from None
        geo = position._geo
        for row_index, row in enumerate(grid):
            rank = height - 1 - row_index
            for file, letter in enumerate(row):
                if letter is None:
                    continue
                df, dr = _STEM_OFFSETS[letter]
                target = Cell(file + df, rank + dr)
                if target not in geo.index:
                    raise InvalidPositionError(f"{text!r}: the stem of {Cell(file, rank)} points off the board")
                position.parent[rank * width + file] = geo.index[target]
        position._rebuild(text)
        position.turn = BLACK if turn == "b" else WHITE
        position.consecutive_passes = int(passes)
        return position

    def _rebuild(self, text: str) -> None:
        """Recompute sizes, placements, margin and live edges from the stems, rejecting cycles."""
        geo = self._geo
        n = geo.ncells
        self.size = [0] * n
        for i in range(n):
            j, steps = i, 0
            while self.parent[j] >= 0:
                j = self.parent[j]
                steps += 1
                if steps > n:
                    raise InvalidPositionError(f"{text!r}: the stems from {geo.cells[i]} go round in a cycle")
            self.size[j] += 1
        for i in range(n):
            if self.parent[i] >= 0:
                self.size[i] = 1
        self.placements = sum(1 for q in self.parent if q >= 0)
        self.black_margin = sum(
            (self.size[i] if geo.dark[i] else -self.size[i]) for i in range(n) if self.parent[i] < 0
        )
        self._live = [e for e, (a, b, _, _) in enumerate(geo.edges) if self.parent[a] < 0 and self.parent[b] < 0]
        self._live_pos = [0] * len(geo.edges)
        for i, e in enumerate(self._live):
            self._live_pos[e] = i
        self._count = len(self._live_ids())

    def _stem_letter(self, pit: int) -> str:
        """Where the stem of `pit` points: n, e, s or w."""
        return self._geo.stem_letters[self.parent[pit] - pit]

    def diagram(self) -> str:
        """A picture for people: stems as arrows, roots as their tree size (`B`/`W` marks the owner)."""
        geo = self._geo
        lines = []
        header = "    " + "".join(f"{FILES[f]:>4}" for f in range(geo.width))
        lines.append(header)
        for rank in range(geo.height - 1, -1, -1):
            cells = []
            for file in range(geo.width):
                i = rank * geo.width + file
                if self.parent[i] >= 0:
                    cells.append(f"{_STEM_ARROWS[self._stem_letter(i)]:>4}")
                elif self.size[i] == 1:
                    cells.append(f"{'.':>4}")
                else:
                    cells.append(f"{str(self.size[i]) + ('B' if geo.dark[i] else 'W'):>4}")
            lines.append(f"{rank + 1:>3} " + "".join(cells))
        black, white = self.scores()
        lines.append("")
        lines.append("pits: arrows point along the stem; roots: '.' untouched, or tree size + owner (B dark, W light)")
        status = "game over" if self.is_over() else f"{self.turn} to move"
        lines.append(
            f"Black {black}, White {white} + komi {_num(self.komi)} = {_num(white + self.komi)}; {status}"
            f" after {len(self.history)} moves"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.diagram()

    def __repr__(self) -> str:
        return f"Position.from_string({self.to_string()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Position):
            return NotImplemented
        return (
            self._geo is other._geo
            and self.parent == other.parent
            and self.turn is other.turn
            and self.consecutive_passes == other.consecutive_passes
            and self.komi == other.komi
        )

    __hash__ = None  # type: ignore[assignment]


def roots_in_play(position: Position) -> int:
    """How many roots still have a root beside them: the only cells a placement can still use (the solver's and
    the adjudicator's measure of how much of a game is left)."""
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


def parse_size(text: str) -> tuple[int, int]:
    """A board size as people write it, `8` (square) or `9x7` (files x ranks), as (width, height).

    InvalidPositionError saying what a size looks like, or which sizes are supported.
    """
    match = _SIZE_RE.fullmatch(text)
    if match is None:
        raise InvalidPositionError(f"{text!r} is not a board size: write a number like 8, or files x ranks like 9x7")
    width = int(match[1])
    height = int(match[2] or width)
    if not (MIN_SIZE <= width <= MAX_SIZE and MIN_SIZE <= height <= MAX_SIZE):
        raise InvalidPositionError(
            f"{text!r}: a {width}x{height} board is not supported; width and height must be {MIN_SIZE} to {MAX_SIZE}"
        )
    return width, height


def perft(position: Position, depth: int) -> int:
    """The number of positions exactly `depth` moves ahead (RULES.md: pass counts; a finished game has none).

    Counts without playing the last two plies: a node's legal placements are known in O(1), and a
    child's are derived from the few edges the move changes.
    """
    if depth <= 0:
        return 1
    if position.consecutive_passes >= 2:
        return 0
    if depth == 1:
        return position._count + 1
    if depth == 2:
        return position._perft2()
    total = 0
    for placement_id in position._live_ids():
        p, q = position._geo.placements[placement_id]
        position._push_placement(p, q)
        total += perft(position, depth - 1)
        position._unpush()
    position._push_pass()
    total += perft(position, depth - 1)
    position._unpush()
    return total
