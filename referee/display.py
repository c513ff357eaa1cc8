"""How games and matches are shown to a person: progress while they run, results and scores at the end.

The `format_*` and `describe_*` functions are pure (records in, text out) so that matches and
tournaments print the same lines; `MatchDisplay` is the small stateful part that writes them to a
terminal or a log as a match goes, redrawing one progress line in place when the output is a terminal.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from protocol.rules import WHITE, Position
from referee.record import GameRecord, MoveRecord, Termination
from referee.sprt import PENTANOMIAL_OUTCOMES, EloEstimate, SprtStatus, Verdict, elo_estimate
from referee.terminal import printable

_TERMINATION_WORDS = {
    Termination.NORMAL: "both passed",
    Termination.TIME: "lost on time",
    Termination.ILLEGAL_MOVE: "illegal move",
    Termination.PROTOCOL: "protocol error",
    Termination.CRASH: "crashed",
    Termination.UNRESPONSIVE: "stopped answering",
    Termination.VOID: "void (referee failure, not scored)",
    Termination.ABORTED: "aborted (not scored)",
}


def format_number(x: float) -> str:
    """A score as people write it: 32, 28.5."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def format_ms(ms: float | None) -> str:
    """A duration for people: 0.42ms, 312ms, 9.870s, 61.2s; '-' for none."""
    if ms is None:
        return "-"
    if ms < 1:
        return f"{ms:.2f}ms"
    if ms < 1000:
        return f"{ms:.0f}ms" if ms >= 10 else f"{ms:.1f}ms"
    seconds = ms / 1000
    if seconds < 10:
        return f"{seconds:.3f}s"
    return f"{seconds:.1f}s"


def side_name(record: GameRecord, color: str) -> str:
    return record.black.name if color == "black" else record.white.name


def describe_result(record: GameRecord) -> str:
    """One line: result, who won and how, the scores, and the reason.

    e.g. `0-1 greedy (white) wins by 9.5, 27 - 36.5 (both passed)` or
    `1-0 random (black) wins: greedy (white) lost on time: took 0.612s, limit 0.500s`.
    """
    how = _TERMINATION_WORDS[record.termination]
    if record.termination in (Termination.VOID, Termination.ABORTED):
        return f"{record.result} {how}: {record.reason}"
    scores = ""
    if record.black_score is not None and record.white_score is not None:
        scores = f"{format_number(record.black_score)} - {format_number(record.white_score)}"
    if record.termination is Termination.NORMAL:
        if record.winner is None:
            return f"{record.result} draw, {scores} ({how})"
        margin = abs((record.black_score or 0) - (record.white_score or 0))
        winner = f"{side_name(record, record.winner)} ({record.winner})"
        return f"{record.result} {winner} wins by {format_number(margin)}, {scores} ({how})"
    loser_color = record.loser or (record.winner or WHITE).other
    loser = f"{side_name(record, loser_color)} ({loser_color})"
    reason = record.reason
    # The referee's reasons start with the offender ("white (greedy) took ..."): named already.
    for prefix in (f"{loser_color} ({side_name(record, loser_color)}) ", f"{loser_color} "):
        if reason.startswith(prefix):
            reason = reason.removeprefix(prefix)
            break
    if reason.startswith(how):
        how = ""
    detail = f"{how}: {reason}" if how else reason
    if record.winner is None:
        return f"{record.result} {loser} {detail}"
    winner = f"{side_name(record, record.winner)} ({record.winner})"
    return f"{record.result} {winner} wins: {loser} {detail}"


def format_game_header(number: int, total: int, black: str, white: str) -> str:
    return f"game {number}/{total}: {black} (black) vs {white} (white)"


def format_move(number: int, move: MoveRecord) -> str:
    """One move for `--show-moves` and `replay --moves`: number, side, move, time taken, clock after."""
    clock = f"  clock {format_ms(move.clock_ms)}" if move.clock_ms is not None else ""
    return f"{number:>4}. {move.color:<5} {move.move:<6} {format_ms(move.elapsed_ms):>8}{clock}"


def format_info(info: dict[str, object]) -> str:
    """A bot's info message, compactly: `depth 4 score 3.5 nodes 1200 pv d5d4 e4d4`."""
    parts = []
    for key, value in info.items():
        if key == "type" or value is None:
            continue
        shown = " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        parts.append(f"{key} {shown}")
    return " ".join(parts)


def format_infos(move: MoveRecord) -> list[str]:
    """A move's info lines for `--show-moves` and `replay --moves`, saying first how many were not kept."""
    lines = [f"        info ({move.infos_dropped} earlier infos not kept)"] if move.infos_dropped else []
    lines.extend(f"        info {format_info(info)}" for info in move.infos)
    return lines


@dataclass(frozen=True)
class BotTally:
    """One bot's match score: points (win 1, draw 1/2) over the scored games."""

    name: str
    points: float
    wins: int
    draws: int
    losses: int
    forfeits: int  # games this bot lost by a fault of its own


