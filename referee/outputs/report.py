"""The HTML report of a match or tournament: one self-contained file with the head-to-head, standings, charts and
a game viewer.

`alternator report OUT_DIR` (and the end of every match and tournament) writes `report.html`: every script,
style and datum inline, so the file opens anywhere, offline, forever, and makes no network request. The run is
read through the one reader (`referee.run.rundir`), one game at a time in commit order, as its viewer line
(referee/outputs/viewerline.py: moves, times and infos in one compact JSON line, kept beside the record in the
database since the game was saved); the lines are deflated 64 games to a chunk and written out at once, while
`RunFigures` keeps only what the tables and charts need (a few bytes a game, and a time per move), so a
50,000-game run is reported in bounded memory (~100 MB) in seconds. The summary (head-to-head, standings,
crosstable, LOS, progress, the SPRT's curve, the list of games) is one JSON object parsed at load; a game's
line is parsed only when the game is opened. The viewer replays the moves with a port of the rules
(assets/viewer.js) and checks its final scores against the record's. `alternator serve` (referee/outputs/serve.py)
feeds a `RunFigures` with the games committed since its last look and serves the same page live.

Every figure is computed by the functions the runner uses: the standings by `referee.stats.standings`,
the head-to-head (Score, Elo, nElo, LOS, draw ratio, pentanomial) and the SPRT by `referee.stats.sprt.PairCounter`
fed the games in commit order, published by `referee.stats.head_to_head.head_to_head`: so the page shows the
numbers of the terminal and `match.json`.
"""

from __future__ import annotations

import base64
import gc
import json
import math
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from itertools import compress
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from referee.outputs.display import format_statistics, format_verdict
from referee.outputs.viewerline import figures_of, game_line, numbered
from referee.record import GameRecord, Termination
from referee.run.rundir import RunDirectory, RunReadError, ScoredRow, counted_game, first_line, format_summary_of
from referee.stats.head_to_head import head_to_head
from referee.stats.sprt import PairCounter
from referee.stats.standings import ColourRecord, ScoredGame, StandingsTally, elo_notes
from referee.timing.clock import describe_time_control

REPORT_FILE = "report.html"
# Elo over the games is refitted at this many points of the run at most (each fit is a Newton solve).
PROGRESS_POINTS = 40
_LEVEL = 3  # zlib level of the chunks: level 6 is 12% smaller but takes a third of the report's time
CHUNK_GAMES = 64  # games per deflated chunk of details: opening a game inflates 64 games' data
SCORE_POINTS = 500  # the score % chart: a 10,000-game run needs no more points than the chart has pixels
LLR_POINTS = 2000  # the LLR chart: at most this many points (the last is always the runner's last LLR)
_ASSETS = ("report.css", "viewer.js", "report.js")


class ReportError(Exception):
    """The output directory cannot be reported on; the message says why and what to do."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while thousands of records are read or turned into the page.

    Records are freed by reference counting as soon as their line is written; the collector would only walk
    the surviving figures again and again for nothing (it made reading 2,000 records five times slower).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_run(out_dir: Path, *, kind: str | None = None) -> RunDirectory:
    """The run in `out_dir`, opened for reading; ReportError when it holds none. Close it when done."""
    try:
        return RunDirectory.open(out_dir, kind=kind)
    except RunReadError as error:
        raise ReportError(str(error)) from None


# --- the figures the page shows -------------------------------------------------------------------------------


def los(wins: int, losses: int) -> float | None:
    """Likelihood of superiority from decisive games (draws carry no information): P(stronger). The crosstable's
    pairwise LOS of a tournament (trinomial); two-bot runs show the head-to-head's pentanomial LOS."""
    if wins + losses == 0:
        return None
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, digits) + 0.0


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else _round(ms / 1000, 2)


def _marks(n: int, count: int) -> list[int]:
    """Up to `count` game counts spread evenly over 1..n, n included."""
    return sorted({max(1, round(n * k / count)) for k in range(1, count + 1)}) if n else []


