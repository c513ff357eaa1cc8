"""The statistics of a two-bot run for programs: the `HeadToHead` block and `match.json`.

A match is not a separate engine: `alternator match` runs a schedule of two bots through
`referee.run.runner` like any tournament. What is particular to two bots is the statistics testers read,
computed in `referee.stats.sprt` (pure) and published here as JSON: in `match.json` (`MatchSummary`, written by
`alternator match`) and in the standings of any two-bot tournament. Every figure is computed from the
games the run counted (see `referee.stats.sprt.count_in_order`), so it can be reproduced from the database.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from referee.outputs.files import write_text_atomic
from referee.record import GameSettings
from referee.stats.sprt import MatchStatistics
from referee.timing.latency import LatencySummary

SUMMARY_VERSION: Literal[2] = 2
SUMMARY_FILE = "match.json"

Ended = Literal["completed", "sprt", "interrupted", "error", "incomplete"]


def _clean(value: float | None, digits: int) -> float | None:
    """Rounded, and never -0.0 (which JSON readers print as a negative zero)."""
    return None if value is None else round(value, digits) + 0.0


class SprtSummary(BaseModel):
    """The sequential probability ratio test: GSPRT, logistic Elo, on the pentanomial (see referee/stats/sprt.py).

    `elo0` and `elo1` are the hypotheses tested, not measurements: the measured Elo is in `elo`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    elo0: float = Field(description="H0 (a hypothesis, not a measurement): the first bot is at most elo0 stronger.")
    elo1: float = Field(description="H1 (a hypothesis, not a measurement): the first bot is elo1 Elo stronger.")
    alpha: float = Field(description="The chance of accepting H1 when H0 holds.")
    beta: float = Field(description="The chance of accepting H0 when H1 holds.")
    llr: float = Field(description="The log-likelihood ratio of H1 against H0 over the counted game pairs.")
    lower_bound: float = Field(description="ln(beta / (1 - alpha)): H0 is accepted at or below it.")
    upper_bound: float = Field(description="ln((1 - beta) / alpha): H1 is accepted at or above it.")
    verdict: Literal["H0", "H1"] | None = Field(description="The hypothesis accepted, or null when undecided.")


