"""Speed of the search bots' alpha-beta on fixed 8x8 positions: nodes a second and the depth reached.

The inner-loop measure of search work, quicker and steadier than games: for each position (a seeded
opening and positions after 14 to 44 plies of a depth-2 game, spelled out below) it runs the search
alone (no solver) to a fixed depth, printing nodes, seconds, nodes a second and the move, then for a
fixed time, printing the depth reached. The fixed-depth node counts are exact: a change that only
makes the search faster leaves them (and the moves) as they were. A side is `alphabeta`, `strong`
(optionally with `,name=value` overrides of its Settings, as in bench_search_match.py) or
`commit:REV`, the search of an earlier commit, so that before and after are measured in one run.

    python benchmarks/bench_search_speed.py [strong alphabeta commit:0aff18e ...] [--depth 3] [--seconds 0.2]

Run it with `nice` on a shared machine and compare figures from one run only.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.rules import Position
from sample_bots.search import Searcher
from sample_bots.tuning import settings_of

POSITIONS = {
    "opening (4 plies)": "8/6w1/8/2w5/s7/8/4e3/8 b 0 3.5",
    "14 plies": "1ww1s3/n1n3w1/sen5/enw5/s7/8/4e3/8 b 0 3.5",
    "24 plies": "1ww1ssw1/n1n2sw1/sen2s2/enw2ss1/s4s2/5een/4e3/8 b 0 3.5",
    "34 plies": "1ww1ssw1/n1nn1swn/sen2s1w/enws1ss1/s2w1s1w/5een/4e1ww/5we1 b 0 3.5",
    "44 plies": "1ww1ssw1/n1nnsswn/sen1ws1w/enwssss1/s1wwss1w/sn2ween/4e1ww/1w2wwe1 b 0 3.5",
}


def _match_module() -> Any:
    """benchmarks/bench_search_match.py, for its settings parser and its loader of an earlier search."""
    path = Path(__file__).resolve().parent / "bench_search_match.py"
    spec = importlib.util.spec_from_file_location("bench_search_match", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def searcher_factory(spec: str) -> Any:
    """A function position -> a fresh searcher (with `search(seconds, max_depth, use_all=...)` and `nodes`)."""
    if spec.startswith("commit:"):
        module = _match_module().search_at(spec.removeprefix("commit:"))
        return lambda position: module.Searcher(position)
    try:
        settings = settings_of(spec)
    except ValueError as error:
        raise SystemExit(f"{spec!r}: {error} (or a side is commit:REV)") from error
    return lambda position: Searcher(position, settings=settings)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sides", nargs="*", default=["strong", "alphabeta"], help="the searches to measure")
    parser.add_argument("--depth", type=int, default=3, help="the fixed depth (default 3)")
    parser.add_argument("--seconds", type=float, default=0.2, help="the fixed time (default 0.2)")
    args = parser.parse_args()
    for spec in args.sides:
        make = searcher_factory(spec)
        total_nodes, total_seconds, depths = 0, 0.0, []
        print(f"{spec}:")
        for label, text in POSITIONS.items():
            position = Position.from_string(text)
            searcher = make(position)
            started = time.perf_counter()
            info = searcher.search(1e6, max_depth=args.depth, use_all=True)
            seconds = time.perf_counter() - started
            total_nodes += searcher.nodes
            total_seconds += seconds
            timed = make(position)
            timed_info = timed.search(args.seconds, use_all=True)
            depths.append(timed_info.depth)
            print(
                f"  {label:18} depth {args.depth}: {searcher.nodes:8} nodes {seconds:7.3f} s"
                f" {searcher.nodes / seconds / 1000:6.1f} kn/s  {info.move} {info.score:+.2f}"
                f" | {args.seconds:g} s: depth {timed_info.depth:2} ({timed.nodes} nodes)"
            )
        print(
            f"  all: {total_nodes} nodes in {total_seconds:.2f} s = {total_nodes / total_seconds / 1000:.1f} kn/s;"
            f" depths at {args.seconds:g} s: {' '.join(map(str, depths))}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
