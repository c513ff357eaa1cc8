"""This arena beside a baseline checkout of it and beside fastchess, in one run: issue 27's table.

    python benchmarks/bench_vs_fastchess.py [--baseline DIR] [--baseline-commit 3add8e7] [--fastchess PATH]
        [--rounds 2] [--games 200] [--throughput-games 400] [--think-ms 100] [--start-runs 20]
        [--rr-bots 48] [--rr-games 2] [--only ROW ...] [--profile]

Three sides, measured alternately (round by round, side by side, so that the machine's noise hits all alike):

- this: the arena of the checkout this file is in (`python -m referee tournament`, this interpreter);
- baseline: another checkout, run the way `bench_referee_cpu.py --against DIR` runs one (its directory as the
  working directory, so its `referee` package comes first on the path, with this interpreter). `--baseline DIR`
  names it; with `--baseline-commit COMMIT` a DIR that does not exist is made (`git worktree add --detach`;
  without `--baseline`, DIR is ../base-COMMIT beside this checkout);
- fastchess: a fastchess binary (`--fastchess PATH`, else `fastchess` on the PATH), which you build from its
  source yourself (`make -j2` in its checkout); without one the column shows "-".

Each arena checkout's modules are compiled to bytecode first (`compile_arena`: `compileall` of its packages, the
`__pycache__` folders git ignores), as an installed package has them and as every run after the first finds them.
Where PYTHONDONTWRITEBYTECODE is set (it is on the machines these figures were measured on) Python would otherwise
compile them again in every process of every run: 0.4-0.6 s more before a run's first game, which the rows that
count a run's start-up (games per minute, the round robin) would charge to the arena; the per-move rows are slopes,
from which start-up cancels out.

The bots are instant and written in C (built here with cc): `instant_bot.c` for Alternator (the first legal
placement, 62 moves a game on 8x8) and `instant_uci.c` for fastchess (a scripted engine that replays one legal
63-ply game ending in mate: fastchess checks every move, and no move generation is needed). Both take a
thinking time in ms (a sleep before each move). Every tournament uses 60+1 and writes its usual files (the
arena its database and games.jsonl, fastchess a PGN).

Rows (the "referee" is the arena's own processes, its play workers included, never the bots; for fastchess its
process, every thread; CPU is sampled from /proc every 20 ms by `bench_referee_cpu.sample`; wall time runs from
the launch to the last game stored, the games file's modification time, which leaves out the arena's final
report and fastchess's exit, up to a second late as it checks for the end of its games once a second):
- referee CPU per move and wall time per move at concurrency 1 and 2: slopes between a 10-game and a
  `--games`-game run of two instant bots, so start-up cancels out (the wall time includes the bots' instant
  replies and the pipes: the whole cost of a move with a free bot);
- games per minute at concurrency 2 over `--throughput-games` games (start-up included, as above);
- referee CPU while bots think: bots that sleep `--think-ms` a move, concurrency 2, the referee's CPU over a
  steady 10 s window of a run (per thread, in ns: `thinking`), in ms of CPU per second;
- bot start to hello (p50), stop (p50) and the referee's CPU per start + stop: `bench_bot_start.py`'s own
  functions (`bare`, `referee`), run in a process of each arena checkout (arenas only; the bare spawn floor is
  printed beside);
- games per minute of a `--rr-bots`-bot round robin, `--rr-games` games a pairing, concurrency 2 (fastchess
  with `--rr-bots` engines too).

Figures are medians over the rounds, with the range when there are several. The load average (1 min) is shown
for every row: the host is shared, so read the figures with it. No figure is judged here.

`--profile` instead runs tournaments of the instant bots at concurrency 2 for each arena side under cProfile
(`profile_child.py`: the coordinator and, through a wrapped `referee.play.loop._spawn_worker`, every play worker,
each thread on its own CPU clock) and prints where the referee's CPU per move goes: the process CPU per move
of the coordinator and the workers, and the top functions by own time per move: differences between a 10-game
and a `--profile-games`-game run, so that start-up and the final report cancel out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import pstats
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(ROOT))

from benchmarks import bench_bot_start  # noqa: E402
from benchmarks.bench_referee_cpu import children, is_worker, sample  # noqa: E402

TC = "60+1"
SIDES = ("this", "baseline", "fastchess")
ABNORMAL: dict[str, int] = {}
"""Games that did not end normally (void, forfeit, time loss), by checkout (or fastchess): they skew the figures."""
UCI_MOVE = re.compile(r"\b[a-h][1-8][a-h][1-8][qrbn]?\b")

START_CODE = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import referee  # this side's checkout, before bench_bot_start puts its own on the path
sys.path.insert(1, sys.argv[2])
import trio
import bench_bot_start as bench
program, logs, runs = Path(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
out = {"bare": [], "referee": []}
async def main():
    await bench.referee(program, logs, None)  # warm up: imports, the spawner, host probes
    for _ in range(runs):
        cpu = time.process_time()
        out["bare"].append([*bench.bare(program), time.process_time() - cpu])
        cpu = time.process_time()
        out["referee"].append([*(await bench.referee(program, logs, None)), time.process_time() - cpu])
trio.run(main)
print(json.dumps(out))
"""


