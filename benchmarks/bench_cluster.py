"""Cluster throughput: games per minute with instant bots, locally (2 slots) and on a Dask cluster of two one-slot
workers on this machine; and what the coordinator spends per game.

    python benchmarks/bench_cluster.py [--games 10] [--size 6] [--rounds 2]

Three instant bots (tests/bots/testbot.py: the first legal placement at once) play a round robin of `--games`
games per pairing, exactly as `alternator tournament` does, first with `--concurrency 2` in this process, then
with `--cluster` on a real `dask scheduler` and two `dask worker --nthreads 1` processes started here on
127.0.0.1 (torn down at the end). Both include starting the bot processes. Figures per run:

- games per minute of wall time;
- the coordinator's CPU per game (this process: scheduling, committing, standings; locally also every
  game's referee work, on the cluster the Dask client instead);
- on the cluster, the queue+dispatch per game: submit to result, minus the game's own duration measured
  on the worker (scheduler round trips, serialisation, the result's way back).

On one machine the scheduler, the workers and the coordinator share its cores, so the cluster cannot be
faster than local slots here: the figure to read is the coordinator's cost per game, which bounds how many
games per minute one coordinator can feed across real machines.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.cluster.config import ClusterConfig  # noqa: E402
from referee.cluster.dask import Cluster, ClusterPlayers  # noqa: E402
from referee.run.config import RunPlan, parse_config, resolve_plan  # noqa: E402
from referee.run.runner import Runner  # noqa: E402

TESTBOT = ROOT / "tests" / "bots" / "testbot.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_plan(out: Path, games: int, size: int) -> RunPlan:
    bots = [{"name": name, "command": [sys.executable, str(TESTBOT)]} for name in ("a", "b", "c")]
    data = {"bots": bots, "games": games, "size": size, "time_control": "60+1", "concurrency": 2}
    return resolve_plan(parse_config(data, source="bench"), base_dir=ROOT, source="bench", default_out=out)


def start_cluster(log_dir: Path, workers: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """A scheduler and `workers` one-thread workers, each in its own process group."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = [sys.executable, "-m", "distributed.cli.dask_scheduler"]  # `dask scheduler`
    worker = [sys.executable, "-m", "distributed.cli.dask_worker"]  # `dask worker`
    commands = [[*scheduler, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]]
    commands += [[*worker, address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"]] * workers
    processes = []
    for index, command in enumerate(commands):
        with (log_dir / f"dask-{index}.log").open("wb") as log:
            processes.append(subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=log, start_new_session=True))
    return address, processes


def stop_cluster(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in reversed(processes):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def run_local(out: Path, games: int, size: int) -> tuple[float, float, int]:
    """Wall seconds, coordinator CPU seconds and games played with two local slots."""
    plan = make_plan(out, games, size)
    start, cpu = time.perf_counter(), time.process_time()
    summary = trio.run(Runner(plan).run)
    return time.perf_counter() - start, time.process_time() - cpu, summary.played_now


def run_cluster(out: Path, games: int, size: int, address: str) -> tuple[float, float, int, list[float], int]:
    """Wall seconds, coordinator CPU seconds, games played, dispatch latencies (s) and the cluster's slots."""
    plan = make_plan(out, games, size)

    async def main() -> tuple[float, float, int, list[float], int]:
        cluster = await Cluster.connect(ClusterConfig(address=address))
        try:
            await cluster.preflight(plan.bots)
            start, cpu = time.perf_counter(), time.process_time()
            summary = await Runner(plan, players=ClusterPlayers(cluster, plan.bots)).run()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
            latencies = [s.overhead_s / max(1, s.games + s.void) for s in cluster.stats.values()]
            for line in cluster.summary_lines():
                print(f"    {line}")
            return elapsed, cpu, summary.played_now, latencies, cluster.slots
        finally:
            await cluster.close()

    return trio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=10, help="games per pairing (3 pairings)")
    parser.add_argument("--size", type=int, default=6, help="board size")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each kind (the best is kept)")
    args = parser.parse_args()
    print(f"{3 * args.games} games per run (3 instant bots, {args.size}x{args.size}), best of {args.rounds}")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        local = [run_local(base / f"local-{i}", args.games, args.size) for i in range(args.rounds)]
        address, processes = start_cluster(base, 2)
        try:
            from distributed import Client

            client = Client(address, timeout=30, set_as_default=False)  # type: ignore[no-untyped-call]
            client.wait_for_workers(2, timeout=60)
            client.close()  # type: ignore[no-untyped-call]
            print(f"  cluster: scheduler {address}, 2 workers x 1 thread, all on this machine")
            remote = [run_cluster(base / f"cluster-{i}", args.games, args.size, address) for i in range(args.rounds)]
        finally:
            stop_cluster(processes)
    best_local = min(local, key=lambda r: r[0])
    best_remote = min(remote, key=lambda r: r[0])
    local_gpm = 60 * best_local[2] / best_local[0]
    remote_gpm = 60 * best_remote[2] / best_remote[0]
    local_cpu = 1000 * best_local[1] / best_local[2]
    print(f"local, 2 slots:          {local_gpm:7.0f} games/min   coordinator CPU {local_cpu:6.1f} ms/game")
    print(
        f"cluster, 2x1-slot:       {remote_gpm:7.0f} games/min   coordinator CPU"
        f" {1000 * best_remote[1] / best_remote[2]:6.1f} ms/game   queue+dispatch"
        f" {1000 * statistics.mean(best_remote[3]):.0f} ms/game ({best_remote[4]} slots)"
    )
    print(f"cluster / local:         {remote_gpm / local_gpm:.2f}x")
    cost = best_remote[1] / best_remote[2]
    print(f"one coordinator could feed at most ~{60 / cost:.0f} games/min at this cost per game (CPU-bound)")


if __name__ == "__main__":
    main()
