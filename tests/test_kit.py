"""The bot kit, driven through scripted conversations in memory, over pipes, and as a real process."""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from protocol import kit
from protocol import messages as m
from protocol.kit import QUIT_WAIT_S, Clock, Game, GameResult, run_bot, send_info
from protocol.rules import BLACK, PASS, WHITE, Move, Position
from referee.play.process import QUIT_GRACE_S
from tests.bot_messages import new_game

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 20  # seconds; only reached when something is broken


def hello(protocol: int = 1) -> m.Hello:
    return m.Hello(type="hello", protocol=protocol, referee="test referee")


def turn(game_id: str, moves: list[str], black_ms: int = 60000, white_ms: int = 50000) -> m.Turn:
    clock = m.TurnClocks(black_ms=black_ms, white_ms=white_ms, increment_ms=500, move_limit_ms=None, moves_to_go=None)
    return m.Turn(type="turn", game_id=game_id, moves=moves, clock=clock)


def game_over(game_id: str) -> m.GameOver:
    return m.GameOver(
        type="game_over",
        game_id=game_id,
        result="1-0",
        winner=BLACK,
        reason="two passes",
        black_score=5.0,
        white_score=4.5,
        termination="normal",
    )


PING = m.Ping(type="ping", id=7)
QUIT = m.Quit(type="quit")


def first_legal(position: Position, clock: Clock) -> Move:
    return position.legal_moves()[0]


def converse(
    script: list[BaseModel | str], choose: kit.Choose = first_legal, **hooks: Any
) -> tuple[int, list[m.BotMessage]]:
    """Run the kit on a whole scripted input; every line it writes must pass the referee's strict parser."""
    text = "".join(x if isinstance(x, str) else m.encode(x).decode() for x in script)
    stdout = io.StringIO()
    status = run_bot(
        choose, name="scripted", author="tests", version="0", stdin=io.StringIO(text), stdout=stdout, **hooks
    )
    return status, [m.parse_bot_line(line) for line in stdout.getvalue().splitlines(keepends=True)]


def first_of(moves: list[str], size: int) -> str:
    """What `first_legal` plays after `moves` on a size x size board."""
    return str(Position.from_moves(moves, size, size, 0.5).legal_placements()[0])


def without_pongs(replies: list[m.BotMessage]) -> list[m.BotMessage]:
    return [r for r in replies if not isinstance(r, m.Pong)]


def test_a_whole_session_of_two_games() -> None:
    games: list[Game] = []
    results: list[tuple[str, GameResult]] = []
    seen: list[tuple[list[str], str, int | None, int | None]] = []

    def choose(position: Position, clock: Clock) -> Move:
        seen.append(([str(x) for x in position.history], str(position.turn), clock.my_ms, clock.opponent_ms))
        move = position.legal_placements()[0]
        position.push(move)  # a copy: the kit's own position must not change
        return move

    status, replies = converse(
        [
            hello(),
            new_game("g1", "black"),
            PING,
            turn("g1", []),
            turn("g1", ["b1a1", "a2a3"]),
            game_over("g1"),
            new_game("g2", "white", 4, 4),
            turn("g2", ["b1a1"]),
            turn("g2", ["b1a1", "a2a3", "c1d1"]),
            game_over("g2"),
            QUIT,
        ],
        choose,
        on_new_game=games.append,
        on_game_over=lambda game, result: results.append((game.game_id, result)),
    )
    assert status == 0
    assert [r for r in replies if isinstance(r, m.Pong)] == [m.Pong(type="pong", id=7)]
    assert without_pongs(replies) == [
        m.BotHello(type="hello", protocol=1, name="scripted", author="tests", version="0"),
        m.Ready(type="ready", game_id="g1"),
        m.MoveReply(type="move", move=first_of([], 3)),
        m.MoveReply(type="move", move=first_of(["b1a1", "a2a3"], 3)),
        m.Ready(type="ready", game_id="g2"),
        m.MoveReply(type="move", move=first_of(["b1a1"], 4)),
        m.MoveReply(type="move", move=first_of(["b1a1", "a2a3", "c1d1"], 4)),
    ]
    assert seen == [
        ([], "black", 60000, 50000),
        (["b1a1", "a2a3"], "black", 60000, 50000),
        (["b1a1"], "white", 50000, 60000),
        (["b1a1", "a2a3", "c1d1"], "white", 50000, 60000),
    ]
    assert [(g.game_id, g.color, g.width, g.height, g.komi, g.opponent) for g in games] == [
        ("g1", BLACK, 3, 3, 0.5, "nobody"),
        ("g2", WHITE, 4, 4, 0.5, "nobody"),
    ]
    assert games[0].time_control == kit.TimeControl(
        base_ms=60000, increment_ms=500, moves_per_period=None, move_time_ms=None
    )
    assert [(gid, r.result, r.winner, r.termination) for gid, r in results] == [
        ("g1", "1-0", BLACK, "normal"),
        ("g2", "1-0", BLACK, "normal"),
    ]


