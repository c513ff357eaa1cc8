"""The sample bots' strength ladder, measured by real tournaments: random < greedy < alphabeta < strong.

For each time per move (default 0.2 s and 1 s) it runs `alternator tournament` (round robin, real bot
subprocesses, seeded random openings with colours swapped) between the sample bots and a baseline:
the alphabeta of an earlier commit (default 0aff18e, the one before the sound search), run from a
`git worktree` of that commit. It prints each tournament's Elo with its 95% margin, then the
head-to-head results down the ladder and of each search bot against the baseline: the score (W-D-L),
the Elo difference with a 95% interval, the points won as Black and as White (on an opening both
bots play once with each colour, a split says the opening, not the bots, decided), the mean margin
in points (finer than the score when most games are decided by the colour) and any forfeits. With
`--gauntlet strong` only strong meets each of the others, so more games fit in the same time. The
target: strong beats the baseline by at least 150 Elo.

    python benchmarks/bench_ladder.py [--movetimes 0.2,1] [--games 8] [--concurrency 1] [--bots ...]
                                      [--gauntlet strong] [--komi 3.5]

A full run at the defaults is long (10 pairings x games x ~60 moves x time per move): run it with
`nice` on a quiet machine; `--games` sets the precision (the intervals shrink as 1/sqrt(games)).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LADDER = ["random", "greedy", "alphabeta", "strong"]


def elo_of(score: float) -> float:
    """The Elo difference that predicts this expected score (logistic model), clamped at +-1000."""
    if score <= 0:
        return -1000.0
    if score >= 1:
        return 1000.0
    return max(-1000.0, min(1000.0, -400 * math.log10(1 / score - 1)))


@dataclass
class Games:
    """One bot's games against one opponent: its points, its margins (its score minus the other's,
    komi included) and which colour it had, scored games only; forfeits counted by termination."""

    points: list[float] = field(default_factory=list)
    margins: list[float] = field(default_factory=list)
    as_black: list[float] = field(default_factory=list)
    forfeits: Counter[str] = field(default_factory=Counter)


def interval(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% interval (normal approximation)."""
    n = len(values)
    mean = sum(values) / n
    variance = sum((v - mean) ** 2 for v in values) / max(n - 1, 1)
    return mean, 1.96 * math.sqrt(variance / n)


def head_to_head(games: Games) -> str:
    """`score% (W-D-L), Elo +d [lo, hi]`, the split by colour, the mean margin and any forfeits."""
    points = games.points
    n = len(points)
    if n == 0:
        return "no games"
    mean, half = interval(points)
    wins, draws = points.count(1.0), points.count(0.5)
    low, high = elo_of(mean - half), elo_of(mean + half)
    black = [p for p, b in zip(points, games.as_black, strict=True) if b]
    white = [p for p, b in zip(points, games.as_black, strict=True) if not b]
    text = (
        f"{100 * mean:5.1f}% ({wins}-{draws}-{n - wins - draws} of {n}),"
        f" Elo {elo_of(mean):+5.0f} [{low:+.0f}, {high:+.0f}];"
        f" as Black {sum(black):g}/{len(black)}, as White {sum(white):g}/{len(white)}"
    )
    if games.margins:
        margin, margin_half = interval(games.margins)
        text += f"; mean margin {margin:+.1f} ± {margin_half:.1f}"
    if games.forfeits:
        text += "; forfeits: " + ", ".join(f"{count} {kind}" for kind, count in sorted(games.forfeits.items()))
    return text


def results(games_file: Path) -> dict[tuple[str, str], Games]:
    """(bot, opponent) -> the bot's scored games against it (void and aborted games left out)."""
    table: dict[tuple[str, str], Games] = defaultdict(Games)
    for line in games_file.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        black, white, result = record["black"]["name"], record["white"]["name"], record["result"]
        points = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}.get(result)
        if points is None:
            continue
        termination = record.get("termination", "normal")
        scored = record.get("black_score") is not None and record.get("white_score") is not None
        for bot, opponent, bot_points, sign in ((black, white, points, 1), (white, black, 1.0 - points, -1)):
            games = table[bot, opponent]
            games.points.append(bot_points)
            games.as_black.append(sign == 1)
            if scored:
                games.margins.append(sign * (record["black_score"] - record["white_score"]))
            if termination != "normal":
                loser = black if record.get("loser") == "black" else white
                games.forfeits[f"{termination} by {loser}"] += 1
    return table


def run_tournament(bots: list[str], movetime: float, args: argparse.Namespace, out: Path) -> None:
    command = [sys.executable, "-m", "referee", "tournament", "--out", str(out)]
    for bot in bots:
        command += ["--bot", bot]
    if args.gauntlet:
        command += ["--format", "gauntlet"]
    command += [
        "--komi",
        f"{args.komi:g}",
        "--movetime",
        f"{movetime:g}",
        "--games",
        str(args.games),
        "--size",
        args.size,
        "--openings-plies",
        str(args.openings_plies),
        "--openings-seed",
        str(args.openings_seed),
        "--concurrency",
        str(args.concurrency),
    ]
    if args.margin_ms:
        command += ["--margin-ms", str(args.margin_ms)]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL if args.quiet else None)


