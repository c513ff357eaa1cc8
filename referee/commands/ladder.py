"""`alternator ladder DIR [ACTION ...]`: a continuous competition (referee/ladder/), run and managed.

With no action it runs the ladder in DIR until Ctrl-C (exit 130), resuming from DIR's database; `--serve` also
serves the leaderboard. The actions change the ladder through its database, also while it runs in another
process: `add`, `update`, `retire`, `list`, `pause`, `resume`, `suspend`, `enable`, `logs`, `export`, `token add`, and
`serve` (the leaderboard alone, no games).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.cli import UsageError, board_size, komi_value
from referee.commands.cluster_options import add_cluster_options, cluster_table
from referee.commands.common import cancel_on_signal

if TYPE_CHECKING:
    from referee.ladder.runner import LadderSettings
    from referee.ladder.store import LadderStore

HELP = "run a ladder: a continuous competition that entries join and leave while it runs, with a leaderboard"

EPILOG = """\
actions (each works while the ladder runs in another process):
  alternator ladder DIR                       run the ladder in DIR (created if new; resumed otherwise)
  alternator ladder DIR --serve --port 8080   ... and serve its leaderboard on http://127.0.0.1:8080/
  alternator ladder DIR serve                 serve the leaderboard only (no games)
  alternator ladder DIR add NAME BOT          a new entry (BOT: any form `alternator match` takes)
  alternator ladder DIR update NAME BOT       a new version of NAME, rated afresh (the old one is kept)
  alternator ladder DIR retire NAME           NAME stops playing (kept on the leaderboard's history)
  alternator ladder DIR suspend NAME [WHY]    NAME stops playing until `enable NAME`
  alternator ladder DIR enable NAME           NAME plays again (also after a suspension for faults)
  alternator ladder DIR pause | resume        no new games / games again (games in progress finish)
  alternator ladder DIR list                  the entries: rating ± uncertainty, games, status, reasons
  alternator ladder DIR logs NAME             the stderr logs of NAME's bots (the newest last)
  alternator ladder DIR token add NAME        a participant's upload token (printed once, stored hashed)
  alternator ladder DIR token add --organiser the organiser's token: every entry's faults and stderr logs on
                                              the pages and the API (printed once, stored hashed)
  alternator ladder DIR export FILE.csv       every game: seq, id, black, white, result, how, reason, time
  alternator ladder DIR export FILE.pgn       every game in PGN (as `alternator export DIR --format pgn`)
Stop a running ladder with Ctrl-C: the games in progress are dropped (not scored); run it again to resume.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("dir", type=Path, metavar="DIR", help="the ladder's directory (its database, games, logs)")
    parser.add_argument("action", nargs="?", metavar="ACTION", help="what to do (see below); none: run the ladder")
    parser.add_argument("words", nargs="*", metavar="ARG", help="the action's arguments")
    play = parser.add_argument_group("games (kept in the ladder's database; given again, they change it)")
    play.add_argument("--tc", metavar="BASE+INC", help="time control, like 10+0.1 (the default)")
    play.add_argument("--movetime", type=float, metavar="SECONDS", help="a fixed time per move instead of a clock")
    play.add_argument("--size", metavar="N|WxH", help="board size (default 8x8)")
    play.add_argument("--komi", type=komi_value, help="points added to White's score (default 3.5)")
    play.add_argument("--openings-plies", type=int, metavar="N", help="random placements opening each game (2)")
    play.add_argument("--concurrency", type=int, metavar="N", help="games at once on this machine (default 1)")
    play.add_argument("--keep-open", type=int, metavar="N", help="bots kept running between games per slot (16)")
    play.add_argument("--max-faults", type=int, metavar="N", help="faults in a row that suspend an entry (3)")
    play.add_argument("--start-timeout", type=float, metavar="SECONDS", help="time a bot has to start (10)")
    limits = parser.add_argument_group("uploaded bots (always sandboxed)")
    limits.add_argument("--memory-mb", type=int, metavar="MIB", help="address-space limit of each (default 512)")
    limits.add_argument("--max-processes", type=int, metavar="N", help="processes and threads of each (default 32)")
    limits.add_argument("--cpu-limit", type=float, metavar="SECONDS", help="CPU seconds per game of each (none)")
    web = parser.add_argument_group("the leaderboard")
    web.add_argument("--serve", action="store_true", help="serve the leaderboard while the ladder runs")
    web.add_argument("--port", type=int, default=8080, help="its port (default 8080; 0: any free one)")
    web.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    web.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the server answers to besides the loopback ones (repeat; behind a proxy: its public name)",
    )
    web.add_argument(
        "--organiser",
        action="store_true",
        help="with `token add`: the organiser's token (reads every entry's fault reasons and stderr logs)",
    )
    web.add_argument(
        "--uploads-per-minute", type=int, default=5, metavar="N", help="uploads a participant (or address) may make"
    )
    add_cluster_options(parser)


