"""`alternator match` end to end with real bot processes: records, replays, output, exit codes, Ctrl-C."""

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
from referee.display import describe_result, format_match_score, tally
from referee.record import BotInfo, GameRecord, GameSettings, Termination, game_record_schema

ROOT = Path(__file__).resolve().parent.parent


def load_records(out: Path) -> list[GameRecord]:
    paths = sorted(out.glob("game-*.json"))
    records = []
    for path in paths:
        data = json.loads(path.read_text())
        schema = game_record_schema()
        # The published schema's required fields are there and nothing else is (additionalProperties: false).
        assert set(schema["required"]) <= set(data) <= set(schema["properties"])
        records.append(GameRecord.model_validate(data))
    return records


def pid_of(log: str | None) -> int:
    assert log is not None
    match = re.search(r"-(\d+)\.stderr\.log$", log)
    assert match, log
    return int(match[1])


def test_random_against_greedy_with_a_fischer_clock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", "random", "--white", "greedy", "--tc", "5+0.05", "--size", "5x5", "--games", "2"]
    assert main([*argv, "--komi", "0.5", "--out", str(out)]) == 0
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
    # The same two processes played both games.
    assert records[0].black.stderr_log == records[1].white.stderr_log
    assert records[0].white.stderr_log == records[1].black.stderr_log
    text = capsys.readouterr().out
    assert "game 1/2: random (black) vs greedy (white)" in text
    for record in records:
        assert describe_result(record) in text
    assert format_match_score(records, "random", "greedy") in text
    assert tally(records, "random").points + tally(records, "greedy").points == 2


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
    assert f"   2. white {record.moves[0].move}" in text
    assert f"   3. black {record.moves[1].move}" in text


def test_a_bot_that_crashes_forfeits_and_is_restarted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    crasher = 'name=crasher cmd="python3 -c \'import sys; print(\\"boom\\", file=sys.stderr); sys.exit(3)\'"'
    assert main(["match", "--black", crasher, "--white", "random", "--size", "4x4", "--out", str(out)]) == 0
    records = load_records(out)
    assert len(records) == 2
    for record, loser in zip(records, ("black", "white"), strict=True):
        assert record.termination is Termination.PROTOCOL or record.termination is Termination.CRASH
        assert record.loser == loser and record.winner != loser
        check_record(record)
    # A broken process is not reused: game 2 had a new crasher process.
    assert pid_of(records[0].black.stderr_log) != pid_of(records[1].white.stderr_log)
    assert "match: crasher 0 - 2 random" in capsys.readouterr().out


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
    assert not list((tmp_path).glob("m/game-*.json"))


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
    assert describe_result(record) in done.stdout
    assert "match: random" in done.stdout