class _Timing:
    """One bot's time per move, CPU and the referee's lateness, summed as games come.

    The times per move are counted by value (tenths of a millisecond, as the viewer lines have them): the mean,
    the 95th percentile and the maximum come out exact, and the memory grows with the distinct times, not with
    the moves (a 100,000-game run holds millions of moves, but a few thousand distinct times)."""

    def __init__(self) -> None:
        self.elapsed: Counter[int] = Counter()
        self.cpu_on: float | None = None
        self.cpu_off: float | None = None
        self.lag_sum = 0.0
        self.lag_count = 0

    def row(self) -> dict[str, Any]:
        n = self.elapsed.total()
        values = sorted(self.elapsed.items())
        p95 = None
        if n:
            wanted, seen = min(n - 1, int(0.95 * n)), 0
            for value, count in values:
                seen += count
                if seen > wanted:
                    p95 = value
                    break
        total = sum(value * count for value, count in values)
        return {
            "moves": n,
            "msMean": _round(total / n / 10, 2) if n else None,
            "msP95": _round(p95 / 10, 1) if p95 is not None else None,
            "msMax": _round(values[-1][0] / 10, 1) if n else None,
            "cpuS": _seconds(self.cpu_on),
            "offCpuS": _seconds(self.cpu_off),
            "lagMs": _round(self.lag_sum / self.lag_count, 3) if self.lag_count else None,
        }


class _Checkpoints:
    """Figures taken every `step` games, at most `2 * points` of them kept: past that, every other one is dropped
    and the step doubled. So a run of any length is drawn from a bounded number of points, taken as it goes."""

    def __init__(self, points: int) -> None:
        self.points = points
        self.step = 1
        self.at: list[int] = []
        self.values: list[dict[str, float | None]] = []

    def due(self, n: int) -> bool:
        return n % self.step == 0

    def take(self, n: int, values: dict[str, float | None]) -> None:
        self.at.append(n)
        self.values.append(values)
        if len(self.at) > 2 * self.points:
            self.step *= 2
            kept = [i for i, mark in enumerate(self.at) if mark % self.step == 0]
            self.at = [self.at[i] for i in kept]
            self.values = [self.values[i] for i in kept]

    def series(
        self, names: list[str], n: int, last: Callable[[], dict[str, float | None]]
    ) -> tuple[list[int], dict[str, list[float | None]]]:
        """The marks and each bot's value at them, the last mark the current count `n` (its values from `last`)."""
        at, values = list(self.at), list(self.values)
        if n and (not at or at[-1] != n):
            at.append(n)
            values.append(last())
        return at, {name: [point.get(name) for point in values] for name in names}


