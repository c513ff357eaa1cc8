"""In-process paired matches between two search bots at a fixed time per move: quick tuning of their settings.

Each seeded random opening is played twice, colours swapped, and both sides search in this one process
in turn (no referee, no subprocesses, no clock overheads), so a match measures the searches alone at
equal search time. A side is `alphabeta` or `strong`, optionally with settings changed
(`strong,contested=0.25,quiet_width=1`; see `Settings` in sample_bots/search.py), or `commit:REV`:
the search of an earlier commit (its sample_bots/search.py and sample_bots/solver.py read from git)
with that commit's alphabeta settings, such as `commit:0aff18e`, or `commit:REV:strong` with that
commit's strong settings (its sample_bots/strong.py). Each side keeps its table and its solver from
move to move of a game when its settings say so, as the bots do.
Prints each game, then the first side's score (W-D-L), its Elo difference with a 95% interval, its
points as Black and as White, and its mean margin over each opening's two games (finer than the
score: a stronger side gains points even where the colour decides the winner).

    python benchmarks/bench_search_match.py strong alphabeta [--pairs 20] [--seconds 0.1] [--seed 1]

Run it with `nice` on a shared machine; the figures need many games (about +-6 points in 40 games).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.rules import BLACK, Move, Position
from sample_bots.search import KeptSolver, Settings, Table, choose_move
from sample_bots.tuning import settings_of

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Memory:
    """What one side keeps from move to move of one game: the search's table and the solver."""

    table: Table = field(default_factory=dict)
    kept: KeptSolver = field(default_factory=KeptSolver)


Chooser = Callable[[Position, float, Memory], Move]
"""A side: (position, seconds, what it keeps this game) -> its move."""


def parse_settings(spec: str) -> Settings:
    try:
        return settings_of(spec)
    except ValueError as error:
        raise SystemExit(f"{spec!r}: {error} (or a side is commit:REV)") from error


def settings_side(spec: str) -> Chooser:
    settings = parse_settings(spec)

    def choose(position: Position, seconds: float, memory: Memory) -> Move:
        table = memory.table if settings.keep_table else None
        return choose_move(position, seconds, use_all=True, settings=settings, table=table, kept=memory.kept).move

    return choose


@contextlib.contextmanager
def modules_as(replacements: dict[str, ModuleType]) -> Iterator[None]:
    """While loading an old module: its imports of these names get these modules instead."""
    saved = {name: sys.modules.get(name) for name in replacements}
    sys.modules.update(replacements)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module


def module_at(revision: str, path: str, replacements: dict[str, ModuleType] | None = None) -> ModuleType | None:
    """The file `path` as it was at `revision` (read from git), loaded as a module of its own with
    `replacements` for its imports; None when the file did not exist then."""
    shown = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT, capture_output=True, text=True)
    if shown.returncode != 0:
        return None
    stem = Path(path).stem
    file = Path(tempfile.mkdtemp(prefix="bench-search-")) / f"{stem}_{revision}.py"
    file.write_text(shown.stdout, encoding="utf-8")
    name = f"{stem}_at_{revision}"
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    with modules_as(replacements or {}):
        spec.loader.exec_module(module)
    return module


def search_at(revision: str) -> ModuleType:
    """sample_bots/search.py as it was at `revision`, with the solver of that revision."""
    solver = module_at(revision, "sample_bots/solver.py")
    search = module_at(revision, "sample_bots/search.py", {"sample_bots.solver": solver} if solver else None)
    if search is None:
        raise SystemExit(f"commit:{revision}: sample_bots/search.py is not in that commit")
    return search


