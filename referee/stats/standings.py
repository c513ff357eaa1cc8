"""Tournament standings: points, score, Elo with error margins, losses by kind and a crosstable.

Everything here is pure arithmetic over finished, scored games (`ScoredGame`), except `write_standings`,
which only writes files. `compute_standings` gives a `Standings` model (its JSON
Schema is published as `referee/schema/standings.json`); `to_text`, `to_markdown` and `to_csv` render it.

Elo: one fit of the whole pool, the ratings with a first-move term and a draw parameter (Davidson's model, as
Ordo and BayesElo fit white's advantage and draws): for Black i (who moves first, RULES.md) against White j,
with x = k (R_i - R_j + A), k = ln 10 / 400 and u = x / 2,
    P(Black wins) = e^u / Z,  P(White wins) = e^-u / Z,  P(draw) = nu / Z,  Z = e^u + e^-u + nu.
A is the Elo the first move is worth; nu >= 0 sets how often equal bots draw (100 nu / (2 + nu) percent, the first
move left out). With nu = 0 this is the logistic (Bradley-Terry) model, P(i beats j) = 1 / (1 + 10^((R_j - R_i -
A) / 400)); a field that drew no game (a komi of 3.5 makes draws impossible) has nu = 0 exactly, its maximum
likelihood. With draws, the model's expected score, P(win) + P(draw) / 2, rises more slowly through an even game
than the logistic curve, by a factor 2 / (2 + nu); the ratings, the first-move term and their margins are reported
multiplied by that factor, so that near an even game a difference of D Elo means the usual logistic expected score
(200 Elo: ~76%) whatever the draw rate. The fit is by Newton's method on the log posterior: every bot that played,
and the first-move term, get `prior_draws` (default 1) virtual draws against a phantom rated 0, counted as half a
win and half a loss, a weak prior that keeps the rating of a bot that won (or lost) every game finite instead of
infinite and shrinks the others a little (two bots, 75% over 100 games, 40-10 with Black and 35-15 with White:
+-96.3 instead of the maximum-likelihood +-97.0); when some game was drawn, nu gets `prior_draws` virtual games
between equals, half of them drawn (it keeps a field that drew every game finite). Ratings are then shifted so
that their mean over the bots that played is 0 (or, with an anchor, so that the anchor bot has the anchor's
rating), and the 95% margin is 1.96 standard deviations of (rating - field mean) (or of (rating - the anchor's)),
from the inverse of the observed information matrix (the negative Hessian of the log posterior) over every
parameter. A bot that played no games has neither rating nor margin and does not take part in the mean; an anchor
bot that has not played yet leaves the ratings relative to the field mean.
"""

from __future__ import annotations

import csv
import io
import math
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from protocol.rules import Result, result_points
from referee.outputs.files import write_text_atomic
from referee.record import Termination
from referee.stats.head_to_head import HeadToHead

STANDINGS_VERSION: Literal[1] = 1

RESULTS: tuple[Result, ...] = ("1-0", "0-1", "1/2-1/2")
NORMAL = Termination.NORMAL
# Always listed, in this order, even when zero.
LOSS_KINDS = tuple(kind for kind in Termination if kind.is_scored)

_K = math.log(10.0) / 400.0  # d(log-odds)/d(Elo)
_Z95 = 1.959963984540054
_MAX_NEWTON_STEPS = 200


@dataclass(frozen=True)
class ScoredGame:
    """One finished, scored game, as the standings count it.

    `result` is "1-0" (Black won), "0-1" (White won) or "1/2-1/2". `termination` is how it ended:
    NORMAL (scored from the board) or a forfeit kind, in which case the side that lost is the one that
    forfeited (a plain string such as "time" is accepted and converted). Void and aborted games are
    never scored: leave them out.
    """

    black: str
    white: str
    result: Result
    termination: Termination = Termination.NORMAL
    black_off_turn_cpu_ms: float | None = None
    """CPU time Black's processes used during White's turns (None: not measured); not part of the score."""
    white_off_turn_cpu_ms: float | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "termination", Termination(self.termination))
        except ValueError:
            kinds = ", ".join(kind.value for kind in Termination)
            raise ValueError(
                f"game {self.black} vs {self.white}: termination {self.termination!r} is not one of {kinds}"
            ) from None
        if self.result not in RESULTS:
            raise ValueError(
                f"game {self.black} vs {self.white}: result {self.result!r} is not one of {', '.join(RESULTS)}; "
                "leave void and aborted games out of the standings"
            )
        if not self.termination.is_scored:
            raise ValueError(
                f"game {self.black} vs {self.white}: a {self.termination} game is not scored; leave it out"
            )
        if self.black == self.white:
            raise ValueError(f"game {self.black} vs {self.white}: a bot cannot play itself in the standings")
        if self.termination is not NORMAL and self.result == "1/2-1/2":
            raise ValueError(
                f"game {self.black} vs {self.white}: a forfeit ({self.termination}) cannot be a draw; "
                "give the forfeiting side the loss"
            )

    @property
    def black_points(self) -> float:
        return result_points(self.result)

    @property
    def loser(self) -> str | None:
        """The bot that lost (by forfeit or on the board), or None for a draw."""
        if self.result == "1-0":
            return self.white
        if self.result == "0-1":
            return self.black
        return None


class Anchor(BaseModel):
    """A bot whose rating is fixed: every other rating is measured from it (Ordo's `-A`, BayesElo's `offset`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The anchor bot.")
    rating: float = Field(allow_inf_nan=False, description="Its rating: the others are relative to it.")

    def __str__(self) -> str:
        return f"{self.name}={self.rating:.15g}"


def parse_anchor(text: str) -> Anchor:
    """`NAME=RATING` (`--anchor`, config `anchor`) as an Anchor; ValueError saying what one looks like."""
    name, sep, rating = text.rpartition("=")
    try:
        value = float(rating)
    except ValueError:
        value = math.nan
    if not sep or not name.strip() or not math.isfinite(value):
        raise ValueError(f"{text!r} is not NAME=RATING; give the bot and the rating it is fixed at, like base=1500")
    return Anchor(name=name.strip(), rating=value)


class ColourRecord(BaseModel):
    """A bot's wins, draws and losses with one colour."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    games: int = Field(ge=0)
    wins: int = Field(ge=0)
    draws: int = Field(ge=0)
    losses: int = Field(ge=0)


