"""Tournament standings: points, score, Elo with error margins, losses by kind and a crosstable.

Everything here is pure arithmetic over finished, scored games (`ScoredGame`), except `write_standings`,
which only writes files. `compute_standings` gives a `Standings` model (its JSON
Schema is published as `referee/schema/standings.json`); `to_text`, `to_markdown` and `to_csv` render it.

Elo: a logistic (Bradley-Terry) model, P(i beats j) = 1 / (1 + 10^((Rj - Ri) / 400)), a draw counting
as half a win and half a loss, fitted by Newton's method. Each bot that played is also given
`prior_draws` (default 1) virtual draws against a phantom opponent rated 0: a weak prior that keeps
the rating of a bot that won (or lost) every game finite instead of infinite, and shrinks the others a
little (two bots, 75% over 100 games: +-94.8 instead of the maximum-likelihood +-95.4). Ratings are
then shifted so that their mean over the bots that played is 0, and the 95% margin is 1.96 standard
deviations of (rating - field mean), from the inverse of the observed information matrix (the negative
Hessian of the log posterior). A bot that played no games has neither rating nor margin and does not
take part in the mean.
"""

from __future__ import annotations

import csv
import io
import math
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from protocol.rules import Result, result_points
from referee.files import write_text_atomic
from referee.match import HeadToHead
from referee.record import Termination

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
    elo: float | None = Field(description="Elo relative to the mean of the bots that played (null when no games).")
    elo_margin: float | None = Field(description="Half-width of the 95% interval of `elo` (null when no games).")
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
        description="Virtual draws each bot was given against a phantom rated 0 (the prior of the Elo fit)."
    )
    title: str | None = Field(default=None, description="The event's title (--title, config `title`), if it has one.")
    head_to_head: HeadToHead | None = Field(
        default=None,
        description="Two-bot runs: the first bot against the second over the counted games (score, Elo, nElo,"
        " LOS, draw ratio, pentanomial, SPRT).",
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

    def __init__(self, results: Iterable[ScoredGame] = ()) -> None:
        games = list(results)
        self.counts: Counter[GameKey] = Counter(map(_key, games))
        self.off_turn_cpu_ms: dict[str, float] = {}
        """Per bot: the off-turn CPU milliseconds of the games that measured it."""
        for game in games:
            if game.black_off_turn_cpu_ms is not None or game.white_off_turn_cpu_ms is not None:
                self._add_cpu(game)

    def add(self, game: ScoredGame) -> None:
        self.counts[_key(game)] += 1
        self._add_cpu(game)

    def _add_cpu(self, game: ScoredGame) -> None:
        for name, used in ((game.black, game.black_off_turn_cpu_ms), (game.white, game.white_off_turn_cpu_ms)):
            if used is not None:
                self.off_turn_cpu_ms[name] = self.off_turn_cpu_ms.get(name, 0.0) + used

    def standings(self, bots: Sequence[str], *, prior_draws: float = 1.0) -> Standings:
        """The standings of `bots` (every bot of the field) after the games added so far."""
        standings = _standings_from_counts(self.counts, bots, prior_draws)
        if not self.off_turn_cpu_ms:
            return standings
        cpu = self.off_turn_cpu_ms
        rows = [
            bot.model_copy(update={"off_turn_cpu_s": cpu[bot.name] / 1000}) if bot.name in cpu else bot
            for bot in standings.bots
        ]
        return standings.model_copy(update={"bots": rows})


def compute_standings(results: Iterable[ScoredGame], bots: Sequence[str], *, prior_draws: float = 1.0) -> Standings:
    """The standings of `bots` (every bot of the field, played or not) after `results`.

    The games are first counted by kind (one pass at C speed), so 50,000 games take milliseconds;
    `StandingsTally` does the counting as games end.
    """
    return StandingsTally(results).standings(bots, prior_draws=prior_draws)


def _standings_from_counts(counts: Mapping[GameKey, int], bots: Sequence[str], prior_draws: float) -> Standings:
    if not (math.isfinite(prior_draws) and prior_draws > 0):
        raise ValueError(f"prior_draws must be a positive number, got {prior_draws}; the default 1 is usual")
    names = list(bots)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"bot {name!r} is listed twice in the field; give every bot a unique name")
        seen.add(name)
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
    for (black, white, result, termination), count in counts.items():
        n_games += count
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
    ratings = _fit_elo(played, cross, prior_draws)

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
    )


