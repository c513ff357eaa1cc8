"""The figures of one SPRT run, as every reader shows them: the terminal, match.json, the report and the live page.

    python benchmarks/check_one_truth.py [--seeds 1 2 3 4 5]

Plays `alternator match --black greedy --white random` on 4x4 with an SPRT (elo0=0 elo1=200, alpha = beta =
0.1) at concurrency 2 until a run ends with a game in progress at the verdict (abandoned, not scored), then
prints the head-to-head figures read from each place: the lines the terminal printed at the end, match.json,
the report opened in headless Chromium (each figure's cell and the statistics lines), and the live page of
`alternator serve` on the same directory in Chromium. They must all be equal; the script says whether they are.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_truth_browser import (
    expected_figures,
    page_figures,
    run_sprt,
    start_serve,
    stop,
)

CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="one-truth-"))
    for seed in args.seeds:
        run = run_sprt(work / f"m{seed}", seed)
        print(
            f"seed {seed}: {run.match['statistics']['games']} games counted, {run.abandoned} abandoned at the verdict"
        )
        if run.abandoned:
            break
    else:
        raise SystemExit("no run ended with a game in progress at its verdict; try other --seeds")
    expected = expected_figures(run.match)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        page.goto((run.out / "report.html").as_uri())
        report, report_lines, report_verdict = page_figures(page)
        url, process = start_serve(run.out)
        try:
            page.goto(url)
            page.wait_for_selector("body[data-ready]")
            live, live_lines, live_verdict = page_figures(page)
        finally:
            stop(process)
        browser.close()
    print(f"\n{'figure':10} {'match.json':40} {'report (Chromium)':40} {'live page (Chromium)':40}")
    for name, value in expected.items():
        print(f"{name:10} {value!s:40} {report[name]!s:40} {live[name]!s:40}")
    print("\nterminal, at the end:")
    for line in run.terminal:
        print(f"  {line}")
    print("report, its head-to-head block:")
    for line in [*report_lines, report_verdict]:
        print(f"  {line}")
    same = (
        report == live == expected
        and report_lines == live_lines == run.terminal[:4]
        and report_verdict == live_verdict == run.terminal[4]
    )
    print(f"\nall equal: {'yes' if same else 'NO'}  ({run.out})")


if __name__ == "__main__":
    main()