def test_every_move_sent_is_legal_in_the_position_given() -> None:
    moves: list[str] = []
    script: list[BaseModel | str] = [hello(), new_game("g", "black", 3, 3)]
    position = Position(3, 3, 0.5)
    # Both sides played by the kit's choice, one turn per line, until the game is over.
    while not position.is_over():
        moves.append(str(first_legal(position, None)))  # type: ignore[arg-type]
        position.push(Move.parse(moves[-1]))
    script += [turn("g", moves[:i]) for i in range(0, len(moves), 2)] + [QUIT]
    status, replies = converse(script)
    assert status == 0
    assert [r.move for r in replies if isinstance(r, m.MoveReply)] == moves[0::2]


def test_a_history_that_does_not_extend_the_last_one_is_rebuilt() -> None:
    seen: list[list[str]] = []

    def choose(position: Position, clock: Clock) -> Move:
        seen.append([str(x) for x in position.history])
        return PASS

    status, _ = converse(
        [hello(), new_game("g", "black"), turn("g", ["b1a1", "a2a3"]), turn("g", ["c1b1", "pass"]), QUIT], choose
    )
    assert status == 0
    assert seen == [["b1a1", "a2a3"], ["c1b1", "pass"]]


def test_info_is_sent_only_during_a_turn_and_never_invalid() -> None:
    sent_outside: list[bool] = []

    def choose(position: Position, clock: Clock) -> Move:
        assert send_info(depth=2, score=1.5, nodes=40, pv=[Move.parse("b1a1"), "a2a3"], text="thinking")
        assert send_info(depth=-1, score=float("nan"), text="x" * 5000)  # sanitized, not refused
        assert send_info(nodes=3, pv=["d5-d4"], text="\ud800")
        # Values that cannot even be converted are left out too: a report must never cost the game.
        assert send_info(depth=float("inf"), score=10**400, nodes="many", pv=5, text="odd")  # type: ignore[arg-type]
        return PASS

    status, replies = converse(
        [hello(), new_game("g"), turn("g", []), QUIT],
        choose,
        on_new_game=lambda game: sent_outside.append(send_info(text="too early")),
    )
    assert status == 0
    assert sent_outside == [False]
    assert send_info(text="no session") is False
    infos = [r for r in replies if isinstance(r, m.Info)]
    assert infos[0] == m.Info(type="info", depth=2, score=1.5, nodes=40, pv=["b1a1", "a2a3"], text="thinking")
    assert (infos[1].depth, infos[1].score, len(infos[1].text or "")) == (None, None, 4096)
    assert (infos[2].nodes, infos[2].pv, infos[2].text) == (3, None, "?")
    assert infos[3] == m.Info(type="info", text="odd")
    assert isinstance(replies[-1], m.MoveReply)  # the move comes after its infos


def test_an_exception_in_choose_prints_the_traceback_and_returns_1(capsys: pytest.CaptureFixture[str]) -> None:
    def choose(position: Position, clock: Clock) -> Move:
        raise RuntimeError("the search fell over")

    status, replies = converse([hello(), new_game("g"), turn("g", []), QUIT], choose)
    assert status == 1
    assert not any(isinstance(r, m.MoveReply) for r in replies)
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: the search fell over" in err


def test_end_of_input_without_quit_ends_cleanly() -> None:
    status, replies = converse([hello(), new_game("g")])
    assert status == 0
    assert [type(r) for r in replies] == [m.BotHello, m.Ready]


