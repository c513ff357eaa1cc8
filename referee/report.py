"""The HTML report of a match or tournament: one self-contained file with standings, charts and a game viewer.

`alternator report OUT_DIR` (and the end of every match and tournament) writes `report.html`: every
script, style and datum inline, so the file opens anywhere, offline, forever, and makes no network
request. The summary (standings, crosstable, LOS, progress, SPRT, the list of games) is one JSON object
parsed at load; each game's moves, times and infos are one compact JSON line in a text block, parsed only
when the game is opened, so a 10,000-game tournament still opens in a few seconds. The viewer replays the
moves with a port of the rules (assets/viewer.js) and checks its final scores against the record's, which
the engine computed. `alternator serve` (referee/serve.py) builds its live page from the same pieces.
"""

from __future__ import annotations

import base64
import gc
import json
import math
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from referee.record import GameRecord, Termination
from referee.standings import ScoredGame, compute_standings

REPORT_FILE = "report.html"
GAMES_FILE = "games.jsonl"
MATCH_FILE = "match.json"
# Elo over the games is refitted at this many points of the run at most (each fit is a Newton solve).
PROGRESS_POINTS = 40
CHUNK_GAMES = 64  # games per deflated chunk of details: opening a game inflates 64 games' data
SCORE_POINTS = 500  # the score % chart: a 10,000-game run needs no more points than the chart has pixels
_ASSETS = ("report.css", "viewer.js", "report.js")


class ReportError(Exception):
    """The output directory cannot be reported on; the message says why and what to do."""


@dataclass
class Run:
    """What an output directory holds: its games in playing order and what kind of run made them."""

    kind: str  # "match" or "tournament"
    out_dir: Path
    records: list[GameRecord]
    bots: list[str]
    match_summary: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)  # lines that could not be read, kept out of the report


# --- reading an output directory ----------------------------------------------------------------------------


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while thousands of records are read or turned into the page.

    They are millions of objects that all live on: the collector would walk them again and again for
    nothing (it made reading 2,000 records five times slower).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_run(out_dir: Path) -> Run:
    """Read the games of the match or tournament in `out_dir`; ReportError when it holds neither.

    A match has match.json (and its games in games.jsonl, or in game-NNN.json files from older versions);
    a tournament has games.jsonl (and standings.json).
    """
    with gc_paused():
        return _load_run(out_dir)


def _load_run(out_dir: Path) -> Run:
    if not out_dir.is_dir():
        raise ReportError(f"{out_dir}: no such directory; give the output directory of a match or tournament")
    match_file = out_dir / MATCH_FILE
    games_file = out_dir / GAMES_FILE
    match_files = sorted(out_dir.glob("game-*.json"))
    summary = _read_match_summary(match_file) if match_file.exists() else None
    if games_file.exists():
        records, errors = _read_jsonl(games_file)
    elif summary is not None or match_files:
        names = [str(n) for n in summary.get("records", [])] if summary else []
        paths = [out_dir / n for n in names] if names else match_files
        # Games still being played (or written after match.json) are in the directory but not yet listed.
        listed = set(paths)
        paths += [p for p in match_files if p not in listed]
        records, errors = [], []
        for path in paths:
            try:
                records.append(GameRecord.model_validate_json(path.read_bytes()))
            except (OSError, ValidationError, ValueError) as error:
                errors.append(f"{path.name}: {_first_line(error)}")
    else:
        raise ReportError(
            f"{out_dir}: neither {GAMES_FILE} nor {MATCH_FILE} nor game-*.json is there; give the output"
            " directory of a match or tournament (its --out)"
        )
    return run_of(out_dir, records, errors, kind="match" if match_files and not games_file.exists() else None)


def run_of(out_dir: Path, records: list[GameRecord], errors: list[str], *, kind: str | None = None) -> Run:
    """The run these records of `out_dir` make: a match when match.json is there (or `kind` says so, as the
    live feed does before match.json is written), else a tournament."""
    match_file = out_dir / MATCH_FILE
    summary = _read_match_summary(match_file) if match_file.exists() else None
    if summary is not None or kind == "match":
        first_two = [str(summary["first"]), str(summary["second"])] if summary and "first" in summary else []
        return Run("match", out_dir, records, _merge(first_two, _bots_of(records)), summary, errors)
    # Bots that have not played yet are in the standings.
    return Run("tournament", out_dir, records, _merge(_field_of(out_dir), _bots_of(records)), errors=errors)


