"""How long `alternator report` takes, how big the page is, and how soon it is usable in a browser.

    python benchmarks/bench_report.py [--games 100 1000 10000] [--no-browser]

For each size, a round robin of four bots is synthesised with the rules engine (random legal games with
times, clocks, infos and one forfeit in ten; tests/report_games.py), not by running bots. Then:

    read        every record of games.jsonl read and validated through the one reader (referee.run.rundir), one at a
                time (baseline: bare json.loads of every line, GC paused as the report pauses it)
    summary     the records read again and counted: standings, crosstable, LOS, progress (Elo refitted at 40
                points), the head-to-head, the list of games
    page        the whole page built and written (read + summary + each game's compact line)
    size        the page's size, against games.jsonl's
    usable      headless Chromium: from navigation start to the page drawn and its script done, by the page's
                own clock (baseline `plain`: the load of a page of the same size that is only text, no script)
    open game   opening the last game in the viewer: its line decoded, replayed and drawn (in-page clock)

Chromium is /usr/bin/chromium (ALTERNATOR_CHROMIUM to change it); without it the browser figures are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from referee.outputs.report import REPORT_FILE, build_report, gc_paused, load_run, summary_data
from tests.report_games import synthesize_tournament

CHROMIUM = os.environ.get("ALTERNATOR_CHROMIUM", "/usr/bin/chromium")
# Times taken in the page (performance.now()), free of the driver's round trips.
OPEN_GAME = "async n => { const t = performance.now(); await openGame(n); return performance.now() - t; }"
LOADED = "() => performance.getEntriesByType('navigation')[0].loadEventEnd"


def timed(function: Callable[[], Any], rounds: int = 1) -> tuple[float, Any]:
    """The best wall time of `rounds` calls (seconds), and the last result."""
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def browser_figures(page_path: Path, games: int, rounds: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    baseline = page_path.with_name("baseline.html")
    baseline.write_text("<!DOCTYPE html><body data-ready=1><pre hidden>" + "x" * (page_path.stat().st_size - 60))
    usable, plain, opened = [], [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        for _ in range(rounds):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_path.as_uri(), wait_until="commit")
            page.wait_for_selector("body[data-ready]", timeout=120_000)
            usable.append(int(page.get_attribute("body", "data-ready") or 0) / 1000)  # the page's own clock
            opened.append(page.evaluate(OPEN_GAME, games) / 1000)
            page.close()
            page = browser.new_page()
            page.goto(baseline.as_uri(), wait_until="load")
            plain.append(page.evaluate(LOADED) / 1000)
            page.close()
        browser.close()
    return {"usable": min(usable), "plain": min(plain), "open": statistics.median(opened)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--rounds", type=int, default=3, help="best of this many runs for each figure")
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    browser = not args.no_browser and Path(CHROMIUM).exists()
    if not browser:
        print(f"(browser figures skipped: {'--no-browser' if args.no_browser else f'no Chromium at {CHROMIUM}'})")
    header = (
        f"{'games':>6} {'jsonl MB':>8} {'json.loads':>10} {'read':>7} {'summary':>8} {'page':>7} {'page MB':>8}"
        + (f" {'usable':>7} {'plain':>7} {'open game':>9}" if browser else "")
    )
    print(header)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as temp:
        for games in args.games:
            out = Path(temp) / f"t{games}"
            synthesize_tournament(out, games, seed=games)
            lines = (out / "games.jsonl").read_bytes().splitlines()
            with gc_paused():  # as load_run does
                t_json, _ = timed(lambda: [json.loads(line) for line in lines], args.rounds)  # noqa: B023
            t_read, _ = timed(lambda: sum(1 for _ in load_run(out).records()), args.rounds)  # noqa: B023
            t_summary, _ = timed(lambda: summary_data(load_run(out)), args.rounds)  # noqa: B023

            def whole(out: Path = out) -> int:
                page = build_report(load_run(out))
                (out / REPORT_FILE).write_text(page, encoding="utf-8")
                return len(page.encode())

            t_page, size = timed(whole, args.rounds)
            row = (
                f"{games:>6} {(out / 'games.jsonl').stat().st_size / 1e6:>8.2f} {t_json:>9.2f}s {t_read:>6.2f}s"
                f" {t_summary:>7.2f}s {t_page:>6.2f}s {size / 1e6:>8.2f}"
            )
            if browser:
                figures = browser_figures(out / REPORT_FILE, games, args.rounds)
                row += f" {figures['usable']:>6.2f}s {figures['plain']:>6.2f}s {figures['open'] * 1000:>7.0f}ms"
            print(row, flush=True)


if __name__ == "__main__":
    main()
