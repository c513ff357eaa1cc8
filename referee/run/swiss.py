"""The Swiss format: N rounds, each bot paired with one of similar score that it has not met, from results.

Pure: a `Swiss` scheduler (see `referee.run.schedule.Scheduler`) rebuilds everything from the progress: the
rounds so far, their results, the byes (a bot of the fixed field with no game in a round had its bye).
Round r is paired only when every game of round r-1 has finished, so a run killed mid-round resumes
with the same pairings an uninterrupted run would have made.

Every encounter is a game pair from one opening (round r plays opening r), colours swapped, so each
bot plays as many games with Black as with White; who plays Black first alternates by how often each
has had it. With an odd field one bot a round gets a bye, worth a won encounter (2 points): the
lowest-ranked bot that has not had one. Pairing is Dutch-style: bots are ranked by score, then seed
(their place in the config); within a score group the top half meets the bottom half, and a bot that
cannot be paired there without a rematch floats down to the next group; within a group, an opponent whose
colour history does not clash is preferred, so that Black first can alternate. The search backtracks over
the whole round, so it finds a pairing without rematches whenever one exists (within a search budget;
past it, the fewest rematches).

Ranking: score (game points and byes), then Buchholz (the sum of the opponents' scores), then
Sonneborn-Berger (the sum over opponents of the points scored against them times their score), then
head-to-head among the bots still tied, then seed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from referee.run.schedule import Progress, ScheduledGame, opening_at
from referee.stats.standings import FormatSummary, TiebreakRow

GAMES_PER_ENCOUNTER = 2
BYE_POINTS = 2.0
"""A bye is worth a won encounter: both games of the pair."""
_SEARCH_BUDGET = 200_000
"""Steps of the pairing search before it allows rematches (a field with no rematch-free pairing left)."""


@dataclass
class SwissState:
    """The field's history after the rounds so far, rebuilt from the progress."""

    rounds_paired: int = 0
    score: dict[str, float] = field(default_factory=dict)
    byes: dict[str, int] = field(default_factory=dict)
    first_black: dict[str, int] = field(default_factory=dict)
    last_first_black: dict[str, bool] = field(default_factory=dict)
    met: dict[str, list[str]] = field(default_factory=dict)
    """Opponents in round order (one entry per encounter)."""
    against: dict[tuple[str, str], float] = field(default_factory=dict)
    """Points of the first bot against the second, over every game they played."""
    round_complete: bool = True


