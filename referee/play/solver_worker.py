"""Solver adjudication out of the referee's process: a short-lived `python -m referee.play.solver_worker` per try.

The exact solver is pure Python and takes up to its whole node budget; run in the referee's process it would hold
the event loop (and the GIL) while other games' bots are being timed. A child process costs about a tenth of a
second to start and is tried a few times per game at most (`referee.play.adjudication.RETRY_AFTER_ROOTS`). It reads
one JSON object (the moves, board and komi, the node budget) on stdin and writes the answer on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

from protocol.rules import Position

if TYPE_CHECKING:
    from referee.play.adjudication import SolverAnswer

__all__ = ["solve_elsewhere"]


async def solve_elsewhere(position: Position, max_nodes: int) -> SolverAnswer | None:
    """The solver's answer for `position` within `max_nodes` (None: it did not finish), from a child process."""
    # Imported here: the child runs this module too, and starts faster without trio and pydantic.
    import trio

    from referee.play.adjudication import SolverAnswer

    request = {
        "moves": [str(m) for m in position.history],
        "width": position.width,
        "height": position.height,
        "komi": position.komi,
        "max_nodes": max_nodes,
    }
    done = await trio.run_process(
        [sys.executable, "-m", "referee.play.solver_worker"],
        stdin=json.dumps(request).encode(),
        capture_stdout=True,
        stderr=subprocess.DEVNULL,
    )
    answer = json.loads(done.stdout)
    if answer.get("aborted"):
        return None
    return SolverAnswer(float(answer["score"]), int(answer["margin"]), int(answer["nodes"]))


def _main() -> None:
    from sample_bots.solver import SolveAborted, solve

    request = json.loads(sys.stdin.read())
    position = Position.from_moves(request["moves"], request["width"], request["height"], request["komi"])
    try:
        solution = solve(position, None, int(request["max_nodes"]))
    except SolveAborted:
        print(json.dumps({"aborted": True}))
        return
    print(json.dumps({"score": solution.score, "margin": solution.margin, "nodes": solution.nodes}))


if __name__ == "__main__":
    _main()
