"""Bot arguments: every form of `--black`/`--white` becomes the right BotSpec, and bad ones say what to do."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from referee.run.botspec import (
    BotSpec,
    BotSpecError,
    check_bot_command,
    default_name,
    load_bot_file,
    parse_bot_arg,
    resolve_command,
    sample_bot_names,
)


def test_sample_bot_names_are_the_runnable_modules() -> None:
    names = sample_bot_names()
    assert {"random", "greedy"} <= set(names)
    assert "search" not in names  # a helper module without a __main__ guard is not a bot


def test_a_sample_bot_name_runs_its_module_with_this_python() -> None:
    spec = parse_bot_arg("greedy")
    assert spec == BotSpec(name="greedy", command=[sys.executable, "-m", "sample_bots.greedy"])


def test_a_command_line_is_split_like_a_shell_without_a_shell() -> None:
    spec = parse_bot_arg("./my\\ bot --depth 3 'two words' $HOME")
    assert spec.command == ["./my bot", "--depth", "3", "two words", "$HOME"]
    assert spec.name == "my-bot"


@pytest.mark.parametrize("word", ["python", "python3"])
def test_python_runs_with_the_referees_interpreter(word: str) -> None:
    spec = parse_bot_arg(f"{word} bots/mine.py --fast")
    assert spec.command == [sys.executable, "bots/mine.py", "--fast"]
    assert spec.name == "mine"
    assert parse_bot_arg(f"{word} -m pkg.deep_bot").name == "deep_bot"


def test_key_value_fields(tmp_path: Path) -> None:
    spec = parse_bot_arg(
        'name=deep cmd="python3 bot.py --depth 9" dir=bots env.THREADS=1 env.MODE="a b"', base_dir=tmp_path
    )
    assert spec == BotSpec(
        name="deep",
        command=[sys.executable, "bot.py", "--depth", "9"],
        dir=tmp_path / "bots",
        env={"THREADS": "1", "MODE": "a b"},
    )
    assert parse_bot_arg("name=r1 cmd=random").command == [sys.executable, "-m", "sample_bots.random"]
    assert parse_bot_arg("cmd=random").name == "random"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name=x", "no cmd= field"),
        ("name=x cmd=random stray", "'stray' is not a field"),
        ('cmd="random', "check the quotes"),
        ("name= cmd=random", "name"),
        ("   ", "empty"),
        ("cmd=''", "command is empty"),
    ],
)
def test_bad_bot_arguments_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(BotSpecError, match=words):
        parse_bot_arg(text)


def test_bot_file(tmp_path: Path) -> None:
    folder = tmp_path / "bots"
    folder.mkdir()
    (folder / "deep.toml").write_text(
        'name = "deep"\ncommand = ["python3", "deep.py", "--x"]\ndir = "src"\n[env]\nTHREADS = "2"\n'
    )
    spec = parse_bot_arg(str(folder / "deep.toml"))
    assert spec == BotSpec(
        name="deep", command=[sys.executable, "deep.py", "--x"], dir=folder / "src", env={"THREADS": "2"}
    )
    (folder / "short.toml").write_text('command = "greedy"\n')
    short = load_bot_file(folder / "short.toml")
    assert short.name == "greedy"
    assert short.dir == folder  # a bot file's commands run from its own folder by default


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("command = 3\n", "`command` must be"),
        ('command = "x"\ncolour = "red"\n', "unknown field"),
        ("command = [\n", "not valid TOML"),
        ('command = "x"\nenv = { A = 1 }\n', "`env` must be a table of strings"),
    ],
)
def test_bad_bot_files(tmp_path: Path, content: str, words: str) -> None:
    path = tmp_path / "bot.toml"
    path.write_text(content)
    with pytest.raises(BotSpecError, match=words):
        parse_bot_arg(str(path))
    with pytest.raises(BotSpecError, match="does not exist"):
        parse_bot_arg(str(tmp_path / "missing.toml"))


def test_default_names() -> None:
    assert default_name(["/usr/local/bin/engine", "--x"]) == "engine"
    assert default_name(["./run.sh"]) == "run"
    assert default_name([sys.executable]) == "python"
    assert resolve_command(["random", "--seed", "1"]) == ["random", "--seed", "1"]  # not a bare sample name


def test_check_bot_command_finds_missing_programs(tmp_path: Path) -> None:
    check_bot_command(parse_bot_arg("random"))
    check_bot_command(BotSpec(name="ls", command=["ls"]))
    with pytest.raises(BotSpecError, match=r"bot 'nosuch'.*'no-such-program-xyz' was not found on PATH"):
        check_bot_command(BotSpec(name="nosuch", command=["no-such-program-xyz"]))
    with pytest.raises(BotSpecError, match=r"does not exist.*check the path"):
        check_bot_command(BotSpec(name="b", command=["./missing-bot"], dir=tmp_path))
    script = tmp_path / "bot.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(BotSpecError, match=r"not an executable file.*chmod"):
        check_bot_command(BotSpec(name="b", command=["./bot.sh"], dir=tmp_path))
    script.chmod(0o755)
    check_bot_command(BotSpec(name="b", command=["./bot.sh"], dir=tmp_path))
    with pytest.raises(BotSpecError, match=r"working directory .* does not exist"):
        check_bot_command(BotSpec(name="b", command=["ls"], dir=tmp_path / "nope"))
    # The bot's own PATH is where its program is looked for.
    (tmp_path / "mybot").write_text("#!/bin/sh\n")
    (tmp_path / "mybot").chmod(0o755)
    check_bot_command(BotSpec(name="b", command=["mybot"], env={"PATH": f"{tmp_path}{os.pathsep}/usr/bin"}))


@pytest.mark.parametrize(
    ("text", "name", "command"),
    [
        ("my bot=random", "my bot", [sys.executable, "-m", "sample_bots.random"]),
        ("mine=./bot --depth=3", "mine", ["./bot", "--depth=3"]),
        ("Élodie v2=greedy", "Élodie v2", [sys.executable, "-m", "sample_bots.greedy"]),
    ],
)
def test_a_name_before_the_first_equals_sign_names_any_bot(text: str, name: str, command: list[str]) -> None:
    spec = parse_bot_arg(text)
    assert (spec.name, spec.command) == (name, command)


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("./bot --depth=3", ["./bot", "--depth=3"]),  # an option with a value is not a name
        ("python3 bot.py --depth=3", [sys.executable, "bot.py", "--depth=3"]),  # nor a command that starts a program
        ("ls x=1", ["ls", "x=1"]),
    ],
)
def test_an_equals_sign_inside_a_command_line_is_not_a_name(text: str, command: list[str]) -> None:
    assert parse_bot_arg(text).command == command


@pytest.mark.parametrize("name", ["a\nb", "tab\there", "esc\x1b[31m", " padded", "x" * 65, ""])
def test_one_name_rule_everywhere(tmp_path: Path, name: str) -> None:
    from referee.run.config import ConfigError, parse_config

    with pytest.raises(BotSpecError, match="name"):
        parse_bot_arg(f"name={shlex.quote(name)} cmd=random")
    data = {"bots": [{"name": name, "command": "random"}, {"name": "b", "command": "greedy"}]}
    with pytest.raises(ConfigError, match=r"bots\[0\]\.name"):
        parse_config(data, source="t.toml")
    path = tmp_path / "bot.toml"
    path.write_text(f"name = {json.dumps(name)}\ncommand = 'random'\n")
    with pytest.raises(BotSpecError, match="name"):
        load_bot_file(path)


def test_unnamed_interpreted_bots_are_named_after_their_script() -> None:
    assert parse_bot_arg("node bots/x.js --fast").name == "x"
    assert default_name(["java", "-jar", "engines/deep.jar"]) == "deep"
    assert default_name(["ruby", "-w", "walker.rb"]) == "walker"
    assert default_name(["deno", "run", "bot.ts"]) == "bot"
    assert default_name(["node"]) == "node"


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_missing_interpreter_is_named(tmp_path: Path) -> None:
    _executable(tmp_path / "a.py", "#!/usr/bin/no-such-python\nprint(1)\n")
    with pytest.raises(BotSpecError, match=r"interpreter '/usr/bin/no-such-python' in its #! line, which does not"):
        check_bot_command(BotSpec(name="a", command=["./a.py"], dir=tmp_path))
    _executable(tmp_path / "b.py", "#!/usr/bin/env no-such-python-xyz -u\nprint(1)\n")
    with pytest.raises(BotSpecError, match=r"interpreter 'no-such-python-xyz' in its #! line \(via env\)"):
        check_bot_command(BotSpec(name="b", command=["./b.py"], dir=tmp_path))
    _executable(tmp_path / "c.py", "print(1)\n")
    with pytest.raises(BotSpecError, match=r"without a #! line.*Exec format error.*python3"):
        check_bot_command(BotSpec(name="c", command=["./c.py"], dir=tmp_path))
    _executable(tmp_path / "d.py", f"#!{sys.executable}\nprint(1)\n")
    check_bot_command(BotSpec(name="d", command=["./d.py"], dir=tmp_path))


async def test_starting_a_script_with_a_missing_interpreter_names_it(tmp_path: Path) -> None:
    from referee.play.process import BotStartError, open_bot

    _executable(tmp_path / "a.py", "#!/usr/bin/no-such-python\nprint(1)\n")
    _executable(tmp_path / "c.py", "print(1)\n")
    with pytest.raises(BotStartError, match=r"interpreter '/usr/bin/no-such-python'"):
        async with open_bot(BotSpec(name="a", command=["./a.py"], dir=tmp_path), tmp_path / "logs"):
            pass
    with pytest.raises(BotStartError, match=r"Exec format error"):
        async with open_bot(BotSpec(name="c", command=["./c.py"], dir=tmp_path), tmp_path / "logs"):
            pass


def test_one_bot_is_not_a_tournament() -> None:
    from referee.run.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match="needs at least two bots: add another"):
        parse_config({"bots": [{"name": "a", "command": "random"}]}, source="--bot", key_sources={"bots": "--bot"})


def test_a_missing_script_is_found_before_the_first_game(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "here.py").write_text("print()\n")
    check_bot_command(parse_bot_arg(f"name=ok cmd='python3 bots/here.py' dir={tmp_path}"))
    if shutil.which("node"):
        check_bot_command(parse_bot_arg(f"node {tmp_path}/bots/here.py"))
    for text, shown in (
        (f"name=x cmd='python3 -u bots/gone.py --fast' dir={tmp_path}", "bots/gone.py"),
        (f"python3 {tmp_path}/bots/gone.py", f"{tmp_path}/bots/gone.py"),
    ):
        with pytest.raises(BotSpecError, match=rf"the script '{re.escape(shown)}' does not exist"):
            check_bot_command(parse_bot_arg(text))
    check_bot_command(parse_bot_arg("python3 -m sample_bots.random"))  # a module, not a script


def test_a_configs_bot_commands_are_relative_to_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from referee.cli import main

    folder = tmp_path / "league"
    (folder / "bots").mkdir(parents=True)
    (folder / "bots" / "mine.py").write_text(
        "import runpy\nrunpy.run_module('sample_bots.random', run_name='__main__')\n"
    )
    (folder / "league.toml").write_text(
        'games = 2\ntime_control = "5+0.1"\nsize = "4x4"\n'
        '[[bots]]\nname = "mine"\ncommand = "python3 bots/mine.py"\n'
        '[[bots]]\nname = "other"\ncommand = "random"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["tournament", str(folder / "league.toml"), "--out", str(tmp_path / "out")]) == 0
    records = [json.loads(line) for line in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["termination"] == "normal" for r in records)
    capsys.readouterr()
    (folder / "bots" / "mine.py").unlink()
    assert main(["tournament", str(folder / "league.toml"), "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert "bot 'mine': the script 'bots/mine.py' does not exist" in err and str(folder / "bots" / "mine.py") in err
    assert not (tmp_path / "out2" / "games.jsonl").exists()
