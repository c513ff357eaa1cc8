"""The alpha-beta sample bot: a search (sample_bots/search.py) that manages its clock.

    python -m sample_bots.alphabeta [--seed N] [--depth N] [--max-time SECONDS] [--name NAME]

Each turn it works out how long it may think from the clock fields (a share of a Fischer clock, of
the period until the clock is filled up again, or of the fixed time per move, always keeping a
safety margin back), searches that long with iterative deepening, sends an `info` after each
finished iteration (depth, score as the expected final margin, nodes, principal variation) and
replies with the best move. Once few roots are in play the exact solver plays instead, perfectly.
`run_search_bot` is shared with the other search bot, `strong`, which differs only in its settings.

It declares its tunables as options (`OPTIONS`: `depth`, the widths and `contested`), set per run with
`--bot "alphabeta option.depth=5"`, and honours the referee's node and depth limits: under a limit it
searches to the limit rather than by the clock (which stays a hard stop), so runs repeat move for move.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence

from protocol.kit import Clock, Game, Option, run_bot, send_info
from protocol.rules import Move, Position
from sample_bots.search import (
    DEFAULT,
    KeptSolver,
    SearchInfo,
    Settings,
    Table,
    budget,
    choose_move,
    position_neighbors,
)

__all__ = ["main", "make_chooser", "moves_left_estimate", "options_for", "run_search_bot", "seconds_for"]

NAME = "alphabeta"
# 2.2: the faster exact solver, kept from move to move, most of the turn on a board of 16 cells or fewer;
# 2.1: move generation from bitboards, the same search 2-3x faster;
# 2.0: margins on one scale, proofs only from full-width search, the exact solver.
VERSION = "2.2"


def moves_left_estimate(position: Position) -> int:
    """How many more moves this side will likely make: a third of the roots that can still take part.

    Every placement turns a root into a pit and a root with no neighbouring root is out of play;
    games measured against greedy end with about a third of the live roots placed by each side.
    """
    width, height = position.width, position.height
    parent = position.parent
    live = sum(
        1
        for i in range(width * height)
        if parent[i] < 0 and any(parent[j] < 0 for j in position_neighbors(i, width, height))
    )
    return max(2, live // 3 + 1)


def seconds_for(
    position: Position, clock: Clock, max_time: float | None = None, reserve: tuple[float, float] = DEFAULT.reserve
) -> float:
    """The search time for this turn, counted from now (what the kit has spent already is taken off)."""
    seconds = budget(
        clock.my_ms,
        clock.increment_ms,
        clock.move_limit_ms,
        clock.moves_to_go,
        moves_left_estimate(position),
        reserve,
    )
    seconds -= time.monotonic() - clock.received_at
    if max_time is not None:
        seconds = min(seconds, max_time)
    return max(0.0, seconds)


def options_for(settings: Settings, max_depth: int = 64) -> list[Option]:
    """The options a search bot declares, with its own settings as the defaults."""
    return [
        Option("depth", "int", max_depth, min=1, max=64, description="the deepest iteration to search"),
        Option("cap_width", "int", settings.cap_width, min=1, max=32, description="captures tried at each node"),
        Option("quiet_width", "int", settings.quiet_width, min=0, max=32, description="other moves tried at each node"),
        Option(
            "contested",
            "float",
            settings.contested,
            min=0.0,
            max=1.0,
            description="the share of a contested tree counted at the horizon (without fitted weights)",
        ),
    ]


def _report(info: SearchInfo) -> None:
    # A proven score is the exact final margin with best play: say so, a viewer can trust it.
    text = "proven: every line searched to the end of the game" if info.proven else None
    send_info(depth=info.depth, score=info.score, nodes=info.nodes, pv=info.pv, text=text)


def make_chooser(
    seed: int | None = None, max_depth: int = 64, max_time: float | None = None, settings: Settings = DEFAULT
) -> _Chooser:
    """The `choose(position, clock)` function for the kit."""
    return _Chooser(seed, max_depth, max_time, settings)


class _Chooser:
    def __init__(self, seed: int | None, max_depth: int, max_time: float | None, settings: Settings) -> None:
        self.seed = seed
        self.max_depth = max_depth
        self.max_time = max_time
        self.settings = settings
        self.turns = 0
        self.table: Table = {}
        self.kept = KeptSolver()  # follows the game itself, and starts afresh when a new one begins
        self.game: tuple[int, int, float, int] = (0, 0, 0.0, 0)

    def new_game(self, game: Game) -> None:
        """Take this game's option values (the kit fills in the defaults)."""
        options = game.options
        self.max_depth = int(options.get("depth", self.max_depth))
        changes = {key: options[key] for key in ("cap_width", "quiet_width", "contested") if key in options}
        self.settings = dataclasses.replace(self.settings, **changes)  # type: ignore[arg-type]

    def __call__(self, position: Position, clock: Clock) -> Move:
        self.turns += 1
        seed = None if self.seed is None else self.seed * 1_000_003 + self.turns
        seconds = seconds_for(position, clock, self.max_time, self.settings.reserve)
        # With only a per-move limit, time not used now is lost: search until the budget is spent.
        use_all = clock.my_ms is None and clock.move_limit_ms is not None
        max_depth = self.max_depth
        if clock.nodes is not None or clock.depth is not None:
            # Limit-bound: search to the limit, not by the clock, so that the move does not depend on the
            # machine's speed; the clock (half of what is usable) stays a hard stop against a loss on time.
            max_depth = min(max_depth, clock.depth or max_depth)
            use_all = True
            hard = budget(clock.my_ms, clock.increment_ms, clock.move_limit_ms, clock.moves_to_go, 1)
            seconds = max(seconds, hard - (time.monotonic() - clock.received_at))
        settings = self.settings
        if clock.depth is not None and clock.nodes is None:
            # Whether the solver would finish depends on the time: under a depth limit alone it stays out.
            settings = dataclasses.replace(settings, solve_live_roots=0)
        table = self._table(position) if settings.keep_table else None
        return choose_move(
            position,
            seconds,
            max_depth,
            seed,
            _report,
            use_all,
            settings,
            solver_nodes=clock.nodes,
            table=table,
            max_nodes=clock.nodes,
            kept=self.kept,
        ).move

    def _table(self, position: Position) -> Table:
        """This game's table: a new one when the board, the komi or a shorter history says a new game began."""
        width, height, komi, moves = self.game
        if (position.width, position.height, position.komi) != (width, height, komi) or len(position.history) < moves:
            self.table = {}
        self.game = (position.width, position.height, position.komi, len(position.history))
        return self.table


def main(argv: Sequence[str] | None = None) -> None:
    run_search_bot(argv, NAME, VERSION, DEFAULT, __doc__ or "")


def run_search_bot(argv: Sequence[str] | None, name: str, version: str, settings: Settings, doc: str) -> None:
    """The command line and protocol loop of a search bot with the given settings."""
    parser = argparse.ArgumentParser(prog=f"python -m sample_bots.{name}", description=doc.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="vary play among equally ordered moves")
    parser.add_argument("--depth", type=int, default=64, help="the deepest iteration to search")
    parser.add_argument("--max-time", type=float, default=None, help="never think longer than this (seconds)")
    parser.add_argument("--name", default=name, help="the name to give the referee")
    args = parser.parse_args(argv)
    if args.depth < 1:
        parser.error(f"--depth must be at least 1, not {args.depth}")
    if args.max_time is not None and args.max_time < 0:
        parser.error(f"--max-time must not be negative, not {args.max_time}")
    chooser = make_chooser(args.seed, args.depth, args.max_time, settings)
    run_bot(
        chooser,
        name=args.name,
        author="alternator arena",
        version=version,
        on_new_game=chooser.new_game,
        options=options_for(settings, args.depth),
    )


if __name__ == "__main__":
    main()