class CrosstableCell(BaseModel):
    """What the row bot scored against the column bot."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    games: int = Field(ge=0, description="Games the two bots played against each other (either colour).")
    points: float = Field(ge=0, description="Points of the row bot in those games (win 1, draw 1/2).")


class BotStanding(BaseModel):
    """One bot's line in the standings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: int = Field(
        ge=1, description="1 is first: by points, then Elo; bots equal on both share a rank (listed by name)."
    )
    name: str
    games: int = Field(ge=0)
    wins: int = Field(ge=0)
    draws: int = Field(ge=0)
    losses: int = Field(ge=0)
    points: float = Field(ge=0, description="Win 1, draw 1/2, loss 0.")
    score_pct: float | None = Field(description="100 * points / games (null when no games).")
    elo: float | None = Field(
        description="Elo relative to the mean of the bots that played, or on the anchor's scale when the standings"
        " have an `anchor` (null when no games)."
    )
    elo_margin: float | None = Field(
        description="Half-width of the 95% interval of `elo`: of the difference from the field mean, or from the"
        " anchor (whose own margin is then 0) (null when no games)."
    )
    as_black: ColourRecord | None = Field(
        default=None, description="Its games as Black, the first mover (null: standings written before it was kept)."
    )
    as_white: ColourRecord | None = Field(
        default=None, description="Its games as White, the second mover (null: standings written before it was kept)."
    )
    losses_by_kind: dict[str, int] = Field(
        description="Losses by how the game ended: 'normal' (on the board) or the forfeit kind; they sum to `losses`."
    )
    off_turn_cpu_s: float | None = Field(
        default=None,
        description="CPU seconds all the bot's processes used during its opponents' turns, over the games where it"
        " was measured (pondering, or taking the opponent's CPU; null: never measured).",
    )
    time_control: str | None = Field(
        default=None, description="The bot's own time control when it has one (time odds; null: the run's)."
    )


class Totals(BaseModel):
    """Counts over all scored games."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    games: int = Field(ge=0)
    black_wins: int = Field(ge=0)
    white_wins: int = Field(ge=0)
    draws: int = Field(ge=0)
    forfeits: int = Field(ge=0, description="Decisive games that ended by forfeit rather than on the board.")


class TiebreakRow(BaseModel):
    """One bot of a Swiss tournament, ranked by score, then Buchholz, Sonneborn-Berger and head-to-head."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: int = Field(ge=1)
    name: str
    score: float = Field(ge=0, description="Points from games plus byes (a bye is worth a won encounter).")
    byes: int = Field(ge=0)
    buchholz: float = Field(description="The sum of the scores of the bot's opponents.")
    sonneborn_berger: float = Field(
        description="The sum over opponents of the points scored against them times their score."
    )
    head_to_head: float | None = Field(
        default=None, description="Points against the bots tied with it on score, Buchholz and SB (null: no tie)."
    )


class BracketEncounter(BaseModel):
    """One encounter of a knockout bracket."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    round: int = Field(ge=1, description="The bracket round, from 1.")
    match: int = Field(ge=1, description="The encounter's place in its round, from the top of the bracket.")
    top: str | None = Field(description="The higher seed (null: not known yet).")
    bottom: str | None = Field(description="The lower seed (null: a bye, or not known yet).")
    top_seed: int | None = None
    bottom_seed: int | None = None
    top_points: float = 0.0
    bottom_points: float = 0.0
    games: int = Field(0, ge=0, description="Games finished in this encounter.")
    winner: str | None = Field(default=None, description="Who advanced (null: undecided).")
    note: str | None = Field(default=None, description="A bye, tie-break pairs, or the final rule applied.")


class FormatSummary(BaseModel):
    """What a format adds to the standings: Swiss tie-breaks, a knockout bracket, an adaptive run's verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = Field(description="swiss, knockout or adaptive.")
    rules: list[str] = Field(default_factory=list, description="The format's stated rules, for people.")
    tiebreaks: list[TiebreakRow] = Field(default_factory=list, description="Swiss: the ranking with tie-breaks.")
    bracket: list[BracketEncounter] = Field(default_factory=list, description="Knockout: every encounter.")
    champion: str | None = Field(default=None, description="Knockout: the winner of the final.")
    order: list[str] = Field(default_factory=list, description="Adaptive: the ranking, best first.")
    undecided: list[str] = Field(
        default_factory=list, description="Adaptive: neighbouring orders below the stated confidence."
    )
    notes: list[str] = Field(default_factory=list)


