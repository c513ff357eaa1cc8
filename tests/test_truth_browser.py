"""One truth for every reader, in a real browser: an SPRT run with a game abandoned at its verdict shows the same
figures on the terminal, in match.json, in the report and on the live page; a followed live game shows its result.

Skipped, with the reason, where Chromium or Playwright is missing (as tests/test_report_browser.py).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import test_report_browser as shared
from tests.report_games import random_game, synthesize_tournament
from tests.test_report_browser import feed, free_port

browser = shared.browser  # the fixtures of the report's browser tests: one Chromium per module
page = shared.page


@dataclass
class SprtRun:
    out: Path
    terminal: list[str]  # the statistics lines and the verdict the run printed at its end
    match: dict[str, Any]  # match.json
    abandoned: int  # games in progress at the verdict, stopped and not scored


def run_sprt(out: Path, seed: int) -> SprtRun:
    events = out.with_suffix(".events")
    argv = [
        sys.executable, "-m", "referee", "match", "--black", "greedy", "--white", "random", "--size", "4x4",
        "--tc", "5+0.05", "--openings-plies", "2", "--openings-seed", str(seed), "--sprt", "elo0=0", "elo1=200",
        "alpha=0.1", "beta=0.1", "--games", "40", "--concurrency", "2", "--out", str(out), "--events", str(events),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("results:")
    terminal = [line.strip() for line in lines[at + 1 : at + 6]]
    assert terminal[-1].startswith("SPRT: "), terminal
    kinds = [json.loads(line) for line in events.read_text().splitlines()]
    started = {e["game_id"] for e in kinds if e["type"] == "game_started"}
    finished = {e["game_id"] for e in kinds if e["type"] == "game_finished"}
    return SprtRun(out, terminal, json.loads((out / "match.json").read_text()), len(started - finished))


@pytest.fixture(scope="module")
def sprt_run(tmp_path_factory: pytest.TempPathFactory) -> SprtRun:
    """A real SPRT match at concurrency 2 that ended with a game in progress (abandoned, not scored)."""
    base = tmp_path_factory.mktemp("sprt")
    for seed in range(1, 6):
        run = run_sprt(base / f"m{seed}", seed)
        if run.abandoned:
            return run
    pytest.fail("five SPRT runs at concurrency 2 ended without a game in progress at the verdict")


def page_figures(tab: Any) -> tuple[dict[str, Any], list[str], str]:
    """The head-to-head as the page shows it: each figure's value, the statistics lines and the verdict."""
    tab.wait_for_selector("#head-to-head [data-figure]")
    values = tab.eval_on_selector_all(
        "#head-to-head [data-figure]", "els => els.map(e => [e.dataset.figure, e.dataset.value])"
    )
    lines = tab.text_content("#head-to-head [data-lines]").split("\n")
    return {name: json.loads(value) for name, value in values}, lines, tab.text_content("#head-to-head [data-verdict]")


def expected_figures(match: dict[str, Any]) -> dict[str, Any]:
    h = match["statistics"]
    return {
        "score": [h["wins"], h["losses"], h["draws"], h["score"], h["games"]],
        "elo": [h["elo"], h["elo_margin"]],
        "nelo": [h["nelo"], h["nelo_margin"]],
        "los": h["los"],
        "drawRatio": h["draw_ratio"],
        "ptnml": h["pentanomial"],
        "llr": [h["sprt"]["llr"], h["sprt"]["lower_bound"], h["sprt"]["upper_bound"]],
        "verdict": h["sprt"]["verdict"],
    }


def test_the_report_shows_the_figures_of_match_json_and_the_terminal(page: Any, sprt_run: SprtRun) -> None:
    assert sprt_run.match["ended"] == "sprt" and sprt_run.abandoned >= 1
    page.goto((sprt_run.out / "report.html").as_uri())
    figures, lines, verdict = page_figures(page)
    assert figures == expected_figures(sprt_run.match)
    assert lines == sprt_run.terminal[:4] and verdict == sprt_run.terminal[4]
    # The LLR curve ends where the runner's counting ended.
    curve = page.evaluate("() => JSON.parse(document.getElementById('summary').textContent).headToHead.llrCurve")
    assert curve[-1] == sprt_run.match["statistics"]["sprt"]["llr"]
    assert len(curve) == sum(sprt_run.match["statistics"]["pentanomial"])
    assert page.locator("[id='games']").count() == 0 and page.locator("#game-data").count() == 1


@pytest.fixture
def served(sprt_run: SprtRun) -> Iterator[str]:
    url, process = start_serve(sprt_run.out)
    try:
        yield url
    finally:
        stop(process)


