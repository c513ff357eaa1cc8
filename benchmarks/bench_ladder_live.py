"""The ladder (`alternator ladder`) measured: throughput, rating quality, settling, uploads, leaderboard load.

(benchmarks/bench_ladder.py is another benchmark: the sample bots' strength ladder by tournaments.)

1. **A ladder of ENTRIES sample-bot entries** (random, greedy, and alphabeta at node budgets from 8 to 3,000 per
   move, so strengths differ; `--field depth`: depth limits instead) runs for MINUTES on a small board: games
   per minute; halfway it is stopped with Ctrl-C and started again (a restart must lose nothing: the games and
   every rating are checked); a third of the way in one more entry is added, and the games it needs to settle
   are counted (its RD under 110, `provisional` no more; and its rating within 50 of where it ended).
2. **Upload to first game**: a participant's token, an upload over HTTP (a test bot, run in the sandbox), and the
   time until its first game is stored.
3. **The same bots in a round robin** (`alternator tournament`, GAMES per pairing): the Spearman correlation of the
   ladder's rating order with the tournament's Elo order.
4. **The leaderboard with 1,000 entries and 100,000 games** (synthetic, written through the store): the time to
   build the leaderboard, and of GET /api/leaderboard, /, /api/entries/NAME over HTTP.

    python benchmarks/bench_ladder_live.py [--entries 20] [--minutes 3] [--games 2] [--size 5] [--movetime 0.02]
                                           [--concurrency 1] [--keep-open 16] [--field nodes|depth]
                                           [--skip-load] [--skip-round-robin]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.ladder.rating import Rating  # noqa: E402
from referee.ladder.server import LadderSite  # noqa: E402
from referee.ladder.store import PROVISIONAL_RD, LadderStore  # noqa: E402
from referee.outputs.httpsafety import HostCheck  # noqa: E402


def alternator(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "referee", *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"alternator {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def bots(count: int, field: str = "nodes") -> list[tuple[str, str]]:
    """`count` sample-bot entries of different strengths: (name, bot argument).

    `nodes`: random, greedy, then alphabeta with node budgets from 8 to 3,000 per move (a geometric series: each a
    little stronger than the last, the ends far apart); `depth`: random, greedy, then alphabeta and strong at depth
    limits 1, 2, ... (on a small board most of them play alike: a field without a true order).
    """
    chosen = [("random", "random"), ("greedy", "greedy")]
    if field == "nodes":
        steps = max(1, count - 3)
        for i in range(count - 2):
            nodes = round(8 * (3000 / 8) ** (i / steps))
            chosen.append((f"alphabeta-n{nodes}", f"alphabeta nodes={nodes}"))
        return chosen[:count]
    depth = 1
    while len(chosen) < count:
        chosen.append((f"alphabeta-d{depth}", f"alphabeta depth={depth}"))
        if len(chosen) < count:
            chosen.append((f"strong-d{depth}", f"strong depth={depth}"))
        depth += 1
    return chosen[:count]


def start(directory: Path, options: list[str], *, serve_port: int | None = None) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "referee", "ladder", str(directory), *options]
    if serve_port is not None:
        argv += ["--serve", "--port", str(serve_port)]
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if serve_port is not None:
        assert process.stdout is not None
        process.stdout.readline()
    return process


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGINT)
    return process.wait(timeout=60)


def snapshot(directory: Path) -> dict[str, tuple[float, float, int]]:
    with LadderStore(directory, create=False) as store:
        return {e.name: (e.version.rating, e.version.rd, e.version.games) for e in store.entries() if e.version}


def game_count(directory: Path) -> int:
    with LadderStore(directory, create=False) as store:
        return store.game_count()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def upload(url: str, token: str, name: str, data: bytes) -> int:
    boundary = uuid.uuid4().hex
    body = io.BytesIO()
    for key, value in (("name", name), ("command", "python3 bot.py")):
        body.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode())
    body.write(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="bot.py"\r\n\r\n'.encode())
    body.write(data + f"\r\n--{boundary}--\r\n".encode())
    request = urllib.request.Request(f"{url}/api/entries", data=body.getvalue(), method="POST")
    request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=60) as response:
        status: int = response.status
        return status


def ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = ranks(a), ranks(b)
    mean_a, mean_b = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - mean_a) * (y - mean_b) for x, y in zip(ra, rb, strict=True))
    var_a = sum((x - mean_a) ** 2 for x in ra)
    var_b = sum((y - mean_b) ** 2 for y in rb)
    return cov / math.sqrt(var_a * var_b) if var_a and var_b else float("nan")


def kendall(a: list[float], b: list[float]) -> float:
    """Kendall's tau-b: (concordant - discordant) pairs over the pairs not tied."""
    concordant = discordant = ties_a = ties_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            x, y = a[i] - a[j], b[i] - b[j]
            if x == 0 and y == 0:
                continue
            if x == 0:
                ties_a += 1
            elif y == 0:
                ties_b += 1
            elif (x > 0) == (y > 0):
                concordant += 1
            else:
                discordant += 1
    pairs = concordant + discordant
    denominator = math.sqrt((pairs + ties_a) * (pairs + ties_b))
    return (concordant - discordant) / denominator if denominator else float("nan")