def report(out: Path, baseline: str, ladder: list[str], gauntlet: str | None) -> None:
    standings = json.loads((out / "standings.json").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in (out / "games.jsonl").read_text(encoding="utf-8").splitlines()]
    forfeits = sum(1 for record in records if record.get("termination") not in ("normal", None))
    if forfeits:
        # Time losses on a loaded machine measure the machine, not the bots: re-run on a quiet one.
        print(f"\n{forfeits} of {len(records)} games were forfeits (see games.jsonl): the figures below include them")
    print(f"\n{'bot':<24} {'games':>5} {'score':>7} {'Elo':>6}  95% margin")
    for bot in standings["bots"]:
        score = "-" if bot.get("score_pct") is None else f"{bot['score_pct']:.1f}%"
        elo = "-" if bot.get("elo") is None else f"{bot['elo']:+.0f}"
        margin = "-" if bot.get("elo_margin") is None else f"± {bot['elo_margin']:.0f}"
        print(f"{bot['name']:<24} {bot['games']:>5} {score:>7} {elo:>6}  {margin}")
    table = results(out / "games.jsonl")
    print(
        "\nhead to head (the first bot's score against the second, Elo difference [95% interval],"
        " by colour, its mean margin in points ± 95%):"
    )
    if gauntlet is not None:
        for opponent in [*ladder, baseline]:
            if opponent != gauntlet:
                print(f"  {gauntlet:>9} vs {opponent:<20} {head_to_head(table[gauntlet, opponent])}")
        return
    for lower, upper in itertools.pairwise(ladder):
        print(f"  {upper:>9} vs {lower:<20} {head_to_head(table[upper, lower])}")
    for bot in ("alphabeta", "strong"):
        if bot in ladder:
            print(f"  {bot:>9} vs {baseline:<20} {head_to_head(table[bot, baseline])}")
    ratings: dict[str, float] = {b["name"]: b["elo"] for b in standings["bots"] if b.get("elo") is not None}
    ordered = all(a in ratings and b in ratings and ratings[a] < ratings[b] for a, b in itertools.pairwise(ladder))
    print(f"ladder {' < '.join(ladder)}: {'holds' if ordered else 'does NOT hold'} by the Elo point estimates")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--movetimes", default="0.2,1", help="seconds per move, comma-separated (default 0.2,1)")
    parser.add_argument("--games", type=int, default=8, help="games per pairing (even: colours swap; default 8)")
    parser.add_argument("--size", default="8", help="board size (default 8)")
    parser.add_argument("--openings-plies", type=int, default=4, help="random opening plies (default 4)")
    parser.add_argument("--openings-seed", type=int, default=1)
    parser.add_argument("--komi", type=float, default=3.5, help="points added to White's score (default 3.5)")
    parser.add_argument(
        "--gauntlet", default=None, help="only this bot (one of --bots) plays each of the others: its head-to-heads"
    )
    parser.add_argument("--concurrency", type=int, default=1, help="games at once (default 1: fair clocks)")
    parser.add_argument(
        "--margin-ms", type=int, default=0, help="grace on every deadline, for a busy machine (see `forfeit` counts)"
    )
    parser.add_argument("--baseline-commit", default="0aff18e", help="the commit whose alphabeta is the baseline")
    parser.add_argument("--out", type=Path, default=None, help="keep the tournaments here (default: a temp dir)")
    parser.add_argument("--quiet", action="store_true", help="hide the tournaments' own progress output")
    parser.add_argument(
        "--bots", default=",".join(LADDER), help="which sample bots play the baseline and each other (default: all)"
    )
    args = parser.parse_args()
    movetimes = [float(t) for t in args.movetimes.split(",")]
    ladder = [bot for bot in LADDER if bot in args.bots.split(",")]
    unknown = set(args.bots.split(",")) - set(LADDER)
    if unknown:
        parser.error(f"--bots: {', '.join(sorted(unknown))} not among {', '.join(LADDER)}")

    work = Path(tempfile.mkdtemp(prefix="bench-ladder-"))
    out_root = args.out or work
    worktree = work / "baseline"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(worktree), args.baseline_commit],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    baseline = f"alphabeta-{args.baseline_commit}"
    # Run from the worktree, its own sample_bots and protocol come first on the path (`-m` puts the
    # working directory first), so the baseline is exactly the old code.
    if args.gauntlet is not None and args.gauntlet not in ladder:
        parser.error(f"--gauntlet: {args.gauntlet} is not among --bots")
    # A gauntlet's first bot plays every other one.
    ordered = ladder if args.gauntlet is None else [args.gauntlet, *(b for b in ladder if b != args.gauntlet)]
    bots = [*ordered, f'name={baseline} cmd="python -m sample_bots.alphabeta" dir={worktree}']
    try:
        for movetime in movetimes:
            out = out_root / f"movetime-{movetime:g}"
            print(f"\n=== {movetime:g} s a move, {args.games} games a pairing, {args.size} board ===", flush=True)
            run_tournament(bots, movetime, args, out)
            report(out, baseline, ladder, args.gauntlet)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
