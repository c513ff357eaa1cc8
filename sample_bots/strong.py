"""The strongest sample bot: the alpha-beta search of `alphabeta` with settings chosen by measurement.

    python -m sample_bots.strong [--seed N] [--depth N] [--max-time SECONDS] [--name NAME]

Same clock management, `info` lines and exact endgame solver as `alphabeta` (sample_bots/alphabeta.py);
what differs is how the search spends its time (see SETTINGS), picked by matches against `alphabeta`
and against the alphabeta of commit 0aff18e at equal time (benchmarks/bench_ladder.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from sample_bots.alphabeta import run_search_bot
from sample_bots.search import Settings

NAME = "strong"
VERSION = "1.0"

SETTINGS = Settings(root_width=24, solve_live_roots=16, solve_share=0.6)


def main(argv: Sequence[str] | None = None) -> None:
    run_search_bot(argv, NAME, VERSION, SETTINGS, __doc__ or "")


if __name__ == "__main__":
    main()
