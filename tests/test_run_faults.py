"""Storage and start-up faults of a run, end to end through the command line: one clear line, nothing recorded lost.

A database emptied or damaged (games.jsonl is never overwritten over games it lacks, and rebuilds it), a
read-only output directory, a disk that fills up mid-run (real mounts, made with bubblewrap), a bot that never
starts, a forfeit's stderr line and log in the progress, and progress lines when the output is not a terminal.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from referee.cli import main
from referee.outputs import display as display_module
from referee.run.runner import GAMES_FILE
from referee.run.store import DB_NAME

ROOT = Path(__file__).resolve().parent.parent
TESTBOT = ROOT / "tests" / "bots" / "testbot.py"
BWRAP = shutil.which("bwrap")
SMALL = ["--size", "4x4", "--tc", "5+0.1", "-j", "1"]


def tournament(out: Path, *extra: str, bots: tuple[str, ...] = ("random", "greedy"), games: int = 2) -> int:
    args = ["tournament", *(f for bot in bots for f in ("--bot", bot)), "--games", str(games), *SMALL]
    return main([*args, "--out", str(out), *extra])


def game_ids(out: Path) -> list[str]:
    return [json.loads(line)["game_id"] for line in (out / GAMES_FILE).read_text().splitlines()]


def test_an_emptied_database_never_costs_the_games_in_games_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    assert tournament(out) == 0
    kept = (out / GAMES_FILE).read_text()
    assert len(game_ids(out)) == 2
    (out / DB_NAME).write_bytes(b"")  # a full disk, a bad copy, `> run.db`
    for suffix in ("-wal", "-shm"):
        (out / f"{DB_NAME}{suffix}").unlink(missing_ok=True)
    capsys.readouterr()
    assert tournament(out) == 2
    err = capsys.readouterr().err
    assert f"{out / GAMES_FILE} holds 2 game(s) but {out / DB_NAME} holds none (the database is empty" in err
    assert "nothing was changed and no game was played" in err and "--rebuild-db" in err
    assert (out / GAMES_FILE).read_text() == kept
    # Rebuilt from games.jsonl: the same games, nothing played again.
    assert tournament(out, "--rebuild-db") == 0
    captured = capsys.readouterr()
    rebuilt = f"rebuilt {out / DB_NAME} from games.jsonl: 2 game(s), each checked; the old database is kept as"
    assert rebuilt in captured.err
    assert "nothing was left to play" in captured.err
    assert (out / GAMES_FILE).read_text() == kept
    assert len(list(out.glob(f"{DB_NAME}.broken-*"))) == 1


@pytest.mark.parametrize(("keep", "says"), [(0, "file is not a database"), (4096, "database disk image is malformed")])
def test_a_damaged_database_says_games_jsonl_still_holds_the_games(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], keep: int, says: str
) -> None:
    out = tmp_path / "t"
    assert tournament(out, games=1) == 0
    for suffix in ("-wal", "-shm"):  # a clean close folds the WAL into the file; make sure nothing is left
        (out / f"{DB_NAME}{suffix}").unlink(missing_ok=True)
    data = (out / DB_NAME).read_bytes()
    # Damaged from the start (the header), or past it: then the open works and the reads fail.
    (out / DB_NAME).write_bytes(data[:keep] + b"\xff" * max(len(data) - keep, 4096))
    capsys.readouterr()
    assert tournament(out, games=1) == 2
    err = capsys.readouterr().err
    assert f"cannot open the tournament database ({says})" in err and "Traceback" not in err
    assert f"{out / GAMES_FILE} still holds every game recorded: run the same command with --rebuild-db" in err
    assert tournament(out, "--rebuild-db", games=2) == 0  # rebuilt, then resumed with one more game per pairing
    assert game_ids(out) == ["g0001", "g0002"]


def test_rebuilding_from_games_of_other_settings_is_refused_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    assert tournament(out, games=1) == 0
    before = sorted(p.name for p in out.iterdir())
    capsys.readouterr()
    assert tournament(out, "--rebuild-db", bots=("greedy", "random"), games=1) == 2
    assert "--rebuild-db: games.jsonl: game g0001 was random (black) vs greedy (white)" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == before


def run_in_bwrap(mounts: list[str], script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert BWRAP is not None
    return subprocess.run(
        [BWRAP, "--dev-bind", "/", "/", *mounts, "bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap (bwrap) for a real read-only mount")
def test_a_read_only_output_directory_is_a_clear_error(tmp_path: Path) -> None:
    finished = tmp_path / "finished"
    assert tournament(finished, games=1) == 0
    (tmp_path / "ro").mkdir()
    alternator = f"{sys.executable} -m referee tournament --bot random --bot greedy --games 1 {' '.join(SMALL)}"
    script = f"{alternator} --out ro/new; echo status $?; {alternator} --out {finished}; echo status $?"
    mounts = ["--ro-bind", str(tmp_path / "ro"), str(tmp_path / "ro"), "--ro-bind", str(finished), str(finished)]
    result = run_in_bwrap(mounts, script, tmp_path)
    assert "Traceback" not in result.stderr
    assert result.stdout.count("status 2") == 2, result.stdout + result.stderr
    for where in (tmp_path / "ro" / "new", finished):
        assert (
            f"alternator tournament: error: cannot write to the output directory {where} (Read-only file system);"
            " make it writable or choose another one (--out DIR)"
        ) in result.stderr


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap (bwrap) for a real full disk")
def test_a_full_disk_stops_the_run_with_one_line_and_every_recorded_game_resumes(tmp_path: Path) -> None:
    full, copy = tmp_path / "full", tmp_path / "copy"
    full.mkdir()
    alternator = (
        f"{sys.executable} -m referee tournament --bot random --bot greedy --games 200 --size 8x8 --tc 5+0.1 -j 1"
    )
    # The tournament fills a 640 KiB disk; then its directory is copied out of the sandbox as it was left.
    script = f"{alternator} --out {full}/t; echo status $?; cp -a {full}/t {copy}"
    result = run_in_bwrap(["--size", str(640 * 1024), "--tmpfs", str(full)], script, tmp_path)
    assert "status 1" in result.stdout, result.stdout + result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "ExceptionGroup" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("alternator tournament: error:")]
    assert len(errors) == 1 and f"the disk holding {full}/t is full" in errors[0]
    assert "the games recorded are safe" in errors[0] and "run the same command to resume" in errors[0]
    # With space again, the same command resumes: no game is lost, the missing ones are played.
    recorded = game_ids(copy)
    assert 0 < len(recorded) < 200
    code = textwrap.dedent(
        f"""
        from referee.run.store import RunStore
        with RunStore(__import__("pathlib").Path({str(copy / DB_NAME)!r})) as store:
            print(len(store.game_ids()))
        """
    )
    in_db = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert in_db >= len(recorded)  # games.jsonl is rewritten from the database at the next start


def broken_bot(tmp_path: Path) -> Path:
    broken = tmp_path / "kitbot.py"
    broken.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'protocol'\" >&2\nexit 1\n")
    broken.chmod(0o755)
    return broken


def test_a_bot_that_never_starts_is_suspended_and_forfeits_while_the_others_finish(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = broken_bot(tmp_path)
    out = tmp_path / "t"
    code = tournament(out, bots=(f"kit={broken}", "random", "greedy"), games=4)
    assert code == 0
    err = capsys.readouterr().err
    assert err.count("[not scored: it is played again]") == 2  # the third failure suspends it
    suspended = [line for line in err.splitlines() if line.startswith("suspended kit: failed to start 3 times")]
    assert len(suspended) == 1
    assert f"start it as `python3 {broken.name}`" in suspended[0]  # the hint for the classic mistake
    assert "its last stderr line: ModuleNotFoundError: No module named 'protocol'" in suspended[0]
    assert f"its log: {out / 'logs'}" in suspended[0] and "its remaining games are forfeited" in suspended[0]
    games = [json.loads(line) for line in (out / GAMES_FILE).read_text().splitlines()]
    assert len(games) == 12  # every game of the round robin: kit's 8 forfeited, random-greedy's 4 played
    kit_games = [g for g in games if "kit" in (g["black"]["name"], g["white"]["name"])]
    assert len(kit_games) == 8
    assert all(g[g["loser"]]["name"] == "kit" for g in kit_games)  # the last real failure, then 7 forfeits
    assert sum("kit is suspended: failed to start 3 times" in g["reason"] for g in kit_games) == 7
    others = [g for g in games if g not in kit_games]
    assert len(others) == 4 and all(g["termination"] == "normal" for g in others)
    standings = json.loads((out / "standings.json").read_text())
    kit = next(row for row in standings["bots"] if row["name"] == "kit")
    assert (kit["games"], kit["losses"], kit["points"]) == (8, 8, 0)
    assert standings["format_summary"]["notes"][0].startswith("kit: suspended, failed to start 3 times in a row")
    # Resumed, the suspension stands (it is stored) and nothing is played twice.
    capsys.readouterr()
    assert tournament(out, bots=(f"kit={broken}", "random", "greedy"), games=4) == 0
    err = capsys.readouterr().err
    assert "suspended kit: failed to start 3 times" in err and "12 already played" in err
    assert len((out / GAMES_FILE).read_text().splitlines()) == 12


def test_a_match_whose_bot_never_starts_stops_after_three_tries_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = broken_bot(tmp_path)
    out = tmp_path / "t"
    code = tournament(out, bots=(f"kit={broken}", "random"), games=4)
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("[not scored: it is played again]") == 3
    last = err.strip().splitlines()[-1]
    assert last.startswith("alternator tournament: error: bot 'kit' failed to start 3 times in a row (")
    assert f"start it as `python3 {broken.name}`" in last  # the hint for the classic mistake
    assert "its last stderr line: ModuleNotFoundError: No module named 'protocol'" in last
    assert f"its log: {out / 'logs'}" in last and "those games were not scored" in last
    assert all("kit" not in json.loads(line)["black"]["name"] + json.loads(line)["white"]["name"]
               for line in (out / GAMES_FILE).read_text().splitlines())  # fmt: skip


def test_a_forfeit_line_shows_the_last_stderr_line_and_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    assert tournament(out, bots=(f"crasher=python3 {TESTBOT} crash 3", "random"), games=1) == 0
    lines = capsys.readouterr().err.splitlines()
    at = lines.index("  the offender's last lines of stderr:")
    assert lines[at + 1] == "    about to crash"
    assert lines[at + 2].startswith(f"  its log: {out / 'logs'}/crasher-")


def test_output_to_a_file_gets_progress_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(display_module, "SUMMARY_INTERVAL_S", 0.0)  # every tick (one a second)
    slow = f"slow=python3 {TESTBOT} slow 250"
    assert tournament(tmp_path / "t", bots=(slow, "random"), games=2) == 0
    progress = [line for line in capsys.readouterr().err.splitlines() if line.startswith("progress: ")]
    assert progress, "a game of a few seconds ticks at least once"
    assert all(" games, " in line and " elapsed, " in line for line in progress)
    assert any("playing slow-random" in line or "playing random-slow" in line for line in progress)


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap (bwrap) for a real full disk")
@pytest.mark.parametrize("free", [192, 4192, 8192])
def test_a_disk_already_full_at_the_start_is_one_line(tmp_path: Path, free: int) -> None:
    full = tmp_path / "full"
    full.mkdir()
    alternator = f"{sys.executable} -m referee tournament --bot random --bot greedy --games 2 {' '.join(SMALL)}"
    script = f"head -c {8192 - free} /dev/zero > {full}/pad; {alternator} --out {full}/t; echo status $?"
    result = run_in_bwrap(["--size", "8192", "--tmpfs", str(full)], script, tmp_path)
    assert "status 2" in result.stdout and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(f"alternator tournament: error: the disk holding {full}/t is full (")
    )
