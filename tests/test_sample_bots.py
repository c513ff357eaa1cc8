"""The sample bots as real subprocesses over real pipes, driven by a tiny referee written here.

The match runner of the referee is tested elsewhere; this driver is just enough protocol (handshake,
games, turns, pings, game_over, quit) to check that the bots play whole legal games and exit cleanly.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO

import pytest
import trio

from protocol import messages as m
from protocol.framing import LineBuffer
from protocol.kit import Clock, Game, TimeControl
from protocol.rules import BLACK, Color, Position
from sample_bots import greedy
from sample_bots.random import RandomBot
from tests.bot_messages import new_game

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 20  # seconds per message; only reached when a bot is broken
CLOCK = m.TurnClocks(black_ms=60000, white_ms=60000, increment_ms=0, move_limit_ms=None, moves_to_go=None)


class Bot:
    """One bot process and the referee's end of its pipes."""

    def __init__(self, process: trio.Process, log: IO[bytes]) -> None:
        self.process = process
        self.log = log
        self.buffer = LineBuffer()
        self.lines: deque[bytes] = deque()

    @classmethod
    async def start(cls, log_path: Path, module: str, *args: str) -> Bot:
        log = log_path.open("wb")
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", module, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=ROOT
        )
        return cls(process, log)

    async def send(self, message: m.RefereeMessage) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(m.encode(message))

    async def receive(self) -> m.BotMessage:
        assert self.process.stdout is not None
        with trio.fail_after(TIMEOUT):
            while not self.lines:
                chunk = await self.process.stdout.receive_some()
                assert chunk, "the bot closed its stdout"
                self.lines.extend(self.buffer.feed(chunk))
        return m.parse_bot_line(self.lines.popleft())

    async def handshake(self) -> m.BotHello:
        await self.send(m.Hello(type="hello", protocol=m.PROTOCOL_VERSION, referee="test driver"))
        reply = await self.receive()
        assert isinstance(reply, m.BotHello)
        assert reply.protocol == m.PROTOCOL_VERSION
        return reply

    async def quit(self) -> int:
        await self.send(m.Quit(type="quit"))
        with trio.fail_after(TIMEOUT):
            return await self.process.wait()


Spawn = Callable[..., Awaitable[Bot]]


@pytest.fixture
async def spawn(tmp_path: Path) -> AsyncIterator[Spawn]:
    """Start sample bots (`await spawn("random", "--seed", "1")`); any still running at the end are killed."""
    bots: list[Bot] = []

    async def start(name: str, *args: str) -> Bot:
        bots.append(await Bot.start(tmp_path / f"{name}-{len(bots)}.log", f"sample_bots.{name}", *args))
        return bots[-1]

    yield start
    for bot in bots:
        if bot.process.returncode is None:
            bot.process.kill()
            await bot.process.wait()
        bot.log.close()


async def play(black: Bot, white: Bot, game_id: str, width: int, height: int, komi: float = 0.5) -> Position:
    """One whole game; every move must be legal. Returns the final position."""
    for bot, color in ((black, "black"), (white, "white")):
        await bot.send(new_game(game_id, color, width, height, komi))
        assert await bot.receive() == m.Ready(type="ready", game_id=game_id)
    position = Position(width, height, komi)
    while not position.is_over():
        mover = black if position.turn is BLACK else white
        await mover.send(m.Turn(type="turn", game_id=game_id, moves=[str(x) for x in position.history], clock=CLOCK))
        reply = await mover.receive()
        assert isinstance(reply, m.MoveReply), reply
        position.push(position.parse_move(reply.move))  # IllegalMoveError fails the test
    outcome = position.score_outcome()
    over = m.GameOver(
        type="game_over",
        game_id=game_id,
        result=outcome.result(),
        winner=outcome.winner,
        reason="two passes",
        black_score=outcome.black_score,
        white_score=outcome.white_score,
        termination="normal",
    )
    await black.send(over)
    await white.send(over)
    return position


def greedy_replay(position: Position, greedy_color: str) -> list[str]:
    """The moves greedy.choose makes in this game, recomputed in-process (it is deterministic)."""
    replay = Position(position.width, position.height, position.komi)
    expected = []
    for move in position.history:
        if str(replay.turn) == greedy_color:
            expected.append(str(greedy.choose(replay.copy(), None)))  # type: ignore[arg-type]
        replay.push(move)
    return expected


def forced_passes_only(position: Position, color: str) -> bool:
    """Whether `color` passed only when it had no legal placement."""
    replay = Position(position.width, position.height, position.komi)
    for move in position.history:
        if move.is_pass and str(replay.turn) == color and replay.has_legal_placement():
            return False
        replay.push(move)
    return True


def moves_of(position: Position, color: str) -> list[str]:
    start = 0 if color == "black" else 1
    return [str(x) for x in position.history[start::2]]