def tally(records: Sequence[GameRecord], name: str) -> BotTally:
    """The score of bot `name` over `records` (void and aborted games do not count)."""
    wins = draws = losses = forfeits = 0
    for record in records:
        if not record.termination.is_scored:
            continue
        color = "black" if record.black.name == name else "white" if record.white.name == name else None
        if color is None:
            continue
        if record.winner is None:
            draws += 1
        elif record.winner == color:
            wins += 1
        else:
            losses += 1
            forfeits += record.termination.is_forfeit
    return BotTally(name, wins + draws / 2, wins, draws, losses, forfeits)


def format_match_score(records: Sequence[GameRecord], first: str, second: str) -> str:
    """`match: random 0.5 - 1.5 greedy (2 games: 0 wins, 1 draw, 1 loss for random)`."""
    a, b = tally(records, first), tally(records, second)
    scored = a.wins + a.draws + a.losses
    unscored = sum(1 for r in records if not r.termination.is_scored)

    def plural(n: int, word: str) -> str:
        return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('s') else 's'}"

    details = f"{plural(a.wins, 'win')}, {plural(a.draws, 'draw')}, {plural(a.losses, 'loss')} for {first}"
    forfeits = [f"{t.name} forfeited {t.forfeits}" for t in (a, b) if t.forfeits]
    extra = "".join(f"; {f}" for f in forfeits)
    if unscored:
        extra += f"; {unscored} not scored (void or aborted)"
    return (
        f"match: {first} {format_number(a.points)} - {format_number(b.points)} {second}"
        f" ({plural(scored, 'game')}: {details}{extra})"
    )


class MatchDisplay:
    """Shows a match as it is played: a progress line per game, or every move with `show_moves`.

    On a terminal the progress line is redrawn in place (at most ten times a second); elsewhere
    (a pipe, a log, a test) only whole lines are written, one when a game starts and one when it ends.
    """

    def __init__(self, out: TextIO, *, show_moves: bool = False, live: bool | None = None) -> None:
        self.out = out
        self.show_moves = show_moves
        self.live = out.isatty() if live is None else live
        self._header = ""
        self._last_draw = 0.0
        self._drawn = False

    def game_started(self, number: int, total: int, black: str, white: str) -> None:
        self._header = format_game_header(number, total, black, white)
        if self.live and not self.show_moves:
            self._draw(f"{self._header}: starting")
        else:
            self._line(self._header)

    def move_played(self, move: MoveRecord, position: Position) -> None:
        number = len(position.history)
        if self.show_moves:
            self._line(format_move(number, move))
            for line in format_infos(move):
                self._line(line)
            return
        if not self.live:
            return
        now = time.monotonic()
        if now - self._last_draw < 0.1:
            return
        self._last_draw = now
        black, white = position.scores()
        self._draw(f"{self._header}: move {number}, board {black} - {white}, {move.color} {format_ms(move.elapsed_ms)}")

    def game_finished(self, number: int, record: GameRecord, path: Path | None) -> None:
        where = f"  [{path}]" if path is not None else ""
        prefix = self._header if (self.live and not self.show_moves) or not self._header else "  result"
        self._line(f"{prefix}: {describe_result(record)}{where}")
        if record.stderr_tail and record.termination.is_forfeit:
            self._line(f"  last lines of {side_name(record, record.loser or 'black')}'s stderr:")
            for line in record.stderr_tail[-10:]:
                self._line(f"    {line}")

    def pair_finished(self, games: int, pairs: tuple[int, ...], sprt: SprtStatus | None) -> None:
        # Only a match that runs the SPRT says where it stands after each pair; others sum up at the end.
        if sprt is not None:
            self._line(format_pair_progress(games, pairs, sprt))

    def message(self, text: str) -> None:
        self._line(text)

    def _draw(self, text: str) -> None:
        self.out.write(f"\r\x1b[K{printable(text)}")
        self.out.flush()
        self._drawn = True

    def _line(self, text: str) -> None:
        if self._drawn:
            self.out.write("\r\x1b[K")
            self._drawn = False
        self.out.write(printable(text) + "\n")
        self.out.flush()


MAX_LISTED_GAMES = 20
"""A longer match lists only the games that did not end on the board (an SPRT run can play thousands)."""


def format_match_report(records: Sequence[GameRecord], first: str, second: str) -> list[str]:
    """The end-of-match summary: each game's result with its reason and scores, then the match score.

    After more than `MAX_LISTED_GAMES` games only the forfeits, void and aborted games are listed
    (at most that many), since their reasons are what a person must read.
    """
    listed = list(enumerate(records, 1))
    lines = ["results:"]
    if len(records) > MAX_LISTED_GAMES:
        listed = [(n, r) for n, r in listed if r.termination is not Termination.NORMAL]
        ended = f"{len(listed)} did not end on the board:" if listed else "all ended on the board"
        lines = [f"results: {len(records)} games; {ended}"]
    for number, record in listed[:MAX_LISTED_GAMES]:
        lines.append(f"  {number}. {record.black.name} - {record.white.name}: {describe_result(record)}")
    if len(listed) > MAX_LISTED_GAMES:
        lines.append(f"  ... and {len(listed) - MAX_LISTED_GAMES} more")
    lines.append(format_match_score(records, first, second))
    cpu = off_turn_cpu_s(records)
    if cpu:
        shown = ", ".join(f"{name} {cpu[name]:.1f} s" for name in (first, second) if name in cpu)
        lines.append(f"CPU used during the opponent's turns (pondering, or taking its CPU): {shown}")
    return lines


