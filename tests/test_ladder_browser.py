"""The ladder's leaderboard and entry pages in headless Chromium, updating live while a real ladder plays.

Skipped, with the reason, where Chromium or Playwright is missing (as tests/test_report_browser.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import test_report_browser as shared
from tests.test_ladder import RunningLadder, alternator, ladders

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
