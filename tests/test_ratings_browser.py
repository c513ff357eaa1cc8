"""The ratings on every screen, in a real browser: an anchored tournament shows the same Elo, margins, per-colour
W-D-L and notes on the fit (first move, draws) on the terminal, in standings.json, in the report and on the live
page; `serve --anchor` puts the page on another bot's scale.

Skipped, with the reason, where Chromium or Playwright is missing (as tests/test_report_browser.py).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.stats.standings import BotStanding, ColourRecord, Standings, elo_notes
from tests import test_report_browser as shared
from tests.test_truth_browser import start_serve, stop

browser = shared.browser  # one Chromium per module
page = shared.page


@dataclass
class Tournament:
    out: Path
    terminal: str
    standings: Standings


@pytest.fixture(scope="module")
def tournament(tmp_path_factory: pytest.TempPathFactory) -> Tournament:
    """A real tournament of three bots on a 4x4 board with komi 0 (so games can be drawn), anchored at greedy=1500."""
    out = tmp_path_factory.mktemp("rated") / "cup"
    argv = [
        sys.executable, "-m", "referee", "tournament", "--bot", "random", "--bot", "greedy", "--bot", "again=random",
        "--games", "4", "--size", "4", "--komi", "0", "--tc", "5+0.05", "--anchor", "greedy=1500", "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    standings = Standings.model_validate_json((out / "standings.json").read_text(encoding="utf-8"))
    return Tournament(out, done.stdout, standings)


def colour(record: ColourRecord | None) -> str:
    assert record is not None
    return f"{record.wins}-{record.draws}-{record.losses}"


def shown_rows(tab: Any) -> dict[str, list[str]]:
    """Each bot's cells in the page's standings table: Elo, margin, as Black, as White."""
    tab.wait_for_selector("table.standings tbody tr")
    cells = tab.eval_on_selector_all(
        "table.standings tbody tr",
        "rows => rows.map(r => [r.dataset.bot, [...r.children].slice(8, 12).map(c => c.textContent)])",
    )
    return dict(cells)


def expected_row(bot: BotStanding) -> list[str]:
    assert bot.elo is not None and bot.elo_margin is not None
    return [f"{round(bot.elo, 1):.1f}", f"{round(bot.elo_margin, 1):.1f}", colour(bot.as_black), colour(bot.as_white)]


def check_page(tab: Any, standings: Standings) -> None:
    assert shown_rows(tab) == {bot.name: expected_row(bot) for bot in standings.bots}
    notes = tab.eval_on_selector_all("#standings .elonote", "ps => ps.map(p => p.textContent)")
    assert notes == elo_notes(standings)


def test_the_terminal_and_standings_json_agree(tournament: Tournament) -> None:
    s = tournament.standings
    assert s.anchor is not None and (s.anchor.name, s.anchor.rating) == ("greedy", 1500)
    assert s.first_move_elo is not None and s.draw_nu is not None
    rows = {bot.name: bot for bot in s.bots}
    assert rows["greedy"].elo == 1500 and rows["greedy"].elo_margin == 0
    for bot in s.bots:
        assert bot.as_black is not None and bot.as_white is not None
        assert bot.as_black.games + bot.as_white.games == bot.games == 8
        line = next(line for line in tournament.terminal.splitlines() if f"  {bot.name}  " in line)
        assert bot.elo is not None and bot.elo_margin is not None
        assert f"{round(bot.elo)} ± {bot.elo_margin:.0f}" in line
        assert f"{colour(bot.as_black)}  " in line and colour(bot.as_white) in line
    for note in elo_notes(s):
        assert note in tournament.terminal
    assert "anchored: greedy = 1500" in tournament.terminal


def test_the_report_shows_the_standings_figures(page: Any, tournament: Tournament) -> None:
    page.goto((tournament.out / "report.html").as_uri())
    check_page(page, tournament.standings)


def test_the_live_page_shows_them_and_serve_anchor_changes_the_scale(page: Any, tournament: Tournament) -> None:
    url, process = start_serve(tournament.out)
    try:
        page.goto(url)
        page.wait_for_selector("body[data-ready]")
        check_page(page, tournament.standings)
    finally:
        stop(process)
    port_process = subprocess.Popen(
        [sys.executable, "-m", "referee", "serve", str(tournament.out), "--port", "0", "--anchor", "random=1000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert port_process.stdout is not None
        line = port_process.stdout.readline()
        address = line.split(" at ")[1].split("/ ")[0]
        page.goto(address + "/")
        page.wait_for_selector("body[data-ready]")
        rows = shown_rows(page)
        assert rows["random"][:2] == ["1000.0", "0.0"]
        # The same fit on another scale: the differences stay.
        by_name = {bot.name: bot.elo or 0.0 for bot in tournament.standings.bots}
        shift = 1000 - by_name["random"]
        assert float(rows["greedy"][0]) == pytest.approx(by_name["greedy"] + shift, abs=0.11)
    finally:
        stop(port_process)
