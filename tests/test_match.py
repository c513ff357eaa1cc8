"""`alternator match` end to end with real bot processes: records, statistics, output, exit codes, signals, resume.

A match is a schedule of two bots run by the one runner (referee.run.runner): its games are in the database
and games.jsonl, its statistics in match.json."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from protocol.messages import TimeControl
from referee.cli import main
from referee.commands.replay import check_record
from referee.outputs.display import describe_result
from referee.record import BotInfo, GameRecord, GameSettings, Termination, game_record_schema
from referee.run.runner import GAMES_FILE

ROOT = Path(__file__).resolve().parent.parent


def load_records(out: Path) -> list[GameRecord]:
    """The games of a match from games.jsonl (which holds them in the order they finished), in game order."""
    records = []
    for line in (out / GAMES_FILE).read_text().splitlines():
        data = json.loads(line)
        schema = game_record_schema()
        # The published schema's required fields are there and nothing else is (additionalProperties: false).
        assert set(schema["required"]) <= set(data) <= set(schema["properties"])
        records.append(GameRecord.model_validate(data))
    return sorted(records, key=lambda record: record.game_id)


def pid_of(log: str | None) -> int:
    assert log is not None
    match = re.search(r"-(\d+)\.stderr\.log$", log)
    assert match, log
    return int(match[1])


def test_random_against_greedy_with_a_fischer_clock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", "random", "--white", "greedy", "--tc", "5+0.05", "--size", "5x5", "--games", "2"]
    assert main([*argv, "--komi", "0.5", "--out", str(out), "-j", "1"]) == 0
    records = load_records(out)
    assert [(r.black.name, r.white.name) for r in records] == [("random", "greedy"), ("greedy", "random")]
    for record in records:
        assert record.termination is Termination.NORMAL, record.reason
        check_record(record)  # every move legal, the result and scores those of the final position
        assert record.settings.time_control == TimeControl(base_ms=5000, increment_ms=50)
        assert (record.settings.width, record.settings.height, record.settings.komi) == (5, 5, 0.5)
        assert all(m.clock_ms is not None and 0 < m.clock_ms <= 5050 * 2 for m in record.moves)
        assert record.black.announced_name == record.black.name
        for side in (record.black, record.white):
            assert side.stderr_log is not None and Path(side.stderr_log).is_file()
            assert Path(side.stderr_log).parent == out / "logs"
    # The same two processes played both games (one worker slot).
    assert records[0].black.stderr_log == records[1].white.stderr_log
    assert records[0].white.stderr_log == records[1].black.stderr_log
    text = capsys.readouterr().out
    assert "match: random, greedy; 2 games; 5x5 board, komi 0.5" in text
    assert f"game 1 random (black) - greedy (white): {records[0].result} {records[0].reason}" in text
    points = sum(
        (r.winner is None) * 0.5
        + (r.winner is not None and r.black.name == "random") * (r.winner == "black")
        + (r.winner is not None and r.white.name == "random") * (r.winner == "white")
        for r in records
    )
    summary = load_summary(out)
    assert summary.statistics.score == pytest.approx(points / 2)
    assert f"Score of random vs greedy: {summary.statistics.wins} - {summary.statistics.losses} -" in text


def test_fixed_time_per_move_and_show_moves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", "greedy", "--white", "random", "--movetime", "1", "--size", "4x4", "--games", "1"]
    assert main([*argv, "--show-moves", "--opening", "a1a2", "--out", str(out)]) == 0
    [record] = load_records(out)
    assert record.settings.time_control.move_time_ms == 1000
    assert record.settings.opening == ["a1a2"]
    assert all(m.clock_ms is None and m.elapsed_ms < 1000 for m in record.moves)
    assert record.moves[0].color == "white"  # the opening made Black's first move
    check_record(record)
    text = capsys.readouterr().out
    assert f"g0001    2. white {record.moves[0].move}" in text
    assert f"g0001    3. black {record.moves[1].move}" in text


def test_a_bot_that_crashes_forfeits_and_is_restarted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    crasher = f"name=crasher cmd='python3 {ROOT / 'tests' / 'bots' / 'testbot.py'} crash 3'"  # on its first turn
    assert main(["match", "--black", crasher, "--white", "random", "--size", "4x4", "--out", str(out), "-j", "1"]) == 0
    records = load_records(out)
    assert len(records) == 2
    for record, loser in zip(records, ("black", "white"), strict=True):
        assert record.termination is Termination.PROTOCOL or record.termination is Termination.CRASH
        assert record.loser == loser and record.winner != loser
        check_record(record)
    # A broken process is not reused: game 2 had a new crasher process.
    assert pid_of(records[0].black.stderr_log) != pid_of(records[1].white.stderr_log)
    text = capsys.readouterr().out
    assert "Score of crasher vs random: 0 - 2 - 0  [0.000] 2" in text
    assert "  the offender's last lines of stderr:\n    about to crash\n" in text


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--white", "no-such-bot-xyz"], "--white: bot 'no-such-bot-xyz': the program 'no-such-bot-xyz' was not found"),
        (["--white", "./missing/bot"], "'./missing/bot' does not exist"),
        (["--white", "random", "--tc", "fast"], "--tc 'fast'"),
        (["--white", "random", "--size", "30x30"], "--size '30x30'"),
        (["--white", "random", "--opening", "a1a3"], "--opening: move 1"),
        (["--white", "random", "--opening", "pass pass"], "--opening: it ends the game (two passes)"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    assert main(["match", "--black", "random", *argv, "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("alternator match: error: ")
    assert words in err
    assert not (tmp_path / "m" / GAMES_FILE).exists()


def test_match_as_a_subprocess(tmp_path: Path) -> None:
    out = tmp_path / "m"
    argv = [
        "--black",
        "random",
        "--white",
        "greedy",
        "--size",
        "4x4",
        "--games",
        "1",
        "--tc",
        "20/5",
        "--out",
        str(out),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "referee", "match", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    [record] = load_records(out)
    assert record.settings.time_control == TimeControl(base_ms=5000, moves_per_period=20)
    check_record(record)
    assert record.result in done.stdout
    assert "Score of random vs greedy: " in done.stdout


def test_ctrl_c_stops_cleanly_and_the_same_command_resumes(tmp_path: Path) -> None:
    out = tmp_path / "m"
    argv = [
        "--black",
        "alphabeta",
        "--white",
        "alphabeta",
        "--movetime",
        "0.2",
        "--size",
        "5x5",
        "--games",
        "2",
        "--out",
        str(out),
    ]
    command = [sys.executable, "-m", "referee", "match", *argv, "-j", "1"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until both bots have started and some moves are played.
    deadline = time.monotonic() + 30
    while len(list((out / "logs").glob("*.stderr.log"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "To resume, run the same command again" in stdout
    assert "Traceback" not in stderr
    summary = load_summary(out)
    assert summary.ended == "interrupted"
    done = len(load_records(out))  # the game in progress was abandoned, not recorded
    assert summary.statistics.games == done < 2
    for log in (out / "logs").glob("*.stderr.log"):
        pid = pid_of(str(log))
        assert not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    assert [r.game_id for r in load_records(out)] == ["g0001", "g0002"]
    assert load_summary(out).ended == "completed"


def test_a_signal_during_start_up_is_a_clean_stop(tmp_path: Path) -> None:
    # SIGTERM while the command is still starting (a thousand openings to make): no traceback, no default kill.
    out = tmp_path / "m"
    argv = ["--black", "random", "--white", "greedy", "--openings-plies", "40", "--size", "26x26"]
    argv += ["--sprt", "--games", "40000", "--out", str(out)]
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "match", *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    time.sleep(1.5)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    said = ("stopped while starting; nothing was recorded" in stderr, "stopped before the first game" in stdout)
    assert any(said) or "To resume, run the same command again" in stdout  # a fast machine may have begun


def _record(termination: Termination, result: str, winner: str | None, loser: str | None = None) -> GameRecord:
    now = datetime.now(UTC)
    return GameRecord.model_validate(
        {
            "game_id": "g",
            "black": BotInfo(name="a", command=["a"]).model_dump(),
            "white": BotInfo(name="b", command=["b"]).model_dump(),
            "settings": GameSettings(time_control=TimeControl(base_ms=1000)).model_dump(),
            "result": result,
            "winner": winner,
            "loser": loser,
            "termination": termination,
            "reason": "took 1.200s, limit 1.000s",
            "black_score": 30.0 if result != "*" else None,
            "white_score": 37.5 if result != "*" else None,
            "final_position": "8/8/8/8/8/8/8/8 b 0 3.5",
            "started_at": now,
            "finished_at": now,
        }
    )


def test_result_descriptions() -> None:
    normal = _record(Termination.NORMAL, "0-1", "white")
    assert describe_result(normal) == "0-1 b (white) wins by 7.5, 30 - 37.5 (both passed)"
    time_loss = _record(Termination.TIME, "1-0", "black", "white")
    assert describe_result(time_loss) == "1-0 a (black) wins: b (white) lost on time: took 1.200s, limit 1.000s"
    aborted = _record(Termination.ABORTED, "*", None)
    assert describe_result(aborted).startswith("* aborted (not scored)")


def test_the_environment_and_folder_reach_the_bot(tmp_path: Path) -> None:
    # A bot in its own folder, with an environment variable, given as key=value fields.
    (tmp_path / "bot").mkdir()
    script = tmp_path / "bot" / "envbot.py"
    script.write_text(
        "import os, runpy, sys\n"
        "print('MARK=' + os.environ.get('MARK', '?') + ' CWD=' + os.getcwd(), file=sys.stderr, flush=True)\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "runpy.run_module('sample_bots.random', run_name='__main__')\n"
    )
    bot = f"name=envbot cmd='python3 envbot.py' dir={tmp_path / 'bot'} env.MARK=hello"
    out = tmp_path / "m"
    assert main(["match", "--black", bot, "--white", "random", "--size", "3x3", "--games", "1", "--out", str(out)]) == 0
    [record] = load_records(out)
    assert record.black.name == "envbot"
    assert record.black.stderr_log is not None
    log = Path(record.black.stderr_log).read_text()
    assert f"MARK=hello CWD={tmp_path / 'bot'}" in log
    assert os.environ.get("MARK") is None


def test_a_time_loss_restarts_the_bot_and_infos_are_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    testbot = ROOT / "tests" / "bots" / "testbot.py"
    slow = f"name=slowpoke cmd='python3 {testbot} slow 600 --on 2'"
    chatty = f"name=chatty cmd='python3 {testbot} info --infos 2'"
    out = tmp_path / "m"
    argv = ["match", "--black", slow, "--white", chatty, "--movetime", "0.2", "--size", "4x4", "--out", str(out), "-j1"]
    assert main(argv) == 0
    first, second = load_records(out)
    for record, loser in ((first, "black"), (second, "white")):
        assert record.termination is Termination.TIME, record.reason
        assert record.loser == loser
        assert record.overrun_ms is not None and record.overrun_ms > 0
        check_record(record)
        chatty_moves = [m for m in record.moves if m.color != loser]
        assert chatty_moves and all(len(m.infos) == 2 for m in chatty_moves)
    # The late process could still send its move into the next game: it was replaced.
    assert pid_of(first.black.stderr_log) != pid_of(second.white.stderr_log)
    assert pid_of(first.white.stderr_log) == pid_of(second.black.stderr_log)
    assert "game 1 slowpoke (black) - chatty (white): 0-1 black (slowpoke) lost on time" in capsys.readouterr().out


def first_game_void(calls: list[str]) -> Callable[..., Awaitable[GameRecord]]:
    """A `run_game` whose first game comes back void, as after the referee's own failure; notes every game id."""
    from referee.play.game import run_game

    async def run(game_id: str, *args: Any, **kwargs: Any) -> GameRecord:
        calls.append(game_id)
        record = await run_game(game_id, *args, **kwargs)
        if len(calls) == 1:
            return record.model_copy(
                update={"termination": Termination.VOID, "result": "*", "winner": None, "reason": "referee bug"}
            )
        return record

    return run