def off_turn_cpu_s(records: Sequence[GameRecord]) -> dict[str, float]:
    """Per bot: CPU seconds its processes used during its opponents' turns, over the games that measured it."""
    totals: dict[str, float] = {}
    for record in records:
        for side in (record.black, record.white):
            if side.off_turn_cpu_ms is not None:
                totals[side.name] = totals.get(side.name, 0.0) + side.off_turn_cpu_ms / 1000
    return totals


def _signed(elo: float) -> str:
    text = f"{elo:+.1f}"
    return "+0.0" if text == "-0.0" else text


def format_elo(estimate: EloEstimate) -> str:
    """`+35.2 ± 41.0 (95%)`, `+240.8 (95%: +59.9 to +inf)`, or what stands in for it at a 0% or 100% score."""
    if estimate.score is None:
        return "none yet (no finished game pair)"
    if estimate.elo is None:
        return "+inf (every game won)" if estimate.score >= 1 else "-inf (every game lost)"
    lower, upper, margin = estimate.lower, estimate.upper, estimate.margin
    # Near 0% or 100% the interval is lopsided (the logistic curve flattens): then show its ends, not a ±.
    if (
        lower is None
        or upper is None
        or margin is None
        or abs((upper - estimate.elo) - (estimate.elo - lower)) > margin / 10
    ):
        low = "-inf" if lower is None else _signed(lower)
        high = "+inf" if upper is None else _signed(upper)
        return f"{_signed(estimate.elo)} (95%: {low} to {high})"
    return f"{_signed(estimate.elo)} ± {margin:.1f} (95%)"


def format_pairs(pairs: Sequence[int]) -> str:
    """The pentanomial for people: `pairs by points 0, ½, 1, 1½, 2: [0, 1, 5, 2, 4]` (the first bot's points)."""
    return f"pairs by points 0, ½, 1, 1½, 2: [{', '.join(str(count) for count in pairs)}]"


def format_sprt(status: SprtStatus) -> str:
    """`SPRT: LLR 1.23 (-2.94, 2.94) [0, 5]`: the LLR, its bounds, and the two hypotheses' Elo."""
    p = status.parameters
    return (
        f"SPRT: LLR {status.llr:.2f} ({status.lower_bound:.2f}, {status.upper_bound:.2f})"
        f" [{format_number(p.elo0)}, {format_number(p.elo1)}]"
    )


def format_verdict(status: SprtStatus, first: str, second: str, games: int) -> str:
    """What the SPRT concluded, in words, with its parameters."""
    p = status.parameters
    params = (
        f"(elo0 {format_number(p.elo0)}, elo1 {format_number(p.elo1)},"
        f" alpha {format_number(p.alpha)}, beta {format_number(p.beta)})"
    )
    if status.verdict is Verdict.H1:
        return f"H1 accepted: {first} is stronger than {second} by about {format_number(p.elo1)} Elo {params}"
    if status.verdict is Verdict.H0:
        return (
            f"H0 accepted: {first} is not stronger than {second} by {format_number(p.elo1)} Elo;"
            f" at most about {format_number(p.elo0)} {params}"
        )
    return f"SPRT inconclusive after {games} games {params}: play more games (--games) for a verdict"


def format_pair_progress(games: int, pairs: Sequence[int], sprt: SprtStatus | None) -> str:
    """The line after each game pair: `after 10 games: Elo +35.2 ± 41.0, pairs ..., SPRT: LLR ...`."""
    parts = [f"after {games} games: Elo {format_elo(elo_estimate(pairs, PENTANOMIAL_OUTCOMES))}", format_pairs(pairs)]
    if sprt is not None:
        parts.append(format_sprt(sprt))
    return "; ".join(parts)


def format_statistics(pairs: Sequence[int], sprt: SprtStatus | None, first: str, second: str) -> list[str]:
    """The end-of-match statistics: the Elo estimate over the finished pairs, then the SPRT and its verdict."""
    estimate = elo_estimate(pairs, PENTANOMIAL_OUTCOMES)
    n = sum(pairs)
    lines = [
        f"Elo of {first} over {second}: {format_elo(estimate)} from {n} game pair{'s' if n != 1 else ''};"
        f" {format_pairs(pairs)}"
    ]
    if sprt is not None:
        lines.append(format_sprt(sprt))
        lines.append(format_verdict(sprt, first, second, 2 * n))
    return lines
