"""The report and the live view in a real browser: headless Chromium driven by Playwright.

Skipped, with the reason, where Chromium or Playwright is missing. Screenshots go to the test's
temporary directory (desktop and phone sizes).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.rules import Position
from referee.outputs.report import load_run, write_report
from referee.record import GameRecord
from tests.report_games import random_game, synthesize_stored_tournament, synthesize_tournament

CHROMIUM = os.environ.get("ALTERNATOR_CHROMIUM", "/usr/bin/chromium")
playwright_sync = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
)
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

DESKTOP = {"width": 1280, "height": 900}
NEXT = "next \u203a"  # the pager's button
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    yield page
    context.close()
    assert not errors, f"the page raised: {errors}"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[GameRecord]]:
    out = tmp_path_factory.mktemp("report")
    records = synthesize_tournament(out, 60, seed=11)
    write_report(out)
    return out, records


def engine_position(record: GameRecord, plies: int) -> Position:
    return Position.from_moves(
        record.all_moves()[:plies], record.settings.width, record.settings.height, record.settings.komi
    )


def board_dom(page: Any) -> dict[str, dict[str, str | None]]:
    """Every cell of the viewer's board as the DOM says it: kind, parent (pits), size and owner (roots)."""
    cells = page.eval_on_selector_all(
        "#viewer rect.cell",
        """els => els.map(e => [e.dataset.cell, e.dataset.kind, e.dataset.parent || null,
                              e.dataset.size || null, e.dataset.owner || null])""",
    )
    return {c[0]: {"kind": c[1], "parent": c[2], "size": c[3], "owner": c[4]} for c in cells}


