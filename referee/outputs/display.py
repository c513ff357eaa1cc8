"""How games, matches and tournaments are shown to a person: progress while they run, statistics at the end.

The `format_*` and `describe_*` functions are pure (records and figures in, text out) so that matches and
tournaments print the same lines; `RunDisplay` is the small stateful part that turns the runner's events
into lines on a terminal or a log, redrawing one status line in place when the output is a terminal. The
statistics of a two-bot run are printed in the idiom of cutechess and fastchess
(`Score of A vs B: W - L - D [0.xxx] N`, Elo, nElo, LOS, draw ratio, pentanomial, LLR).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from protocol.rules import WHITE
from referee.outputs.terminal import printable
from referee.record import GameRecord, PlayedMove, Termination
from referee.stats.head_to_head import HeadToHead, SprtSummary
from referee.stats.sprt import EloEstimate

if TYPE_CHECKING:
    from referee.outputs.events import Event
    from referee.run.schedule import ScheduledGame

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
    if record.adjudicated is not None:  # scored normally, but not played out
        how = f"adjudicated: {record.adjudicated}"
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


def format_move(number: int, move: PlayedMove) -> str:
    """One move for `--show-moves` of `match` and `replay`: number, side, move, time taken, clock after."""
    clock = f"  clock {format_ms(move.clock_ms)}" if move.clock_ms is not None else ""
    return f"{number:>4}. {move.color:<5} {move.move:<6} {format_ms(move.elapsed_ms):>8}{clock}"


def format_info(info: dict[str, object]) -> str:
    """A bot's info message, compactly: `depth 4 score 3.5 nodes 1200 pv d5d4 e4d4`."""
    parts = []
    for key, value in info.items():
        if key == "type" or value is None:
            continue
        shown = " ".join(_value(v) for v in value) if isinstance(value, list) else _value(value)
        parts.append(f"{key} {shown}")
    return " ".join(parts)


def _value(value: object) -> str:
    """A value of a bot's info for people: floats rounded (no 7.955999999999997)."""
    return f"{round(value, 2):g}" if isinstance(value, float) else str(value)


def format_infos(move: PlayedMove) -> list[str]:
    """A move's info lines for `--show-moves` of `match` and `replay`, saying first how many were not kept."""
    lines = [f"        info ({move.infos_dropped} earlier infos not kept)"] if move.infos_dropped else []
    lines.extend(f"        info {format_info(info)}" for info in move.infos)
    return lines


def _signed(value: float, digits: int = 1) -> str:
    """`+12.3`, `-4.0`, and `+0.0` rather than `-0.0`."""
    text = f"{value:+.{digits}f}"
    return "+" + text[1:] if text.startswith("-") and float(text) == 0 else text


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
    if round(margin, 1) == 0:  # every pair scored the same: no spread to measure yet, not a certainty
        return f"{_signed(estimate.elo)} (no margin yet: every pair scored the same)"
    return f"{_signed(estimate.elo)} ± {margin:.1f} (95%)"


def format_pairs(pairs: Sequence[int]) -> str:
    """The pentanomial as fastchess prints it: `Ptnml(0-2): [0, 1, 5, 2, 4]` (pairs by the first bot's points)."""
    return f"Ptnml(0-2): [{', '.join(str(count) for count in pairs)}]"


def format_sprt(sprt: SprtSummary) -> str:
    """`LLR: 1.23 (-2.94, 2.94) [0, 5]`: the LLR, its bounds, and the two hypotheses tested."""
    return (
        f"LLR: {_signed(sprt.llr, 2).lstrip('+')} ({sprt.lower_bound:.2f}, {sprt.upper_bound:.2f})"
        f" [{format_number(sprt.elo0)}, {format_number(sprt.elo1)}]"
    )


def _elo(value: float) -> str:
    """An Elo bound as people write it: +5, -20, 0."""
    return "0" if value == 0 else f"{value:+g}"


def verdict_claim(sprt: SprtSummary, first: str, second: str) -> str | None:
    """What an accepted hypothesis says, naming the bounds tested, for any bounds: a regression test (0, 5), a
    non-regression test (-20, 0), a symmetric one (-5, 5). Never "stronger" where the claim is "not weaker"."""
    elo0, elo1 = sprt.elo0, sprt.elo1
    if sprt.verdict == "H1":
        if elo0 >= 0:
            return f"{first} is stronger than {second}: nearer {_elo(elo1)} Elo (H1) than {_elo(elo0)} (H0)"
        if elo1 <= 0:
            return (
                f"{first} is not weaker than {second} by {_elo(-elo0).lstrip('+')} Elo or more (not weaker than"
                f" {_elo(elo0)} Elo): nearer {_elo(elo1)} Elo (H1) than {_elo(elo0)} (H0); it is not shown to be"
                " stronger"
            )
        return f"{first} is stronger than {second}: nearer {_elo(elo1)} Elo (H1) than {_elo(elo0)} (H0)"
    if sprt.verdict == "H0":
        if elo1 <= 0 or elo0 < 0:
            return f"{first} is weaker than {second}: nearer {_elo(elo0)} Elo (H0) than {_elo(elo1)} (H1)"
        return f"{first} is not shown to be stronger than {second}: nearer {_elo(elo0)} Elo (H0) than {_elo(elo1)} (H1)"
    return None


