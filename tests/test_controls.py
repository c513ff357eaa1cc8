"""Engine authors' controls: bot options, node and depth limits, time odds, the start-up timeout.

Pure parts (option declarations and values, the per-side clocks, bot arguments and configs) with plain tests;
the whole path with real processes: a probe bot (tests/bots/probebot.py) logs what each `new_game` gave it.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from protocol.messages import BotHello, TimeControl, parse_bot_line
from protocol.options import Option, OptionError, resolve_options
from protocol.rules import BLACK, WHITE
from referee.cli import main
from referee.record import GameRecord
from referee.run.botspec import BotSpecError, load_bot_file, parse_bot_arg
from referee.run.config import load_config, resolve_plan
from referee.run.runner import GAMES_FILE
from referee.timing.clock import NS_PER_MS, GameClock, parse_time_control

PROBE = str(Path(__file__).parent / "bots" / "probebot.py")
TESTBOT = str(Path(__file__).parent / "bots" / "testbot.py")


def records(out: Path) -> list[GameRecord]:
    lines = (out / GAMES_FILE).read_text(encoding="utf-8").splitlines()
    return [GameRecord.model_validate_json(line) for line in lines]


# -- options: declarations and values ------------------------------------------------------------


def test_option_values_are_converted_and_checked_against_their_declaration() -> None:
    level = Option("level", "int", 3, min=1, max=10)
    assert level.check("7") == 7 and level.check(10) == 10
    for bad, words in (("11", "above its maximum 10"), ("0", "below its minimum 1"), ("x", "not a whole number")):
        with pytest.raises(OptionError, match=words):
            level.check(bad)
    with pytest.raises(OptionError, match="not a whole number"):
        level.check(2.5)
    assert Option("w", "float", 0.5, min=0, max=1).check("0.25") == 0.25
    with pytest.raises(OptionError, match="not a finite number"):
        Option("w", "float", 0.5).check("nan")
    assert Option("b", "bool", False).check("yes") is True
    with pytest.raises(OptionError, match="not a bool"):
        Option("b", "bool", False).check("maybe")
    style = Option("style", "choice", "calm", choices=("calm", "wild"))
    assert style.check("wild") == "wild"
    with pytest.raises(OptionError, match="not one of the choices calm, wild"):
        style.check("odd")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"name": "1x", "type": "int", "default": 1}, "starting with a letter"),
        ({"name": "d", "type": "int", "default": 99, "min": 1, "max": 64}, "above its maximum 64"),
        ({"name": "d", "type": "int", "default": 1, "min": 5, "max": 2}, "min 5 is above max 2"),
        ({"name": "s", "type": "choice", "default": "a"}, "needs its list of choices"),
        ({"name": "s", "type": "string", "default": "a", "min": 1}, "min and max apply to int and float"),
        ({"name": "s", "type": "bool", "default": 1}, "not a bool"),
    ],
)
def test_a_declaration_that_does_not_hold_together_is_refused(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(OptionError, match=words):
        Option(**kwargs)  # type: ignore[arg-type]
    # The same declaration in a hello is the bot's protocol error.
    line = json.dumps({"type": "hello", "protocol": 1, "name": "x", "options": [kwargs]})
    with pytest.raises(ValidationError):
        parse_bot_line(line)


def test_resolve_fills_defaults_and_names_every_problem_at_once() -> None:
    declared = [Option("depth", "int", 64, min=1, max=64), Option("fast", "bool", False)]
    assert resolve_options(declared, {"depth": "5"}, bot="ab") == {"depth": 5, "fast": False}
    with pytest.raises(OptionError) as caught:
        resolve_options(declared, {"Depth": "5", "fast": "sometimes"}, bot="ab")
    text = str(caught.value)
    assert text.startswith("bot 'ab': ")
    assert "it declares no option 'Depth' (its options: depth (int, 1..64, default 64), fast (bool" in text
    assert "option.fast='sometimes': 'sometimes' is not a bool" in text
    with pytest.raises(OptionError, match="its options: none"):
        resolve_options([], {"x": 1}, bot="random")


def test_a_hello_without_options_is_still_valid_and_options_parse_when_present() -> None:
    old = parse_bot_line(b'{"type":"hello","protocol":1,"name":"old"}')
    assert isinstance(old, BotHello) and old.declared_options() == []
    declared = [o.declaration() for o in (Option("depth", "int", 5, min=1, max=9), Option("w", "float", 1))]
    new = parse_bot_line(json.dumps({"type": "hello", "protocol": 1, "name": "new", "options": declared}))
    assert isinstance(new, BotHello)
    assert [o.describe() for o in new.declared_options()] == ["depth (int, 1..9, default 5)", "w (float, default 1)"]
    twice = json.dumps({"type": "hello", "protocol": 1, "name": "x", "options": [declared[0], declared[0]]})
    with pytest.raises(ValidationError, match="declared twice"):
        parse_bot_line(twice)


# -- bot arguments, bot files and configs -------------------------------------------------------------


def test_controls_follow_a_command_or_come_as_fields() -> None:
    spec = parse_bot_arg("alphabeta option.depth=5 tc=20+0.2 nodes=1000")
    assert spec.command[-1] == "sample_bots.alphabeta" and spec.name == "alphabeta"
    assert spec.options == {"depth": "5"} and spec.nodes == 1000 and spec.depth is None
    assert spec.time_control == TimeControl(base_ms=20000, increment_ms=200)
    fields = parse_bot_arg('name=deep cmd="alphabeta --seed 1" depth=4 option.contested=0.5')
    assert (fields.name, fields.depth, fields.options) == ("deep", 4, {"contested": "0.5"})
    assert fields.command[-2:] == ["--seed", "1"]
    named = parse_bot_arg("new=strong tc=movetime:0.5")
    assert named.name == "new" and named.time_control == TimeControl(base_ms=None, move_time_ms=500)
    with pytest.raises(BotSpecError, match="tc='fast'"):
        parse_bot_arg("alphabeta tc=fast")
    with pytest.raises(BotSpecError, match="nodes='-3': give a whole number, at least 1"):
        parse_bot_arg("alphabeta nodes=-3")


def test_a_bot_file_and_a_config_give_their_own_controls(tmp_path: Path) -> None:
    bot_file = tmp_path / "deep.toml"
    bot_file.write_text('name = "deep"\ncommand = "alphabeta"\ntc = "30+0.3"\ndepth = 6\n[options]\ndepth = 7\n')
    spec = load_bot_file(bot_file)
    assert (spec.depth, spec.options, spec.time_control) == (6, {"depth": 7}, parse_time_control("30+0.3"))
    config = tmp_path / "run.toml"
    config.write_text(
        'nodes = 500\nstart_timeout = 30\ntime_control = "10+0.1"\n'
        '[[bots]]\nname = "a"\ncommand = "alphabeta"\ntc = "20+0.2"\n[bots.options]\ndepth = 3\n'
        '[[bots]]\nname = "b"\ncommand = "strong"\nnodes = 900\n'
    )
    plan = resolve_plan(load_config(config), base_dir=tmp_path, source="run.toml", default_out=tmp_path / "o")
    a, b = plan.bots
    assert a.time_control == parse_time_control("20+0.2") and a.options == {"depth": 3} and a.nodes == 500
    assert b.time_control is None and b.nodes == 900
    assert plan.start_timeout_s == 30
    assert plan.fingerprint["bots"][0]["options"] == {"depth": 3}
    assert plan.fingerprint["bots"][1]["nodes"] == 900


# -- time odds: each side's own clock -----------------------------------------------------------------


def test_each_side_is_charged_by_its_own_time_control() -> None:
    clocks = GameClock(parse_time_control("20+0.2"), parse_time_control("5+0.05"))
    assert clocks.remaining_ns(BLACK) == 20_000 * NS_PER_MS and clocks.remaining_ns(WHITE) == 5_000 * NS_PER_MS
    assert clocks.charge(BLACK, 1_000 * NS_PER_MS).remaining_ns == 19_200 * NS_PER_MS
    assert clocks.charge(WHITE, 1_000 * NS_PER_MS).remaining_ns == 4_050 * NS_PER_MS
    assert not clocks.charge(WHITE, 4_100 * NS_PER_MS).in_time  # 4.1 s is past White's 4.05 s, not Black's
    message = clocks.message(WHITE)
    assert (message.black_ms, message.white_ms, message.increment_ms) == (19_200, 4_050, 50)
    moves = GameClock(parse_time_control("movetime:1"), parse_time_control("40/60"))
    assert moves.deadline_ns(BLACK) == 1_000 * NS_PER_MS and moves.moves_to_go(WHITE) == 40


# -- the whole path, real processes --------------------------------------------------------------------


def test_options_limits_and_time_odds_reach_the_bot_and_the_record(tmp_path: Path) -> None:
    log_black, log_white = tmp_path / "black.jsonl", tmp_path / "white.jsonl"
    black = f"name=p1 cmd='{sys.executable} {PROBE} {log_black}' option.level=7 option.style=wild tc=20+0.2 nodes=50"
    white = f"name=p2 cmd='{sys.executable} {PROBE} {log_white} --over' option.fast=true depth=3 nodes=9"
    out = tmp_path / "m"
    argv = ["match", "--black", black, "--white", white, "--tc", "5+0.05", "--size", "4x4", "--games", "2"]
    assert main([*argv, "-j", "1", "--out", str(out)]) == 0
    seen = [json.loads(line) for line in log_black.read_text().splitlines()]
    assert len(seen) == 2
    assert "| p1 [20+0.2] |" in (out / "standings.md").read_text(encoding="utf-8")  # time odds in the standings
    rows = {row["name"]: row for row in csv.DictReader(io.StringIO((out / "standings.csv").read_text()))}
    assert (rows["p1"]["time_control"], rows["p2"]["time_control"]) == ("20+0.2", "")
    odds = {"base_ms": 20000, "increment_ms": 200, "moves_per_period": None, "move_time_ms": None}
    even = {"base_ms": 5000, "increment_ms": 50, "moves_per_period": None, "move_time_ms": None}
    for game in seen:
        assert game["options"] == {"level": 7, "weight": 0.5, "fast": False, "style": "wild", "label": ""}
        assert (game["nodes"], game["depth"]) == (50, None)
        assert game["time_control"] == odds and game["opponent_time_control"] == even
    for game in (json.loads(line) for line in log_white.read_text().splitlines()):
        assert game["options"] == {"level": 3, "weight": 0.5, "fast": True, "style": "calm", "label": ""}
        assert (game["nodes"], game["depth"]) == (9, 3)
        assert game["time_control"] == even and game["opponent_time_control"] == odds
    games = records(out)
    for record in games:
        assert record.limit_bound
        p1 = BLACK if record.black.name == "p1" else WHITE
        p2 = p1.other
        info = record.black if p1 is BLACK else record.white
        assert info.options is not None and info.options["level"] == 7
        assert record.settings.time_control_for(p1) == parse_time_control("20+0.2")
        assert record.settings.time_control_for(p2) == parse_time_control("5+0.05")
        # Each clock runs by its own control: instant moves leave about base + increments.
        for move in record.moves:
            base = 20_000 if move.color == p1 else 5_000
            assert move.clock_ms is not None and base - 1_000 < move.clock_ms <= base + 200 * len(record.moves)
        # p2 reported one node over its limit in every info: noted, the result unchanged.
        assert record.notes and all("over its node limit of 9" in note for note in record.notes)
        assert all(f"{p2} (p2) reported 10 nodes" in note for note in record.notes)


def test_bad_option_values_are_one_clear_error_before_the_first_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    black = f"name=p1 cmd='{sys.executable} {PROBE} {tmp_path / 'a'}' option.level=11 option.colour=red"
    out = tmp_path / "m"
    assert main(["match", "--black", black, "--white", "random", "--size", "3x3", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "bot 'p1': " in error
    assert "option.level='11': 11 is above its maximum 10 (level (int, 1..10, default 3))" in error
    assert "it declares no option 'colour' (its options: level (int, 1..10, default 3)" in error
    assert not (out / GAMES_FILE).exists() and not (tmp_path / "a").exists()  # no game was started


def test_a_slow_starting_bot_needs_a_longer_start_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = f"name=slow cmd='{sys.executable} {TESTBOT} slowhello 800'"
    argv = ["match", "--black", slow, "--white", "random", "--size", "3x3", "--games", "1", "-j", "1"]
    assert main([*argv, "--start-timeout", "0.3", "--out", str(tmp_path / "short")]) == 1
    assert "no hello within 0.3 s of hello" in capsys.readouterr().err
    assert main([*argv, "--start-timeout", "20", "--out", str(tmp_path / "long")]) == 0
    (record,) = records(tmp_path / "long")
    assert record.termination == "normal"


def test_two_node_limited_runs_with_the_same_openings_play_the_same_games(tmp_path: Path) -> None:
    argv = ["match", "--black", "alphabeta", "--white", "strong depth=3", "--nodes", "400", "--tc", "60+1"]
    argv += ["--size", "5x5", "--games", "2", "--openings-plies", "2", "--openings-seed", "7"]
    games = []
    for run, jobs in (("one", "1"), ("two", "2")):  # one game at a time, then both at once: the speed differs
        assert main([*argv, "-j", jobs, "--out", str(tmp_path / run)]) == 0
        played = sorted(records(tmp_path / run), key=lambda r: r.game_id)
        assert all(r.limit_bound and not r.notes for r in played)
        games.append([(r.game_id, r.all_moves(), r.result) for r in played])
    assert games[0] == games[1]
    assert len(games[0][0][1]) > 6


def test_the_kit_declares_options_and_gives_each_game_its_values_and_limits() -> None:
    import io

    from protocol.kit import Clock, Game, run_bot
    from protocol.rules import PASS, Position

    tc = {"base_ms": 1000, "increment_ms": 0, "moves_per_period": None, "move_time_ms": None}
    game = {"type": "new_game", "color": "black", "width": 3, "height": 3, "komi": 0.5, "time_control": tc}
    lines = [
        {"type": "hello", "protocol": 1, "referee": "test"},
        {**game, "game_id": "old", "opponent": "x"},  # an older referee: no options, no limits
        {**game, "game_id": "new", "opponent": "x", "options": {"depth": 7, "extra": 1}, "nodes": 500, "depth": 4},
        {"type": "turn", "game_id": "new", "moves": [], "clock": {"black_ms": 1000, "white_ms": 1000}},
        {"type": "quit"},
    ]
    stdin = io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
    stdout = io.StringIO()
    games: list[Game] = []
    clocks: list[Clock] = []

    def choose(position: Position, clock: Clock) -> str:
        clocks.append(clock)
        return str(position.legal_placements()[0]) if position.legal_placements() else str(PASS)

    depth = Option("depth", "int", 3, min=1, max=9)
    assert run_bot(choose, name="k", options=[depth], on_new_game=games.append, stdin=stdin, stdout=stdout) == 0
    hello = json.loads(stdout.getvalue().splitlines()[0])
    assert hello["options"] == [{"name": "depth", "type": "int", "default": 3, "min": 1, "max": 9}]
    assert isinstance(parse_bot_line(stdout.getvalue().splitlines()[0]), BotHello)
    assert (games[0].options, games[0].nodes, games[0].depth) == ({"depth": 3}, None, None)
    assert (games[1].options, games[1].nodes, games[1].depth) == ({"depth": 7}, 500, 4)
    assert (clocks[0].nodes, clocks[0].depth) == (500, 4)
    with pytest.raises(ValueError, match="given twice"):
        run_bot(choose, name="k", options=[depth, depth], stdin=io.StringIO(""), stdout=io.StringIO())


def test_a_bot_is_judged_by_its_own_time_control(tmp_path: Path) -> None:
    slow = f"cmd='{sys.executable} {TESTBOT} slow 300'"
    argv = ["match", "--white", "random", "--size", "3x3", "--games", "1", "--tc", "10+0.1", "-j", "1"]
    assert main([*argv, "--black", f"name=slow {slow} tc=movetime:0.2", "--out", str(tmp_path / "odds")]) == 0
    (lost,) = records(tmp_path / "odds")
    assert lost.termination == "time" and lost.loser == "black" and "over its 200 ms" in lost.reason
    assert main([*argv, "--black", f"name=slow {slow}", "--out", str(tmp_path / "even")]) == 0
    (played,) = records(tmp_path / "even")
    assert played.termination == "normal"
