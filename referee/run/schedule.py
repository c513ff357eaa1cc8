"""Which games a tournament plays: pairings, colours and openings, and the `Scheduler` the runner pulls them from.

Pure: no I/O apart from `read_openings_file`, no clock, no randomness that is not seeded.

The runner does not take a list of games up front: it asks the run's `Scheduler` for the next games given
the `Progress` so far (every game scheduled, the results of the finished ones), and stores each game as
it is scheduled. A scheduler keeps no state of its own between calls that is not rebuilt from the
progress, so a run killed at any point (even by `kill -9`) asks the same questions of the same stored
answers on resume and continues exactly. Formats that pair from results (`referee.run.swiss`,
`referee.run.knockout`, `referee.run.adaptive`) return nothing while they wait for results; round robin, gauntlet
and explicit pairings (`FixedPairings`) return their whole list at once.

The fixed schedule is *prefix-stable*: raising the games per pairing only adds games (with new numbers) and
never changes the ones already numbered, so a tournament can be resumed with more games. Games are numbered round by
round (every pairing plays its first game, then every pairing its second, ...), so standings taken
part-way through are fair to every bot.

Openings come in pairs of games: game 2k and 2k+1 of a pairing both start from opening k, with colours
swapped. The same opening k is used by every pairing.
"""

from __future__ import annotations

import enum
import operator
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from protocol.rules import IllegalMoveError, InvalidMoveError, Move, Position

if TYPE_CHECKING:
    from referee.stats.standings import FormatSummary


class Format(enum.StrEnum):
    """How bots are paired."""

    ROUND_ROBIN = "round-robin"  # every bot plays every other bot
    GAUNTLET = "gauntlet"  # the first N bots (the seeds, default 1) play each of the others; the others do not meet
    PAIRINGS = "pairings"  # the pairs listed in the config ([[pairings]]), nothing else
    SWISS = "swiss"  # N rounds, paired by score (referee.run.swiss)
    KNOCKOUT = "knockout"  # a seeded bracket (referee.run.knockout)
    ADAPTIVE = "adaptive"  # game pairs where the ranking is least certain (referee.run.adaptive)

    @property
    def is_fixed(self) -> bool:
        """Whether the whole schedule is known from the config (not paired from results)."""
        return self in (Format.ROUND_ROBIN, Format.GAUNTLET, Format.PAIRINGS)


@dataclass(frozen=True)
class ScheduledGame:
    """One game of the schedule. `number` (from 1) identifies it for good, across resumes."""

    number: int
    pairing: int  # index into the pairings, from 0
    round: int  # the game's index within its pairing, from 0
    black: str
    white: str
    opening: tuple[str, ...]

    @property
    def game_id(self) -> str:
        return f"g{self.number:04d}"


def pairings(bots: list[str], tournament_format: Format, *, seeds: int = 1) -> list[tuple[str, str]]:
    """The pairs of bots that meet, in a fixed order. Which one comes first balances colours (see below).

    A gauntlet's first `seeds` bots each play every other bot (not each other)."""
    if len(set(bots)) != len(bots):
        raise ValueError(f"bot names must be unique, got {bots}")
    if len(bots) < 2:
        raise ValueError(f"a tournament needs at least two bots, got {len(bots)}")
    if tournament_format is Format.GAUNTLET:
        if not 1 <= seeds < len(bots):
            raise ValueError(f"a gauntlet of {len(bots)} bots has 1 to {len(bots) - 1} seeds, got {seeds}")
        pairs = [(i, j) for i in range(seeds) for j in range(seeds, len(bots))]
    elif not tournament_format.is_fixed or tournament_format is Format.PAIRINGS:
        raise ValueError(f"{tournament_format} pairs from results or from the config's list, not from the bots alone")
    else:
        pairs = [(i, j) for i in range(len(bots)) for j in range(i + 1, len(bots))]
    # With an odd number of games the first bot of a pair gets one more black game; alternating the order
    # by (i + j) parity spreads those extra blacks evenly over the bots (the classic round-robin trick).
    return [(bots[i], bots[j]) if (i + j) % 2 == 1 else (bots[j], bots[i]) for i, j in pairs]


