"""A busy host slows a run down; it never stops it (issue 29): a tournament with CPU burners beside it.

A 40-game round robin of sample bots at movetime 0.05 s, two games at once, with BURNERS CPU-bound processes
started beside it for its first BURN_S seconds (and, optionally, one short job on top). Printed: whether every
game was played, the false time losses (a sample bot never needs more than a fraction of its 50 ms: every loss
on time here is the host's doing), the games voided, the time paused and the fewest games at once, and the
status lines the run printed.

    python benchmarks/bench_host_backoff.py [--burners 3] [--burn-s 60] [--games 40] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BURN = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\nwhile time.monotonic() < end: pass\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burners", type=int, default=3)
    parser.add_argument("--burn-s", type=float, default=60.0)
    parser.add_argument("--games", type=int, default=40, help="games in all (a round robin of 4 bots)")
    parser.add_argument("--extra-job-s", type=float, default=10.0, help="one more burner, this long, at 20 s")
    parser.add_argument("--size", default="8", help="board size (8: 8x8)")
    parser.add_argument("--out", type=Path, help="output directory (default: a temporary one)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="backoff-")) / "run"
    bots = ["random", "greedy", "alphabeta", "strong"]
    pairings = len(bots) * (len(bots) - 1) // 2
    per_pairing = max(2, round(args.games / pairings / 2) * 2)
    events = out.parent / "events.jsonl"
    command = [sys.executable, "-m", "referee", "tournament", "--out", str(out), "--events", str(events)]
    command += [arg for bot in bots for arg in ("--bot", bot)]
    command += ["--games", str(per_pairing), "--movetime", "0.05", "--size", args.size, "--concurrency", "2"]
    burners = [subprocess.Popen([sys.executable, "-c", BURN, str(args.burn_s)]) for _ in range(args.burners)]
    started = time.monotonic()
    run = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    extra: subprocess.Popen[bytes] | None = None
    lines: list[str] = []
    assert run.stdout is not None
    for line in run.stdout:
        lines.append(line.rstrip("\n"))
        if extra is None and time.monotonic() - started > 20 and args.extra_job_s > 0:
            extra = subprocess.Popen([sys.executable, "-c", BURN, str(args.extra_job_s)])
    status = run.wait()
    elapsed = time.monotonic() - started
    for process in [*burners, *([extra] if extra else [])]:
        process.kill()
        process.wait()
    if not (out / "games.jsonl").exists():
        print("\n".join(lines[-20:]))
        raise SystemExit(f"bench_host_backoff: the run failed (exit status {status}) before its first game")
    records = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines() if line.strip()]
    on_time = [r for r in records if r["termination"] == "time"]
    stream = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    busy = [e for e in stream if e["type"] == "host_busy"]
    finished = next((e for e in stream if e["type"] == "run_finished"), None)
    voids = sum(1 for e in stream if e["type"] == "game_finished" and not e["scored"])
    print(f"bench_host_backoff: {args.burners} burners for {args.burn_s:g} s beside a {len(bots)}-bot round robin")
    print(f"  exit status {status}; {len(records)} games recorded of {per_pairing * pairings}; {elapsed:.0f} s")
    print(f"  false time losses: {len(on_time)}")
    for record in on_time:
        print(f"    {record['game_id']}: {record['reason']}")
    print(f"  games voided: {voids}")
    waited = finished["host_wait_s"] if finished else None
    lowest = min((e["games_at_once"] for e in busy), default=2)
    print(f"  time paused: {waited} s; fewest games at once: {lowest}; host_busy events: {len(busy)}")
    for event in busy:
        print(f"    {event['time'][11:19]} {event['status']}")
    tail = [line for line in lines if "host" in line or "error" in line][-5:]
    for line in tail:
        print(f"  | {line}")


if __name__ == "__main__":
    main()
