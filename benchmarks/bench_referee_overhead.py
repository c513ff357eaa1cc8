"""How much time the referee adds to each move, against the raw round trip to the same bot processes.

    python benchmarks/bench_referee_overhead.py [--games 10] [--size 8] [--rounds 5] [--profile] [--breakdown]
        [--pinned CORE]

Two instant bots (a minimal one defined here: it keeps its position incrementally and plays the first
legal placement) play `--games` games under `run_game`. Then, with the same processes, the very same
turn lines are sent again raw (pre-encoded bytes, `send_raw`/`receive_line`, no parsing, no rules, no
clock) and timed; and plain pings are timed the same way. So:

    per move in run_game  = wall time of the run_game calls / bot moves
    raw turn round trip   = wall time of the raw replay / moves   (pipes + the bot's own work)
    referee overhead      = per move in run_game - raw turn round trip
    referee CPU/move      = the referee process's own CPU time per move (time.process_time), both ways

Target: overhead below 100 us/move and per-move time below 2x the raw round trip. Rounds alternate
(games, raw, games, raw, ...) so that machine noise hits both sides; the best round of each is shown
with the median. `--profile` runs the games once more under cProfile and prints what the referee's
own time goes to; `--breakdown` times the referee's pure per-move steps one by one.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol.messages import Ping, TimeControl, Turn, TurnClocks, encode  # noqa: E402
from protocol.rules import BLACK  # noqa: E402
from referee.play.game import run_game  # noqa: E402
from referee.play.process import BotProcess, open_bot  # noqa: E402
from referee.record import GameRecord, GameSettings  # noqa: E402
from referee.run.botspec import BotSpec  # noqa: E402

INSTANT_BOT = textwrap.dedent(
    """\
    # An instant bot: replies at once with the first legal placement (pass when none).
    import json, sys
    from protocol.rules import Position, Move

    def main():
        out = sys.stdout.buffer
        position = None
        for line in sys.stdin.buffer:
            message = json.loads(line)
            kind = message["type"]
            if kind == "hello":
                reply = {"type": "hello", "protocol": 1, "name": "instant"}
            elif kind == "new_game":
                size = (message["width"], message["height"], message["komi"])
                position = Position(*size)
                reply = {"type": "ready", "game_id": message["game_id"]}
            elif kind == "turn":
                moves = message["moves"]
                done = len(position.history)
                if moves[:done] != [str(m) for m in position.history]:
                    position = Position(position.width, position.height, position.komi)
                    done = 0
                for text in moves[done:]:
                    position.push(Move.parse(text))
                placements = position.legal_placements()
                reply = {"type": "move", "move": str(placements[0]) if placements else "pass"}
            elif kind == "ping":
                reply = {"type": "pong", "id": message["id"]}
            elif kind == "quit":
                return
            else:
                continue
            out.write(json.dumps(reply).encode() + b"\\n")
            out.flush()

    main()
    """
)


async def play_games(
    bots: tuple[BotProcess, BotProcess], settings: GameSettings, games: int, tag: str
) -> tuple[float, int, list[GameRecord]]:
    """Wall seconds of the run_game calls, bot moves made, and the records."""
    records = []
    seconds = 0.0
    for number in range(games):
        black, white = bots if number % 2 == 0 else bots[::-1]
        start = trio.current_time()
        record = await run_game(f"{tag}-{number}", black, white, settings)
        seconds += trio.current_time() - start
        if record.termination != "normal":
            raise SystemExit(f"benchmark game ended abnormally: {record.termination}: {record.reason}")
        records.append(record)
    return seconds, sum(len(r.moves) for r in records), records


def turn_lines(record: GameRecord) -> list[tuple[str, bytes]]:
    """The turn lines of a recorded game, as (colour, encoded line), with clocks like run_game sends."""
    lines: list[tuple[str, bytes]] = []
    for index, move in enumerate(record.moves):
        clock = TurnClocks(black_ms=60_000, white_ms=60_000, increment_ms=0, move_limit_ms=None, moves_to_go=None)
        history = [m.move for m in record.moves[:index]]
        lines.append((move.color, encode(Turn(type="turn", game_id=record.game_id, moves=history, clock=clock))))
    return lines


async def raw_turns(bots: tuple[BotProcess, BotProcess], records: list[GameRecord]) -> tuple[float, int]:
    """Replay the games' turn lines straight to the bots: pipes plus the bots' own work, nothing else."""
    seconds, count = 0.0, 0
    for number, record in enumerate(records):
        by_color = dict(zip(("black", "white"), bots if number % 2 == 0 else bots[::-1], strict=True))
        lines = turn_lines(record)  # encoded before timing: only the exchange is measured
        start = trio.current_time()
        for color, line in lines:
            bot = by_color[color]
            await bot.send_raw(line)
            await bot.receive_line()
        seconds += trio.current_time() - start
        count += len(lines)
    return seconds, count


async def raw_pings(bots: tuple[BotProcess, BotProcess], count: int) -> float:
    """Mean seconds of a raw ping/pong exchange (pre-encoded ping, unparsed pong)."""
    line = encode(Ping(type="ping", id=1))
    start = trio.current_time()
    for i in range(count):
        bot = bots[i % 2]
        await bot.send_raw(line)
        await bot.receive_line()
    return (trio.current_time() - start) / count


def breakdown(size: int) -> None:
    """The referee's pure per-move steps timed alone, mid-game (30 moves played), in us per call."""
    import timeit

    from protocol.messages import MoveReply, parse_bot_line
    from protocol.rules import Move, Position
    from referee.record import MoveRecord
    from referee.timing.clock import GameClock

    control = TimeControl(base_ms=600_000, increment_ms=0)
    position = Position(size, size)
    while len(position.history) < 30 and position.has_legal_placement():
        position.push(position.legal_placements()[0])
    history = [str(m) for m in position.history]
    clock = GameClock(control)
    reply = b'{"type":"move","move":"' + str(position.legal_placements()[0]).encode() + b'"}'
    move = Move.parse(parse_bot_line(reply).move)  # type: ignore[union-attr]

    def turn_line() -> bytes:
        turn = Turn.model_construct(type="turn", game_id="g", moves=history, clock=clock.message(BLACK))
        return turn.model_dump_json().encode() + b"\n"

    def push_pop() -> None:
        position.push(move)
        position.pop()

    def scopes() -> None:
        with trio.CancelScope(deadline=trio.current_time() + 10), trio.CancelScope(deadline=trio.current_time() + 5):
            pass

    async def time_scopes() -> float:
        return timeit.timeit(scopes, number=20_000) / 20_000

    steps = {
        "clock.message (TurnClocks model)": lambda: clock.message(BLACK),
        "turn line (construct + JSON)": turn_line,
        "parse_bot_line (move reply)": lambda: parse_bot_line(reply),
        "Move.parse": lambda: Move.parse("d5d4"),
        "rules: push + pop (checked)": push_pop,
        "clock.charge": lambda: GameClock(control).charge(BLACK, 50_000),
        "MoveRecord.model_construct": lambda: MoveRecord.model_construct(
            color="black", move="d5d4", elapsed_ms=0.05, clock_ms=1, infos=[]
        ),
        "isinstance(reply, MoveReply)": lambda: isinstance(reply, MoveReply),
    }
    print("per-move steps alone (us per call):")
    for label, step in steps.items():
        number = 20_000
        print(f"  {label:<32} {timeit.timeit(step, number=number) / number * 1e6:6.2f}")
    print(f"  {'two trio cancel scopes':<32} {trio.run(time_scopes) * 1e6:6.2f}")


