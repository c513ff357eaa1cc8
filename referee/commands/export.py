"""`alternator export OUT_DIR --format pgn|csv`: a run's scored games for rating tools (Ordo, BayesElo) or a sheet.

The games are read through the one reader of a run (referee.run.rundir, as the report reads them: its database
when it is there, else games.jsonl), one at a time in commit order as their viewer lines (referee.outputs.viewerline:
names, board, result, moves and times in one compact JSON line), and written out as they come, so 50,000
games are exported in bounded memory.

PGN is chess's format; rating tools read its tags and results and skip what they do not know. Its White is
the side that moves first, so a game's first mover (Alternator's Black, RULES.md) is PGN's White and the
second mover its Black, and a result reads the same in both ("1-0": the first mover won). The tools'
white advantage is then the first move's worth, as `referee.stats.standings` fits it. The moves, the board and
how the game ended go into a comment, which PGN readers skip (a chess reader cannot read Alternator's moves
as chess moves); Ordo looks for its tags anywhere in a line, so the comment never holds a `[`.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from referee.cli import UsageError

if TYPE_CHECKING:
    from referee.run.rundir import RunDirectory, ScoredRow

HELP = "export a run's games for rating tools: PGN (Ordo, BayesElo) or CSV, to standard output or -o FILE"

FORMATS = ("pgn", "csv")
CSV_COLUMNS = (
    "number",
    "game_id",
    "round",
    "date",
    "black",
    "white",
    "result",
    "termination",
    "reason",
    "black_score",
    "white_score",
    "size",
    "komi",
    "time_control",
    "opening",
    "moves",
)
# PGN's Termination tag has its own words; every forfeit but time is a "rules infraction".
_PGN_TERMINATION = {"normal": "normal", "time": "time forfeit"}
_WIDTH = 79  # PGN export lines stay under 80 characters


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  alternator export cup --format pgn -o cup.pgn\n"
        "  ordo -p cup.pgn -W -D -a 0 -z 200.24   Ordo's ratings: the first move's worth (-W), draws (-D), the\n"
        "                                        mean at 0 (-a 0), the logistic scale (-z 200.24: 76%)\n"
        "  alternator export cup --format csv | head\n"
        "PGN's White is the first mover (Alternator's Black); the result reads the same in both."
    )
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="the output directory of a match or tournament")
    parser.add_argument("--format", choices=FORMATS, default="pgn", help="pgn (the default) or csv")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write to FILE (replaced whole at the end) instead of stdout"
    )


def _tag_value(text: str) -> str:
    """A PGN tag value: backslash and quote escaped, no line break."""
    return " ".join(text.replace("\\", "\\\\").replace('"', '\\"').split())


def _comment_text(text: str) -> str:
    """Text fit for a PGN comment that Ordo's line scan cannot mistake for a tag: no braces, no brackets."""
    return " ".join(text.translate(str.maketrans("{}[]", "()()")).split())


def _date(started: str | None) -> str:
    """`2026-11-26T09:12:23+00:00` as PGN's `2026.11.26` (`????.??.??` when unknown)."""
    if not started or len(started) < 10:
        return "????.??.??"
    return started[:10].replace("-", ".")


def pgn_game(row: ScoredRow, line: dict[str, Any], event: str) -> str:
    """One game as PGN: the seven standard tags, a few of Alternator's, the game in a comment, the result."""
    first, second = line["b"], line["w"]  # Black moves first: PGN's White
    tags = [
        ("Event", event),
        ("Site", "?"),
        ("Date", _date(line.get("s"))),
        ("Round", str(row.round + 1)),
        ("White", first),
        ("Black", second),
        ("Result", row.result),
        ("GameId", str(line.get("id", ""))),
        ("Termination", _PGN_TERMINATION.get(str(row.termination), "rules infraction")),
        ("TimeControl", str(line.get("tc", "?"))),
        ("Board", f"{line['W']}x{line['H']}"),
        ("Komi", f"{line['k']:g}"),
    ]
    parts = [f"Alternator {line['W']}x{line['H']}, komi {line['k']:g}: White here is Black there (moves first)."]
    if line.get("o"):
        parts.append(f"Opening: {line['o']}.")
    parts.append(f"Moves: {line['m'] or '(none)'}.")
    scores = line.get("bs"), line.get("ws")
    if scores[0] is not None and scores[1] is not None:
        parts.append(f"Score {scores[0]:g} - {scores[1]:g}.")
    parts.append(f"{row.termination}: {line.get('why', '')}")
    comment = "{" + _comment_text(" ".join(parts)) + "}"
    text = "".join(f'[{name} "{_tag_value(value)}"]\n' for name, value in tags)
    movetext = textwrap.fill(f"{comment} {row.result}", _WIDTH, break_long_words=False, break_on_hyphens=False)
    return f"{text}\n{movetext}\n\n"


def csv_row(row: ScoredRow, line: dict[str, Any]) -> list[Any]:
    """One game as a row of CSV_COLUMNS (Alternator's colours: Black moves first)."""
    return [
        row.number,
        line.get("id", ""),
        row.round + 1,
        line.get("s", ""),
        line["b"],
        line["w"],
        row.result,
        str(row.termination),
        line.get("why", ""),
        "" if line.get("bs") is None else f"{line['bs']:g}",
        "" if line.get("ws") is None else f"{line['ws']:g}",
        f"{line['W']}x{line['H']}",
        f"{line['k']:g}",
        line.get("tc", ""),
        line.get("o", ""),
        line.get("m", ""),
    ]


def games(run: RunDirectory) -> Iterator[tuple[ScoredRow, dict[str, Any]]]:
    """The run's scored games in commit order, each with its viewer line, one at a time."""
    for row, text in run.lines():
        yield row, json.loads(text)


def write_export(run: RunDirectory, out: IO[str], fmt: str) -> int:
    """Write every scored game of `run` to `out` in `fmt` ("pgn" or "csv"); the number of games."""
    from referee.outputs.report import title_of

    count = 0
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row, line in games(run):
            writer.writerow(csv_row(row, line))
            count += 1
        return count
    event = title_of(run)
    for row, line in games(run):
        out.write(pgn_game(row, line, event))
        count += 1
    return count


def run(args: argparse.Namespace) -> int:
    from referee.run.rundir import RunDirectory, RunReadError
    from referee.run.store import StoreError

    try:
        with RunDirectory.open(args.out_dir) as directory:
            if args.output is None:
                count = write_export(directory, sys.stdout, args.format)
            else:
                count = _to_file(directory, args.output, args.format)
            errors = list(directory.errors)
    except (RunReadError, StoreError) as error:
        raise UsageError(str(error)) from None
    for line in errors:
        print(f"alternator export: warning: left out {line}", file=sys.stderr)
    if args.output is not None:
        print(f"export: {args.output} ({count} games, {args.format})", file=sys.stderr)
    return 0


def _to_file(directory: RunDirectory, path: Path, fmt: str) -> int:
    """Write to a temporary file beside `path` and move it into place: a stopped export leaves no half file."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"-o {path}: the folder {folder} does not exist; create it or write elsewhere")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            count = write_export(directory, out, fmt)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return count
