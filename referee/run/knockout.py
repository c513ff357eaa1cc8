"""The knockout format: a seeded bracket, each encounter a few game pairs, the winner advances.

Pure: a `Knockout` scheduler (see `referee.run.schedule.Scheduler`) rebuilds the bracket from the progress.
The field is given in seed order (seed 1 first: by rating, config order or a seeded shuffle, decided by
the caller). The bracket has the next power of two places; the top seeds get the byes, and seeds meet
in the usual order (1 v 8, 4 v 5, 2 v 7, 3 v 6 for eight), so the top two seeds can meet only in the final.

An encounter is `games` games in pairs (one opening per pair, colours swapped; the higher seed has Black
first in even pairs). Tied after them, it plays a tie-break pair, up to `tiebreak_pairs`; tied after
those, the higher seed advances (the final rule, stated in the standings). An encounter is scheduled as
soon as both its entrants are known, so a later round may start before the round before it has ended
elsewhere in the bracket. A game is known by its encounter (`pairing`: the encounters numbered round by
round from the top of the bracket) and its index in it (`round`), so a resumed run rebuilds the same bracket.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from referee.run.schedule import Progress, ScheduledGame, opening_at
from referee.stats.standings import BracketEncounter, FormatSummary

DEFAULT_TIEBREAK_PAIRS = 2


def bracket_order(size: int) -> list[int]:
    """Seed numbers (from 1) in bracket order for a power-of-two `size`: [1, 4, 2, 3] for four."""
    if size < 1 or size & (size - 1):
        raise ValueError(f"a bracket has a power-of-two number of places, got {size}")
    order = [1]
    while len(order) < size:
        total = 2 * len(order) + 1
        order = [seed for top in order for seed in (top, total - top)]
    return order


@dataclass
class Encounter:
    """One encounter of the bracket, as the results so far leave it."""

    round: int
    match: int
    top: int | None = None  # seed numbers: the higher seed is `top`
    bottom: int | None = None
    top_points: float = 0.0
    bottom_points: float = 0.0
    scheduled: int = 0
    finished: int = 0
    winner: int | None = None
    note: str | None = None


class Knockout:
    """`--format knockout` over `seeds` (the field, seed 1 first)."""

    def __init__(
        self,
        seeds: Sequence[str],
        games: int,
        openings: Sequence[tuple[str, ...]],
        *,
        tiebreak_pairs: int = DEFAULT_TIEBREAK_PAIRS,
    ) -> None:
        if len(seeds) < 2:
            raise ValueError(f"a knockout needs at least two bots, got {len(seeds)}")
        if games < 2 or games % 2:
            raise ValueError(f"a knockout encounter is played in game pairs: give an even --games, got {games}")
        if tiebreak_pairs < 0:
            raise ValueError(f"tie-break pairs must be 0 or more, got {tiebreak_pairs}")
        self.seeds = list(seeds)
        self.games = games
        self.tiebreak_pairs = tiebreak_pairs
        self.openings = openings
        self.size = 1 << (len(seeds) - 1).bit_length()
        self.rounds = self.size.bit_length() - 1
        self._offsets = [sum(self.size >> (k + 1) for k in range(r)) for r in range(self.rounds)]

    def pairing(self, round_: int, match: int) -> int:
        return self._offsets[round_] + match

    def bracket(self, progress: Progress) -> list[list[Encounter]]:
        """Every encounter, round by round, with its entrants, score and winner as far as they are known."""
        by_pairing: dict[int, list[ScheduledGame]] = defaultdict(list)
        for game in progress.scheduled:
            by_pairing[game.pairing].append(game)
        seed_of = {name: index + 1 for index, name in enumerate(self.seeds)}
        order = bracket_order(self.size)
        rounds: list[list[Encounter]] = []
        for round_ in range(self.rounds):
            encounters: list[Encounter] = []
            for match in range(self.size >> (round_ + 1)):
                encounter = Encounter(round_ + 1, match + 1)
                if round_ == 0:
                    entrants = [seed if seed <= len(self.seeds) else None for seed in order[2 * match : 2 * match + 2]]
                else:
                    entrants = [e.winner for e in rounds[round_ - 1][2 * match : 2 * match + 2]]
                known = sorted(seed for seed in entrants if seed is not None)
                if round_ == 0 and len(known) == 1:
                    encounter.top, encounter.winner, encounter.note = known[0], known[0], "bye"
                elif len(known) == 2:
                    encounter.top, encounter.bottom = known
                    self._score(encounter, by_pairing.get(self.pairing(round_, match), []), seed_of, progress)
                elif len(known) == 1:
                    encounter.top = known[0]
                encounters.append(encounter)
            rounds.append(encounters)
        return rounds

    def _score(
        self, encounter: Encounter, games: list[ScheduledGame], seed_of: dict[str, int], progress: Progress
    ) -> None:
        encounter.scheduled = len(games)
        for game in games:
            points = progress.points.get(game.number)
            if points is None:
                continue
            encounter.finished += 1
            top_black = seed_of[game.black] == encounter.top
            top_points = points if top_black else 1.0 - points
            encounter.top_points += top_points
            encounter.bottom_points += 1.0 - top_points
        if encounter.scheduled < self.games or encounter.finished < encounter.scheduled:
            return
        tiebreaks = (encounter.scheduled - self.games) // 2
        if encounter.top_points != encounter.bottom_points:
            encounter.winner = encounter.top if encounter.top_points > encounter.bottom_points else encounter.bottom
            if tiebreaks:
                encounter.note = f"after {tiebreaks} tie-break pair(s)"
        elif tiebreaks >= self.tiebreak_pairs:
            encounter.winner = encounter.top
            encounter.note = (
                f"tied after {tiebreaks} tie-break pair(s): the higher seed advances"
                if tiebreaks
                else "tied: the higher seed advances"
            )

    def next_games(self, progress: Progress) -> list[ScheduledGame]:
        games: list[ScheduledGame] = []
        number = progress.next_number
        for round_ in self.bracket(progress):
            for encounter in round_:
                if encounter.winner is not None or encounter.bottom is None or encounter.top is None:
                    continue
                if encounter.finished < encounter.scheduled:
                    continue
                wanted = self.games if encounter.scheduled < self.games else encounter.scheduled + 2
                top, bottom = self.seeds[encounter.top - 1], self.seeds[encounter.bottom - 1]
                pairing = self.pairing(encounter.round - 1, encounter.match - 1)
                for index in range(encounter.scheduled, wanted):
                    pair = index // 2
                    first, second = (top, bottom) if pair % 2 == 0 else (bottom, top)
                    black, white = (first, second) if index % 2 == 0 else (second, first)
                    games.append(ScheduledGame(number, pairing, index, black, white, opening_at(self.openings, pair)))
                    number += 1
        return games

    def expected_total(self, progress: Progress) -> int:
        bracket = self.bracket(progress)
        extra = sum(max(0, e.scheduled - self.games) for round_ in bracket for e in round_)
        return (len(self.seeds) - 1) * self.games + extra

    def summary(self, progress: Progress) -> FormatSummary:
        bracket = self.bracket(progress)

        def name(seed: int | None) -> str | None:
            return None if seed is None else self.seeds[seed - 1]

        rows = [
            BracketEncounter(
                round=e.round,
                match=e.match,
                top=name(e.top),
                bottom=name(e.bottom),
                top_seed=e.top,
                bottom_seed=e.bottom,
                top_points=e.top_points,
                bottom_points=e.bottom_points,
                games=e.finished,
                winner=name(e.winner),
                note=e.note,
            )
            for round_ in bracket
            for e in round_
        ]
        return FormatSummary(
            format="knockout",
            rules=[
                f"Knockout: {self.games} game(s) an encounter in pairs; tied, up to {self.tiebreak_pairs} tie-break"
                " pair(s); still tied, the higher seed advances."
            ],
            bracket=rows,
            champion=name(bracket[-1][0].winner),
        )