class RunFigures:
    """Everything the page shows but the games' details, built one game at a time in commit order (`add`).

    Holds per bot and per pair of bots what the tables need (counts, the times per move by value), never a
    record. `keep_games` (the report): also the list of games (a few bytes each), which the page embeds, and
    each game's result, from which the progress charts are drawn at evenly spread points. Without it (the live
    view, which pages the list from the database: `/api/games`), nothing is kept per game: the progress is
    taken as the games come, at a bounded number of points, so the memory stays flat however long the run.
    """

    def __init__(self, run: RunDirectory, *, keep_games: bool = True) -> None:
        self.run = run
        self.keep_games = keep_games
        self.bots: list[str] = list(run.bots)
        self._index = {name: i for i, name in enumerate(self.bots)}
        self.rows: list[list[Any]] = []
        self.results: list[ScoredGame] = []
        self._count = 0
        self._scored = 0  # games between two bots (a bot never plays itself: those are not in the standings)
        self._tally = StandingsTally()
        self._pairs: dict[tuple[str, str], list[int]] = {}  # (bot, opponent) -> [wins, draws, losses]
        self._points: dict[str, float] = {}
        self._games: dict[str, int] = {}
        self._score_marks = _Checkpoints(SCORE_POINTS)
        self._elo_marks = _Checkpoints(PROGRESS_POINTS)
        self._elo_tally = StandingsTally(warm_start=True)
        self.terminations: Counter[str] = Counter()
        self._timing: dict[str, _Timing] = {}
        self.counter = PairCounter(run.sprt) if run.two_bots else None
        self.settings: dict[str, Any] | None = None
        self.ended = "completed"  # how the run ended, for the verdict's advice ("running" on the live page)
        self.anchor = run.anchor  # the rating scale: the run's --anchor, or one given to `report`/`serve`
        if self.anchor is not None and self.anchor.name not in self.bots:
            run.errors.append(f"the anchor {self.anchor.name!r} is not one of the bots: ratings relative to the mean")
            self.anchor = None

    @property
    def count(self) -> int:
        return self._count

    def add(self, row: ScoredRow, line: dict[str, Any]) -> None:
        """Count one game (the next in commit order), from its viewer line (referee.outputs.viewerline)."""
        self._count += 1
        for name in (row.black, row.white):
            if name not in self._index:
                self._index[name] = len(self.bots)
                self.bots.append(name)
        self.terminations[str(line["x"])] += 1
        if self.keep_games:
            self.rows.append(game_row(self._count, line, self._index))
        if row.black != row.white:
            self._add_result(ScoredGame(row.black, row.white, row.result, row.termination))
        if self.counter is not None and self.bots[:2] == self.run.bots[:2]:
            self.counter.add(counted_game(row, self.run.bots[0]))
        if self.settings is None:
            self.settings = {"size": f"{line['W']}x{line['H']}", "komi": line["k"], "tc": line["tc"]}
        self._add_timing(line)

    def _add_result(self, result: ScoredGame) -> None:
        self._scored += 1
        self._tally.add(result)
        loser = result.loser
        for me, other in ((result.black, result.white), (result.white, result.black)):
            cell = self._pairs.setdefault((me, other), [0, 0, 0])
            cell[0 if loser == other else 2 if loser == me else 1] += 1
        if self.keep_games:  # the report draws its progress from these, at evenly spread points
            self.results.append(result)
            return
        black_points = result.black_points
        for name, points in ((result.black, black_points), (result.white, 1.0 - black_points)):
            self._points[name] = self._points.get(name, 0.0) + points
            self._games[name] = self._games.get(name, 0) + 1
        self._elo_tally.add(result)
        n = self._scored
        if self._score_marks.due(n):
            self._score_marks.take(n, self._score_now())
        if self._elo_marks.due(n):
            self._elo_marks.take(n, self._elo_now())

    def _score_now(self) -> dict[str, float | None]:
        return {name: round(100 * self._points[name] / games, 1) for name, games in self._games.items() if games}

    def _elo_now(self) -> dict[str, float | None]:
        fitted = self._elo_tally.standings(self.bots, anchor=self.anchor)
        # Before the anchor has played, the ratings are on another scale (the field mean's): no point then.
        on_scale = self.anchor is None or fitted.anchor is not None
        return {bot.name: _round(bot.elo, 1) if on_scale else None for bot in fitted.bots}

    def add_text(self, row: ScoredRow, text: str) -> str:
        """Count one game from its stored viewer line; the line with its number, for the page."""
        self.add(row, figures_of(text))
        return numbered(self.count, text)

    def _add_timing(self, line: dict[str, Any]) -> None:
        colours = line["c"]  # "b" for each of Black's moves, "w" for each of White's
        for color, name, cpu, off in (("b", line["b"], line.get("bc"), line.get("bo")),
                                      ("w", line["w"], line.get("wc"), line.get("wo"))):  # fmt: skip
            timing = self._timing.get(name)
            if timing is None:
                timing = self._timing[name] = _Timing()
            if cpu is not None:
                timing.cpu_on = (timing.cpu_on or 0.0) + cpu
            if off is not None:
                timing.cpu_off = (timing.cpu_off or 0.0) + off
            timing.elapsed.update(compress(line["t"], map(color.__eq__, colours)))  # in C: no Python step per move
            lags = [lag for lag in compress(line.get("lt") or (), map(color.__eq__, colours)) if lag is not None]
            if lags:
                timing.lag_sum += sum(lags) / 1000
                timing.lag_count += len(lags)

    # -- the summary -----------------------------------------------------------------------------------

    def summary(self, *, live: bool = False, finished: bool = True) -> dict[str, Any]:
        """The summary object the page parses at load. `finished`: the run is over (the live page says so)."""
        self.ended = "running" if not finished else self._ended()
        return {
            "kind": self.run.kind,
            "title": title_of(self.run),
            "outDir": str(self.run.out_dir),
            "generated": datetime.now(UTC).isoformat(timespec="seconds"),
            "live": live,
            "finished": finished,
            "settings": self.settings or self._planned_settings(),
            "bots": self.bots,
            "terminations": TERMINATIONS,
            "headToHead": self.head_to_head(),
            "standings": self.standings(),
            "format": format_summary_of(self.run.out_dir),
            "progress": self.progress(),
            "games": self.rows,  # the report's list; the live view pages it from /api/games instead
            "gameCount": self.count,
            "terminationsUsed": sorted(self.terminations),
            "total": self.run.total(),
            "errors": self.run.errors,
        }

    def _ended(self) -> str:
        """How the run ended, for the verdict's advice: match.json says; else games left make it incomplete."""
        said = (self.run.match_summary or {}).get("ended")
        if isinstance(said, str):
            return said
        total = self.run.total()
        return "incomplete" if total is not None and self.count < total else "completed"

    def _planned_settings(self) -> dict[str, Any] | None:
        planned = self.run.settings
        if "size" not in planned:
            return None
        from protocol.messages import TimeControl

        control = TimeControl.model_validate(planned["time_control"]) if "time_control" in planned else None
        return {
            "size": str(planned["size"]),
            "komi": planned.get("komi", 0),
            "tc": describe_time_control(control) if control else "",
        }

    def head_to_head(self) -> dict[str, Any] | None:
        """Two-bot runs: the first bot against the second as the runner counted it (match.json's figures), and
        the LLR after every counted pair."""
        if self.counter is None:
            return None
        first, second = self.run.bots[:2]
        statistics = head_to_head(first, second, self.counter.statistics())
        figures = statistics.model_dump(mode="json")
        # The terminal's own lines (referee.outputs.display), so the page reads exactly as the run printed it.
        figures["lines"] = format_statistics(statistics)
        figures["verdict"] = (
            format_verdict(statistics.sprt, first, second, statistics.games, ended=self.ended)
            if statistics.sprt is not None
            else None
        )
        history = self.counter.llr_history
        step = max(1, math.ceil(len(history) / LLR_POINTS))
        at = [*range(step, len(history) + 1, step)]
        if history and (not at or at[-1] != len(history)):
            at.append(len(history))
        figures["llrAt"] = at
        figures["llrCurve"] = [round(history[i - 1], 4) for i in at]
        return figures

    def standings(self) -> dict[str, Any]:
        """Standings, per-pair W-D-L, LOS and per-bot timing figures: the tables of the page."""
        names = self.bots
        standings = self._tally.standings(names, anchor=self.anchor)
        pair = {a: {b: self._pairs.get((a, b), [0, 0, 0]) for b in names if b != a} for a in names}
        rows = []
        for bot in standings.bots:
            rows.append(
                {
                    "rank": bot.rank,
                    "name": bot.name,
                    "games": bot.games,
                    "w": bot.wins,
                    "d": bot.draws,
                    "l": bot.losses,
                    "points": bot.points,
                    "pct": _round(bot.score_pct, 1),
                    "elo": _round(bot.elo, 1),
                    "margin": _round(bot.elo_margin, 1),
                    "asBlack": _colour(bot.as_black),
                    "asWhite": _colour(bot.as_white),
                    "lossKinds": {k: v for k, v in bot.losses_by_kind.items() if v},
                    **self._timing.get(bot.name, _Timing()).row(),
                }
            )
        order = [bot.name for bot in standings.bots]
        los_matrix = {a: {b: _round(los(pair[a][b][0], pair[a][b][2]), 3) for b in order if b != a} for a in order}
        return {
            "rows": rows,
            "order": order,
            "pairs": {a: {b: pair[a][b] for b in order if b != a} for a in order},
            "los": los_matrix,
            "totals": standings.totals.model_dump(),
            # The fit's own figures, and the terminal's words for them (referee.stats.standings.elo_notes).
            "firstMove": [_round(standings.first_move_elo, 1), _round(standings.first_move_margin, 1)],
            "drawNu": _round(standings.draw_nu, 4),
            "drawPctEqual": _round(standings.draw_pct_equal, 1),
            "anchor": None if standings.anchor is None else standings.anchor.model_dump(),
            "eloNotes": elo_notes(standings),
        }

    def progress(self) -> dict[str, Any]:
        """Each bot's score % over the run (at up to SCORE_POINTS points) and its Elo (at up to PROGRESS_POINTS)."""
        names = self.bots
        anchor = self.anchor
        band = [0, "field mean"] if anchor is None else [anchor.rating, f"{anchor.name} (anchor)"]
        if not self.keep_games:  # taken as the games came (at most twice as many points, the last one now)
            taken_at, score_series = self._score_marks.series(names, self._scored, self._score_now)
            fitted_at, elo_series = self._elo_marks.series(names, self._scored, self._elo_now)
            return {"scoreAt": taken_at, "score": score_series, "eloAt": fitted_at, "elo": elo_series, "eloBand": band}
        n = len(self.results)
        score_marks = set(_marks(n, SCORE_POINTS))
        points = dict.fromkeys(names, 0.0)
        games = dict.fromkeys(names, 0)
        score_at: list[int] = []
        score: dict[str, list[float | None]] = {name: [] for name in names}
        for done, result in enumerate(self.results, start=1):
            black_points = result.black_points
            for name, pts in ((result.black, black_points), (result.white, 1.0 - black_points)):
                points[name] += pts
                games[name] += 1
            if done in score_marks:
                score_at.append(done)
                for name in names:
                    score[name].append(round(100 * points[name] / games[name], 1) if games[name] else None)
        elo_at = _marks(n, PROGRESS_POINTS)
        elo: dict[str, list[float | None]] = {name: [] for name in names}
        tally, counted = StandingsTally(warm_start=True), 0  # each fit starts from the last: a few Newton steps
        for mark in elo_at:
            for result in self.results[counted:mark]:
                tally.add(result)
            counted = mark
            fitted = tally.standings(names, anchor=self.anchor)
            # Before the anchor has played, the ratings are on another scale (the field mean's): no point then.
            on_scale = self.anchor is None or fitted.anchor is not None
            by_name = {bot.name: bot.elo if on_scale else None for bot in fitted.bots}
            for name in names:
                elo[name].append(_round(by_name.get(name), 1))
        # eloBand: where the Elo chart draws its reference line: the field mean (0), or the anchor's rating.
        return {"scoreAt": score_at, "score": score, "eloAt": elo_at, "elo": elo, "eloBand": band}


