"""Tournament throughput: games per minute with instant bots, at concurrency 1 and 2; and the cost of a commit.

    python benchmarks/bench_tournament_throughput.py [--games 10] [--size 8] [--concurrency 1 2] [--rounds 2]

Three instant bots (tests/bots/testbot.py: it plays the first legal placement at once) play a round robin of
`--games` games per pairing (3 x games in all) under `Runner.run`, exactly as `alternator tournament`
does: processes reused per worker slot, every game committed to SQLite and appended to games.jsonl, the
standings recomputed after every game. The figure is games per minute of wall time, including starting the
bot processes. It measures the referee's own cost per game; real bots spend their thinking time on top.
The referee's CPU time per move is shown too: with instant bots the one referee process (a single trio
thread serving every game) is the bottleneck, so a second slot gains less than 2x on 2 cores.

Then the database write the tournament makes on the trio thread after every game (`record_game`, one
transaction in WAL mode with synchronous=NORMAL) is timed alone with a real record, on the calling thread
and through trio.to_thread as the tournament does it. The median is tiny either way, but the worst case
(a WAL checkpoint, a busy disk) is tens of milliseconds: that is why tournaments write from a thread,
so the stall never lands on the trio thread while it is timing other games' moves.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.record import GameRecord  # noqa: E402
from referee.run.config import parse_config, resolve_plan  # noqa: E402
from referee.run.runner import GAMES_FILE, Runner  # noqa: E402
from referee.run.store import DB_NAME, RunStore  # noqa: E402

TESTBOT = ROOT / "tests" / "bots" / "testbot.py"


def run_tournament(out: Path, games: int, size: int, concurrency: int) -> tuple[float, float, int, int]:
    """Wall seconds, the referee's CPU seconds, games played and bot moves of one tournament."""
    bots = [{"name": name, "command": [sys.executable, str(TESTBOT)]} for name in ("a", "b", "c")]
    data = {"bots": bots, "games": games, "size": size, "time_control": "60+1", "concurrency": concurrency}
    plan = resolve_plan(parse_config(data, source="bench"), base_dir=out, source="bench", default_out=out)
    start, cpu = time.perf_counter(), time.process_time()
    summary = trio.run(Runner(plan).run)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    records = (out / GAMES_FILE).read_text().splitlines()
    moves = sum(len(GameRecord.model_validate_json(line).moves) for line in records)
    return elapsed, cpu, summary.played_now, moves


def time_commits(out: Path, count: int) -> list[float]:
    """Seconds per `record_game` commit, re-recording the finished games of the last tournament."""
    records = [GameRecord.model_validate_json(line) for line in (out / GAMES_FILE).read_text().splitlines()]
    times = []
    with RunStore(out / DB_NAME) as store:
        numbers = sorted(store.scheduled())
        for i in range(count):
            number = numbers[i % len(numbers)]
            record = records[i % len(records)]
            start = time.perf_counter()
            store.record_game(number, record)
            times.append(time.perf_counter() - start)
    return times


def time_thread_commits(out: Path, count: int) -> list[float]:
    """Seconds per `record_game` as the tournament makes it: awaited from trio, run in a worker thread."""
    records = [GameRecord.model_validate_json(line) for line in (out / GAMES_FILE).read_text().splitlines()]
    times: list[float] = []

    async def commits() -> None:
        with RunStore(out / DB_NAME) as store:
            numbers = sorted(store.scheduled())
            for i in range(count):
                start = time.perf_counter()
                await trio.to_thread.run_sync(store.record_game, numbers[i % len(numbers)], records[i % len(records)])
                times.append(time.perf_counter() - start)

    trio.run(commits)
    return times


def describe(times: list[float]) -> str:
    ordered = sorted(times)
    return (
        f"median {statistics.median(times) * 1e6:.0f} us, p99 {ordered[int(len(ordered) * 0.99) - 1] * 1e6:.0f} us,"
        f" max {ordered[-1] * 1e6:.0f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=10, help="games per pairing (3 pairings)")
    parser.add_argument("--size", type=int, default=8, help="board size")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=2, help="tournaments per concurrency (best and median shown)")
    args = parser.parse_args()

    print(f"round robin of 3 instant bots, {args.games} games per pairing, {args.size}x{args.size} board")
    last_out: Path | None = None
    with tempfile.TemporaryDirectory() as temp:
        for concurrency in args.concurrency:
            rates, per_move, cpu_per_move = [], [], []
            for round_ in range(args.rounds):
                out = Path(temp) / f"c{concurrency}-r{round_}"
                elapsed, cpu, played, moves = run_tournament(out, args.games, args.size, concurrency)
                rates.append(played / elapsed * 60)
                per_move.append(elapsed / moves * 1e6)
                cpu_per_move.append(cpu / moves * 1e6)
                last_out = out
            print(
                f"concurrency {concurrency}: {max(rates):7.0f} games/min best, {statistics.median(rates):7.0f} median"
                f"  ({min(per_move):.0f} us of wall time and {min(cpu_per_move):.0f} us of referee CPU per bot move"
                f" at best, {moves // played} moves a game)"
            )
        assert last_out is not None
        on_thread = describe(time_commits(last_out, 500))
        via_thread = describe(time_thread_commits(last_out, 500))
        print(f"record_game commit (WAL, synchronous=NORMAL), on the calling thread: {on_thread}")
        print(f"the same through trio.to_thread (what tournaments do):       {via_thread}")


if __name__ == "__main__":
    main()
