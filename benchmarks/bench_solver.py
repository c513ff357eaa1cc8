"""Speed of the exact solver (sample_bots/solver.py) on the empty small boards, next to a C reference.

For each board it solves the empty position (komi plays no part in the margin) three ways and prints
the value, the nodes and the CPU time (time.process_time, so that a busy machine does not count):
- `C`: benchmarks/solver_ref.c, a straightforward negamax with a transposition table of the same
  rules, built here with `cc -O2` into a temporary folder; it reports its own CPU time and nodes;
- `now`: the solver in this tree, in this process;
- `before`: the solver of an earlier commit (`--before`, default f081fd7; its sample_bots/solver.py read
  from git), given at most `--before-limit` seconds a board.
Every value must agree with the C solver's; a disagreement stops the run with status 1. The last
columns are the CPU time of `now` over C's and over `before`'s.

    nice -n 5 python benchmarks/bench_solver.py [--boards 2x2,3x5] [--before f081fd7] [--before-limit 60]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.rules import Position
from sample_bots import solver as solver_now

ROOT = Path(__file__).resolve().parent.parent
BOARDS = "2x2,2x3,3x2,2x4,4x2,3x3,2x5,5x2,2x6,6x2,3x4,4x3,2x7,7x2,3x5,4x4"


def build_reference(folder: Path) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("this benchmark needs a C compiler (cc or gcc) on PATH for benchmarks/solver_ref.c")
    program = folder / "solver_ref"
    subprocess.run([compiler, "-O2", "-o", str(program), str(ROOT / "benchmarks" / "solver_ref.c")], check=True)
    return program


def solver_at(revision: str) -> ModuleType:
    """sample_bots/solver.py as it was at `revision` (read from git), loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:sample_bots/solver.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="bench-solver-")) / f"solver_{revision}.py"
    path.write_text(source, encoding="utf-8")
    name = f"solver_at_{revision}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_reference(program: Path, width: int, height: int) -> tuple[int, int, float]:
    """The C solver's (margin, nodes, CPU seconds)."""
    out = subprocess.run([str(program), str(width), str(height)], check=True, capture_output=True, text=True).stdout
    margin, _move, nodes, seconds = out.split()
    return int(margin), int(nodes), float(seconds)


def run_python(module: ModuleType, width: int, height: int, limit: float | None) -> tuple[int, int, float] | None:
    """A Python solver's (margin, nodes, CPU seconds), or None when it gave up at `limit` seconds."""
    solver = module.Solver(Position(width, height, 0.0))
    start = time.process_time()
    deadline = None if limit is None else time.perf_counter() + limit
    try:
        solution = solver.solve(deadline)
    except module.SolveAborted:
        return None
    return solution.margin, solver.nodes, time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--boards", default=BOARDS, help=f"comma-separated WxH (default {BOARDS})")
    parser.add_argument("--before", default="f081fd7", help="the earlier commit to compare with ('' for none)")
    parser.add_argument("--before-limit", type=float, default=60.0, help="seconds the earlier solver gets a board")
    args = parser.parse_args()
    boards = [tuple(int(x) for x in spec.split("x")) for spec in args.boards.split(",")]
    before = solver_at(args.before) if args.before else None
    header = f"{'board':>5} {'value':>5} {'C nodes':>12} {'C s':>8} {'now nodes':>11} {'now s':>8}"
    header += f" {'before nodes':>12} {'before s':>9} {'now/C':>6} {'now/before':>10}"
    print(header)
    failed = False
    with tempfile.TemporaryDirectory(prefix="solver-ref-") as folder:
        program = build_reference(Path(folder))
        for width, height in boards:
            c_margin, c_nodes, c_seconds = run_reference(program, width, height)
            now = run_python(solver_now, width, height, None)
            assert now is not None
            old = run_python(before, width, height, args.before_limit) if before is not None else None
            margin, nodes, seconds = now
            row = f"{width}x{height:<3} {margin:>+5} {c_nodes:>12,} {c_seconds:>8.3f} {nodes:>11,} {seconds:>8.3f}"
            if old is None:
                row += f" {'-':>12} {'>' + format(args.before_limit, 'g') if before else '-':>9}"
            else:
                row += f" {old[1]:>12,} {old[2]:>9.3f}"
            row += f" {seconds / max(c_seconds, 1e-4):>6.1f}"
            row += f" {seconds / old[2]:>10.2f}" if old is not None and old[2] > 0 else f" {'-':>10}"
            for name, result in (("now", now), ("before", old)):
                if result is not None and result[0] != c_margin:
                    row += f"  MISMATCH: {name} says {result[0]:+}, C says {c_margin:+}"
                    failed = True
            print(row, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