def make_schedule(
    bots: list[str],
    tournament_format: Format,
    games_per_pairing: int,
    openings: Sequence[tuple[str, ...]],
    *,
    seeds: int = 1,
) -> list[ScheduledGame]:
    """Every game of the tournament, in playing order.

    `openings[k]` starts games 2k and 2k+1 of every pairing; if there are fewer openings than game pairs
    they are reused in order. An empty list means every game starts from the empty board.
    """
    return schedule_pairs(pairings(bots, tournament_format, seeds=seeds), games_per_pairing, openings)


def schedule_pairs(
    pairs: Sequence[tuple[str, str]], games_per_pairing: int, openings: Sequence[tuple[str, ...]]
) -> list[ScheduledGame]:
    """`make_schedule` of a given list of pairs (the first bot of each pair is Black in its first game)."""
    if games_per_pairing < 1:
        raise ValueError(f"games per pairing must be at least 1, got {games_per_pairing}")
    games: list[ScheduledGame] = []
    for game_round in range(games_per_pairing):
        k = game_round // 2
        opening = openings[k % len(openings)] if openings else ()
        for index, (first, second) in enumerate(pairs):
            black, white = (first, second) if game_round % 2 == 0 else (second, first)
            number = game_round * len(pairs) + index + 1
            games.append(ScheduledGame(number, index, game_round, black, white, opening))
    return games


def opening_at(openings: Sequence[tuple[str, ...]], k: int) -> tuple[str, ...]:
    """Opening `k` of a list, reused in order when there are fewer (the empty board when there are none)."""
    return openings[k % len(openings)] if openings else ()


@dataclass(frozen=True)
class Progress:
    """What a format is told of a run: every game scheduled so far (by number, from 1, without gaps), the
    Black points of each finished one, the field, and the bots that get no new games."""

    bots: Sequence[str]
    """The field in config order: every bot that may be scheduled now (retired bots are left out)."""
    scheduled: Sequence[ScheduledGame]
    points: Mapping[int, float]
    """Black's points (1, 1/2 or 0) of every finished game, by number."""
    withdrawn: frozenset[str] = frozenset()
    """Bots still in the field whose games are forfeited (suspended): fixed-field formats pair them all the same."""

    @property
    def next_number(self) -> int:
        return len(self.scheduled) + 1

    def in_flight(self) -> list[ScheduledGame]:
        """The games scheduled and not finished."""
        return [game for game in self.scheduled if game.number not in self.points]

    def finished(self, games: Iterable[ScheduledGame]) -> bool:
        return all(game.number in self.points for game in games)


class ScheduleError(ValueError):
    """The games already stored cannot be continued with these settings; the message says what to do."""


class Scheduler(Protocol):
    """A format: asked for the next games, given the progress so far. Pure and deterministic (see the module)."""

    def next_games(self, progress: Progress) -> list[ScheduledGame]:
        """Games to add now, numbered from `progress.next_number`; [] when none can be added until more results
        come (or the run is complete, when nothing is in flight)."""
        ...

    def expected_total(self, progress: Progress) -> int:
        """How many games the run will have, as well as can be told now (for progress displays)."""
        ...

    def summary(self, progress: Progress) -> FormatSummary | None:
        """What the standings show of this format beyond points and Elo (tie-breaks, a bracket), or None."""
        ...


def _pair_key(game: ScheduledGame) -> tuple[str, str, int]:
    return _key_of(game.black, game.white, game.round)


_BOTS_AND_ROUND = operator.attrgetter("black", "white", "round")


def _keys(games: Iterable[ScheduledGame]) -> set[tuple[str, str, int]]:
    """The `_pair_key` of each game, the attributes read at C speed (a resume has 50,000 games: ~15 ms)."""
    return {
        (black, white, round_) if black <= white else (white, black, round_)
        for black, white, round_ in map(_BOTS_AND_ROUND, games)
    }