def _colour(record: ColourRecord | None) -> list[int] | None:
    """[wins, draws, losses] with one colour (null: not known)."""
    return None if record is None else [record.wins, record.draws, record.losses]


def title_of(run: RunDirectory) -> str:
    """The event's title (--title), else what the run is: `new vs base`, `tournament of a, b, c`."""
    if run.title:
        return run.title
    if run.kind == "match":
        return " vs ".join(run.bots)
    shown = ", ".join(run.bots[:6]) + (f" and {len(run.bots) - 6} more" if len(run.bots) > 6 else "")
    return f"tournament of {shown}" if shown else f"tournament in {run.out_dir.name}"


TERMINATIONS = [str(t) for t in Termination]
_RESULT_CODE = {"1-0": 0, "0-1": 1, "1/2-1/2": 2, "*": 3}


def game_row(number: int, line: dict[str, Any], bot_index: dict[str, int]) -> list[Any]:
    """One game in the list, from its viewer line: [number, black, white, result code, termination, moves (the
    opening included), black score, white score]."""
    moves = (len(line["o"].split()) if line["o"] else 0) + (len(line["m"].split()) if line["m"] else 0)
    return [
        number,
        bot_index[line["b"]],
        bot_index[line["w"]],
        _RESULT_CODE[line["r"]],
        TERMINATIONS.index(line["x"]),
        moves,
        line["bs"],
        line["ws"],
    ]


