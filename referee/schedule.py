"""Which games a tournament plays: pairings, colours and openings, decided from the config alone.

Pure: no I/O apart from `read_openings_file`, no clock, no randomness that is not seeded. The schedule
is *prefix-stable*: raising the games per pairing only adds games (with new numbers) and never changes
the ones already numbered, so a tournament can be resumed with more games. Games are numbered round by
round (every pairing plays its first game, then every pairing its second, ...), so standings taken
part-way through are fair to every bot.

Openings come in pairs of games: game 2k and 2k+1 of a pairing both start from opening k, with colours
swapped. The same opening k is used by every pairing.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from protocol.rules import IllegalMoveError, InvalidMoveError, Move, Position


class Format(enum.StrEnum):
    """How bots are paired."""

    ROUND_ROBIN = "round-robin"  # every bot plays every other bot
    GAUNTLET = "gauntlet"  # the first bot plays each of the others; the others do not meet


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


def pairings(bots: list[str], tournament_format: Format) -> list[tuple[str, str]]:
    """The pairs of bots that meet, in a fixed order. Which one comes first balances colours (see below)."""
    if len(set(bots)) != len(bots):
        raise ValueError(f"bot names must be unique, got {bots}")
    if len(bots) < 2:
        raise ValueError(f"a tournament needs at least two bots, got {len(bots)}")
    if tournament_format is Format.GAUNTLET:
        pairs = [(0, j) for j in range(1, len(bots))]
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
) -> list[ScheduledGame]:
    """Every game of the tournament, in playing order.

    `openings[k]` starts games 2k and 2k+1 of every pairing; if there are fewer openings than game pairs
    they are reused in order. An empty list means every game starts from the empty board.
    """
    if games_per_pairing < 1:
        raise ValueError(f"games per pairing must be at least 1, got {games_per_pairing}")
    pairs = pairings(bots, tournament_format)
    games: list[ScheduledGame] = []
    for game_round in range(games_per_pairing):
        k = game_round // 2
        opening = openings[k % len(openings)] if openings else ()
        for index, (first, second) in enumerate(pairs):
            black, white = (first, second) if game_round % 2 == 0 else (second, first)
            number = game_round * len(pairs) + index + 1
            games.append(ScheduledGame(number, index, game_round, black, white, opening))
    return games


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
    from referee.files import InputFileError, read_input_text
    from referee.limits import MAX_OPENINGS_BYTES

    try:
        text = read_input_text(path, "openings file", max_bytes=MAX_OPENINGS_BYTES)
    except OSError as error:
        raise OpeningsFileError(f"{path}: cannot read the openings file: {error.strerror}") from None
    except InputFileError as error:
        raise OpeningsFileError(str(error)) from None
    return parse_openings(text, width, height, komi, source=str(path))


def pick_next(pending: list[ScheduledGame], open_bots: set[str], window: int) -> int:
    """Which pending game a worker slot should play next: an index into `pending` (which must not be empty).

    Among the first `window` games, prefer one whose bots the slot already has running (both, then one),
    so processes are reused rather than restarted; otherwise the earliest game, to keep the order fair.
    """
    best, best_score = 0, -1
    for index, game in enumerate(pending[: max(1, window)]):
        score = (game.black in open_bots) + (game.white in open_bots)
        if score > best_score:
            best, best_score = index, score
            if score == 2:
                break
    return best
