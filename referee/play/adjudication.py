"""Adjudication: ending a game before the bots play it out, off unless asked for, and always recorded as such.

Two kinds, as engine testers know them from cutechess-cli:

- **By the exact solver** (`--adjudicate solver`), Alternator's tablebases: once few roots are left in play
  (`solver_roots`), `sample_bots.solver.solve` is asked for the position's exact value within a node budget
  (`solver_nodes`); when it proves it, the game ends with the result best play reaches, and the scores it
  reaches (the final Black - White is exact, so both totals are known). Within the budget or not, the answer
  depends only on the position: adjudication never changes a result that perfect play would not.
- **By the bots' scores** (`--resign`, `--draw`): each bot's last `info` score of each of its moves, from its own
  point of view. Resign: for `moves` moves in a row of each side, one bot's score is at most `-score` and the
  other's at least `+score` (both agree who wins). Draw: from move `from_move` on, for `moves` moves in a row of
  each side, both scores are within `score` of 0. A move without a score breaks a run.

Pure: the game loop (`referee.play.game`) hands each move's infos to `record_scores`, asks `wants_solver`, has the
position solved (out of its process: `referee.play.solver_worker`) and hands the answer to `solver_verdict`, then
asks `score_verdict`; it ends the game on a verdict. `after_move` does all of it in this process (tests).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from protocol.rules import BLACK, WHITE, Color, Position, roots_in_play

__all__ = ["Adjudication", "Adjudicator", "SolverAnswer", "Verdict", "parse_draw", "parse_resign", "roots_in_play"]

DEFAULT_SOLVER_ROOTS = 12
"""Roots in play at most for a solver try. Measured on 6x6 games (benchmarks/bench_adjudication.py): with 14 roots
and 200,000 nodes, failed tries cost more time than the adjudication saved."""
DEFAULT_SOLVER_NODES = 50_000
"""Nodes a solver try may take (a fraction of a second in pure Python); endgames solve in far fewer."""
RETRY_AFTER_ROOTS = 2
"""After a failed try, the next waits until this many fewer roots are in play: each try costs its whole budget."""


class Adjudication(BaseModel):
    """How games may be ended early. Every part is off by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    solver: bool = Field(default=False, description="End a game when the exact solver proves its result.")
    solver_roots: int = Field(
        default=DEFAULT_SOLVER_ROOTS, ge=1, le=40, description="Try the solver with at most this many roots in play."
    )
    solver_nodes: int = Field(default=DEFAULT_SOLVER_NODES, ge=1, description="The solver's node budget per try.")
    resign_moves: int | None = Field(default=None, ge=1, description="Resign: moves of each side in a row.")
    resign_score: float | None = Field(default=None, gt=0, description="Resign: the score both bots agree past.")
    draw_moves: int | None = Field(default=None, ge=1, description="Draw: moves of each side in a row.")
    draw_score: float | None = Field(default=None, ge=0, description="Draw: both scores within this of 0.")
    draw_from_move: int = Field(default=0, ge=0, description="Draw: not before this many moves of the game.")

    @property
    def active(self) -> bool:
        return self.solver or self.resign_moves is not None or self.draw_moves is not None


@dataclass(frozen=True)
class SolverAnswer:
    """What the solver proved: the final Black - White with komi, the margin before komi, the nodes it took."""

    score: float
    margin: int
    nodes: int


@dataclass(frozen=True)
class Verdict:
    """An adjudicated end: who won (None: a draw), the kind (solver, resign, draw), the reason, and exact scores
    when the solver proved them."""

    winner: Color | None
    kind: str
    reason: str
    scores: tuple[float, float] | None = None


