"""The floor of a referee written in Python: a bare turn loop, with none of the arena around it.

    python benchmarks/bench_python_floor.py [--games 100] [--think-ms 0 10 100]

One process plays `instant_bot.c` (built here with cc) against itself, one game after another, and does for each
move only what any Python referee must: build the turn line, write it, poll for the reply, read it from a
socket that stamps it (`recvmsg`), parse it (`protocol.messages.parse_bot_line`) and play it
(`protocol.rules.Position.push`). No clock, no CPU reads, no lag monitor, no record, no coordinator, no trio.

It prints this process's CPU per move (user + system) for each `--think-ms` (the bot's sleep before each move):
with 0, what a move costs hot; with a sleep, what it costs when every move wakes a process whose caches went
cold while the bot thought. The arena's own figures (`bench_vs_fastchess.py`) can be read against these: what
is above the floor is the arena's, and no referee in Python gets below it.
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_vs_fastchess import compile_c  # noqa: E402
from protocol.messages import MoveReply, parse_bot_line  # noqa: E402
from protocol.rules import Move, Position  # noqa: E402

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
NEW_GAME = (
    b'{"type":"new_game","game_id":"g","color":"black","width":8,"height":8,"komi":0.5,"opponent":"o",'
    b'"time_control":{"base_ms":60000,"increment_ms":1000}}\n'
)
TURN = (
    b'{"type":"turn","game_id":"g","moves":[%s],"clock":{"black_ms":60000,"white_ms":60000,"increment_ms":1000,'
    b'"move_limit_ms":null,"moves_to_go":null}}\n'
)


def floor(program: Path, games: int, think_ms: int) -> tuple[float, int]:
    """(CPU seconds of this process, moves) over `games` games of the bare loop."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    read_end, write_end = os.pipe()
    argv = [str(program), *([str(think_ms)] if think_ms else [])]
    bot = subprocess.Popen(argv, stdin=read_end, stdout=theirs.fileno())
    os.close(read_end)
    theirs.close()
    buffer = memoryview(bytearray(1 << 16))

    def receive() -> bytes:
        size, _, _, _ = ours.recvmsg_into([buffer], 64)
        return bytes(buffer[:size])

    poller = select.poll()
    poller.register(ours.fileno(), select.POLLIN)
    try:
        os.write(write_end, b'{"type":"hello","protocol":1,"referee":"floor"}\n')
        receive()
        moves = 0
        started = time.process_time()
        for _ in range(games):
            os.write(write_end, NEW_GAME)
            receive()  # ready
            position, history = Position(8, 8, 0.5), list[bytes]()
            while not position.is_over():
                os.write(write_end, TURN % b",".join(history))
                poller.poll(60_000)
                reply = parse_bot_line(receive())
                assert isinstance(reply, MoveReply), reply
                move = Move.parse(reply.move)
                position.push(move)
                history.append(b'"%s"' % str(move).encode())
                moves += 1
        return time.process_time() - started, moves
    finally:
        bot.kill()
        bot.wait()
        os.close(write_end)
        ours.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=100, help="games with an instant bot (fewer with a sleep)")
    parser.add_argument("--think-ms", type=int, nargs="+", default=[0, 10, 100])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as folder:
        program = compile_c(ROOT / "benchmarks" / "instant_bot.c", Path(folder))
        print(f"cores: {os.cpu_count()}, load: {os.getloadavg()[0]:.1f}")
        for think_ms in args.think_ms:
            # About 6 s of play a sleep, whatever its length: a game is 62 moves.
            games = args.games if not think_ms else max(1, round(6000 / (62 * think_ms)))
            cpu, moves = floor(program, games, think_ms)
            print(f"bot sleeps {think_ms:3d} ms a move: {cpu / moves * 1e6:7.1f} us of CPU a move ({moves} moves)")


if __name__ == "__main__":
    main()
