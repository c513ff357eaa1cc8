"""Fit the strong bot's horizon evaluation to self-play games (sample_bots/tuning.py says how).

    python benchmarks/tune_evaluation.py play games.jsonl [--games 150] [--seconds 0.05] [--seed 1] [--side strong]
    python benchmarks/tune_evaluation.py fit games.jsonl [more.jsonl ...] [--side strong] [--ridge 1]

`play` appends self-play games of a side (as in bench_search_match.py: `strong`, or with overrides such
as `strong,weights=none,q_width=2`, strong 1.2, before its fitted evaluation) from random openings of
2 to 8 plies, one JSON line each: the board, komi, moves and final margin. Run two at once (different seeds,
different files) to use both cores.

`fit` resolves every position of those games to a quiet leaf with the side's quiescence search, fits the
weights, and prints them as a `Weights(...)` to paste into sample_bots/strong.py, with how well they and
the side's own evaluation predict the final margins of the games held out (every other game): R² and the
root-mean-square error in points. A better fit is a candidate, not a result: only a match
(bench_search_match.py) says whether the search plays better with it.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.rules import Position
from sample_bots.search import Settings, Weights, choose_move
from sample_bots.tuning import FEATURES, fit, predict, samples, settings_of


def play(path: Path, games: int, seconds: float, seed: int, settings: Settings, size: int, komi: float) -> None:
    rng = random.Random(seed)
    with path.open("a", encoding="utf-8") as out:
        for number in range(1, games + 1):
            position = Position(size, size, komi)
            for _ in range(rng.choice((2, 4, 6, 8))):
                position.push(rng.choice(position.legal_placements()))
            start = position.copy()
            tables: dict[bool, dict[int, tuple[int, int, float, int, bool]]] = {True: {}, False: {}}
            while not position.is_over():
                table = tables[position.turn is start.turn] if settings.keep_table else None
                info = choose_move(
                    position, seconds, seed=rng.randrange(1 << 30), use_all=True, settings=settings, table=table
                )
                position.push(info.move)
            outcome = position.outcome()
            assert outcome is not None
            margin = outcome.black_score - outcome.white_score
            moves = [str(m) for m in position.history]
            out.write(json.dumps({"size": size, "komi": komi, "moves": moves, "margin": margin}) + "\n")
            out.flush()
            print(f"game {number}: {len(moves)} moves, margin {margin:+g}", flush=True)


def load(paths: Sequence[Path]) -> list[tuple[Position, list[str], float]]:
    games = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                game = json.loads(line)
                games.append((Position(game["size"], game["size"], game["komi"]), game["moves"], float(game["margin"])))
            except (ValueError, KeyError, TypeError) as error:
                raise SystemExit(f"{path}:{number}: not a game line ({error}); `play` writes them") from error
    return games


def quality(rows: Sequence[tuple[Sequence[float], float]], value: Sequence[float]) -> str:
    targets = [t for _v, t in rows]
    mean = sum(targets) / len(targets)
    spread = sum((t - mean) ** 2 for t in targets)
    error = sum((t - v) ** 2 for t, v in zip(targets, value, strict=True))
    return f"R² {1 - error / spread:.3f}, rms error {math.sqrt(error / len(targets)):.2f}"


def fit_games(paths: Sequence[Path], settings: Settings, ridge: float) -> None:
    started = time.perf_counter()
    games = load(paths)
    if len(games) < 2:
        raise SystemExit(f"{len(games)} games: the fit needs at least 2 (one is held out)")
    learn = samples(games[0::2], settings)
    held = samples(games[1::2], settings)
    weights = fit(learn, ridge)
    print(f"{len(games)} games, {len(learn) + len(held)} quiet positions ({time.perf_counter() - started:.0f} s)")

    def own(values: Sequence[float]) -> float:
        # The side's own evaluation at that leaf, rebuilt from the features' definition: the margin, and
        # with `contested`, each contested tree at that share of its size.
        if settings.weights is not None:
            return predict(settings.weights, values)
        share = 1.0 - settings.contested
        k = len(Weights.BUCKETS)
        mine = sum(values[1 : 1 + 2 * k])
        theirs = sum(values[1 + 2 * k : 1 + 4 * k])
        return values[0] - share * (mine - theirs)

    print(f"held-out games, the new fit:       {quality(held, [predict(weights, v) for v, _t in held])}")
    print(f"held-out games, the side's own:    {quality(held, [own(v) for v, _t in held])}")
    print(f"held-out games, the margin alone:  {quality(held, [v[0] for v, _t in held])}")
    weights = fit(learn + held, ridge)
    print("fitted to all the games:")
    for name, value in zip(FEATURES, weights.vector(), strict=True):
        print(f"  {name:18} {value:+.3f}")
    print(repr(Weights.from_vector([round(w, 3) for w in weights.vector()])))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    play_parser = commands.add_parser("play", help="self-play games to fit on")
    play_parser.add_argument("out", type=Path, help="the JSON-lines file the games are appended to")
    play_parser.add_argument("--games", type=int, default=150)
    play_parser.add_argument("--seconds", type=float, default=0.05, help="search time per move (default 0.05)")
    play_parser.add_argument("--seed", type=int, default=1)
    play_parser.add_argument("--side", default="strong", help="the bot playing both sides (default strong)")
    play_parser.add_argument("--size", type=int, default=8)
    play_parser.add_argument("--komi", type=float, default=3.5)
    fit_parser = commands.add_parser("fit", help="fit the weights to played games")
    fit_parser.add_argument("games", type=Path, nargs="+")
    fit_parser.add_argument("--side", default="strong", help="whose quiescence search finds the quiet leaves")
    fit_parser.add_argument("--ridge", type=float, default=1.0, help="the penalty on the weights' squares (default 1)")
    args = parser.parse_args()
    try:
        settings = settings_of(args.side)
    except ValueError as error:
        raise SystemExit(f"--side {args.side!r}: {error}") from error
    if args.command == "play":
        play(args.out, args.games, args.seconds, args.seed, settings, args.size, args.komi)
    else:
        fit_games(args.games, settings, args.ridge)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