def _rank_key(row: dict[str, Any]) -> tuple[float, float, str]:
    # Elo is compared to 1e-6 so that float noise between equal records cannot decide a rank.
    elo = row["elo"]
    return (-row["points"], -round(elo, 6) if elo is not None else math.inf, row["name"])


def _fit_elo(
    played: list[str], cross: dict[str, dict[str, list[float]]], prior_draws: float
) -> dict[str, tuple[float, float]]:
    """name -> (Elo relative to the mean of `played`, 95% margin), by maximum a posteriori."""
    m = len(played)
    if m == 0:
        return {}
    pairs = [
        (i, j, cross[played[i]][played[j]][0], cross[played[i]][played[j]][1])
        for i in range(m)
        for j in range(i + 1, m)
        if cross[played[i]][played[j]][0]
    ]
    rating = [0.0] * m
    objective = _log_posterior(rating, pairs, prior_draws)
    for _ in range(_MAX_NEWTON_STEPS):
        gradient, hessian = _gradient_and_information(rating, pairs, prior_draws)
        step = _solve(_cholesky(hessian), gradient)
        # Damped Newton: the log posterior is strictly concave, so halving the step always ends in an ascent.
        scale = 1.0
        while True:
            trial = [r + scale * s for r, s in zip(rating, step, strict=True)]
            trial_objective = _log_posterior(trial, pairs, prior_draws)
            if trial_objective >= objective or scale < 1e-6:
                break
            scale /= 2
        rating, objective = trial, trial_objective
        if max(abs(scale * s) for s in step) < 1e-9:
            break
    else:  # pragma: no cover - a strictly concave smooth objective converges long before this
        raise RuntimeError(f"the Elo fit did not converge in {_MAX_NEWTON_STEPS} Newton steps")

    _, information = _gradient_and_information(rating, pairs, prior_draws)
    factor = _cholesky(information)
    covariance = [_solve(factor, [1.0 if r == c else 0.0 for r in range(m)]) for c in range(m)]
    # Covariance of (R_i - mean R): C Σ C with C = I - 11ᵀ/m, taken on the diagonal.
    row_means = [sum(row) / m for row in covariance]
    grand_mean = sum(row_means) / m
    mean_rating = sum(rating) / m
    fitted: dict[str, tuple[float, float]] = {}
    for i, name in enumerate(played):
        variance = max(covariance[i][i] - 2 * row_means[i] + grand_mean, 0.0)
        fitted[name] = (rating[i] - mean_rating, _Z95 * math.sqrt(variance))
    return fitted


Pair = tuple[int, int, float, float]  # (i, j, games between them, points of i)


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _log_posterior(rating: Sequence[float], pairs: Iterable[Pair], prior_draws: float) -> float:
    """Log likelihood of the games plus the phantom draws, for ratings in Elo (phantom at 0)."""
    total = 0.0
    for i, j, n, s in pairs:
        x = _K * (rating[i] - rating[j])
        total += s * _log_sigmoid(x) + (n - s) * _log_sigmoid(-x)
    for r in rating:
        total += prior_draws * 0.5 * (_log_sigmoid(_K * r) + _log_sigmoid(-_K * r))
    return total


def _gradient_and_information(
    rating: Sequence[float], pairs: Iterable[Pair], prior_draws: float
) -> tuple[list[float], list[list[float]]]:
    """The gradient of the log posterior and minus its Hessian, both in Elo units."""
    m = len(rating)
    gradient = [0.0] * m
    information = [[0.0] * m for _ in range(m)]
    for i, j, n, s in pairs:
        p = _sigmoid(_K * (rating[i] - rating[j]))
        g = _K * (s - n * p)
        gradient[i] += g
        gradient[j] -= g
        h = _K * _K * n * p * (1.0 - p)
        information[i][i] += h
        information[j][j] += h
        information[i][j] -= h
        information[j][i] -= h
    for i, r in enumerate(rating):
        q = _sigmoid(_K * r)
        gradient[i] += _K * prior_draws * (0.5 - q)
        information[i][i] += _K * _K * prior_draws * q * (1.0 - q)
    return gradient, information


