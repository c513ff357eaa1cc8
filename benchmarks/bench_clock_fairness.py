"""Fair clocks on a busy machine: false time losses, games voided for the host, and referee-minus-bot time.

    python benchmarks/bench_clock_fairness.py [--bot c|python] [--moves 200] [--controls movetime:0.05 1+0.01]
        [--fractions 0.9 0.98] [--concurrency 1 2] [--burners 0 2] [--standings-games 50000] [--skip-standings]

A bot spends a chosen fraction of what its clock allows on every move, busy-spinning like an engine, and
reports its own time for the move: from the moment its read of the turn line returned to just before it
writes the move. `--bot c` (the default where a C compiler is found) builds benchmarks/spender.c, as an
engine author's bot would be; `--bot python` writes a Python one to a temporary file (its own measure
starts later and ends sooner than the bytes move: json and the rules engine run inside it). The bot reports
its time twice: in an `info` written together with the move (kept in the record), and on stderr (the record
of a loss on time quotes the last lines).
What it allows itself: the per-move limit at a fixed time per move; with a game clock, remaining / 10 +
increment, but never more than the remaining time (so at `1+0.01` it ends up playing on about 11 ms).

For every combination of time control, fraction, concurrency (games at once) and background CPU burners
(busy processes started beside the referee), it plays games until `--moves` bot moves are made and prints,
per 100 moves:

- false losses: games lost on time where the bot, by its own measure, was in time (its report of the losing
  move, from its stderr log; a move it never reported finishing counts as a true loss);
- voids: games voided because the referee measured itself later than the bot's overrun;
- referee-minus-bot time per move (what the referee charged minus what the bot measured): p50, p99, max.

After each configuration, where a C compiler is found, the host's floor under the same load: pairs of bare C
processes (benchmarks/pipe_floor.c), as many at once as games, exchanging over pipes with the same busy spin,
with nothing of the referee between them: the part of referee-minus-bot that any referee would see here (on
a virtual machine, waking an idle virtual CPU alone can take a millisecond).

Then the standings case: one game at a time (movetime 0.05, 90%) while another task on the referee's event
loop recomputes the standings of a `--standings-games` game tournament back to back; it prints the largest
referee-minus-bot time with and without that load, and the time one recomputation takes.

Run it against another checkout to compare (it uses only run_game, open_bot and compute_standings):
copy it into that checkout's benchmarks/ and run it there. On a shared machine the burner figures are noisy.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol.rules import Result  # noqa: E402
from referee.host.containment import CpuSlots  # noqa: E402
from referee.play.game import run_game  # noqa: E402
from referee.play.process import open_bot  # noqa: E402
from referee.record import GameRecord, GameSettings, Termination  # noqa: E402
from referee.run.botspec import BotSpec  # noqa: E402
from referee.stats.standings import compute_standings  # noqa: E402
from referee.timing.clock import parse_time_control  # noqa: E402

try:  # each slot's games in a loop of their own (since referee.play.loop); older checkouts play in the main loop
    from referee.play.loop import PlayLoop, ProcessPlayLoop
except ImportError:  # pragma: no cover
    PlayLoop = ProcessPlayLoop = None  # type: ignore[assignment,misc]
try:  # the standings' game type was renamed; the old name lets this script run against older checkouts
    from referee.stats.standings import ScoredGame
except ImportError:  # pragma: no cover
    from referee.stats.standings import GameResult as ScoredGame  # type: ignore[attr-defined,no-redef]

RESULTS: list[Result] = ["1-0", "0-1", "1/2-1/2"]

AFFINITY = {"off": (False,), "on": (True,), "both": (False, True)}
"""--affinity: which ways each configuration is played (pinned: each game's bots on cores of their own)."""

SPENDER_BOT = textwrap.dedent(
    """\
    # Spends FRACTION of what its clock allows on each move (busy-spinning) and reports its own time.
    import json, sys, time
    from protocol.rules import Move, Position

    FRACTION = float(sys.argv[1])

    def allowance_ms(message, color):
        clock = message["clock"]
        if clock.get("move_limit_ms") is not None:
            return float(clock["move_limit_ms"])
        remaining = float(clock[color + "_ms"])
        return min(remaining, remaining / 10 + clock["increment_ms"])

    def main():
        out, err = sys.stdout.buffer, sys.stderr
        read = sys.stdin.buffer.readline
        position, color, n = None, "black", 0
        while True:
            line = read()
            got = time.monotonic_ns()
            if not line:
                return
            message = json.loads(line)
            kind = message["type"]
            if kind == "hello":
                reply = b'{"type":"hello","protocol":1,"name":"spender"}\\n'
            elif kind == "new_game":
                position = Position(message["width"], message["height"], message["komi"])
                color, n = message["color"], 0
                reply = json.dumps({"type": "ready", "game_id": message["game_id"]}).encode() + b"\\n"
            elif kind == "turn":
                n += 1
                allow = allowance_ms(message, color)
                moves = message["moves"]
                done = len(position.history)
                for text in moves[done:]:
                    position.push(Move.parse(text))
                placements = position.legal_placements()
                move = str(placements[0]) if placements else "pass"
                position.push(Move.parse(move))
                until = got + int(allow * FRACTION * 1e6)
                while time.monotonic_ns() < until:
                    pass
                took = (time.monotonic_ns() - got) / 1e6
                err.write(f"move {n} self_ms={took:.3f} allow_ms={allow:.3f}\\n")
                err.flush()
                info = {"type": "info", "text": f"self_ms={took:.3f} allow_ms={allow:.3f}"}
                answer = {"type": "move", "move": move}
                reply = json.dumps(info).encode() + b"\\n" + json.dumps(answer).encode() + b"\\n"
            elif kind == "ping":
                reply = json.dumps({"type": "pong", "id": message["id"]}).encode() + b"\\n"
            elif kind == "quit":
                return
            else:
                continue
            out.write(reply)
            out.flush()

    main()
    """
)


def _field(text: str, name: str) -> float | None:
    for part in text.split():
        key, _, value = part.partition("=")
        if key == name:
            return float(value)
    return None


@dataclass
class Tally:
    """What the games of one configuration showed."""

    moves: int = 0
    games: int = 0
    false_losses: int = 0
    true_losses: int = 0
    voids: int = 0
    other_voids: int = 0
    diffs_ms: list[float] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    loss_examples: list[str] = field(default_factory=list)
    own_ms: list[float] = field(default_factory=list)

    def add(self, record: GameRecord) -> None:
        self.games += 1
        for move in record.moves:
            self.moves += 1
            texts = [info.get("text", "") for info in move.infos]
            own = next((_field(t, "self_ms") for t in reversed(texts) if "self_ms=" in t), None)
            if own is not None:
                self.diffs_ms.append(move.elapsed_ms - own)
                self.own_ms.append(own)
        if record.termination is Termination.TIME:
            self.moves += 1
            # The bot's own report of the losing move: its n-th of the game, in its full stderr log (read after
            # the game, so a report written after the referee gave up is there too). None: it never finished.
            loser = record.loser
            assert loser is not None
            number = sum(1 for move in record.moves if move.color == loser) + 1
            info = record.black if loser == "black" else record.white
            lines = Path(info.stderr_log).read_text().splitlines() if info.stderr_log else record.stderr_tail
            last = next((line for line in reversed(lines) if line.startswith(f"move {number} ")), "")
            own, allow = _field(last, "self_ms"), _field(last, "allow_ms")
            if own is not None and allow is not None and own <= allow:
                self.false_losses += 1
                if len(self.loss_examples) < 3:
                    self.loss_examples.append(f"{record.reason} [bot: {own:.2f} ms of {allow:.2f}]")
            else:
                self.true_losses += 1
        elif record.termination is Termination.VOID:
            if getattr(record, "referee_lag_ms", None) is not None:
                self.voids += 1
                if len(self.examples) < 3:
                    self.examples.append(record.reason)
            else:
                self.other_voids += 1


def _nearest_rank(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def bot_command(bot_file: Path) -> list[str]:
    """How to start the spender: a built C program runs as it is, a Python file under this interpreter."""
    return [sys.executable, str(bot_file)] if bot_file.suffix == ".py" else [str(bot_file)]


def build_bot(kind: str, folder: Path) -> Path:
    """The spender bot of this kind, ready to run in `folder`."""
    if kind == "python":
        bot_file = folder / "spender.py"
        bot_file.write_text(SPENDER_BOT)
        return bot_file
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("--bot c needs a C compiler (cc or gcc) on PATH; or use --bot python")
    bot_file = folder / "spender"
    subprocess.run([compiler, "-O2", "-o", str(bot_file), str(ROOT / "benchmarks" / "spender.c")], check=True)
    return bot_file


async def play_games(
    bot_file: Path,
    log_dir: Path,
    control: str,
    fraction: float,
    concurrency: int,
    moves: int,
    tally: Tally,
    pinned: bool = False,
) -> None:
    """`concurrency` game slots at once until `moves` bot moves are made; fresh bot processes every game.

    Each slot plays in a loop of its own (`referee.play.loop.PlayLoop`), as the runner's slots do. `pinned`: each
    slot's loop and bots on cores of their own, as `--cpu-affinity` does.
    """
    slots = CpuSlots(concurrency) if pinned else None
    settings = GameSettings(width=8, height=8, time_control=parse_time_control(control))
    spec = BotSpec(name="spender", command=[*bot_command(bot_file), str(fraction)], dir=ROOT)
    counter = 0

    async def one_game(game_id: str, first: BotSpec, second: BotSpec, cores: list[int] | None) -> GameRecord:
        async with (
            open_bot(first, log_dir, cores=cores) as black,
            open_bot(second, log_dir, cores=cores) as white,
        ):
            return await run_game(game_id, black, white, settings)

    async def loop(slot: int) -> None:
        nonlocal counter
        cores = None if slots is None else slots.sets[slot % len(slots.sets)]
        # As the runner plays: a thread's loop for one game at a time, a worker process each for more.
        worker = (
            ProcessPlayLoop(f"play-{slot}", log_dir, cores) if ProcessPlayLoop is not None and concurrency > 1 else None
        )
        play = None if PlayLoop is None or worker is not None else PlayLoop(f"play-{slot}", cores)
        try:
            while tally.moves < moves:
                counter += 1
                game_id = f"g{slot}-{counter}"
                first = spec.model_copy(update={"name": f"spender-{slot}a"})
                second = spec.model_copy(update={"name": f"spender-{slot}b"})
                if worker is not None:  # fresh processes every game: keys never seen before
                    sides = (f"{game_id}-a", first), (f"{game_id}-b", second)
                    record, _ = await worker.play(game_id, *sides, settings, None)
                elif play is None:
                    record = await one_game(game_id, first, second, cores)
                else:
                    record = await play.run(one_game, game_id, first, second, cores)
                tally.add(record)  # after the bots have exited: their stderr logs are complete
        finally:
            if play is not None:
                await play.aclose()
            if worker is not None:
                await worker.aclose()

    async with trio.open_nursery() as nursery:
        for slot in range(concurrency):
            nursery.start_soon(loop, slot)


def build_floor(folder: Path) -> Path | None:
    """benchmarks/pipe_floor.c built in `folder`, or None without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    program = folder / "pipe_floor"
    subprocess.run([compiler, "-O2", "-o", str(program), str(ROOT / "benchmarks" / "pipe_floor.c")], check=True)
    return program


async def host_floor(program: Path, spin_ms: float, rounds: int, pairs: int) -> list[float]:
    """Parent-minus-child times (ms) of bare C process pairs over pipes, `pairs` at once: the host's own share."""
    done = await trio.run_process(
        [str(program), str(round(spin_ms * 1000)), str(rounds), str(pairs)], capture_stdout=True
    )
    return [float(line) / 1000 for line in done.stdout.split()]


def start_burners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_burners(burners: list[subprocess.Popen[bytes]]) -> None:
    for burner in burners:
        burner.kill()
        burner.wait()


def report(label: str, tally: Tally) -> None:
    per100 = 100.0 / tally.moves if tally.moves else 0.0
    diffs = tally.diffs_ms
    spread = (
        f"{statistics.median(diffs):7.3f} {_nearest_rank(diffs, 0.99):7.3f} {max(diffs):8.3f}" if diffs else "      -"
    )
    print(
        f"{label:<34} {tally.moves:6d} {tally.games:5d} {tally.false_losses * per100:7.2f} "
        f"{tally.voids * per100:6.2f} {tally.true_losses * per100:6.2f}   {spread}",
        flush=True,
    )
    for example in tally.loss_examples:
        print(f"    false loss: {example}", flush=True)
    for example in tally.examples[:2]:
        print(f"    void: {example}", flush=True)


def fake_results(count: int, bots: int) -> tuple[list[ScoredGame], list[str]]:
    names = [f"bot{i}" for i in range(bots)]
    rng = random.Random(1)
    results = []
    for _ in range(count):
        black, white = rng.sample(names, 2)
        results.append(ScoredGame(black, white, rng.choice(RESULTS)))
    return results, names


async def standings_case(bot_file: Path, log_dir: Path, moves: int, games: int) -> None:
    results, names = fake_results(games, 8)
    started = time.perf_counter()
    compute_standings(results, names)
    one = time.perf_counter() - started
    quiet = Tally()
    await play_games(bot_file, log_dir, "movetime:0.05", 0.9, 1, moves, quiet)
    busy = Tally()
    recomputed = 0

    async def recompute(done: trio.Event) -> None:
        nonlocal recomputed
        while not done.is_set():
            compute_standings(results, names)  # on the referee's event loop, on purpose: the worst case
            recomputed += 1
            await trio.sleep(0.005)

    done = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(recompute, done)
        await play_games(bot_file, log_dir, "movetime:0.05", 0.9, 1, moves, busy)
        done.set()
    print(f"\nstandings of {games:,} games: one recomputation {one * 1e3:.1f} ms; recomputed {recomputed} times")
    print("  while moves were in flight (movetime 0.05, 90%, one game at a time):")
    for label, tally in (("without the standings load", quiet), ("with it", busy)):
        worst = max(tally.diffs_ms) if tally.diffs_ms else float("nan")
        p99 = _nearest_rank(tally.diffs_ms, 0.99) if tally.diffs_ms else float("nan")
        print(
            f"    {label:<28} referee-minus-bot max {worst:7.3f} ms, p99 {p99:6.3f} ms over {tally.moves} moves;"
            f" false losses {tally.false_losses}, voids {tally.voids}"
        )
    if quiet.diffs_ms and busy.diffs_ms:
        print(f"  worst extra charge to a move in flight: {max(busy.diffs_ms) - max(quiet.diffs_ms):.3f} ms")


async def bench(args: argparse.Namespace, folder: Path, bot_file: Path) -> None:
    print(
        f"{'configuration':<34} {'moves':>6} {'games':>5} {'false':>7} {'voids':>6} {'true':>6}"
        f"   {'p50':>7} {'p99':>7} {'max':>8}"
    )
    print(f"{'':<34} {'':>6} {'':>5} {'/100 moves':>21}   {'referee - bot, ms':>24}")
    floor_program = build_floor(folder)
    for burners in args.burners:
        running = start_burners(burners)
        try:
            for control in args.controls:
                for fraction in args.fractions:
                    for concurrency, pinned in itertools.product(args.concurrency, AFFINITY[args.affinity]):
                        tally = Tally()
                        await play_games(bot_file, folder, control, fraction, concurrency, args.moves, tally, pinned)
                        how = f"c{concurrency}{' pinned' if pinned else ''}"
                        label = f"{control} {fraction:.0%} {how} burners {burners}"
                        report(label, tally)
                        if floor_program is not None and tally.own_ms:
                            # The same spin, the same number of pairs at once, the same burners, no referee.
                            spin = statistics.median(tally.own_ms)
                            rounds = max(50, len(tally.own_ms) // concurrency)
                            floor = await host_floor(floor_program, spin, rounds, concurrency)
                            print(
                                f"{'  host floor: C pairs, no referee':<34} {len(floor):6d} {'':5} {'':7} {'':6} {'':6}"
                                f"   {statistics.median(floor):7.3f} {_nearest_rank(floor, 0.99):7.3f}"
                                f" {max(floor):8.3f}",
                                flush=True,
                            )
        finally:
            stop_burners(running)
    if not args.skip_standings:
        await standings_case(bot_file, folder, args.moves, args.standings_games)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--bot",
        choices=["c", "python"],
        default="c" if shutil.which("cc") or shutil.which("gcc") else "python",
        help="the spender bot: C (benchmarks/spender.c, the default where cc is found) or Python",
    )
    parser.add_argument("--moves", type=int, default=200, help="bot moves per configuration (default 200)")
    parser.add_argument("--controls", nargs="+", default=["movetime:0.05", "1+0.01"])
    parser.add_argument("--fractions", nargs="+", type=float, default=[0.9, 0.98])
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--burners", nargs="+", type=int, default=[0, 2])
    parser.add_argument(
        "--affinity",
        choices=sorted(AFFINITY),
        default="both",
        help="run the games with --cpu-affinity's pinning (on), without (off), or each configuration both ways",
    )
    parser.add_argument("--standings-games", type=int, default=50_000)
    parser.add_argument("--skip-standings", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-clocks-") as folder:
        bot_file = build_bot(args.bot, Path(folder))
        print(f"bot: {args.bot} ({bot_file.name}); load average before: {os.getloadavg()[0]:.2f}", flush=True)
        trio.run(bench, args, Path(folder), bot_file)
    print(
        "\nfalse: lost on time although in time by the bot's own clock; voids: void because the referee was later"
        " itself than the bot's overrun; true: lost on time and late by its own clock too."
    )


if __name__ == "__main__":
    main()
