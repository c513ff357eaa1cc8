"""A game in the compact form the viewer reads: one JSON line per game, kept beside its record.

The report and the live page show a game from this line, not from its record: moves as one string, times
as integers (tenths of a millisecond), the last info of each move rather than all sixteen, so it is about a
third of the record. It is made once, when the game is stored (referee.run.store: ~0.1 ms),
so a report of 50,000 games reads lines instead of parsing and projecting 575 MB of records (that took
~0.2 ms a game). The line has no game number: the page numbers games in commit order, which the reader adds.
"""

from __future__ import annotations

import json
from typing import Any

from referee.record import GameRecord
from referee.timing.clock import describe_time_control
from referee.timing.time_odds import time_odds_note


def game_line(record: GameRecord) -> dict[str, Any]:
    """Everything the viewer needs for one game, compactly (the report's tables read it too)."""
    control = record.settings.time_control
    # Each move read through its __dict__ (on a pydantic model a missing attribute costs an exception: older
    # records lack the newer fields), a column at a time: the line is made at every save, and a comprehension per
    # column costs half a loop that appends to eight lists.
    fields = [move.__dict__ for move in record.moves]
    texts = [f["move"] for f in fields]
    colors = ["b" if f["color"] == "black" else "w" for f in fields]
    # Elapsed in tenths of a millisecond: integers are a third the size of floats in JSON.
    times = [round(f["elapsed_ms"] * 10) for f in fields]
    clocks = [f.get("clock_ms") for f in fields]
    # Newer records measure the mover's CPU and the referee's own lateness per move (in microseconds: it is tiny).
    cpus = [None if (cpu := f.get("cpu_ms")) is None else round(cpu * 10) for f in fields]
    lags = [None if (lag := f.get("latency_ms")) is None else round(lag * 1000) for f in fields]
    # The last info of each move that has any, as the bot sent it (the viewer leaves out its `type` tag).
    infos = [
        [ply, kept[-1], len(kept) + f.get("infos_dropped", 0)]
        for ply, f in enumerate(fields)
        if (kept := f.get("infos"))
    ]
    return {
        "id": record.game_id,
        "b": record.black.name,
        "w": record.white.name,
        "W": record.settings.width,
        "H": record.settings.height,
        "k": record.settings.komi,
        "tc": describe_time_control(control) + time_odds_note(record),
        "base": control.base_ms,
        "o": " ".join(record.settings.opening),
        "m": " ".join(texts),
        "c": "".join(colors),
        "t": times,
        "k2": clocks if control.base_ms is not None else None,
        "u": None if cpus.count(None) == len(cpus) else cpus,
        "lt": None if lags.count(None) == len(lags) else lags,
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
        # Each bot's CPU time on its own turns and on its opponent's (null: not measured), for the tables.
        "bc": record.black.cpu_ms,
        "wc": record.white.cpu_ms,
        "bo": record.black.off_turn_cpu_ms,
        "wo": record.white.off_turn_cpu_ms,
    }


def line_text(record: GameRecord) -> str:
    """`game_line` as one line of compact JSON (it starts with `{"id":`, so a number can be put before it)."""
    return json.dumps(game_line(record), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def figures_of(text: str) -> dict[str, Any]:
    """A stored line parsed for the report's tables and charts, without its infos (`i`), which they do not read
    and which are two thirds of a line's bytes: parsing the rest takes a third of the time (50,000 games: ~1 s
    instead of ~3). The infos are cut out between their key and the result's (`r`, the last `,"r":"` of the line:
    the keys after it are the arena's own, and a string holds no bare quote); a line laid out otherwise, or cut
    wrongly, is parsed whole (a wrong cut leaves brackets unbalanced, which JSON refuses)."""
    start, end = text.find(',"i":'), text.rfind(',"r":"')
    if 0 < start < end:
        try:
            line: dict[str, Any] = json.loads(text[:start] + text[end:])
            return line
        except ValueError:
            pass
    whole: dict[str, Any] = json.loads(text)
    return whole


def numbered(number: int, text: str) -> str:
    """A stored line with the game's number (its place in commit order) first: `{"n":12,"id":...`."""
    return f'{{"n":{number},{text[1:]}'


def _version(name: str | None, version: str | None) -> str:
    return " ".join(part for part in (name, version) if part)
