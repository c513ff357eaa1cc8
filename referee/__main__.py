"""`python -m referee` and the `alternator` command: SIGINT and SIGTERM are taken over before anything else is
imported, so a signal in the first tenth of a second of start-up ends the command with one line and the status
the README promises (130 for a match or tournament), not a traceback or the default kill.

(Before this module's first line runs, the interpreter itself is starting — 50 ms on an idle host — and the
default actions apply: no Python code can run earlier.)"""

from __future__ import annotations

import signal
import sys
import threading


class _EarlyStop(KeyboardInterrupt):
    """A signal before referee.cli took over (it maps it as it maps its own)."""


def _early(signum: int, frame: object) -> None:
    raise _EarlyStop(signum)


def entry() -> int:
    previous = None
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        previous = signal.signal(signal.SIGTERM, _early)
    try:
        # A signal that came while the interpreter started, held by a blocked mask, is taken now, by _early.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        from referee.cli import main

        if previous is not None:  # referee.cli installs its own, and puts back what it found
            signal.signal(signal.SIGTERM, previous)
        return main()
    except KeyboardInterrupt as interrupt:  # before main() was running: while the command line was imported
        terminated = isinstance(interrupt, _EarlyStop) and interrupt.args[0] == signal.SIGTERM
        print(f"alternator: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
        # As referee.cli.status_for_signal: 130 for a run (and for Ctrl-C), the shell's status for SIGTERM else.
        return 130 if command in ("match", "tournament") or not terminated else 143


if __name__ == "__main__":
    raise SystemExit(entry())