def us(seconds: float) -> str:
    return f"{seconds * 1e6:7.1f} us"


async def bench(args: argparse.Namespace, log_dir: Path, bot_file: Path) -> None:
    spec = BotSpec(name="instant", command=[sys.executable, str(bot_file)], dir=ROOT, env={"PYTHONPATH": str(ROOT)})
    settings = GameSettings(
        width=args.size, height=args.size, komi=3.5, time_control=TimeControl(base_ms=600_000, increment_ms=0)
    )
    cores = [args.pinned] if args.pinned is not None else None
    async with (
        open_bot(spec.model_copy(update={"name": "instant-a"}), log_dir, cores=cores) as a,
        open_bot(spec.model_copy(update={"name": "instant-b"}), log_dir, cores=cores) as b,
    ):
        bots = (a, b)
        # Warm up: handshakes, imports, caches.
        _, _, records = await play_games(bots, settings, 2, "warmup")
        await raw_turns(bots, records)
        game_rates, raw_rates, ping_times, game_cpu, raw_cpu = [], [], [], [], []
        moves = 0
        for round_number in range(args.rounds):
            cpu = time.process_time()
            seconds, moves, records = await play_games(bots, settings, args.games, f"r{round_number}")
            game_cpu.append((time.process_time() - cpu) / moves)
            game_rates.append(seconds / moves)
            cpu = time.process_time()
            raw_seconds, raw_count = await raw_turns(bots, records)
            raw_cpu.append((time.process_time() - cpu) / raw_count)
            raw_rates.append(raw_seconds / raw_count)
            ping_times.append(await raw_pings(bots, 2000))
        per_game_moves = moves / args.games
        print(f"{args.size}x{args.size}, {args.games} games x {args.rounds} rounds, {per_game_moves:.0f} moves/game")
        print("                              best     median")
        for label, values in (
            ("per move in run_game", game_rates),
            ("raw turn round trip", raw_rates),
            ("raw ping round trip", ping_times),
        ):
            print(f"{label:<24} {us(min(values))} {us(statistics.median(values))}")
        print(f"{'referee CPU/move, games':<24} {us(min(game_cpu))} {us(statistics.median(game_cpu))}")
        print(f"{'referee CPU/move, raw':<24} {us(min(raw_cpu))} {us(statistics.median(raw_cpu))}")
        overheads = [g - r for g, r in zip(game_rates, raw_rates, strict=True)]
        ratios = [g / r for g, r in zip(game_rates, raw_rates, strict=True)]
        print(f"{'referee overhead/move':<24} {us(min(overheads))} {us(statistics.median(overheads))}")
        print(f"{'ratio to raw round trip':<24} {min(ratios):9.2f}x {statistics.median(ratios):9.2f}x")
        overhead, ratio = statistics.median(overheads), statistics.median(ratios)
        verdict = "meets" if overhead < 100e-6 and ratio < 2 else "MISSES"
        print(f"target (overhead < 100 us/move and < 2x the raw round trip): {verdict}")
        print("(per move in run_game includes new_game/ready and game_over, amortised over the game's moves)")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            await play_games(bots, settings, args.games, "profile")
            profiler.disable()
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(25)
            print(stream.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--pinned",
        type=int,
        metavar="CORE",
        help="the referee and both bots on this core, as a slot under --cpu-affinity plays (no lag monitor)",
    )
    parser.add_argument("--breakdown", action="store_true", help="also time the referee's per-move steps alone")
    args = parser.parse_args()
    if args.breakdown:
        breakdown(args.size)
    with tempfile.TemporaryDirectory(prefix="bench-referee-") as folder:
        bot_file = Path(folder) / "instant_bot.py"
        bot_file.write_text(INSTANT_BOT)
        if args.pinned is not None:
            os.sched_setaffinity(0, [args.pinned])  # the loop beside its bots, as a slot's play loop runs
        trio.run(bench, args, Path(folder), bot_file)


if __name__ == "__main__":
    main()
