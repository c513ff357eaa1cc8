"""`alternator replay`: re-check a game record with the rules engine and show how the game ended.

The game comes from a record file (`replay game.json`), or by its id from a match's or tournament's
output directory (`replay OUT_DIR g0007`, read through the one reader of a run, referee.run.rundir: its
database, else its games.jsonl) or from a games.jsonl file (`replay OUT_DIR/games.jsonl g0007`).

The audit itself, `check_record`, is referee.run.audit's (the store runs it too, on every record it cannot
otherwise trust).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from referee.cli import UsageError
from referee.outputs.terminal import printable
from referee.run.audit import RecordCheckError as RecordCheckError
from referee.run.audit import check_record as check_record

if TYPE_CHECKING:
    from referee.record import GameRecord

HELP = "re-check a game (a record file, or OUT_DIR GAME_ID) move by move and print the final position and result"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "record",
        type=Path,
        metavar="RECORD|OUT_DIR",
        help="a game record (JSON), or the output directory (or games.jsonl) of a match or tournament",
    )
    parser.add_argument(
        "game_id", nargs="?", metavar="GAME_ID", help="with OUT_DIR or games.jsonl: the game, e.g. g0007 (or 7)"
    )
    parser.add_argument(
        "--show-moves", "--moves", action="store_true", help="print the move list with times, clocks and infos"
    )


def _game_id(text: str) -> str:
    """`7` means `g0007`, as the runner numbers games."""
    return f"g{int(text):04d}" if text.isascii() and text.isdigit() and len(text) <= 9 else text


def _from_run(path: Path, game_id: str) -> tuple[GameRecord | None, list[str]]:
    """Game `game_id` of an output directory or a games.jsonl file, through the one reader (referee.run.rundir: the
    database when it is there, a run may be going on), and the ids it has."""
    from referee.run.rundir import RunDirectory, RunReadError, read_lines

    try:
        if path.is_dir():
            with RunDirectory.open(path) as run:
                found = run.record(game_id)
                return found, ([] if found is not None else run.game_ids())
        ids: list[str] = []
        for line in read_lines(path):
            if line.record is not None:
                if line.record.game_id == game_id:
                    return line.record, ids
                ids.append(line.record.game_id)
        return None, ids
    except RunReadError as error:
        raise UsageError(str(error)) from None


def read_record(path: Path, game_id: str | None = None) -> GameRecord:
    """Load a record: a record file, or game `game_id` of an output directory or a games.jsonl file; UsageError
    saying why when there is none."""
    from pydantic import ValidationError

    from referee.record import GameRecord

    if path.is_dir() or path.suffix == ".jsonl":
        if game_id is None:
            raise UsageError(f"{path}: give the game too, e.g. `alternator replay {path} g0001`")
        if not path.exists():
            raise UsageError(f"{path}: no such file; give a match's or tournament's --out, or its games.jsonl")
        wanted = _game_id(game_id)
        found, ids = _from_run(path, wanted)
        if found is None:
            some = ", ".join(sorted(ids)[:5]) + (", ..." if len(ids) > 5 else "")
            raise UsageError(f"{path}: no game {wanted!r}; its games are {some or 'none yet'}")
        return found
    if game_id is not None:
        raise UsageError(f"{path}: a record file holds one game; give the file alone, or OUT_DIR {game_id}")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(
            f"{path}: no such file; give a game record, or OUT_DIR GAME_ID (e.g. alternator-out/demo g0001)"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot be read ({error}); give the path of a game record") from None
    try:
        return GameRecord.model_validate_json(text)
    except ValidationError as error:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in error.errors()[:5]]
        more = f" (and {error.error_count() - 5} more)" if error.error_count() > 5 else ""
        raise UsageError(
            f"{path} is not a game record: {'; '.join(problems)}{more}."
            " Records are the lines of games.jsonl written by matches and tournaments (schema:"
            " referee/schema/game_record.json)"
        ) from None


def run(args: argparse.Namespace) -> int:
    from referee.outputs.display import describe_result, format_infos, format_move

    record = read_record(args.record, args.game_id)
    try:
        position = check_record(record)
    except RecordCheckError as error:
        print(
            printable(f"alternator replay: {record.game_id} ({args.record}) does not check out: {error}"),
            file=sys.stderr,
        )
        return 1
    settings = record.settings
    print(
        printable(
            f"{record.game_id}: {record.black.name} (black) vs {record.white.name} (white),"
            f" {settings.width}x{settings.height}, komi {settings.komi:g}"
        )
    )
    if args.show_moves:
        if settings.opening:
            print(f"opening: {' '.join(settings.opening)}")
        first = len(settings.opening) + 1
        for number, move in enumerate(record.moves, first):
            print(printable(format_move(number, move)))
            for line in format_infos(move):
                print(printable(line))
    print(position.diagram())
    print(printable(f"result: {describe_result(record)}"))
    print(f"checked: {len(record.moves)} moves legal, result consistent with the board and the termination")
    return 0