def _pairs(text: str, flag: str, keys: Sequence[str]) -> dict[str, float]:
    values: dict[str, float] = {}
    for word in text.replace(",", " ").split():
        key, equals, value = word.partition("=")
        if not equals or key not in keys:
            raise ValueError(f"{flag} {word!r}: give {' '.join(f'{k}=N' for k in keys)}")
        try:
            values[key] = float(value)
        except ValueError:
            raise ValueError(f"{flag} {word!r}: {value!r} is not a number") from None
    missing = [k for k in keys if k not in values and k != "movenumber"]
    if missing:
        raise ValueError(f"{flag}: give {', '.join(f'{k}=N' for k in missing)} too")
    return values


def _count(value: float, flag: str, key: str) -> int:
    if not value.is_integer() or value < 1:
        raise ValueError(f"{flag}: {key}={value:g}: give a whole number of moves, at least 1")
    return int(value)


def parse_resign(text: str) -> dict[str, Any]:
    """`--resign movecount=3 score=20` as the keys of `Adjudication` (ValueError says what is wrong)."""
    values = _pairs(text, "--resign", ("movecount", "score"))
    if not values["score"] > 0:
        raise ValueError("--resign: score must be above 0 (the margin a bot must be behind by)")
    return {"resign_moves": _count(values["movecount"], "--resign", "movecount"), "resign_score": values["score"]}


def parse_draw(text: str) -> dict[str, Any]:
    """`--draw movenumber=20 movecount=8 score=1` as the keys of `Adjudication` (ValueError says what is wrong)."""
    values = _pairs(text, "--draw", ("movenumber", "movecount", "score"))
    if values["score"] < 0:
        raise ValueError("--draw: score must be 0 or more")
    start = values.get("movenumber", 0.0)
    if not start.is_integer() or start < 0:
        raise ValueError("--draw: movenumber must be a whole number, 0 or more")
    return {
        "draw_moves": _count(values["movecount"], "--draw", "movecount"),
        "draw_score": values["score"],
        "draw_from_move": int(start),
    }


def _last_score(infos: Sequence[dict[str, Any]]) -> float | None:
    for info in reversed(infos):
        score = info.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score):
            return float(score)
    return None