def _settings(args: argparse.Namespace, store: LadderStore) -> LadderSettings:
    from dataclasses import replace

    from referee.ladder.runner import LadderSettings

    settings = LadderSettings.from_json(store.setting("settings"))
    changes: dict[str, Any] = {}
    if args.size is not None:
        changes["width"], changes["height"] = board_size(args.size)
    for key, value in (
        ("komi", args.komi),
        ("openings_plies", args.openings_plies),
        ("concurrency", args.concurrency),
        ("keep_open", args.keep_open),
        ("max_faults", args.max_faults),
        ("start_timeout_s", args.start_timeout),
        ("memory_mb", args.memory_mb),
        ("max_processes", args.max_processes),
        ("cpu_limit_s", args.cpu_limit),
    ):
        if value is not None:
            changes[key] = value
    if args.tc is not None:
        changes["time_control"], changes["movetime"] = args.tc, None
    if args.movetime is not None:
        changes["movetime"] = args.movetime
    settings = replace(settings, **changes)
    try:
        settings.control()
    except ValueError as error:
        raise UsageError(f"--tc/--movetime: {error}") from None
    for name, value, low in (
        ("--concurrency", settings.concurrency, 1),
        ("--keep-open", settings.keep_open, 2),
        ("--max-faults", settings.max_faults, 1),
        ("--memory-mb", settings.memory_mb, 16),
        ("--max-processes", settings.max_processes, 1),
        ("--openings-plies", settings.openings_plies, 0),
    ):
        if value < low:
            raise UsageError(f"{name} {value}: give at least {low}")
    return settings


def run(args: argparse.Namespace) -> int:
    from referee.ladder.store import LadderError, LadderStore

    action = args.action
    try:
        store = LadderStore(args.dir, create=action in (None, "add", "token"))
    except LadderError as error:
        raise UsageError(str(error)) from None
    try:
        if action is None:
            return _run_ladder(args, store, play=True)
        if action == "serve":
            _expect(args, 0, "serve")
            return _run_ladder(args, store, play=False)
        return _manage(args, store)
    except LadderError as error:
        raise UsageError(str(error)) from None
    finally:
        store.close()


def _expect(args: argparse.Namespace, count: int, usage: str, *, at_least: bool = False) -> list[str]:
    words: list[str] = args.words
    if len(words) < count or (not at_least and len(words) != count):
        raise UsageError(f"usage: alternator ladder DIR {usage}")
    return words


def _parse_bot(text: str, name: str) -> Any:
    from referee.run.botspec import BotSpecError, check_bot_command, parse_bot_arg

    try:
        spec = parse_bot_arg(text).model_copy(update={"name": name})
        if spec.dir is None:
            spec = spec.model_copy(update={"dir": Path.cwd()})  # the ladder may run from another folder
        check_bot_command(spec)
    except BotSpecError as error:
        raise UsageError(f"bot {text!r}: {error}") from None
    return spec