def _cholesky(matrix: list[list[float]]) -> list[list[float]]:
    """Lower-triangular L with L Lᵀ = matrix (symmetric positive definite: the prior guarantees it)."""
    m = len(matrix)
    lower = [[0.0] * m for _ in range(m)]
    for i in range(m):
        for j in range(i + 1):
            acc = matrix[i][j] - sum(lower[i][k] * lower[j][k] for k in range(j))
            if i == j:
                if acc <= 0:
                    raise ArithmeticError("the Elo information matrix is not positive definite")
                lower[i][i] = math.sqrt(acc)
            else:
                lower[i][j] = acc / lower[j][j]
    return lower


def _solve(lower: list[list[float]], rhs: Sequence[float]) -> list[float]:
    """x with L Lᵀ x = rhs."""
    m = len(rhs)
    y = [0.0] * m
    for i in range(m):
        y[i] = (rhs[i] - sum(lower[i][k] * y[k] for k in range(i))) / lower[i][i]
    x = [0.0] * m
    for i in reversed(range(m)):
        x[i] = (y[i] - sum(lower[k][i] * x[k] for k in range(i + 1, m))) / lower[i][i]
    return x


# --- rendering ------------------------------------------------------------------------------------------------


def _fmt_points(points: float) -> str:
    return f"{points:g}" if points == int(points) else f"{points:.1f}"


def _fmt_elo(bot: BotStanding) -> str:
    if bot.elo is None or bot.elo_margin is None:
        return "-"
    rounded = round(bot.elo) or 0  # `or 0`: no "-0" for a rating a hair below zero
    return f"{rounded:+d} ± {bot.elo_margin:.0f}"


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
    header = ["#", "Bot", "Games", "W", "D", "L", "Points", "Score", "Elo", "Forfeit losses"]
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
            _fmt_elo(bot),
            _fmt_forfeits(bot),
            *([_fmt_cpu(bot)] if cpu else []),
        ]
        for bot in standings.bots
    ]
    left = {1, 9}  # name and forfeits read left to right; numbers line up on the right
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
    lines.append(_elo_note(standings))
    return "\n".join(lines) + "\n"


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


def _elo_note(standings: Standings) -> str:
    return (
        "Elo: relative to the field mean, ± the 95% margin; logistic maximum-likelihood fit with "
        f"{standings.elo_prior_draws:g} virtual draw(s) per bot against a 0-rated phantom."
    )


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
    lines = [
        *([f"# {_md_escape(standings.title)}", ""] if standings.title else []),
        "## Standings",
        "",
        "| # | Bot | Games | W | D | L | Points | Score | Elo | Forfeit losses | Off-turn CPU |",
        "|---:|:---|---:|---:|---:|---:|---:|---:|---:|:---|---:|",
    ]
    for bot in standings.bots:
        odds = "" if bot.time_control is None else f" [{_md_escape(bot.time_control)}]"  # its own time control
        lines.append(
            f"| {bot.rank} | {_md_escape(bot.name)}{odds}"
            f" | {bot.games} | {bot.wins} | {bot.draws} | {bot.losses} "
            f"| {_fmt_points(bot.points)} | {_fmt_score(bot)} | {_fmt_elo(bot)} | {_fmt_forfeits(bot)} "
            f"| {_fmt_cpu(bot)} |"
        )
    lines += ["", _totals_line(standings.totals), "", _elo_note(standings)]
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
                *(bot.losses_by_kind.get(kind, 0) for kind in kinds),
                "" if bot.off_turn_cpu_s is None else f"{bot.off_turn_cpu_s:.3f}",
            ]
        )
    return out.getvalue()


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