class Standings(BaseModel):
    """The standings of a tournament."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    standings_version: Literal[1]
    bots: list[BotStanding] = Field(description="In rank order.")
    crosstable: dict[str, dict[str, CrosstableCell]] = Field(
        description="crosstable[row][column]: the row bot's results against the column bot (no diagonal)."
    )
    totals: Totals
    elo_prior_draws: float = Field(
        description="Virtual draws each bot (and the first-move term) was given against a phantom rated 0 (the prior"
        " of the Elo fit)."
    )
    first_move_elo: float | None = Field(
        default=None,
        description="The Elo Black gains by moving first, fitted with the ratings (null: no games, or standings"
        " written before it was fitted).",
    )
    first_move_margin: float | None = Field(default=None, description="Half-width of the 95% interval of it.")
    draw_nu: float | None = Field(
        default=None,
        ge=0,
        description="Davidson's draw parameter nu of the fit: P(draw) = nu / (e^u + e^-u + nu); 0 when no game was"
        " drawn (null: no games).",
    )
    draw_nu_interval: list[float] | None = Field(
        default=None, description="The 95% interval of nu, [low, high] ([0, 0] when no game was drawn)."
    )
    draw_pct_equal: float | None = Field(
        default=None,
        description="100 nu / (2 + nu): how often two equal bots draw, the first move left out (null: no games).",
    )
    anchor: Anchor | None = Field(
        default=None,
        description="The bot whose rating was fixed (--anchor) and its rating; null: ratings relative to the field"
        " mean (also while the anchor bot has no games).",
    )
    title: str | None = Field(default=None, description="The event's title (--title, config `title`), if it has one.")
    head_to_head: HeadToHead | None = Field(
        default=None,
        description="Two-bot runs: the first bot against the second over the counted games (score, Elo, nElo,"
        " LOS, draw ratio, pentanomial, SPRT).",
    )
    format_summary: FormatSummary | None = Field(
        default=None, description="Swiss, knockout and adaptive runs: tie-breaks, the bracket, the verdict."
    )


# --- computing ----------------------------------------------------------------------------------------------


GameKey = tuple[str, str, Result, Termination]
"""(black, white, result, termination): games with the same key count the same in the standings."""

_key: Callable[[ScoredGame], GameKey] = operator.attrgetter("black", "white", "result", "termination")


class StandingsTally:
    """Finished games counted by (black, white, result, termination), added one at a time.

    A tournament keeps one and adds each game as it ends, so that its standings cost the same after 50,000
    games as after 50 (the Elo fit is over pairs of bots, not games): the referee's thread serves every
    game in progress, and nothing it does for one game should be long.
    """

    def __init__(self, results: Iterable[ScoredGame] = (), *, warm_start: bool = False) -> None:
        """`warm_start`: start each fit from the last one's answer (a few Newton steps instead of ~8, for a series
        of standings as games are added); the ratings then agree with a fit from scratch to ~1e-7 Elo, not to
        the last bit. `results` are counted one after the other, never held (50,000 games in bounded memory)."""
        self._start: dict[str, float] | None = {} if warm_start else None
        self.counts: Counter[GameKey] = Counter()
        self.off_turn_cpu_ms: dict[str, float] = {}
        """Per bot: the off-turn CPU milliseconds of the games that measured it."""
        self._kinds: dict[tuple[str, str, str, str], GameKey] = {}  # `add_stored`'s kinds of game, each checked once
        self.counts.update(map(_key, self._with_cpu(results)))  # counted at C speed

    def _with_cpu(self, games: Iterable[ScoredGame]) -> Iterator[ScoredGame]:
        for game in games:
            if game.black_off_turn_cpu_ms is not None or game.white_off_turn_cpu_ms is not None:
                self._add_cpu(game)
            yield game

    def add(self, game: ScoredGame) -> None:
        self.counts[_key(game)] += 1
        self._add_cpu(game)

    def add_stored(
        self,
        black: str,
        white: str,
        result: str,
        termination: str,
        black_off_turn_cpu_ms: float | None = None,
        white_off_turn_cpu_ms: float | None = None,
    ) -> None:
        """`add` of a game as a run's database keeps it (its termination as text), without making a `ScoredGame`
        of it: each kind of game (bots, result, termination) is checked once, as `ScoredGame` checks a game
        (ValueError), so that a resume counts 50,000 stored games in ~60 ms instead of ~250."""
        kind = (black, white, result, termination)
        key = self._kinds.get(kind)
        if key is None:
            key = self._kinds[kind] = _key(ScoredGame(black, white, result, termination))  # type: ignore[arg-type]
        self.counts[key] += 1
        self._add_cpu_of(black, black_off_turn_cpu_ms)
        self._add_cpu_of(white, white_off_turn_cpu_ms)

    def _add_cpu(self, game: ScoredGame) -> None:
        self._add_cpu_of(game.black, game.black_off_turn_cpu_ms)
        self._add_cpu_of(game.white, game.white_off_turn_cpu_ms)

    def _add_cpu_of(self, name: str, used: float | None) -> None:
        if used is not None:
            self.off_turn_cpu_ms[name] = self.off_turn_cpu_ms.get(name, 0.0) + used

    def standings(self, bots: Sequence[str], *, prior_draws: float = 1.0, anchor: Anchor | None = None) -> Standings:
        """The standings of `bots` (every bot of the field) after the games added so far; `anchor` fixes the scale."""
        standings = _standings_from_counts(self.counts, bots, prior_draws, anchor, self._start)
        if not self.off_turn_cpu_ms:
            return standings
        cpu = self.off_turn_cpu_ms
        rows = [
            bot.model_copy(update={"off_turn_cpu_s": cpu[bot.name] / 1000}) if bot.name in cpu else bot
            for bot in standings.bots
        ]
        return standings.model_copy(update={"bots": rows})


def compute_standings(
    results: Iterable[ScoredGame], bots: Sequence[str], *, prior_draws: float = 1.0, anchor: Anchor | None = None
) -> Standings:
    """The standings of `bots` (every bot of the field, played or not) after `results`; `anchor` fixes the scale
    of the ratings (default: relative to the field mean).

    The games are first counted by kind (one pass at C speed), so 50,000 games take milliseconds;
    `StandingsTally` does the counting as games end.
    """
    return StandingsTally(results).standings(bots, prior_draws=prior_draws, anchor=anchor)


def _standings_from_counts(
    counts: Mapping[GameKey, int],
    bots: Sequence[str],
    prior_draws: float,
    anchor: Anchor | None,
    start: dict[str, float] | None = None,
) -> Standings:
    if not (math.isfinite(prior_draws) and prior_draws > 0):
        raise ValueError(f"prior_draws must be a positive number, got {prior_draws}; the default 1 is usual")
    names = list(bots)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"bot {name!r} is listed twice in the field; give every bot a unique name")
        seen.add(name)
    if anchor is not None and anchor.name not in seen:
        raise ValueError(f"the anchor {anchor.name!r} is not in the field ({', '.join(names)}); anchor one of its bots")
    for black, white, _, _ in counts:
        for name in (black, white):
            if name not in seen:
                raise ValueError(
                    f"game {black} vs {white}: {name!r} is not in the field ({', '.join(names)}); "
                    "pass every bot that played in `bots`"
                )

    cross: dict[str, dict[str, list[float]]] = {a: {b: [0, 0.0] for b in names if b != a} for a in names}
    wins = dict.fromkeys(names, 0)
    draws = dict.fromkeys(names, 0)
    losses: dict[str, dict[Termination, int]] = {name: dict.fromkeys(LOSS_KINDS, 0) for name in names}
    black_wins = white_wins = n_draws = forfeits = n_games = 0
    # Per bot and colour ("black", "white"): [wins, draws, losses]; per (black, white): [Black's wins, draws, White's].
    by_colour: dict[str, dict[str, list[int]]] = {name: {"black": [0, 0, 0], "white": [0, 0, 0]} for name in names}
    ordered: dict[tuple[str, str], list[int]] = {}
    for (black, white, result, termination), count in counts.items():
        n_games += count
        outcome = 0 if result == "1-0" else 1 if result == "1/2-1/2" else 2  # from Black's side
        by_colour[black]["black"][outcome] += count
        by_colour[white]["white"][2 - outcome] += count
        ordered.setdefault((black, white), [0, 0, 0])[outcome] += count
        b_points = result_points(result)
        for me, other, pts in ((black, white, b_points), (white, black, 1.0 - b_points)):
            cell = cross[me][other]
            cell[0] += count
            cell[1] += pts * count  # exact: halves and wholes
        if result == "1/2-1/2":
            n_draws += count
            draws[black] += count
            draws[white] += count
            continue
        winner, loser = (black, white) if result == "1-0" else (white, black)
        wins[winner] += count
        losses[loser][termination] += count
        if result == "1-0":
            black_wins += count
        else:
            white_wins += count
        if termination is not NORMAL:
            forfeits += count

    played = [name for name in names if any(cell[0] for cell in cross[name].values())]
    place = {name: i for i, name in enumerate(played)}
    encounters = [(place[b], place[w], o[0], o[1], o[2]) for (b, w), o in ordered.items() if sum(o)]
    fit = _fit_elo(played, encounters, prior_draws, anchor, start) if played else None
    if fit is not None and start is not None:
        start.clear()
        start.update(fit.parameters)  # where the next fit of a warm-started tally begins
    ratings = fit.ratings if fit is not None else {}

    rows: list[dict[str, Any]] = []
    for name in names:
        n_played = int(sum(cell[0] for cell in cross[name].values()))
        points = sum(cell[1] for cell in cross[name].values())
        elo, margin = ratings.get(name, (None, None))
        rows.append(
            {
                "name": name,
                "games": n_played,
                "wins": wins[name],
                "draws": draws[name],
                "losses": n_played - wins[name] - draws[name],
                "points": points,
                "score_pct": 100.0 * points / n_played if n_played else None,
                "elo": None if elo is None else elo + 0.0,  # + 0.0: never a -0.0 in the JSON
                "elo_margin": margin,
                "losses_by_kind": {str(kind): count for kind, count in losses[name].items()},
                **{
                    f"as_{colour}": ColourRecord(games=sum(wdl), wins=wdl[0], draws=wdl[1], losses=wdl[2])
                    for colour, wdl in by_colour[name].items()
                },
            }
        )
    rows.sort(key=_rank_key)
    ranked: list[BotStanding] = []
    for index, row in enumerate(rows):
        # Tied bots (the same points and Elo) share a rank, as in "1, 2, 2, 4".
        tied = index > 0 and _rank_key(row)[:2] == _rank_key(rows[index - 1])[:2]
        ranked.append(BotStanding(rank=ranked[-1].rank if tied else index + 1, **row))
    order = [row.name for row in ranked]
    crosstable = {
        a: {b: CrosstableCell(games=int(cross[a][b][0]), points=cross[a][b][1]) for b in order if b != a} for a in order
    }
    return Standings(
        standings_version=STANDINGS_VERSION,
        bots=ranked,
        crosstable=crosstable,
        totals=Totals(games=n_games, black_wins=black_wins, white_wins=white_wins, draws=n_draws, forfeits=forfeits),
        elo_prior_draws=prior_draws,
        **(_fit_fields(fit) if fit is not None else {}),
    )


def _fit_fields(fit: RatingFit) -> dict[str, Any]:
    """The standings' fields of the fit's own parameters."""
    advantage, margin = fit.first_move
    low, high = fit.draw_nu_interval
    return {
        "first_move_elo": advantage + 0.0,
        "first_move_margin": margin,
        "draw_nu": fit.draw_nu,
        "draw_nu_interval": [low, high],
        "draw_pct_equal": 100 * fit.draw_nu / (2 + fit.draw_nu),
        "anchor": fit.anchor,
    }


def _rank_key(row: dict[str, Any]) -> tuple[float, float, str]:
    # Elo is compared to 1e-6 so that float noise between equal records cannot decide a rank.
    elo = row["elo"]
    return (-row["points"], -round(elo, 6) if elo is not None else math.inf, row["name"])


Encounter = tuple[int, int, int, int, int]
"""(black, white, black's wins, draws, white's wins) between two bots that played, by their index."""


@dataclass(frozen=True)
class RatingFit:
    """The whole-pool fit: each rated bot's Elo and 95% margin on the reported scale, the first-move term and the
    draw parameter; `parameters` (the raw fit) start the next fit near its answer."""

    ratings: dict[str, tuple[float, float]]  # on the Elo scale: the model's values times 2 / (2 + nu)
    first_move: tuple[float, float]  # Elo Black gains by moving first, and its 95% margin (also scaled)
    draw_nu: float  # Davidson's draw parameter (0: no game was drawn)
    draw_nu_interval: tuple[float, float]
    anchor: Anchor | None  # the anchor applied (None: relative to the field mean)
    parameters: dict[str, float]


def _fit_elo(
    played: list[str],
    encounters: list[Encounter],
    prior_draws: float,
    anchor: Anchor | None = None,
    start: Mapping[str, float] | None = None,
) -> RatingFit:
    """The maximum a posteriori fit of the Davidson model with a first-move term (see the module docstring)."""
    m = len(played)
    fit_draws = any(e[3] for e in encounters)
    size = m + 1 + fit_draws
    theta = [0.0] * size
    if start:
        theta[:m] = [start.get(name, 0.0) for name in played]
        theta[m] = start.get(_FIRST_MOVE, 0.0)
    if fit_draws:
        games = sum(e[2] + e[3] + e[4] for e in encounters)
        drawn = sum(e[3] for e in encounters)
        guess = math.log(2 * (drawn + 0.5) / (games - drawn + 0.5))  # q = nu / (2 + nu) = the share drawn
        theta[m + 1] = start.get(_DRAW, guess) if start and _DRAW in start else guess
    problem = _Problem(m, encounters, prior_draws, fit_draws)
    objective = problem.log_posterior(theta)
    for _ in range(_MAX_NEWTON_STEPS):
        gradient, information = problem.gradient_and_information(theta)
        step = _solve(_cholesky(information), gradient)
        largest = max(map(abs, step))
        if largest < 1e-3:
            # In Newton's quadratic basin, where the objective is too flat for rounding to rank the two points: each
            # full step squares the error, so one or two more end it.
            theta = [t + s for t, s in zip(theta, step, strict=True)]
            if largest < 1e-7:  # in Elo (and in ln nu): far below anything shown, above rounding's noise
                break
            objective = problem.log_posterior(theta)
            continue
        # Damped Newton: the log posterior is strictly concave, so halving the step always ends in an ascent.
        scale = 1.0
        while True:
            trial = [t + scale * s for t, s in zip(theta, step, strict=True)]
            trial_objective = problem.log_posterior(trial)
            if trial_objective >= objective or scale < 1e-6:
                break
            scale /= 2
        theta, objective = trial, trial_objective
    else:  # pragma: no cover - a strictly concave smooth objective converges long before this
        raise RuntimeError(f"the Elo fit did not converge in {_MAX_NEWTON_STEPS} Newton steps")

    _, information = problem.gradient_and_information(theta)
    factor = _cholesky(information)
    covariance = [_solve(factor, [1.0 if r == c else 0.0 for r in range(size)]) for c in range(size)]
    nu, interval = 0.0, (0.0, 0.0)
    if fit_draws:
        eta, spread = theta[m + 1], _Z95 * math.sqrt(max(covariance[m + 1][m + 1], 0.0))
        nu, interval = math.exp(eta), (math.exp(max(eta - spread, -700)), math.exp(min(eta + spread, 700)))
    # On the Elo scale: with draws the model's expected score rises more slowly than the logistic curve, by
    # 2 / (2 + nu) at an even game, so its differences are scaled by that to keep 200 Elo the usual ~76%.
    scale = 2.0 / (2.0 + nu)
    fitted: dict[str, tuple[float, float]] = {}
    if anchor is not None and anchor.name in played:
        a = played.index(anchor.name)
        for i, name in enumerate(played):
            variance = max(covariance[i][i] - 2 * covariance[i][a] + covariance[a][a], 0.0)
            fitted[name] = (scale * (theta[i] - theta[a]) + anchor.rating, scale * _Z95 * math.sqrt(variance))
    else:
        anchor = None
        # Covariance of (R_i - mean R): C Σ C with C = I - 11ᵀ/m, taken on the diagonal of the ratings' block.
        row_means = [sum(covariance[i][:m]) / m for i in range(m)]
        grand_mean = sum(row_means) / m
        mean_rating = sum(theta[:m]) / m
        for i, name in enumerate(played):
            variance = max(covariance[i][i] - 2 * row_means[i] + grand_mean, 0.0)
            fitted[name] = (scale * (theta[i] - mean_rating), scale * _Z95 * math.sqrt(variance))
    first_move = (scale * theta[m], scale * _Z95 * math.sqrt(max(covariance[m][m], 0.0)))
    parameters = {name: theta[i] for i, name in enumerate(played)}
    parameters[_FIRST_MOVE] = theta[m]
    if fit_draws:
        parameters[_DRAW] = theta[m + 1]
    return RatingFit(fitted, first_move, nu, interval, anchor, parameters)


# Keys of the fit's own parameters beside the bots' names in `RatingFit.parameters` (no bot name has a NUL).
_FIRST_MOVE = "\0first-move"
_DRAW = "\0draw"
_LN2 = math.log(2.0)


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


@dataclass(frozen=True)
class _Problem:
    """The log posterior of the ratings (Elo), the first-move term (Elo) and, when some game was drawn, eta = ln nu.

    A game of Black i against White j with x = k (R_i - R_j + A) and u = x / 2 has
    P(Black wins) = e^u / Z, P(White wins) = e^-u / Z, P(draw) = nu / Z, Z = e^u + e^-u + nu (Davidson 1970).
    log Z is a log-sum-exp of affine functions of the parameters, so the log likelihood is concave; the priors
    (below) are strictly concave, so the posterior has one maximum and Newton's method finds it.
    """

    m: int
    encounters: list[Encounter]
    prior: float
    fit_draws: bool

    def log_posterior(self, theta: Sequence[float]) -> float:
        m, total = self.m, 0.0
        advantage = theta[m]
        eta = theta[m + 1] if self.fit_draws else -math.inf
        for i, j, black, drawn, white in self.encounters:
            u = 0.5 * _K * (theta[i] - theta[j] + advantage)
            top = max(abs(u), eta)
            log_z = top + math.log(math.exp(u - top) + math.exp(-u - top) + math.exp(eta - top))
            total += (black - white) * u - (black + drawn + white) * log_z
            if drawn:
                total += drawn * eta
        half = 0.5 * self.prior
        for r in theta[: m + 1]:  # each bot, and the first move, drew `prior` virtual games against a 0
            total += half * (_log_sigmoid(_K * r) + _log_sigmoid(-_K * r))
        if self.fit_draws:  # `prior` virtual games between equals, half of them drawn: q = nu / (2 + nu) near 1/2
            y = eta - _LN2
            total += half * (_log_sigmoid(y) + _log_sigmoid(-y))
        return total

    def gradient_and_information(self, theta: Sequence[float]) -> tuple[list[float], list[list[float]]]:
        """The gradient of the log posterior and minus its Hessian (Elo units for ratings and the first move)."""
        m, size = self.m, len(theta)
        gradient = [0.0] * size
        information = [[0.0] * size for _ in range(size)]
        advantage = theta[m]
        d = m + 1  # the index of eta, when fitted
        eta = theta[d] if self.fit_draws else -math.inf
        # Summed per bot and put into the matrix at the end (a game touches 9 of its cells, 15 with draws).
        diagonal = [0.0] * m  # information[i][i] from the games
        with_first = [0.0] * m  # information[i][m]
        with_draw = [0.0] * m  # information[i][d]
        first_first = first_draw = draw_draw = draw_gradient = 0.0
        half_k, quarter_kk = 0.5 * _K, 0.25 * _K * _K
        for i, j, black, drawn, white in self.encounters:
            n = black + drawn + white
            u = half_k * (theta[i] - theta[j] + advantage)
            top = max(abs(u), eta)
            up, down, tie = math.exp(u - top), math.exp(-u - top), math.exp(eta - top)
            z = up + down + tie
            p_black, p_white, p_draw = up / z, down / z, tie / z
            lead = p_black - p_white
            g = half_k * ((black - white) - n * lead)  # d/dR_i; -d/dR_j; d/dA
            h = quarter_kk * n * (p_black + p_white - lead * lead)
            gradient[i] += g
            gradient[j] -= g
            gradient[m] += g
            diagonal[i] += h
            diagonal[j] += h
            information[i][j] -= h
            information[j][i] -= h
            with_first[i] += h
            with_first[j] -= h
            first_first += h
            if drawn or p_draw:
                draw_gradient += drawn - n * p_draw
                c = -half_k * n * lead * p_draw  # the covariance of (u, draw) under the model, times k/2
                draw_draw += n * p_draw * (1.0 - p_draw)
                with_draw[i] += c
                with_draw[j] -= c
                first_draw += c
        prior = self.prior
        for index in range(m + 1):
            q = _sigmoid(_K * theta[index])
            gradient[index] += _K * prior * (0.5 - q)
            curvature = _K * _K * prior * q * (1.0 - q)
            if index < m:
                information[index][index] = diagonal[index] + curvature
                information[index][m] = information[m][index] = with_first[index]
            else:
                information[m][m] = first_first + curvature
        if self.fit_draws:
            q = _sigmoid(eta - _LN2)
            gradient[d] = draw_gradient + prior * (0.5 - q)
            information[d][d] = draw_draw + prior * q * (1.0 - q)
            information[m][d] = information[d][m] = first_draw
            for index in range(m):
                information[index][d] = information[d][index] = with_draw[index]
        return gradient, information


def _cholesky(matrix: list[list[float]]) -> list[list[float]]:
    """Lower-triangular L with L Lᵀ = matrix (symmetric positive definite: the prior guarantees it)."""
    m = len(matrix)
    lower = [[0.0] * m for _ in range(m)]
    for i in range(m):
        row_i = lower[i]
        for j in range(i + 1):
            row_j = lower[j]
            acc = matrix[i][j] - math.fsum(map(operator.mul, row_i[:j], row_j[:j]))
            if i == j:
                if acc <= 0:
                    raise ArithmeticError("the Elo information matrix is not positive definite")
                row_i[i] = math.sqrt(acc)
            else:
                row_i[j] = acc / row_j[j]
    return lower


def _solve(lower: list[list[float]], rhs: Sequence[float]) -> list[float]:
    """x with L Lᵀ x = rhs."""
    m = len(rhs)
    y = [0.0] * m
    for i in range(m):
        y[i] = (rhs[i] - sum(map(operator.mul, lower[i][:i], y[:i]))) / lower[i][i]
    x = [0.0] * m
    for i in reversed(range(m)):
        x[i] = (y[i] - sum(lower[k][i] * x[k] for k in range(i + 1, m))) / lower[i][i]
    return x


# --- rendering ------------------------------------------------------------------------------------------------


def _fmt_points(points: float) -> str:
    return f"{points:g}" if points == int(points) else f"{points:.1f}"


def _fmt_elo(bot: BotStanding, anchored: bool = False) -> str:
    """`+35 ± 20` relative to the field mean; `1535 ± 20` on an anchor's scale."""
    if bot.elo is None or bot.elo_margin is None:
        return "-"
    rounded = round(bot.elo) or 0  # `or 0`: no "-0" for a rating a hair below zero
    return f"{rounded:{'d' if anchored else '+d'}} ± {bot.elo_margin:.0f}"


