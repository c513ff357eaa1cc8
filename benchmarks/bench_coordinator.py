"""The referee's cost per game, its process and its play workers apart: CPU and how many times each ran.

    python benchmarks/bench_coordinator.py [--concurrency 2] [--rounds 3] [--window 8] [--against DIR]

Starts a long tournament of two instant C bots (`instant_bot.c`, built here with cc; 8x8, 60+1) and, once it is
under way, reads every thread's schedstat (CPU time and times run on a CPU) and voluntary context switches
twice, `--window` seconds apart, counting the games stored between the two reads (games.jsonl's lines). Per
game: the referee process's (the coordinator; with one game at a time, its play thread too) and the play
workers' (`referee.play.worker`) CPU, runs and sleeps. The bots are not counted.

CPU per game swings with the machine's load; runs and sleeps per game hardly do: they count the hand-overs
between the play loops and the coordinator (each wakes a process), so a change that adds one shows at once.
`--against DIR` measures another checkout (its `referee` package, this interpreter) alternately, round by round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_referee_cpu import children, is_worker  # noqa: E402
from benchmarks.bench_vs_fastchess import compile_c  # noqa: E402

Figures = dict[str, tuple[float, float, float]]
"""'referee' (its process) / 'workers' -> (CPU us, runs, sleeps) per game."""


def _threads(pid: int) -> tuple[int, int, int]:
    """The summed CPU ns, runs on a CPU and voluntary switches of every thread of `pid` (zeros once it is gone)."""
    cpu = runs = sleeps = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0, 0, 0
    for task in tasks:
        try:
            stat = Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()
            status = Path(f"/proc/{pid}/task/{task}/status").read_text()
        except OSError:
            continue
        cpu, runs = cpu + int(stat[0]), runs + int(stat[2])
        sleeps += int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    return cpu, runs, sleeps


def _snapshot(pid: int, games_file: Path) -> tuple[dict[str, list[int]], int]:
    parts = {"referee": list(_threads(pid)), "workers": [0, 0, 0]}
    for child in children(pid):
        if is_worker(child):
            parts["workers"] = [a + b for a, b in zip(parts["workers"], _threads(child), strict=True)]
    try:
        with games_file.open("rb") as file:
            games = sum(1 for _ in file)
    except OSError:
        games = 0
    return parts, games


def measure(folder: Path, bot: Path, concurrency: int, warm_s: float, window_s: float) -> Figures:
    """One steady window of a tournament run by the checkout at `folder`."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        command = [sys.executable, "-m", "referee", "tournament", "--bot", f"a={bot}", "--bot", f"b={bot}"]
        command += ["--games", "100000", "--concurrency", str(concurrency), "--tc", "60+1", "--out", str(out)]
        process = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(warm_s)
            before, games_before = _snapshot(process.pid, out / "games.jsonl")
            time.sleep(window_s)
            after, games_after = _snapshot(process.pid, out / "games.jsonl")
        finally:
            process.kill()
            _, errors = process.communicate()
        games = games_after - games_before
        if games <= 0:
            tail = " / ".join(errors.decode(errors="replace").strip().splitlines()[-3:])
            raise SystemExit(f"no game finished in the window ({folder}): {tail or 'no error output'}")
        return {
            part: (
                (after[part][0] - before[part][0]) / games / 1e3,
                (after[part][1] - before[part][1]) / games,
                (after[part][2] - before[part][2]) / games,
            )
            for part in before
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", type=float, default=4.0, help="seconds before the window (start-up left out)")
    parser.add_argument("--window", type=float, default=8.0, help="seconds measured")
    parser.add_argument("--against", type=Path, help="another checkout to measure alternately (e.g. a baseline)")
    args = parser.parse_args()
    sides = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    with tempfile.TemporaryDirectory() as build:
        bot = compile_c(ROOT / "benchmarks" / "instant_bot.c", Path(build))
        for concurrency in args.concurrency:
            rounds: dict[str, list[Figures]] = {name: [] for name in sides}
            for _ in range(args.rounds):
                for name, folder in sides.items():
                    rounds[name].append(measure(folder, bot, concurrency, args.warm, args.window))
            for name, figures in rounds.items():
                shown = []
                for part in ("referee", "workers"):
                    cpu, runs, sleeps = (statistics.median(f[part][i] for f in figures) for i in range(3))
                    if cpu or runs:
                        shown.append(f"{part} {cpu:6.0f} us CPU, {runs:5.2f} runs, {sleeps:5.2f} sleeps")
                print(
                    f"concurrency {concurrency}, {name:>7}, per game: {'; '.join(shown)}"
                    f" (medians of {len(figures)}; load {os.getloadavg()[0]:.1f})"
                )


if __name__ == "__main__":
    main()