async def test_random_and_greedy_play_whole_games_and_exit_cleanly(spawn: Spawn, tmp_path: Path) -> None:
    random_bot = await spawn("random", "--seed", "42")
    greedy_bot = await spawn("greedy")
    assert (await random_bot.handshake()).name == "random"
    assert (await greedy_bot.handshake()).name == "greedy"
    games = []
    for number, (width, height) in enumerate([(3, 3), (4, 4), (5, 4), (4, 4)]):
        game_id = f"game-{number}"
        if number % 2 == 0:
            final = await play(random_bot, greedy_bot, game_id, width, height)
            greedy_color = "white"
        else:
            final = await play(greedy_bot, random_bot, game_id, width, height)
            greedy_color = "black"
        assert final.is_over() and [str(x) for x in final.history[-2:]] == ["pass", "pass"]
        assert sum(final.scores()) == width * height
        assert moves_of(final, greedy_color) == greedy_replay(final, greedy_color)
        games.append(final)
    random_colors = ["black", "white", "black", "white"]
    for game, color in zip(games, random_colors, strict=True):
        assert forced_passes_only(game, color)
    random_moves = [moves_of(g, c) for g, c in zip(games, random_colors, strict=True)]
    assert random_moves[1] != random_moves[3]  # same board, different game ids: different games
    assert await random_bot.quit() == 0
    assert await greedy_bot.quit() == 0
    assert b"random: seed 42" in (tmp_path / "random-0.log").read_bytes()


async def test_the_same_seed_and_game_id_reproduce_a_game(spawn: Spawn) -> None:
    finals = []
    for _ in range(2):
        random_bot = await spawn("random", "--seed", "7")
        greedy_bot = await spawn("greedy")
        await random_bot.handshake()
        await greedy_bot.handshake()
        finals.append(await play(random_bot, greedy_bot, "replayed", 4, 4))
        assert await random_bot.quit() == 0
        assert await greedy_bot.quit() == 0
    assert finals[0].history == finals[1].history


async def test_a_ping_in_the_middle_of_a_turn_is_answered(spawn: Spawn) -> None:
    bot = await spawn("greedy")
    await bot.handshake()
    await bot.send(m.Ping(type="ping", id=1))
    assert await bot.receive() == m.Pong(type="pong", id=1)
    position = await play(bot, bot, "self-play", 3, 3)  # one process may play both sides of a game
    assert position.is_over()
    await bot.send(new_game("thinking", "black", 4, 4))
    assert await bot.receive() == m.Ready(type="ready", game_id="thinking")
    await bot.send(m.Turn(type="turn", game_id="thinking", moves=[], clock=CLOCK))
    await bot.send(m.Ping(type="ping", id=2))
    replies = [await bot.receive(), await bot.receive()]
    assert m.Pong(type="pong", id=2) in replies
    assert any(isinstance(r, m.MoveReply) for r in replies)
    assert await bot.quit() == 0


async def test_a_bot_exits_cleanly_when_its_input_ends(spawn: Spawn) -> None:
    bot = await spawn("random")
    await bot.handshake()
    assert bot.process.stdin is not None
    await bot.process.stdin.aclose()
    with trio.fail_after(TIMEOUT):
        assert await bot.process.wait() == 0


# -- the choices themselves, in-process -------------------------------------------------------------


def own_score(position: Position, color: Color) -> int:
    black, white = position.scores()
    return black if color is BLACK else white


def random_positions(count: int) -> list[Position]:
    """Positions from random games on small boards, every stage from the empty board to the end."""
    rng = random.Random(2024)
    positions = []
    for _ in range(count):
        position = Position(rng.randint(2, 6), rng.randint(2, 6), 0.5)
        while not position.is_over():
            positions.append(position.copy())
            position.push(rng.choice(position.legal_moves()))
    return positions


def test_greedy_takes_the_first_of_the_moves_that_gain_most_and_passes_only_when_all_lose() -> None:
    passes = 0
    for position in random_positions(30):
        mover = position.turn
        before = own_score(position, mover)
        # The score change of each placement, measured by playing it rather than by greedy's formula.
        changes = [(own_score(position.play(move), mover) - before, move) for move in position.legal_placements()]
        choice = greedy.choose(position.copy(), None)  # type: ignore[arg-type]
        if choice.is_pass:
            passes += 1
            assert all(change < 0 for change, _ in changes)
        else:
            best = max(change for change, _ in changes)
            assert best > 0
            assert choice == next(move for change, move in changes if change == best)
    assert passes > 0  # the case was exercised


def test_random_plays_placements_uniformly_and_reproducibly() -> None:
    position = Position(4, 4, 0.5)
    game = Game("g", BLACK, 4, 4, 0.5, TimeControl(60000, 0, None, None), "x")
    bot = RandomBot(5)
    bot.on_new_game(game)
    counts = Counter(str(bot.choose(position, None)) for _ in range(4800))  # type: ignore[arg-type]
    assert set(counts) == {str(move) for move in position.legal_placements()}  # never a pass
    assert max(counts.values()) < 2 * min(counts.values())  # 48 moves, ~100 each
    again = RandomBot(5)
    again.on_new_game(game)
    bot.on_new_game(game)
    no_clock: Clock = None  # type: ignore[assignment]  # neither bot looks at the clock
    assert [bot.choose(position, no_clock) for _ in range(20)] == [again.choose(position, no_clock) for _ in range(20)]
    after_a_pass = Position.from_moves(["a1b1", "pass"], 2, 2)  # a pass by the other side changes nothing
    assert not RandomBot(1).choose(after_a_pass, None).is_pass  # type: ignore[arg-type]
    blocked = Position.from_moves(["a1b1", "b2a2"], 2, 2)  # roots a2 and b1 only touch diagonally
    assert RandomBot(1).choose(blocked, None).is_pass  # type: ignore[arg-type]