class HeadToHead(BaseModel):
    """The first bot against the second, in the idiom of cutechess and fastchess."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: str = Field(description="The bot the figures are for (Black in the first game of every pair).")
    second: str = Field(description="Its opponent.")
    games: int = Field(ge=0, description="Scored games counted.")
    wins: int = Field(ge=0, description="Games the first bot won.")
    draws: int = Field(ge=0)
    losses: int = Field(ge=0, description="Games the first bot lost.")
    score: float | None = Field(description="The first bot's points per game, 0 to 1 (null: no games).")
    pentanomial: list[int] = Field(
        min_length=5,
        max_length=5,
        description="Finished game pairs (one opening, colours swapped) in which the first bot scored 0, 1/2, 1,"
        " 3/2 and 2 points.",
    )
    elo: float | None = Field(
        description="Elo estimate from the pairs' mean score, -400 log10(1/s - 1) (null at a 0 or 1 score)."
    )
    elo_lower: float | None = Field(description="Lower end of the 95% interval of `elo` (null: unbounded).")
    elo_upper: float | None = Field(description="Upper end of the 95% interval of `elo` (null: unbounded).")
    elo_margin: float | None = Field(description="Half the width of the 95% interval (null: unbounded).")
    nelo: float | None = Field(
        description="Normalized Elo from the pentanomial, as fishtest and fastchess compute it (null: no spread)."
    )
    nelo_margin: float | None = Field(description="The 95% margin of `nelo`.")
    los: float | None = Field(description="Likelihood of superiority of the first bot, 0 to 1 (pentanomial).")
    draw_ratio: float | None = Field(description="Drawn games over games.")
    llr: float | None = Field(description="The SPRT's log-likelihood ratio (null: no SPRT).")
    sprt: SprtSummary | None = Field(description="The SPRT, when the run has one.")


def head_to_head(first: str, second: str, stats: MatchStatistics) -> HeadToHead:
    """The JSON form of `stats`."""
    estimate = stats.elo
    sprt = None
    if stats.sprt is not None:
        p = stats.sprt.parameters
        sprt = SprtSummary(
            elo0=p.elo0,
            elo1=p.elo1,
            alpha=p.alpha,
            beta=p.beta,
            llr=_clean(stats.sprt.llr, 4) or 0.0,
            lower_bound=_clean(p.lower_bound, 4) or 0.0,
            upper_bound=_clean(p.upper_bound, 4) or 0.0,
            verdict=None if stats.sprt.verdict is None else stats.sprt.verdict.value,
        )
    return HeadToHead(
        first=first,
        second=second,
        games=stats.games,
        wins=stats.wins,
        draws=stats.draws,
        losses=stats.losses,
        score=_clean(stats.score, 6),
        pentanomial=list(stats.pairs),
        elo=_clean(estimate.elo, 2),
        elo_lower=_clean(estimate.lower, 2),
        elo_upper=_clean(estimate.upper, 2),
        elo_margin=_clean(estimate.margin, 2),
        nelo=_clean(stats.nelo[0], 2) if stats.nelo else None,
        nelo_margin=_clean(stats.nelo[1], 2) if stats.nelo else None,
        los=_clean(stats.los, 6),
        draw_ratio=_clean(stats.draw_ratio, 6),
        llr=sprt.llr if sprt is not None else None,
        sprt=sprt,
    )


class MatchSummary(BaseModel):
    """match.json in a match's output directory: who played, how it ended, and the statistics."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary_version: Literal[2] = Field(description="The version of this format.")
    first: str = Field(description="The first bot (Black in odd games): the one the statistics are for.")
    second: str = Field(description="The second bot (Black in even games).")
    settings: GameSettings = Field(
        description="The settings of every game; `opening` is empty (each game's opening is in its record)."
    )
    openings: dict[str, Any] = Field(
        description="How the openings were chosen: {plies, seed} (random; plies 0: the empty board), {moves}"
        " (one fixed opening) or {file_openings, file_sha256} (an openings file)."
    )
    max_games: int = Field(ge=1, description="The games scheduled (--games): the most the match plays.")
    ended: Ended = Field(
        description="completed: every game was played; sprt: the SPRT reached a verdict first; interrupted:"
        " stopped by a signal (run the same command to resume); error: the run could not go on; incomplete:"
        " games are left to play (run the same command again)."
    )
    los: float | None = Field(description="The likelihood of superiority (the same as statistics.los).")
    nelo: float | None = Field(description="The normalized Elo (the same as statistics.nelo).")
    llr: float | None = Field(description="The SPRT's LLR, null without an SPRT (the same as statistics.llr).")
    statistics: HeadToHead
    void_games: int = Field(ge=0, description="Void games ever recorded (the referee's failures, played again).")
    host_wait_s: float = Field(
        0.0, ge=0, description="This run's time paused for a busy host (it plays fewer games at once, then pauses)."
    )
    off_turn_cpu_s: dict[str, float] = Field(
        default_factory=dict,
        description="Per bot: CPU seconds all its processes used during its opponent's turns (pondering, or taking"
        " the opponent's CPU), over the games that measured it.",
    )
    games_file: str = Field(
        description="The records of the counted games, one JSON line each, in the order they finished (commit order)."
    )
    latency: LatencySummary | None = Field(
        default=None,
        description="The referee's measured lateness per move over this run's games (p50, p99, max) and the games"
        " voided because the host was late, with a warning when they are more than a few percent.",
    )
    started_at: datetime = Field(description="When this run (the last resume) started, with its time zone.")
    finished_at: datetime = Field(description="When it ended, with its time zone.")


def write_summary(summary: MatchSummary, out_dir: Path) -> Path:
    """Write `match.json` into `out_dir` (OSError when it cannot be written)."""
    path = out_dir / SUMMARY_FILE
    write_text_atomic(path, summary.model_dump_json(indent=2) + "\n")
    return path


def match_summary_schema() -> dict[str, Any]:
    """The published JSON Schema of match.json (`referee/schema/match_summary.json`)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Alternator match summary v{SUMMARY_VERSION}",
        "description": (
            "match.json in the output directory of `alternator match`: the bots, the settings and openings, how"
            " the match ended, and the statistics: score, pentanomial, Elo, nElo, LOS, draw ratio and the SPRT."
        ),
        **{k: v for k, v in MatchSummary.model_json_schema().items() if k not in ("title", "description")},
    }
