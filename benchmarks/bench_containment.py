"""What containment does for a bot whose opponent burns CPU, and what it costs at start-up.

    python benchmarks/bench_containment.py [--games 1] [--size 6] [--movetime 0.2] [--burners N] [--runs 10]

1. **A CPU burner beside alphabeta.** The sample bot alphabeta (White, a fixed time per move, so it
   searches as deep as its CPU allows) plays a test bot that plays instantly but keeps N processes
   (default: one per core, each in a session of its own) burning CPU all game long. Per variant: the
   mean time per move and mean search depth of alphabeta (its last info), its CPU per move, and the
   burner's CPU during alphabeta's turns (what the record calls off-turn CPU):
   - baseline: the same opponent without burners;
   - no protection: burners running;
   - --cpu-affinity as with 2 games at once: the game's slot gets half the cores, both bots on them;
   - --no-ponder: the burner (all its processes) is frozen during alphabeta's turns.
2. **Start-to-hello cost** of containment: a sample bot started and handshaken `--runs` times through
   `open_bot`, variants interleaved run by run: with /proc tracking only, with cgroups (where writable),
   sandboxed with each; against a bare `trio.lowlevel.open_process` of the same bot as the baseline.

The figures depend on the machine and its load; compare variants of the same run, not runs.
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol.messages import PROTOCOL_VERSION, Hello, encode  # noqa: E402
from referee.host import containment  # noqa: E402
from referee.host.containment import CpuSlots, HostSupport, host_support  # noqa: E402
from referee.play.game import run_game  # noqa: E402
from referee.play.process import open_bot  # noqa: E402
from referee.record import GameRecord, GameSettings  # noqa: E402
from referee.run.botspec import BotSpec  # noqa: E402
from referee.timing.clock import movetime_control  # noqa: E402

TESTBOT = ROOT / "tests" / "bots" / "testbot.py"


@contextmanager
def without_cgroups() -> Iterator[None]:
    """Containment as on a host without writable cgroups: /proc tracking under the subreaper."""
    real = host_support()
    fallback = HostSupport(subreaper=real.subreaper, pdeathsig=real.pdeathsig, cgroup_problem="benchmark")
    saved = containment.host_support
    containment.host_support = lambda: fallback  # type: ignore[assignment]
    try:
        yield
    finally:
        containment.host_support = saved


# -- 1. the burner ---------------------------------------------------------------------------------------


async def play(
    log_dir: Path, burners: int, settings: GameSettings, *, ponder: bool, cores: list[int] | None
) -> GameRecord:
    args = ["burn", str(burners)] if burners else []
    opponent = BotSpec(
        name="burner" if burners else "quiet", command=[sys.executable, str(TESTBOT), *args], ponder=ponder
    )
    alphabeta = BotSpec(name="alphabeta", command=[sys.executable, "-m", "sample_bots.alphabeta"], dir=ROOT)
    async with (
        open_bot(opponent, log_dir, cores=cores) as black,
        open_bot(alphabeta, log_dir, cores=cores) as white,
    ):
        await black.handshake()
        await trio.sleep(0.3)  # the burners up to speed
        record = await run_game("bench", black, white, settings)
    if record.termination != "normal":
        print(f"   (a game ended early: {record.reason})")
    return record


def summarize(records: list[GameRecord]) -> dict[str, float]:
    moves = [m for r in records for m in r.moves if m.color == "white"] or [None]  # type: ignore[list-item]
    if moves == [None]:
        return dict.fromkeys(("moves", "ms_per_move", "depth", "cpu_ms_per_move", "burner_cpu_ms_per_move"), 0.0)
    depths = [m.infos[-1]["depth"] for m in moves if m.infos and "depth" in m.infos[-1]]
    return {
        "moves": len(moves),
        "ms_per_move": statistics.fmean(m.elapsed_ms for m in moves),
        "depth": statistics.fmean(depths) if depths else float("nan"),
        "cpu_ms_per_move": statistics.fmean(m.cpu_ms or 0 for m in moves),
        "burner_cpu_ms_per_move": statistics.fmean(m.opponent_cpu_ms or 0 for m in moves),
    }


async def burner_bench(games: int, size: int, movetime: float, burners: int) -> None:
    settings = GameSettings(width=size, height=size, time_control=movetime_control(movetime))
    half = CpuSlots(2).sets[0]
    variants: list[tuple[str, int, bool, list[int] | None]] = [
        ("baseline (no burner)", 0, True, None),
        ("no protection", burners, True, None),
        (f"--cpu-affinity, 2 slots (cores {half})", burners, True, half),
        ("--no-ponder", burners, False, None),
    ]
    print(
        f"1. alphabeta (White, {movetime:g} s per move, {size}x{size}) against {burners} CPU burner(s) on"
        f" {len(os.sched_getaffinity(0))} core(s); {games} game(s) per variant"
    )
    print(f"   containment: {host_support().describe()}")
    header = f"{'variant':<40} {'moves':>5} {'ms/move':>8} {'depth':>6} {'CPU ms/move':>12}"
    print(f"   {header} {'burner CPU ms/move':>19}")
    with tempfile.TemporaryDirectory() as folder:
        results: dict[str, list[GameRecord]] = {name: [] for name, *_ in variants}
        for _ in range(games):
            for name, count, ponder, cores in variants:
                results[name].append(await play(Path(folder), count, settings, ponder=ponder, cores=cores))
    for name, records in results.items():
        s = summarize(records)
        print(
            f"   {name:<40} {s['moves']:>5.0f} {s['ms_per_move']:>8.1f} {s['depth']:>6.2f}"
            f" {s['cpu_ms_per_move']:>12.1f} {s['burner_cpu_ms_per_move']:>19.1f}"
        )


# -- 2. start-to-hello -----------------------------------------------------------------------------------


async def bare_start_to_hello(command: list[str]) -> float:
    """No containment at all: trio's own open_process, the hello exchange, kill."""
    start = time.perf_counter()
    process = await trio.lowlevel.open_process(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    await process.stdin.send_all(encode(Hello(type="hello", protocol=PROTOCOL_VERSION, referee="bench")))
    data = b""
    while b"\n" not in data:
        data += await process.stdout.receive_some(4096)
    elapsed = time.perf_counter() - start
    process.kill()
    await process.wait()
    await process.stdin.aclose()
    await process.stdout.aclose()
    return elapsed


async def contained_start_to_hello(spec: BotSpec, log_dir: Path, cgroups: bool) -> float:
    if not cgroups:
        with without_cgroups():
            return await contained_start_to_hello(spec, log_dir, True)
    start = time.perf_counter()
    async with open_bot(spec, log_dir) as bot:
        await bot.handshake()
        elapsed = time.perf_counter() - start
    return elapsed


async def start_bench(runs: int) -> None:
    command = [sys.executable, "-m", "sample_bots.random"]
    base = BotSpec(name="random", command=command, dir=ROOT)
    sandboxed = base.model_copy(update={"sandbox": True})
    variants: dict[str, tuple[BotSpec, bool] | None] = {"bare trio.open_process (baseline)": None}
    variants["contained, /proc tracking"] = (base, False)
    if host_support().uses_cgroups:
        variants["contained, cgroups"] = (base, True)
    if shutil.which("bwrap"):
        variants["sandboxed, /proc tracking"] = (sandboxed, False)
        if host_support().uses_cgroups:
            variants["sandboxed, cgroups"] = (sandboxed, True)
    times: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(runs):
            for name, variant in variants.items():
                if variant is None:
                    times[name].append(await bare_start_to_hello(command))
                else:
                    times[name].append(await contained_start_to_hello(variant[0], Path(folder), variant[1]))
    base_median = statistics.median(times["bare trio.open_process (baseline)"])
    print(f"2. start to hello of the random sample bot, {runs} runs each (median, p10-p90, vs the baseline):")
    for name, values in times.items():
        ordered = sorted(values)
        p10, p90 = ordered[len(ordered) // 10], ordered[(len(ordered) * 9) // 10 - (1 if len(ordered) >= 10 else 0)]
        median = statistics.median(values)
        print(
            f"   {name:<36} {median * 1000:7.1f} ms  ({p10 * 1000:.1f}-{p90 * 1000:.1f})"
            f"  {(median - base_median) * 1000:+6.1f} ms"
        )
    if not host_support().uses_cgroups:
        print(f"   (no cgroups here: {host_support().cgroup_problem})")


async def main(args: argparse.Namespace) -> None:
    await burner_bench(args.games, args.size, args.movetime, args.burners)
    await start_bench(args.runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1, help="games per variant of the burner benchmark")
    parser.add_argument("--size", type=int, default=6, help="board size of those games")
    parser.add_argument("--movetime", type=float, default=0.2, help="alphabeta's seconds per move")
    parser.add_argument("--burners", type=int, default=len(os.sched_getaffinity(0)), help="burner processes")
    parser.add_argument("--runs", type=int, default=10, help="starts per variant of the start-to-hello benchmark")
    trio.run(main, parser.parse_args())
