"""The command line: every subcommand is listed with its help, and `--help` stays instant."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from referee.cli import COMMANDS, main
from referee.host.limits import MAX_GAMES_PER_PAIRING


def test_help_imports_neither_pydantic_nor_trio() -> None:
    # Heavy imports belong inside each command's `run`, so that `alternator --help` answers at once.
    code = (
        "import sys; from referee.cli import build_parser; build_parser();"
        " print(sorted(m for m in ('pydantic', 'trio') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_subcommand_is_listed_with_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    listing = capsys.readouterr().out
    for name in COMMANDS:
        assert name in listing


def test_an_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["tournamnet"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'tournamnet'" in capsys.readouterr().err


def _usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    assert exit_info.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e999"])
@pytest.mark.parametrize(
    "command",
    [
        ["match", "--black", "random", "--white", "greedy"],
        ["tournament", "--bot", "random", "--bot", "greedy"],
        ["perft", "--depth", "1"],
        ["solve", "--size", "3"],
    ],
)
def test_a_komi_that_is_not_finite_is_refused_by_every_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], value: str
) -> None:
    monkeypatch.chdir(tmp_path)
    err = _usage_error(capsys, *command, f"--komi={value}")
    assert f"alternator {command[0]}: error: argument --komi: '{value}' is not a finite number" in err
    assert list(tmp_path.iterdir()) == []  # refused before anything is created


@pytest.mark.parametrize(
    "command",
    [["match", "--black", "random", "--white", "greedy"], ["tournament", "--bot", "random", "--bot", "greedy"]],
)
@pytest.mark.parametrize("games", ["0", str(MAX_GAMES_PER_PAIRING + 1), "1000000000", "many"])
def test_games_are_capped_alike_by_every_command(
    capsys: pytest.CaptureFixture[str], command: list[str], games: str
) -> None:
    err = _usage_error(capsys, *command, "--games", games)
    assert f"alternator {command[0]}: error: argument --games: " in err
    if games.isdigit():
        assert f"give 1 to {MAX_GAMES_PER_PAIRING:,} games per pairing" in err


def test_a_config_caps_games_and_refuses_a_komi_that_is_not_finite(tmp_path: Path) -> None:
    from referee.run.config import ConfigError, load_config

    bots = '[[bots]]\nname = "a"\ncommand = "random"\n[[bots]]\nname = "b"\ncommand = "greedy"\n'
    for line, says in (
        ("komi = nan", "komi: Input should be a finite number"),
        ("komi = -inf", "komi: Input should be a finite number"),
        (
            f"games = {MAX_GAMES_PER_PAIRING + 1}",
            f"games: Input should be less than or equal to {MAX_GAMES_PER_PAIRING}",
        ),
    ):
        path = tmp_path / "t.toml"
        path.write_text(f"{line}\n{bots}")
        with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {says}"):
            load_config(path)


def test_a_wrong_flag_prints_the_subcommands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(capsys, "perft", "--depth", "1", "--bogus")
    assert err.startswith("usage: alternator perft ")
    assert "alternator perft: error: unrecognized arguments: --bogus" in err


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`alternator perft --divide | head -n 1`: no BrokenPipeError traceback, the exit status of SIGPIPE."""
    script = (
        f"{sys.executable} -m referee perft --size 6 --depth 3 --divide | head -n 1; echo status ${{PIPESTATUS[0]}}"
    )
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0].count(":") == 1 and lines[1] == "status 141"
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_perft_refuses_a_depth_that_would_never_end(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["perft", "--depth", "1000"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.search(r"--depth 1000: about 10\^\d+ positions, roughly 10\^\d+ years on this machine", captured.err)
    assert re.search(r"depth \d should take under a minute\. Choose a smaller depth, or add --force", captured.err)


def test_perft_says_move_in_the_singular(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["perft", "--size", "4", "--depth", "1", "--moves", "a1a2"]) == 0
    assert "after 1 move:" in capsys.readouterr().err
    assert main(["perft", "--size", "4", "--depth", "1", "--moves", "a1a2 pass"]) == 0
    assert "after 2 moves:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("sig", "status", "word"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_signal_outside_a_commands_own_handling_is_one_line(sig: int, status: int, word: str) -> None:
    """SIGTERM used to end a command by the default action (silently) and SIGINT with a traceback, e.g. while a
    tournament was starting; now both are one line and the shell's status for that signal."""
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "perft", "--size", "8", "--depth", "4", "--divide"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell's background job starts with SIGINT ignored, and a child inherits that: give it the default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().count(":") == 1  # running: the first move's count is out
        process.send_signal(sig)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == status
    assert err.strip() == f"alternator perft: {word}"
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # this process's handler is left alone


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize(
    "entry", [["-m", "referee"], ["-c", "from referee.__main__ import entry; raise SystemExit(entry())"]]
)
def test_a_signal_at_the_first_moment_of_a_run_is_130_and_one_line(tmp_path: Path, sig: int, entry: list[str]) -> None:
    """The signal is sent before the interpreter has run a line (held by a blocked mask, as a signal that comes
    while it starts): the command's first line takes it. A match or tournament stops with 130, as the README says,
    for SIGTERM as for Ctrl-C (it used to be 143), and never with a traceback."""

    def blocked() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})

    args = ["tournament", "--bot", "random", "--bot", "greedy", "--size", "4x4", "--out", str(tmp_path / "t")]
    process = subprocess.Popen(
        [sys.executable, *entry, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=blocked
    )
    process.send_signal(sig)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.strip() == f"alternator: {'terminated' if sig == signal.SIGTERM else 'interrupted'}"


def test_sigterm_while_a_run_starts_is_130(tmp_path: Path) -> None:
    """SIGTERM once the command line runs (it used to map to 143 until the run's own handling took over)."""
    from referee.cli import status_for_signal

    assert status_for_signal(["tournament", "--bot", "x"], terminated=True) == 130
    assert status_for_signal(["--verbose", "match"], terminated=True) == 130
    assert (
        status_for_signal(["perft"], terminated=True) == 143 and status_for_signal(["perft"], terminated=False) == 130
    )