def _manage(args: argparse.Namespace, store: LadderStore) -> int:
    from referee.run.botspec import check_bot_name

    action = args.action
    out = sys.stdout
    if action in ("add", "update"):
        name, bot = _expect(args, 2, f"{action} NAME BOT")
        try:
            check_bot_name(name)
        except ValueError as error:
            raise UsageError(str(error)) from None
        spec = _parse_bot(bot, name)
        if action == "add":
            version = store.add_entry(name, spec, f"added by the organiser: {bot}")
            out.write(f"added {name!r} (version 1); a running ladder pairs it at its next game\n")
        else:
            version = store.update_entry(name, spec, f"updated by the organiser: {bot}")
            out.write(f"{name!r} is now version {version.number}, rated afresh; the old version is kept\n")
    elif action == "retire":
        (name,) = _expect(args, 1, "retire NAME")
        store.retire(name)
        out.write(f"retired {name!r}: it plays no more (`enable {name}` brings it back)\n")
    elif action == "suspend":
        name, *why = _expect(args, 1, "suspend NAME [REASON]", at_least=True)
        store.suspend(name, " ".join(why) or "suspended by the organiser")
        out.write(f"suspended {name!r}\n")
    elif action == "enable":
        (name,) = _expect(args, 1, "enable NAME")
        store.enable(name)
        out.write(f"{name!r} is active again\n")
    elif action in ("pause", "resume"):
        _expect(args, 0, action)
        store.set_paused(action == "pause")
        out.write("paused: games in progress finish, no new ones start\n" if action == "pause" else "resumed\n")
    elif action == "list":
        _expect(args, 0, "list")
        out.write(list_text(store))
    elif action == "logs":
        (name,) = _expect(args, 1, "logs NAME")
        out.write(logs_text(store, name))
    elif action == "export":
        (target,) = _expect(args, 1, "export FILE.csv|FILE.pgn")
        if target.lower().endswith(".pgn"):  # the arena's PGN (`alternator export DIR`), for Ordo or BayesElo
            from referee.commands.export import run as export_run

            return export_run(argparse.Namespace(out_dir=args.dir, output=Path(target), format="pgn"))
        count = export_csv(store, Path(target))
        out.write(f"wrote {count} games to {target}\n")
    elif action == "token":
        from referee.ladder.uploads import ORGANISER, new_token, token_digest

        usage = "usage: alternator ladder DIR token add NAME (a participant's) | token add --organiser"
        words = args.words
        if not words or words[0] != "add" or len(words) != (1 if args.organiser else 2):
            raise UsageError(usage)
        name = ORGANISER if args.organiser else words[1]
        try:
            check_bot_name(name)
        except ValueError as error:
            raise UsageError(str(error)) from None
        if name == ORGANISER and not args.organiser:
            raise UsageError(f"{name!r} is the organiser's: give a participant another name")
        token = new_token()
        store.set_token_hash(name, token_digest(token))
        whose = "the organiser's token" if args.organiser else f"the upload token of {name!r}"
        out.write(f"{whose} (shown this once, only its hash is kept; `token add` again replaces it):\n")
        out.write(token + "\n")
    else:
        raise UsageError(f"unknown action {action!r}; `alternator ladder --help` lists them")
    return 0


def list_text(store: LadderStore) -> str:
    entries = store.entries()
    if not entries:
        return "no entries yet: `alternator ladder DIR add NAME BOT`\n"
    lines = [f"{'#':>3}  {'entry':<24} {'rating':>7} {'±':>5} {'games':>6}  {'W-D-L':<12} status"]
    rank = 0
    for entry in entries:
        version = entry.version
        assert version is not None
        shown = ""
        if entry.status != "retired":
            rank += 1
            shown = str(rank)
        wdl = f"{version.wins}-{version.draws}-{version.losses}"
        status = entry.shown_status + (f": {entry.reason}" if entry.reason else "")
        lines.append(
            f"{shown:>3}  {entry.name + f' (v{version.number})':<24} {version.rating:7.0f} {version.rd:5.0f}"
            f" {version.games:6}  {wdl:<12} {status}"
        )
    paused = " (paused)" if store.paused else ""
    return "\n".join(lines) + f"\n{store.game_count()} games{paused}\n"


def export_csv(store: LadderStore, target: Path) -> int:
    """Every game as a CSV row (written beside, then moved into place); how many."""
    import csv

    temporary = target.with_name(target.name + ".tmp")
    count = 0
    with temporary.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["seq", "game_id", "black", "white", "result", "termination", "reason", "finished_at"])
        for game in store.all_games():
            writer.writerow([game.seq, game.game_id, game.black, game.white, game.result, game.termination,
                             game.reason, game.finished_at])  # fmt: skip
            count += 1
    temporary.replace(target)
    return count