def _fmt_colour(record: ColourRecord | None) -> str:
    return "-" if record is None or not record.games else f"{record.wins}-{record.draws}-{record.losses}"


def _fmt_score(bot: BotStanding) -> str:
    return "-" if bot.score_pct is None else f"{bot.score_pct:.1f}%"


def _fmt_forfeits(bot: BotStanding) -> str:
    parts = [f"{kind} {count}" for kind, count in bot.losses_by_kind.items() if kind != NORMAL and count]
    return ", ".join(parts) if parts else "-"


def _fmt_cell(standings: Standings, row: str, column: str) -> str:
    if row == column:
        return "x"
    cell = standings.crosstable[row][column]
    return f"{_fmt_points(cell.points)}/{cell.games}" if cell.games else "-"


def _totals_line(totals: Totals) -> str:
    return (
        f"{totals.games} games: Black won {totals.black_wins}, White won {totals.white_wins}, "
        f"{totals.draws} drawn; {totals.forfeits} decided by forfeit."
    )


def to_text(standings: Standings) -> str:
    """A fixed-width table for the terminal: the standings, then the crosstable (columns by rank)."""
    cpu = any(bot.off_turn_cpu_s is not None for bot in standings.bots)
    header = [
        "#",
        "Bot",
        "Games",
        "W",
        "D",
        "L",
        "Points",
        "Score",
        "Elo",
        "Black W-D-L",
        "White W-D-L",
        "Forfeit losses",
    ]
    header += ["Off-turn CPU"] if cpu else []
    body = [
        [
            str(bot.rank),
            bot.name if bot.time_control is None else f"{bot.name} [{bot.time_control}]",
            str(bot.games),
            str(bot.wins),
            str(bot.draws),
            str(bot.losses),
            _fmt_points(bot.points),
            _fmt_score(bot),
            _fmt_elo(bot, standings.anchor is not None),
            _fmt_colour(bot.as_black),
            _fmt_colour(bot.as_white),
            _fmt_forfeits(bot),
            *([_fmt_cpu(bot)] if cpu else []),
        ]
        for bot in standings.bots
    ]
    left = {1, 11}  # name and forfeits read left to right; numbers line up on the right
    lines = ([standings.title, ""] if standings.title else []) + _fixed_width([header, *body], left)
    order = [bot.name for bot in standings.bots]
    if len(order) > 1:
        lines.append("")
        lines.append("Crosstable: points/games of the row bot against the column bot (columns by rank).")
        cross_header = ["#", "Bot", *(str(bot.rank) for bot in standings.bots)]
        cross_body = [
            [str(bot.rank), bot.name, *(_fmt_cell(standings, bot.name, other) for other in order)]
            for bot in standings.bots
        ]
        lines.extend(_fixed_width([cross_header, *cross_body], {1}))
    lines.append("")
    lines.append(_totals_line(standings.totals))
    lines.extend(elo_notes(standings))
    if standings.format_summary is not None:
        lines.extend(format_summary_lines(standings.format_summary))
    return "\n".join(lines) + "\n"


