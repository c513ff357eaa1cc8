"""A test bot that tries what a sandbox must stop, reports each attempt on stderr, then plays like testbot.

    sandboxprobe.py [connect HOST:PORT] [write PATH] [env NAME] [escape MARKER] [processes] [hog MIB] ...
                    [-- TESTBOT ARGUMENTS]

At start-up, in order, each action prints one line "probe ACTION: RESULT" to stderr:

    connect HOST:PORT   opens a TCP connection: "connected" or "failed: <error>"
    write PATH          creates PATH and writes to it: "ok" or "failed: <error>"
    env NAME            "absent" or "present" (is the referee's environment variable NAME visible?)
    escape MARKER       starts a daemon (double fork, own session) that sleeps 60 s with MARKER in its
                        command line, so a test can look for it after the bot is stopped: "started"
    processes           how many processes the bot can see in /proc
    hog MIB             on its first turn (not at start-up) allocates MIB MiB, then plays on

Then it plays as tests/bots/testbot.py does, with the arguments after `--` (default: mode good). Stdlib only.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from testbot import Bot  # type: ignore[import-not-found]  # a sibling script, not a package


def report(action: str, result: str) -> None:
    print(f"probe {action}: {result}", file=sys.stderr, flush=True)


def connect(target: str) -> None:
    host, port = target.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            report(f"connect {target}", "connected")
    except OSError as error:
        report(f"connect {target}", f"failed: {error}")


def write(path: str) -> None:
    try:
        Path(path).write_text("written by sandboxprobe\n")
        report(f"write {path}", "ok")
    except OSError as error:
        report(f"write {path}", f"failed: {error}")


def escape(marker: str) -> None:
    # start_new_session: out of the bot's process group; the middle process exits at once, so the
    # sleeper is orphaned (re-parented) as a real daemon would be.
    code = (
        "import subprocess, sys;"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}],"
        " start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    report(f"escape {marker}", "started")


def processes() -> None:
    count = sum(1 for entry in os.listdir("/proc") if entry.isdigit())
    report("processes", str(count))


class HogBot(Bot):  # type: ignore[misc]
    def __init__(self, argv: list[str], hog_mib: int) -> None:
        super().__init__(argv)
        self.hog_mib = hog_mib
        self.hoard: list[bytearray] = []

    def handle(self, message: dict[str, object]) -> None:
        if message["type"] == "turn" and self.hog_mib and not self.hoard:
            report(f"hog {self.hog_mib}", "allocating")
            self.hoard.append(bytearray(self.hog_mib * 1024 * 1024))
            report(f"hog {self.hog_mib}", "ok")
        super().handle(message)


def main(args: list[str]) -> None:
    hog = 0
    testbot_args = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    while args:
        action, arg = args[0], args[1] if len(args) > 1 else ""
        if action == "processes":
            processes()
            args = args[1:]
            continue
        args = args[2:]
        if action == "connect":
            connect(arg)
        elif action == "write":
            write(arg)
        elif action == "env":
            report(f"env {arg}", "present" if arg in os.environ else "absent")
        elif action == "escape":
            escape(arg)
        elif action == "hog":
            hog = int(arg)
        else:
            raise SystemExit(f"sandboxprobe: unknown action {action!r}")
    HogBot(testbot_args, hog).run()


if __name__ == "__main__":
    main(sys.argv[1:])
