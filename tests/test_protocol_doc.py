"""PROTOCOL.md's annotated game is real and consistent: every line is valid protocol, the referee writes
exactly those lines for those replies, the moves are legal, the clocks add up, the final board is right."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trio
import trio.testing

from protocol.framing import LineBuffer
from protocol.messages import Quit, Turn, encode, parse_bot_line, parse_referee_line
from protocol.rules import Position
from referee.play.game import run_game
from referee.play.process import BotChannel
from referee.record import GameSettings, Termination
from referee.timing.clock import parse_time_control

DOC = (Path(__file__).resolve().parent.parent / "PROTOCOL.md").read_text(encoding="utf-8")
SECTION = DOC.split("## A whole game, annotated", 1)[1].split("\n## ", 1)[0]
LINE_RE = re.compile(r"^(->|<-) (black|white): (\{.*\})$", re.MULTILINE)
TRANSCRIPT = [(arrow, color, line.encode()) for arrow, color, line in LINE_RE.findall(SECTION)]


def lines(arrow: str, color: str) -> list[bytes]:
    return [line for a, c, line in TRANSCRIPT if (a, c) == (arrow, color)]


def test_every_line_is_valid_protocol_written_compactly() -> None:
    assert len(TRANSCRIPT) > 20
    for arrow, _, line in TRANSCRIPT:
        if arrow == "->":
            assert encode(parse_referee_line(line)) == line + b"\n"  # what the referee's encoder writes
        else:
            parse_bot_line(line)


class ScriptedBot:
    """Answers the referee with the transcript's own replies for one colour, at once."""

    def __init__(self, color: str) -> None:
        self.replies = lines("<-", color)
        self.received: list[bytes] = []

    async def serve(self, stream: trio.abc.Stream) -> None:
        buffer = LineBuffer()
        while data := await stream.receive_some(65536):
            for line in buffer.feed(bytes(data)):
                self.received.append(line)
                if json.loads(line)["type"] in ("hello", "new_game", "turn"):
                    await stream.send_all(self.replies.pop(0) + b"\n")


def without_clock_times(line: bytes) -> Any:
    message = json.loads(line)
    if message["type"] == "turn":
        message["clock"].pop("black_ms")
        message["clock"].pop("white_ms")
    return message


async def test_the_referee_writes_exactly_these_lines_for_these_replies() -> None:
    settings = GameSettings(width=3, height=3, komi=0.5, time_control=parse_time_control("10+0.1"))
    bots = {"black": ScriptedBot("black"), "white": ScriptedBot("white")}
    async with trio.open_nursery() as nursery:
        channels = []
        for color in ("black", "white"):
            referee_end, bot_end = trio.testing.memory_stream_pair()
            nursery.start_soon(bots[color].serve, bot_end)
            channels.append(BotChannel(lines("<-", color)[0].decode(), referee_end, referee_end))
        # The bots' names as the referee knows them, which new_game passes on as the opponent's.
        channels[0].name, channels[1].name = "random", "greedy"
        record = await run_game("g1", channels[0], channels[1], settings)
        nursery.cancel_scope.cancel()
    assert record.termination is Termination.NORMAL
    for color, bot in bots.items():
        assert bot.replies == []  # every reply in the transcript was asked for
        written = lines("->", color)
        assert written[-1] == encode(Quit(type="quit")).rstrip(b"\n")  # sent on closing the bot, not by run_game
        # The same lines, but for the clock times, which were measured in the real game.
        assert [without_clock_times(x) for x in bot.received] == [without_clock_times(x) for x in written[:-1]]


def test_the_moves_are_legal_the_clocks_add_up_and_the_result_is_right() -> None:
    turns = sorted(
        (Turn.model_validate_json(line) for a, _, line in TRANSCRIPT if a == "->" and b'"turn"' in line),
        key=lambda turn: len(turn.moves),
    )
    moves = {
        color: [json.loads(x)["move"] for x in lines("<-", color) if b'"move"' in x] for color in ("black", "white")
    }
    history = [moves["black" if i % 2 == 0 else "white"][i // 2] for i in range(len(turns))]
    position = Position(3, 3, 0.5)
    for number, turn in enumerate(turns):
        assert turn.moves == history[:number]  # each turn carries the whole history so far
        position.push(position.parse_move(history[number]))  # the reply is legal there
        if number == 0:
            assert (turn.clock.black_ms, turn.clock.white_ms) == (10000, 10000)
            continue
        before = turns[number - 1].clock
        mover = "black" if (number - 1) % 2 == 0 else "white"
        idle = "white" if mover == "black" else "black"
        spent = getattr(before, f"{mover}_ms") + before.increment_ms - getattr(turn.clock, f"{mover}_ms")
        assert 0 <= spent <= 5, (number, spent)  # a few ms at most, for moves that took about 0.1 ms
        assert getattr(turn.clock, f"{idle}_ms") == getattr(before, f"{idle}_ms")
    assert position.is_over()
    outcome = position.outcome()
    assert outcome is not None
    game_over = json.loads(lines("->", "black")[-2])
    assert (game_over["result"], game_over["black_score"], game_over["white_score"]) == (
        outcome.result(),
        outcome.black_score,
        outcome.white_score,
    )
    diagram = SECTION.split("7 to 2 + 0.5.\n\n```\n", 1)[1].split("```", 1)[0]
    assert diagram.splitlines() == position.diagram().splitlines()[:4]


def test_the_longest_turn_line_is_under_12_kib_as_the_framing_section_says() -> None:
    # 26 x 26: at most 675 placements, a pass before each and two at the end; the longest cells have two digits.
    moves = ["pass", "a10a11"] * 675 + ["pass", "pass"]
    clock = {"black_ms": 10**9, "white_ms": 10**9, "increment_ms": 10**6, "move_limit_ms": None, "moves_to_go": None}
    line = encode(Turn.model_validate({"type": "turn", "game_id": "g" * 128, "moves": moves, "clock": clock}))
    assert 10 * 1024 < len(line) < 12 * 1024
    assert "under 12 KiB" in DOC
