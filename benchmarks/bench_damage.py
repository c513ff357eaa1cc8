"""The single-byte-flip experiment: a finished small run's files damaged one byte at a time, then resumed,
reported and replayed; what the arena does with each damage.

    python benchmarks/bench_damage.py [--per-class 6] [--games 3] [--seed 1]

A tournament of two sample bots (4x4, `--games N` per pairing) is played once. Then, for each flip, a fresh
copy of its directory gets one byte changed at an offset of one class (every other flip inverts the byte, the
others its lowest bit only: a move's letter or a digit changed, the JSON still valid):

    run.db   the SQLite header (the first 100 bytes), each b-tree page's header and cell pointers, the
                    bytes of the records (a game's JSON: its id, moves, result), and the small columns' rows
    games.jsonl     a line's id, its moves, its result, its newline (a line joined to the next), the last byte

and the same command is run again (a resume: nothing is left to play), then `alternator report` and
`alternator replay OUT_DIR ID` of every game. Counted, for each class:

    tracebacks      a Python traceback on stderr or an exception out of the command (must be 0)
    overwritten     a good line of games.jsonl replaced by a different one (must be 0: every game's line after
                    the resume is byte for byte the original, a repaired copy of it, or the game is named)
    named           the damage named on stderr (a line naming the file and what is wrong) where it changed what
                    the run holds; a flip in bytes SQLite does not use (free space, unused header bytes: the database's
                    dump is unchanged) changes nothing and needs no name ("harmless")

Every command runs in this process (referee.cli.main), so a flip costs ~1 s, not a start-up of Python each.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from referee.cli import main  # noqa: E402

BOTS = ("random", "greedy")
READERS_FIRST = "--readers-first" in sys.argv
DEBUG = "--debug" in sys.argv
DAMAGE_WORDS = ("damaged", "does not check out", "not a game record", "cannot open", "quarantine", "cut short",
                "beyond the", "no copy can be trusted")  # fmt: skip
"""A line of stderr names the damage when it holds one of these and the file's name."""


@dataclass
class Outcome:
    kind: str
    offset: int
    tracebacks: int
    overwritten: int
    named: bool
    harmless: bool
    exits: tuple[int, ...]
    first_line: str