class Adjudicator:
    """Watches one game's moves and says when it may end (see the module docstring)."""

    def __init__(self, rules: Adjudication) -> None:
        self.rules = rules
        self._scores: dict[Color, list[float | None]] = {BLACK: [], WHITE: []}
        self._failed_at_roots: int | None = None  # the solver failed here: try again only with fewer roots
        self.solver_nodes = 0  # spent in all tries, for the record

    def after_move(self, position: Position, mover: Color, infos: Sequence[dict[str, Any]]) -> Verdict | None:
        """The verdict after `mover` played (its infos of that move), or None to play on; solves in this process."""
        self.record_scores(mover, infos)
        if self.wants_solver(position):
            from sample_bots.solver import SolveAborted, solve  # the solver loads only when asked for

            try:
                solution = solve(position, None, self.rules.solver_nodes)
                answer: SolverAnswer | None = SolverAnswer(solution.score, solution.margin, solution.nodes)
            except SolveAborted:
                answer = None
            verdict = self.solver_verdict(position, answer)
            if verdict is not None:
                return verdict
        return self.score_verdict(position)

    def record_scores(self, mover: Color, infos: Sequence[dict[str, Any]]) -> None:
        """Keep the score of `mover`'s last info of its move (None: it gave none)."""
        self._scores[mover].append(_last_score(infos))

    def wants_solver(self, position: Position) -> bool:
        """Whether to try the solver now: few enough roots, and fewer than at the last failed try."""
        if not self.rules.solver or position.is_over():
            return False
        roots = roots_in_play(position)
        return roots <= self.rules.solver_roots and (
            self._failed_at_roots is None or roots <= self._failed_at_roots - RETRY_AFTER_ROOTS
        )

    def score_verdict(self, position: Position) -> Verdict | None:
        """The resign or draw verdict by the bots' scores so far, or None."""
        rules = self.rules
        if position.is_over():
            return None
        if rules.resign_moves is not None and rules.resign_score is not None:
            verdict = self._resign(rules.resign_moves, rules.resign_score)
            if verdict is not None:
                return verdict
        if rules.draw_moves is not None and rules.draw_score is not None:
            moves = len(position.history)
            if moves >= rules.draw_from_move and self._both(rules.draw_moves, lambda s: abs(s) <= rules.draw_score):
                n = rules.draw_moves
                return Verdict(
                    None,
                    "draw",
                    f"adjudicated a draw: both bots' scores were within {rules.draw_score:g} of 0 for their last"
                    f" {n} moves each (--draw)",
                )
        return None

    def _last(self, color: Color, n: int) -> list[float] | None:
        scores = self._scores[color][-n:]
        if len(scores) < n or any(s is None for s in scores):
            return None
        return [s for s in scores if s is not None]

    def _both(self, n: int, test: Any) -> bool:
        black, white = self._last(BLACK, n), self._last(WHITE, n)
        return black is not None and white is not None and all(test(s) for s in black + white)

    def _resign(self, n: int, threshold: float) -> Verdict | None:
        for loser in (BLACK, WHITE):
            mine, theirs = self._last(loser, n), self._last(loser.other, n)
            if mine is None or theirs is None:
                continue
            if all(s <= -threshold for s in mine) and all(s >= threshold for s in theirs):
                return Verdict(
                    loser.other,
                    "resign",
                    f"adjudicated: {loser} resigns; for their last {n} moves each, {loser}'s scores were at most"
                    f" -{threshold:g} and {loser.other}'s at least +{threshold:g} (--resign)",
                )
        return None

    def solver_verdict(self, position: Position, answer: SolverAnswer | None) -> Verdict | None:
        """The verdict from the solver's answer for `position` (None: it did not finish within its budget)."""
        roots = roots_in_play(position)
        if answer is None:
            self._failed_at_roots = roots
            self.solver_nodes += self.rules.solver_nodes
            return None
        self.solver_nodes += answer.nodes
        cells = position.width * position.height
        black = (cells + answer.margin) / 2  # margin: Black's total minus White's, before komi
        white = cells - black + position.komi
        winner = BLACK if answer.score > 0 else WHITE if answer.score < 0 else None
        outcome = "a draw" if winner is None else f"{winner} wins by {abs(answer.score):g}"
        return Verdict(
            winner,
            "solver",
            f"adjudicated by the exact solver with {roots} roots in play ({answer.nodes} nodes): best play"
            f" gives {outcome}, {black:g}-{white:g}",
            (black, white),
        )


def adjudication_problem(
    kind: str, result: str, winner: str | None, scores: tuple[float | None, float | None], position: Position
) -> str | None:
    """What is wrong with a game recorded as adjudicated (`kind`) at `position`, or None when it holds: a solver
    verdict is solved again and must give the same result and scores; resign must have a winner, draw none."""
    from protocol.rules import result_for

    if position.is_over():
        return "it is recorded as adjudicated, but the moves end the game (two passes)"
    if kind == "solver":
        from sample_bots.solver import solve

        solution = solve(position)
        cells = position.width * position.height
        black = (cells + solution.margin) / 2
        best = BLACK if solution.score > 0 else WHITE if solution.score < 0 else None
        expected = (result_for(best), None if best is None else str(best), (black, cells - black + position.komi))
        if (result, winner, scores) != expected:
            return (
                f"adjudicated by the solver as {result} ({scores[0]} - {scores[1]}), but best play from the final"
                f" position gives {expected[0]} ({expected[2][0]:g} - {expected[2][1]:g})"
            )
        return None
    if kind == "resign":
        return None if winner is not None and result == result_for(Color(winner)) else "a resignation needs a winner"
    if kind == "draw":
        return None if winner is None and result == "1/2-1/2" else "an adjudicated draw must be a draw"
    return f"unknown adjudication {kind!r}"