def logs_text(store: LadderStore, name: str) -> str:
    from referee.ladder.runner import LOG_DIR

    versions = store.versions(name)
    if not versions:
        raise UsageError(f"no entry {name!r}; `alternator ladder DIR list` shows the entries")
    paths: list[Path] = []
    for version in versions:
        paths += (store.directory / LOG_DIR).glob(f"{version.key}-*.stderr.log")
    paths.sort(key=lambda path: path.stat().st_mtime)
    faults = store.faults(name, limit=5)
    text = "".join(f"{path}\n" for path in paths) or f"no stderr logs of {name!r} yet\n"
    if faults:
        text += "recent faults:\n" + "".join(f"  {f.at}: {f.reason}\n" for f in faults)
    if paths:
        tail = paths[-1].read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
        text += f"the newest log's last lines ({paths[-1].name}):\n" + "".join(f"  {line}\n" for line in tail)
    return text


def _run_ladder(args: argparse.Namespace, store: LadderStore, *, play: bool) -> int:
    import trio

    from referee.exceptions import find_exception

    if args.words:
        raise UsageError(f"unexpected arguments: {' '.join(args.words)}")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: a port is a number from 0 to 65535")
    settings = _settings(args, store)
    if play:
        store.set_setting("settings", settings.to_json())
    cluster_config = None
    table = cluster_table(args, Path.cwd())
    if table is not None and play:
        from referee.cluster.config import ClusterConfig

        try:
            cluster_config = ClusterConfig(**table)
        except ValueError as error:
            raise UsageError(f"--cluster: {error}") from None
    stopped: list[int] = []

    def say(text: str) -> None:
        from datetime import datetime

        print(f"{datetime.now().strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    async def main() -> None:
        from referee.ladder.runner import Ladder
        from referee.ladder.server import LadderSite, RateLimiter, serve_site
        from referee.outputs.httpsafety import HostCheck

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_signal, nursery.cancel_scope, stopped)
            cluster = None
            if play:
                if cluster_config is not None:
                    from referee.cluster.dask import Cluster

                    cluster = await Cluster.connect(cluster_config, on_message=say)
                ladder = Ladder(store, settings, cluster=cluster, on_message=say)
                try:
                    await nursery.start(ladder.run)
                except BaseException:
                    if cluster is not None:
                        await cluster.close()
                    raise
                say(f"ladder running in {args.dir} ({len(store.playable())} active entries); Ctrl-C to stop")
            if args.serve or not play:
                site = LadderSite(
                    store,
                    HostCheck([*args.allow_host, *([] if args.host in ("0.0.0.0", "::", "") else [args.host])]),
                    settings=settings,
                    limiter=RateLimiter(count=max(1, args.uploads_per_minute), window_s=60.0),
                )

                def ready(address: str) -> None:
                    print(f"serving the leaderboard of {args.dir} at {address}/ (Ctrl-C to stop)", flush=True)

                nursery.start_soon(lambda: serve_site(site, args.host, args.port, on_ready=ready))

    try:
        trio.run(main)
    except BaseException as error:
        if find_exception(error, KeyboardInterrupt) is not None:
            stopped.append(signal.SIGINT)
        elif cluster_config is not None and (lost := _cluster_error(error)) is not None:
            raise UsageError(f"{lost}; the games in progress were dropped, every finished one is kept") from None
        else:
            failed = find_exception(error, OSError)
            if failed is not None and args.serve:
                raise UsageError(
                    f"cannot listen on {args.host}:{args.port} ({failed.strerror or failed}); choose another --port"
                ) from None
            raise
    if not play:
        print("stopped", file=sys.stderr)  # as `alternator serve`: serving only, nothing was cut short
        return 0
    signum = stopped[0] if stopped else signal.SIGINT
    print(
        f"alternator ladder: stopped; games in progress were dropped. Run the same command to resume ({args.dir})",
        file=sys.stderr,
    )
    return 128 + signum


def _cluster_error(error: BaseException) -> str | None:
    from referee.cluster.dask import ClusterError
    from referee.exceptions import find_exception

    found = find_exception(error, ClusterError)
    return None if found is None else str(found)


def serve_directory(directory: Path, host: str, port: int, allow_hosts: Sequence[str] = ()) -> int:
    """`alternator serve DIR` on a ladder's directory: its leaderboard alone, as `alternator ladder DIR serve`."""
    parser = argparse.ArgumentParser()
    configure(parser)
    allowed = [word for name in allow_hosts for word in ("--allow-host", name)]
    args = parser.parse_args([str(directory), "serve", "--host", host, "--port", str(port), *allowed])
    return run(args)