def test_ctrl_c_stops_cleanly_and_keeps_the_records(tmp_path: Path) -> None:
    out = tmp_path / "m"
    argv = ["--black", "alphabeta", "--white", "alphabeta", "--movetime", "0.2", "--games", "2", "--out", str(out)]
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "match", *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    # Wait until both bots have started and some moves are played.
    deadline = time.monotonic() + 30
    while len(list((out / "logs").glob("*.stderr.log"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    records = load_records(out)
    assert records and records[-1].termination is Termination.ABORTED
    assert records[-1].result == "*"
    check_record(records[-1])
    assert "aborted" in stdout
    summary = load_summary(out)
    assert summary.ended == "interrupted" and summary.records[-1] == f"game-{len(records):03d}.json"
    assert summary.score.games == len(records) - 1  # the aborted game is not scored
    for log in (out / "logs").glob("*.stderr.log"):
        pid = pid_of(str(log))
        assert not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text()


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


def test_result_descriptions_and_match_score() -> None:
    normal = _record(Termination.NORMAL, "0-1", "white")
    assert describe_result(normal) == "0-1 b (white) wins by 7.5, 30 - 37.5 (both passed)"
    time_loss = _record(Termination.TIME, "1-0", "black", "white")
    assert describe_result(time_loss) == "1-0 a (black) wins: b (white) lost on time: took 1.200s, limit 1.000s"
    aborted = _record(Termination.ABORTED, "*", None)
    assert describe_result(aborted).startswith("* aborted (not scored)")
    assert tally([normal, time_loss, aborted], "b").forfeits == 1
    assert format_match_score([normal, time_loss, aborted], "a", "b") == (
        "match: a 1 - 1 b (2 games: 1 win, 0 draws, 1 loss for a; b forfeited 1; 1 not scored (void or aborted))"
    )


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
    argv = ["match", "--black", slow, "--white", chatty, "--movetime", "0.2", "--size", "4x4", "--out", str(out)]
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
    assert "slowpoke (black) lost on time" in capsys.readouterr().out


def test_the_live_progress_line_is_redrawn_in_place(tmp_path: Path) -> None:
    import io

    from protocol.rules import Position
    from referee.display import MatchDisplay
    from referee.record import MoveRecord

    out = io.StringIO()
    display = MatchDisplay(out, live=True)
    display.game_started(1, 2, "a", "b")
    position = Position(4, 4)
    position.push(position.legal_moves()[0])
    display.move_played(
        MoveRecord(color="black", move=str(position.history[0]), elapsed_ms=0.2, clock_ms=None), position
    )
    record = _record(Termination.NORMAL, "0-1", "white")
    display.game_finished(1, record, tmp_path / "game-001.json")
    text = out.getvalue()
    assert text.startswith("\r\x1b[Kgame 1/2: a (black) vs b (white): starting\r\x1b[K")
    black, white = position.scores()
    assert f"move 1, board {black} - {white}, black 0.20ms" in text
    assert text.endswith(
        f"\r\x1b[Kgame 1/2: a (black) vs b (white): {describe_result(record)}  [{tmp_path}/game-001.json]\n"
    )


def first_game_void(calls: list[str]) -> Callable[..., Awaitable[GameRecord]]:
    """A `run_game` whose first game comes back void, as after the referee's own failure; notes every game id."""
    from referee.game import run_game

    async def run(game_id: str, *args: Any, **kwargs: Any) -> GameRecord:
        calls.append(game_id)
        record = await run_game(game_id, *args, **kwargs)
        if len(calls) == 1:
            return record.model_copy(
                update={"termination": Termination.VOID, "result": "*", "winner": None, "reason": "referee bug"}
            )
        return record

    return run


async def test_a_void_game_is_played_again_and_only_it_is_named_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import referee.match as match_module
    from referee.match import Match
    from tests.conftest import make_bot_spec

    calls: list[str] = []
    monkeypatch.setattr(match_module, "run_game", first_game_void(calls))
    settings = GameSettings(width=3, height=3, time_control=TimeControl(base_ms=5000, increment_ms=0))
    match = Match(make_bot_spec("testbot", name="a"), make_bot_spec("testbot", name="b"), settings, 3, tmp_path)
    records = await match.run()
    assert calls == ["match-1", "match-1r1", "match-2", "match-3"]
    assert [p.name for p in match.paths] == ["game-001.json", "game-001-retry1.json", "game-002.json", "game-003.json"]
    assert [r.termination for r in records] == [Termination.VOID] + [Termination.NORMAL] * 3
    assert [(r.black.name, r.white.name) for r in records[1:]] == [("a", "b"), ("b", "a"), ("a", "b")]


# --- openings, SPRT, match.json ------------------------------------------------------------------------------

TESTBOT = ROOT / "tests" / "bots" / "testbot.py"


def load_summary(out: Path) -> Any:
    from referee.match import MatchSummary, match_summary_schema

    data = json.loads((out / "match.json").read_text())
    schema = match_summary_schema()
    assert set(schema["required"]) <= set(data) <= set(schema["properties"])
    return MatchSummary.model_validate(data)


def test_random_openings_are_played_twice_with_colours_swapped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from referee.schedule import random_openings

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
    assert summary.ended == "completed" and summary.sprt is None
    assert (summary.openings.kind, summary.openings.plies, summary.openings.seed) == ("random", 2, "7")
    assert summary.settings.opening == []
    assert summary.records == [f"game-{n:03d}.json" for n in range(1, 6)]
    score = summary.score
    assert score.games == 5 and score.first_points + score.second_points == 5
    assert score.first_points == tally(records, "a").points
    assert sum(score.pairs) == 2  # game 5 has no partner
    text = capsys.readouterr().out
    assert "Elo of a over b: " in text and "from 2 game pairs" in text
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
    assert (summary.openings.kind, summary.openings.file, summary.openings.count) == ("file", str(openings), 2)


def test_an_sprt_match_stops_at_its_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.match import first_points
    from referee.sprt import llr_pentanomial, pentanomial

    out = tmp_path / "m"
    random_bot = "python3 -m sample_bots.random --seed 1"
    argv = ["match", "--black", "greedy", "--white", random_bot, "--size", "4x4", "--tc", "5+0.05", "--out", str(out)]
    sprt = ["--sprt", "elo0=0", "elo1=200", "alpha=0.1,beta=0.1"]
    assert main([*argv, "--openings-plies", "2", *sprt, "--games", "40"]) == 0
    records = load_records(out)
    assert 6 <= len(records) < 40 and len(records) % 2 == 0  # at least 3 pairs: ln(9) / ln(L(200)/0.5) = 5.3
    summary = load_summary(out)
    assert summary.ended == "sprt" and summary.max_games == 40
    assert summary.sprt is not None and summary.sprt.verdict == "H1"
    assert (summary.sprt.elo0, summary.sprt.elo1, summary.sprt.alpha, summary.sprt.beta) == (0, 200, 0.1, 0.1)
    # The LLR is that of the pairs in the records, and it stopped at the first pair that crossed the bound.
    won = [(r.black.name if r.winner == "black" else r.white.name) == "greedy" for r in records]  # no draws: komi .5
    pairs = tuple(sum(2 * (won[i] + won[i + 1]) == j for i in range(0, len(won), 2)) for j in range(0, 5))
    assert pairs == pentanomial(first_points(records, "greedy"))
    assert list(pairs) == summary.score.pairs and sum(pairs) * 2 == len(records)
    assert summary.sprt.llr == pytest.approx(llr_pentanomial(pairs, 0, 200))
    assert summary.sprt.llr >= summary.sprt.upper_bound == pytest.approx(math.log(9))
    before = pentanomial(first_points(records[:-2], "greedy"))
    assert summary.sprt.lower_bound < llr_pentanomial(before, 0, 200) < summary.sprt.upper_bound
    assert summary.elo.elo is None or summary.elo.elo > 0
    text = capsys.readouterr().out
    assert "game 1/40: greedy (black) vs random (white)" in text
    assert f"SPRT: LLR {summary.sprt.llr:.2f} (-2.20, 2.20) [0, 200]" in text
    assert f"after {len(records)} games: Elo " in text
    assert (
        "H1 accepted: greedy is stronger than random by about 200 Elo (elo0 0, elo1 200, alpha 0.1, beta 0.1)" in text
    )
    assert "note: every pair starts from the same position" not in text


def test_an_undecided_sprt_match_plays_every_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", f"python3 {TESTBOT}", "--white", "greedy", "--size", "3x3", "--games", "2"]
    assert main([*argv, "--sprt", "elo1=200", "--out", str(out)]) == 0
    summary = load_summary(out)
    assert summary.ended == "completed" and summary.sprt is not None and summary.sprt.verdict is None
    assert (summary.sprt.elo0, summary.sprt.alpha, summary.sprt.beta) == (0, 0.05, 0.05)  # the defaults
    text = capsys.readouterr().out
    assert "note: every pair starts from the same position" in text
    assert "SPRT inconclusive after 2 games (elo0 0, elo1 200, alpha 0.05, beta 0.05)" in text


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
        (["--openings-plies", "15", "--size", "4x4"], "--openings-plies 15: give from 1 to 14 placements"),
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


def test_a_long_match_report_lists_only_the_games_that_did_not_end_on_the_board() -> None:
    from referee.display import MAX_LISTED_GAMES, format_match_report

    records = [_record(Termination.NORMAL, "0-1", "white")] * 24 + [_record(Termination.TIME, "1-0", "black", "white")]
    lines = format_match_report(records, "a", "b")
    assert lines[0] == "results: 25 games; 1 did not end on the board:"
    assert lines[1].startswith("  25. a - b: 1-0 a (black) wins: b (white) lost on time")
    assert lines[2].startswith("match: a 1 - 24 b (25 games")
    assert len(format_match_report(records[:MAX_LISTED_GAMES], "a", "b")) == MAX_LISTED_GAMES + 2


def test_the_statistics_lines() -> None:
    from referee.display import format_elo, format_pair_progress, format_sprt, format_verdict
    from referee.sprt import PENTANOMIAL_OUTCOMES, SprtParameters, SprtStatus, Verdict, elo_estimate

    params = SprtParameters(elo0=0, elo1=5)
    undecided = SprtStatus(params, 1.234, None)
    assert format_sprt(undecided) == "SPRT: LLR 1.23 (-2.94, 2.94) [0, 5]"
    assert format_verdict(SprtStatus(params, 3.0, Verdict.H1), "mine", "base", 400) == (
        "H1 accepted: mine is stronger than base by about 5 Elo (elo0 0, elo1 5, alpha 0.05, beta 0.05)"
    )
    assert format_verdict(SprtStatus(params, -3.0, Verdict.H0), "mine", "base", 400) == (
        "H0 accepted: mine is not stronger than base by 5 Elo; at most about 0 (elo0 0, elo1 5, alpha 0.05, beta 0.05)"
    )
    assert format_verdict(undecided, "mine", "base", 400).startswith("SPRT inconclusive after 400 games")

    def elo(*pairs: int) -> str:
        return format_elo(elo_estimate(pairs, PENTANOMIAL_OUTCOMES))

    assert elo(1, 2, 4, 2, 1) == "+0.0 ± 122.8 (95%)"  # symmetric: s = 1/2, sd of the mean sqrt(0.075/10)
    assert elo(0, 0, 3, 0, 9) == "+338.0 (95%: +193.2 to +1040.2)"  # lopsided near 100%: the ends
    assert elo(0, 0, 1, 0, 3) == "+338.0 (95%: +117.4 to +inf)"
    assert elo(0, 0, 0, 0, 2) == "+inf (every game won)"
    assert elo(0, 0, 0, 0, 0) == "none yet (no finished game pair)"
    assert format_pair_progress(20, (1, 2, 4, 2, 1), undecided) == (
        "after 20 games: Elo +0.0 ± 122.8 (95%); pairs by points 0, ½, 1, 1½, 2: [1, 2, 4, 2, 1];"
        " SPRT: LLR 1.23 (-2.94, 2.94) [0, 5]"
    )
