"""The whole-pool rating fit and `alternator export`: time and memory at 50,000 games.

    python benchmarks/bench_ratings.py [--games 50000] [--bots 8 16 50] [--export-games 50000] [--no-export]

fit      `compute_standings` of N synthetic games between B bots of known strength (Elo drawn from N(0, 200), the
         first move worth +30, draws by Davidson's model with nu = 0.3, i.e. 13% between equals; on the reported scale,
         2 / (2 + nu) times these): the counting
         (StandingsTally) and the fit (Newton on the ratings, the first move and the draw parameter, then the
         covariance), each the median of 3; the peak memory Python allocated for the whole (tracemalloc); and how
         near the fit came to the truth (RMS error of the ratings, the first move and nu), as a check that the
         figures timed are the right ones. Also the same games with no draw (nu = 0: the plain logistic fit).
export   `alternator export OUT_DIR --format pgn|csv -o FILE` of a finished N-game match, in a child process: its
         wall time, games per second, the peak RSS of the whole command and the file's size. The directory is
         built as benchmarks/bench_store.py builds one (real random games of the rules engine, padded with infos
         to the 11.5 KB of a real record, saved with the store's own bulk save).
"""

from __future__ import annotations

import argparse
import math
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from protocol.rules import Result  # noqa: E402
from referee.stats.standings import ScoredGame, StandingsTally  # noqa: E402

FIRST_MOVE = 30.0
NU = 0.3
K = math.log(10) / 400


def synthetic_games(games: int, bots: int, nu: float, seed: int = 1) -> tuple[list[ScoredGame], dict[str, float]]:
    """`games` games between `bots` bots of known strength, drawn from Davidson's model with a first-move term."""
    rng = random.Random(seed)
    names = [f"bot{i:02d}" for i in range(bots)]
    strength = {name: rng.gauss(0, 200) for name in names}
    out: list[ScoredGame] = []
    for _ in range(games):
        black, white = rng.sample(names, 2)
        u = K * (strength[black] - strength[white] + FIRST_MOVE) / 2
        z = math.exp(u) + math.exp(-u) + nu
        draw = rng.random()
        result: Result = (
            "1-0" if draw < math.exp(u) / z else "0-1" if draw < (math.exp(u) + math.exp(-u)) / z else "1/2-1/2"
        )
        out.append(ScoredGame(black, white, result))
    return out, strength


def median_time(function: object, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_fit(games: int, bots: int, nu: float) -> None:
    results, strength = synthetic_games(games, bots, nu)
    names = sorted(strength)
    tally = StandingsTally(results)
    count_s = median_time(lambda: StandingsTally(results))
    fit_s = median_time(lambda: tally.standings(names))
    tracemalloc.start()
    standings = StandingsTally(results).standings(names)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    mean = sum(strength.values()) / len(strength)
    scale = 2 / (2 + nu)  # the reported Elo scale (referee.stats.standings): the model's differences times 2 / (2 + nu)
    errors = [(bot.elo or 0.0) - scale * (strength[bot.name] - mean) for bot in standings.bots]
    rms = math.sqrt(sum(e * e for e in errors) / len(errors))
    margin = statistics.median(bot.elo_margin or 0.0 for bot in standings.bots)
    print(
        f"fit      {games:>6} games {bots:>3} bots nu={nu:<4g} count {count_s * 1000:7.1f} ms"
        f"   fit {fit_s * 1000:7.1f} ms"
        f"   peak {peak / 1e6:6.1f} MB   rating RMS error {rms:5.1f} (median margin {margin:5.1f})"
        f"   first move {standings.first_move_elo:+6.1f} ± {standings.first_move_margin:4.1f}"
        f" (true {scale * FIRST_MOVE:+.1f})"
        f"   nu {standings.draw_nu:.3f} (true {nu:g})"
    )


def bench_export(games: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-ratings-") as folder:
        out = Path(folder) / "run"
        # Built in a child process: a child forked from a large parent starts with the parent's pages, and Linux
        # keeps that high-water mark in the child's peak RSS across its exec (the 50k records took 4.9 GB here).
        built = subprocess.run(
            [sys.executable, __file__, "--build", str(out), str(games)], check=True, capture_output=True, text=True
        )
        print(f"export   {built.stdout.strip()}")
        floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for fmt in ("pgn", "csv"):
            target = Path(folder) / f"games.{fmt}"
            argv = [sys.executable, "-m", "referee", "export", str(out), "--format", fmt, "-o", str(target)]
            # GNU time, a small process, forks the export: its peak RSS is then the export's own. Without it, the
            # figure cannot be below this process's RSS at the fork (the floor printed).
            timer = ["/usr/bin/time", "-f", "%M"] if Path("/usr/bin/time").exists() else []
            start = time.perf_counter()
            child = subprocess.Popen([*timer, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=HERE)
            _, errors = child.communicate()
            wall = time.perf_counter() - start
            assert child.returncode == 0, f"export failed ({child.returncode}): {errors[-500:]!r}"
            if timer:
                peak, how = int(errors.decode().split()[-1]), "GNU time"
            else:
                peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                how = f"at least this process's {floor / 1024:.0f} MB"
            print(
                f"export   {fmt}: {games} games in {wall:5.1f} s ({games / wall:7.0f} games/s), peak RSS"
                f" {peak / 1024:6.1f} MB ({how}), file {target.stat().st_size / 1e6:6.1f} MB"
            )


def build_run(out: Path, games: int) -> None:
    from benchmarks.bench_store import build

    built = build(out, games, games)
    print(f"built a {games}-game match in {built['built_s']:.0f} s ({built['record_bytes']} bytes a record)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=50_000)
    parser.add_argument("--bots", type=int, nargs="+", default=[8, 16, 50])
    parser.add_argument("--export-games", type=int, default=50_000)
    parser.add_argument("--no-export", action="store_true")
    parser.add_argument("--build", nargs=2, metavar=("DIR", "GAMES"), help=argparse.SUPPRESS)  # the child's job
    args = parser.parse_args()
    if args.build:
        build_run(Path(args.build[0]), int(args.build[1]))
        return
    for bots in args.bots:
        bench_fit(args.games, bots, NU)
    bench_fit(args.games, args.bots[-1], 0.0)
    if not args.no_export:
        bench_export(args.export_games)


if __name__ == "__main__":
    main()
