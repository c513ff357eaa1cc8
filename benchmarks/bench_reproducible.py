"""Whether a node-limited match repeats itself: the same match twice, one game at a time and then two at once.

Node limits (`--nodes`) make the sample search bots search to the limit rather than by the clock, so the same
openings should give the same games however loaded the machine is. Prints how many games came out identical
(every move and the result) and the wall time of each run.

    python benchmarks/bench_reproducible.py --size 8x8 --games 10 --nodes 5000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.cli import main as alternator


def _games(out: Path) -> dict[str, tuple[list[str], str]]:
    games = {}
    for line in (out / "games.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        moves = [*record["settings"]["opening"], *(m["move"] for m in record["moves"])]
        games[record["game_id"]] = (moves, record["result"])
    return games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", default="8x8")
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--black", default="strong")
    parser.add_argument("--white", default="alphabeta")
    args = parser.parse_args()
    base = ["match", "--black", args.black, "--white", args.white, "--size", args.size, "--games", str(args.games)]
    base += ["--nodes", str(args.nodes), "--tc", "600+1", "--openings-plies", "2", "--openings-seed", "5"]
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for jobs in ("1", "2"):
            out = Path(folder) / f"j{jobs}"
            started = time.monotonic()
            if alternator([*base, "-j", jobs, "--out", str(out)]):
                raise SystemExit("a match failed")
            runs.append((jobs, time.monotonic() - started, _games(out)))
    (_, first_s, first), (_, second_s, second) = runs
    same = sum(first[g] == second.get(g) for g in first)
    moves = sum(len(m) for m, _ in first.values())
    print(
        f"{args.size}, {args.black} vs {args.white} at {args.nodes} nodes a move, {args.games} games ({moves} moves):"
        f" {same} of {len(first)} identical in both runs (-j 1: {first_s:.0f} s, -j 2: {second_s:.0f} s)"
    )


if __name__ == "__main__":
    main()
