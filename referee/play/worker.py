"""A play worker: one slot's games in a process of their own, for runs that play two or more games at once.

Two play loops in one referee share one interpreter lock, and on two cores they hand it back and forth at
every system call of a move: measured, a move then cost the referee 110-160 us of CPU instead of 70-80 with
one loop. So with two or more slots each slot plays in a process of its own (`ProcessPlayLoop` in
`referee.play.loop` starts it as `python -m referee.play.worker`): the same `play_batched` and the same bot pool,
with no lock shared with the coordinator or the other slots. It hosts the slot's bots (their death signal and
cgroups are its own; it dies with the referee by its own death signal), and talks to the coordinator over a
socket with length-prefixed JSON messages (a game's record goes beside its message, as it is: `frame`):

- to the worker: `play` (a game: its id, both sides as a pool key and a bot spec, the settings), `cancel`
  (stop that game), `close` (stop every bot and exit);
- from the worker: `moves` (a batch of moves of the game in progress, one in each whole `RELAY_INTERVAL_S` at most;
  a game's last ones in the same write as its `done`), `done` (the pool's running keys; as the message's payload,
  the record's JSON, a newline and its viewer line: the forms the store keeps, made here, not in the coordinator),
  `failed` (a bot could not start, or the game could not be played: the error's kind and text), `cancelled`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import select
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from referee.host import process_wide
from referee.host.containment import die_with_parent, host_support
from referee.outputs.viewerline import line_text
from referee.play.game import Limits
from referee.play.loop import BotPool, MoveBatches, encode_move, frame, pin, play_batched, read_message
from referee.play.process import BotStartError
from referee.play.reader import sole_game_loop
from referee.record import GameSettings, MoveRecord
from referee.run.botspec import BotSpec

__all__ = ["main"]

log = logging.getLogger(__name__)


class _Worker:
    def __init__(self, sock: socket.socket, pool: BotPool) -> None:
        self.sock = sock
        self.pool = pool
        self.scopes: dict[int, trio.CancelScope] = {}

    def send(self, message: dict[str, Any], payload: bytes = b"") -> None:
        """Send a message whole (with its payload: `frame`); a coordinator that is gone ends the worker (its bots
        die with it)."""
        self.send_frames(frame(message, payload))

    def send_frames(self, data: bytes) -> None:
        """Send framed messages whole, in one write if the socket takes it."""
        while data:
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                select.select([], [self.sock], [])
                continue
            data = data[sent:]

    async def play(self, job: dict[str, Any]) -> None:
        number = job["id"]

        def moves_message(moves: list[tuple[MoveRecord, int]]) -> dict[str, Any]:
            return {"op": "moves", "id": number, "moves": [encode_move(move, ply) for move, ply in moves]}

        batches = MoveBatches(lambda moves: self.send(moves_message(moves)))

        black_key, black = job["black"][0], BotSpec.model_validate(job["black"][1])
        white_key, white = job["white"][0], BotSpec.model_validate(job["white"][1])
        settings = GameSettings.model_validate(job["settings"])
        limits = Limits(**job.get("limits", {}))
        with trio.CancelScope() as scope:
            self.scopes[number] = scope
            try:
                record, last = await play_batched(
                    self.pool, job["game_id"], (black_key, black), (white_key, white), settings, batches, limits
                )
            except BotStartError as error:
                self.send({"op": "failed", "id": number, "kind": "start", "error": str(error)})
                return
            except ValueError as error:
                self.send({"op": "failed", "id": number, "kind": "value", "error": str(error)})
                return
            finally:
                del self.scopes[number]
            # The last moves and the record in one write: the coordinator wakes once for both. The record goes as
            # the store keeps it, its JSON and its viewer line (`stored_form`): made here, not in the coordinator.
            stored = f"{record.model_dump_json()}\n{line_text(record)}".encode()
            done = frame({"op": "done", "id": number, "running": sorted(self.pool.running())}, stored)
            self.send_frames(frame(moves_message(last)) + done if last else done)
            return
        self.send({"op": "cancelled", "id": number})

    async def serve(self) -> None:
        buffer = bytearray()
        async with trio.open_nursery() as nursery:
            while True:
                try:
                    message = read_message(buffer)
                except ValueError:  # garbled: stop every bot and end, as when the coordinator goes away
                    log.error("play worker: a garbled message from the coordinator; stopping")
                    break
                if message is None:
                    await trio.lowlevel.wait_readable(self.sock)
                    data = self.sock.recv(1 << 16)
                    if not data:
                        break  # the coordinator is gone
                    buffer += data
                    continue
                op = message["op"]
                if op == "play":
                    nursery.start_soon(self.play, message)
                elif op == "cancel":
                    scope = self.scopes.get(message["id"])
                    if scope is not None:
                        scope.cancel()
                elif op == "close":
                    break
            self.pool.close_all()
            for scope in self.scopes.values():
                scope.cancel()


async def _main(args: argparse.Namespace, cores: list[int] | None) -> None:
    sock = socket.socket(fileno=args.fd)
    sock.setblocking(False)
    hidden = [Path(path) for path in json.loads(args.hidden)]
    # One game at a time: its bots' replies are awaited in a blocking poll that a message from the coordinator
    # (its socket readable) interrupts.
    with sole_game_loop([sock.fileno()]):
        async with trio.open_nursery() as nursery:
            pool = BotPool(Path(args.log_dir), nursery, cores, hidden=hidden)
            await _Worker(sock, pool).serve()
    sock.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m referee.play.worker", description=__doc__)
    parser.add_argument("--fd", type=int, required=True, help="the socket to the coordinator")
    parser.add_argument("--log-dir", required=True)
    parser.add_argument("--cores", default="", help="the slot's cores, e.g. 0,1 (none: not pinned)")
    parser.add_argument("--hidden", default="[]", help="the run's bot folders, as a JSON list")
    parser.add_argument("--parent", type=int, required=True, help="the referee's pid: the worker dies with it")
    args = parser.parse_args(argv)
    # Dies with the referee (its bots die with it by their own death signal), even if the referee is killed.
    if host_support().pdeathsig:
        die_with_parent()
    if os.getppid() != args.parent:
        sys.exit(1)  # the referee died as this started
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator stops it (`close`), not the terminal
    cores = [int(core) for core in args.cores.split(",")] if args.cores else None
    pin(cores)  # the loop beside its bots: their turns are written from their own core
    process_wide.settle_startup_heap()
    trio.run(_main, args, cores)


if __name__ == "__main__":
    main()