@dataclass
class Programs:
    bot: Path  # instant_bot (Alternator)
    uci: Path  # instant_uci (fastchess)
    start_bot: Path  # bench_bot_start's hello-only bot


@dataclass
class Cell:
    values: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)


Table = dict[str, dict[str, Cell]]


def compile_c(source: Path, folder: Path) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("bench_vs_fastchess: no C compiler found (cc or gcc): install one (apt-get install gcc)")
    program = folder / source.stem
    built = subprocess.run([compiler, "-O2", "-o", str(program), str(source)], capture_output=True, text=True)
    if built.returncode:
        raise SystemExit(f"bench_vs_fastchess: {source.name} did not compile:\n{built.stderr}")
    return program


def compile_arena(checkout: Path) -> None:
    """Compile a checkout's packages to bytecode now, as an installed package has them (see the module's text)."""
    packages = [str(checkout / name) for name in ("referee", "protocol") if (checkout / name).is_dir()]
    done = subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"bench_vs_fastchess: could not compile {checkout}:\n{done.stdout}{done.stderr}")


def baseline_checkout(directory: Path | None, commit: str | None) -> Path | None:
    """The baseline's checkout: DIR as given, or made from COMMIT with `git worktree add --detach`."""
    if directory is None and commit is None:
        return None
    if directory is None:
        directory = ROOT.parent / f"base-{commit}"
    directory = directory.resolve()
    if not directory.exists():
        if commit is None:
            raise SystemExit(f"bench_vs_fastchess: --baseline {directory} does not exist; give --baseline-commit too")
        made = subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(directory), commit],
            capture_output=True,
            text=True,
        )
        if made.returncode:
            raise SystemExit(f"bench_vs_fastchess: could not check out {commit} at {directory}: {made.stderr.strip()}")
        print(f"baseline: checked out {commit} at {directory}")
    if not (directory / "referee" / "__main__.py").is_file():
        raise SystemExit(f"bench_vs_fastchess: {directory} is not a checkout of this arena (no referee/__main__.py)")
    return directory


def find_fastchess(path: Path | None) -> Path | None:
    if path is None:
        found = shutil.which("fastchess")
        if found is None:
            print(
                "fastchess: not given and not on the PATH, so its column is empty. Build it from its source"
                " (github.com/Disservin/fastchess: `make -j2` in its checkout) and pass --fastchess PATH."
            )
            return None
        path = Path(found)
    path = path.resolve()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise SystemExit(f"bench_vs_fastchess: --fastchess {path} is not an executable file (build it with make)")
    version = subprocess.run([str(path), "-version"], capture_output=True, text=True, timeout=30)
    print(f"fastchess: {path} ({(version.stdout or version.stderr).strip().splitlines()[0]})")
    return path


# One tournament of a side: (referee CPU s, wall s, games, moves).
Run = Callable[[int, int, int, int, Path], tuple[float, float, int, int]]


Command = Callable[[int, int, int, int, Path], tuple[list[str], Path]]
"""A side's tournament as a command: (games, concurrency, think ms, bots, out) -> (argv, working directory)."""


@dataclass
class Side:
    run: Run
    command: Command
    referee: Callable[[int], list[int]]
    """The processes whose CPU is the referee's, given the pid of the one started (its bots left out)."""


