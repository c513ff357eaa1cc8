"""What exists once per referee process, and why each must: every module-level piece of mutable state is here.

Run state (a run's cores, the bot folders its sandboxes hide, its store) is passed down from the runner, so two
runs in one process share none of it. What is left is what the operating system itself ties to a process:

- `SPAWNER`: the thread that starts every bot and play worker (`referee.host.containment.run_in_spawner`). A child's
  death signal (`PR_SET_PDEATHSIG`) fires when the *thread* that forked it ends, not the process: bots must be
  forked by a thread that lives as long as the referee, and one such thread is enough.
- `SPAWNER_CORES`: the cores that thread had when it started. It pins itself to a bot's cores for each spawn (a
  vfork child takes its parent thread's affinity) and goes back to these.
- `CGROUP_POOL`: the empty cgroups this process made for bots, kept for the next bots
  (`referee.host.containment._CgroupPool`): cgroups are the process's (in a folder named by its pid), and
  removed when it exits.
- `RUNNING_NOTES`: the output directories where this process noted that it runs bots held by cgroups, and how many
  run there now (`referee.host.containment._RunningNotes`): the note names the process.
- `LAG_MONITOR`: the thread that measures how late this process runs (`referee.timing.latency.HostLagMonitor`). It
  measures the host and the process's interpreter lock, which every game in the process shares: one per
  process, started while some bot needs it.
- `PLAY_WORKERS`: the play worker processes this process started (`referee.play.loop.ProcessPlayLoop`). Children are
  a process's own (only it can wait for them); a lost worker's orphaned bots are reaped, these never are.
- `LEFTOVERS_ENDED`: the output directories whose leftover bots (from a referee killed with `kill -9`) this
  process has ended already: once per directory and process is enough, and a second run in the same
  directory must not end the first run's live bots.
- `STDERR_HUB`: the thread that copies every bot's stderr to its log (`referee.play.reader.StderrCopier`): a thread
  per bot cost its start and join at every bot's start and stop, and a wake-up per bot while it thought.
- `DASK_WORKER_GAMES`: in a Dask worker, the loop that plays its games and keeps its bots between tasks (Dask
  runs each task as a function call in the worker process; the bots outlive the call).

The command line's signal handlers (`referee.commands.common.stop_on_signals`) keep one flag beside them: a
process has one handler per signal, and the flag says what it interrupts.

A play worker's heap once it has imported what it runs with (modules, classes, pydantic's schemas: tens of
thousands of objects that live as long as it does) is set aside from the cyclic garbage collector
(`settle_startup_heap`): every full collection walked all of it again, a millisecond or more in the middle of
games. Not a run's coordinator: its heap grows with the run (results, tallies), and with the start-up heap set
aside the collector's rule against frequent full collections (not before a quarter more long-lived objects) had
almost nothing to weigh them against: measured, 58 -> 71 us of coordinator CPU a move.

Host detection (`referee.host.containment.host_support`) is cached per process too (`functools.cache`): the
process's own cgroup, and whether it could become a child subreaper, are facts of the process.

`Lazy` creates a singleton on first use, under a lock (the first users may be threads of their own).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from referee.cluster.dask import _WorkerGames
    from referee.host.containment import _CgroupPool, _RunningNotes, _Spawner
    from referee.play.reader import _StderrHub
    from referee.timing.latency import HostLagMonitor

__all__ = [
    "CGROUP_POOL",
    "DASK_WORKER_GAMES",
    "LAG_MONITOR",
    "LEFTOVERS_ENDED",
    "PLAY_WORKERS",
    "RUNNING_NOTES",
    "SPAWNER",
    "SPAWNER_CORES",
    "STDERR_HUB",
    "Lazy",
    "settle_startup_heap",
]

T = TypeVar("T")


class Lazy(Generic[T]):
    """One instance per process, made by `get(factory)` the first time it is asked for."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self, factory: Callable[[], T]) -> T:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = factory()
                value = self._value
        return value

    def peek(self) -> T | None:
        """The instance if it was made, else None."""
        return self._value


SPAWNER: Lazy[_Spawner] = Lazy("spawner")
SPAWNER_CORES: Lazy[list[int]] = Lazy("spawner cores")
"""Made by the spawner thread itself, at its first spawn."""
LAG_MONITOR: Lazy[HostLagMonitor] = Lazy("lag monitor")
CGROUP_POOL: Lazy[_CgroupPool] = Lazy("cgroup pool")
RUNNING_NOTES: Lazy[_RunningNotes] = Lazy("running-bots notes")
PLAY_WORKERS: set[int] = set()
LEFTOVERS_ENDED: set[Path] = set()
STDERR_HUB: Lazy[_StderrHub] = Lazy("stderr hub")
DASK_WORKER_GAMES: Lazy[_WorkerGames] = Lazy("dask worker games")


def settle_startup_heap() -> None:
    """Keep every object alive now out of the cyclic garbage collector's sight (`gc.freeze`): called once a play worker
    has imported what it runs with, just before it starts playing (a process whose heap stays about that size).
    The objects are still freed when nothing refers to them; only the walk over them at every collection is
    saved."""
    gc.collect()  # what the imports left behind goes first, rather than being kept for good
    gc.freeze()
