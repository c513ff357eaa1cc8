"""A referee killed with `kill -9` in the middle of a Swiss round and of a knockout encounter: what the store held,
and whether the resumed run lost or doubled anything or paired differently from an uninterrupted one.

Five bots that play the same moves whenever they play the same game (the random bot, seeded: its moves depend on
the seed and the game id only), so
an uninterrupted run of the same settings is the reference: the resumed run must end with the very same games
(pairings, colours, openings) and results. The referee is a real process, killed with SIGKILL while games of
the round (or encounter) are being played.

    python benchmarks/bench_format_resume.py [--size 11x11] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BOTS = [f"{name}=python3 -m sample_bots.random --seed {seed}" for seed, name in enumerate("abcde", 1)]


def rows(out: Path) -> list[tuple[int, int, int, str, str, str, str | None]]:
    try:
        with sqlite3.connect(f"file:{out / 'run.db'}?mode=ro", uri=True, timeout=1) as db:
            return list(
                db.execute("SELECT number, pairing, round, black, white, status, result FROM games ORDER BY number")
            )
    except sqlite3.Error:
        return []


def command(args: list[str], out: Path) -> list[str]:
    return [sys.executable, "-m", "referee", "tournament", *args, "--out", str(out), "-q"]


def measure(name: str, args: list[str], mid: object, root: Path) -> None:
    whole, killed = root / f"{name}-whole", root / f"{name}-killed"
    started = time.monotonic()
    subprocess.run(command(args, whole), cwd=REPO, check=True, capture_output=True)
    print(f"{name}: uninterrupted run {time.monotonic() - started:.1f} s, {len(rows(whole))} games")
    referee = subprocess.Popen(command(args, killed), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        state = rows(killed)
        if state and mid(state):  # type: ignore[operator]
            break
        time.sleep(0.005)
    os.kill(referee.pid, signal.SIGKILL)
    referee.communicate()
    state = rows(killed)
    done = [r for r in state if r[5] == "done"]
    running = [r for r in state if r[5] == "running"]
    print(
        f"  killed with SIGKILL: {len(done)} done, {len(running)} running"
        f" ({', '.join(f'g{r[0]:04d} {r[3]}-{r[4]} encounter {r[1]} game {r[2]}' for r in running)}),"
        f" {len(state) - len(done) - len(running)} pending; games.jsonl has"
        f" {len((killed / 'games.jsonl').read_text().splitlines())} lines"
    )
    started = time.monotonic()
    result = subprocess.run(command(args, killed), cwd=REPO, capture_output=True, text=True)
    finished = [line for line in result.stderr.splitlines() if "complete" in line]
    print(f"  resumed (exit {result.returncode}, {time.monotonic() - started:.1f} s): {' '.join(finished)}")
    final, reference = rows(killed), rows(whole)
    ids = [line.split('"game_id":"')[1][:5] for line in (killed / "games.jsonl").read_text().splitlines()]
    same = sorted((*r[:5], r[6]) for r in final) == sorted((*r[:5], r[6]) for r in reference)
    print(
        f"  games.jsonl: {len(ids)} games, {len(set(ids))} distinct; database: {len(final)} games, all done:"
        f" {all(r[5] == 'done' for r in final)}; the same games (pairings, colours) and results as the"
        f" uninterrupted run: {same}"
    )
    if not same:
        for mine, theirs in zip(final, reference, strict=False):
            if (*mine[:5], mine[6]) != (*theirs[:5], theirs[6]):
                print(f"    resumed {mine}  uninterrupted {theirs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="11x11")
    parser.add_argument("--jobs", default="2")
    args = parser.parse_args()
    common = ["--size", args.size, "--tc", "30+1", "-j", args.jobs, *(f for b in BOTS for f in ("--bot", b))]
    with tempfile.TemporaryDirectory(prefix="format-resume-") as root:

        def mid_round_2(state: list[tuple[int, int, int, str, str, str, str | None]]) -> bool:
            # Round 2 (encounters 2 and 3 of a five-bot Swiss) under way, one of its games done.
            second = [r for r in state if r[1] // 2 == 1]
            return any(r[5] == "done" for r in second) and any(r[5] == "running" for r in second)

        measure("swiss", ["--format", "swiss", "--rounds", "3", *common], mid_round_2, Path(root))

        def mid_encounter(state: list[tuple[int, int, int, str, str, str, str | None]]) -> bool:
            # A semi-final (encounter 4 or 5) with a game done and one running.
            semis = [r for r in state if r[1] in (4, 5)]
            return any(r[5] == "done" for r in semis) and any(r[5] == "running" for r in semis)

        measure("knockout", ["--format", "knockout", "--games", "4", *common], mid_encounter, Path(root))


if __name__ == "__main__":
    main()