class GameListEntry(BaseModel):
    """One finished game in the list of games."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(description="Its number in commit order (from 1): /api/game/N gives its moves.")
    black: str = Field(description="The bot that played Black.")
    white: str = Field(description="The bot that played White.")
    result: Literal["1-0", "0-1", "1/2-1/2"] = Field(description="1-0: Black won; 0-1: White won.")
    termination: str = Field(description="How it ended (normal, or the forfeit's kind: time, illegal_move, ...).")
    moves: int = Field(description="Moves played, the opening's included.")
    blackScore: float | None = Field(description="Black's score on the board (null: not scored).")
    whiteScore: float | None = Field(description="White's score on the board, komi included.")


class GamesPage(BaseModel):
    """One page of the finished games in commit order, filtered."""

    model_config = ConfigDict(extra="forbid")

    offset: int = Field(description="How many matching games come before this page.")
    limit: int = Field(description="The most games a page holds (as asked, 100 by default).")
    total: int = Field(description="How many finished games match the filters.")
    games: list[GameListEntry] = Field(description="The page's games, in commit order.")


def games_page_schema() -> dict[str, Any]:
    """The published JSON Schema of `GET /api/games` of `alternator serve`."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Alternator live view: a page of the games v1",
        "description": "GET /api/games?offset=0&limit=100[&bot=NAME][&result=1-0|0-1|1/2-1/2][&termination=KIND] of"
        " `alternator serve`: the finished games matching the filters, in commit order, a page at a time (at most"
        " 500 a page).",
        **{k: v for k, v in GamesPage.model_json_schema().items() if k not in ("title", "description")},
    }


