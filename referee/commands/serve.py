"""`alternator serve OUT_DIR`: a live page following a running match or tournament (referee/outputs/serve.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from referee.cli import UsageError
from referee.commands.report import anchor_option

HELP = "serve a live page that follows a running (or finished) match or tournament in a browser"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="the output directory of a match or tournament")
    parser.add_argument("--port", type=int, default=8080, help="the port to listen on (default 8080; 0: any free one)")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 shows it to the network)",
    )
    parser.add_argument(
        "--anchor", metavar="NAME=RATING", help="fix bot NAME's rating at RATING (default: the run's own --anchor)"
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name (without port) browsers may reach the page by, beside localhost and the --host address"
        " (repeat for more; '*' for any, behind a proxy that checks names): other names are refused, so that a page"
        " elsewhere cannot read the live view through DNS rebinding",
    )


def run(args: argparse.Namespace) -> int:
    import trio

    from referee.commands.common import cancel_on_signal
    from referee.exceptions import find_exception
    from referee.outputs.serve import serve

    if not args.out_dir.is_dir():
        raise UsageError(
            f"{args.out_dir}: no such directory; give the output directory (--out) of a match or tournament"
        )
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: a port is a number from 0 to 65535")
    if (args.out_dir / "ladder.db").exists():  # a ladder's directory: its leaderboard (alternator ladder DIR serve)
        from referee.commands.ladder import serve_directory

        return serve_directory(args.out_dir, args.host, args.port, args.allow_host)
    anchor = anchor_option(args.anchor, args.out_dir)

    def ready(address: str) -> None:
        print(f"serving the live view of {args.out_dir} at {address}/ (Ctrl-C to stop)", flush=True)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_signal, nursery.cancel_scope)
            await serve(args.out_dir, args.host, args.port, on_ready=ready, anchor=anchor, allow_hosts=args.allow_host)

    try:
        trio.run(main)
    except BaseException as error:
        if find_exception(error, KeyboardInterrupt) is not None:
            print("stopped", file=sys.stderr)
            return 0
        failed = find_exception(error, OSError)
        if failed is not None:
            raise UsageError(
                f"cannot listen on {args.host}:{args.port} ({failed.strerror or failed}); choose another --port"
            ) from None
        raise
    print("stopped", file=sys.stderr)  # by a signal: the page is served until then
    return 0