def test_a_void_game_is_played_again_and_never_scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    import referee.play.loop as play_module
    from referee.run.store import DB_NAME

    calls: list[str] = []
    monkeypatch.setattr(play_module, "run_game", first_game_void(calls))
    out = tmp_path / "m"
    a, b = f"name=a cmd='python3 {TESTBOT}'", f"name=b cmd='python3 {TESTBOT}'"
    assert (
        main(["match", "--black", a, "--white", b, "--size", "3x3", "--games", "3", "-j", "1", "--out", str(out)]) == 0
    )
    assert calls == ["g0001", "g0001", "g0002", "g0003"]
    records = load_records(out)
    assert [r.game_id for r in records] == ["g0001", "g0002", "g0003"]
    assert all(r.termination is Termination.NORMAL for r in records)
    assert [(r.black.name, r.white.name) for r in records] == [("a", "b"), ("b", "a"), ("a", "b")]
    with sqlite3.connect(out / DB_NAME) as db:
        assert db.execute("SELECT number, termination FROM void_games").fetchall() == [(1, "void")]
    assert load_summary(out).void_games == 1


def test_a_game_void_again_and_again_stops_the_run_with_a_message_about_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import referee.play.loop as play_module
    import referee.run.runner as runner_module
    from referee.play.game import run_game

    async def always_void(game_id: str, *args: Any, **kwargs: Any) -> GameRecord:
        record = await run_game(game_id, *args, **kwargs)
        reason = "the referee was 900 ms late reading the bots (host lag)"
        return record.model_copy(
            update={"termination": Termination.VOID, "result": "*", "winner": None, "reason": reason}
        )

    monkeypatch.setattr(play_module, "run_game", always_void)
    out = tmp_path / "m"
    argv = ["match", "--black", f"python3 {TESTBOT}", "--white", "greedy", "--size", "3x3", "-j", "1"]
    assert main([*argv, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"game g0001 was void {runner_module.MAX_VOIDS_PER_GAME} times in a row" in err
    assert "host lag" in err and "this machine cannot play it fairly now" in err
    assert load_records(out) == []
    assert load_summary(out).ended == "error"


# --- openings, SPRT, match.json ------------------------------------------------------------------------------

TESTBOT = ROOT / "tests" / "bots" / "testbot.py"


def load_summary(out: Path) -> Any:
    from referee.stats.head_to_head import MatchSummary, match_summary_schema

    data = json.loads((out / "match.json").read_text())
    schema = match_summary_schema()
    assert set(schema["required"]) <= set(data) <= set(schema["properties"])
    return MatchSummary.model_validate(data)


def test_random_openings_are_played_twice_with_colours_swapped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from referee.run.schedule import random_openings

    out = tmp_path / "m"
    a, b = f"name=a cmd='python3 {TESTBOT}'", f"name=b cmd='python3 {TESTBOT}'"
    argv = ["match", "--black", a, "--white", b, "--size", "4x4", "--games", "5", "--out", str(out)]
    assert main([*argv, "--openings-plies", "2", "--openings-seed", "7"]) == 0
    records = load_records(out)
    openings = random_openings(4, 4, 3.5, 2, "7", 3)
    assert len(set(openings)) == 3 and all(len(o) == 2 for o in openings)
    assert [tuple(r.settings.opening) for r in records] == [o for o in openings for _ in (1, 2)][:5]
    assert [(r.black.name, r.white.name) for r in records] == [("a", "b"), ("b", "a")] * 2 + [("a", "b")]
    for record in records:
        assert record.termination is Termination.NORMAL, record.reason
        assert record.all_moves()[:2] == record.settings.opening
        check_record(record)  # the opening and the bots' moves replay legally to the recorded result
    summary = load_summary(out)
    assert summary.ended == "completed" and summary.statistics.sprt is None and summary.llr is None
    assert summary.openings == {"plies": 2, "seed": 7}
    assert summary.settings.opening == []
    stats = summary.statistics
    assert stats.games == 5 and stats.wins + stats.draws + stats.losses == 5
    assert sum(stats.pentanomial) == 2  # game 5 has no partner
    text = capsys.readouterr().out
    assert f"Score of a vs b: {stats.wins} - {stats.losses} - {stats.draws}" in text and "from 2 game pairs" in text
    assert f"summary: {out / 'match.json'}" in text


def test_openings_from_a_file_are_reused_in_order(tmp_path: Path) -> None:
    openings = tmp_path / "openings.txt"
    openings.write_text("# two openings\na1a2 d4d3\n\nb2b3, c3c2  # commas work too\n")
    out = tmp_path / "m"
    argv = ["match", "--black", f"python3 {TESTBOT}", "--white", "greedy", "--size", "4x4", "--games", "6"]
    assert main([*argv, "--openings-file", str(openings), "--out", str(out)]) == 0
    records = load_records(out)
    first, second = ["a1a2", "d4d3"], ["b2b3", "c3c2"]
    assert [r.settings.opening for r in records] == [first, first, second, second, first, first]
    assert [r.black.name for r in records] == ["testbot", "greedy"] * 3
    summary = load_summary(out)
    assert summary.openings["file_openings"] == 2 and len(summary.openings["file_sha256"]) == 16


def test_an_sprt_match_at_concurrency_2_stops_at_its_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    from referee.run.store import DB_NAME
    from referee.stats.sprt import CountedGame, SprtParameters, count_in_order, llr_pentanomial

    out = tmp_path / "m"
    random_bot = "python3 -m sample_bots.random --seed 1"
    argv = ["match", "--black", "greedy", "--white", random_bot, "--size", "4x4", "--tc", "5+0.05", "--out", str(out)]
    sprt = ["--sprt", "elo0=0", "elo1=200", "alpha=0.1,beta=0.1"]
    assert main([*argv, "--openings-plies", "2", *sprt, "--games", "40", "--concurrency", "2"]) == 0
    records = load_records(out)
    assert 6 <= len(records) < 40  # at least 3 pairs: ln(9) / ln(L(200)/0.5) = 5.3
    summary = load_summary(out)
    stats = summary.statistics
    assert summary.ended == "sprt" and summary.max_games == 40
    assert stats.sprt is not None and stats.sprt.verdict == "H1"
    assert (stats.sprt.elo0, stats.sprt.elo1, stats.sprt.alpha, stats.sprt.beta) == (0, 200, 0.1, 0.1)
    assert summary.llr == stats.llr == stats.sprt.llr
    assert stats.sprt.llr >= stats.sprt.upper_bound == pytest.approx(math.log(9), abs=1e-4)
    assert stats.sprt.llr == pytest.approx(llr_pentanomial(stats.pentanomial, 0, 200), abs=1e-4)
    # Reproducible from the database alone: the done games in commit order, counted as the run counted them.
    with sqlite3.connect(out / DB_NAME) as db:
        rows = db.execute(
            "SELECT number, round, black, result FROM games WHERE status = 'done' ORDER BY seq"
        ).fetchall()
    games = [
        CountedGame(n, r // 2, {"1-0": 1.0, "0-1": 0.0}.get(res, 0.5) if black == "greedy" else
                    {"1-0": 0.0, "0-1": 1.0}.get(res, 0.5))
        for n, r, black, res in rows
    ]  # fmt: skip
    again, counted = count_in_order(games, SprtParameters(0, 200, 0.1, 0.1))
    assert sorted(counted) == sorted(r[0] for r in rows) == sorted(int(r.game_id[1:]) for r in records)
    assert list(again.pairs) == stats.pentanomial and (again.wins, again.losses) == (stats.wins, stats.losses)
    assert again.sprt is not None and round(again.sprt.llr, 4) == stats.llr
    # The games in progress at the verdict were stopped and not scored: only counted games are stored.
    assert len(rows) == stats.games
    assert stats.los is not None and stats.los > 0.9 and stats.nelo is not None and stats.nelo > 0
    text = capsys.readouterr().out
    assert "match: greedy, random; 40 games" in text and "2 at once" in text
    assert f"LLR: {stats.sprt.llr:.2f} (-2.20, 2.20) [0, 200]" in text
    assert "Elo (plain estimate; an SPRT stops early, so it tends to overstate): " in text
    assert f"SPRT: H1 accepted after {stats.games} games" in text
    assert "by about 200" not in text
    assert "note: every pair starts from the same position" not in text
    assert "-0.0" not in text and "-0.0" not in (out / "match.json").read_text()


def test_an_undecided_sprt_match_plays_every_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", f"python3 {TESTBOT}", "--white", "greedy", "--size", "3x3", "--games", "2"]
    assert main([*argv, "--sprt", "elo1=200", "--out", str(out)]) == 0
    summary = load_summary(out)
    sprt = summary.statistics.sprt
    assert summary.ended == "completed" and sprt is not None and sprt.verdict is None
    assert (sprt.elo0, sprt.alpha, sprt.beta) == (0, 0.05, 0.05)  # the defaults
    text = capsys.readouterr().out
    assert "note: every pair starts from the same position" in text
    assert "SPRT: no verdict after 2 games (H0: 0 Elo, H1: +200 Elo for testbot;" in text
    assert "every game was played; raise --games" in text


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--sprt", "elo0=0", "elo1=0"], "--sprt: elo1 (0) must be greater than elo0 (0)"),
        (["--sprt", "elo1"], "--sprt 'elo1': give KEY=VALUE words, e.g. --sprt elo0=0 elo1=5"),
        (["--sprt", "elo2=5"], "--sprt 'elo2=5': unknown key 'elo2'; the keys are elo0, elo1, alpha, beta"),
        (["--sprt", "alpha=x"], "--sprt 'alpha=x': 'x' is not a number"),
        (["--sprt", "alpha=0.6"], "--sprt: alpha 0.6 must be between 0 and 0.5"),
        (["--sprt", "elo1=5", "elo1=6"], "--sprt: elo1 is given twice"),
        (["--sprt", "--games", "5"], "--games 5: with --sprt give an even number"),
        (["--openings-plies", "2", "--openings-file", "x.txt"], "give one of them"),
        (["--opening", "a1a2", "--openings-plies", "2"], "--opening starts every game from the same moves"),
        (["--openings-seed", "3"], "--openings-seed: it seeds random openings; give --openings-plies N too"),
        (["--openings-plies", "15", "--size", "4x4"], "--openings-plies 15: give from 0 to 14 placements"),
        (["--openings-file", "/no/such/openings.txt"], "--openings-file: /no/such/openings.txt: cannot read"),
    ],
)
def test_bad_sprt_and_openings_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    assert main(["match", "--black", "random", "--white", "greedy", *argv, "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("alternator match: error: ")
    assert words in err
    assert not (tmp_path / "m").exists()


def test_a_bad_line_in_the_openings_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    openings = tmp_path / "openings.txt"
    openings.write_text("a1a2\na1a3\n")
    argv = ["match", "--black", "random", "--white", "greedy", "--size", "4x4", "--openings-file", str(openings)]
    assert main([*argv, "--out", str(tmp_path / "m")]) == 2
    assert f"--openings-file: {openings}: line 2: move 1 ('a1a3')" in capsys.readouterr().err


def test_the_statistics_lines() -> None:
    from referee.outputs.display import format_elo, format_statistics, format_verdict
    from referee.stats.head_to_head import head_to_head
    from referee.stats.sprt import PENTANOMIAL_OUTCOMES, SprtParameters, elo_estimate, match_statistics

    def elo(*pairs: int) -> str:
        return format_elo(elo_estimate(pairs, PENTANOMIAL_OUTCOMES))

    assert elo(1, 2, 4, 2, 1) == "+0.0 ± 122.8 (95%)"  # symmetric: s = 1/2, sd of the mean sqrt(0.075/10)
    assert elo(0, 0, 3, 0, 9) == "+338.0 (95%: +193.2 to +1040.2)"  # lopsided near 100%: the ends
    assert elo(0, 0, 1, 0, 3) == "+338.0 (95%: +117.4 to +inf)"
    assert elo(0, 0, 0, 0, 2) == "+inf (every game won)"
    assert elo(0, 0, 0, 0, 0) == "none yet (no finished game pair)"

    # 10 pairs, symmetric: 9 wins, 9 losses, 2 draws; an SPRT [0, 5]
    stats = match_statistics(9, 2, 9, (1, 2, 4, 2, 1), SprtParameters(elo0=0, elo1=5))
    h = head_to_head("mine", "base", stats)
    lines = format_statistics(h)
    assert lines[0] == "Score of mine vs base: 9 - 9 - 2  [0.500] 20"
    assert lines[1].startswith("Elo (plain estimate; an SPRT stops early, so it tends to overstate): +0.0 ± 122.8")
    assert ", nElo: +0.0 ± " in lines[1]
    assert lines[2] == "LOS: 50.00 %, DrawRatio: 10.00 %, Ptnml(0-2): [1, 2, 4, 2, 1] from 10 game pairs"
    assert lines[3].startswith("LLR: ") and lines[3].endswith(" (-2.94, 2.94) [0, 5]")
    assert all("-0.0" not in line for line in lines)
    assert h.elo == 0.0 and str(h.elo) == "0.0" and str(h.nelo) == "0.0"
    assert h.sprt is not None
    verdict = format_verdict(h.sprt.model_copy(update={"verdict": "H1"}), "mine", "base", 400)
    assert verdict.startswith("SPRT: H1 accepted after 400 games (H0: 0 Elo, H1: +5 Elo for mine;")
    assert "about 5" not in verdict and "by 5" not in verdict
    assert format_verdict(h.sprt, "mine", "base", 400).startswith("SPRT: no verdict after 400 games")
    no_sprt = format_statistics(head_to_head("mine", "base", match_statistics(1, 0, 0, (0, 0, 0, 0, 0), None)))
    assert no_sprt[1] == "Elo: none yet (no finished game pair), nElo: -"


def test_replay_a_game_of_a_match_by_its_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", "greedy", "--white", "random", "--size", "4x4", "--games", "2", "--out", str(out)]
    assert main(argv) == 0
    second = load_records(out)[1]
    capsys.readouterr()
    for target, game in ((out, "g0002"), (out, "2"), (out / GAMES_FILE, "g0002")):
        assert main(["replay", str(target), game, "--show-moves"]) == 0
        text = capsys.readouterr().out
        assert text.startswith(f"g0002: {second.black.name} (black) vs {second.white.name} (white), 4x4")
        assert f"   1. black {second.moves[0].move}" in text
        assert f"result: {describe_result(second)}" in text
    assert main(["replay", str(out), "g0042"]) == 2
    assert "no game 'g0042'; its games are g0001, g0002" in capsys.readouterr().err
    assert main(["replay", str(out)]) == 2
    assert f"alternator replay {out} g0001" in capsys.readouterr().err


def test_two_different_matches_never_share_an_output_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", "greedy", "--white", "random", "--size", "3x3", "--games", "2", "--out", str(out)]
    assert main(argv) == 0
    before = (out / GAMES_FILE).read_text()
    capsys.readouterr()
    # Another bot: refused, naming the field that changed; nothing of the first match is touched.
    assert main([*argv[:4], "alphabeta", *argv[5:]]) == 2
    err = capsys.readouterr().err
    assert f"{out} holds a match with other settings:\n  bots[1].command: was" in err and "sample_bots.alphabeta" in err
    assert 'bots[1].name: was "random", now "alphabeta"' in err
    assert (out / GAMES_FILE).read_text() == before
    # Another time control: refused too (more games would be a compatible resume); a tournament: refused.
    assert main([*argv[:-4], "--games", "3", "--tc", "9+0", "--out", str(out)]) == 2
    assert "time_control.base_ms: was 10000, now 9000" in capsys.readouterr().err
    assert main(["tournament", "--bot", "greedy", "--bot", "random", "--size", "3x3", "--out", str(out)]) == 2
    assert "holds a match, not a tournament: the two are never mixed" in capsys.readouterr().err
    # A directory of a match from before the database: refused, never mixed.
    old = tmp_path / "old"
    old.mkdir()
    (old / "match.json").write_text("{}")
    (old / "game-001.json").write_text("{}")
    assert main([*argv[:-1], str(old)]) == 2
    assert "holds a match from an older alternator" in capsys.readouterr().err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the bot processes through /proc")
def test_an_sprt_match_killed_with_sigkill_mid_pair_resumes_to_the_same_figures(tmp_path: Path) -> None:
    from tests.conftest import descendants, reap_orphans
    from tests.test_tournament import alive, done_count, wait_until

    # Deterministic bots (the first legal move, slowly; random seeded by the game id): every game's result is
    # decided by its opening and colours, so a resumed match must end with the same figures as one never stopped.
    slow = f"name=slow cmd='python3 {TESTBOT} slow 30'"
    seeded = "name=seeded cmd='python3 -m sample_bots.random --seed 5'"
    options = ["--size", "4x4", "--tc", "10+0", "--openings-plies", "2", "--games", "12", "-j", "1"]
    options += ["--sprt", "elo0=-50", "elo1=50"]

    def command(out: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "referee",
            "match",
            "--black",
            slow,
            "--white",
            seeded,
            *options,
            "--out",
            str(out),
        ]

    out = tmp_path / "m"
    referee = subprocess.Popen(command(out), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bots: list[int] = []
    try:
        # An odd number of games done at concurrency 1: the game being played is the second of its pair.
        wait_until(lambda: done_count(out) >= 3 and done_count(out) % 2 == 1, 60, "a pair half played")
        bots = descendants(referee.pid)
        referee.send_signal(signal.SIGKILL)
        referee.communicate(timeout=10)
        wait_until(lambda: not any(alive(pid) for pid in bots), 5, "the orphaned bots to exit on EOF")
        reap_orphans(wait_s=5)  # they died with the referee (PR_SET_PDEATHSIG); this subreaper reaps them
    finally:
        if referee.poll() is None:
            referee.kill()
            referee.communicate()
        for pid in bots:
            if alive(pid):
                os.killpg(pid, signal.SIGKILL)
        reap_orphans()  # the killed referee's bots, re-parented to this process (a subreaper)
    before = done_count(out)
    assert before % 2 == 1 and not (out / "match.json").exists()
    # The match never stopped, played beside the resumed one (neither is short of time: 10 s a game, 30 ms a move).
    reference = subprocess.Popen(
        command(tmp_path / "ref"), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        resumed = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True, timeout=120)
        _, reference_err = reference.communicate(timeout=120)
    finally:
        if reference.poll() is None:
            reference.kill()
            reference.communicate()
    assert reference.returncode == 0, reference_err
    expected = load_summary(tmp_path / "ref").statistics
    assert resumed.returncode == 0, resumed.stderr
    assert f"{before} already played" in resumed.stdout
    records = load_records(out)
    ids = [r.game_id for r in records]
    assert len(ids) == len(set(ids)) == expected.games  # no game lost, none counted twice
    assert ids == [r.game_id for r in load_records(tmp_path / "ref")]
    got = load_summary(out).statistics
    assert got.pentanomial == expected.pentanomial and (got.wins, got.draws, got.losses) == (
        expected.wins, expected.draws, expected.losses,
    )  # fmt: skip
    assert got.llr == expected.llr and got.sprt == expected.sprt
