"""Bot arguments: every form of `--black`/`--white` becomes the right BotSpec, and bad ones say what to do."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from referee.botspec import (
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