def _key_of(first: str, second: str, game_round: int) -> tuple[str, str, int]:
    """A game known by its two bots (whichever is listed first) and its index in their pairing."""
    return (first, second, game_round) if first <= second else (second, first, game_round)


class FixedPairings:
    """Round robin, gauntlet (`seeds`) or explicit pairings: a list known from the config, numbered in the order
    of `make_schedule`, with the games of new bots (latecomers) or of more games per pairing added after the
    stored ones. A game is known by its two bots and its index in their pairing, whichever bot is listed first."""

    def __init__(
        self,
        tournament_format: Format,
        games_per_pairing: int,
        openings: Sequence[tuple[str, ...]],
        *,
        seeds: int = 1,
        pairs: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.format = tournament_format
        self.games_per_pairing = games_per_pairing
        self.openings = openings
        self.seeds = seeds
        self.pairs = list(pairs)

    def wanted(self, bots: Sequence[str]) -> list[ScheduledGame]:
        """The whole schedule of this field, numbered as a fresh run would number it."""
        return schedule_pairs(self._pairs(bots), self.games_per_pairing, self.openings)

    def _pairs(self, bots: Sequence[str]) -> list[tuple[str, str]]:
        if self.format is Format.PAIRINGS:
            return [pair for pair in self.pairs if pair[0] in bots and pair[1] in bots]
        return pairings(list(bots), self.format, seeds=min(self.seeds, len(bots) - 1))

    def _wanted_keys(self, bots: Sequence[str]) -> set[tuple[str, str, int]]:
        """The `_pair_key` of every game `wanted` gives, without making the games (each pair plays its rounds)."""
        pairs = self._pairs(bots)
        return {
            _key_of(first, second, game_round)
            for game_round in range(self.games_per_pairing)
            for first, second in pairs
        }

    def check(self, progress: Progress) -> None:
        """ScheduleError when a stored game of two bots still in the field is not in this schedule (fewer games
        per pairing than before, or other pairings)."""
        wanted = self._wanted_keys(progress.bots)
        if _keys(progress.scheduled) <= wanted:
            return  # every stored game is one of this schedule's
        field = set(progress.bots)
        extra = [
            game
            for game in progress.scheduled
            if game.black in field and game.white in field and _pair_key(game) not in wanted
        ]
        if extra:
            game = extra[0]
            raise ScheduleError(
                f"holds {len(extra)} game(s) this config does not schedule (e.g. {game.game_id}, {game.black} vs"
                f" {game.white}, game {game.round + 1} of their pairing); raise the games per pairing to at least"
                " what it was and keep the pairings, or choose another output directory (--out DIR)"
            )

    def next_games(self, progress: Progress) -> list[ScheduledGame]:
        have = _keys(progress.scheduled)
        if self._wanted_keys(progress.bots) <= have:
            return []  # a resume of the same schedule: no game is made to find that none is missing
        number = progress.next_number
        added: list[ScheduledGame] = []
        for game in self.wanted(progress.bots):
            if _pair_key(game) not in have:
                added.append(replace(game, number=number))
                number += 1
        return added

    def expected_total(self, progress: Progress) -> int:
        return len(progress.scheduled)

    def summary(self, progress: Progress) -> FormatSummary | None:
        return None


def random_opening(width: int, height: int, komi: float, plies: int, seed: int | str, index: int) -> tuple[str, ...]:
    """Opening `index` of a seeded set: `plies` random legal placements from the empty board.

    Each opening has its own generator seeded from (seed, index), so opening k never depends on how many
    openings are asked for: that keeps schedules prefix-stable when games are added.
    """
    rng = random.Random(f"alternator-opening:{seed}:{index}")
    position = Position(width, height, komi)
    moves: list[str] = []
    for _ in range(plies):
        placements = position.legal_placements()
        if not placements:
            break  # a tiny board can run out of placements; a shorter opening is still an opening
        move = rng.choice(placements)
        position.push(move)
        moves.append(str(move))
    return tuple(moves)


def random_openings(
    width: int, height: int, komi: float, plies: int, seed: int | str, count: int
) -> list[tuple[str, ...]]:
    """The first `count` seeded random openings (none when plies is 0)."""
    if plies <= 0:
        return []
    return [random_opening(width, height, komi, plies, seed, k) for k in range(count)]


class OpeningsFileError(ValueError):
    """An openings file has a line that is not a legal move list; the message names the file and line."""


def parse_openings(text: str, width: int, height: int, komi: float, *, source: str) -> list[tuple[str, ...]]:
    """One opening per line: moves separated by spaces or commas. Blank lines and `#` comments are skipped.

    Every line is replayed with the rules engine, so a bad file is refused before any game starts.
    """
    openings: list[tuple[str, ...]] = []
    for line_number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].replace(",", " ").strip()
        if not line:
            continue
        position = Position(width, height, komi)
        for move_number, move in enumerate(line.split(), start=1):
            try:
                position.push(Move.parse(move))
            except (InvalidMoveError, IllegalMoveError) as error:
                raise OpeningsFileError(
                    f"{source}: line {line_number}: move {move_number} ({move!r}) on a {width}x{height} board: {error}"
                ) from None
        if position.is_over():
            raise OpeningsFileError(f"{source}: line {line_number}: the opening ends the game; leave moves to play")
        openings.append(tuple(str(move) for move in position.history))
    if not openings:
        raise OpeningsFileError(f"{source}: no openings (one move list per line, e.g. 'd5d4 e4e5')")
    return openings