def format_verdict(sprt: SprtSummary, first: str, second: str, games: int, *, ended: str = "completed") -> str:
    """What the SPRT concluded, in words: which hypothesis the data favour, never an Elo it did not measure.

    Without a verdict, what to do depends on how the run ended: stopped (Ctrl-C) it resumes with the same
    command; with every game played, more games (--games) let the test go on."""
    hypotheses = (
        f"H0: {_elo(sprt.elo0)} Elo, H1: {_elo(sprt.elo1)} Elo for {first};"
        f" alpha {format_number(sprt.alpha)}, beta {format_number(sprt.beta)}"
    )
    claim = verdict_claim(sprt, first, second)
    if claim is not None:
        return f"SPRT: {sprt.verdict} accepted after {games} games ({hypotheses}): {claim}"
    if ended == "running":
        return f"SPRT: no verdict yet after {games} games ({hypotheses})"
    if ended in ("interrupted", "error", "incomplete"):
        return f"SPRT: no verdict yet after {games} games ({hypotheses}): the test goes on when the run is resumed"
    return (
        f"SPRT: no verdict after {games} games ({hypotheses}): every game was played; raise --games and run the"
        " same command to let the test go on"
    )


def format_score(h: HeadToHead) -> str:
    """`Score of A vs B: 12 - 3 - 1  [0.781] 16`, as cutechess prints it (wins - losses - draws of A)."""
    score = h.score if h.score is not None else 0.0
    return f"Score of {h.first} vs {h.second}: {h.wins} - {h.losses} - {h.draws}  [{score:.3f}] {h.games}"


def format_statistics(h: HeadToHead) -> list[str]:
    """The statistics block after each game pair and at the end, in the idiom of cutechess and fastchess."""
    n = sum(h.pentanomial)
    label = "Elo (plain estimate; an SPRT stops early, so it tends to overstate)" if h.sprt else "Elo"
    elo = format_elo(EloEstimate(h.score if n else None, h.elo, h.elo_lower, h.elo_upper))
    nelo = "-" if h.nelo is None or h.nelo_margin is None else f"{_signed(h.nelo)} ± {h.nelo_margin:.1f}"
    los = "-" if h.los is None else f"{100 * h.los:.2f} %"
    draws = "-" if h.draw_ratio is None else f"{100 * h.draw_ratio:.2f} %"
    lines = [
        format_score(h),
        f"{label}: {elo}, nElo: {nelo}",
        f"LOS: {los}, DrawRatio: {draws}, {format_pairs(h.pentanomial)} from {n} game pair{'s' if n != 1 else ''}",
    ]
    if h.sprt is not None:
        lines.append(format_sprt(h.sprt))
    return lines


