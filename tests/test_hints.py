"""Hints for the classic mistakes: the rule for each, and the hint reaching a real forfeit's reason."""

from __future__ import annotations

import sys
from pathlib import Path

from referee.play.game import Limits, run_game
from referee.play.process import open_bot
from referee.record import GameSettings, Termination
from referee.run.botspec import BotSpec
from referee.run.hints import forfeit_hint, with_hint
from referee.timing.clock import parse_time_control
from tests.conftest import BotSpecFactory

MISSING = "ModuleNotFoundError: No module named 'protocol'"


def test_a_bot_silent_at_hello_is_asked_whether_it_flushed() -> None:
    hint = forfeit_hint("black (x) failed the handshake: no hello within 10 s of hello", [], ["./x"])
    assert hint is not None and "flush its standard output after writing its hello" in hint
    assert "flush" in (forfeit_hint("failed to start the game: no ready within 10 s of new_game", [], ["x"]) or "")


def test_a_kit_bot_started_as_a_script_is_told_to_start_through_python() -> None:
    hint = forfeit_hint("crashed", ["Traceback (most recent call last):", MISSING], ["./bots/bot.py", "--fast"])
    assert hint is not None and "start it as `python3 bot.py --fast`" in hint
    through_python = forfeit_hint("crashed", [MISSING], [sys.executable, "bot.py"])
    assert through_python is not None and "PYTHONPATH" in through_python


def test_other_forfeits_get_no_hint() -> None:
    reason = "white (w) illegal move c3c4: c4 is off the 3x3 board"
    assert forfeit_hint(reason, ["some output"], ["./w"]) is None
    assert with_hint(reason, [], ["./w"]) == reason
    assert forfeit_hint("crashed", ["ModuleNotFoundError: No module named 'numpy'"], ["./w"]) is None


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


async def _play(black: BotSpec, white: BotSpec, log_dir: Path, limits: Limits) -> str:
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("20"))
    async with open_bot(black, log_dir) as black_bot, open_bot(white, log_dir) as white_bot:
        record = await run_game("hint", black_bot, white_bot, settings, limits=limits)
    assert record.loser == "black"
    return f"{record.termination}: {record.reason}"


async def test_the_hints_reach_real_forfeits(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    # A kit bot run through a Python that lacks the kit: its traceback ends with the missing module.
    _script(tmp_path / "kitbot.py", f'#!/bin/sh\necho "{MISSING}" >&2\nexit 1\n')
    kit = BotSpec(name="kit", command=["./kitbot.py"], dir=tmp_path)
    reason = await _play(kit, bot_spec("testbot"), tmp_path / "logs", Limits(handshake_s=5))
    assert reason.startswith(str(Termination.CRASH)) and "start it as `python3 kitbot.py`" in reason
    # A bot that writes its hello without flushing it: the referee never sees it.
    _script(
        tmp_path / "buffered.py",
        f"#!{sys.executable}\nimport os, sys, time\nout = os.fdopen(1, 'w', buffering=8192)\nsys.stdin.readline()\n"
        'out.write(\'{"type": "hello", "protocol": 1, "name": "b"}\\n\')\ntime.sleep(30)\n',
    )
    buffered = BotSpec(name="buffered", command=["./buffered.py"], dir=tmp_path)
    reason = await _play(buffered, bot_spec("testbot"), tmp_path / "logs", Limits(handshake_s=1, ready_s=1))
    assert "no hello within 1 s" in reason and "did the bot flush its standard output" in reason