def run(argv: list[str]) -> tuple[int, str]:
    """One command in this process: its exit status (-1: an exception escaped) and its stderr."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = main(argv)
        except BaseException as error:
            import traceback

            traceback.print_exc(file=err)
            status = -1 if not isinstance(error, SystemExit) else int(error.code or 0)
    return status, err.getvalue()


def tournament_args(out: Path, games: int) -> list[str]:
    bots = [flag for bot in BOTS for flag in ("--bot", bot)]
    return ["tournament", *bots, "--games", str(games), "--size", "4x4", "--tc", "5+0.1", "-j", "1", "--out", str(out)]


def dump(db: Path) -> list[str] | None:
    """The database's content as SQL (None: it cannot be read at all), the schema's comments left out (a flip in
    one changes nothing)."""
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        connection.text_factory = lambda data: data.decode("utf-8", "replace")
        try:
            return [
                re.sub(r"--[^\n]*", "", line) if line.startswith("CREATE") else line for line in connection.iterdump()
            ]
        finally:
            connection.close()
    except (sqlite3.Error, UnicodeDecodeError):
        return None


def page_offsets(db: Path, rng: random.Random, per_class: int) -> dict[str, list[int]]:
    """Offsets of each class in the database file."""
    data = db.read_bytes()
    page = int.from_bytes(data[16:18], "big")
    page = 65536 if page == 1 else page
    pages = len(data) // page
    headers = []
    for index in range(pages):
        base = index * page + (100 if index == 0 else 0)
        headers += [base + k for k in range(0, 12)]  # the b-tree page header and the first cell pointers
    records = []
    for needle in (b'"game_id":"g', b'"moves":[', b'"result":"', b'"final_position":"', b'"termination":"'):
        start = 0
        while (found := data.find(needle, start)) >= 0:
            records.append(found + len(needle) + 1)
            start = found + 1
    rows = []
    for needle in (b"pending", b"done", b"1-0", b"0-1", b"crash", b"normal"):
        start = 0
        while (found := data.find(needle, start)) >= 0 and found < len(data):
            rows.append(found)
            start = found + 1
    return {
        "db:header": rng.sample(range(100), min(per_class, 100)),
        "db:page": rng.sample(headers, min(per_class, len(headers))),
        "db:record": rng.sample(records, min(per_class, len(records))),
        "db:row": rng.sample(rows, min(per_class, len(rows))),
        "db:any": rng.sample(range(len(data)), per_class),
    }


def line_offsets(path: Path, rng: random.Random, per_class: int) -> dict[str, list[int]]:
    data = path.read_bytes()
    starts = [0, *[i + 1 for i, byte in enumerate(data) if byte == 10][:-1]]
    ids = [s + len(b'{"record_version":1,"game_id":"g') + 2 for s in starts]

    def inside(needle: bytes) -> list[int]:
        found, start = [], 0
        while (at := data.find(needle, start)) >= 0:
            found.append(at + len(needle))
            start = at + 1
        return found

    newlines = [i for i, byte in enumerate(data) if byte == 0x0A]
    return {
        "jsonl:id": rng.sample(ids, min(per_class, len(ids))),
        "jsonl:moves": rng.sample(inside(b'"move":"'), min(per_class, len(inside(b'"move":"')))),
        "jsonl:result": rng.sample(inside(b'"result":"'), min(per_class, len(inside(b'"result":"')))),
        "jsonl:newline": [*rng.sample(newlines[:-1], min(per_class, len(newlines) - 1)), len(data) - 1],
        "jsonl:any": rng.sample(range(len(data)), per_class),
    }


def flip(path: Path, offset: int, mask: int = 0xFF) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


def trial(base: Path, work: Path, kind: str, offset: int, mask: int, games: int, original: dict[str, bytes]) -> Outcome:
    out = work / "trial"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(base, out)
    target = out / ("run.db" if kind.startswith("db:") else "games.jsonl")
    before = dump(out / "run.db") if kind.startswith("db:") else None
    flip(target, offset, mask)
    harmless = kind.startswith("db:") and before is not None and dump(out / "run.db") == before
    exits, errors = [], []
    readers = [
        ["report", str(out), "-o", str(work / "report.html")],
        *(["replay", str(out), game_id] for game_id in original),
    ]
    before_resume = readers if READERS_FIRST else []
    for argv in (*before_resume, tournament_args(out, games), *readers):
        status, err = run(argv)
        exits.append(status)
        errors.append(err)
    text = "\n".join(errors)
    tracebacks = text.count("Traceback (most recent call last)")
    overwritten = 0
    after: dict[str, bytes] = {}
    with contextlib.suppress(OSError):
        for raw in (out / "games.jsonl").read_bytes().splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                after[str(json.loads(raw)["game_id"])] = raw
    for game_id, line in original.items():
        if game_id in after and after[game_id] != line:
            overwritten += 1
    resume_err = errors[len(before_resume)]
    named = any(
        any(word in line for word in DAMAGE_WORDS) and any(where in line for where in ("run.db", "games.jsonl"))
        for line in text.splitlines()
    )
    first = next((line for line in resume_err.splitlines() if line.strip()), "")
    if tracebacks:
        at = text.index("Traceback (most recent call last)")
        first = " | ".join(line for line in text[at:].splitlines()[-4:] if line.strip())
    if DEBUG and (tracebacks or overwritten or not (named or harmless)):
        data = (base / target.name).read_bytes()
        print(f"--- {kind} @{offset} ^{mask:#x}: {data[max(0, offset - 40) : offset + 40]!r}\n{text[:3000]}")
    resumed = len(before_resume)
    return Outcome(
        kind, offset, tracebacks, overwritten, named, harmless, tuple(exits[resumed : resumed + 2]), first[:160]
    )


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-class", type=int, default=6)
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--verbose", action="store_true", help="print every flip's first line of stderr")
    parser.add_argument("--debug", action="store_true", help="print the bytes and the whole stderr of a failure")
    parser.add_argument(
        "--readers-first", action="store_true", help="report and replay the damaged directory before the resume too"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="bench-damage-"))
    try:
        base = work / "base"
        status, err = run(tournament_args(base, args.games))
        if status != 0:
            raise SystemExit(f"the base run failed ({status}): {err}")
        (base / "live.jsonl").unlink(missing_ok=True)
        original = {str(json.loads(raw)["game_id"]): raw for raw in (base / "games.jsonl").read_bytes().splitlines()}
        classes = {**page_offsets(base / "run.db", rng, args.per_class)}
        classes |= line_offsets(base / "games.jsonl", rng, args.per_class)
        print(f"base run: {len(original)} games, run.db {(base / 'run.db').stat().st_size:,} B,"
              f" games.jsonl {(base / 'games.jsonl').stat().st_size:,} B")  # fmt: skip
        outcomes: list[Outcome] = []
        started = time.perf_counter()
        for kind, offsets in classes.items():
            for index, offset in enumerate(offsets):
                mask = 0xFF if index % 2 == 0 else 0x01  # every bit (never UTF-8), or the lowest (a letter, a digit)
                outcome = trial(base, work, kind, offset, mask, args.games, original)
                outcomes.append(outcome)
                if args.verbose or outcome.tracebacks or outcome.overwritten or not (outcome.named or outcome.harmless):
                    print(f"  {kind:14} @{offset:>7}: exits {outcome.exits} tracebacks {outcome.tracebacks}"
                          f" overwritten {outcome.overwritten} named {outcome.named} harmless {outcome.harmless}:"
                          f" {outcome.first_line}")  # fmt: skip
        print(f"\n{len(outcomes)} flips in {time.perf_counter() - started:.0f} s")
        columns = ("flips", "tracebacks", "overwritten", "named", "harmless", "unnamed")
        print(f"{'class':14} " + " ".join(f"{name:>{max(5, len(name))}}" for name in columns))
        totals: Counter[str] = Counter()
        for kind in classes:
            mine = [o for o in outcomes if o.kind == kind]
            row = Counter(
                flips=len(mine),
                tracebacks=sum(o.tracebacks for o in mine),
                overwritten=sum(o.overwritten for o in mine),
                named=sum(o.named for o in mine),
                harmless=sum(o.harmless and not o.named for o in mine),
                unnamed=sum(not o.named and not o.harmless for o in mine),
            )
            totals += row
            print(f"{kind:14} {row['flips']:>5} {row['tracebacks']:>10} {row['overwritten']:>11} {row['named']:>5}"
                  f" {row['harmless']:>8} {row['unnamed']:>7}")  # fmt: skip
        print(f"{'all':14} {totals['flips']:>5} {totals['tracebacks']:>10} {totals['overwritten']:>11}"
              f" {totals['named']:>5} {totals['harmless']:>8} {totals['unnamed']:>7}")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main_()