def arena_command(checkout: Path, programs: Programs) -> Command:
    def command(games: int, concurrency: int, think_ms: int, bots: int, out: Path) -> tuple[list[str], Path]:
        argv = [sys.executable, "-m", "referee", "tournament"]
        for number in range(1, bots + 1):
            bot = f"{programs.bot} {think_ms}" if think_ms else str(programs.bot)
            argv += ["--bot", f"b{number:02d}={bot}"]
        argv += ["--games", str(games), "--concurrency", str(concurrency), "--tc", TC, "--out", str(out)]
        return argv, checkout

    return command


def arena_side(checkout: Path, programs: Programs) -> Side:
    command = arena_command(checkout, programs)

    def run(games: int, concurrency: int, think_ms: int, bots: int, out: Path) -> tuple[float, float, int, int]:
        argv, folder = command(games, concurrency, think_ms, bots, out)
        begun = time.time()
        main, workers, _ = sample(argv, folder)
        wall = (out / "games.jsonl").stat().st_mtime - begun  # to the last game stored: the final report left out
        records = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines() if line]
        for record in records:
            if record.get("termination") != "normal":
                ABNORMAL[checkout.name] = ABNORMAL.get(checkout.name, 0) + 1
        return main + workers, wall, len(records), sum(len(record["moves"]) for record in records)

    return Side(run, command, lambda pid: [pid, *(child for child in children(pid) if is_worker(child))])


