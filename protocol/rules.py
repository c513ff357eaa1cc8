"""The rules of Alternator, exactly as ../shared/RULES.md states them: board, moves, scores, notation.

A pure module with no I/O and no third-party imports, shared by the referee (to adjudicate), the bot
kit and the sample bots (to search), and the tools that replay records. Positions are mutable with
`push`/`pop` so that a search can try a move and take it back cheaply; `copy` gives an independent one.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "BLACK",
    "DEFAULT_KOMI",
    "MAX_SIZE",
    "MIN_SIZE",
    "PASS",
    "WHITE",
    "Cell",
    "Color",
    "IllegalMoveError",
    "InvalidMoveError",
    "InvalidPositionError",
    "Move",
    "Outcome",
    "Position",
    "perft",
]

MIN_SIZE = 2
MAX_SIZE = 26
DEFAULT_KOMI = 3.5
FILES = "abcdefghijklmnopqrstuvwxyz"


class Color(enum.Enum):
    """A player, named after the colour of the cells they own."""

    BLACK = "black"
    WHITE = "white"

    @property
    def other(self) -> Color:
        return WHITE if self is BLACK else BLACK

    def __str__(self) -> str:
        return self.value


BLACK = Color.BLACK
WHITE = Color.WHITE


class InvalidMoveError(ValueError):
    """A move text that is not a move at all (not `pass`, not two cells)."""


class IllegalMoveError(ValueError):
    """A well-formed move that the rules forbid in this position."""


class InvalidPositionError(ValueError):
    """A position string, or a board size, that does not describe a valid position."""


_CELL_RE = re.compile(r"([a-z])([1-9][0-9]?)")
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
        return f"{FILES[self.file]}{self.rank + 1}"


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
        return self.pit is None

    def __str__(self) -> str:
        if self.pit is None or self.root is None:
            return "pass"
        return f"{self.pit}{self.root}"


PASS = Move(None, None)


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

    def result(self) -> str:
        """`1-0` (Black wins), `0-1` (White wins) or `1/2-1/2`."""
        if self.winner is None:
            return "1/2-1/2"
        return "1-0" if self.winner is BLACK else "0-1"

    def __str__(self) -> str:
        scores = f"{_num(self.black_score)}-{_num(self.white_score)}"
        if self.winner is None:
            return f"draw, {scores}"
        return f"{self.winner} wins by {_num(self.margin)}, {scores}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


class _Geometry:
    """Everything about a W x H board that never changes: cells, neighbours, colours, move tables."""

    _cache: dict[tuple[int, int], _Geometry] = {}

    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        n = self.ncells = width * height
        self.cells = [Cell(i % width, i // width) for i in range(n)]
        self.names = [str(c) for c in self.cells]
        self.index = {c: i for i, c in enumerate(self.cells)}
        # 1 for a dark (black) cell, 0 for a light one: the sign of the margin change when it is a root.
        self.dark = [1 if c.color is BLACK else 0 for c in self.cells]
        neighbors: list[tuple[int, ...]] = []
        for i, c in enumerate(self.cells):
            nbs = []
            for df, dr in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                f, r = c.file + df, c.rank + dr
                if 0 <= f < width and 0 <= r < height:
                    nbs.append(r * width + f)
            neighbors.append(tuple(sorted(nbs)))
        self.neighbors = neighbors
        # Directed placements (pit, root) in canonical order, with their Move objects, built once.
        self.placements = [(p, q) for p in range(n) for q in neighbors[p]]
        self.moves = {(p, q): Move(self.cells[p], self.cells[q]) for p, q in self.placements}
        self.move_ids = {m: pq for pq, m in self.moves.items()}

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
_STEM_ARROWS = {"n": "^", "e": ">", "s": "v", "w": "<"}


class Position:
    """A position of a game of Alternator: the board, whose turn it is, and how the game got here.

    Cells are held as indices `rank * width + file`. `parent[i]` is the cell the stem of pit `i` points
    to, or -1 when `i` is a root; `size[i]` is the size of the tree rooted at root `i`.
    """

    __slots__ = (
        "_geo",
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
        self.komi = float(komi)
        self.parent = [-1] * n
        self.size = [1] * n
        self.turn = BLACK
        self.consecutive_passes = 0
        self.placements = 0
        # Black's tree total minus White's, before komi.
        self.black_margin = sum(1 if d else -1 for d in self._geo.dark)
        self.history: list[Move] = []
        self._undo: list[tuple[int, int, int]] = []

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

    # -- queries ----------------------------------------------------------------------------------

    def is_over(self) -> bool:
        """The game ends when the two players pass on consecutive turns."""
        return self.consecutive_passes >= 2

    def root_of(self, cell: Cell) -> Cell:
        """The root of the tree that `cell` belongs to."""
        i = self.cell_index(cell)
        parent = self.parent
        while parent[i] >= 0:
            i = parent[i]
        return self._geo.cells[i]

    def tree_size(self, cell: Cell) -> int:
        """The size of the tree that `cell` belongs to."""
        return self.size[self._geo.index[self.root_of(cell)]]

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

    def _legal_ids(self) -> list[tuple[int, int]]:
        parent, size = self.parent, self.size
        return [(p, q) for p, q in self._geo.placements if parent[p] < 0 and parent[q] < 0 and size[p] >= size[q]]

    def legal_placements(self) -> list[Move]:
        """Every legal placement, in a fixed order (by pit, then root, each by index)."""
        if self.consecutive_passes >= 2:
            return []
        moves = self._geo.moves
        return [moves[pq] for pq in self._legal_ids()]

    def legal_moves(self) -> list[Move]:
        """Every legal move: the legal placements, then `pass`; none once the game is over."""
        if self.consecutive_passes >= 2:
            return []
        moves = self.legal_placements()
        moves.append(PASS)
        return moves

    def has_legal_placement(self) -> bool:
        parent, size = self.parent, self.size
        for p, q in self._geo.placements:
            if parent[p] < 0 and parent[q] < 0 and size[p] >= size[q]:
                return True
        return False

    def check(self, move: Move) -> None:
        """Raise IllegalMoveError saying exactly why, unless `move` is legal here."""
        if self.consecutive_passes >= 2:
            raise IllegalMoveError(f"{move}: the game is over")
        if move.pit is None or move.root is None:
            return
        index = self._geo.index
        p = index.get(move.pit, -1)
        q = index.get(move.root, -1)
        for i, cell in ((p, move.pit), (q, move.root)):
            if i < 0:
                raise IllegalMoveError(f"{move}: {cell} is off the {self.size_text} board")
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
        else:
            p, q = self._geo.move_ids[move]
            self._push_placement(p, q)
        self.history.append(move)

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

    def _unpush(self) -> None:
        p, q, passes = self._undo.pop()
        self.turn = self.turn.other
        self.consecutive_passes = passes
        if p >= 0:
            sp = self.size[p]
            self.size[q] -= sp
            self.parent[p] = -1
            self.placements -= 1
            self.black_margin -= 2 * sp if self._geo.dark[q] else -2 * sp

    def _push_pass(self) -> None:
        self._undo.append((-1, -1, self.consecutive_passes))
        self.consecutive_passes += 1
        self.turn = self.turn.other

    def _push_placement(self, p: int, q: int) -> None:
        self._undo.append((p, q, self.consecutive_passes))
        sp = self.size[p]
        self.parent[p] = q
        self.size[q] += sp
        self.placements += 1
        self.black_margin += 2 * sp if self._geo.dark[q] else -2 * sp
        self.consecutive_passes = 0
        self.turn = self.turn.other

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
        return position

    @classmethod
    def from_moves(
        cls, moves: list[str] | list[Move], width: int = 8, height: int = 8, komi: float = DEFAULT_KOMI
    ) -> Position:
        """The position reached from the empty board by `moves`; the first bad move raises, naming its number."""
        position = cls(width, height, komi)
        for number, move in enumerate(moves, 1):
            try:
                position.push(Move.parse(move) if isinstance(move, str) else move)
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
        rows = []
        for rank in range(geo.height - 1, -1, -1):
            row, run = "", 0
            for file in range(geo.width):
                i = rank * geo.width + file
                q = self.parent[i]
                if q < 0:
                    run += 1
                    continue
                if run:
                    row, run = row + str(run), 0
                target = geo.cells[q]
                row += _STEM_LETTERS[(target.file - file, target.rank - rank)]
            rows.append(row + (str(run) if run else ""))
        return f"{'/'.join(rows)} {'b' if self.turn is BLACK else 'w'} {self.consecutive_passes} {_num(self.komi)}"

    @classmethod
    def from_string(cls, text: str) -> Position:
        """Read a position string (see `to_string`); InvalidPositionError says what is wrong."""
        fields = text.split()
        if len(fields) != 4:
            raise InvalidPositionError(f"{text!r}: expected 4 fields (board, turn, passes, komi), got {len(fields)}")
        board, turn, passes, komi_text = fields
        ranks = board.split("/")
        grid: list[list[str | None]] = []
        for row_text in ranks:
            row: list[str | None] = []
            for number, letter in re.findall(r"([0-9]+)|(.)", row_text):
                if number:
                    row.extend([None] * int(number))
                elif letter in _STEM_ARROWS:
                    row.append(letter)
                else:
                    raise InvalidPositionError(f"{text!r}: {letter!r} is not a stem direction (n, e, s, w) or a count")
            grid.append(row)
        height, width = len(grid), len(grid[0])
        if any(len(row) != width for row in grid):
            raise InvalidPositionError(f"{text!r}: the ranks are not all {width} cells wide")
        if turn not in ("b", "w"):
            raise InvalidPositionError(f"{text!r}: the turn must be b or w, not {turn!r}")
        if passes not in ("0", "1", "2"):
            raise InvalidPositionError(f"{text!r}: the passes just made must be 0, 1 or 2, not {passes!r}")
        try:
            komi = float(komi_text)
        except ValueError:
            raise InvalidPositionError(f"{text!r}: the komi must be a number, not {komi_text!r}") from None
        position = cls(width, height, komi)
        geo = position._geo
        offsets = {letter: delta for delta, letter in _STEM_LETTERS.items()}
        for row_index, row in enumerate(grid):
            rank = height - 1 - row_index
            for file, letter in enumerate(row):
                if letter is None:
                    continue
                df, dr = offsets[letter]
                target = Cell(file + df, rank + dr)
                if target not in geo.index:
                    raise InvalidPositionError(f"{text!r}: the stem of {Cell(file, rank)} points off the board")
                position.parent[rank * width + file] = geo.index[target]
        position._rebuild(text)
        position.turn = BLACK if turn == "b" else WHITE
        position.consecutive_passes = int(passes)
        return position

    def _rebuild(self, text: str) -> None:
        """Recompute sizes, placements and margin from the stems, rejecting cycles."""
        n = self._geo.ncells
        self.size = [0] * n
        for i in range(n):
            j, steps = i, 0
            while self.parent[j] >= 0:
                j = self.parent[j]
                steps += 1
                if steps > n:
                    raise InvalidPositionError(f"{text!r}: the stems from {self._geo.cells[i]} go round in a cycle")
            self.size[j] += 1
        for i in range(n):
            if self.parent[i] >= 0:
                self.size[i] = 1
        self.placements = sum(1 for q in self.parent if q >= 0)
        self.black_margin = sum(
            (self.size[i] if self._geo.dark[i] else -self.size[i]) for i in range(n) if self.parent[i] < 0
        )

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
                q = self.parent[i]
                if q >= 0:
                    t = geo.cells[q]
                    cells.append(f"{_STEM_ARROWS[_STEM_LETTERS[(t.file - file, t.rank - rank)]]:>4}")
                elif self.size[i] == 1:
                    cells.append(f"{'.':>4}")
                else:
                    cells.append(f"{str(self.size[i]) + ('B' if geo.dark[i] else 'W'):>4}")
            lines.append(f"{rank + 1:>3} " + "".join(cells))
        black, white = self.scores()
        lines.append("")
        lines.append(
            "pits: arrows point along the stem; roots: '.' untouched, or tree size + owner (B dark, W light)"
        )
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


def perft(position: Position, depth: int) -> int:
    """The number of positions exactly `depth` moves ahead (RULES.md: pass counts; a finished game has none)."""
    if depth <= 0:
        return 1
    if position.consecutive_passes >= 2:
        return 0
    if depth == 1:
        return len(position._legal_ids()) + 1
    total = 0
    for p, q in position._legal_ids():
        position._push_placement(p, q)
        total += perft(position, depth - 1)
        position._unpush()
    position._push_pass()
    total += perft(position, depth - 1)
    position._unpush()
    return total