def commit_side(spec: str) -> Chooser:
    """`REV` (the alphabeta of that commit) or `REV:strong` (its strong): its search with its settings."""
    revision, _, bot = spec.partition(":")
    search = search_at(revision)
    settings = search.DEFAULT
    if bot == "strong":
        # strong.py imports the search and the bot loop of its commit: give it the old search.
        stub = ModuleType("alphabeta_stub")
        stub.run_search_bot = None  # type: ignore[attr-defined]
        strong = module_at(
            revision, "sample_bots/strong.py", {"sample_bots.search": search, "sample_bots.alphabeta": stub}
        )
        if strong is None:
            raise SystemExit(f"commit:{spec}: sample_bots/strong.py is not in that commit")
        settings = strong.SETTINGS
    elif bot:
        raise SystemExit(f"commit:{spec}: after the revision only ':strong' is understood")
    old_choose = search.choose_move

    def choose(position: Position, seconds: float, memory: Memory) -> Move:
        table = memory.table if settings.keep_table else None
        move: Move = old_choose(position, seconds, use_all=True, settings=settings, table=table).move
        return move

    return choose


def side(spec: str) -> Chooser:
    return commit_side(spec.removeprefix("commit:")) if spec.startswith("commit:") else settings_side(spec)


def elo_of(score: float) -> float:
    score = min(max(score, 1e-3), 1 - 1e-3)
    return -400 * math.log10(1 / score - 1)


def interval(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% interval (normal approximation)."""
    n = len(values)
    mean = sum(values) / n
    variance = sum((v - mean) ** 2 for v in values) / max(n - 1, 1)
    return mean, 1.96 * math.sqrt(variance / n)


def play(opening: Position, first: Chooser, second: Chooser, first_is_black: bool, seconds: float) -> float:
    """One game from `opening`; returns the first side's margin (its score minus the other's, komi included)."""
    position = opening.copy()
    memories = {True: Memory(), False: Memory()}
    while not position.is_over():
        first_to_move = (position.turn is BLACK) == first_is_black
        chooser = first if first_to_move else second
        position.push(chooser(position, seconds, memories[first_to_move]))
    outcome = position.outcome()
    assert outcome is not None
    margin = outcome.black_score - outcome.white_score
    return margin if first_is_black else -margin


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("first", help="the side measured, e.g. strong or 'strong,contested=0.25'")
    parser.add_argument("second", help="its opponent, e.g. alphabeta or commit:0aff18e")
    parser.add_argument("--pairs", type=int, default=20, help="openings, each played with both colours (default 20)")
    parser.add_argument("--seconds", type=float, default=0.1, help="search time per move (default 0.1)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random openings (default 1)")
    parser.add_argument("--plies", type=int, default=4, help="random opening plies (default 4)")
    parser.add_argument("--size", type=int, default=8, help="board width and height (default 8)")
    parser.add_argument("--komi", type=float, default=3.5)
    args = parser.parse_args()
    first, second = side(args.first), side(args.second)

    rng = random.Random(args.seed)
    openings = []
    for _ in range(args.pairs):
        position = Position(args.size, args.size, args.komi)
        for _ in range(args.plies):
            placements = position.legal_placements()
            if placements:
                position.push(rng.choice(placements))
        openings.append(position)

    points: list[float] = []
    as_black: list[float] = []
    pair_margins: list[float] = []
    started = time.perf_counter()
    for number, opening in enumerate(openings, 1):
        pair = 0.0
        for first_is_black in (True, False):
            margin = play(opening, first, second, first_is_black, args.seconds)
            point = 1.0 if margin > 0 else 0.0 if margin < 0 else 0.5
            points.append(point)
            if first_is_black:
                as_black.append(point)
            pair += margin
            colour = "Black" if first_is_black else "White"
            print(f"opening {number:3} {args.first} as {colour}: margin {margin:+6.1f}", flush=True)
        pair_margins.append(pair / 2)

    n = len(points)
    mean, half = interval(points)
    wins, draws = points.count(1.0), points.count(0.5)
    margin, margin_half = interval(pair_margins)
    print(
        f"\n{args.first} vs {args.second} at {args.seconds:g} s a move, {n} games:"
        f" {sum(points):g}/{n} = {100 * mean:.1f}% ({wins}-{draws}-{n - wins - draws}),"
        f" Elo {elo_of(mean):+.0f} [{elo_of(mean - half):+.0f}, {elo_of(mean + half):+.0f}];"
        f" as Black {sum(as_black):g}/{len(as_black)}, as White {sum(points) - sum(as_black):g}/{n - len(as_black)};"
        f" mean margin {margin:+.1f} ± {margin_half:.1f}; {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