def games_page(
    run: RunDirectory,
    offset: int,
    limit: int,
    *,
    bot: str | None = None,
    result: str | None = None,
    termination: str | None = None,
) -> GamesPage:
    """One page of `run`'s finished games (referee.run.rundir.RunDirectory.page): only the page's lines are read."""
    total, rows = run.page(offset, limit, bot=bot, result=result, termination=termination)
    games = []
    for number, text in rows:
        line = json.loads(text)
        moves = (len(line["o"].split()) if line["o"] else 0) + (len(line["m"].split()) if line["m"] else 0)
        games.append(
            GameListEntry(
                n=number,
                black=line["b"],
                white=line["w"],
                result=line["r"],
                termination=line["x"],
                moves=moves,
                blackScore=line["bs"],
                whiteScore=line["ws"],
            )
        )
    return GamesPage(offset=offset, limit=limit, total=total, games=games)


def game_detail(number: int, record: GameRecord) -> dict[str, Any]:
    """Everything the viewer needs for one game (its viewer line, referee.outputs.viewerline), with its number."""
    return {"n": number, **game_line(record)}


def _safe_json(value: Any) -> str:
    """JSON that cannot end the <script> element it sits in (no '<' at all) nor break a line."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def asset(name: str) -> str:
    """An asset file's text (referee/assets/...)."""
    return resources.files("referee").joinpath("assets", name).read_text(encoding="utf-8")


