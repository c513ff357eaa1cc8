"""The strongest sample bot: the search of `alphabeta`, with the solver sooner and a table kept all game.

    python -m sample_bots.strong [--seed N] [--depth N] [--max-time SECONDS] [--name NAME]

Same clock management, `info` lines and exact endgame solver as `alphabeta` (sample_bots/alphabeta.py);
what differs is how it spends its time (see SETTINGS). Its strength against `alphabeta` and against
the alphabeta of commit 0aff18e at equal time is measured by benchmarks/bench_ladder.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from sample_bots.alphabeta import run_search_bot
from sample_bots.search import Settings

NAME = "strong"
VERSION = "1.0"

# Measured in quick in-process matches at 0.1-0.2 s a move (10-20 games each, so only large effects
# show): searching only the best 24 root moves was worse (2 of 10 against the old alphabeta); narrower
# or wider interior nodes, an earlier and longer solver (share 0.7: 7 of 16 against alphabeta) and
# the kept table (7 of 15) made no clear difference. On a busy machine a solve that does not finish
# is time lost, so the solver here gets no more of the turn than in alphabeta, only a longer reach:
# 8x8 endgames with 13-14 roots in play solve in 10,000 to 300,000 nodes.
SETTINGS = Settings(solve_live_roots=16, solve_reach=16.0, keep_table=True)


def main(argv: Sequence[str] | None = None) -> None:
    run_search_bot(argv, NAME, VERSION, SETTINGS, __doc__ or "")


if __name__ == "__main__":
    main()