def expected_board(position: Position) -> dict[str, dict[str, str | None]]:
    """The same from the rules engine."""
    from protocol.rules import Cell

    board: dict[str, dict[str, str | None]] = {}
    for rank in range(position.height):
        for file in range(position.width):
            cell = Cell(file, rank)
            if position.has_dot(cell):
                i = position.cell_index(cell)
                j = position.parent[i]
                board[str(cell)] = {
                    "kind": "pit",
                    "parent": str(Cell(j % position.width, j // position.width)),
                    "size": None,
                    "owner": None,
                }
            else:
                board[str(cell)] = {
                    "kind": "root",
                    "parent": None,
                    "size": str(position.tree_size(cell)),
                    "owner": str(cell.color).lower(),
                }
    return board


def open_game(page: Any, number: int) -> None:
    page.locator(f'tr.game[data-game="{number}"]').click()
    page.wait_for_selector("#viewer .viewer")


def shown_ply(page: Any) -> int:
    return int(page.get_attribute("#viewer", "data-ply"))


def test_the_report_makes_no_request_and_draws_the_engines_positions(
    page: Any, report: tuple[Path, list[GameRecord]], tmp_path: Path
) -> None:
    out, records = report
    url = (out / "report.html").as_uri()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    assert page.locator("table.standings tbody tr").count() == 4
    # Games of every kind: a normal one, and forfeits (the fault is marked on the scrub bar).
    normal = next(i for i, r in enumerate(records, 1) if r.termination == "normal")
    crash = next(i for i, r in enumerate(records, 1) if r.termination == "crash")
    for number in (normal, crash):
        record = records[number - 1]
        open_game(page, number)
        total = len(record.all_moves())
        assert shown_ply(page) == total  # a finished game opens at its end
        page.keyboard.press("Home")
        for plies in sorted({0, 1, 2, total // 3, total // 2, total - 1, total}):
            while shown_ply(page) < plies:
                page.keyboard.press("ArrowRight")
            position = engine_position(record, plies)
            assert board_dom(page) == expected_board(position), f"game {number} after {plies} plies"
            black, white = position.scores()
            assert page.text_content('#viewer [data-score="black"]') == str(black)
            assert float(page.text_content('#viewer [data-score="white"]')) == white + record.settings.komi
            # Stems in the drawing: one per pit, from the pit towards its parent.
            stems = page.eval_on_selector_all(
                "#viewer line.stem", "els => els.map(e => [e.dataset.from, e.dataset.to])"
            )
            pits = {c: v["parent"] for c, v in expected_board(position).items() if v["kind"] == "pit"}
            assert dict(stems) == pits
        if record.termination != "normal":
            assert page.locator("#viewer svg.track rect.fault").count() == 1
            assert "crash" in page.text_content("#viewer .endinfo")
            assert "<boom> & done" in page.text_content("#viewer pre.stderr")
        else:
            assert page.locator("#viewer svg.track rect.fault").count() == 0
        page.keyboard.press("Escape")
        assert page.locator("#viewer").is_hidden()
    assert requests == [url], f"the report made requests: {requests[1:]}"


def test_keyboard_scrub_bar_and_lead_changes(page: Any, report: tuple[Path, list[GameRecord]]) -> None:
    out, records = report
    page.goto((out / "report.html").as_uri())
    page.wait_for_selector("body[data-ready]")
    number = next(i for i, r in enumerate(records, 1) if r.termination == "normal")
    record = records[number - 1]
    total = len(record.all_moves())
    open_game(page, number)
    page.keyboard.press("Home")
    assert shown_ply(page) == 0
    page.keyboard.press("ArrowLeft")
    assert shown_ply(page) == 0
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert shown_ply(page) == 2
    page.keyboard.press("End")
    assert shown_ply(page) == total
    page.keyboard.press("ArrowLeft")
    assert shown_ply(page) == total - 1
    page.locator("#viewer .scrub-range").fill(str(total // 2))
    assert shown_ply(page) == total // 2
    # A click on the track jumps there: the middle of the bar is the middle of the game.
    box = page.locator("#viewer svg.track").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] / 2)
    assert abs(shown_ply(page) - total / 4) <= 1
    # Lead changes: where the sign of Black's margin (komi included) changes, as the engine counts it.
    position = Position(record.settings.width, record.settings.height, record.settings.komi)
    margins = [position.score_outcome().black_score - position.score_outcome().white_score]
    for move in record.all_moves():
        position.push(position.parse_move(move))
        outcome = position.score_outcome()
        margins.append(outcome.black_score - outcome.white_score)
    changes = [i for i in range(1, len(margins)) if (margins[i] > 0) != (margins[i - 1] > 0)]
    marked = page.eval_on_selector_all("#viewer svg.track line.lead-change", "els => els.map(e => +e.dataset.ply)")
    assert marked == changes
    # A move in the list jumps there too.
    page.locator('#viewer .movelist li[data-ply="3"]').click()
    assert shown_ply(page) == 3


def test_filters_and_screenshots(page: Any, report: tuple[Path, list[GameRecord]], tmp_path: Path) -> None:
    out, records = report
    page.goto((out / "report.html").as_uri())
    page.wait_for_selector("body[data-ready]")
    page.select_option('select[data-filter="termination"]', "crash")
    crashes = [i for i, r in enumerate(records, 1) if r.termination == "crash"]
    shown = page.eval_on_selector_all("tr.game", "els => els.map(e => +e.dataset.game)")
    assert shown == crashes
    page.select_option('select[data-filter="termination"]', "")
    page.select_option('select[data-filter="bot"]', "alpha")
    page.select_option('select[data-filter="result"]', "1-0")
    wanted = [i for i, r in enumerate(records, 1) if r.result == "1-0" and "alpha" in (r.black.name, r.white.name)]
    assert page.eval_on_selector_all("tr.game", "els => els.map(e => +e.dataset.game)") == wanted
    page.screenshot(path=str(tmp_path / "report-desktop.png"), full_page=True)
    open_game(page, wanted[0])
    page.keyboard.press("Home")
    for _ in range(12):
        page.keyboard.press("ArrowRight")
    page.screenshot(path=str(tmp_path / "viewer-desktop.png"))
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(tmp_path / "viewer-phone.png"))
    page.keyboard.press("Escape")
    page.screenshot(path=str(tmp_path / "report-phone.png"), full_page=True)
    for name in ("report-desktop", "viewer-desktop", "viewer-phone", "report-phone"):
        assert (tmp_path / f"{name}.png").stat().st_size > 5_000
    # The board fits the phone's width: no horizontal scrolling of the page.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    if os.environ.get("ALTERNATOR_SHOTS"):
        for shot in tmp_path.glob("*.png"):
            shutil.copy(shot, Path(os.environ["ALTERNATOR_SHOTS"]) / shot.name)


# --- the live view -----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real `alternator serve` process on a tournament directory with 4 finished games."""
    out = tmp_path / "live"
    synthesize_tournament(out, 4, seed=21)
    yield from serving(out)


def serving(out: Path) -> Generator[tuple[str, Path]]:
    """A real `alternator serve` process on `out`: its address, while it runs."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "serve", str(out), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert f"127.0.0.1:{port}" in line, line + (process.stderr.read() if process.stderr else "")
        yield f"http://127.0.0.1:{port}/", out
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        assert process.returncode == 0  # Ctrl-C stops it cleanly


def feed(out: Path, *events: dict[str, Any]) -> None:
    with (out / "live.jsonl").open("a") as file:
        for event in events:
            file.write(json.dumps(event) + "\n")


def test_the_live_page_follows_games_in_progress_and_finished(page: Any, served: tuple[str, Path]) -> None:
    import random

    url, out = served
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.wait_for_function("() => document.querySelectorAll('tr.game').length === 4")
    assert page.locator("#livegames .livecard").count() == 0
    # A game starts and its moves arrive: its board shows them.
    record = random_game(5, "alpha", "beta", random.Random(5))
    feed(
        out,
        {
            "type": "game_started",
            "id": record.game_id,
            "b": "alpha",
            "w": "beta",
            "W": 8,
            "H": 8,
            "k": 3.5,
            "base": 10000,
            "o": "",
            "clock": True,
        },
    )
    page.wait_for_selector(f'.livecard[data-live="{record.game_id}"]')
    for move in record.moves[:6]:
        feed(
            out,
            {
                "type": "move",
                "id": record.game_id,
                "move": move.move,
                "color": str(move.color),
                "t": round(move.elapsed_ms * 10),
                "clock": move.clock_ms,
                "info": None,
                "count": 0,
            },
        )
    page.wait_for_function(
        "id => document.querySelector(`.livecard[data-live='${id}']`).textContent.includes('ply 6')",
        arg=record.game_id,
    )
    # Follow it in the viewer: the next move shows at once.
    page.locator(f'.livecard[data-live="{record.game_id}"]').click()
    page.wait_for_selector("#viewer .viewer")
    assert shown_ply(page) == 6
    move = record.moves[6]
    feed(
        out,
        {
            "type": "move",
            "id": record.game_id,
            "move": move.move,
            "color": str(move.color),
            "t": 10,
            "clock": move.clock_ms,
            "info": {"depth": 4, "score": 1.5, "pv": ["a1a2"]},
            "count": 2,
        },
    )
    page.wait_for_function("() => document.querySelector('#viewer').dataset.ply === '7'")
    assert board_dom(page) == expected_board(engine_position(record, 7))
    assert "depth 4" in page.text_content("#viewer .moveinfo")
    page.keyboard.press("Escape")
    # It finishes: it leaves the games in progress, and the standings and the list take it in.
    feed(out, {"type": "game_finished", "id": record.game_id})
    with (out / "games.jsonl").open("a") as file:
        file.write(record.model_dump_json() + "\n")
    page.wait_for_function("() => document.querySelectorAll('tr.game').length === 5", timeout=60_000)
    page.wait_for_function("() => document.querySelectorAll('#livegames .livecard').length === 0", timeout=60_000)
    games = sum(
        int(page.text_content(f"table.standings tbody tr:nth-child({i}) td:nth-child(3)")) for i in (1, 2, 3, 4)
    )
    assert games == 2 * 5
    # The finished game opens from the server, with the engine's final scores.
    open_game(page, 5)
    assert shown_ply(page) == len(record.moves)
    assert float(page.text_content('#viewer [data-score="black"]')) == record.black_score
    assert load_run(out).count() == 5


def listed(page: Any) -> list[int]:
    return [int(n) for n in page.eval_on_selector_all("tr.game", "els => els.map(e => e.dataset.game)")]


def test_the_live_view_pages_the_games_from_the_server(page: Any, tmp_path: Path) -> None:
    from referee.run.store import DB_NAME, RunStore

    out = tmp_path / "paged"
    records = synthesize_stored_tournament(out, 240, seed=13, done=230)
    server = serving(out)
    url, _ = next(server)
    try:
        asked: list[str] = []
        page.on("request", lambda request: asked.append(request.url))
        page.goto(url)
        page.wait_for_selector("body[data-ready]")
        page.wait_for_selector('#gamelist [data-page="1"][data-total="230"]')
        assert listed(page) == list(range(1, 101))
        assert "230 of 240 games" in page.text_content("main")
        # The page holds no list of games: each page comes from the server, read from the run's database.
        assert page.evaluate("state.summary.games.length") == 0
        assert f"{url}api/games?offset=0&limit=100" in asked
        page.get_by_role("button", name=NEXT).click()
        page.wait_for_selector('#gamelist [data-page="2"]')
        assert listed(page) == list(range(101, 201))
        page.get_by_role("button", name=NEXT).click()
        page.wait_for_selector('#gamelist [data-page="3"]')
        assert listed(page) == list(range(201, 231))
        assert f"{url}api/games?offset=200&limit=100" in asked
        # Filters are applied by the server, over the whole run, from the first page again.
        page.select_option('select[data-filter="bot"]', "beta")
        page.select_option('select[data-filter="result"]', "0-1")
        wanted = [
            n for n, r in enumerate(records[:230], 1) if r.result == "0-1" and "beta" in (r.black.name, r.white.name)
        ]
        page.wait_for_selector(f'#gamelist [data-page="1"][data-total="{len(wanted)}"]')
        assert listed(page) == wanted[:100]
        assert any("bot=beta" in address and "result=0-1" in address for address in asked)
        # A game opened from the list comes from the server, whole.
        open_game(page, wanted[-1])
        assert shown_ply(page) == len(records[wanted[-1] - 1].moves)
        page.keyboard.press("Escape")
        # A game committed meanwhile: the count and the list follow it, still a page at a time.
        page.select_option('select[data-filter="bot"]', "")
        page.select_option('select[data-filter="result"]', "")
        page.wait_for_selector('#gamelist [data-page="1"][data-total="230"]')
        with RunStore(out / DB_NAME) as store:
            assert store.record_game(231, records[230]) is True
        page.wait_for_selector('#gamelist [data-total="231"]', timeout=60_000)
        assert "231 of 240 games" in page.text_content("main")
        page.get_by_role("button", name=NEXT).click()
        page.get_by_role("button", name=NEXT).click()
        page.wait_for_selector('#gamelist [data-page="3"][data-total="231"]')
        assert listed(page) == list(range(201, 232))
    finally:
        server.close()


def test_boards_of_other_sizes(page: Any, tmp_path: Path) -> None:
    import random

    rng = random.Random(7)
    records = [
        random_game(1, "alpha", "beta", rng, width=9, height=7),
        random_game(3, "beta", "alpha", rng, width=3, height=5),
    ]
    with (tmp_path / "games.jsonl").open("w") as file:
        for record in records:
            file.write(record.model_dump_json() + "\n")
    write_report(tmp_path)
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_selector("body[data-ready]")
    for number, record in enumerate(records, start=1):
        open_game(page, number)
        total = len(record.all_moves())
        for plies in (total // 2, total):
            page.locator("#viewer .scrub-range").fill(str(plies))
            assert board_dom(page) == expected_board(engine_position(record, plies))
        page.keyboard.press("Escape")


def test_the_report_shows_a_knockout_bracket_and_swiss_tiebreaks(tmp_path: Path, page: Any) -> None:
    from referee.cli import main

    bots = [f"{n}=python3 -m sample_bots.random --seed {s}" for s, n in enumerate("abcde", 1)]
    common = [*(f for b in bots for f in ("--bot", b)), "--size", "5x5", "--tc", "5+0.1", "-q"]
    assert main(["tournament", "--format", "knockout", *common, "--out", str(tmp_path / "ko")]) == 0
    standings = json.loads((tmp_path / "ko" / "standings.json").read_text())["format_summary"]
    page.goto((tmp_path / "ko" / "report.html").as_uri())
    section = page.locator("section#format")
    assert section.locator("h2").inner_text() == "Bracket"
    assert section.locator(".bracket-round").count() == 3 and section.locator(".encounter").count() == 7
    assert f"Champion: {standings['champion']}" in section.inner_text()
    assert "the higher seed advances" in section.inner_text()
    assert main(["tournament", "--format", "swiss", "--rounds", "2", *common, "--out", str(tmp_path / "sw")]) == 0
    page.goto((tmp_path / "sw" / "report.html").as_uri())
    rows = page.locator("section#format table.tiebreaks tbody tr")
    assert rows.count() == 5
    table = json.loads((tmp_path / "sw" / "standings.json").read_text())["format_summary"]["tiebreaks"]
    assert [rows.nth(i).get_attribute("data-bot") for i in range(5)] == [row["name"] for row in table]
