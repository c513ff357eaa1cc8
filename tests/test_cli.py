"""The command line: every subcommand is listed with its help, and `--help` stays instant."""

from __future__ import annotations

import subprocess
import sys

import pytest

from referee.cli import COMMANDS, main


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
