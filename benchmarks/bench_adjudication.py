"""How much game time solver adjudication saves, and whether it changes results.

Plays the same node- or depth-limited match twice through the real referee (`alternator match`): once played out, once
with `--adjudicate solver`. Node limits make both runs play the same moves up to the adjudication, so every
adjudicated game has its played-out twin: the result adjudicated is compared with the result played out, and
the game time (from the first move to the last, as recorded) with and without adjudication is summed.

    python benchmarks/bench_adjudication.py --size 6x6 --games 10 --nodes 20000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.cli import main as alternator


def _games(out: Path) -> dict[str, dict[str, object]]:
    lines = (out / "games.jsonl").read_text(encoding="utf-8").splitlines()
    return {record["game_id"]: record for record in map(json.loads, lines)}


def _seconds(record: dict[str, object]) -> float:
    started = datetime.fromisoformat(str(record["started_at"]))
    finished = datetime.fromisoformat(str(record["finished_at"]))
    return (finished - started).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", default="6x6")
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument(
        "--depth", type=int, help="a depth limit instead of the node limit (the bots then leave their own solver out)"
    )
    parser.add_argument("--plies", type=int, default=2, help="random opening plies")
    parser.add_argument("--black", default="strong")
    parser.add_argument("--white", default="alphabeta")
    parser.add_argument("--solver-roots", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = [
            "match", "--black", args.black, "--white", args.white, "--size", args.size, "--games", str(args.games),
            "--tc", "600+1", "--openings-plies", str(args.plies), "-j", "1",
        ]  # fmt: skip
        base += ["--depth", str(args.depth)] if args.depth else ["--nodes", str(args.nodes)]
        played_dir, judged_dir = Path(folder) / "played", Path(folder) / "judged"
        adjudicate = ["--adjudicate", "solver", "--solver-roots", str(args.solver_roots)]
        if alternator([*base, "--out", str(played_dir)]) or alternator([*base, *adjudicate, "--out", str(judged_dir)]):
            raise SystemExit("a match failed")
        played, judged = _games(played_dir), _games(judged_dir)
    same = changed = 0
    time_played = time_judged = 0.0
    moves_played = moves_judged = 0
    thinking = thinking_after = 0.0
    for game_id, record in sorted(judged.items()):
        twin = played[game_id]
        time_played += _seconds(twin)
        time_judged += _seconds(record)
        twin_moves: list[dict[str, float]] = twin["moves"]  # type: ignore[assignment]
        cut = len(record["moves"])  # type: ignore[arg-type]
        moves_played += len(twin_moves)
        moves_judged += cut
        # The same moves up to the cut (node or depth limits): what the twin spent after it is what was saved.
        thinking += sum(m["elapsed_ms"] for m in twin_moves) / 1000
        thinking_after += sum(m["elapsed_ms"] for m in twin_moves[cut:]) / 1000
        if record["adjudicated"] is None:
            continue
        if record["result"] == twin["result"]:
            same += 1
        else:
            changed += 1
            print(f"{game_id}: adjudicated {record['result']} ({record['reason']}), played out {twin['result']}")
    adjudicated = same + changed
    print(
        f"{args.size}, {args.games} games, {args.black} vs {args.white} at"
        f" {f'depth {args.depth}' if args.depth else f'{args.nodes} nodes'} a move:"
        f" {adjudicated} adjudicated by the solver, {same} with the played-out result, {changed} different"
    )
    print(
        f"the bots' thinking time (as charged) played out: {thinking:.1f} s, of it after the adjudication:"
        f" {thinking_after:.1f} s ({100 * thinking_after / thinking:.0f}% saved, before the solver's own time)"
    )
    saved = 1 - time_judged / time_played if time_played else 0.0
    print(
        f"wall time of the games (noisy on a shared machine): {time_played:.1f} s played out,"
        f" {time_judged:.1f} s adjudicated: {100 * saved:.0f}% saved; moves {moves_played} -> {moves_judged}"
    )


if __name__ == "__main__":
    main()
