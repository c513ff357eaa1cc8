"""The ladder's leaderboard and entry pages in headless Chromium, updating live while a real ladder plays.

Skipped, with the reason, where Chromium or Playwright is missing (as tests/test_report_browser.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import test_report_browser as shared
from tests.test_ladder import TESTBOT, RunningLadder, alternator, ladders

browser = shared.browser  # one Chromium per module
page = shared.page
__all__ = ["ladders"]  # the fixture, used by name


def cell(tab: Any, name: str, column: str) -> str:
    text: str = tab.locator(f"#leaderboard tr[data-name='{name}'] td.{column}").inner_text()
    return text


def test_the_leaderboard_and_an_entry_page_update_live(
    page: Any, tmp_path: Path, ladders: Callable[..., RunningLadder]
) -> None:
    out = tmp_path / "ladder"
    alternator("ladder", str(out), "add", "random", "random")
    alternator("ladder", str(out), "add", "greedy", "greedy")
    ladder = ladders(out, serve=True)
    page.goto(f"{ladder.url}/")
    page.wait_for_selector("#leaderboard tr[data-name='greedy']")
    seen = int(cell(page, "greedy", "games"))
    # Without a reload: the table follows the games.
    page.wait_for_function(
        f"() => Number(document.querySelector(\"#leaderboard tr[data-name='greedy'] td.games\").textContent) > {seen}",
        timeout=60_000,
    )
    assert page.locator("#leaderboard tr").count() == 3  # a header and two entries
    assert cell(page, "greedy", "uncertainty") and cell(page, "greedy", "rating")

    # An organiser's change shows without a reload.
    alternator("ladder", str(out), "suspend", "random", "looking into it")
    page.wait_for_function(
        "() => document.querySelector(\"#leaderboard tr[data-name='random'] td.status\").textContent === 'suspended'",
        timeout=30_000,
    )
    alternator("ladder", str(out), "enable", "random")
    alternator("ladder", str(out), "update", "random", "random")

    # The entry page: versions, the rating history chart, recent games; and it follows the games too.
    page.click("#leaderboard tr[data-name='random'] a")
    page.wait_for_url(f"{ladder.url}/entry/random")
    page.wait_for_function("() => document.querySelectorAll('#versions tr').length === 3", timeout=30_000)
    page.wait_for_selector("#history polyline[data-version='1']")
    page.wait_for_selector("#history polyline[data-version='2']", timeout=60_000)
    assert page.locator("#games tr").count() > 1
    # A game opens in the arena's viewer.
    page.click("#games tr:nth-child(2) a")
    page.wait_for_selector("#game-data", state="attached")
    assert ladder.stop() == 130


def test_games_in_progress_are_followed_move_by_move(
    page: Any, tmp_path: Path, ladders: Callable[..., RunningLadder]
) -> None:
    """The leaderboard and an entry's page show the games in progress, each board growing move by move from the
    live feed without a reload; a click opens the game in the arena's viewer, which follows it too."""
    out = tmp_path / "ladder"
    slow = f"python3 {TESTBOT} slow 250"  # a quarter of a second a move: a game lasts seconds
    alternator("ladder", str(out), "add", "slowa", slow)
    alternator("ladder", str(out), "add", "slowb", slow)
    ladder = ladders(out, "--movetime", "3", "--openings-plies", "0", serve=True)
    page.goto(f"{ladder.url}/")
    card = page.wait_for_selector(".livecard[data-plies]:not([data-plies='0'])", timeout=60_000)
    game_id = card.get_attribute("data-live")
    plies = int(card.get_attribute("data-plies"))
    assert game_id and game_id.startswith("ladder-")
    # The same game, more moves, no reload; its board shows them (pits, the last move marked).
    page.wait_for_function(
        f"() => {{ const c = document.querySelector(\".livecard[data-live='{game_id}']\");"
        f" return c !== null && Number(c.dataset.plies) > {plies}; }}",
        timeout=30_000,
    )
    assert page.locator(f".livecard[data-live='{game_id}'] svg.board .pit").count() >= 1
    # Opened in the viewer: it follows the game as it goes on.
    page.click(f".livecard[data-live='{game_id}']")
    page.wait_for_selector("#viewer:not([hidden]) svg.board")
    shown = page.locator("#viewer svg.board .pit").count()
    page.wait_for_function(
        f"() => document.querySelectorAll('#viewer svg.board .pit').length > {shown}", timeout=30_000
    )
    # An entry's page shows its own games in progress, live as well.
    page.goto(f"{ladder.url}/entry/slowa")
    card = page.wait_for_selector(".livecard[data-plies]:not([data-plies='0'])", timeout=60_000)
    live_id = card.get_attribute("data-live")
    plies = int(card.get_attribute("data-plies"))
    page.wait_for_function(
        f"() => {{ const c = document.querySelector(\".livecard[data-live='{live_id}']\");"
        f" return c === null || Number(c.dataset.plies) > {plies}; }}",
        timeout=30_000,
    )
    assert "slowa.v1" in page.locator(".livecard .livehead").first.inner_text()
    # Faults and stderr logs: not for the public; shown once the organiser's token is given on the page.
    page.wait_for_selector("#private-note")
    assert page.locator("#faults").count() == 0
    organiser = alternator("ladder", str(out), "token", "add", "--organiser").stdout.splitlines()[-1]
    page.fill("#token", organiser)
    page.click("#token-show")
    page.wait_for_selector("#faults", state="attached")
    page.wait_for_selector("#logs", state="attached")
    assert page.locator("#private-note").count() == 0
    assert ladder.stop() == 130
