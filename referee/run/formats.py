"""The scheduler of a run's format, built from its plan: the one place that maps a `Format` to its module.

Round robin, gauntlet and explicit pairings are `referee.run.schedule.FixedPairings`; Swiss, knockout and
adaptive runs have modules of their own. Swiss and knockout play over a fixed field (the bots when the run
started, in seed order); the others take latecomers and let bots retire (see `referee.run.runner`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from referee.run.config import RunPlan
from referee.run.schedule import FixedPairings, Format, Scheduler


def fixed_field(plan: RunPlan) -> bool:
    """Whether the format plays over the field it started with (no latecomers; a removed bot forfeits)."""
    return plan.format in (Format.SWISS, Format.KNOCKOUT)


def knockout_seeds(field: Sequence[str], seeding: str, ratings: dict[str, float], seed: int | str) -> list[str]:
    """The field in seed order (seed 1 first): by rating (bots without one after, in order), by order, or shuffled
    by `seed`."""
    names = list(field)
    if seeding == "rating":
        place = {name: index for index, name in enumerate(names)}
        return sorted(names, key=lambda name: (name not in ratings, -ratings.get(name, 0.0), place[name]))
    if seeding == "random":
        random.Random(f"alternator-seeding:{seed}").shuffle(names)
    return names


def make_scheduler(plan: RunPlan, field: Sequence[str], ratings: dict[str, float] | None = None) -> Scheduler:
    """The scheduler of `plan`'s format over `field` (the bots in their order, retired ones included for a fixed
    field); `ratings`: the bots' configured ratings, as the run first stored them (a knockout's seeding). A format's
    module is imported when a run has that format (a run's start need not wait for the others)."""
    if plan.format is Format.SWISS:
        from referee.run.swiss import Swiss

        assert plan.rounds is not None
        return Swiss(field, plan.rounds, plan.openings)
    if plan.format is Format.KNOCKOUT:
        from referee.run.knockout import Knockout

        seeds = knockout_seeds(field, plan.seeding, ratings or {}, plan.format_seed)
        return Knockout(seeds, plan.games_per_pairing, plan.openings, tiebreak_pairs=plan.tiebreak_pairs)
    if plan.format is Format.ADAPTIVE:
        from referee.run.adaptive import Adaptive

        assert plan.max_games is not None
        return Adaptive(plan.max_games, plan.openings, parallel=(plan.concurrency + 1) // 2, confidence=plan.confidence)
    return FixedPairings(plan.format, plan.games_per_pairing, plan.openings, seeds=plan.seeds, pairs=plan.pairs)