def _duration(seconds: float) -> str:
    """Wall time as people read it: 0:42, 12:05, 1:02:09."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


SUMMARY_INTERVAL_S = 30.0
"""Output to a file or a pipe (no status line redrawn in place) gets a progress line this often."""
REPORTS_PER_RUN = 50
"""By default a two-bot run prints its statistics about this many times (every pair up to 100 games): a
4,000-game SPRT prints ~50 blocks, not 2,000 (cutechess's -ratinginterval, fastchess's -ratinginterval)."""
LINE_PER_GAME_UP_TO = 200
"""Runs of up to this many games print a line per game; longer ones only the games worth a look (forfeits, void
games), the progress riding on the statistics blocks and the status line."""


def report_interval(games_total: int) -> int:
    """The default of --report-every: the statistics every N game pairs, about REPORTS_PER_RUN times a run."""
    return max(1, round(games_total / 2 / REPORTS_PER_RUN))


class RunDisplay:
    """Progress of a match or a tournament: a line per finished game, the statistics after every game pair of a
    two-bot run, and on a terminal a status line (games done, elapsed and remaining time, the leader) redrawn
    in place below them. With `show_moves`, every move of every game, prefixed by its game id."""

    def __init__(
        self,
        out: TextIO,
        *,
        live: bool | None = None,
        show_moves: bool = False,
        report_every: int | None = None,
        quiet: bool = False,
        title: str | None = None,
    ) -> None:
        self.out = out
        self.live = out.isatty() if live is None else live
        self.show_moves = show_moves
        self.report_every = report_every  # None: report_interval(the run's games)
        self.quiet = quiet
        self.title = title
        self._start = time.monotonic()
        self._done_at_start = 0
        self._done = 0
        self._total = 0
        self._leader = ""
        self._last_summary: float = time.monotonic()  # the last progress line (output not a terminal)
        self._playing: dict[int, str] = {}
        self._drawn = False
        self._host = ""  # while a busy host holds the run back: its status

    def __call__(self, event: Event) -> None:
        from referee.timing.clock import describe_time_control

        if event.type == "run_started":
            self._start = time.monotonic()
            self._done_at_start = self._done = event.games_done
            self._total = event.games_total
            size = f"{event.width}x{event.height}"
            resumed = f", {event.games_done} already played" if event.games_done else ""
            what = f"{event.format}, " if event.kind == "tournament" else ""
            if self.report_every is None:
                self.report_every = report_interval(event.games_total)
            title = f"{self.title} — " if self.title else ""
            self._line(
                f"{title}{event.kind}: {', '.join(event.bots)}; {what}{event.games_total} games{resumed}; {size} board,"
                f" komi {format_number(event.komi)}, time control {describe_time_control(event.time_control)};"
                f" {event.concurrency} at once; output in {event.out_dir}"
            )
        elif event.type == "notice":
            self._line(event.text)
        elif event.type == "game_started":
            self._playing[event.number] = f"{event.black}-{event.white}"
            self._status()
        elif event.type == "game_finished":
            self._playing.pop(event.number, None)
            self._done = event.games_done
            text = f"game {event.number} {event.black} (black) - {event.white} (white): {event.result} {event.reason}"
            notable = not event.scored or event.termination.is_forfeit
            if notable or (not self.quiet and self._total <= LINE_PER_GAME_UP_TO):
                if not event.scored:
                    self._line(f"{text} [not scored: it is played again]")
                else:
                    self._line(f"[{event.games_done}/{event.games_total}] {text}")
                if event.stderr_tail:
                    self._line("  the offender's last lines of stderr:")
                    for line in event.stderr_tail:
                        self._line(f"    {line}")
                if event.stderr_log:
                    self._line(f"  its log: {event.stderr_log}")
            self._status()
        elif event.type == "statistics_updated":
            pairs = sum(event.statistics.pentanomial)
            decided = event.statistics.sprt is not None and event.statistics.sprt.verdict is not None
            if not self.quiet and (decided or pairs % (self.report_every or 1) == 0):
                if self._total > LINE_PER_GAME_UP_TO:  # no line per game: say where the run is
                    self._line(f"[{event.games_done}/{self._total}] after {pairs} game pairs:")
                for line in format_statistics(event.statistics):
                    self._line(f"  {line}")
        elif event.type == "standings_updated" and event.standings:
            top = event.standings[0]
            score = f" ({100 * top.points / top.games:.1f}%)" if top.games else ""
            self._leader = f"{top.name} {format_number(top.points)}/{top.games}{score}"
            self._status()
        elif event.type == "host_busy":
            self._host = event.status if event.games_at_once < event.concurrency or event.paused else ""
            self._line(event.status)
        elif event.type == "run_finished":
            self._total = 0  # no more status lines
            self._clear()

    def moves_played(self, game: ScheduledGame, moves: Sequence[tuple[PlayedMove, int]]) -> None:
        """`--show-moves`: one line per move (and its infos), prefixed by the game id; each move with its number."""
        if not self.show_moves:
            return
        for move, ply in moves:
            self._line(f"{game.game_id} {format_move(ply, move)}")
            for line in format_infos(move):
                self._line(f"{game.game_id} {line}")

    def message(self, text: str) -> None:
        self._line(text)

    def tick(self) -> None:
        """Called every second: on a terminal, redraw the status line (elapsed time moves during long games);
        otherwise (output to a file or a pipe) write it as a line of its own every SUMMARY_INTERVAL_S."""
        if self.live:
            self._status()
        elif self._total and time.monotonic() - self._last_summary >= SUMMARY_INTERVAL_S:
            self._last_summary = time.monotonic()
            self.out.write(f"progress: {printable(self._status_text())}\n")
            self.out.flush()

    def _status(self) -> None:
        if not self.live or not self._total:
            return
        # Wider than the terminal, the line would wrap and \r could not redraw it in place.
        width = shutil.get_terminal_size().columns - 1
        self.out.write(f"\r\x1b[K{printable(self._status_text())[:width]}")
        self.out.flush()
        self._drawn = True

    def _status_text(self) -> str:
        """Games done, elapsed and estimated remaining time, the leader with its score, the games in play."""
        elapsed = time.monotonic() - self._start
        played = self._done - self._done_at_start
        left = self._total - self._done
        eta = f"~{_duration(elapsed / played * left)} left" if played else "estimating time left"
        leader = f", leader {self._leader}" if self._leader else ""
        text = f"{self._done}/{self._total} games, {_duration(elapsed)} elapsed, {eta}{leader}"
        if self._host:
            text += f"; {self._host}"
        if self._playing:
            text += f"; playing {', '.join(self._playing.values())}"
        return text

    def _clear(self) -> None:
        if self._drawn:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self._drawn = False

    def _line(self, text: str) -> None:
        self._clear()
        self.out.write(printable(text) + "\n")
        self.out.flush()
        self._status()