def test_a_protocol_version_mismatch_is_logged_and_answered_with_the_kits_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, replies = converse([hello(protocol=2), QUIT])
    assert status == 0
    assert isinstance(replies[0], m.BotHello) and replies[0].protocol == kit.PROTOCOL_VERSION == m.PROTOCOL_VERSION
    assert "speaks protocol 2" in capsys.readouterr().err


def test_unknown_and_malformed_referee_lines_are_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    status, replies = converse(
        [hello(), "not json\n", "[1]\n", '{"type":"shiny_new_message"}\n', new_game("g"), QUIT],
    )
    assert status == 0
    assert [type(r) for r in replies] == [m.BotHello, m.Ready]
    err = capsys.readouterr().err
    assert "not JSON" in err and "not a JSON object" in err and "shiny_new_message" in err


def test_an_over_long_line_from_the_referee_stops_the_bot_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    status, replies = converse([hello(), "x" * (m.MAX_LINE_BYTES + 10) + "\n", new_game("g"), QUIT])
    assert status == 0
    assert [type(r) for r in replies] == [m.BotHello]
    assert "longer than 65536 bytes" in capsys.readouterr().err


def test_run_bot_refuses_a_name_the_protocol_would_refuse() -> None:
    with pytest.raises(ValueError, match="name must be 1-64"):
        run_bot(first_legal, name="", stdin=io.StringIO(), stdout=io.StringIO())


# -- clocks ---------------------------------------------------------------------------------------


def clock(my_ms: int | None = None, inc: int = 0, limit: int | None = None, to_go: int | None = None) -> Clock:
    return Clock(
        my_ms=my_ms, opponent_ms=my_ms, increment_ms=inc, move_limit_ms=limit, moves_to_go=to_go, received_at=0
    )


@pytest.mark.parametrize(
    ("c", "moves_left", "budget"),
    [
        (clock(my_ms=60000), 20, 3000 - 50),  # Fischer without increment: a share of the clock
        (clock(my_ms=60000, inc=1000), 20, 3750 - 50),  # plus most of the increment
        (clock(my_ms=1000, inc=5000), 20, 500 - 50),  # but never more than half of what is left
        (clock(my_ms=40, inc=0), 20, 1),  # nearly flagged: still at least 1 ms
        (clock(my_ms=60000, to_go=10), 20, 6000 - 50),  # periods: the clock shared by the moves to go
        (clock(limit=1000), 20, 950),  # a fixed time per move
        (clock(my_ms=60000, limit=1000), 20, 950),  # the tighter of the two
        (clock(), 20, 1000),  # no clock at all
        (clock(my_ms=60000), 5, 12000 - 50),
    ],
)
def test_budget_ms(c: Clock, moves_left: int, budget: int) -> None:
    assert c.budget_ms(moves_left) == budget
    assert c.deadline(moves_left) == pytest.approx(budget / 1000)


# -- over real pipes: pings while thinking ---------------------------------------------------------


