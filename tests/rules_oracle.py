"""A deliberately naive second implementation of RULES.md, to check protocol.rules against.

Written from RULES.md alone and sharing no code with protocol.rules (it must never import it). It keeps
no incremental state: a position is just the stems drawn so far, the moves played and the komi, and
every question (roots, tree sizes, legality, scores) is answered by walking the stems again from
scratch. Slow on purpose, so that it is obviously right; tests compare the fast engine with it.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

Square = tuple[int, int]  # (file, rank), both 0-based; (0, 0) is a1

LETTERS = string.ascii_lowercase


def square_name(square: Square) -> str:
    return LETTERS[square[0]] + str(square[1] + 1)


def parse_square(text: str) -> Square | None:
    """`d5` -> (3, 4); None for anything that is not a letter followed by a rank number without leading 0."""
    if len(text) < 2 or text[0] not in LETTERS or not text[1:].isdigit() or text[1] == "0":
        return None
    return LETTERS.index(text[0]), int(text[1:]) - 1


def split_move(text: str) -> tuple[Square, Square] | None:
    """A placement text -> (pit, root), trying every split point; None if it is not two squares."""
    for cut in range(2, len(text) - 1):
        pit, root = parse_square(text[:cut]), parse_square(text[cut:])
        if pit is not None and root is not None and text[cut] in LETTERS:
            return pit, root
    return None


@dataclass
class OracleGame:
    """A game from the empty board: the board size, the komi, and the stems and moves so far."""

    width: int
    height: int
    komi: float = 3.5
    stems: dict[Square, Square] = field(default_factory=dict)  # pit -> the cell its stem points to
    moves: list[str] = field(default_factory=list)

    def copy(self) -> OracleGame:
        return OracleGame(self.width, self.height, self.komi, dict(self.stems), list(self.moves))

    def squares(self) -> list[Square]:
        return [(f, r) for r in range(self.height) for f in range(self.width)]

    def on_board(self, square: Square) -> bool:
        return 0 <= square[0] < self.width and 0 <= square[1] < self.height

    @staticmethod
    def is_dark(square: Square) -> bool:
        return (square[0] + square[1]) % 2 == 0

    @staticmethod
    def adjacent(a: Square, b: Square) -> bool:
        return abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1

    def root_of(self, square: Square) -> Square:
        steps = 0
        while square in self.stems:
            square = self.stems[square]
            steps += 1
            assert steps <= self.width * self.height, "the stems go round in a cycle"
        return square

    def tree_sizes(self) -> dict[Square, int]:
        """Every root's tree size, found by walking every cell to its root."""
        sizes: dict[Square, int] = {}
        for square in self.squares():
            root = self.root_of(square)
            sizes[root] = sizes.get(root, 0) + 1
        return sizes

    @property
    def turn(self) -> str:
        return "black" if len(self.moves) % 2 == 0 else "white"

    def is_over(self) -> bool:
        return len(self.moves) >= 2 and self.moves[-1] == "pass" and self.moves[-2] == "pass"

    def why_illegal(self, text: str) -> str | None:
        """None when `text` is a legal move here, else a short reason: a key the tests compare."""
        if self.is_over():
            return "over"
        if text == "pass":
            return None
        split = split_move(text)
        if split is None:
            return "malformed"
        pit, root = split
        if not self.on_board(pit) or not self.on_board(root):
            return "off"
        if pit in self.stems:
            return "pit-dot"
        if root in self.stems:
            return "root-dot"
        if not self.adjacent(pit, root):
            return "not-adjacent"
        sizes = self.tree_sizes()
        if sizes[pit] < sizes[root]:
            return "smaller"
        return None

    def legal_placements(self) -> list[str]:
        if self.is_over():
            return []
        sizes = self.tree_sizes()
        found = []
        for pit in self.squares():
            f, r = pit
            # The four sides, in board order (rank, then file) like the pits.
            for root in sorted([(f, r - 1), (f - 1, r), (f + 1, r), (f, r + 1)], key=lambda s: (s[1], s[0])):
                if not self.on_board(root) or pit in self.stems or root in self.stems:
                    continue
                if sizes[pit] >= sizes[root]:
                    found.append(square_name(pit) + square_name(root))
        return found

    def legal_moves(self) -> list[str]:
        if self.is_over():
            return []
        return [*self.legal_placements(), "pass"]

    def play(self, text: str) -> None:
        reason = self.why_illegal(text)
        if reason is not None:
            raise ValueError(f"{text}: {reason}")
        if text != "pass":
            split = split_move(text)
            assert split is not None
            pit, root = split
            self.stems[pit] = root
        self.moves.append(text)

    def scores(self) -> tuple[int, int]:
        """Black's and White's totals before komi: every cell counts for the owner of its root's colour."""
        black = white = 0
        for square in self.squares():
            if self.is_dark(self.root_of(square)):
                black += 1
            else:
                white += 1
        return black, white

    def outcome(self) -> tuple[str | None, float, float] | None:
        """(winner or None for a draw, Black's score, White's score with komi) once over, else None."""
        if not self.is_over():
            return None
        black, white = self.scores()
        white_total = white + self.komi
        winner = "black" if black > white_total else "white" if white_total > black else None
        return winner, float(black), white_total


def oracle_perft(game: OracleGame, depth: int) -> int:
    """Positions exactly `depth` moves ahead, by playing every move on a fresh copy."""
    if depth == 0:
        return 1
    total = 0
    for move in game.legal_moves():
        child = game.copy()
        child.play(move)
        total += oracle_perft(child, depth - 1)
    return total