def start_serve(out: Path) -> tuple[str, subprocess.Popen[str]]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "serve", str(out), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert f"127.0.0.1:{port}" in line, line
    return f"http://127.0.0.1:{port}/", process


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_the_live_page_shows_the_figures_of_match_json_and_the_terminal(
    page: Any, sprt_run: SprtRun, served: str
) -> None:
    page.goto(served)
    page.wait_for_selector("body[data-ready]")
    figures, lines, verdict = page_figures(page)
    assert figures == expected_figures(sprt_run.match)
    assert lines == sprt_run.terminal[:4] and verdict == sprt_run.terminal[4]
    assert page.get_attribute("[data-runstate]", "data-runstate") == "finished"
    assert page.locator(".livedot").count() == 0


def test_a_followed_live_game_shows_its_result_at_its_end(page: Any, tmp_path: Path) -> None:
    out = tmp_path / "live"
    synthesize_tournament(out, 4, seed=21)
    feed(out, {"type": "run_started", "kind": "tournament"})
    url, process = start_serve(out)
    try:
        page.clock.install()  # the page's timers, running in step with this clock until fast-forwarded below
        page.goto(url)
        page.wait_for_selector("body[data-ready]")
        assert page.get_attribute("[data-runstate]", "data-runstate") == "running"
        record = random_game(5, "alpha", "beta", random.Random(5))
        now = round(time.time() * 1000)
        feed(out, {"type": "game_started", "id": record.game_id, "n": 5, "b": "alpha", "w": "beta", "W": 8, "H": 8,
                   "k": 3.5, "tc": "10+0.1", "base": 10000, "o": "", "clock": True, "at": now})  # fmt: skip
        for move in record.moves[:6]:
            feed(out, {"type": "move", "id": record.game_id, "move": move.move, "color": str(move.color),
                       "t": round(move.elapsed_ms * 10), "clock": move.clock_ms, "info": None, "count": 0,
                       "at": now})  # fmt: skip
        card = page.locator(f'.livecard[data-live="{record.game_id}"]')
        page.wait_for_function(
            "id => document.querySelector(`.livecard[data-live='${id}']`)?.textContent.includes('ply 6')",
            arg=record.game_id,
        )
        assert card.text_content().startswith("#5 alpha vs beta")
        card.click()
        page.wait_for_selector("#viewer .viewer")
        assert page.text_content("#viewer .vtitle").startswith("#5 alpha vs beta")
        # The side to move (Black after six plies) is marked and its clock counts down.
        assert page.locator("#viewer .player.black.tomove").count() == 1
        first = page.text_content('#viewer [data-clock="black"]')
        page.wait_for_function(
            "text => document.querySelector('#viewer [data-clock=\"black\"]').textContent !== text", arg=first
        )
        # It ends: the viewer shows the result and the reason, then leaves it (no other game: the standings).
        feed(out, {"type": "game_finished", "id": record.game_id, "r": "0-1", "x": "time",
                   "why": "black (alpha) took 10.2s, its clock had 10s", "scored": True})  # fmt: skip
        page.wait_for_selector("#viewer .endinfo:not([hidden])")
        assert "0-1 White wins" in page.text_content("#viewer .endinfo .result")
        assert "lost on time" in page.text_content("#viewer .endinfo .result")
        assert page.text_content("#viewer [data-why]") == "black (alpha) took 10.2s, its clock had 10s"
        assert not page.evaluate("() => document.querySelector('#viewer').hidden")
        page.clock.fast_forward(4000)  # the ended game's result stays on screen for 4 s (report.js FOLLOW_NEXT_MS)
        page.wait_for_function("() => document.querySelector('#viewer').hidden", timeout=15_000)
        # The run ends: the page says so.
        feed(out, {"type": "run_finished", "ended": "completed"})
        page.wait_for_selector("[data-runstate='finished']")
        assert page.locator(".livedot").count() == 0
    finally:
        stop(process)


def test_autoplay_plays_the_moves(page: Any, tmp_path: Path) -> None:
    from referee.outputs.report import write_report

    synthesize_tournament(tmp_path, 2, seed=3)
    write_report(tmp_path)
    page.clock.install()
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_selector("body[data-ready]")
    page.locator("tr.game").first.click()
    page.wait_for_selector("#viewer .viewer")
    page.locator("#viewer [data-autoplay]").click()  # at the end: it starts again from the first move
    assert page.get_attribute("#viewer [data-autoplay]", "data-autoplay") == "on"
    page.clock.run_for(1200)  # two moves at 0.6 s a move (viewer.js AUTOPLAY_MS), on the page's clock
    page.wait_for_function("() => Number(document.querySelector('#viewer').dataset.ply) >= 2", timeout=10_000)
    page.keyboard.press(" ")
    assert page.get_attribute("#viewer [data-autoplay]", "data-autoplay") == "off"
