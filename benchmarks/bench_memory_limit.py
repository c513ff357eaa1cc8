"""A memory limit real runtimes fit: a JVM-like bot under `--memory-mb 256`, held on resident memory or address space.

    python benchmarks/bench_memory_limit.py [--memory-mb 256] [--touch 100 300]

The test bot's `jvm` mode (tests/bots/testbot.py) does what a JVM, Go or Node runtime does: at start-up it
reserves 8 GiB of address space it never touches (PROT_NONE, as a JVM reserves its heap), then on its first
turn touches `--touch` MiB and keeps them. For each amount it plays one game against the sample bot random
under `--memory-mb`, in two ways:

- cgroup: as the arena does on this host (a memory cgroup where there is one: v2 `memory.max` with swap off,
  or v1 `memory.limit_in_bytes` + `memory.memsw.limit_in_bytes`);
- address space: as on a host without a memory cgroup (`prlimit --as`, the fallback).

Printed per game: the outcome, the reason, the bot's address space (VmSize) and resident memory (VmRSS, peak
VmHWM) at the end of a game it survived, and how the limit was held (from the record).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.host import containment  # noqa: E402
from referee.play.game import run_game  # noqa: E402
from referee.play.process import open_bot  # noqa: E402
from referee.record import GameSettings  # noqa: E402
from referee.run.botspec import BotSpec  # noqa: E402
from referee.timing.clock import parse_time_control  # noqa: E402

TESTBOT = ROOT / "tests" / "bots" / "testbot.py"


@contextmanager
def address_space_only() -> Iterator[None]:
    """Containment as on a host without a memory cgroup: --memory-mb limits the address space."""
    real = containment.host_support()
    fallback = dataclasses.replace(
        real, v2_controllers=real.v2_controllers - {"memory"}, memory=None, memory_problem="benchmark"
    )
    saved = containment.host_support
    containment.host_support = lambda: fallback  # type: ignore[assignment]
    try:
        yield
    finally:
        containment.host_support = saved


def memory_status(pid: int) -> str:
    """VmSize, VmRSS and VmHWM of a live process, MiB."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "gone"
    fields = {line.split(":")[0]: int(line.split()[1]) >> 10 for line in lines if line.startswith("Vm")}
    return (
        f"VmSize {fields.get('VmSize', 0)} MiB, VmRSS {fields.get('VmRSS', 0)} MiB, VmHWM {fields.get('VmHWM', 0)} MiB"
    )


async def play(touch: int, memory_mb: int, log_dir: Path) -> None:
    jvm = BotSpec(name="jvm", command=[sys.executable, str(TESTBOT), "jvm", str(touch)], memory_mb=memory_mb)
    sample = BotSpec(name="random", command=[sys.executable, "-m", "sample_bots.random"], dir=ROOT)
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("20+0.5"))
    async with open_bot(jvm, log_dir) as black, open_bot(sample, log_dir) as white:
        record = await run_game("jvm", black, white, settings)
        status = memory_status(black.pid) if record.termination.value == "normal" else "killed"
    outcome = "loses" if record.loser == "black" else "plays"
    print(f"  touches {touch:4} MiB: {outcome} ({record.termination.value})")
    print(f"    reason: {record.reason}")
    print(f"    memory at the end: {status}")
    held = (record.black.containment or "").rsplit("; memory limit: ", 1)[-1]
    print(f"    limit held as: {held}")


async def main(args: argparse.Namespace) -> None:
    print(f"containment here: {containment.host_support().describe()}")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as folder:
        for way in ("cgroup", "address space"):
            print(f"\n{way}, --memory-mb {args.memory_mb}:")
            if way == "cgroup" and containment.host_support().memory_cgroup is None:
                print(f"  (no memory cgroup here: {containment.host_support().memory_problem})")
                continue
            with address_space_only() if way == "address space" else contextmanager(iter_none)():
                for touch in args.touch:
                    await play(touch, args.memory_mb, Path(folder) / "logs")


def iter_none() -> Iterator[None]:
    yield


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory-mb", type=int, default=256)
    parser.add_argument("--touch", type=int, nargs="+", default=[100, 300], help="MiB the bot touches")
    trio.run(main, parser.parse_args())
