"""A bot that plays the placement that raises its own score the most right now, looking no further.

    python -m sample_bots.greedy

A placement (p, q) hands the whole tree of p to the owner of q's colour, and p and q always have
opposite colours, so it changes the mover's score by +size(p) when q is the mover's colour and by
-size(p) otherwise; a pass changes nothing. Greedy takes the largest change. Ties go to the first
placement in the rules engine's order (pit, then root, each by cell index: a1, b1, ..., then a2, ...),
so its play is deterministic. It passes only when no placement is legal or every one would lower its
score, because passing twice in a row ends the game and a worse move is worse than standing still.
"""

from __future__ import annotations

from protocol.kit import Clock, run_bot
from protocol.rules import PASS, Move, Position


def score_change(position: Position, move: Move) -> int:
    """How much the mover's own score changes if it plays the placement `move` now."""
    assert move.pit is not None and move.root is not None
    size = position.tree_size(move.pit)
    return size if move.root.color is position.turn else -size


def choose(position: Position, clock: Clock) -> Move:
    best, best_change = PASS, 0
    for move in position.legal_placements():
        change = score_change(position, move)
        if change > best_change:  # strictly better: the first of equal moves stays
            best, best_change = move, change
    return best


def main() -> None:
    run_bot(choose, name="greedy", author="alternator arena", version="1.0")


if __name__ == "__main__":
    main()