def format_summary_lines(summary: FormatSummary) -> list[str]:
    """The Swiss table with tie-breaks, the knockout bracket, or the adaptive verdict, for the terminal."""
    lines: list[str] = [""]
    if summary.tiebreaks:
        lines.append("Swiss: score (games and byes), then Buchholz, Sonneborn-Berger, head-to-head.")
        header = ["#", "Bot", "Score", "Byes", "Buchholz", "SB", "H2H"]
        body = [
            [
                str(row.rank),
                row.name,
                _fmt_points(row.score),
                str(row.byes),
                _fmt_points(row.buchholz),
                _fmt_points(row.sonneborn_berger),
                "-" if row.head_to_head is None else _fmt_points(row.head_to_head),
            ]
            for row in summary.tiebreaks
        ]
        lines.extend(_fixed_width([header, *body], {1}))
    if summary.bracket:
        lines.append("Bracket:")
        for encounter in summary.bracket:
            lines.append(f"  {_fmt_encounter(encounter)}")
        if summary.champion is not None:
            lines.append(f"Champion: {summary.champion}")
    if summary.order:
        lines.append(f"Order: {' > '.join(summary.order)}")
        if summary.undecided:
            lines.append(f"Still undecided: {'; '.join(summary.undecided)}")
    lines.extend(summary.rules)
    lines.extend(summary.notes)
    return lines


