"""Run a module as `python -m MODULE` would, under cProfile; for `bench_vs_fastchess.py --profile`.

    python benchmarks/profile_child.py STATS_DIR MODULE [ARGS...]

Run it with the working directory at the checkout to profile: that checkout comes first on the path, as it
does for `python -m`. Every thread of the process is profiled (threads started later through
`threading.setprofile`), each on its own CPU clock (`time.thread_time`: a profile counts its thread's CPU, not
the other threads' that ran meanwhile). At exit the merged profile is written to
STATS_DIR/MODULE-PID.prof and the process's CPU time (`time.process_time`, every thread) to
STATS_DIR/MODULE-PID.json. When MODULE is `referee` (the coordinator), `referee.play.loop._spawn_worker` (where
the checkout has one) is wrapped so that every play worker it starts runs under this file too.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import runpy
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any


class _Profile(cProfile.Profile):
    """A profile whose stats are its finished calls, taken without stopping it: stopping another thread's profile
    from this one would close that thread's pending calls (a thread blocked in a queue's `get` all along) on this
    thread's clock."""

    def create_stats(self) -> None:
        self.snapshot_stats()


def _wrap_workers(stats_dir: str) -> None:
    try:
        import referee.play.loop as play
    except ImportError:
        return
    original = getattr(play, "_spawn_worker", None)
    if original is None:
        return

    def spawn(command: list[str], fd: int) -> Any:
        # [python, -m, referee.play.worker, args...] -> [python, this file, STATS_DIR, referee.play.worker, args...]
        module = command.index("-m") + 1
        return original([command[0], __file__, stats_dir, *command[module:]], fd)

    play._spawn_worker = spawn


def main() -> None:
    stats_dir, module, *args = sys.argv[1:]
    sys.path.insert(0, os.getcwd())  # the checkout in the working directory first, as `python -m` has it
    profilers: list[_Profile] = []

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        profiler = _Profile(time.thread_time)
        profilers.append(profiler)
        profiler.enable()  # replaces this hook for the thread that called it

    threading.setprofile(hook)
    if module == "referee":
        _wrap_workers(stats_dir)
    sys.argv = [module, *args]
    main_profiler = _Profile(time.thread_time)
    profilers.append(main_profiler)
    main_profiler.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        main_profiler.disable()
        cpu = time.process_time()
        merged: pstats.Stats | None = None
        for profiler in list(profilers):
            try:
                stats = pstats.Stats(profiler)
            except TypeError:  # a thread that ran no Python function
                continue
            merged = stats if merged is None else merged.add(stats)
        name = f"{module}-{os.getpid()}"
        if merged is not None:
            merged.dump_stats(str(Path(stats_dir) / f"{name}.prof"))
        (Path(stats_dir) / f"{name}.json").write_text(json.dumps({"module": module, "cpu_s": cpu}))


if __name__ == "__main__":
    main()
