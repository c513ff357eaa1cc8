"""Referee CPU per move, play workers included: the price of the move path, by process and thread.

    python benchmarks/bench_referee_cpu.py [--games 60] [--concurrency 1 2] [--rounds 3] [--against DIR]
        [--no-ponder]

Plays tournaments of two instant sample bots (random, 8x8, 60+1) and samples, every 20 ms while each runs,
the CPU time of the referee's own threads and of its play worker processes (`referee.play.worker`, which play
the games when two or more run at once), never the bots'. Two runs per measurement, `--games` and 10 games,
and the slope between them per move, so start-up cancels out (as ../shared/tools/referee_cpu.py does, which
counts the referee's process only: with play workers, that misses the moves).

`--against DIR` runs the same measurement with another checkout (its `referee` package, this interpreter)
alternately, round by round, so that the machine's noise hits both alike. `--no-ponder` plays bots that may not
run on their opponent's turn (`ponder=0`): each is frozen after its move and thawed at its turn, at every move.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            found += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    except OSError:
        pass
    return found


def is_worker(pid: int) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    # referee.play_worker: an arena checkout from before the sub-package layout (a baseline)
    return b"referee.play.worker" in command or b"referee.play_worker" in command


def sample(command: list[str], folder: Path) -> tuple[float, float, float]:
    """Run `command` in `folder`: (its own CPU s, its play workers' CPU s, wall s), sampled every 20 ms (so the
    last 20 ms may be missed: take slopes between two runs). A failed command ends the benchmark."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=errors)
        workers: dict[int, float] = {}
        main = 0.0
        while process.poll() is None:
            main = _cpu(process.pid) or main
            for child in children(process.pid):
                if child in workers or is_worker(child):
                    cpu = _cpu(child)
                    if cpu is not None:
                        workers[child] = cpu
            time.sleep(0.02)
        wall = time.perf_counter() - start
        if process.returncode:
            errors.seek(0)
            tail = " / ".join(errors.read().decode(errors="replace").strip().splitlines()[-5:])
            raise SystemExit(f"{command[0]} failed (exit {process.returncode}) in {folder}: {tail}")
    return main, sum(workers.values()), wall


def run(folder: Path, games: int, concurrency: int, out: Path, ponder: bool = True) -> tuple[float, float, int]:
    """(the referee's CPU s, its play workers' CPU s, bot moves) of one tournament."""
    bots = ["a=random", "b=random"] if ponder else ["name=a cmd=random ponder=0", "name=b cmd=random ponder=0"]
    command = [sys.executable, "-m", "referee", "tournament", "--bot", bots[0], "--bot", bots[1]]
    command += ["--games", str(games), "--concurrency", str(concurrency), "--tc", "60+1", "--out", str(out)]
    main, workers, _ = sample(command, folder)
    moves = sum(len(json.loads(line)["moves"]) for line in (out / "games.jsonl").read_text().splitlines() if line)
    return main, workers, moves


def per_move(folder: Path, games: int, concurrency: int, ponder: bool = True) -> tuple[float, float]:
    """The referee's and its workers' CPU per move (us), as the slope between 10 games and `games`."""
    with tempfile.TemporaryDirectory() as scratch:
        short = run(folder, 10, concurrency, Path(scratch) / "short", ponder)
        long = run(folder, games, concurrency, Path(scratch) / "long", ponder)
    moves = max(1, long[2] - short[2])
    return (long[0] - short[0]) / moves * 1e6, (long[1] - short[1]) / moves * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=60)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another checkout to measure alternately (e.g. a baseline)")
    parser.add_argument("--no-ponder", action="store_true", help="bots frozen on their opponent's turn (ponder=0)")
    args = parser.parse_args()
    sides = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    for concurrency in args.concurrency:
        totals: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, folder in sides.items():
                totals[name].append(per_move(folder, args.games, concurrency, not args.no_ponder))
        for name, values in totals.items():
            main_us = statistics.median(value[0] for value in values)
            worker_us = statistics.median(value[1] for value in values)
            spread = ", ".join(f"{a + b:.0f}" for a, b in values)
            print(
                f"concurrency {concurrency}, {name:>7}: referee CPU per move {main_us + worker_us:6.1f} us"
                f" (referee process {main_us:.1f}, play workers {worker_us:.1f}; rounds: {spread});"
                f" load {os.getloadavg()[0]:.1f}"
            )


if __name__ == "__main__":
    main()
