"""SPRT throughput of `alternator match` with instant bots against the old one-game-at-a-time match; kill -9, resume.

    python benchmarks/bench_sprt_throughput.py [--games N] [--baseline COMMIT] [--size WxH]

1. Games per minute of an SPRT match between two instant bots (two seeded random sample bots: evenly
   matched, so the test stays undecided and every game is played) at concurrency 1 and 2, and the same
   match run by the old code (COMMIT, default 0aff18e: one game at a time, a JSON file per game), checked
   out with `git worktree add` into a temporary folder and run in the same session. Wall time from launch
   to exit, start-up included.
2. Kill -9 mid-SPRT, then resume: an SPRT match at concurrency 2 is killed with SIGKILL after a third of
   its games and resumed with the same command; the figures (games, pentanomial, LLR) are compared with
   an uninterrupted run with the same openings seed. The bots are deterministic per game id, so the two
   must agree exactly: no pair lost, none counted twice.

It prints figures and asserts nothing about time (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOTS = ["--black", "name=r1 cmd='python3 -m sample_bots.random --seed 1'"]
BOTS += ["--white", "name=r2 cmd='python3 -m sample_bots.random --seed 2'"]
SPRT = ["--sprt", "elo0=-5", "elo1=5", "alpha=0.001", "beta=0.001"]  # evenly matched bots stay undecided


def options(size: str, games: int) -> list[str]:
    return [*BOTS, "--size", size, "--tc", "10+0.1", "--openings-plies", "2", "--games", str(games), *SPRT]


def run_match(tree: Path, args: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "referee", "match", *args], cwd=tree, env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"match in {tree} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, done


def done_count(out: Path) -> int:
    try:
        with sqlite3.connect(f"file:{out / 'run.db'}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone()[0])
    except sqlite3.Error:
        return 0


def statistics(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "match.json").read_text())["statistics"]
    return data


def game_ids(out: Path) -> list[str]:
    return [json.loads(line)["game_id"] for line in (out / "games.jsonl").read_text().splitlines()]


def throughput(work: Path, baseline: str, size: str, games: int) -> None:
    print(f"SPRT match, two instant bots (seeded random), {size} board, {games} games, openings of 2 plies")
    old_tree = work / "old"
    subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), baseline], cwd=ROOT, check=True,
                   capture_output=True)  # fmt: skip
    try:
        elapsed, _ = run_match(old_tree, [*options(size, games), "--out", str(work / "old-out")])
        old_games = len(list((work / "old-out").glob("game-*.json")))
        old_rate = old_games / elapsed * 60
        print(
            f"  old match ({baseline}, one game at a time): {old_games} games in {elapsed:.1f} s = {old_rate:.0f}/min"
        )
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=ROOT, capture_output=True)
    for concurrency in (1, 2):
        out = work / f"new-{concurrency}"
        elapsed, _ = run_match(ROOT, [*options(size, games), "-j", str(concurrency), "--out", str(out)])
        played = len(game_ids(out))
        rate = played / elapsed * 60
        print(
            f"  new runner, --concurrency {concurrency}: {played} games in {elapsed:.1f} s = {rate:.0f}/min"
            f" ({rate / old_rate:.2f}x the old match)"
        )


def kill_and_resume(work: Path, size: str, games: int) -> None:
    print(f"kill -9 mid-SPRT and resume (--concurrency 2, {games} games):")
    args = [*options(size, games), "-j", "2"]
    run_match(ROOT, [*args, "--out", str(work / "whole")])
    whole = statistics(work / "whole")
    out = work / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "referee", "match", *args, "--out", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while done_count(out) < games // 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = done_count(out)
    time.sleep(0.5)  # the orphaned bots exit on EOF
    run_match(ROOT, [*args, "--out", str(out)])
    resumed = statistics(out)
    ids = game_ids(out)
    same = all(resumed[key] == whole[key] for key in ("games", "wins", "draws", "losses", "pentanomial", "llr"))
    print(f"  killed after {killed_at} committed games; resumed with the same command")
    print(
        f"  games: {len(ids)} recorded, {len(set(ids))} distinct (uninterrupted: {whole['games']});"
        f" pentanomial {resumed['pentanomial']} vs {whole['pentanomial']}"
    )
    print(f"  LLR: resumed {resumed['llr']} vs uninterrupted {whole['llr']}: {'the same' if same else 'DIFFERENT'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=200, help="games per run (even; default 200)")
    parser.add_argument("--baseline", default="0aff18e", help="the commit of the old match (default 0aff18e)")
    parser.add_argument("--size", default="5x5", help="board size (default 5x5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sprt-") as temp:
        work = Path(temp)
        throughput(work, args.baseline, args.size, args.games)
        kill_and_resume(work, args.size, args.games)


if __name__ == "__main__":
    main()
