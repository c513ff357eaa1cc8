"""What the terminal says: the SPRT's verdict for every kind of bounds, the reporting interval, --quiet."""

from __future__ import annotations

import pytest

from referee.outputs.display import format_verdict, verdict_claim
from referee.stats.head_to_head import SprtSummary


def sprt(elo0: float, elo1: float, verdict: str | None) -> SprtSummary:
    return SprtSummary.model_validate(
        {
            "elo0": elo0,
            "elo1": elo1,
            "alpha": 0.05,
            "beta": 0.05,
            "llr": 0.0,
            "lower_bound": -2.94,
            "upper_bound": 2.94,
            "verdict": verdict,
        }
    )


@pytest.mark.parametrize(
    ("elo0", "elo1", "verdict", "claim"),
    [
        # a regression test: is the new version stronger?
        (0, 5, "H1", "new is stronger than base: nearer +5 Elo (H1) than 0 (H0)"),
        (0, 5, "H0", "new is not shown to be stronger than base: nearer 0 Elo (H0) than +5 (H1)"),
        # a non-regression test: is it not weaker by 20 Elo or more?
        (
            -20,
            0,
            "H1",
            "new is not weaker than base by 20 Elo or more (not weaker than -20 Elo): nearer 0 Elo (H1) than -20"
            " (H0); it is not shown to be stronger",
        ),
        (-20, 0, "H0", "new is weaker than base: nearer -20 Elo (H0) than 0 (H1)"),
        # symmetric bounds
        (-5, 5, "H1", "new is stronger than base: nearer +5 Elo (H1) than -5 (H0)"),
        (-5, 5, "H0", "new is weaker than base: nearer -5 Elo (H0) than +5 (H1)"),
    ],
)
def test_a_verdict_says_what_was_tested(elo0: float, elo1: float, verdict: str, claim: str) -> None:
    assert verdict_claim(sprt(elo0, elo1, verdict), "new", "base") == claim
    text = format_verdict(sprt(elo0, elo1, verdict), "new", "base", 1000)
    assert (
        text
        == f"SPRT: {verdict} accepted after 1000 games (H0: {elo0:+g} Elo, H1: {elo1:+g} Elo for new;".replace(
            "+0 Elo", "0 Elo"
        )
        + f" alpha 0.05, beta 0.05): {claim}"
    )


def test_a_non_regression_never_says_stronger() -> None:
    for verdict in ("H0", "H1"):
        assert "new is stronger" not in format_verdict(sprt(-20, 0, verdict), "new", "base", 10)


def test_no_verdict_says_what_to_do_for_how_the_run_ended() -> None:
    done = format_verdict(sprt(0, 5, None), "new", "base", 1000)
    assert "every game was played; raise --games" in done
    stopped = format_verdict(sprt(0, 5, None), "new", "base", 10, ended="interrupted")
    assert "goes on when the run is resumed" in stopped and "--games" not in stopped
    running = format_verdict(sprt(0, 5, None), "new", "base", 10, ended="running")
    assert running == "SPRT: no verdict yet after 10 games (H0: 0 Elo, H1: +5 Elo for new; alpha 0.05, beta 0.05)"


def synthetic_run(games: int, **options: object) -> list[str]:
    """The lines a RunDisplay prints for a two-bot run of `games` games (every pair 1-1, one forfeit)."""
    import io
    from datetime import UTC, datetime

    from protocol.messages import TimeControl
    from referee.outputs.display import RunDisplay
    from referee.outputs.events import GameFinished, RunStarted, StatisticsUpdated
    from referee.record import Termination
    from referee.stats.head_to_head import head_to_head
    from referee.stats.sprt import CountedGame, PairCounter, SprtParameters

    out = io.StringIO()
    display = RunDisplay(out, live=False, **options)  # type: ignore[arg-type]
    now = datetime.now(UTC)
    display(
        RunStarted(
            type="run_started",
            time=now,
            kind="match",
            format="round-robin",
            bots=["new", "base"],
            games_total=games,
            games_done=0,
            concurrency=2,
            out_dir="out",
            width=8,
            height=8,
            komi=3.5,
            time_control=TimeControl(base_ms=1000, increment_ms=10),
        )
    )
    counter = PairCounter(SprtParameters(elo0=-100, elo1=100))  # never decided by 1-1 pairs
    for number in range(1, games + 1):
        forfeit = number == 7
        display(
            GameFinished(
                type="game_finished",
                time=now,
                number=number,
                game_id=f"g{number:04d}",
                black="new",
                white="base",
                result="1-0" if number % 2 else "0-1",
                termination=Termination.TIME if forfeit else Termination.NORMAL,
                reason="lost on time" if forfeit else "two passes",
                moves=60,
                duration_s=0.1,
                scored=True,
                games_done=number,
                games_total=games,
            )
        )
        points = 1.0 if number % 2 else 0.0
        if counter.add(CountedGame(number, (number - 1) // 2, points)):
            statistics = head_to_head("new", "base", counter.statistics())
            display(StatisticsUpdated(type="statistics_updated", time=now, games_done=number, statistics=statistics))
    return out.getvalue().splitlines()


def test_a_long_run_prints_its_statistics_about_fifty_times() -> None:
    lines = synthetic_run(4000)
    blocks = [line for line in lines if line.startswith("  Score of new vs base")]
    assert len(blocks) == 50  # every 40 pairs
    assert len(lines) < 300, len(lines)
    assert any("lost on time" in line for line in lines)  # a forfeit is always shown
    assert sum(1 for line in lines if "two passes" in line) == 0  # no line per ordinary game in a long run


def test_report_every_and_quiet() -> None:
    every = synthetic_run(40, report_every=1)
    assert sum(1 for line in every if line.startswith("  Score of")) == 20
    assert sum(1 for line in every if "two passes" in line) == 39  # a short run: a line per game
    assert sum(1 for line in synthetic_run(40, report_every=5) if line.startswith("  Score of")) == 4
    quiet = synthetic_run(40, quiet=True)
    assert not any(line.startswith("  Score of") for line in quiet)
    assert [line for line in quiet if "game 7" in line]  # problems are still shown
    assert len(quiet) <= 3


def test_the_title_leads_the_first_line() -> None:
    assert synthetic_run(2, title="Nightly regression")[0].startswith("Nightly regression — match: new, base;")


def test_an_elo_without_spread_has_no_margin() -> None:
    from referee.outputs.display import format_elo
    from referee.stats.sprt import PENTANOMIAL_OUTCOMES, elo_estimate

    assert format_elo(elo_estimate((0, 0, 1, 0, 0), PENTANOMIAL_OUTCOMES)) == (
        "+0.0 (no margin yet: every pair scored the same)"
    )
