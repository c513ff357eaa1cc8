"""What the sandbox costs a bot at start-up: the time from starting it to its hello, with and without it.

    python benchmarks/bench_sandbox_start.py [--runs 20] [--bot random]

For each variant (plain; memory limit only, `prlimit`; sandbox, `bwrap`; sandbox and memory limit) the
sample bot is started `--runs` times through `open_bot` and timed from just before the process is
started until its `hello` reply is complete (`handshake`), then stopped. Variants are interleaved run by
run so that machine noise hits them all alike; the median and the 10th/90th percentiles are printed.
Variants whose tool is missing are skipped with a note. The sandbox changes nothing per move (the bot
talks to the referee over the same pipes), so start-up is the whole cost.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.play.process import open_bot  # noqa: E402
from referee.run.botspec import BotSpec  # noqa: E402

MEMORY_MB = 512


async def start_to_hello(spec: BotSpec, log_dir: Path) -> float:
    start = time.perf_counter()
    async with open_bot(spec, log_dir) as bot:
        await bot.handshake()
        elapsed = time.perf_counter() - start
    return elapsed


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def main(runs: int, bot: str) -> None:
    base = BotSpec(name=bot, command=[sys.executable, "-m", f"sample_bots.{bot}"], dir=ROOT)
    variants = {"plain": base}
    if shutil.which("prlimit"):
        variants[f"memory limit ({MEMORY_MB} MiB)"] = base.model_copy(update={"memory_mb": MEMORY_MB})
    else:
        print("prlimit not found: the memory-limit variants are skipped (apt-get install util-linux)")
    if shutil.which("bwrap"):
        variants["sandbox"] = base.model_copy(update={"sandbox": True})
        if shutil.which("prlimit"):
            variants[f"sandbox + memory limit ({MEMORY_MB} MiB)"] = base.model_copy(
                update={"sandbox": True, "memory_mb": MEMORY_MB}
            )
    else:
        print("bwrap not found: the sandbox variants are skipped (apt-get install bubblewrap)")
    times: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as logs:
        for spec in variants.values():  # one warm-up each: the page cache, bytecode
            await start_to_hello(spec, Path(logs))
        for _ in range(runs):
            for name, spec in variants.items():
                times[name].append(await start_to_hello(spec, Path(logs)))
    plain = statistics.median(times["plain"])
    print(f"start to hello of sample_bots.{bot}, {runs} runs each (ms): median [p10, p90], vs plain")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"  {name:34} {median * 1000:7.1f}  [{percentile(values, 0.1) * 1000:6.1f},"
            f" {percentile(values, 0.9) * 1000:6.1f}]  {(median - plain) * 1000:+6.1f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--bot", default="random")
    options = parser.parse_args()
    trio.run(main, options.runs, options.bot)