def fastchess_side(binary: Path, programs: Programs) -> Side:
    def command(games: int, concurrency: int, think_ms: int, bots: int, out: Path) -> tuple[list[str], Path]:
        out.mkdir(parents=True, exist_ok=True)
        argv = [str(binary)]
        for number in range(1, bots + 1):
            argv += ["-engine", f"cmd={programs.uci}", f"name=e{number:02d}"]
            argv += [f"args={think_ms}"] if think_ms else []
        # `games` per pairing, as the arena's --games: rounds of 2 games (colours swapped).
        argv += ["-each", f"tc={TC}", "proto=uci", "-rounds", str(max(1, games // 2)), "-games", "2"]
        argv += ["-concurrency", str(concurrency), "-pgnout", f"file={out / 'games.pgn'}", "notation=uci"]
        return argv, out  # in `out`: fastchess saves its config.json where it runs

    def run(games: int, concurrency: int, think_ms: int, bots: int, out: Path) -> tuple[float, float, int, int]:
        argv, folder = command(games, concurrency, think_ms, bots, out)
        begun = time.time()
        main, _, _ = sample(argv, folder)
        # To the last game stored: fastchess checks for the end of its games once a second, so its exit is late.
        wall = (out / "games.pgn").stat().st_mtime - begun
        text = (out / "games.pgn").read_text()
        played = text.count("[Result ")
        if played != text.count('[Termination "normal"]'):
            ABNORMAL["fastchess"] = ABNORMAL.get("fastchess", 0) + played - text.count('[Termination "normal"]')
        moves = len(UCI_MOVE.findall(re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)))
        return main, wall, played, moves

    return Side(run, command, lambda pid: [pid])


def load() -> float:
    return os.getloadavg()[0]


def put(table: Table, row: str, side: str, value: float, loads: Sequence[float]) -> None:
    cell = table.setdefault(row, {}).setdefault(side, Cell())
    cell.values.append(value)
    cell.loads += loads


def per_move(run: Run, games: int, concurrency: int, scratch: Path) -> tuple[float, float]:
    """Referee CPU and wall time per move (us): the slope between 10 games and `games`."""
    short = run(10, concurrency, 0, 2, scratch / "short")
    long = run(games, concurrency, 0, 2, scratch / "long")
    moves = max(1, long[3] - short[3])
    return (long[0] - short[0]) / moves * 1e6, (long[1] - short[1]) / moves * 1e6


THINK_WARMUP_S = 4.0
"""How long a thinking run is left to start its bots and its first games before its window opens."""
THINK_WINDOW_S = 10.0


def thinking(side: Side, think_ms: int, scratch: Path) -> float:
    """Referee CPU per second of wall time (ms/s) while the bots think, over a steady window: a run of two bots that
    sleep `think_ms` a move, concurrency 2, is given `THINK_WARMUP_S`, then its referee's threads are read at the
    start and the end of `THINK_WINDOW_S` (their schedstat: nanoseconds, where /proc's stat counts 10 ms ticks),
    and the run is stopped. A thread that began in the window counts whole; one that ended in it is missed. (The
    slope between a short and a long run, which this replaced, swung by more than the figure itself.)"""
    moves_per_game = 64
    games = 2 * (math.ceil((THINK_WARMUP_S + THINK_WINDOW_S) / (moves_per_game * think_ms / 1000)) + 1)
    argv, folder = side.command(games, 2, think_ms, 2, scratch)
    process = subprocess.Popen(
        argv, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        time.sleep(THINK_WARMUP_S)
        first, begun = _threads_ns(side.referee(process.pid)), time.monotonic()
        time.sleep(THINK_WINDOW_S)
        last, ended = _threads_ns(side.referee(process.pid)), time.monotonic()
        if process.poll() is not None:
            raise SystemExit(
                f"bench_vs_fastchess: {argv[0]} ended before the thinking window closed (exit {process.returncode})"
            )
    finally:
        _stop(process)
    used = sum(ns - first.get(thread, 0) for thread, ns in last.items())
    return used / 1e6 / (ended - begun)


def _threads_ns(pids: Sequence[int]) -> dict[tuple[int, int], int]:
    """The CPU time (ns) of every thread of `pids`, by (pid, thread id)."""
    found: dict[tuple[int, int], int] = {}
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                found[(pid, int(thread))] = int(Path(f"/proc/{pid}/task/{thread}/schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):
                continue
    return found


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a run as Ctrl-C does (its own group: the arena, or fastchess and its engines), killing it after 60 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def starts(checkout: Path, programs: Programs, runs: int, scratch: Path) -> dict[str, list[list[float]]]:
    """bench_bot_start's bare and referee starts, `runs` of each interleaved, in a process of `checkout`."""
    command = [sys.executable, "-c", START_CODE, str(checkout), str(BENCH), str(programs.start_bot)]
    command += [str(scratch / "logs"), str(runs)]
    done = subprocess.run(command, cwd=checkout, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"bench_vs_fastchess: the bot starts failed in {checkout}:\n{done.stderr[-2000:]}")
    result: dict[str, list[list[float]]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


ROWS = ("move", "throughput", "think", "start", "rr")


def measure(args: argparse.Namespace, sides: dict[str, Side], arenas: dict[str, Path], programs: Programs) -> Table:
    table: Table = {}
    rows = args.only or ROWS
    for round_number in range(1, args.rounds + 1):
        for side, parts in sides.items():
            run = parts.run
            with tempfile.TemporaryDirectory(prefix=f"bench-vs-{side}-") as folder:
                scratch = Path(folder)
                print(f"round {round_number}/{args.rounds}, {side}: load {load():.1f}", flush=True)
                if "move" in rows:
                    for concurrency in (1, 2):
                        before = load()
                        cpu, wall = per_move(run, args.games, concurrency, scratch / f"move-c{concurrency}")
                        put(table, f"referee CPU per move, c{concurrency} (us)", side, cpu, (before, load()))
                        put(table, f"wall time per move, c{concurrency} (us)", side, wall, (before, load()))
                if "throughput" in rows:
                    before = load()
                    _, wall, played, _ = run(args.throughput_games, 2, 0, 2, scratch / "throughput")
                    row = f"games per minute, c2, {args.throughput_games} games"
                    put(table, row, side, played / wall * 60, (before, load()))
                if "think" in rows:
                    before = load()
                    per_second = thinking(parts, args.think_ms, scratch / "think")
                    put(
                        table,
                        f"referee CPU while bots think ({args.think_ms} ms a move, c2; ms/s)",
                        side,
                        per_second,
                        (before, load()),
                    )
                if "start" in rows and side in arenas:
                    before = load()
                    timed = starts(arenas[side], programs, args.start_runs, scratch)
                    loads = (before, load())
                    for way, values in timed.items():
                        hellos, stops, cpus = zip(*values, strict=True)
                        label = "bare spawn (the floor)" if way == "bare" else "bot"
                        put(table, f"{label}: start to hello, p50 (ms)", side, statistics.median(hellos) * 1e3, loads)
                        put(table, f"{label}: stop, p50 (ms)", side, statistics.median(stops) * 1e3, loads)
                        if way == "referee":
                            put(
                                table,
                                "referee CPU per bot start + stop (ms)",
                                side,
                                statistics.median(cpus) * 1e3,
                                loads,
                            )
                if "rr" in rows and round_number == 1:  # long: once
                    before = load()
                    _, wall, played, _ = run(args.rr_games, 2, 0, args.rr_bots, scratch / "rr")
                    row = f"{args.rr_bots}-bot round robin, {args.rr_games} games a pairing, c2: games per minute"
                    put(table, row, side, played / wall * 60, (before, load()))
    return table


def show(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def print_table(table: Table, labels: dict[str, str]) -> None:
    print()
    print(f"| figure | {' | '.join(labels[side] for side in SIDES)} | load (1 min) |")
    print(f"| --- | {' | '.join('---' for _ in SIDES)} | --- |")
    for row, cells in table.items():
        texts, loads = [], []
        for side in SIDES:
            cell = cells.get(side)
            if cell is None or not cell.values:
                texts.append("-")
                continue
            text = show(statistics.median(cell.values))
            if len(cell.values) > 1:
                text += f" ({show(min(cell.values))}-{show(max(cell.values))})"
            texts.append(text)
            loads += cell.loads
        span = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
        print(f"| {row} | {' | '.join(texts)} | {span} |")


Function = tuple[str, int, str]
Profiled = tuple[dict[str, float], dict[str, dict[Function, tuple[float, float, dict[Function, float]]]], int]


def profiled_run(checkout: Path, programs: Programs, games: int, folder: Path) -> Profiled:
    """One tournament at c2 under profile_child.py: (process CPU s by kind, {kind: {function: (calls, own s,
    {caller: own s})}}, moves), the kinds being the coordinator and the play workers."""
    stats_dir, out = folder / "stats", folder / "run"
    stats_dir.mkdir(parents=True)
    command = [sys.executable, str(BENCH / "profile_child.py"), str(stats_dir), "referee", "tournament"]
    command += ["--bot", f"a={programs.bot}", "--bot", f"b={programs.bot}", "--games", str(games)]
    command += ["--concurrency", "2", "--tc", TC, "--out", str(out)]
    done = subprocess.run(command, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"bench_vs_fastchess: the profiled tournament failed in {checkout}:\n{done.stderr}")
    moves = sum(len(json.loads(line)["moves"]) for line in (out / "games.jsonl").read_text().splitlines() if line)
    cpu: dict[str, float] = {}
    functions: dict[str, dict[Function, tuple[float, float, dict[Function, float]]]] = {}
    for info in sorted(stats_dir.glob("*.json")):
        data = json.loads(info.read_text())
        kind = "coordinator" if data["module"] == "referee" else "play workers"
        cpu[kind] = cpu.get(kind, 0.0) + data["cpu_s"]
        if not info.with_suffix(".prof").exists():
            continue
        table = functions.setdefault(kind, {})
        entries = pstats.Stats(str(info.with_suffix(".prof"))).stats  # type: ignore[attr-defined]
        for function, (_, calls, own, _, callers) in entries.items():
            old_calls, old_own, old_callers = table.get(function, (0.0, 0.0, {}))
            for caller, figures in callers.items():
                old_callers[caller] = old_callers.get(caller, 0.0) + figures[2]
            table[function] = (old_calls + calls, old_own + own, old_callers)
    return cpu, functions, moves


def profile(arenas: dict[str, Path], programs: Programs, games: int, top: int) -> None:
    """Where the referee's CPU per move goes, by side: cProfile in the coordinator and the play workers, as the
    difference between a 10-game and a `games`-game run (start-up, imports and the final report cancel out)."""
    for side, checkout in arenas.items():
        with tempfile.TemporaryDirectory(prefix=f"bench-vs-profile-{side}-") as folder:
            before = load()
            short = profiled_run(checkout, programs, 10, Path(folder) / "short")
            long = profiled_run(checkout, programs, games, Path(folder) / "long")
        moves = max(1, long[2] - short[2])
        print(
            f"\n## profile, {side} ({checkout}): {games} - 10 games, {moves} moves, c2, load {before:.1f}-{load():.1f}"
        )
        print("(cProfile slows the interpreter down several times: read the shares more than the figures)")
        for kind, seconds in long[0].items():
            print(f"{kind}: {(seconds - short[0].get(kind, 0.0)) / moves * 1e6:.1f} us of process CPU a move, profiled")
        for kind, functions in long[1].items():
            before_run = short[1].get(kind, {})
            per_move: list[tuple[float, float, Function, Function | None]] = []
            for function, (calls, own, callers) in functions.items():
                old_calls, old_own, old_callers = before_run.get(function, (0.0, 0.0, {}))
                grown = {caller: value - old_callers.get(caller, 0.0) for caller, value in callers.items()}
                caller = max(grown, key=grown.__getitem__) if grown else None
                per_move.append(((own - old_own) / moves, (calls - old_calls) / moves, function, caller))
            total = sum(item[0] for item in per_move)
            calls = sum(item[1] for item in per_move)
            # The calls are the steadier figure on a shared machine: they do not move with its load.
            print(
                f"\n### {kind}: top {top} functions by own time a move ({total * 1e6:.1f} us a move in all,"
                f" {calls:.1f} Python calls a move)"
            )
            print("| own us/move | share | calls/move | function | mostly called from |")
            print("| ---: | ---: | ---: | --- | --- |")
            for own, calls, function, caller in sorted(per_move, key=lambda item: item[0], reverse=True)[:top]:
                print(
                    f"| {own * 1e6:.2f} | {own / max(total, 1e-12):.1%} | {calls:.2f} | {where(function)}"
                    f" | {where(caller) if caller else '-'} |"
                )


def where(function: Function) -> str:
    filename, line, name = function
    return f"{shorten(filename)}:{line}({name})" if line else name


def shorten(filename: str) -> str:
    for marker in ("/site-packages/", "/lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    for prefix in (str(ROOT.parent) + "/",):
        if filename.startswith(prefix):
            return filename[len(prefix) :]
    return filename


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="the baseline arena's checkout")
    parser.add_argument(
        "--baseline-commit", metavar="COMMIT", help="check the baseline out from this commit if DIR is absent"
    )
    parser.add_argument("--fastchess", type=Path, metavar="PATH", help="the fastchess binary (default: on the PATH)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every measurement (median shown)")
    parser.add_argument("--games", type=int, default=200, help="games of the long per-move run (the short has 10)")
    parser.add_argument("--throughput-games", type=int, default=400)
    parser.add_argument("--think-ms", type=int, default=100, help="the thinking bots' sleep per move")
    parser.add_argument("--start-runs", type=int, default=20, help="bot starts per side and round")
    parser.add_argument("--rr-bots", type=int, default=48)
    parser.add_argument("--rr-games", type=int, default=2, help="games per pairing of the big round robin")
    parser.add_argument("--only", nargs="+", choices=ROWS, help="only these rows")
    parser.add_argument("--profile", action="store_true", help="profile the arenas' per-move CPU instead")
    parser.add_argument("--profile-games", type=int, default=60)
    parser.add_argument("--top", type=int, default=25, help="functions shown per profile")
    args = parser.parse_args()

    baseline = baseline_checkout(args.baseline, args.baseline_commit)
    arenas = {"this": ROOT} | ({"baseline": baseline} if baseline else {})
    for checkout in arenas.values():
        compile_arena(checkout)
    with tempfile.TemporaryDirectory(prefix="bench-vs-programs-") as folder:
        programs = Programs(
            bot=compile_c(BENCH / "instant_bot.c", Path(folder)),
            uci=compile_c(BENCH / "instant_uci.c", Path(folder)),
            start_bot=bench_bot_start.build(Path(folder)),
        )
        if args.profile:
            profile(arenas, programs, args.profile_games, args.top)
            return
        fastchess = find_fastchess(args.fastchess)
        sides = {name: arena_side(checkout, programs) for name, checkout in arenas.items()}
        if fastchess:
            sides["fastchess"] = fastchess_side(fastchess, programs)
        labels = {"this": f"this ({revision(ROOT)})", "baseline": "baseline", "fastchess": "fastchess"}
        if baseline:
            labels["baseline"] = f"baseline ({revision(baseline)})"
        print(f"cores: {os.cpu_count()}, load at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print("bots: instant C bots (instant_bot.c; fastchess: instant_uci.c, a scripted legal game)")
        table = measure(args, sides, arenas, programs)
        print_table(table, labels)
        for name, count in ABNORMAL.items():
            print(f"note: {count} game(s) in {name} did not end normally (void, forfeit or time loss)")
        print(f"\nload at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def revision(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    )
    return done.stdout.strip() + ("+changes" if dirty.stdout.strip() else "") if done.returncode == 0 else "?"


if __name__ == "__main__":
    main()