def read_openings_file(path: Path, width: int, height: int, komi: float) -> list[tuple[str, ...]]:
    """`parse_openings` on a file; OpeningsFileError if it cannot be read."""
    from referee.host.limits import MAX_OPENINGS_BYTES
    from referee.outputs.files import InputFileError, read_input_text

    try:
        text = read_input_text(path, "openings file", max_bytes=MAX_OPENINGS_BYTES)
    except OSError as error:
        raise OpeningsFileError(f"{path}: cannot read the openings file: {error.strerror}") from None
    except InputFileError as error:
        raise OpeningsFileError(str(error)) from None
    return parse_openings(text, width, height, komi, source=str(path))


def playing_order(game: ScheduledGame) -> tuple[int, int, int]:
    """The order a fixed schedule's games are played in (their numbers stay `make_schedule`'s): each game pair (the
    two games of a pairing that share an opening, colours swapped) back to back, pairing after pairing, and then the
    next game pair of every pairing, as cutechess and fastchess play their encounters. Played on one slot (`pick_next`),
    the pair's second game finds both bots running: a round robin starts half as many bot processes (measured, 48
    instant bots, 2 games a pairing, two at once: 2,384 starts for 2,256 games -> 1,197)."""
    return (game.round // 2, game.pairing, game.round)


def pick_next(
    pending: list[ScheduledGame], open_bots: set[str], window: int, elsewhere: Iterable[set[str]] = ()
) -> int:
    """Which pending game a worker slot should play next: an index into `pending` (which must not be empty).

    Among the first `window` games, prefer one whose bots the slot already has running (both, then one),
    so processes are reused rather than restarted; otherwise the earliest game, to keep the order fair. A game
    whose two bots another slot has (`elsewhere`: each other slot's bots, running or in the game it plays) is left
    to that slot, unless this slot has both too or the window holds nothing else: the second game of a game pair
    (`playing_order`) is played where its first was, with no bot started for it.
    """
    others = list(elsewhere)
    best, best_score = 0, -2
    for index, game in enumerate(pending[: max(1, window)]):
        black, white = game.black, game.white
        score = (black in open_bots) + (white in open_bots)
        if score < 2 and any(black in bots and white in bots for bots in others):
            score = -1
        if score > best_score:
            best, best_score = index, score
            if score == 2:
                break
    return best