class Swiss:
    """`--format swiss --rounds N` over a fixed field (the config's bots, in seed order)."""

    def __init__(self, field_: Sequence[str], rounds: int, openings: Sequence[tuple[str, ...]]) -> None:
        if len(field_) < 2:
            raise ValueError(f"a Swiss tournament needs at least two bots, got {len(field_)}")
        most = max_rounds(len(field_))
        if not 1 <= rounds <= most:
            raise ValueError(
                f"a Swiss tournament of {len(field_)} bots has 1 to {most} rounds (more would need rematches), got"
                f" {rounds}"
            )
        self.field = list(field_)
        self.rounds = rounds
        self.openings = openings
        self.boards = len(self.field) // 2

    def state(self, progress: Progress) -> SwissState:
        state = SwissState(
            score=dict.fromkeys(self.field, 0.0),
            byes=dict.fromkeys(self.field, 0),
            first_black=dict.fromkeys(self.field, 0),
            met={name: [] for name in self.field},
        )
        by_round: dict[int, list[ScheduledGame]] = defaultdict(list)
        for game in progress.scheduled:
            by_round[game.pairing // self.boards].append(game)
        state.rounds_paired = len(by_round)
        for games in by_round.values():
            present: set[str] = set()
            for game in games:
                present.update((game.black, game.white))
                if game.round == 0:
                    state.first_black[game.black] += 1
                    state.last_first_black[game.black] = True
                    state.last_first_black[game.white] = False
                    state.met[game.black].append(game.white)
                    state.met[game.white].append(game.black)
                points = progress.points.get(game.number)
                if points is None:
                    state.round_complete = False
                    continue
                state.score[game.black] += points
                state.score[game.white] += 1.0 - points
                for me, other, mine in ((game.black, game.white, points), (game.white, game.black, 1.0 - points)):
                    state.against[me, other] = state.against.get((me, other), 0.0) + mine
            for name in self.field:
                if name not in present:
                    state.byes[name] += 1
                    state.score[name] += BYE_POINTS
        return state

    def ranked(self, state: SwissState) -> list[str]:
        seed = {name: index for index, name in enumerate(self.field)}
        return sorted(self.field, key=lambda name: (-state.score[name], seed[name]))

    def pair_round(self, state: SwissState) -> tuple[list[tuple[str, str]], str | None]:
        """The next round's encounters as (Black first, White first), best boards first, and the bye (or None)."""
        ranked = self.ranked(state)
        bye: str | None = None
        if len(ranked) % 2:
            fewest = min(state.byes[name] for name in ranked)
            bye = next(name for name in reversed(ranked) if state.byes[name] == fewest)
            ranked.remove(bye)
        played = {frozenset((a, b)) for a, opponents in state.met.items() for b in opponents}
        due = {name: 2 * state.first_black[name] - len(state.met[name]) for name in ranked}
        pairs = (
            _pair(ranked, state.score, played, False, due, colours=True)
            or _pair(ranked, state.score, played, False, due)
            or _pair(ranked, state.score, played, True, due)
        )
        assert pairs is not None, "with rematches allowed every even field pairs"
        place = {name: index for index, name in enumerate(ranked)}
        encounters = [self._colours(a, b, state, place) for a, b in pairs]
        encounters.sort(key=lambda pair: min(place[pair[0]], place[pair[1]]))
        return encounters, bye

    def _colours(self, a: str, b: str, state: SwissState, place: dict[str, int]) -> tuple[str, str]:
        """(Black first, White first): the bot with the lower balance of Black-first over White-first encounters,
        then the one that had White first last time, then the higher ranked in even rounds and the lower in odd
        ones."""
        due_a = 2 * state.first_black[a] - len(state.met[a])
        due_b = 2 * state.first_black[b] - len(state.met[b])
        if due_a != due_b:
            return (a, b) if due_a < due_b else (b, a)
        last_a, last_b = state.last_first_black.get(a), state.last_first_black.get(b)
        if last_a is not None and last_b is not None and last_a != last_b:
            return (b, a) if last_a else (a, b)
        higher, lower = (a, b) if place[a] < place[b] else (b, a)
        return (higher, lower) if state.rounds_paired % 2 == 0 else (lower, higher)

    def next_games(self, progress: Progress) -> list[ScheduledGame]:
        state = self.state(progress)
        if state.rounds_paired >= self.rounds or not state.round_complete:
            return []
        encounters, _ = self.pair_round(state)
        number = progress.next_number
        opening = opening_at(self.openings, state.rounds_paired)
        games: list[ScheduledGame] = []
        for board, (first, second) in enumerate(encounters):
            pairing = state.rounds_paired * self.boards + board
            for index in range(GAMES_PER_ENCOUNTER):
                black, white = (first, second) if index % 2 == 0 else (second, first)
                games.append(ScheduledGame(number, pairing, index, black, white, opening))
                number += 1
        return games

    def expected_total(self, progress: Progress) -> int:
        return self.rounds * self.boards * GAMES_PER_ENCOUNTER

    def tiebreaks(self, state: SwissState) -> list[TiebreakRow]:
        score = state.score
        buchholz = {name: sum(score[o] for o in state.met[name]) for name in self.field}
        sb = {
            name: sum(state.against.get((name, o), 0.0) * score[o] for o in set(state.met[name])) for name in self.field
        }
        seed = {name: index for index, name in enumerate(self.field)}

        def key(name: str) -> tuple[float, float, float]:
            return (-score[name], -buchholz[name], -sb[name])

        groups: dict[tuple[float, float, float], list[str]] = defaultdict(list)
        for name in self.field:
            groups[key(name)].append(name)
        h2h: dict[str, float | None] = {}
        for members in groups.values():
            for name in members:
                others = [o for o in members if o != name]
                h2h[name] = sum(state.against.get((name, o), 0.0) for o in others) if others else None
        order = sorted(self.field, key=lambda name: (*key(name), -(h2h[name] or 0.0), seed[name]))
        return [
            TiebreakRow(
                rank=rank,
                name=name,
                score=score[name],
                byes=state.byes[name],
                buchholz=buchholz[name],
                sonneborn_berger=sb[name],
                head_to_head=h2h[name],
            )
            for rank, name in enumerate(order, start=1)
        ]

    def summary(self, progress: Progress) -> FormatSummary:
        state = self.state(progress)
        played = state.rounds_paired - (0 if state.round_complete else 1)
        return FormatSummary(
            format="swiss",
            rules=[
                f"Swiss: {self.rounds} round(s), a game pair per encounter (one opening, colours swapped); a bye is"
                f" worth {BYE_POINTS:g} points; no rematches."
            ],
            tiebreaks=self.tiebreaks(state),
            notes=[f"rounds finished: {played} of {self.rounds}"],
        )


def max_rounds(bots: int) -> int:
    """The most rounds a field can play without a rematch: a round robin's rounds."""
    return bots - 1 if bots % 2 == 0 else bots


def _pair(
    ranked: list[str],
    score: dict[str, float],
    played: set[frozenset[str]],
    rematches: bool,
    due: dict[str, int] | None = None,
    *,
    colours: bool = False,
) -> list[tuple[str, str]] | None:
    """Pair `ranked` (an even list, best first), Dutch-style (see the module), or None when the search finds no
    pairing without a rematch within its budget. `colours`: nor two bots that both had Black first (or both
    White first) in two more encounters than the other way, one of which would go to three more."""
    steps = [0]

    def search(players: list[str]) -> list[tuple[str, str]] | None:
        if not players:
            return []
        steps[0] += 1
        if steps[0] > _SEARCH_BUDGET:
            return None
        top, rest = players[0], players[1:]
        for other in _candidates(top, rest, score, due):
            if not rematches and frozenset((top, other)) in played:
                continue
            if colours and due is not None and _clash(due[top], due[other]):
                continue
            found = search([name for name in rest if name != other])
            if found is not None:
                return [(top, other), *found]
        return None

    if rematches:
        # Fewest rematches: the Dutch order, taking the first candidate not met if any, else the first.
        pairs: list[tuple[str, str]] = []
        players = list(ranked)
        while players:
            top, rest = players[0], players[1:]
            candidates = _candidates(top, rest, score, due)
            other = next((o for o in candidates if frozenset((top, o)) not in played), candidates[0])
            pairs.append((top, other))
            players = [name for name in rest if name != other]
        return pairs
    return search(ranked)


def _clash(due_a: int, due_b: int) -> bool:
    """Whether two bots' colour balances both lean two or more the same way: whoever takes Black first (or White
    first) goes to three."""
    return (due_a >= 2 and due_b >= 2) or (due_a <= -2 and due_b <= -2)


def _candidates(top: str, rest: list[str], score: dict[str, float], due: dict[str, int] | None = None) -> list[str]:
    """`top`'s opponents in order of preference: its score group's Dutch choice (the top half meets the bottom
    half: the player half a group below), then the rest of the group nearest that place, then lower groups;
    within a group, opponents whose colour history clashes with `top`'s (both had Black first more often, or
    both less) come after the others. `due`: Black-first encounters minus White-first ones, per bot."""
    group = [top, *(name for name in rest if score[name] == score[top])]
    ideal = max(1, len(group) // 2)
    order = list(range(ideal, len(group))) + list(range(ideal - 1, 0, -1))
    preferred = [group[index] for index in order]
    if due is not None and due[top]:
        preferred.sort(key=lambda name: due[name] * due[top] > 0)  # stable: the Dutch order within each kind
    return preferred + [name for name in rest if name not in preferred]
