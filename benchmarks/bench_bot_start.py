"""What starting and stopping a bot costs: start to hello, stop, and the referee's own CPU per start and stop.

    python benchmarks/bench_bot_start.py [--runs 40] [--cores]

A minimal C bot (built here with cc: it answers `hello` and exits on `quit` or at the end of its input) is
started `--runs` times in each of two ways, interleaved run by run so that machine noise hits both alike:

- bare: `subprocess.Popen` of the bot with plain pipes, `hello` written, its reply read, stdin closed and
  the exit waited for: the floor any referee on this machine pays;
- referee: `open_bot` (containment as the arena does it: cgroups where writable, the death signal, the
  process-tree note, a stamped stdout, the stderr copy) and `handshake`, then the context's exit (quit,
  grace, kill of anything left, cgroups emptied and kept for the next bot). `--cores` pins the bot as
  --cpu-affinity does.

`--variants` adds, interleaved the same way: `referee v1` (cgroup v1 controllers only, as before cgroup v2 was
used: the host's v2 hierarchy ignored) and `referee mem` (the host's containment with `--memory-mb 256`: one
more cgroup, the memory controller's, where it is held by one), and the referee CPU of the containment alone
for each (a `ProcessTree` set up, its launch line built, described and closed, no process: steadier than
whole starts on a loaded host).

Printed per way: start to hello (p50, p90), stop (p50, p90), and the referee process's CPU time (every
thread; the bot's excluded) per start and stop. The issue's target: start within 3 ms of bare, stop within
2 ms, referee CPU per start + stop under 2 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

try:
    from referee.play.process import open_bot
    from referee.run.botspec import BotSpec
except ImportError:  # an arena checkout from before the sub-package layout (bench_vs_fastchess's baseline)
    from referee.botspec import BotSpec  # type: ignore[import-not-found,no-redef]
    from referee.process import open_bot  # type: ignore[import-not-found,no-redef]

if TYPE_CHECKING:
    from referee.host import containment

C_BOT = r"""
#include <stdio.h>
#include <string.h>
int main(void) {
    char line[65536];
    setvbuf(stdout, NULL, _IONBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        if (strstr(line, "\"quit\"")) return 0;
        if (strstr(line, "\"hello\""))
            fputs("{\"type\":\"hello\",\"protocol\":1,\"name\":\"cbot\"}\n", stdout);
    }
    return 0;
}
"""
HELLO = b'{"type":"hello","protocol":1,"referee":"bench"}\n'


def build(folder: Path) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("bench_bot_start: no C compiler (cc) found")
    source, program = folder / "cbot.c", folder / "cbot"
    source.write_text(C_BOT)
    subprocess.run([compiler, "-O2", "-o", str(program), str(source)], check=True)
    return program


def bare(program: Path) -> tuple[float, float]:
    """Seconds from spawn to the hello reply, and from closing stdin to the exit."""
    start = time.perf_counter()
    process = subprocess.Popen([str(program)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(HELLO)
    process.stdin.flush()
    process.stdout.readline()
    hello = time.perf_counter() - start
    start = time.perf_counter()
    process.stdin.close()
    process.wait()
    process.stdout.close()
    return hello, time.perf_counter() - start


async def referee(
    program: Path, log_dir: Path, cores: list[int] | None, memory_mb: int | None = None
) -> tuple[float, float]:
    # Only the options given, so that an older checkout's open_bot (no cores, no memory limit) runs this too.
    limits: dict[str, Any] = {"memory_mb": memory_mb} if memory_mb else {}
    pinning: dict[str, Any] = {"cores": cores} if cores else {}
    spec = BotSpec(name="cbot", command=[str(program)], **limits)
    start = time.perf_counter()
    async with open_bot(spec, log_dir, **pinning) as bot:
        await bot.handshake()
        hello = time.perf_counter() - start
        start = time.perf_counter()
    return hello, time.perf_counter() - start


def _containment() -> Any:
    """The containment module, where this checkout has it (referee.host.containment, or referee.containment before
    the sub-package layout)."""
    try:
        from referee.host import containment
    except ImportError:
        import referee.containment as containment  # type: ignore[import-not-found,no-redef]
    return containment


def tree_cpu(support: containment.HostSupport, memory_mb: int | None, runs: int = 300) -> list[float]:
    """The referee's CPU per containment set-up and removal alone (no process started), seconds."""
    containment = _containment()
    saved = containment.host_support
    containment.host_support = lambda: support
    cpus = []
    try:
        for _ in range(runs):
            cpu = time.process_time()
            tree = containment.ProcessTree("cbot", max_processes=128, memory_mb=memory_mb)
            tree.launch(["/bin/true"])
            tree.describe()
            tree.close()
            cpus.append(time.process_time() - cpu)
    finally:
        containment.host_support = saved
    return cpus


def ms(values: list[float], fraction: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000:6.2f}"


async def main(args: argparse.Namespace) -> None:
    containment = _containment()
    with tempfile.TemporaryDirectory(prefix="bench-start-") as folder:
        program = build(Path(folder))
        cores = sorted(os.sched_getaffinity(0))[-1:] if args.cores else None
        ways = ["bare", "referee", *(["referee v1", "referee mem"] if args.variants else [])]
        results: dict[str, tuple[list[float], list[float], list[float]]] = {way: ([], [], []) for way in ways}
        host = containment.host_support()
        v1 = containment.detect_host(v2=False) if args.variants else host
        logs = Path(folder) / "logs"
        await referee(program, logs, cores)  # warm up: the spawner thread, host probes
        for _ in range(args.runs):
            for way in ways:
                containment.host_support = (lambda: v1) if way == "referee v1" else (lambda: host)
                cpu = time.process_time()
                if way == "bare":
                    hello, stop = bare(program)
                else:
                    hello, stop = await referee(program, logs, cores, 256 if way == "referee mem" else None)
                results[way][0].append(hello)
                results[way][1].append(stop)
                results[way][2].append(time.process_time() - cpu)
        print(f"containment: {host.describe()}")
        print(f"{args.runs} starts each{' (pinned)' if cores else ''}; ms: p50 p90")
        print(f"{'':12} {'start to hello':>16} {'stop':>16} {'referee CPU per start+stop':>28}")
        for way, (hellos, stops, cpus) in results.items():
            print(
                f"{way:12} {ms(hellos, 0.5)} {ms(hellos, 0.9)}    {ms(stops, 0.5)} {ms(stops, 0.9)}"
                f"    {statistics.median(cpus) * 1000:10.2f}"
            )
        if args.variants:
            print("containment alone (set-up, launch line, close; no process), referee CPU ms: p50 p90")
            for way, support, memory_mb in (
                ("referee", host, None),
                ("referee v1", v1, None),
                ("referee mem", host, 256),
            ):
                cpus = tree_cpu(support, memory_mb)
                print(f"{way:12} {ms(cpus, 0.5)} {ms(cpus, 0.9)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--cores", action="store_true", help="pin the bot to one core, as --cpu-affinity does")
    parser.add_argument("--variants", action="store_true", help="also cgroup v1 only, and with --memory-mb 256")
    trio.run(main, parser.parse_args())
