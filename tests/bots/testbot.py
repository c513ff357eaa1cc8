"""A protocol v1 bot for the referee's tests: well-behaved, or misbehaving in one chosen way. Stdlib only.

    testbot.py [MODE [ARG]] [--on N] [--infos K] [--name NAME] [--hang]

It plays the first legal move instantly and answers pings from a reader thread (so it answers them even while
"thinking"). MODE picks one misbehaviour, done on its N-th turn (--on, default 1) unless said otherwise; with
--hang it also hangs on turn N, whatever its mode:

    good                  never misbehaves (the default)
    crash CODE            prints "about to crash" to stderr and exits with CODE
    signal NAME           prints "about to die" to stderr and kills itself with signal NAME (e.g. SEGV)
    hang                  stops reading and writing (no move, no pong) and sleeps
    slow MS               takes MS milliseconds before each move from turn N on (still answers pings)
    think MS              burns MS milliseconds of CPU time (not wall time) before each move from turn N on
    garbage               sends a line that is not JSON
    unknown               sends a message of an unknown type
    outofturn             sends `ready` instead of a move
    twice                 sends its move twice in one write (the second one out of turn)
    twowrites             sends its move, then the same move again in a write of its own (out of turn, read
                          only once its next turn is written: its write's time tells it came before)
    strangepong           sends its move and a pong to a ping never sent, in one write
    move TEXT             sends TEXT as its move (an illegal or malformed move)
    badmove               sends {"type": "move", "move": 5} (not a string)
    longline BYTES        sends a line of BYTES bytes; BYTES=0: an endless line with no newline
    slowhello MS          waits MS milliseconds before answering hello (at start-up, not on a turn)
    version V             says it speaks protocol V in its hello
    stderrflood MB        writes MB megabytes to stderr at start-up, then plays normally
    ignorequit            on quit (and at the end of its input) keeps sleeping: must be killed
    grandchild            at start-up spawns a child that sleeps, prints "grandchild pid P" to stderr
    closeout              closes its stdout on turn N but keeps running
    noready               never answers new_game
    info                  plays normally, sending K info messages (--infos) before each move
    infoflood N           sends N info messages before its move on every turn from turn N on (--on)
    readyflood            answers new_game with an endless stream of info and pong messages, never ready
    setsid                at start-up spawns a sleeping child in a session of its own ("escaped pid P")
    setpgid               at start-up spawns a sleeping child in a process group of its own ("escaped pid P")
    daemon CODE           at start-up double-forks a daemon (new session) that sleeps holding stdout ("escaped
                          pid P"); on turn N exits with CODE
    crashchild CODE       on turn N spawns a sleeping child holding stdout ("escaped pid P") and exits with CODE
    burn [N]              at start-up spawns N CPU burners (default 1), each in a session of its own ("escaped pid
                          P"), then plays
    forkbomb COUNT        at start-up forks up to COUNT sleeping children, prints "forked N of COUNT", kills them,
                          then plays
    read [PATH]           at start-up tries to list or read PATH (default: $READ_PATH, so that the path is not in
                          its command line, which a sandbox would mount), prints "read PATH: ok" or "... denied"
    jvm MIB               as a JVM, Go or Node runtime: at start-up reserves 8 GiB of address space it never
                          touches (PROT_NONE), then on turn N touches MIB MiB of memory (keeps it) and plays on
    ansi                  sends terminal escape sequences in an info before every move; on turn N writes them
                          to stderr too, then exits with code 1
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import queue
import signal
import subprocess
import sys
import threading
import time

FILES = "abcdefghijklmnopqrstuvwxyz"
RESERVE_BYTES = 8 << 30
"""What the `jvm` mode reserves (address space, never touched)."""


def first_legal_move(width: int, height: int, moves: list[str]) -> str:
    """The first legal placement (by pit, then root, in index order), else pass. A tiny rules engine."""

    def index(cell: str) -> int:
        return (int(cell[1:]) - 1) * width + FILES.index(cell[0])

    def split(move: str) -> tuple[str, str]:
        for cut in range(2, len(move) - 1):
            if move[cut].isalpha():
                return move[:cut], move[cut:]
        raise ValueError(move)

    n = width * height
    parent = [-1] * n
    size = [1] * n
    for move in moves:
        if move == "pass":
            continue
        p_cell, q_cell = split(move)
        p, q = index(p_cell), index(q_cell)
        parent[p] = q
        size[q] += size[p]
    for p in range(n):
        if parent[p] >= 0:
            continue
        f, r = p % width, p // width
        for df, dr in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            ff, rr = f + df, r + dr
            if 0 <= ff < width and 0 <= rr < height:
                q = rr * width + ff
                if parent[q] < 0 and size[p] >= size[q]:
                    return f"{FILES[f]}{r + 1}{FILES[ff]}{rr + 1}"
    return "pass"


class Bot:
    def __init__(self, argv: list[str]) -> None:
        args = list(argv)
        self.on = int(self._option(args, "--on", "1"))
        self.infos = int(self._option(args, "--infos", "2"))
        self.name = self._option(args, "--name", "testbot")
        self.hang = "--hang" in args
        if self.hang:
            args.remove("--hang")
        self.mode = args[0] if args else "good"
        self.arg = args[1] if len(args) > 1 else ""
        self.turns = 0
        self.lock = threading.Lock()
        self.inbox: queue.Queue[dict[str, object] | None] = queue.Queue()
        self.answer_pings = True
        self.size = (8, 8)
        self.moves: list[object] = []
        self.reserved: list[mmap.mmap] = []

    @staticmethod
    def _option(args: list[str], flag: str, default: str) -> str:
        if flag in args:
            at = args.index(flag)
            value = args[at + 1]
            del args[at : at + 2]
            return value
        return default

    def write(self, message: dict[str, object] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        with self.lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def reader(self) -> None:
        for line in sys.stdin:
            message = json.loads(line)
            if message.get("type") == "ping":
                if self.answer_pings:
                    self.write({"type": "pong", "id": message["id"]})
                continue
            self.inbox.put(message)
        self.inbox.put(None)

    def start(self) -> None:
        if self.mode == "stderrflood":
            chunk = ("x" * 1023 + "\n") * 1024
            for _ in range(int(self.arg)):
                sys.stderr.write(chunk)
            sys.stderr.write("flood done\n")
            sys.stderr.flush()
        elif self.mode in ("setsid", "setpgid", "burn"):
            code = "while True: pass" if self.mode == "burn" else "import time; time.sleep(120)"
            for _ in range(int(self.arg or "1") if self.mode == "burn" else 1):
                escaped = subprocess.Popen(
                    [sys.executable, "-c", code],
                    start_new_session=self.mode != "setpgid",
                    process_group=0 if self.mode == "setpgid" else None,
                )
                print(f"escaped pid {escaped.pid}", file=sys.stderr, flush=True)
        elif self.mode == "daemon":
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    print(f"escaped pid {os.getpid()}", file=sys.stderr, flush=True)
                    time.sleep(120)
                os._exit(0)
            os.wait()
        elif self.mode == "forkbomb":
            wanted, children = int(self.arg), []
            for _ in range(wanted):
                try:
                    pid = os.fork()
                except OSError:
                    break
                if pid == 0:
                    time.sleep(120)
                    os._exit(0)
                children.append(pid)
            print(f"forked {len(children)} of {wanted}", file=sys.stderr, flush=True)
            for pid in children:  # room again for its own threads
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        elif self.mode == "read":
            path = self.arg or os.environ["READ_PATH"]
            try:
                if os.path.isdir(path):
                    os.listdir(path)
                else:
                    with open(path, "rb") as file:
                        file.read(1)
                print(f"read {path}: ok", file=sys.stderr, flush=True)
            except OSError as error:
                print(f"read {path}: denied ({error.strerror})", file=sys.stderr, flush=True)
        elif self.mode == "jvm":
            # Address space only, as a JVM reserves its heap: no memory is used until it is touched.
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0)
            self.reserved.append(mmap.mmap(-1, RESERVE_BYTES, flags=flags, prot=0))
            print(f"reserved {RESERVE_BYTES >> 20} MiB of address space", file=sys.stderr, flush=True)
        elif self.mode == "grandchild":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            print(f"grandchild pid {child.pid}", file=sys.stderr, flush=True)

    def run(self) -> None:
        self.start()
        threading.Thread(target=self.reader, daemon=True).start()
        while True:
            message = self.inbox.get()
            if message is None or message.get("type") == "quit":
                if self.mode == "ignorequit":
                    while True:
                        time.sleep(60)
                return
            self.handle(message)

    def handle(self, message: dict[str, object]) -> None:
        kind = message["type"]
        if kind == "hello":
            if self.mode == "slowhello":
                time.sleep(int(self.arg) / 1000)
            protocol = int(self.arg) if self.mode == "version" else 1
            self.write({"type": "hello", "protocol": protocol, "name": self.name, "author": "tests", "version": "1"})
        elif kind == "new_game":
            self.size = (int(str(message["width"])), int(str(message["height"])))
            if self.mode == "readyflood":
                with self.lock:
                    while True:
                        sys.stdout.write('{"type":"info","depth":1}\n{"type":"pong","id":0}\n' * 1000)
                        sys.stdout.flush()
            if self.mode != "noready":
                self.write({"type": "ready", "game_id": message["game_id"]})
        elif kind == "turn":
            self.turns += 1
            moves = message["moves"]
            assert isinstance(moves, list)
            self.moves = moves
            if self.turns >= self.on and self.misbehave():
                return
            if self.turns >= self.on and self.hang:
                while True:
                    time.sleep(60)
            if self.mode == "ansi":
                self.write({"type": "info", "depth": 1, "text": "\x1b[2J\x1b]0;owned\x07\x1b[31mred\x1b[0m"})
            if self.mode == "info":
                for depth in range(1, self.infos + 1):
                    self.write({"type": "info", "depth": depth, "nodes": depth * 10, "text": f"depth {depth}"})
            self.write({"type": "move", "move": first_legal_move(*self.size, [str(m) for m in moves])})

    def misbehave(self) -> bool:
        """Do this mode's misbehaviour; True when no normal move should follow."""
        mode, arg = self.mode, self.arg
        if mode == "daemon":
            os._exit(int(arg or "1"))
        elif mode == "crashchild":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            print(f"escaped pid {child.pid}", file=sys.stderr, flush=True)
            os._exit(int(arg or "1"))
        elif mode == "ansi":
            print("\x1b[2J\x1b]0;owned\x07\x1b[31mred alert\x1b[0m", file=sys.stderr, flush=True)
            os._exit(1)
        elif mode == "jvm" and self.turns == self.on:
            touched = mmap.mmap(-1, int(arg) << 20)
            for offset in range(0, len(touched), mmap.PAGESIZE):
                touched[offset] = 1
            self.reserved.append(touched)
            print(f"touched {arg} MiB", file=sys.stderr, flush=True)
        elif mode == "crash":
            print("about to crash", file=sys.stderr, flush=True)
            os._exit(int(arg))
        elif mode == "signal":
            print("about to die", file=sys.stderr, flush=True)
            os.kill(os.getpid(), getattr(signal, f"SIG{arg.upper().removeprefix('SIG')}"))
            time.sleep(10)
        elif mode == "hang":
            self.answer_pings = False
            while True:
                time.sleep(60)
        elif mode == "slow":
            time.sleep(int(arg) / 1000)
        elif mode == "think":
            until = time.process_time() + int(arg) / 1000
            while time.process_time() < until:
                pass
        elif mode == "infoflood":
            lines = "".join(f'{{"type":"info","depth":{depth},"text":"flood"}}\n' for depth in range(int(arg)))
            with self.lock:
                sys.stdout.write(lines)
                sys.stdout.flush()
        elif mode == "garbage":
            self.write("this is not json")
            return True
        elif mode == "unknown":
            self.write({"type": "resign"})
            return True
        elif mode == "outofturn":
            self.write({"type": "ready", "game_id": "g"})
            return True
        elif mode == "twice":
            move: dict[str, object] = {
                "type": "move",
                "move": first_legal_move(*self.size, [str(m) for m in self.moves]),
            }
            # One write: were the second line late, the referee would take it for the next turn's answer.
            self.write(json.dumps(move) + "\n" + json.dumps(move))
            return True
        elif mode == "twowrites":
            move = {"type": "move", "move": first_legal_move(*self.size, [str(m) for m in self.moves])}
            self.write(move)
            self.write(move)
            return True
        elif mode == "strangepong":
            move = {"type": "move", "move": first_legal_move(*self.size, [str(m) for m in self.moves])}
            self.write(json.dumps(move) + "\n" + json.dumps({"type": "pong", "id": 999}))
            return True
        elif mode == "move":
            self.write({"type": "move", "move": arg})
            return True
        elif mode == "badmove":
            self.write({"type": "move", "move": 5})
            return True
        elif mode == "longline":
            length = int(arg)
            with self.lock:
                if length:
                    sys.stdout.write("x" * length + "\n")
                    sys.stdout.flush()
                else:
                    while True:
                        sys.stdout.write("x" * 65536)
                        sys.stdout.flush()
            return True
        elif mode == "closeout":
            with self.lock:
                sys.stdout.close()
                os.close(1)
            while True:
                time.sleep(60)
        return False


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):  # the referee stopped reading: nothing left to do
        Bot(sys.argv[1:]).run()