def _read_match_summary(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ReportError(
            f"{path}: cannot read the match summary ({error}); run the match again to rewrite it"
        ) from None
    if not isinstance(summary, dict):
        raise ReportError(f"{path}: not a match summary (a JSON object was expected)")
    return summary


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _read_jsonl(path: Path) -> tuple[list[GameRecord], list[str]]:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ReportError(f"{path}: cannot read it ({error.strerror})") from None
    return parse_jsonl(data, path.name)


def parse_jsonl(data: bytes, name: str, first_line: int = 1) -> tuple[list[GameRecord], list[str]]:
    """The game records in lines of games.jsonl, and a note for each line that is not one."""
    records: list[GameRecord] = []
    errors: list[str] = []
    for number, line in enumerate(data.splitlines(), start=first_line):
        if not line.strip():
            continue
        try:
            records.append(GameRecord.model_validate_json(line))
        except ValidationError as error:
            # A half-written last line of a killed run, or a record from another version: skip, say so.
            errors.append(f"{name} line {number}: not a game record ({_first_line(error)})")
    return records, errors


def _field_of(out_dir: Path) -> list[str]:
    """The bots of a tournament in the order its standings.json lists them ([] when there is none)."""
    try:
        standings = json.loads((out_dir / "standings.json").read_text(encoding="utf-8"))
        return [str(bot["name"]) for bot in standings["bots"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _merge(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def _bots_of(records: Iterable[GameRecord]) -> list[str]:
    names: dict[str, None] = {}
    for record in records:
        names.setdefault(record.black.name, None)
        names.setdefault(record.white.name, None)
    return list(names)


# --- the data the page shows ------------------------------------------------------------------------------


def describe_time_control(control: dict[str, Any]) -> str:
    """`10+0.1`, `40/60` or `2s/move`, from a record's time_control."""
    base, increment = control.get("base_ms"), control.get("increment_ms") or 0
    per_move, period = control.get("move_time_ms"), control.get("moves_per_period")
    if base is None:
        return f"{_num(per_move / 1000)}s/move" if per_move else "no clock"
    text = f"{period}/{_num(base / 1000)}" if period else f"{_num(base / 1000)}+{_num(increment / 1000)}"
    return text + (f", {_num(per_move / 1000)}s/move" if per_move else "")


def _num(x: float) -> str:
    return f"{x:g}"


def los(wins: int, losses: int) -> float | None:
    """Likelihood of superiority from decisive games (draws carry no information): P(stronger)."""
    if wins + losses == 0:
        return None
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


def _scored(record: GameRecord) -> bool:
    return record.termination.is_scored and record.result != "*"


def standings_data(records: Sequence[GameRecord], bots: Sequence[str]) -> dict[str, Any]:
    """Standings, per-pair W-D-L, LOS and per-bot timing figures: the tables at the top of the page."""
    names = list(bots)
    for name in _bots_of(records):
        if name not in names:
            names.append(name)
    results = [
        ScoredGame(r.black.name, r.white.name, r.result, r.termination)
        for r in records
        if _scored(r) and r.black.name != r.white.name
    ]
    standings = compute_standings(results, names)
    pair: dict[str, dict[str, list[int]]] = {a: {b: [0, 0, 0] for b in names if b != a} for a in names}
    for result in results:
        loser = result.loser
        for me, other in ((result.black, result.white), (result.white, result.black)):
            cell = pair[me][other]
            cell[0 if loser == other else 2 if loser == me else 1] += 1
    timing = _timing(records, names)
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
                "lossKinds": {k: v for k, v in bot.losses_by_kind.items() if v},
                **timing[bot.name],
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
    }


def _timing(records: Sequence[GameRecord], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per bot: time per move (mean, 95th percentile, maximum; ms), CPU seconds on and off its turns and the
    referee's own lateness during its moves, where the records carry them (newer records do)."""
    elapsed: dict[str, list[float]] = {name: [] for name in names}
    cpu_on: dict[str, float | None] = dict.fromkeys(names)
    cpu_off: dict[str, float | None] = dict.fromkeys(names)
    lag: dict[str, list[float]] = {name: [] for name in names}
    for record in records:
        for info in (record.black, record.white):
            # Per game and bot: CPU during its own turns and during its opponent's (pondering or stealing).
            for total, value in (
                (cpu_on, info.__dict__.get("cpu_ms")),
                (cpu_off, info.__dict__.get("off_turn_cpu_ms")),
            ):
                if value is not None:
                    total[info.name] = (total[info.name] or 0.0) + float(value)
        side = {"black": record.black.name, "white": record.white.name}
        for move in record.moves:
            name = side[move.color]
            elapsed[name].append(move.elapsed_ms)
            late = move.__dict__.get("latency_ms")
            if late is not None:
                lag[name].append(float(late))
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        times = sorted(elapsed[name])
        rows[name] = {
            "moves": len(times),
            "msMean": _round(sum(times) / len(times), 2) if times else None,
            "msP95": _round(times[min(len(times) - 1, int(0.95 * len(times)))], 1) if times else None,
            "msMax": _round(times[-1], 1) if times else None,
            "cpuS": _seconds(cpu_on[name]),
            "offCpuS": _seconds(cpu_off[name]),
            "lagMs": _round(sum(lag[name]) / len(lag[name]), 3) if lag[name] else None,
        }
    return rows


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else _round(ms / 1000, 2)


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, digits)


def progress_data(records: Sequence[GameRecord], bots: Sequence[str]) -> dict[str, Any]:
    """Each bot's score % over the run (at up to SCORE_POINTS points) and its Elo (at up to PROGRESS_POINTS)."""
    scored = [r for r in records if _scored(r) and r.black.name != r.white.name]
    names = list(bots)
    for name in _bots_of(scored):
        if name not in names:
            names.append(name)
    n = len(scored)
    score_marks = set(_marks(n, SCORE_POINTS))
    points = dict.fromkeys(names, 0.0)
    games = dict.fromkeys(names, 0)
    score_at: list[int] = []
    score: dict[str, list[float | None]] = {name: [] for name in names}
    for done, record in enumerate(scored, start=1):
        black_points = {"1-0": 1.0, "0-1": 0.0}.get(record.result, 0.5)
        for name, pts in ((record.black.name, black_points), (record.white.name, 1.0 - black_points)):
            points[name] += pts
            games[name] += 1
        if done in score_marks:
            score_at.append(done)
            for name in names:
                score[name].append(round(100 * points[name] / games[name], 1) if games[name] else None)
    elo_at = _marks(n, PROGRESS_POINTS)
    elo: dict[str, list[float | None]] = {name: [] for name in names}
    results = [ScoredGame(r.black.name, r.white.name, r.result, r.termination) for r in scored]
    for mark in elo_at:
        by_name = {bot.name: bot.elo for bot in compute_standings(results[:mark], names).bots}
        for name in names:
            elo[name].append(_round(by_name.get(name), 1))
    return {"scoreAt": score_at, "score": score, "eloAt": elo_at, "elo": elo}


def _marks(n: int, count: int) -> list[int]:
    """Up to `count` game counts spread evenly over 1..n, n included."""
    return sorted({max(1, round(n * k / count)) for k in range(1, count + 1)}) if n else []


def sprt_data(run: Run) -> dict[str, Any] | None:
    """For a match run with an SPRT: the LLR after every finished pair, its bounds and the verdict."""
    summary = run.match_summary
    # match.json v1 has it at the top, v2 in its statistics.
    sprt = None if summary is None else summary.get("sprt") or (summary.get("statistics") or {}).get("sprt")
    if summary is None or not sprt:
        return None
    from referee.sprt import SprtParameters, pentanomial, sprt_status

    parameters = SprtParameters(
        elo0=float(sprt["elo0"]), elo1=float(sprt["elo1"]), alpha=float(sprt["alpha"]), beta=float(sprt["beta"])
    )
    first = str(summary["first"])
    points: list[float] = []
    for record in run.records:
        if not _scored(record):
            continue
        first_black = record.black.name == first
        black_points = {"1-0": 1.0, "0-1": 0.0}.get(record.result, 0.5)
        points.append(black_points if first_black else 1.0 - black_points)
    llr: list[float] = []
    counts = [0] * 5
    for i in range(0, len(points) - 1, 2):
        pair = pentanomial(points[i : i + 2])  # one pair: a count of 1 at its total
        counts = [a + b for a, b in zip(counts, pair, strict=True)]
        llr.append(round(sprt_status(parameters, counts).llr, 4))
    return {
        "elo0": parameters.elo0,
        "elo1": parameters.elo1,
        "alpha": parameters.alpha,
        "beta": parameters.beta,
        "lower": parameters.lower_bound,
        "upper": parameters.upper_bound,
        "llr": llr,
        "verdict": sprt.get("verdict"),
        "first": first,
    }


TERMINATIONS = [str(t) for t in Termination]
_RESULT_CODE = {"1-0": 0, "0-1": 1, "1/2-1/2": 2, "*": 3}


def game_row(number: int, record: GameRecord, bot_index: dict[str, int]) -> list[Any]:
    """One game in the list: [number, black, white, result code, termination, moves, black score, white score]."""
    return [
        number,
        bot_index[record.black.name],
        bot_index[record.white.name],
        _RESULT_CODE[record.result],
        TERMINATIONS.index(str(record.termination)),
        len(record.all_moves()),  # the opening included
        record.black_score,
        record.white_score,
    ]


def game_detail(number: int, record: GameRecord) -> dict[str, Any]:
    """Everything the viewer needs for one game, compactly: moves as one string, times as integers."""
    infos: list[list[Any]] = []
    for ply, move in enumerate(record.moves):
        if move.infos:
            # The last info as the bot sent it (the viewer leaves out its `type` tag).
            infos.append([ply, move.infos[-1], len(move.infos) + move.infos_dropped])
    control = record.settings.time_control
    return {
        "n": number,
        "id": record.game_id,
        "b": record.black.name,
        "w": record.white.name,
        "W": record.settings.width,
        "H": record.settings.height,
        "k": record.settings.komi,
        "tc": describe_time_control(control.model_dump()),
        "base": control.base_ms,
        "o": " ".join(record.settings.opening),
        "m": " ".join(m.move for m in record.moves),
        "c": "".join("b" if m.color == "black" else "w" for m in record.moves),
        # Elapsed in tenths of a millisecond: integers are a third the size of floats in JSON.
        "t": [round(m.elapsed_ms * 10) for m in record.moves],
        "k2": [m.clock_ms for m in record.moves] if control.base_ms is not None else None,
        # Newer records measure the mover's CPU and the referee's own lateness per move.
        "u": _per_move(record, "cpu_ms"),
        "lt": _per_move(record, "latency_ms"),
        "i": infos,
        "r": record.result,
        "x": str(record.termination),
        "why": record.reason,
        "loser": record.loser,
        "bs": record.black_score,
        "ws": record.white_score,
        "ov": record.overrun_ms,
        "tail": record.stderr_tail,
        "s": record.started_at.isoformat(timespec="seconds"),
        "f": record.finished_at.isoformat(timespec="seconds"),
        "bv": _version(record.black.announced_name, record.black.version),
        "wv": _version(record.white.announced_name, record.white.version),
    }


def _per_move(record: GameRecord, field: str) -> list[int | None] | None:
    """A per-move figure in tenths of a millisecond, or None when no move carries it."""
    # __dict__, not getattr: on a pydantic model a missing attribute costs an exception (older records).
    values = [move.__dict__.get(field) for move in record.moves]
    if all(value is None for value in values):
        return None
    return [None if value is None else round(float(value) * 10) for value in values]


def _version(name: str | None, version: str | None) -> str:
    return " ".join(part for part in (name, version) if part)


def summary_data(run: Run, *, live: bool = False) -> dict[str, Any]:
    """The summary object the page parses at load (everything but the games' details)."""
    bots = list(run.bots)
    for name in _bots_of(run.records):
        if name not in bots:
            bots.append(name)
    bot_index = {name: i for i, name in enumerate(bots)}
    first = run.records[0] if run.records else None
    settings = None
    if first is not None:
        settings = {
            "size": f"{first.settings.width}x{first.settings.height}",
            "komi": first.settings.komi,
            "tc": describe_time_control(first.settings.time_control.model_dump()),
        }
    title = f"{' vs '.join(bots)}" if run.kind == "match" else f"tournament {run.out_dir.name}"
    return {
        "kind": run.kind,
        "title": title,
        "outDir": str(run.out_dir),
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "live": live,
        "settings": settings,
        "bots": bots,
        "terminations": TERMINATIONS,
        "standings": standings_data(run.records, bots),
        "progress": progress_data(run.records, bots),
        "sprt": sprt_data(run),
        "games": [game_row(i, r, bot_index) for i, r in enumerate(run.records, start=1)],
        "errors": run.errors,
    }


# --- the page ---------------------------------------------------------------------------------------------


def _safe_json(value: Any) -> str:
    """JSON that cannot end the <script> element it sits in (no '<' at all) nor break a line."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def asset(name: str) -> str:
    """An asset file's text (referee/assets/...)."""
    return resources.files("referee").joinpath("assets", name).read_text(encoding="utf-8")


def encode_chunks(details: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The games' details, CHUNK_GAMES at a time: JSON lines, deflated (zlib), in base64.

    JSON of moves and times deflates to about a fifth; the page inflates only the chunk of the game opened
    (DecompressionStream), so neither the file's size nor the time to open grows with every game's detail.
    """
    chunk: list[str] = []
    for detail in details:
        chunk.append(json.dumps(detail, separators=(",", ":"), ensure_ascii=False, allow_nan=False))
        if len(chunk) == CHUNK_GAMES:
            yield _deflate("\n".join(chunk))
            chunk = []
    if chunk:
        yield _deflate("\n".join(chunk))


def _deflate(text: str) -> str:
    return base64.b64encode(zlib.compress(text.encode("utf-8"), 6)).decode("ascii")


def decode_chunks(text: str) -> list[dict[str, Any]]:
    """The details `encode_chunks` wrote (for tests and tools)."""
    details: list[dict[str, Any]] = []
    for chunk in text.split("\n"):
        if chunk:
            inflated = zlib.decompress(base64.b64decode(chunk)).decode("utf-8")
            details += [json.loads(line) for line in inflated.split("\n")]
    return details


def render_page(summary: dict[str, Any], details: Iterable[dict[str, Any]] | None, *, live: bool = False) -> str:
    """The whole HTML page: styles, scripts and data inline. `details`: one per game (None: fetched live)."""
    css, viewer, report = (asset(name) for name in _ASSETS)
    chunks = "\n".join(encode_chunks(details)) if details is not None else ""
    title = _escape(f"Alternator {'live: ' if live else ''}{summary['title']}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        # No request of any kind, even by mistake: the page itself forbids everything but inline code.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'unsafe-inline'; img-src data:{'; connect-src ' + chr(39) + 'self' + chr(39) if live else ''}\">\n"
        f"<title>{title}</title>\n<style>{css}</style>\n</head><body>\n"
        f'<script type="application/json" id="summary">{_safe_json(summary)}</script>\n'
        f'<script type="text/plain" id="games" data-chunk="{CHUNK_GAMES}">{chunks}</script>\n'
        f"<script>{viewer}</script>\n<script>{report}</script>\n</body></html>\n"
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def build_report(run: Run) -> str:
    """The report page of a run, with every game's detail inline."""
    with gc_paused():
        return render_page(summary_data(run), (game_detail(i, r) for i, r in enumerate(run.records, start=1)))


def write_report(out_dir: Path, path: Path | None = None, *, run: Run | None = None) -> Path:
    """Write the report of `out_dir` (to `out_dir/report.html` unless `path`), atomically; its path."""
    from referee.files import write_text_atomic

    target = path if path is not None else out_dir / REPORT_FILE
    page = build_report(run if run is not None else load_run(out_dir))
    try:
        write_text_atomic(target, [page])
    except OSError as error:
        raise ReportError(
            f"{target}: cannot write the report ({error.strerror}); choose another file with -o"
        ) from None
    return target


def write_report_or_warn(out_dir: Path) -> str:
    """Write `out_dir/report.html` at the end of a run; the line to print, a warning if it failed.

    Never raises: the games are recorded whatever happens here, and `alternator report` can try again.
    """
    try:
        return f"report: {write_report(out_dir)}"
    except Exception as error:  # a report bug must not turn a finished run into a failed one
        return f"warning: no report ({_first_line(error)}); the games are kept: run alternator report {out_dir}"
