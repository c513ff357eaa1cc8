"""What PROTOCOL.md tells a stranger writing a bot, checked against what the referee does.

Each test quotes the claim it checks; the bots are in memory (scripted replies over memory streams), so
only the referee's behaviour is under test.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from protocol.framing import LineBuffer
from protocol.messages import NewGame, json_schemas
from protocol.rules import Position
from referee.play.game import run_game
from referee.play.process import BotChannel
from referee.record import GameRecord, GameSettings, Termination
from referee.timing.clock import parse_time_control

DOC = (Path(__file__).resolve().parent.parent / "PROTOCOL.md").read_text(encoding="utf-8")

Reply = Callable[[dict[str, Any]], object]


def first_legal(turn: dict[str, Any], width: int = 3, height: int = 3) -> object:
    position = Position.from_moves(turn["moves"], width, height, 0.5)
    placements = position.legal_placements()
    return str(placements[0]) if placements else "pass"


class Bot:
    """Answers hello and new_game, and each turn with `reply(turn)`; keeps every message it was sent."""

    def __init__(self, reply: Reply = first_legal) -> None:
        self.reply = reply
        self.received: list[dict[str, Any]] = []

    async def serve(self, stream: trio.abc.Stream) -> None:
        buffer = LineBuffer()
        while data := await stream.receive_some(65536):
            for line in buffer.feed(bytes(data)):
                message = json.loads(line)
                self.received.append(message)
                answer: dict[str, Any] | None = None
                if message["type"] == "hello":
                    answer = {"type": "hello", "protocol": 1, "name": "scripted"}
                elif message["type"] == "new_game":
                    answer = {"type": "ready", "game_id": message["game_id"]}
                elif message["type"] == "turn":
                    answer = {"type": "move", "move": self.reply(message)}
                if answer is not None:
                    await stream.send_all(json.dumps(answer).encode() + b"\n")


async def play(black: Bot, white: Bot, settings: GameSettings) -> GameRecord:
    async with trio.open_nursery() as nursery:
        channels = []
        for name, bot in (("B", black), ("W", white)):
            referee_end, bot_end = trio.testing.memory_stream_pair()
            nursery.start_soon(bot.serve, bot_end)
            channels.append(BotChannel(name, referee_end, referee_end))
        record = await run_game("g", channels[0], channels[1], settings)
        nursery.cancel_scope.cancel()
    return record


SETTINGS = GameSettings(width=3, height=3, komi=0.5, time_control=parse_time_control("10+0.1"))


@pytest.mark.parametrize("text", ["d05d4", "c01c2", "a1a1", "", "D1D2", "a1-a2"])
async def test_a_string_that_is_not_a_legal_move_loses_as_an_illegal_move(text: str) -> None:
    # "The referee accepts any string in a `move` message and judges it with the rules: one that is not a
    # move ... loses as an illegal move" (Moves), and "ranks without leading zeros" (c01 is not a cell).
    record = await play(Bot(lambda _: text), Bot(), SETTINGS)
    assert (record.termination, record.loser) == (Termination.ILLEGAL_MOVE, "black")
    if text == "a1a1":
        assert "the pit and the root must be different (adjacent) cells" in record.reason
    assert "without leading zeros" in DOC and "**two different cells**" in DOC


async def test_a_move_that_is_not_a_string_is_a_protocol_error() -> None:
    # "a value of the wrong JSON type ... (a `move` that is not a string ...)": protocol.
    record = await play(Bot(lambda _: 5), Bot(), SETTINGS)
    assert (record.termination, record.loser) == (Termination.PROTOCOL, "black")


async def test_after_an_odd_opening_white_moves_first_and_the_opening_is_not_on_any_clock() -> None:
    # "After an opening of odd length, White moves first"; "Opening moves take no time from either clock,
    # and do not count towards moves_to_go".
    settings = GameSettings(width=3, height=3, komi=0.5, time_control=parse_time_control("2/10"), opening=["a1a2"])
    black, white = Bot(), Bot()
    record = await play(black, white, settings)
    assert record.termination is Termination.NORMAL
    assert record.moves[0].color == "white"
    white_turns = [m for m in white.received if m["type"] == "turn"]
    black_turns = [m for m in black.received if m["type"] == "turn"]
    assert white_turns[0]["moves"] == ["a1a2"] and len(black_turns[0]["moves"]) == 2
    for turns in (white_turns, black_turns):
        assert turns[0]["clock"]["moves_to_go"] == 2  # a full period: the opening move was nobody's
    assert white_turns[0]["clock"]["white_ms"] == white_turns[0]["clock"]["black_ms"] == 10_000


async def test_an_opening_may_hold_a_pass() -> None:
    settings = GameSettings(width=3, height=3, komi=0.5, time_control=parse_time_control("10"), opening=["pass"])
    white = Bot()
    record = await play(Bot(), white, settings)
    assert record.moves[0].color == "white"
    assert next(m for m in white.received if m["type"] == "turn")["moves"] == ["pass"]


def test_the_bot_is_not_told_the_margin() -> None:
    # "The bot is not told the margin (no message carries it)".
    assert "margin_ms" not in NewGame.model_fields
    assert "margin" not in json.dumps(json_schemas()["referee_to_bot"])
    assert "**The bot is not told the margin**" in DOC


def test_periods_with_an_increment_are_documented_as_the_referee_reads_them() -> None:
    control = parse_time_control("40/60+1")
    assert (control.base_ms, control.increment_ms, control.moves_per_period) == (60_000, 1_000, 40)
    assert "| periods with an increment | 60000 | 1000 | 40 | `null` | `40/60+1` |" in DOC


@pytest.mark.parametrize(
    ("width", "height", "komi"), [(2, 2, 0), (2, 2, 2), (3, 3, 1), (3, 3, 0), (3, 3, 2), (2, 3, 1)]
)
def test_a_draw_is_possible_exactly_when_the_board_minus_a_whole_komi_is_even(
    width: int, height: int, komi: int
) -> None:
    # "a whole-number komi allows one only when W·H - komi is even".
    rng = random.Random(width * 100 + height * 10 + komi)
    draws = 0
    for _ in range(400):
        position = Position(width, height, komi)
        while not position.is_over():
            moves = position.legal_moves()
            position.push(rng.choice(moves))
        outcome = position.outcome()
        assert outcome is not None
        draws += outcome.winner is None
    assert (draws > 0) == ((width * height - komi) % 2 == 0)
