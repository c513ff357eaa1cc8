"""Tournament config: the TOML format, errors that name the key, command-line overrides, the fingerprint."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest

from referee.cli import UsageError, build_parser
from referee.commands.tournament import build_plan, parse_bot_option
from referee.run.config import ConfigError, RunPlan, load_config, parse_config, resolve_plan
from referee.run.schedule import Format

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tournament.toml"

GOOD = """
format = "gauntlet"
games = 3
time_control = "5+0.25"
size = "6x5"
komi = 0.5
concurrency = 3
out = "results"

[openings]
plies = 2
seed = "abc"

[[bots]]
name = "mine"
command = "python bots/mine.py --fast"
dir = "bots"
env = { THREADS = "1" }

[[bots]]
name = "greedy"
command = ["greedy"]
"""


def write(tmp_path: Path, text: str, name: str = "tournament.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def plan_for(path: Path) -> RunPlan:
    config = load_config(path)
    return resolve_plan(config, base_dir=path.parent, source=str(path), default_out=path.parent / "default-out")


def test_a_full_config_is_resolved_relative_to_its_folder(tmp_path: Path) -> None:
    plan = plan_for(write(tmp_path, GOOD))
    assert plan.format is Format.GAUNTLET
    assert plan.games_per_pairing == 3
    assert (plan.width, plan.height, plan.komi) == (6, 5, 0.5)
    assert (plan.time_control.base_ms, plan.time_control.increment_ms) == (5000, 250)
    assert plan.concurrency == 3
    assert plan.out_dir == tmp_path / "results"
    mine, greedy = plan.bots
    assert mine.command == [sys.executable, "bots/mine.py", "--fast"]
    assert mine.dir == (tmp_path / "bots").resolve()
    assert mine.env == {"THREADS": "1"}
    assert greedy.command == [sys.executable, "-m", "sample_bots.greedy"]
    assert len(plan.openings) == 2  # 3 games: two openings
    assert all(len(opening) == 2 for opening in plan.openings)


def test_the_example_config_is_valid() -> None:
    plan = plan_for(EXAMPLE)
    assert plan.bot_names == ["alphabeta", "greedy", "random"]
    assert plan.format is Format.ROUND_ROBIN


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n[[bots]]\nname = "c"\n',
            "tournament.toml: bots[2].command: field required",
        ),
        (
            '[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\ntime_control = "60+"\n',
            "tournament.toml: bots[1].time_control: unknown key; the keys here are command, cpu_limit_s, depth, dir,"
            " env, max_processes, memory_mb, name, nodes, options, ponder, rating, sandbox, tc (for this bot's own time"
            ' control, time odds, write tc = "..."; for every bot, time_control is a top-level key: move it above the'
            " first [table] or [[bots]])",
        ),
        (
            'time_control = "60+"\n[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: time_control: time control '60+' is not understood",
        ),
        (
            'size = "30x4"\n[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: size: '30x4': a 30x4 board is not supported; width and height must be 2 to 26",
        ),
        (
            'size = "big"\n[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: size: 'big' is not a board size",
        ),
        (
            'games = 0\n[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: games: Input should be greater than or equal to 1",
        ),
        (
            'format = "ladder"\n[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: format: Input should be 'round-robin', 'gauntlet', 'pairings', 'swiss',"
            " 'knockout' or 'adaptive'",
        ),
        (
            'gmaes = 2\n[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: gmaes: unknown key; the keys here are adjudication, anchor, bots, cluster, concurrency,",
        ),
        (
            '[openings]\nplys = 2\n[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: openings.plys: unknown key; the keys here are file, moves, order, plies, seed, start",
        ),
        ('[[bots]]\nname = "a"\ncommand = "x"\n', "tournament.toml: bots: a tournament needs at least two bots"),
        ("", "tournament.toml: bots: field required"),
        (
            '[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "a"\ncommand = "y"\n',
            "tournament.toml: bots[1].name: 'a' is already the name of bots[0]",
        ),
        (
            '[[bots]]\nname = "a"\ncommand = "x \'y"\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: bots[0].command: cannot split",
        ),
        (
            '[[bots]]\nname = "a"\ncommand = []\n[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: bots[0].command: List should have at least 1 item",
        ),
        (
            'movetime = 1\ntime_control = "1+0"\n[[bots]]\nname = "a"\ncommand = "x"\n'
            '[[bots]]\nname = "b"\ncommand = "y"\n',
            "tournament.toml: time_control and movetime: give one of them, not both",
        ),
        ("bots = [\n", "tournament.toml: not valid TOML"),
    ],
)
def test_every_error_names_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert message in str(caught.value).replace(str(tmp_path) + "/", "")


def test_all_problems_are_listed_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"bots": [{"name": "a"}, {"command": "x"}], "komi": "lots"}, source="t.toml")
    lines = str(caught.value).splitlines()
    assert "t.toml: bots[0].command: field required" in lines
    assert "t.toml: bots[1].name: field required" in lines
    assert any(line.startswith("t.toml: komi: ") for line in lines)


def test_a_missing_config_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml")


def test_a_bad_openings_file_names_the_key_and_the_line(tmp_path: Path) -> None:
    write(tmp_path, "a1a2\nb1b1\n", "openings.txt")
    path = write(
        tmp_path,
        'size = 4\n[openings]\nfile = "openings.txt"\n[[bots]]\nname = "a"\ncommand = "x"\n'
        '[[bots]]\nname = "b"\ncommand = "y"\n',
    )
    with pytest.raises(ConfigError, match=r"openings\.file: .*openings\.txt: line 2: move 1 \('b1b1'\)"):
        plan_for(path)


def test_too_many_opening_plies_for_the_board_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'size = 2\n[openings]\nplies = 3\n[[bots]]\nname = "a"\ncommand = "x"\n[[bots]]\nname = "b"\ncommand = "y"\n',
    )
    with pytest.raises(ConfigError, match=r"openings\.plies: 3 placements leave nothing to play on a 2x2 board"):
        plan_for(path)


def parse_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["tournament", *argv])


def test_no_arguments_gives_the_demo_of_the_sample_bots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    plan = build_plan(parse_args())
    assert plan.bot_names == ["random", "greedy", "alphabeta"]
    assert all(bot.command[:2] == [sys.executable, "-m"] for bot in plan.bots)
    assert plan.format is Format.ROUND_ROBIN
    assert plan.out_dir == tmp_path / "alternator-out" / "demo"


def test_options_override_the_config_file(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    plan = build_plan(
        parse_args(
            str(path), "--games", "5", "--tc", "2+0", "--size", "4", "--komi", "1.5", "--concurrency", "1",
            "--format", "round-robin", "--openings-plies", "1", "--out", str(tmp_path / "elsewhere"),
        )
    )  # fmt: skip
    assert plan.games_per_pairing == 5
    assert (plan.time_control.base_ms, plan.time_control.increment_ms) == (2000, 0)
    assert (plan.width, plan.height, plan.komi, plan.concurrency) == (4, 4, 1.5, 1)
    assert plan.format is Format.ROUND_ROBIN
    assert all(len(opening) == 1 for opening in plan.openings)
    assert plan.out_dir == tmp_path / "elsewhere"
    assert plan.bot_names == ["mine", "greedy"]  # from the file


def test_movetime_on_the_command_line_replaces_the_files_clock(tmp_path: Path) -> None:
    plan = build_plan(parse_args(str(write(tmp_path, GOOD)), "--movetime", "0.25"))
    assert plan.time_control.base_ms is None
    assert plan.time_control.move_time_ms == 250


def test_an_option_error_names_the_option(tmp_path: Path) -> None:
    # The same words as `alternator match --tc 60+` (one table of options for both commands).
    with pytest.raises(UsageError, match=r"^--tc '60\+': time control '60\+' is not understood"):
        build_plan(parse_args(str(write(tmp_path, GOOD)), "--tc", "60+"))
    with pytest.raises(UsageError, match=r"^--size: size: 'x' is not a board size"):
        build_plan(parse_args("--size", "x"))


def test_bots_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    plan = build_plan(parse_args("--bot", "random", "--bot", "fast=greedy", "--bot", "mine=python3 bot.py -q"))
    assert plan.bot_names == ["random", "fast", "mine"]
    assert plan.bots[1].command == [sys.executable, "-m", "sample_bots.greedy"]
    assert plan.bots[2].command == [sys.executable, "bot.py", "-q"]
    assert plan.out_dir == tmp_path / "alternator-out" / "tournament"


def test_bot_option_forms() -> None:
    assert parse_bot_option("a=random").name == "a"
    spec = parse_bot_option('name=deep cmd="./mybot --depth 9" env.T=1')
    assert (spec.name, spec.command, spec.env) == ("deep", ["./mybot", "--depth", "9"], {"T": "1"})
    # Any field may come first, as with `match --black`: not read as a bot named "sandbox" running "1".
    spec = parse_bot_option("sandbox=1 memory_mb=64 name=x cmd=greedy")
    assert (spec.name, spec.command[1:], spec.sandbox, spec.memory_mb) == ("x", ["-m", "sample_bots.greedy"], True, 64)
    assert parse_bot_option("memory_mb=64 cmd=greedy").memory_mb == 64


def test_a_single_bot_or_duplicate_names_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="--bot: bots: a tournament needs at least two bots: add another"):
        build_plan(parse_args("--bot", "random"))
    with pytest.raises(UsageError, match=r"--bot: bots\[1\]\.name: 'random' is already the name of bots\[0\]"):
        build_plan(parse_args("--bot", "random", "--bot", "random"))


def test_the_fingerprint_holds_what_must_not_change_on_resume(tmp_path: Path) -> None:
    base = plan_for(write(tmp_path, GOOD))
    more = build_plan(parse_args(str(tmp_path / "tournament.toml"), "--games", "9", "--concurrency", "1", "--out", "x"))
    assert more.fingerprint == base.fingerprint  # games, concurrency and output do not matter
    other_tc = build_plan(parse_args(str(tmp_path / "tournament.toml"), "--tc", "9+0"))
    assert other_tc.fingerprint != base.fingerprint
    other_seed = build_plan(parse_args(str(tmp_path / "tournament.toml"), "--openings-seed", "9"))
    assert other_seed.fingerprint["openings"] != base.fingerprint["openings"]
    # The Python running the referee is not part of a bot's identity (a new venv is the same bot).
    assert base.fingerprint["bots"][0]["command"][0] == "{python}"


def test_an_openings_file_is_fingerprinted_by_its_content(tmp_path: Path) -> None:
    (tmp_path / "openings.txt").write_text("a1a2\nb1b2\n")
    path = write(tmp_path, GOOD.replace("plies = 2", 'file = "openings.txt"'))
    plan = plan_for(path)
    assert plan.openings == [("a1a2",), ("b1b2",)]
    assert plan.fingerprint["openings"]["file_openings"] == 2
    (tmp_path / "openings.txt").write_text("a1a2\nb2b1\n")
    assert plan_for(path).fingerprint["openings"] != plan.fingerprint["openings"]


def test_pairings_name_bots_of_the_field_and_set_the_format(tmp_path: Path) -> None:
    bots = [{"name": name, "command": "x"} for name in "abc"]
    config = parse_config({"bots": bots, "pairings": [{"bots": ["c", "a"]}, {"bots": ["a", "b"]}]}, source="t.toml")
    assert config.format is Format.PAIRINGS
    plan = resolve_plan(config, base_dir=tmp_path, source="t.toml", default_out=tmp_path)
    assert plan.pairs == (("c", "a"), ("a", "b"))
    assert plan.fingerprint["format_settings"] == {"pairings": [["c", "a"], ["a", "b"]]}
    for pairings, message in (
        ([{"bots": ["a", "z"]}], "t.toml: pairings[0].bots: 'z' is not one of the bots (a, b, c)"),
        ([{"bots": ["a", "a"]}], "t.toml: pairings[0].bots: a bot cannot play itself ('a')"),
        ([{"bots": ["a", "b"]}, {"bots": ["b", "a"]}], "t.toml: pairings[1].bots: b and a are already paired"),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            parse_config({"bots": bots, "pairings": pairings}, source="t.toml")
    with pytest.raises(ConfigError, match="format: swiss with \\[\\[pairings\\]\\]"):
        parse_config({"bots": bots, "format": "swiss", "pairings": [{"bots": ["a", "b"]}]}, source="t.toml")


def test_format_settings_are_checked_against_the_format(tmp_path: Path) -> None:
    bots = [{"name": name, "command": "x"} for name in "abcd"]
    cases = (
        ({"format": "gauntlet", "seeds": 4}, "seeds: 4 seeds of 4 bots leave no one to play; give 1 to 3"),
        ({"seeds": 2}, "seeds: only a gauntlet has seeds"),
        ({"format": "swiss", "rounds": 4}, "rounds: 4 rounds of 4 bots would need rematches; give 1 to 3"),
        ({"rounds": 2}, "rounds: only a Swiss tournament has rounds"),
        ({"format": "knockout", "games": 3}, "games: 3 games an encounter: a knockout plays game pairs"),
        ({"max_games": 10}, "max_games: only an adaptive run has a budget"),
    )
    for settings, message in cases:
        with pytest.raises(ConfigError, match=re.escape(message)):
            parse_config({"bots": bots, **settings}, source="t.toml")
    swiss = parse_config({"bots": bots, "format": "swiss"}, source="t.toml")
    assert resolve_plan(swiss, base_dir=tmp_path, source="t", default_out=tmp_path).rounds == 2  # log2 of 4
    plan = resolve_plan(
        parse_config({"bots": bots, "format": "gauntlet", "seeds": 2}, source="t"),
        base_dir=tmp_path,
        source="t",
        default_out=tmp_path,
    )
    assert plan.seeds == 2 and plan.fingerprint["format_settings"] == {"seeds": 2}
    plain = resolve_plan(parse_config({"bots": bots}, source="t"), base_dir=tmp_path, source="t", default_out=tmp_path)
    assert "format_settings" not in plain.fingerprint  # a round robin's identity is what it was


def test_match_and_tournament_read_their_shared_options_from_one_table(tmp_path: Path) -> None:
    import argparse

    from referee.commands import match as match_command
    from referee.commands.run_keys import SHARED, bot_entry, shared_keys

    options = ["--margin-ms", "25", "--concurrency", "3", "--title", "Cup", "--movetime", "0.5", "--nodes", "900"]
    tournament = build_plan(parse_args(str(write(tmp_path, GOOD)), *options))
    parser = argparse.ArgumentParser()
    match_command.configure(parser)
    match_args = parser.parse_args(["--black", "random", "--white", "greedy", *options])
    data, sources = match_command.config_data(match_args)
    for option in SHARED:
        if option.key in data:
            assert sources[option.key] == option.flag
    assert (data["margin_ms"], data["concurrency"], data["title"], data["movetime"], data["nodes"]) == (
        tournament.margin_ms,
        tournament.concurrency,
        tournament.title,
        (tournament.time_control.move_time_ms or 0) / 1000,
        900,
    )
    assert set(shared_keys(match_args)) == {"margin_ms", "concurrency", "title", "movetime", "nodes"}
    refused = ((["--margin-ms", "-1"], "--margin-ms -1: give 0 or more"), (["--movetime", "0"], "--movetime 0"))
    for bad, words in refused:
        with pytest.raises(UsageError, match=words):
            build_plan(parse_args(str(write(tmp_path, GOOD)), *bad))
        with pytest.raises(UsageError, match=words):
            match_command.config_data(parser.parse_args(["--black", "random", "--white", "greedy", *bad]))
    # One conversion of a bot to its config entry: a tournament's --bot and a match's --black read back the same.
    spec = tournament.bots[0]
    assert bot_entry(spec)["command"] == spec.command and bot_entry(spec, default_dir=tmp_path)["dir"]


def test_the_anchor_names_one_of_the_bots(tmp_path: Path) -> None:
    from referee.stats.standings import Anchor

    path = write(tmp_path, GOOD)
    plan = build_plan(parse_args(str(path), "--anchor", f"{plan_for(path).bot_names[0]}=1500"))
    assert plan.anchor == Anchor(name=plan.bot_names[0], rating=1500)
    assert plan.fingerprint["anchor"] == f"{plan.bot_names[0]}=1500"
    with pytest.raises(UsageError, match=r"anchor: 'nobody' is not one of the bots \("):
        build_plan(parse_args(str(path), "--anchor", "nobody=1500"))
    with pytest.raises(UsageError, match="anchor: '1500' is not NAME=RATING"):
        build_plan(parse_args(str(path), "--anchor", "1500"))