def run_ladder(args: argparse.Namespace, work: Path) -> dict[str, float]:
    directory = work / "ladder"
    entries = bots(args.entries, args.field)
    late_name, late_bot = entries.pop(len(entries) // 2)
    for name, bot in entries:
        alternator("ladder", str(directory), "add", name, bot)
    options = ["--size", str(args.size), "--movetime", str(args.movetime), "--concurrency", str(args.concurrency)]
    options += ["--keep-open", str(args.keep_open)]
    total_s = args.minutes * 60
    started = time.monotonic()
    process = start(directory, options)
    time.sleep(total_s / 3)
    alternator("ladder", str(directory), "add", late_name, late_bot)
    late_added = game_count(directory)
    time.sleep(max(0.0, total_s / 2 - (time.monotonic() - started)))
    first_half_s = time.monotonic() - started
    assert stop(process) == 130
    before = snapshot(directory)
    stored = game_count(directory)
    lines = len((directory / "games.jsonl").read_text().splitlines())
    port = free_port()
    restarted = time.monotonic()
    process = start(directory, options, serve_port=port)
    after_restart = snapshot(directory)
    kept = before == after_restart and lines == stored
    # Upload to first game.
    token = alternator("ladder", str(directory), "token", "add", "uploader").splitlines()[-1]
    program = (ROOT / "tests" / "bots" / "testbot.py").read_bytes()
    sent = time.monotonic()
    status = upload(f"http://127.0.0.1:{port}", token, "uploaded", program)
    first_game_s = math.nan
    while time.monotonic() - sent < 120:
        if snapshot(directory).get("uploaded", (0, 0, 0))[2] >= 1:
            first_game_s = time.monotonic() - sent
            break
        time.sleep(0.05)
    time.sleep(max(0.0, total_s - (time.monotonic() - started)))
    second_half_s = time.monotonic() - restarted
    assert stop(process) == 130
    games = game_count(directory)
    final = snapshot(directory)
    # The late entry: games to leave `provisional`, and to come within 50 of its final rating for good.
    store = LadderStore(directory, create=False)
    late = store.entry(late_name)
    assert late is not None and late.version is not None
    history = store.history(late.version.id)
    store.close()
    settled_rd = next((i + 1 for i, (_, _, rd) in enumerate(history) if rd < PROVISIONAL_RD), math.nan)
    end_rating = history[-1][1] if history else math.nan
    within = len(history)
    for i in range(len(history) - 1, -1, -1):
        if abs(history[i][1] - end_rating) > 50:
            break
        within = i + 1
    print(
        f"ladder: {args.entries} entries, {args.size}x{args.size}, movetime {args.movetime} s, concurrency"
        f" {args.concurrency}, keep-open {args.keep_open}, {args.minutes:g} min with a restart halfway"
    )
    minutes = (first_half_s + second_half_s) / 60
    print(f"  games: {games} in {minutes:.2f} min of play = {games / minutes:.0f} games/min")
    print(f"  restart: {stored} games stored before it, games.jsonl {lines} lines; ratings and games kept: {kept}")
    print(
        f"  added entry {late_name!r} (at game {late_added}): {len(history)} games; RD under {PROVISIONAL_RD:g}"
        f" after {settled_rd} games; within 50 of its final rating {end_rating:.0f} from game {within} on"
    )
    print(f"  upload to first game: HTTP {status}, {first_game_s:.2f} s (sandboxed test bot)")
    return {name: rating for name, (rating, _, _) in final.items() if name != "uploaded"}


def round_robin(args: argparse.Namespace, work: Path, ratings: dict[str, float]) -> None:
    out = work / "round-robin"
    command = ["tournament", "--out", str(out), "--games", str(args.games), "--size", str(args.size)]
    command += ["--movetime", str(args.movetime), "--concurrency", str(args.concurrency), "--quiet"]
    for name, bot in bots(args.entries, args.field):
        command += ["--bot", f"{name}={bot}"]
    began = time.monotonic()
    alternator(*command)
    standings = json.loads((out / "standings.json").read_text())
    elo = {row["name"]: row["elo"] for row in standings["bots"]}
    names = sorted(set(elo) & set(ratings))
    rho = spearman([ratings[n] for n in names], [elo[n] for n in names])
    tau = kendall([ratings[n] for n in names], [elo[n] for n in names])
    # How noisy the reference is: the score order of each pairing's first games against that of its second games.
    halves: list[dict[str, float]] = [{}, {}]
    seen: set[frozenset[str]] = set()
    for line in (out / "games.jsonl").read_text().splitlines():
        game = json.loads(line)
        black, white, result = game["black"]["name"], game["white"]["name"], game["result"]
        pair = frozenset((black, white))
        half = halves[1 if pair in seen else 0]
        seen.add(pair)
        points = {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)
        half[black] = half.get(black, 0.0) + points
        half[white] = half.get(white, 0.0) + 1 - points
    split = spearman([halves[0].get(n, 0.0) for n in names], [halves[1].get(n, 0.0) for n in names])
    pairings = args.entries * (args.entries - 1) // 2
    order = sorted(names, key=lambda n: -ratings[n])
    print("  ladder order:      " + ", ".join(order))
    print("  round-robin order: " + ", ".join(sorted(names, key=lambda n: -elo[n])))
    print(f"  the round robin against itself (first games of each pair vs second games): Spearman {split:.3f}")
    print(
        f"round robin: {pairings} pairings x {args.games} games in {time.monotonic() - began:.0f} s;"
        f" Spearman of the ladder's order against its Elo order: {rho:.3f}, Kendall tau {tau:.3f}"
        f" ({len(names)} entries)"
    )


def leaderboard_load(work: Path, entries: int = 1000, games: int = 100_000) -> None:
    from referee.ladder.rating import rate
    from referee.record import GameRecord
    from referee.run.botspec import BotSpec

    directory = work / "load"
    store = LadderStore(directory)
    sample = next(
        iter((work / "ladder" / "games.jsonl").read_text().splitlines()), None
    )  # a real record, its id replaced
    if sample is None:
        raise SystemExit("no game to copy: run the ladder part first")
    record = GameRecord.model_validate_json(sample)
    began = time.monotonic()
    versions = [
        store.add_entry(f"entry{i:04d}", BotSpec(name="x", command=["true"]), "synthetic") for i in range(entries)
    ]
    import random

    rng = random.Random(1)
    strength = [rng.gauss(0, 300) for _ in versions]
    current = {v.id: v for v in versions}
    for number in range(games):
        a, b = rng.sample(range(entries), 2)
        black, white = current[versions[a].id], current[versions[b].id]
        p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
        result = "1-0" if rng.random() < p else "0-1"
        game = record.model_copy(update={"game_id": f"synthetic-{number}", "result": result})
        score = 1.0 if result == "1-0" else 0.0
        ratings = (rate(black.glicko, [(white.glicko, score)]), rate(white.glicko, [(black.glicko, 1 - score)]))
        store.record_game(game, black, white, ratings, (False, False), game.model_dump_json())
        for version, rating in ((black, ratings[0]), (white, ratings[1])):
            current[version.id] = _with(version, rating)
    written_s = time.monotonic() - began
    site = LadderSite(store, HostCheck())
    began = time.monotonic()
    board = site.leaderboard_bytes()
    build_s = time.monotonic() - began
    store.close()
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "ladder", str(directory), "serve", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.readline()
    url = f"http://127.0.0.1:{port}"
    timings: dict[str, list[float]] = {}
    for path in ("/api/leaderboard", "/", "/ladder.js", "/api/entries/entry0001", "/entry/entry0001"):
        for _ in range(5):
            time.sleep(1.1)  # past the cache: every request builds the leaderboard again
            began = time.monotonic()
            with urllib.request.urlopen(url + path, timeout=60) as response:
                response.read()
            timings.setdefault(path, []).append(time.monotonic() - began)
    stop(process)
    print(f"leaderboard load: {entries} entries, {games:,} games (written in {written_s:.0f} s);"
          f" built in {build_s * 1000:.0f} ms ({len(board):,} bytes)")  # fmt: skip
    for path, values in timings.items():
        print(f"  GET {path}: median {sorted(values)[len(values) // 2] * 1000:.0f} ms (max {max(values) * 1000:.0f})")


def _with(version: Any, rating: Rating) -> Any:
    from dataclasses import replace

    return replace(version, rating=rating.rating, rd=rating.rd, volatility=rating.volatility)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--games", type=int, default=2, help="games per pairing of the round robin")
    parser.add_argument("--size", type=int, default=5)
    parser.add_argument("--field", choices=["nodes", "depth"], default="nodes", help="how the entries differ")
    parser.add_argument("--movetime", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--keep-open", type=int, default=16, help="bots kept running per slot")
    parser.add_argument("--load-games", type=int, default=100_000)
    parser.add_argument("--skip-round-robin", action="store_true")
    parser.add_argument("--skip-load", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ladder-") as folder:
        work = Path(folder)
        ratings = run_ladder(args, work)
        if not args.skip_round_robin:
            round_robin(args, work, ratings)
        if not args.skip_load:
            leaderboard_load(work, games=args.load_games)


if __name__ == "__main__":
    main()
