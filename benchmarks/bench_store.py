"""The run database as it fills: the cost of a save, a resume, the report and the standings, before and after.

    python benchmarks/bench_store.py [--sizes 1000 10000 50000] [--save-sizes ...] [--before DIR] [--no-before]

`--before` is a checkout of the baseline (commit f081fd7: `git worktree add /tmp/store-before f081fd7`); each
figure is measured for it and for this checkout in the same run, each in its own process (PYTHONPATH set to
the checkout), on directories of synthetic games:

    save        one game committed into a database already holding N done games: the median wall time of 20
                saves and the SQLite virtual-machine steps of one (sqlite3's progress handler called every
                step): the steps are what a save reads, and must not grow with N
    resume      `alternator match` resumed on a 50k-game match with 40 games left (two `random` bots): the
                start-up (from the command's start to its first game, read from its --events file: opening the
                database, reading what resume needs, checking games.jsonl) and the peak RSS of the whole command;
                then the whole command's wall time (it plays the 40 games and writes the standings, match.json
                and the report, which the `report` row measures on its own). Twice: as a killed run leaves the
                directory (`killed`: the two copies compared whole at the start), and as a run stopped cleanly
                leaves it (`stopped`: the last comparison found them in agreement and the files are unchanged
                since, so a checkout that stamps that need not compare them again)
    store       the store's side of that start-up alone, in one process, in CPU seconds (steadier than the wall
                time on a shared machine): the database opened, the check that nothing is lost (the two copies
                compared), a write (as the start's), the sync before any result is read, the finished games and the
                schedule read; killed and stopped as above
    migrate     (after only) the first open of the baseline's database by this checkout, which migrates it
    report      `alternator report` of the finished 50k-game match: wall time and peak RSS
    standings   the standings and head-to-head of the 50k games, read through the checkout's reader: wall time
                and peak RSS

The games are synthetic: 64 real random games of the rules engine (tests/report_games.py, ~3 KB of JSON
each) padded with infos to the 11.5 KB of a real record, and given each scheduled game's id and players.
The baseline's databases are filled with one bulk SQL transaction in its own layout (its own save costs
161 ms a game at 50k, which would take hours), then saved into with its own `RunStore.record_game`.
Peak memory is capped at 10 GB per process (RLIMIT_AS) so that the baseline cannot take the machine down.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
MEMORY_CAP = 10 * 1024**3
LEFT = 40  # games left to play when resuming
BOTS = ("random", "random")


def match_args(out: Path, games: int) -> list[str]:
    return ["match", "--black", BOTS[0], "--white", BOTS[1], "--games", str(games), "--out", str(out),
            "--concurrency", "2", "--tc", "10+0.1"]  # fmt: skip


# --- run inside a checkout (a child process) ---------------------------------------------------------------


def templates() -> list[str]:
    """Record JSON texts with @ID@, @B@ and @W@ to fill in, ~11.5 KB each."""
    import random

    sys.path.insert(0, str(HERE))
    from tests.report_games import random_game

    rng = random.Random(7)
    out = []
    for n in range(64):
        record = random_game(n + 1, "@B@", "@W@", rng)
        data = json.loads(record.model_dump_json())
        data["game_id"] = "@ID@"
        pad = 0
        while len(json.dumps(data, separators=(",", ":"))) < 11_500 and data["moves"]:
            move = data["moves"][pad % len(data["moves"])]
            move["infos"].append({"type": "info", "depth": 9, "nodes": 123456 + pad, "pv": ["a1a2", "b2b3", "c3c4"]})
            pad += 1
        out.append(json.dumps(data, separators=(",", ":")))
    return out


def plan_for(out: Path, games: int) -> Any:
    from referee.cli import build_parser

    args = build_parser().parse_args(match_args(out, games))
    from referee.commands.match import config_data
    from referee.run.config import parse_config, resolve_plan

    data, sources = config_data(args)
    data["out"] = str(out)
    config = parse_config(data, source="match", key_sources=sources)
    return resolve_plan(config, base_dir=Path.cwd(), source="match", default_out=out, kind="match")


def build(out: Path, games: int, done: int) -> dict[str, Any]:
    """A match directory of `games` scheduled games, the first `done` of them done (this checkout's layout)."""
    from referee.run.runner import GAMES_FILE
    from referee.run.schedule import make_schedule
    from referee.run.store import DB_NAME, RunStore

    plan = plan_for(out, games)
    schedule = make_schedule(plan.bot_names, plan.format, plan.games_per_pairing, plan.openings)
    texts = templates()
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with RunStore(out / DB_NAME) as store, (out / GAMES_FILE).open("w", encoding="utf-8") as lines:
        store.start(plan.fingerprint, schedule)
        bulk = hasattr(store, "record_games")
        rows = []
        for game in schedule[:done]:
            text = texts[game.number % len(texts)].replace("@ID@", game.game_id)
            text = text.replace('"@B@"', json.dumps(game.black)).replace('"@W@"', json.dumps(game.white))
            lines.write(text + "\n")
            rows.append((game, text))
        if bulk:  # this checkout: its own bulk save
            from referee.record import GameRecord

            store.record_games([(game.number, GameRecord.model_validate_json(text)) for game, text in rows])
        else:  # the baseline's layout, filled in one transaction (its own save is quadratic)
            db = store._db
            db.execute("BEGIN IMMEDIATE")
            for seq, (game, text) in enumerate(rows, 1):
                data = json.loads(text)
                db.execute(
                    "UPDATE games SET status = 'done', result = ?, termination = ?, record = ?, finished_at = ?,"
                    " seq = ? WHERE number = ?",
                    (data["result"], data["termination"], text, data["finished_at"], seq, game.number),
                )
            db.execute("COMMIT")
    return {"built_s": time.perf_counter() - start, "record_bytes": sum(len(t) for t in texts) // len(texts)}


def save_cost(out: Path) -> dict[str, Any]:
    """Saves into the database of `out` (built by `build`): median wall time of 20, VM steps of one."""
    from referee.record import GameRecord
    from referee.run.store import DB_NAME, RunStore

    texts = templates()
    with RunStore(out / DB_NAME) as store:
        pending = store.pending()[:21]
        scheduled = store.scheduled()
        times, steps, counter = [], 0, [0]

        def count_step() -> int:
            counter[0] += 1
            return 0

        for index, number in enumerate(pending):
            game = scheduled[number]
            text = texts[number % len(texts)].replace("@ID@", game.game_id)
            text = text.replace('"@B@"', json.dumps(game.black)).replace('"@W@"', json.dumps(game.white))
            record = GameRecord.model_validate_json(text)
            if index == 0:
                store._db.set_progress_handler(count_step, 1)
            start = time.perf_counter()
            store.record_game(number, record)
            elapsed = time.perf_counter() - start
            if index == 0:
                store._db.set_progress_handler(None, 1)
                steps = counter[0]
            else:
                times.append(elapsed)
    return {"save_ms": statistics.median(times) * 1000, "steps": steps}


def standings(out: Path) -> dict[str, Any]:
    """The standings (and head-to-head) of the games in `out`, read through this checkout's reader."""
    start = time.perf_counter()
    try:
        from referee.run.rundir import RunDirectory
        from referee.stats.sprt import count_in_order
        from referee.stats.standings import ScoredGame, compute_standings

        with RunDirectory.open(out) as run:  # streamed: a reader that holds the games shows in the peak RSS
            games = (ScoredGame(r.black, r.white, r.result, r.termination) for r in run.scored())
            table = compute_standings(games, run.bots)
            stats, _ = count_in_order(getattr(run, "counted_games", run.counted)(), run.sprt)
        figure = f"{table.bots[0].name} {table.bots[0].points:g}, {stats.games} games counted"
    except ImportError:  # the baseline: its report's reader
        import importlib

        report: Any = importlib.import_module("referee.outputs.report")
        old = report.load_run(out)
        rows = report.standings_data(old.records, old.bots)["rows"]
        figure = f"{rows[0]['name']} {rows[0]['points']:g}"
    return {"standings_s": time.perf_counter() - start, "figure": figure}


def child(argv: list[str]) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    what, out, *rest = argv
    if what == "build":
        result = build(Path(out), int(rest[0]), int(rest[1]))
    elif what == "save":
        result = save_cost(Path(out))
    elif what == "standings":
        result = standings(Path(out))
    elif what == "stop":  # as a run stopped cleanly leaves it: both copies compared, then the store closed
        from referee.run.recovery import sync_games_file
        from referee.run.store import DB_NAME, RunStore

        with RunStore(Path(out) / DB_NAME) as store:
            result = {"notes": len(sync_games_file(Path(out), store, quiet=True).notes)}
    elif what == "startup":  # the store's side of a resume's start-up
        from referee.run import recovery
        from referee.run.store import DB_NAME, RunStore

        cpu, start = time.process_time(), time.perf_counter()
        store = RunStore(Path(out) / DB_NAME)
        recovery.check_nothing_lost(Path(out), store, rebuild_hint="-")
        store.set_meta("bench", "1")  # as the start writes
        recovery.sync_games_file(Path(out), store, quiet=True)
        done = sum(1 for _ in store.finished())
        store.scheduled()
        store.close()
        result = {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - start, "done": done}
    elif what == "open":
        from referee.run.store import DB_NAME, RunStore

        start = time.perf_counter()
        RunStore(Path(out) / DB_NAME).close()
        result = {"open_s": time.perf_counter() - start}
    else:
        raise SystemExit(f"unknown step {what}")
    print(json.dumps(result))


# --- the driver ------------------------------------------------------------------------------------------


def first_game(events: Path) -> float:
    """When the first game started (seconds since the epoch), from an --events file."""
    from datetime import datetime

    for line in events.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["type"] == "game_started":
            return datetime.fromisoformat(event["time"]).timestamp()
    raise RuntimeError(f"{events}: no game started")


CPU: dict[str, float] = {}  # the CPU seconds (user + system) of the last run_in, by its first argument


def run_in(root: Path, argv: list[str], *, cwd: Path) -> tuple[float, float, str]:
    """Run `argv` with `root` first on PYTHONPATH; (wall s, peak RSS MB, stdout). Its CPU time goes to CPU["last"]:
    on a shared machine the wall time moves with the load, the CPU time much less."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP)),
    )
    assert process.stdout is not None and process.stderr is not None
    out = process.stdout.read()
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    CPU["last"] = usage.ru_utime + usage.ru_stime
    code = os.waitstatus_to_exitcode(status)
    if code not in (0,):
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"{' '.join(argv[:3])} in {root} exited {code}: {' | '.join(tail)}")
    return wall, usage.ru_maxrss / 1024, out.decode()


def step(root: Path, cwd: Path, *args: str) -> dict[str, Any]:
    _, _, out = run_in(root, [str(HERE / "benchmarks" / "bench_store.py"), "--child", *args], cwd=cwd)
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 50_000])
    parser.add_argument("--save-sizes", type=int, nargs="+", help="the sizes of the save figure (default: --sizes)")
    parser.add_argument("--before", type=Path, default=Path("/tmp/store-before"))
    parser.add_argument("--no-before", action="store_true")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    roots = {"after": HERE}
    if not args.no_before:
        layouts = (args.before / "referee" / "store.py", args.before / "referee" / "run" / "store.py")
        if not any(path.is_file() for path in layouts):  # a baseline of either layout (flat, or sub-packages)
            raise SystemExit(f"{args.before}: no baseline checkout; git worktree add {args.before} f081fd7")
        roots = {"before": args.before.resolve(), **roots}
    largest = max(args.sizes)
    work = Path(tempfile.mkdtemp(prefix="bench-store-"))
    print(f"python {sys.version.split()[0]}, sqlite {__import__('sqlite3').sqlite_version}, in {work}")
    try:
        print("\nsave: one game committed into a database holding N done games (median of 20; VM steps of one)")
        for n in args.save_sizes or args.sizes:
            cells = []
            for name, root in roots.items():
                out = work / f"{name}-save-{n}"
                built = step(root, work, "build", str(out), str(n + 21), str(n))
                cost = step(root, work, "save", str(out))
                cells.append(f"{name} {cost['save_ms']:8.3f} ms {cost['steps']:>9,} steps")
                shutil.rmtree(out)
            print(f"  N={n:>6,}: " + " | ".join(cells) + f"   (records {built['record_bytes']:,} B)")

        print(f"\nresume: `alternator match` on {largest:,} games, {LEFT} left (plays them, writes every output file)")
        dirs = {}
        for name, root in roots.items():
            out = work / f"{name}-run"
            step(root, work, "build", str(out), str(largest), str(largest - LEFT))
            if name == "before":  # a copy to migrate with this checkout
                shutil.copytree(out, work / "migrate")
            stopped = work / f"{name}-stopped"
            shutil.copytree(out, stopped)
            step(root, work, "stop", str(stopped))
            for how, source in (("killed", out), ("stopped", stopped)):
                copy = work / f"{name}-{how}-copy"
                shutil.copytree(source, copy, copy_function=shutil.copy2)
                if how == "stopped":  # a copy has other inodes: stamped as the stopped run would have left it
                    step(root, work, "stop", str(copy))
                figure = step(root, work, "startup", str(copy))
                print(
                    f"  {name:6} {how:7}: the store's start-up {figure['cpu_s']:5.2f} s CPU,"
                    f" {figure['wall_s']:5.2f} s wall ({figure['done']:,} games)"
                )
                shutil.rmtree(copy)
            for how, where in (("killed", out), ("stopped", stopped)):
                started = time.time()
                events = work / f"{name}-{how}-events.jsonl"
                argv = ["-m", "referee", *match_args(where, largest), "--events", str(events)]
                wall, rss, _ = run_in(root, argv, cwd=work)
                print(f"  {name:6} {how:7}: start-up {first_game(events) - started:5.2f} s, peak RSS {rss:7.0f} MB;"
                      f" the whole command {wall:6.2f} s (CPU {CPU['last']:6.2f} s)")  # fmt: skip
            shutil.rmtree(stopped)
            dirs[name] = out
        if "before" in roots:
            opened = step(HERE, work, "open", str(work / "migrate"))
            print(
                f"  migrate: this checkout opening the baseline's {largest:,}-game database: {opened['open_s']:.2f} s"
            )
            started = time.time()
            events = work / "migrate-events.jsonl"
            argv = ["-m", "referee", *match_args(work / "migrate", largest), "--events", str(events)]
            wall, rss, _ = run_in(HERE, argv, cwd=work)
            startup = first_game(events) - started
            print(f"  after, resuming the migrated database ({LEFT} left): start-up {startup:.2f} s,"
                  f" peak RSS {rss:.0f} MB; the whole command {wall:.2f} s")  # fmt: skip

        print(f"\nreport and standings of the {largest:,} games")
        for name, root in roots.items():
            wall, rss, _ = run_in(root, ["-m", "referee", "report", str(dirs[name]), "-o", str(work / f"{name}.html")],
                                  cwd=work)  # fmt: skip
            size = (work / f"{name}.html").stat().st_size / 1e6
            cpu = CPU["last"]
            wall_s, rss_s, text = run_in(
                root, [str(HERE / "benchmarks" / "bench_store.py"), "--child", "standings", str(dirs[name])], cwd=work
            )
            figure = json.loads(text.strip().splitlines()[-1])
            print(f"  {name:6}: report {wall:6.2f} s (CPU {cpu:6.2f} s), peak RSS {rss:7.0f} MB, page {size:.0f} MB;"
                  f" standings {wall_s:5.2f} s (CPU {CPU['last']:5.2f} s; the process), peak RSS {rss_s:6.0f} MB"
                  f" ({figure['figure']})")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