def _fmt_encounter(encounter: BracketEncounter) -> str:
    def side(name: str | None, seed: int | None) -> str:
        if name is None:
            return "?"
        return name if seed is None else f"({seed}) {name}"

    top, bottom = side(encounter.top, encounter.top_seed), side(encounter.bottom, encounter.bottom_seed)
    text = f"round {encounter.round} match {encounter.match}: {top} vs {bottom}"
    if encounter.games:
        text += f"  {_fmt_points(encounter.top_points)}-{_fmt_points(encounter.bottom_points)}"
    if encounter.winner is not None:
        text += f"  -> {encounter.winner}"
    if encounter.note:
        text += f"  ({encounter.note})"
    return text


def _fmt_cpu(bot: BotStanding) -> str:
    return "-" if bot.off_turn_cpu_s is None else f"{bot.off_turn_cpu_s:.1f} s"


def _fixed_width(table: list[list[str]], left: set[int]) -> list[str]:
    widths = [max(len(row[c]) for row in table) for c in range(len(table[0]))]
    lines = []
    for row in table:
        cells = [
            cell.ljust(w) if c in left else cell.rjust(w) for c, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def elo_notes(standings: Standings) -> list[str]:
    """What the Elo column means, and the fit's first-move and draw figures (the terminal, Markdown and report)."""
    anchor = standings.anchor
    scale = (
        f"anchored: {anchor.name} = {anchor.rating:g} (margins are from it)"
        if anchor is not None
        else "relative to the field mean"
    )
    notes = [
        f"Elo: {scale}, ± the 95% margin; one maximum-likelihood fit of the pool with a first-move term and a draw"
        f" parameter (Davidson), {standings.elo_prior_draws:g} virtual draw(s) per bot against a 0-rated phantom."
    ]
    if standings.first_move_elo is not None and standings.first_move_margin is not None:
        advantage = round(standings.first_move_elo) or 0
        nu = standings.draw_nu or 0.0
        draws = (
            "no game drawn (nu = 0)"
            if not nu
            else f"nu = {nu:.3g}: {standings.draw_pct_equal or 0:.1f}% draws between equal bots"
        )
        notes.append(f"First move (Black): {advantage:+d} ± {standings.first_move_margin:.0f} Elo; {draws}.")
    return notes


_MD_SPECIAL = str.maketrans({char: "\\" + char for char in "\\`*_[]()#!|~"} | {"<": "&lt;", ">": "&gt;", "&": "&amp;"})


def _md_escape(text: str) -> str:
    """A name as Markdown text: no raw HTML (a name `<img onerror=...>` is shown, never run), no emphasis or link
    markup, no `|` breaking the table."""
    return text.translate(_MD_SPECIAL)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_text(text: str) -> str:
    """A text cell a spreadsheet will not evaluate: one starting like a formula (=, +, -, @, a tab, a carriage
    return: "CSV injection") gets a leading apostrophe, which spreadsheets show as text and do not display."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def to_markdown(standings: Standings) -> str:
    """The standings and the crosstable as Markdown tables."""
    anchored = standings.anchor is not None
    lines = [
        *([f"# {_md_escape(standings.title)}", ""] if standings.title else []),
        "## Standings",
        "",
        "| # | Bot | Games | W | D | L | Points | Score | Elo | Black W-D-L | White W-D-L | Forfeit losses"
        " | Off-turn CPU |",
        "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|---:|",
    ]
    for bot in standings.bots:
        odds = "" if bot.time_control is None else f" [{_md_escape(bot.time_control)}]"  # its own time control
        lines.append(
            f"| {bot.rank} | {_md_escape(bot.name)}{odds}"
            f" | {bot.games} | {bot.wins} | {bot.draws} | {bot.losses} "
            f"| {_fmt_points(bot.points)} | {_fmt_score(bot)} | {_fmt_elo(bot, anchored)}"
            f" | {_fmt_colour(bot.as_black)}"
            f" | {_fmt_colour(bot.as_white)} | {_fmt_forfeits(bot)} "
            f"| {_fmt_cpu(bot)} |"
        )
    lines += ["", _totals_line(standings.totals)]
    for note in elo_notes(standings):
        lines += ["", note]
    if len(standings.bots) > 1:
        order = [bot.name for bot in standings.bots]
        lines += [
            "",
            "## Crosstable",
            "",
            "Points/games of the row bot against the column bot; columns are numbered by rank.",
            "",
            "| # | Bot | " + " | ".join(str(bot.rank) for bot in standings.bots) + " |",
            "|---:|:---|" + "---:|" * len(order),
        ]
        for bot in standings.bots:
            cells = " | ".join(_fmt_cell(standings, bot.name, other) for other in order)
            lines.append(f"| {bot.rank} | {_md_escape(bot.name)} | {cells} |")
    return "\n".join(lines) + "\n"


def to_csv(standings: Standings) -> str:
    """One row per bot, in rank order, with a header; empty cells where a value is null."""
    kinds: list[str] = []
    for bot in standings.bots:
        kinds += [kind for kind in bot.losses_by_kind if kind not in kinds]
    odds = any(bot.time_control is not None for bot in standings.bots)  # a column only when a bot has its own
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "rank",
            "name",
            *(["time_control"] if odds else []),
            "games",
            "wins",
            "draws",
            "losses",
            "points",
            "score_pct",
            "elo",
            "elo_margin",
            *(f"{colour}_{count}" for colour in ("black", "white") for count in ("wins", "draws", "losses")),
            *(f"losses_{kind}" for kind in kinds),
            "off_turn_cpu_s",
        ]
    )
    for bot in standings.bots:
        writer.writerow(
            [
                bot.rank,
                _csv_text(bot.name),
                *([_csv_text(bot.time_control or "")] if odds else []),
                bot.games,
                bot.wins,
                bot.draws,
                bot.losses,
                _fmt_points(bot.points),
                "" if bot.score_pct is None else f"{bot.score_pct:.2f}",
                "" if bot.elo is None else f"{bot.elo:.2f}",
                "" if bot.elo_margin is None else f"{bot.elo_margin:.2f}",
                *_colour_cells(bot.as_black),
                *_colour_cells(bot.as_white),
                *(bot.losses_by_kind.get(kind, 0) for kind in kinds),
                "" if bot.off_turn_cpu_s is None else f"{bot.off_turn_cpu_s:.3f}",
            ]
        )
    return out.getvalue()


def _colour_cells(record: ColourRecord | None) -> list[int | str]:
    return ["", "", ""] if record is None else [record.wins, record.draws, record.losses]


# --- files ----------------------------------------------------------------------------------------------------


def write_standings(standings: Standings, out_dir: Path | str) -> list[Path]:
    """Write standings.json, standings.csv and standings.md into `out_dir`; returns their paths."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "standings.json": standings.model_dump_json(indent=2) + "\n",
        "standings.csv": to_csv(standings),
        "standings.md": to_markdown(standings),
    }
    written = []
    for name, text in files.items():
        path = directory / name
        write_text_atomic(path, text)
        written.append(path)
    return written


def standings_json_schema() -> dict[str, Any]:
    """The published JSON Schema of `Standings` (what `referee/schema/standings.json` holds)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Alternator tournament standings v1",
        "description": "standings.json in a tournament's output directory: rank, points, Elo, losses by kind,"
        " crosstable and totals.",
        **{k: v for k, v in Standings.model_json_schema().items() if k not in ("title", "description")},
    }
