"""`alternator serve` on a large run, watched by many browsers: its memory.

    python benchmarks/bench_serve.py [--games 100000] [--clients 200] [--before /path/to/baseline/checkout]

A tournament directory of `--games` synthetic games is built (64 real random 8x8 games of the rules engine,
tests/report_games.py, repeated under each scheduled id; a database and games.jsonl, as a run leaves them).
Then `alternator serve` is started on it (from this checkout, and from `--before` when given, each in its own
process) and measured:

    idle        resident memory (VmRSS) once it serves, having read every game's viewer line
    clients     `--clients` event streams opened at once (each from its own loopback address, as browsers on
                many machines; the server allows 16 per address) and each read up to its whole first summary;
                resident memory then, and the peak (VmHWM) over the whole process's life
    detail      the time of 200 requests for a finished game's detail (/api/game/N), one at a time
    page        the time of 50 requests for a page of 100 games of the list (/api/games?offset=...), at offsets
                spread over the run, and of 20 filtered by a bot (a baseline without the paged list answers 404)
    page size   the bytes of the page (`/`) itself: the baseline embeds the list of every game in it

Run it at two sizes (`--games 10000`, `--games 100000`) to see whether the memory grows with the games.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))


def build(out: Path, games: int) -> None:
    from referee.record import GameRecord
    from referee.run.config import parse_config, resolve_plan
    from referee.run.schedule import make_schedule
    from referee.run.store import DB_NAME, RunStore
    from tests.report_games import random_game

    bots = [{"name": name, "command": "random"} for name in ("alpha", "beta", "gamma", "delta")]
    per_pairing = -(-games // 6)
    data = {"bots": bots, "games": per_pairing, "size": "8x8", "time_control": "10+0.1"}
    plan = resolve_plan(parse_config(data, source="bench"), base_dir=out, source="bench", default_out=out)
    schedule = make_schedule(plan.bot_names, plan.format, plan.games_per_pairing, plan.openings)[:games]
    rng = random.Random(7)
    templates = [random_game(n + 1, "@B@", "@W@", rng) for n in range(64)]
    texts = [t.model_dump_json().replace(t.game_id, "@ID@") for t in templates]
    out.mkdir(parents=True, exist_ok=True)
    with RunStore(out / DB_NAME) as store, (out / "games.jsonl").open("w", encoding="utf-8") as lines:
        store.start(plan.fingerprint, schedule)
        for start in range(0, len(schedule), 5000):
            batch = []
            for game in schedule[start : start + 5000]:
                text = texts[game.number % len(texts)].replace("@ID@", game.game_id)
                text = text.replace('"@B@"', json.dumps(game.black)).replace('"@W@"', json.dumps(game.white))
                batch.append((game.number, GameRecord.model_validate_json(text), text))
                lines.write(text + "\n")
            store.record_games([(n, r) for n, r, _ in batch], [t for _, _, t in batch])


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in MB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) // 1024
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def open_stream(port: int, source: str) -> socket.socket:
    """An event stream from `source`, read until its first event (the summary) has arrived whole."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=120, source_address=(source, 0))
    sock.sendall(f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    data = b""
    while b"\n\n" not in data.split(b"\r\n\r\n", 1)[-1] or b"\r\n\r\n" not in data:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError(f"the stream from {source} closed: {data[:200]!r}")
        data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"the stream from {source} was refused: {data[:200]!r}")
    return sock


def fetch(port: int, path: str) -> bytes:
    """The body of a GET (the response whole: headers and body, as the socket gives it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(1 << 16):
            data += chunk
    return data.split(b"\r\n\r\n", 1)[-1]


def get(port: int, path: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(1 << 16):
            data += chunk
    return int(data.split(b" ", 2)[1])


def measure(root: Path, out: Path, clients: int, games: int) -> dict[str, object]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(root)}
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "serve", str(out), "--port", str(port)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        started = time.perf_counter()
        line = process.stdout.readline()  # once it has read every finished game
        if "serving" not in line:
            raise RuntimeError(line + (process.stderr.read() if process.stderr else ""))
        ready = time.perf_counter() - started
        idle = memory(process.pid)
        opened = time.perf_counter()
        streams = [open_stream(port, f"127.0.{1 + i // 250}.{1 + i % 250}") for i in range(clients)]
        opened = time.perf_counter() - opened
        with_clients = memory(process.pid)
        detail = time.perf_counter()
        statuses = {get(port, f"/api/game/{random.randrange(1, games + 1)}") for _ in range(200)}
        detail = time.perf_counter() - detail
        paged = time.perf_counter()
        pages = {get(port, f"/api/games?offset={games * k // 50}&limit=100") for k in range(50)}
        paged = time.perf_counter() - paged
        filtered = time.perf_counter()
        pages |= {get(port, f"/api/games?offset={games // 6 * k // 20}&limit=100&bot=beta") for k in range(20)}
        filtered = time.perf_counter() - filtered
        after_pages = memory(process.pid)
        page_bytes = len(fetch(port, "/"))
        for stream in streams:
            stream.close()
        return {
            "ready_s": ready,
            "idle": idle,
            "clients": with_clients,
            "open_s": opened,
            "detail_ms": detail / 200 * 1000,
            "statuses": sorted(statuses),
            "page_ms": paged / 50 * 1000,
            "filtered_ms": filtered / 20 * 1000,
            "page_statuses": sorted(pages),
            "after_pages": after_pages,
            "page_bytes": page_bytes,
        }
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:  # still reading the run when it was asked to stop
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--before", type=Path, help="a baseline checkout, measured the same way")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the run directory here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    out = args.keep or work / "run"
    try:
        if not (out / "run.db").exists():
            started = time.perf_counter()
            build(out, args.games)
            print(f"built {args.games:,} games in {time.perf_counter() - started:.0f} s:"
                  f" run.db {(out / 'run.db').stat().st_size / 1e6:.0f} MB,"
                  f" games.jsonl {(out / 'games.jsonl').stat().st_size / 1e6:.0f} MB")  # fmt: skip
        roots = {"after": HERE, **({"before": args.before.resolve()} if args.before else {})}
        for name, root in roots.items():
            try:
                figures = measure(root, out, args.clients, args.games)
            except (RuntimeError, OSError) as error:
                print(f"{name:6}: failed: {error}")
                continue
            idle, clients, paged = figures["idle"], figures["clients"], figures["after_pages"]
            assert isinstance(idle, dict) and isinstance(clients, dict) and isinstance(paged, dict)
            page_bytes = figures["page_bytes"]
            assert isinstance(page_bytes, int)
            print(f"{name:6}: ready in {figures['ready_s']:.1f} s, RSS idle {idle['VmRSS']} MB;"
                  f" {args.clients} streams opened in {figures['open_s']:.1f} s: RSS {clients['VmRSS']} MB,"
                  f" peak {clients['VmHWM']} MB; /api/game/N {figures['detail_ms']:.1f} ms"
                  f" (statuses {figures['statuses']}); /api/games {figures['page_ms']:.1f} ms a page,"
                  f" {figures['filtered_ms']:.1f} ms filtered (statuses {figures['page_statuses']}), RSS then"
                  f" {paged['VmRSS']} MB, peak {paged['VmHWM']} MB; the page / {page_bytes / 1e6:.2f} MB")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