class PipeBot:
    """run_bot in a thread, talking over two OS pipes, with a reader so that no read can hang the test."""

    def __init__(self, choose: kit.Choose) -> None:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        # Open for the bot's whole life and closed by close(), so no context manager.
        self.stdin = open(in_r, encoding="utf-8")  # noqa: SIM115
        self.to_bot = open(in_w, "w", encoding="utf-8")  # noqa: SIM115
        self.stdout = open(out_w, "w", encoding="utf-8")  # noqa: SIM115
        self.from_bot = open(out_r, encoding="utf-8")  # noqa: SIM115
        self.lines: queue.Queue[str] = queue.Queue()
        self.status: list[int] = []
        self.thread = threading.Thread(target=lambda: self.status.append(self._run(choose)), daemon=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        self.reader.start()

    def _run(self, choose: kit.Choose) -> int:
        return run_bot(choose, name="piped", stdin=self.stdin, stdout=self.stdout)

    def _read(self) -> None:
        for line in self.from_bot:
            self.lines.put(line)

    def send(self, message: BaseModel) -> None:
        self.to_bot.write(m.encode(message).decode())
        self.to_bot.flush()

    def receive(self) -> m.BotMessage:
        return m.parse_bot_line(self.lines.get(timeout=TIMEOUT))

    def close(self) -> None:
        for f in (self.to_bot, self.stdin, self.stdout, self.from_bot):
            f.close()


@pytest.fixture
def pipe_bot() -> Iterator[Callable[[kit.Choose], PipeBot]]:
    bots: list[PipeBot] = []

    def start(choose: kit.Choose) -> PipeBot:
        bots.append(PipeBot(choose))
        return bots[-1]

    yield start
    for bot in bots:
        bot.close()


def test_a_ping_is_answered_while_choose_is_still_thinking(pipe_bot: Callable[[kit.Choose], PipeBot]) -> None:
    thinking, release = threading.Event(), threading.Event()

    def choose(position: Position, clock: Clock) -> Move:
        thinking.set()
        assert release.wait(TIMEOUT)
        return PASS

    bot = pipe_bot(choose)
    bot.send(hello())
    assert isinstance(bot.receive(), m.BotHello)
    bot.send(new_game("g"))
    assert bot.receive() == m.Ready(type="ready", game_id="g")
    bot.send(turn("g", []))
    assert thinking.wait(TIMEOUT)
    for ping_id in (1, 2, 3):
        bot.send(m.Ping(type="ping", id=ping_id))
        assert bot.receive() == m.Pong(type="pong", id=ping_id)
    assert not release.is_set()  # all three answered while choose was blocked
    release.set()
    assert bot.receive() == m.MoveReply(type="move", move="pass")
    bot.send(QUIT)
    bot.thread.join(TIMEOUT)
    assert bot.status == [0]


# -- as a real process ----------------------------------------------------------------------------


def run_script(code: str, script: list[BaseModel]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", code],
        input=b"".join(m.encode(x) for x in script),
        capture_output=True,
        cwd=ROOT,
        timeout=TIMEOUT,
        check=False,
    )


def test_a_stray_print_goes_to_stderr_not_into_the_protocol() -> None:
    code = """if True:
        from protocol.kit import run_bot
        def choose(position, clock):
            print("thinking out loud")
            return position.legal_moves()[0]
        run_bot(choose, name="chatty")
        """
    done = run_script(code, [hello(), new_game("g"), turn("g", []), QUIT])
    assert done.returncode == 0, done.stderr
    replies = [m.parse_bot_line(line) for line in done.stdout.splitlines(keepends=True)]
    assert [type(r) for r in replies] == [m.BotHello, m.Ready, m.MoveReply]
    assert b"thinking out loud" in done.stderr


def test_a_real_process_exits_1_with_the_traceback_when_choose_fails() -> None:
    code = """if True:
        from protocol.kit import run_bot
        def choose(position, clock):
            raise KeyError("no idea")
        run_bot(choose, name="broken")
        """
    done = run_script(code, [hello(), new_game("g"), turn("g", []), QUIT])
    assert done.returncode == 1
    assert b"KeyError: 'no idea'" in done.stderr
    assert [json.loads(line)["type"] for line in done.stdout.splitlines()] == ["hello", "ready"]


@pytest.mark.parametrize(
    "module",
    ["protocol.kit", "sample_bots.random", "sample_bots.greedy", "sample_bots.alphabeta", "sample_bots.strong"],
)
def test_a_bot_imports_neither_pydantic_nor_trio(module: str) -> None:
    code = f"import sys, {module}; print(sorted({{n.split('.')[0] for n in sys.modules}} & {{'pydantic', 'trio'}}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=TIMEOUT, check=True)
    assert done.stdout.strip() == b"[]"


SLOW_CHOOSER = """if True:
    import sys, time
    from protocol.kit import run_bot
    def choose(position, clock):
        print("thinking", flush=True)
        deadline = time.monotonic() + float(sys.argv[1])
        while time.monotonic() < deadline:  # a pure-Python search that never looks at its input
            sum(range(1000))
        return position.legal_moves()[0]
    run_bot(choose, name="slow")
    """


def start_slow_chooser(seconds: float) -> subprocess.Popen[bytes]:
    """A real bot process whose choose takes `seconds`, already thinking about its first turn."""
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_CHOOSER, str(seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    for message in (hello(), new_game("g"), turn("g", [])):
        process.stdin.write(m.encode(message))
    process.stdin.flush()
    assert [json.loads(process.stdout.readline())["type"] for _ in range(2)] == ["hello", "ready"]
    time.sleep(0.2)  # choose is running now
    return process


def test_quit_during_a_search_exits_0_before_the_referee_kills_the_bot() -> None:
    # The referee sends quit to a bot that overran its time (before restarting it), and kills it 0.5 s later.
    process = start_slow_chooser(60)
    try:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        process.stdin.write(m.encode(QUIT))
        process.stdin.close()
        # Exiting at all proves the 60 s search was abandoned (TIMEOUT is shorter); that it does so before
        # the referee's kill is the order of the two waits, not a stopwatch on a shared machine.
        assert process.wait(TIMEOUT) == 0
        assert QUIT_WAIT_S < QUIT_GRACE_S
        assert process.stdout.read() == b""  # no move after quit
        err = process.stderr.read()
        assert b"thinking" in err and b"exiting without it" in err
    finally:
        process.kill()
        process.wait()


def test_the_end_of_input_during_a_search_finishes_the_move_then_exits_0() -> None:
    process = start_slow_chooser(0.5)
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        assert process.wait(TIMEOUT) == 0
        assert [json.loads(line)["type"] for line in process.stdout.read().splitlines()] == ["move"]
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("hook", ["on_new_game", "on_game_over"])
def test_an_exception_in_a_hook_prints_the_traceback_and_returns_1(
    hook: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(*args: object) -> None:
        raise ValueError(f"{hook} fell over")

    script: list[BaseModel | str] = [hello(), new_game("g"), turn("g", []), game_over("g"), new_game("h"), QUIT]
    if hook == "on_new_game":
        status, replies = converse(script, on_new_game=fail)
    else:
        status, replies = converse(script, on_game_over=fail)
    assert status == 1
    # Nothing after the failing hook: no ready for a game it could not set up, no next game.
    expected = [m.BotHello] if hook == "on_new_game" else [m.BotHello, m.Ready, m.MoveReply]
    assert [type(r) for r in replies] == expected
    err = capsys.readouterr().err
    assert "Traceback" in err and f"ValueError: {hook} fell over" in err


def test_a_turn_for_a_game_that_was_not_started_is_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    status, replies = converse([hello(), new_game("g"), turn("other", []), turn("g", []), QUIT])
    assert status == 0
    assert [type(r) for r in replies] == [m.BotHello, m.Ready, m.MoveReply]
    assert "ignoring a turn for game 'other'" in capsys.readouterr().err


CHATTY_CHOOSER = """if True:
    import threading, time
    from protocol.kit import run_bot, send_info
    def choose(position, clock):
        # Two threads send long infos (over the 4 KiB a pipe writes atomically) while pongs go out.
        def spam():
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                send_info(depth=1, text="\\u00e9" * 4096)
        helper = threading.Thread(target=spam)
        helper.start()
        spam()
        helper.join()
        return "pass"
    run_bot(choose, name="chatty")
    """


def test_lines_never_interleave_under_pings_and_infos_from_two_threads() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", CHATTY_CHOOSER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT
    )
    assert process.stdin is not None and process.stdout is not None
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, b"")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        for message in (hello(), new_game("g"), turn("g", [])):
            process.stdin.write(m.encode(message))
        process.stdin.flush()
        for ping_id in range(1, 101):
            process.stdin.write(m.encode(m.Ping(type="ping", id=ping_id)))
            process.stdin.flush()
            time.sleep(0.005)
        deadline = time.monotonic() + TIMEOUT
        while not any(line.startswith(b'{"type":"move"') for line in lines) and time.monotonic() < deadline:
            time.sleep(0.02)  # until choose has returned and its move is out
        process.stdin.write(m.encode(QUIT))
        process.stdin.close()
        assert process.wait(TIMEOUT) == 0
        reader.join(TIMEOUT)
    finally:
        process.kill()
        process.wait()
    replies = [m.parse_bot_line(line) for line in lines]  # every line is one whole valid message
    assert [r.id for r in replies if isinstance(r, m.Pong)] == list(range(1, 101))
    assert sum(isinstance(r, m.Info) for r in replies) > 10
    assert isinstance(replies[-1], m.MoveReply) and replies[-1].move == "pass"
