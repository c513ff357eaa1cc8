"""The bot channel: message classification over memory streams, and real bot processes (start, stderr, stop).

Real-process tests never use autojump_clock; the `no_child_processes` fixture (conftest) checks that every
test leaves no child behind.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from protocol.messages import MAX_LINE_BYTES, BotHello, Hello, Info, MoveReply, Ping, Pong, Ready, parse_referee_line
from protocol.session import State
from referee.play.process import (
    BotChannel,
    BotCrashed,
    BotFault,
    BotHost,
    BotProtocolError,
    BotStartError,
    describe_exit,
    open_bot,
)
from referee.record import Termination
from referee.run.botspec import BotSpec
from tests.bot_messages import new_game
from tests.conftest import BotSpecFactory, live_pids, make_bot_spec, pid_alive

# -- the channel over memory streams --------------------------------------------------------------


def channel_pair(
    state: State = State.NEW,
) -> tuple[BotChannel, trio.testing.MemorySendStream, trio.testing.MemoryReceiveStream]:
    """A channel plus the bot's ends: what the referee writes, and where the test writes as the bot.

    `state`: the session is first walked there through its own API (hello, new_game "g", turn), as if the
    bot had answered so far.
    """
    to_bot_send, to_bot_receive = trio.testing.memory_stream_one_way_pair()
    from_bot_send, from_bot_receive = trio.testing.memory_stream_one_way_pair()
    channel = BotChannel("fake", to_bot_send, from_bot_receive)
    session = channel.session
    steps: list[tuple[State, Callable[[], None]]] = [
        (State.AWAITING_HELLO, lambda: session.sent("hello")),
        (State.IDLE, lambda: session.received(BotHello(type="hello", protocol=1, name="fake"))),
        (State.AWAITING_READY, lambda: session.sent("new_game", game_id="g")),
        (State.BETWEEN_TURNS, lambda: session.received(Ready(type="ready", game_id="g"))),
        (State.ON_TURN, lambda: session.sent("turn")),
    ]
    for reached, step in steps:
        if session.state is state:
            break
        step()
        assert session.state is reached
    return channel, from_bot_send, to_bot_receive


async def test_receive_validates_and_notes_when_the_line_was_complete() -> None:
    channel, bot_out, _ = channel_pair(State.ON_TURN)
    await bot_out.send_all(b'{"type":"info","depth":3}\n{"type":"mo')
    before = channel.now_ns()
    assert await channel.receive() == Info(type="info", depth=3)
    assert channel.last_line_ns >= before
    async with trio.open_nursery() as nursery:
        nursery.start_soon(channel.receive)
        await trio.sleep(0.01)
        await bot_out.send_all(b've","move":"a1b1"}\n')
    assert channel.last_line_ns >= before + 10_000_000  # the move was complete only when its end came
    assert channel.session.state is State.BETWEEN_TURNS


@pytest.mark.parametrize(
    ("line", "termination", "says"),
    [
        (b"this is not json\n", Termination.PROTOCOL, "sent malformed JSON"),
        (b"[1, 2]\n", Termination.PROTOCOL, "not a JSON object"),
        (b'{"move": "a1b1"}\n', Termination.PROTOCOL, "without a 'type' field"),
        (b'{"type": "resign"}\n', Termination.PROTOCOL, "unknown type 'resign'"),
        (b'{"type": "move", "move": "a1b1", "why": 1}\n', Termination.PROTOCOL, "invalid 'move' message (why"),
        (b'{"type": "move", "move": 5}\n', Termination.PROTOCOL, "invalid 'move' message (move: Input should be"),
        (b'{"type": "hello", "protocol": 2, "name": "x", "x": 1}\n', Termination.PROTOCOL, "speaks protocol 2"),
        (b"", Termination.CRASH, "closed its output"),
    ],
)
async def test_each_bad_line_is_a_fault_with_a_reason(line: bytes, termination: Termination, says: str) -> None:
    channel, bot_out, _ = channel_pair(State.ON_TURN)
    if line:
        await bot_out.send_all(line)
    else:
        await bot_out.aclose()
    with pytest.raises(BotFault) as info:
        await channel.receive()
    assert info.value.termination is termination
    assert says in info.value.reason
    assert channel.broken  # restart before reuse


async def test_an_endless_line_fails_at_the_limit_without_waiting_for_its_end() -> None:
    channel, bot_out, _ = channel_pair(State.ON_TURN)
    channel.session.sent("ping", ping_id=1)
    await bot_out.send_all(b'{"type":"pong","id":1}\n' + b"x" * 70_000)
    assert await channel.receive() == Pong(type="pong", id=1)  # lines before the long one still count
    with pytest.raises(BotProtocolError, match=f"over-long line.*{MAX_LINE_BYTES} bytes"):
        await channel.receive()
    assert channel.broken


async def test_a_line_of_exactly_the_limit_is_accepted() -> None:
    channel, bot_out, _ = channel_pair(State.ON_TURN)
    text = '{"type":"info","text":"' + "x" * 4000 + '"}'
    padded = text + " " * (MAX_LINE_BYTES - 1 - len(text))
    await bot_out.send_all(padded.encode() + b"\n")
    message = await channel.receive()
    assert isinstance(message, Info) and message.text == "x" * 4000
    await bot_out.send_all(padded.encode() + b" \n")
    with pytest.raises(BotProtocolError, match="over-long"):
        await channel.receive()


async def test_handshake_checks_type_and_version() -> None:
    channel, bot_out, bot_in = channel_pair()
    await bot_out.send_all(b'{"type":"hello","protocol":1,"name":"fake","author":"me"}\n')
    hello = await channel.handshake()
    assert hello == BotHello(type="hello", protocol=1, name="fake", author="me")
    sent = parse_referee_line(bytes(await bot_in.receive_some()).strip())
    assert isinstance(sent, Hello) and sent.protocol == 1
    assert channel.info().announced_name == "fake" and channel.info().author == "me"

    channel, bot_out, _ = channel_pair()
    await bot_out.send_all(b'{"type":"hello","protocol":7,"name":"future"}\n')
    with pytest.raises(BotProtocolError, match="speaks protocol 7, the referee speaks 1"):
        await channel.handshake()

    channel, bot_out, _ = channel_pair()
    await bot_out.send_all(b'{"type":"ready","game_id":"g"}\n')
    with pytest.raises(BotProtocolError, match="answered hello with 'ready'"):
        await channel.handshake()


async def test_writing_to_a_closed_input_is_a_crash_not_a_referee_error() -> None:
    channel, _, bot_in = channel_pair()
    await bot_in.aclose()
    with pytest.raises(BotCrashed, match="closed its input"):
        await channel.send(Hello(type="hello", protocol=1, referee="test"))
    assert channel.broken and channel.closed


async def test_receive_is_cancel_safe() -> None:
    channel, bot_out, _ = channel_pair(State.AWAITING_READY)
    await bot_out.send_all(b'{"type":"rea')
    with trio.move_on_after(0.01):
        await channel.receive()
    await bot_out.send_all(b'dy","game_id":"g"}\n')
    assert await channel.receive() == Ready(type="ready", game_id="g")


async def test_a_flood_of_lines_in_one_chunk_lets_other_tasks_run() -> None:
    # One referee thread times every game: parsing a bot's flood must not hold up another game's clock.
    channel, bot_out, _ = channel_pair(State.ON_TURN)
    await bot_out.send_all(b'{"type":"info","depth":1}\n' * 1000)
    turns = 0

    async def other_game() -> None:
        nonlocal turns
        while True:
            await trio.lowlevel.checkpoint()
            turns += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other_game)
        await trio.sleep(0)  # the other game is under way
        before = turns
        for _ in range(1000):
            await channel.receive()
        nursery.cancel_scope.cancel()
    assert turns - before >= 1000 // 64 - 1


TURN = b'{"type":"turn","game_id":"g","moves":[],"clock":{}}\n'


async def start_game(bot: BotChannel) -> None:
    """Handshake and start game "g" on a real bot, so that a turn may be sent."""
    await bot.handshake()
    await bot.send(new_game("g"))
    assert isinstance(await bot.receive(), Ready)


def test_describe_exit() -> None:
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(0) == "exited with code 0"
    assert describe_exit(-11) == "killed by SIGSEGV"
    assert describe_exit(-9) == "killed by SIGKILL"


# -- real processes -------------------------------------------------------------------------------


async def test_open_bot_handshake_ping_and_clean_exit(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    async with open_bot(bot_spec("testbot", "--name", "Tester"), tmp_path) as bot:
        with trio.fail_after(10):
            hello = await bot.handshake()
        assert hello.name == "Tester" and bot.hello is hello
        round_trips = [await bot.ping() for _ in range(5)]
        assert all(0 < rt < 5 for rt in round_trips)
        info = bot.info()
        assert info.announced_name == "Tester" and info.stderr_log == str(bot.stderr_path)
        assert info.command == bot_spec("testbot", "--name", "Tester").command
        pid = bot.pid
    assert bot.returncode == 0  # it obeyed quit
    assert live_pids([pid]) == []
    assert bot.stderr_path.parent == tmp_path and bot.stderr_path.name.endswith(f"-{pid}.stderr.log")


async def test_a_bot_that_ignores_quit_is_killed(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    async with open_bot(bot_spec("testbot", "ignorequit"), tmp_path, quit_grace_s=0.2) as bot:
        with trio.fail_after(10):
            await bot.handshake()
        start = trio.current_time()
    assert trio.current_time() - start < 3
    assert bot.returncode == -9
    assert live_pids([bot.pid]) == []


async def test_the_whole_process_group_is_killed(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    async with open_bot(bot_spec("testbot", "grandchild"), tmp_path) as bot:
        with trio.fail_after(10):
            await bot.handshake()
        await bot.settle()
        lines = [line for line in bot.stderr_tail() if line.startswith("grandchild pid ")]
        assert lines, bot.stderr_tail()
        grandchild = int(lines[0].split()[-1])
        assert live_pids([grandchild], wait_s=0) == [grandchild]
    assert live_pids([grandchild]) == []


async def test_cancellation_stops_the_bot(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    with trio.move_on_after(10) as scope:
        async with open_bot(bot_spec("testbot", "hang"), tmp_path) as bot:
            await start_game(bot)
            await bot.send_turn(TURN)
            scope.deadline = trio.current_time() + 0.3  # the bot hangs on this turn
            await bot.receive()  # never comes: cancelled by the outer scope
    assert scope.cancelled_caught
    assert live_pids([bot.pid]) == []


async def test_an_error_in_the_body_propagates_bare(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="boom"):
        async with open_bot(bot_spec("testbot"), tmp_path):
            raise KeyError("boom")


async def test_stderr_flood_is_capped_and_does_not_block(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    cap = 100_000
    async with open_bot(bot_spec("testbot", "stderrflood", "4"), tmp_path, stderr_cap_bytes=cap) as bot:
        with trio.fail_after(20):
            await bot.handshake()  # the bot writes 4 MB of stderr before reading hello: it must not block
            while bot.stderr_bytes < 4 << 20 or "flood done" not in bot.stderr_tail(1):
                await trio.sleep(0.01)
    size = bot.stderr_path.stat().st_size
    assert cap <= size < cap + 200
    assert bot.stderr_path.read_bytes().endswith(f"[stderr log capped at {cap} bytes]\n".encode())
    assert bot.stderr_tail(1) == ["flood done"]


async def test_exit_code_and_signal_are_reported(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    for args, says in ((("crash", "3"), "exited with code 3"), (("signal", "SEGV"), "killed by SIGSEGV")):
        async with open_bot(bot_spec("testbot", *args), tmp_path) as bot:
            with trio.fail_after(10):
                await start_game(bot)
                await bot.send_turn(TURN)
                with pytest.raises(BotCrashed, match=says):
                    await bot.receive()
                await bot.settle()
            assert bot.stderr_tail()[-1].startswith("about to")
            with pytest.raises(BotCrashed, match=says):  # writing to the dead bot: a crash, not our error
                for ping_id in range(1, 101):
                    await bot.send(Ping(type="ping", id=ping_id))


async def test_closing_stdout_while_running(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    async with open_bot(bot_spec("testbot", "closeout"), tmp_path) as bot:
        with trio.fail_after(10):
            await start_game(bot)
            await bot.send_turn(TURN)
            with pytest.raises(BotCrashed, match="closed its output but is still running"):
                await bot.receive()
    assert live_pids([bot.pid]) == []


async def test_info_and_move_are_parsed_from_a_real_bot(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    async with open_bot(bot_spec("testbot", "info", "--infos", "1"), tmp_path) as bot:
        with trio.fail_after(10):
            await start_game(bot)
            await bot.send_turn(TURN)
            assert isinstance(await bot.receive(), Info)
            assert await bot.receive() == MoveReply(type="move", move="a1b1")


StartCase = Callable[[Path], BotSpec]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: BotSpec(name="ghost", command=["/no/such/program"]), "program '/no/such/program' not found"),
        (lambda d: BotSpec(name="plain", command=[str(d / "plain.txt")]), "is not executable"),
        (
            lambda d: BotSpec(name="lost", command=[sys.executable], dir=d / "missing"),
            "working directory",
        ),
    ],
)
async def test_start_errors_name_the_bot_and_say_what_to_do(make: StartCase, says: str, tmp_path: Path) -> None:
    (tmp_path / "plain.txt").write_text("not a program\n")
    os.chmod(tmp_path / "plain.txt", 0o644)
    spec = make(tmp_path)
    with pytest.raises(BotStartError, match=says) as info:
        async with open_bot(spec, tmp_path / "logs"):
            pass
    assert repr(spec.name) in str(info.value)


async def test_env_and_dir_are_applied(tmp_path: Path) -> None:
    script = tmp_path / "envbot.py"
    script.write_text(
        "import json, os, sys\n"
        "sys.stdin.readline()\n"
        "print(json.dumps({'type': 'hello', 'protocol': 1, 'name': os.environ['BOT_NAME'] + ':' +"
        " os.path.basename(os.getcwd())}), flush=True)\n"
    )
    spec = BotSpec(name="env", command=[sys.executable, str(script)], dir=tmp_path, env={"BOT_NAME": "zed"})
    async with open_bot(spec, tmp_path / "logs") as bot:
        with trio.fail_after(10):
            hello = await bot.handshake()
    assert hello.name == f"zed:{tmp_path.name}"
    assert json.loads('{"ok": 1}')  # (keeps json import honest for the script text above)


async def test_a_host_reuses_its_process_restarts_it_when_broken_and_stops_it(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    async with trio.open_nursery() as nursery:
        host = BotHost(bot_spec("testbot"), tmp_path, nursery)
        first = await host.ready()
        assert await host.ready() is first
        assert (await first.handshake()).name == "testbot"
        first.give_up("the test says so")
        second = await host.ready()
        assert second is not first and second.pid != first.pid
        assert not pid_alive(first.pid)  # the broken one was stopped before its successor started
        await host.close()
        assert host.process is None and not pid_alive(second.pid)
        await host.close()  # closing twice is harmless
        third = await host.ready()
        host.close_soon()  # the nursery waits for it
    assert not pid_alive(third.pid)


async def test_a_bot_waiting_for_its_turn_is_not_ready_to_run_and_its_cpu_time_is_read(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    if not Path("/proc/self/task").is_dir():
        pytest.skip("no /proc: a bot's scheduling state cannot be read here")
    async with open_bot(bot_spec("testbot"), tmp_path) as bot:
        with trio.fail_after(10):
            await bot.handshake()
        samples: list[tuple[bool, int] | None] = []
        with trio.move_on_after(5):  # it goes back to reading its input right after the handshake
            while not samples or samples[-1] is None or samples[-1][0]:
                samples.append(bot.probe.cpu_sample())
                await trio.sleep(0.01)
        sample = samples[-1]
        assert sample is not None
        ready, cpu_ns = sample
        assert not ready  # blocked reading its input: asleep, so never taken as held off a CPU
        assert cpu_ns > 0  # a Python start-up is not free
    assert bot.probe.cpu_sample() is None  # gone


CLOSES_ITS_INPUT = """\
import os, sys, time
line = sys.stdin.readline()
print('{"type":"hello","protocol":1,"name":"closer"}', flush=True)
sys.stdin.readline()  # new_game
print('{"type":"ready","game_id":"g"}', flush=True)
os.close(0)  # and keeps running: only a write to it tells
time.sleep(60)
"""


@pytest.mark.parametrize("pinned", [False, True], ids=["loop-writes", "reader-writes"])
async def test_a_turn_written_to_a_closed_input_is_a_crash_whoever_writes_it(tmp_path: Path, pinned: bool) -> None:
    # Pinned, the reader thread writes the turn (`send_turn` returns before the write): its failed write must
    # still end the wait for the move at once, as the loop's own write does.
    script = tmp_path / "closer.py"
    script.write_text(CLOSES_ITS_INPUT)
    cores = sorted(os.sched_getaffinity(0))[:1] if pinned and hasattr(os, "sched_getaffinity") else None
    if pinned and not cores:
        pytest.skip("no CPU affinity on this system: readers are never pinned")
    async with open_bot(make_bot_spec(script, name="closer"), tmp_path / "logs", cores=cores) as bot:
        await start_game(bot)
        await trio.sleep(0.2)  # it closes its input right after its `ready`
        with trio.fail_after(10):
            with pytest.raises(BotCrashed, match="closed its input"):
                await bot.send_turn(TURN)
                await bot.receive()
    assert bot.closed