def encode_chunks(details: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The games' details (dicts), CHUNK_GAMES at a time: JSON lines, deflated (zlib), in base64."""
    return encode_lines(
        json.dumps(detail, separators=(",", ":"), ensure_ascii=False, allow_nan=False) for detail in details
    )


def encode_lines(lines: Iterable[str]) -> Iterator[str]:
    """The games' lines of JSON, CHUNK_GAMES at a time: deflated (zlib), in base64.

    JSON of moves and times deflates to about a fifth; the page inflates only the chunk of the game opened
    (DecompressionStream), so neither the file's size nor the time to open grows with every game's detail.
    """
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == CHUNK_GAMES:
            yield _deflate("\n".join(chunk))
            chunk = []
    if chunk:
        yield _deflate("\n".join(chunk))


def _deflate(text: str) -> str:
    return base64.b64encode(zlib.compress(text.encode("utf-8"), _LEVEL)).decode("ascii")


def decode_chunks(text: str) -> list[dict[str, Any]]:
    """The details `encode_chunks` wrote (for tests and tools)."""
    details: list[dict[str, Any]] = []
    for chunk in text.split("\n"):
        if chunk:
            inflated = zlib.decompress(base64.b64decode(chunk)).decode("utf-8")
            details += [json.loads(line) for line in inflated.split("\n")]
    return details


def page_head(title: str, *, live: bool) -> str:
    css = asset("report.css")
    heading = _escape(f"Alternator {'live: ' if live else ''}{title}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        # No request of any kind, even by mistake: the page itself forbids everything but inline code.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'unsafe-inline'; img-src data:{'; connect-src ' + chr(39) + 'self' + chr(39) if live else ''}\">\n"
        f"<title>{heading}</title>\n<style>{css}</style>\n</head><body>\n"
    )


def page_tail(summary: dict[str, Any]) -> str:
    viewer, report = asset("viewer.js"), asset("report.js")
    return (
        f'<script type="application/json" id="summary">{_safe_json(summary)}</script>\n'
        f"<script>{viewer}</script>\n<script>{report}</script>\n</body></html>\n"
    )


def render_page(summary: dict[str, Any], details: Iterable[dict[str, Any]] | None, *, live: bool = False) -> str:
    """The whole HTML page: styles, scripts and data inline. `details`: one per game (None: fetched live)."""
    chunks = "\n".join(encode_chunks(details)) if details is not None else ""
    return "".join(
        (
            page_head(summary["title"], live=live),
            f'<script type="text/plain" id="game-data" data-chunk="{CHUNK_GAMES}">{chunks}</script>\n',
            page_tail(summary),
        )
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def report_pieces(run: RunDirectory, *, compare: bool = True) -> Iterator[str]:
    """The report page of a run, in pieces: the games' chunks are written as they are read, so the page of any
    number of games is built in bounded memory. The summary comes last (it needs every game). `compare`: check
    games.jsonl against the database's digests first (`RunDirectory.check_games_file`; the end of a run, which
    has just compared the two copies whole, does not again)."""
    figures = RunFigures(run)
    with gc_paused():
        yield page_head(title_of(run), live=False)
        yield f'<script type="text/plain" id="game-data" data-chunk="{CHUNK_GAMES}">'
        first = True
        for chunk in encode_lines(figures.add_text(row, text) for row, text in run.lines()):
            yield chunk if first else "\n" + chunk
            first = False
        yield "</script>\n"
        if compare:
            run.check_games_file()  # games.jsonl against the database's digests: what disagrees is named on the page
        yield page_tail(figures.summary())


def summary_data(run: RunDirectory, *, live: bool = False) -> dict[str, Any]:
    """The summary of a run (every game read once, its details dropped)."""
    figures = RunFigures(run)
    with gc_paused():
        for row, text in run.lines():
            figures.add_text(row, text)
    return figures.summary(live=live)


def build_report(run: RunDirectory) -> str:
    """The report page of a run, with every game's detail inline (as one string: for tests and small runs)."""
    return "".join(report_pieces(run))


def write_report(
    out_dir: Path, path: Path | None = None, *, run: RunDirectory | None = None, compare: bool = True
) -> Path:
    """Write the report of `out_dir` (to `out_dir/report.html` unless `path`), atomically; its path. `compare`:
    games.jsonl is compared with the database first (see `report_pieces`)."""
    from referee.outputs.files import write_text_atomic

    target = path if path is not None else out_dir / REPORT_FILE
    opened = run if run is not None else load_run(out_dir)
    try:
        write_text_atomic(target, report_pieces(opened, compare=compare))
    except OSError as error:
        raise ReportError(
            f"{target}: cannot write the report ({error.strerror}); choose another file with -o"
        ) from None
    except RunReadError as error:
        raise ReportError(str(error)) from None
    finally:
        if run is None:
            opened.close()
    return target


def write_report_or_warn(out_dir: Path) -> str:
    """Write `out_dir/report.html` at the end of a run; the line to print, a warning if it failed.

    Never raises: the games are recorded whatever happens here, and `alternator report` can try again.
    """
    try:
        return f"report: {write_report(out_dir, compare=False)}"  # the run has just compared the two copies
    except Exception as error:  # a report bug must not turn a finished run into a failed one
        return f"warning: no report ({first_line(error)}); the games are kept: run alternator report {out_dir}"
