"""Fair clocks: the referee's own lateness voids a game instead of forfeiting a bot, and a move's time starts
before the turn is written.

The voiding rule is tested with fake bots in memory and an injected lag source (autojump_clock: no timed
assertions); the real-process test stops the referee itself (SIGSTOP, then SIGCONT 300 ms later) while a
real bot answers at once, and never uses autojump_clock.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from referee.cli import main
from referee.play import process
from referee.play.game import run_game
from referee.play.process import BotChannel, BotProcess, open_bot
from referee.play.reader import stamped_stdout
from referee.record import GameRecord, GameSettings, Termination
from referee.run import backoff
from referee.run.botspec import BotSpec
from referee.timing import probe
from referee.timing.clock import parse_time_control
from referee.timing.latency import ConstantLag, LagWindow, ReadWatch, summarize_latency
from referee.timing.probe import NullProbe
from tests.conftest import BotSpecFactory
from tests.test_game import FakeBot, fake_game

MS = 1_000_000


# -- the voiding rule, with an injected lag source -------------------------------------------------------------


async def test_lag_larger_than_the_overrun_voids_the_game(autojump_clock: trio.testing.MockClock) -> None:
    # Black's 2nd move takes 1.2 s of its 1 s: 200 ms over. The referee measured 300 ms of its own lateness.
    late = FakeBot(lambda n: 1.2 if n == 2 else 0.1)
    record, black, _ = await fake_game(
        late, FakeBot(), parse_time_control("movetime:1"), lag_source=ConstantLag(300 * MS)
    )
    assert record.termination is Termination.VOID
    assert (record.result, record.winner, record.loser) == ("*", None, None)
    assert record.overrun_ms == pytest.approx(200, abs=1e-3)
    assert record.referee_lag_ms == pytest.approx(300)
    assert "void, the host was late: black (black-bot) took 1200 ms, 200 ms over its 1000 ms" in record.reason
    assert "the referee measured 300 ms of its own lateness" in record.reason
    assert not black.broken  # its move arrived whole: the pipe is in order
    assert all(move.latency_ms == pytest.approx(300) for move in record.moves)
    assert summarize_latency([record]).void_for_lag == 1


async def test_lag_smaller_than_the_overrun_forfeits(autojump_clock: trio.testing.MockClock) -> None:
    # 100 ms of the referee's lateness cannot excuse 200 ms: the referee waits 100 ms past the deadline, then
    # the bot has lost on time.
    late = FakeBot(lambda n: 1.2 if n == 2 else 0.1)
    record, black, _ = await fake_game(
        late, FakeBot(), parse_time_control("movetime:1"), lag_source=ConstantLag(100 * MS)
    )
    assert record.termination is Termination.TIME
    assert record.loser == "black" and record.referee_lag_ms is None
    assert "lost on time: no move after 1100 ms, 100 ms over its 1000 ms" in record.reason
    assert black.broken  # its move may still come: restart it


async def test_a_late_answer_inside_the_referee_s_lag_is_void_even_past_the_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    late = FakeBot(lambda n: 1.05 if n == 2 else 0.1)
    record, _, _ = await fake_game(late, FakeBot(), parse_time_control("movetime:1"), lag_source=ConstantLag(100 * MS))
    assert record.termination is Termination.VOID
    assert record.overrun_ms == pytest.approx(50, abs=1e-3) and record.referee_lag_ms == pytest.approx(100)


async def test_no_lag_forfeits(autojump_clock: trio.testing.MockClock) -> None:
    late = FakeBot(lambda n: 1.2 if n == 2 else 0.1)
    record, _, _ = await fake_game(late, FakeBot(), parse_time_control("movetime:1"))
    assert record.termination is Termination.TIME
    assert "lost on time: no move after 1000 ms, 0.0 ms over its 1000 ms" in record.reason
    assert all(move.latency_ms == 0 for move in record.moves)


async def test_moves_in_time_are_charged_exactly_whatever_the_lag(autojump_clock: trio.testing.MockClock) -> None:
    record, _, _ = await fake_game(
        FakeBot(lambda n: 0.25), FakeBot(lambda n: 0.5), parse_time_control("movetime:1"), lag_source=ConstantLag(MS)
    )
    assert record.termination is Termination.NORMAL
    assert {m.elapsed_ms for m in record.moves} == {250.0, 500.0}


class StarvedProbe(NullProbe):
    """A bot that has waited for a CPU half of all the time so far (as a busy host would do)."""

    def cpu_wait_ns(self) -> int | None:
        return round(trio.current_time() * 1e9) // 2


def late_second_move(seconds: float) -> FakeBot:
    """A black bot whose 2nd move takes `seconds` of its 1 s (`fake_channels_game` gives it its channel type)."""
    return FakeBot(lambda n: seconds if n == 2 else 0.1)


async def test_a_bot_kept_off_a_cpu_for_longer_than_its_overrun_is_not_forfeited(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Black's 2nd move: 1.2 s of its 1 s, 200 ms over; it waited 600 ms of that for a CPU (the referee itself was
    # on time). Preempted just before it looked at its clock, no bot could have stopped in time: void.
    record = await fake_channels_game(StarvedProbe, late_second_move(1.2))
    assert record.termination is Termination.VOID, record.reason
    assert "took 1200 ms, 200 ms over its 1000 ms, but the bot waited 600 ms for a CPU in all during the move" in (
        record.reason
    )
    assert record.referee_lag_ms == pytest.approx(600)


async def test_a_bot_over_by_more_than_its_wait_for_a_cpu_loses_with_the_wait_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # 3 s of its 1 s: 2 s over, having waited 1.5 s for a CPU: late by its own doing too. The referee listened
    # past the deadline for as long as the bot had waited, then gave up.
    record = await fake_channels_game(StarvedProbe, late_second_move(3.0))
    assert record.termination is Termination.TIME, record.reason
    assert "lost on time: no move after 2000 ms, 1000 ms over its 1000 ms" in record.reason
    assert "(the host is busy: the bot waited 1000 ms for a CPU during the move)" in record.reason


class StarvedThreadsProbe(StarvedProbe):
    """Waits for a CPU like `StarvedProbe`, but its process uses two CPUs' worth of time: its own threads."""

    def cpu_clock_ns(self) -> int | None:
        return round(trio.current_time() * 2e9)

    def cpu_sample(self) -> tuple[bool, int] | None:
        return True, round(trio.current_time() * 2e9)


async def test_a_bot_whose_threads_use_more_than_a_cpu_is_not_taken_as_kept_off_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The same waits, but its process used more than one CPU's worth meanwhile: they compete with each other,
    # so the waits are its own doing (a bot could otherwise void the games it is losing).
    record = await fake_channels_game(StarvedThreadsProbe, late_second_move(1.2))
    assert record.termination is Termination.TIME, record.reason
    assert "lost on time" in record.reason


class HeldProbe(NullProbe):
    """A bot ready to run that gets no CPU (its CPU time never moves), as on a busy host."""

    def cpu_clock_ns(self) -> int | None:
        return 0

    def cpu_sample(self) -> tuple[bool, int] | None:
        return True, 0


class RunningProbe(NullProbe):
    """A bot that is running: ready, its CPU time moving with the clock."""

    def cpu_clock_ns(self) -> int | None:
        return round(trio.current_time() * 1e9)

    def cpu_sample(self) -> tuple[bool, int] | None:
        return True, round(trio.current_time() * 1e9)


async def fake_channels_game(probe_type: type[NullProbe], black: FakeBot) -> GameRecord:
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("movetime:1"))
    async with trio.open_nursery() as nursery:
        channels = []
        for name, fake in (("black-bot", black), ("white-bot", FakeBot())):
            referee_end, bot_end = trio.testing.memory_stream_pair()
            nursery.start_soon(fake.serve, bot_end)
            channels.append(BotChannel(name, referee_end, referee_end, probe=probe_type()))
        record = await run_game("g1", channels[0], channels[1], settings)
        nursery.cancel_scope.cancel()
    return record


async def test_past_its_deadline_a_bot_held_off_a_cpu_is_waited_for(autojump_clock: trio.testing.MockClock) -> None:
    # Black's 2nd move comes 200 ms late. Held off a CPU all that time, it is waited for, and its answer is
    # judged (a loss here: over memory streams its waits cannot be measured); a running bot is not waited for.
    record = await fake_channels_game(HeldProbe, FakeBot(lambda n: 1.2 if n == 2 else 0.1))
    assert record.termination is Termination.TIME, record.reason
    assert "lost on time: took 1200 ms, 200 ms over its 1000 ms" in record.reason
    record = await fake_channels_game(RunningProbe, FakeBot(lambda n: 1.2 if n == 2 else 0.1))
    assert record.termination is Termination.TIME, record.reason
    assert "lost on time: no move after 1001 ms, 1.0 ms over its 1000 ms" in record.reason  # it thinks on


async def test_a_bot_held_off_a_cpu_all_along_is_waited_for_only_so_long_and_the_game_is_void(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Ready to run and given no CPU for a whole second past its deadline: the host (a hypervisor not running
    # that CPU, say), not the bot. The referee stops waiting, and the game is void, not lost.
    record = await fake_channels_game(HeldProbe, FakeBot(lambda n: 5.0 if n == 2 else 0.1))
    assert record.termination is Termination.VOID, record.reason
    assert record.reason.startswith(
        "void, the host was late: black (black-bot) no move after 2000 ms, 1000 ms over its 1000 ms, but it was"
        " ready to run and the host gave it almost no CPU for 1000 ms past its deadline"
    )
    assert record.referee_lag_ms is not None and record.referee_lag_ms >= 1000
    # A running bot that never answers is not held: it loses (see the test above).


# -- the move's time starts before the turn is written ---------------------------------------------------------


class SlowWrite(trio.abc.SendStream):
    """A send stream whose `turn` writes block for a second before the bytes go through (a full pipe)."""

    def __init__(self, inner: trio.abc.SendStream) -> None:
        self.inner = inner

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if b'"type":"turn"' in bytes(data):
            await trio.sleep(1)
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_move_s_time_includes_a_write_that_blocks(autojump_clock: trio.testing.MockClock) -> None:
    # The bot answers at once, but writing its turn took a second (it did not read its input): that second is
    # its own. A clock started after the write returned would charge nothing.
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("movetime:5"))
    async with trio.open_nursery() as nursery:
        channels = []
        for name in ("black-bot", "white-bot"):
            referee_end, bot_end = trio.testing.memory_stream_pair()
            nursery.start_soon(FakeBot().serve, bot_end)
            channels.append(BotChannel(name, SlowWrite(referee_end), referee_end))
        record = await run_game("g1", channels[0], channels[1], settings)
        nursery.cancel_scope.cancel()
    assert record.termination is Termination.NORMAL
    assert record.moves and all(move.elapsed_ms == pytest.approx(1000) for move in record.moves)


# -- a real referee, stopped by the host -----------------------------------------------------------------------

STOPPING_BOT = textwrap.dedent(
    """\
    # On its first turn: has a helper process stop the referee (its parent) and wake it 300 ms later,
    # and answers at once, well within its time.
    import json, os, subprocess, sys, time
    helper = None
    for line in sys.stdin:
        message = json.loads(line)
        kind = message["type"]
        if kind == "hello":
            reply = {"type": "hello", "protocol": 1, "name": "stopper"}
        elif kind == "new_game":
            reply = {"type": "ready", "game_id": message["game_id"]}
        elif kind == "turn":
            if helper is None:
                referee = os.getppid()
                helper = subprocess.Popen(
                    ["sh", "-c", f"kill -STOP {referee}; sleep 0.3; kill -CONT {referee}"]
                )
                time.sleep(0.05)  # the referee is stopped by now
            reply = {"type": "move", "move": "pass"}
        elif kind == "ping":
            reply = {"type": "pong", "id": message["id"]}
        else:
            if kind == "quit":
                break
            continue
        sys.stdout.write(json.dumps(reply) + "\\n")
        sys.stdout.flush()
    if helper is not None:
        helper.wait()
    """
)


async def _stopped_game(bot_spec: BotSpecFactory, tmp_path: Path) -> GameRecord:
    script = tmp_path / "stopper.py"
    script.write_text(STOPPING_BOT)
    stopper = BotSpec(name="stopper", command=[sys.executable, str(script)])
    # 100 ms a move: the bot answers in about 50 ms, but the referee reads the answer some 300 ms late.
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("movetime:0.1"))
    with trio.fail_after(30):
        async with open_bot(stopper, tmp_path) as black, open_bot(bot_spec("testbot"), tmp_path) as white:
            return await run_game("stopped", black, white, settings)


@pytest.mark.skipif(not stamped_stdout(), reason="no socket that stamps each write here: stdout is a pipe")
async def test_a_referee_stopped_by_the_host_charges_the_bot_to_its_write(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    # The kernel stamped the move when the bot wrote it: the 300 ms the referee was stopped cost nobody.
    record = await _stopped_game(bot_spec, tmp_path)
    assert record.termination is Termination.NORMAL, record.reason
    assert record.moves[0].elapsed_ms < 100


async def test_a_referee_stopped_by_the_host_does_not_forfeit_a_bot_in_time(
    bot_spec: BotSpecFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Over a plain pipe (other systems) the move is timed at its read: the stop is the referee's lag, and voids.
    monkeypatch.setattr("referee.play.process.stdout_pair", os.pipe)
    record = await _stopped_game(bot_spec, tmp_path)
    assert record.termination is not Termination.TIME, record.reason
    assert record.termination is Termination.VOID, record.reason
    assert record.referee_lag_ms is not None and record.overrun_ms is not None
    assert record.referee_lag_ms > record.overrun_ms
    assert "void, the host was late: black (stopper) took" in record.reason


# -- --margin-ms on match ----------------------------------------------------------------------------------------


def test_match_takes_a_margin_and_records_it(tmp_path: Path) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", "random", "--white", "random", "--size", "3x3", "--games", "1", "--margin-ms", "25"]
    assert main([*argv, "--out", str(out)]) == 0
    records = [GameRecord.model_validate_json(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert records and all(record.settings.margin_ms == 25 for record in records)


def test_match_refuses_a_negative_margin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["match", "--black", "random", "--white", "random", "--margin-ms", "-5", "--out", str(tmp_path / "m")]
    assert main(argv) == 2
    assert "--margin-ms -5: give 0 or more milliseconds" in capsys.readouterr().err


# -- the host keeping a bot from reading its turn ------------------------------------------------------------------


class KeptFromReading:
    """A lag source whose windows say the host kept the bot from reading its turn for `ns` (no referee lag)."""

    monitors = False
    look_ns = None

    def __init__(self, ns: int) -> None:
        self.ns = ns

    def look(self, watch: ReadWatch | None = None) -> None:
        pass

    def open(
        self, start_ns: int, watch: ReadWatch | None = None, *, quiet_until_ns: int | None = None, look: bool = False
    ) -> LagWindow:
        return self

    def lag_ns(self, end_ns: int) -> int:
        return 0

    def wait_before_read_ns(self) -> int:
        return self.ns

    def close(self) -> None:
        pass


async def test_a_bot_kept_from_reading_its_turn_longer_than_its_overrun_is_not_forfeited(
    autojump_clock: trio.testing.MockClock,
) -> None:
    late = FakeBot(lambda n: 1.2 if n == 2 else 0.1)
    control = parse_time_control("movetime:1")
    record, _, _ = await fake_game(late, FakeBot(), control, lag_source=KeptFromReading(300 * MS))
    assert record.termination is Termination.VOID, record.reason
    assert "the host kept the bot from reading its turn for 300 ms" in record.reason
    record, _, _ = await fake_game(late, FakeBot(), control, lag_source=KeptFromReading(100 * MS))
    assert record.termination is Termination.TIME, record.reason


def test_a_read_watch_notes_the_bot_s_wait_when_its_input_is_emptied() -> None:
    unread, total = [120], [5_000]
    watch = ReadWatch(lambda: unread[0], lambda: total[0], start_wait=1_000)
    unread[0] = 0
    watch.check(5)
    assert watch.read_seen_ns is None  # an empty pipe before the turn is written is not a read
    unread[0] = 120
    watch.written = True
    watch.check(10)
    assert watch.read_seen_ns is None and watch.wait_before_read_ns == 0  # not read yet
    unread[0] = 0
    watch.check(20)
    total[0] = 9_000_000  # later waits (while it thinks) do not count
    watch.check(30)
    seen: tuple[int | None, int] = (watch.read_seen_ns, watch.wait_before_read_ns)
    assert seen == (20, 4_000)


def test_a_read_watch_measures_the_bot_s_wait_from_its_deadline_to_its_move() -> None:
    total, unread = [1_000], [50]
    watch = ReadWatch(lambda: unread[0], lambda: total[0], start_wait=1_000, written=True, deadline_ns=25)
    assert watch.wait_before_write_ns(50, 9_000) == 0  # no sample before the arrival: unknown
    watch.check(10)
    total[0], unread[0] = 2_000, 0  # it waited 1 us, then read its turn
    watch.check(15)
    assert watch.wait_before_read_ns == 1_000
    total[0] = 3_000  # a wait while it thinks, before the last sample before its deadline: not counted
    watch.check(20)
    watch.check(30)  # past the deadline, held off a CPU (its total only grows when it runs again)
    assert watch.wait_before_write_ns(40, 3_000 + 8_000_000) == 8_000_000
    watch.check(45)  # samples after the arrival are not the baseline
    assert watch.wait_before_write_ns(40, 3_000 + 8_000_000) == 8_000_000
    assert watch.wait_before_write_ns(40, None) == 0


def test_a_read_watch_never_counts_the_wait_before_the_read_twice() -> None:
    total, unread = [1_000], [50]
    watch = ReadWatch(lambda: unread[0], lambda: total[0], start_wait=1_000, written=True, deadline_ns=25)
    watch.check(10)  # the last sample before the deadline: the bot has not read yet
    total[0], unread[0] = 5_001_000, 0  # read at last, after a 5 ms wait, past its deadline
    watch.check(30)
    assert watch.wait_before_read_ns == 5_000_000
    assert watch.wait_before_write_ns(40, 5_001_000 + 2_000_000) == 2_000_000


def test_a_bot_asleep_on_its_input_is_waiting_for_the_host_until_it_reads() -> None:
    # Blocked in a read of stdin as the turn was written: it reads the moment the host runs it. A run queue
    # does not show the wait for an idle virtual CPU to wake; the turn left unread shows it, at least until the
    # last look that still found it there.
    unread, total = [120], [1_000]
    watch = ReadWatch(lambda: unread[0], lambda: total[0], start_wait=1_000, written=True, asleep_from_ns=100)
    watch.check(1_100)
    watch.check(2_100)
    assert watch.wait_before_read_ns == 2_000  # unread 2 us after the write, and counting
    unread[0] = 0
    watch.check(3_100)
    watch.check(9_100)
    assert (watch.read_seen_ns, watch.wait_before_read_ns) == (3_100, 2_000)
    total[0] = 3_000_000  # a wait for a CPU later, past the read: for wait_before_write_ns, not counted twice
    assert watch.wait_before_write_ns(10_000, 3_000_000 + 500) == 3_000_000 + 500 - 1_000


def test_a_bot_busy_when_its_turn_came_is_not_excused_for_reading_it_late() -> None:
    unread, total = [120], [1_000]
    watch = ReadWatch(lambda: unread[0], lambda: total[0], start_wait=1_000, written=True)  # not asleep
    for now in (1_100, 2_100, 3_100):
        watch.check(now)
    unread[0] = 0
    watch.check(4_100)
    assert watch.wait_before_read_ns == 0  # it chose to read late; and it never waited for a CPU


async def test_a_bot_blocked_reading_its_stdin_is_known_to_be_asleep_on_input(tmp_path: Path) -> None:
    if not probe._READ_SYSCALLS:
        pytest.skip("no read system call numbers known for this machine")

    def reading_another_fd(pid: int) -> bool:
        call = Path(f"/proc/{pid}/task/{pid}/syscall").read_text().split()
        return len(call) > 1 and call[0].isdigit() and int(call[0]) in probe._READ_SYSCALLS and call[1] != "0x0"

    async def started(code: str, ready: Callable[[BotProcess], bool]) -> bool:
        spec = BotSpec(name="b", command=[sys.executable, "-c", code])
        async with open_bot(spec, tmp_path, quit_grace_s=0.1) as bot:
            with trio.fail_after(30):
                while not ready(bot):
                    await trio.sleep(0.01)
            return bot.probe.asleep_on_input()

    # Blocked reading its stdin: seen so as soon as it gets there.
    assert await started("import sys; sys.stdin.readline()", lambda bot: bot.probe.asleep_on_input())
    # Running (its CPU clock moving): not asleep.
    assert not await started("while True: pass", lambda bot: (bot.probe.cpu_clock_ns() or 0) > 200_000_000)
    # Blocked reading a pipe of its own (waiting for a helper, not for its turn): not asleep on its input.
    other = "import os; r, w = os.pipe(); os.read(r, 1)"
    assert not await started(other, lambda bot: reading_another_fd(bot.pid))


# -- a busy event loop is not charged to a bot whose reply came in time ------------------------------------------


async def test_a_reply_read_while_the_loop_is_blocked_is_charged_when_it_came(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    # Both bots take 100 ms a move of their 500 ms. 250 ms into the game the referee's loop is blocked for
    # 1.5 s (as by a long computation for another game): the reply in flight is read by its reader thread
    # when it comes, so it is charged about 100 ms, not the 1.5 s until the loop got round to it.
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("movetime:0.5"))
    blocked = False
    seen: list[bool] = []  # for each move recorded: whether the block was over by then

    async def block_the_loop() -> None:
        nonlocal blocked
        await trio.sleep(0.25)
        time.sleep(1.5)
        blocked = True

    with trio.fail_after(60):
        async with (
            open_bot(bot_spec("testbot", "slow", "100"), tmp_path) as black,
            open_bot(bot_spec("testbot", "slow", "100"), tmp_path) as white,
        ):
            await black.handshake()
            await white.handshake()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(block_the_loop)
                record = await run_game("blocked", black, white, settings, on_move=lambda m, p: seen.append(blocked))
    assert record.termination is Termination.NORMAL, record.reason
    # The first move recorded after the block was written before it (nothing ran on the loop meanwhile).
    first_after = seen.index(True)
    assert first_after > 0
    assert 100 <= record.moves[first_after].elapsed_ms < 500
    assert all(move.elapsed_ms < 500 for move in record.moves)


# -- latency in the summaries, and the bound on games voided for the host ---------------------------------------

TESTBOT = Path(__file__).parent / "bots" / "testbot.py"


def test_a_match_reports_the_referee_latency(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    argv = ["match", "--black", "random", "--white", "greedy", "--size", "3x3", "--games", "2", "--out", str(out)]
    assert main(argv) == 0
    summary = json.loads((out / "match.json").read_text())
    latency = summary["latency"]
    assert latency["moves"] > 0 and latency["games"] == 2 and latency["void_for_lag"] == 0
    assert 0 <= latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert latency["warning"] is None
    assert "referee latency per move: p50 " in capsys.readouterr().out
    moves = [json.loads(line)["moves"] for line in (out / "games.jsonl").read_text().splitlines()]
    assert all(move["latency_ms"] is not None and move["latency_ms"] >= 0 for game in moves for move in game)


@pytest.mark.skipif(not stamped_stdout(), reason="no socket that stamps each write here: stdout is a pipe")
def test_a_stamped_reply_over_its_time_loses_whatever_lateness_the_referee_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same slow bot and the same 10 s of "lateness" as below, over the stamped socket: the kernel timed the
    # reply at the bot's write, the turn was timed at the referee's, so the 50 ms over is the bot's own: a loss.
    monkeypatch.setattr(process, "host_lag_monitor", lambda: ConstantLag(10_000 * MS))
    slow = f"name=slow cmd='python3 {TESTBOT} slow 150'"
    out = tmp_path / "m"
    argv = ["match", "--black", slow, "--white", "random", "--movetime", "0.1", "--size", "3x3", "--games", "1"]
    main([*argv, "--out", str(out), "-j1"])
    records = [GameRecord.model_validate_json(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(records) == 1
    assert records[0].termination is Termination.TIME and records[0].loser == "black", records[0].reason
    assert records[0].moves == [] or all(m.latency_ms is not None and m.latency_ms < 10_000 for m in records[0].moves)


@pytest.mark.usefixtures("quick_backoff")
def test_games_voided_for_the_host_are_replayed_then_the_run_stops_about_the_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every move of the slow bot is 50 ms or more over its 100 ms, and the referee "measured" 10 s of its own
    # lateness in every move: every game is void, replayed after a pause, and though the host is calm before each
    # try the game is void again: the run stops at the bound (MAX_CALM_VOIDS). Over plain pipes: a
    # reply the kernel stamps at the bot's write is timed exactly, and no stall of the referee excuses it.
    monkeypatch.setattr(process, "host_lag_monitor", lambda: ConstantLag(10_000 * MS))
    monkeypatch.setattr(process, "stdout_pair", os.pipe)
    slow = f"name=slow cmd='python3 {TESTBOT} slow 150'"
    out = tmp_path / "m"
    argv = ["match", "--black", slow, "--white", "random", "--movetime", "0.1", "--size", "3x3", "--games", "2"]
    assert main([*argv, "--out", str(out), "-j1"]) == 1
    captured = capsys.readouterr()
    err, text = captured.err, captured.out + captured.err
    assert "this machine cannot play it fairly now" in err and "void, the host was late" in err
    assert "because the host was late" in text
    summary = json.loads((out / "match.json").read_text())
    assert summary["ended"] == "error"
    latency = summary["latency"]
    assert latency["void_for_lag"] == latency["games"] == backoff.MAX_CALM_VOIDS
    assert "Lower --concurrency, raise the time control, or add --margin-ms" in latency["warning"]
    voids = backoff.MAX_CALM_VOIDS
    assert f"WARNING: {voids} of {voids} games (100.0%) were void because the host was late" in text
    assert f"game g0001 was void {voids} times in a row, each time started on a calm host" in err


@pytest.mark.usefixtures("quick_backoff")
def test_a_bot_whose_processes_keep_the_host_busy_loses_the_game_rather_than_stalling_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As above, every move of the slow bot is over its time and the referee "measured" 10 s of lateness in it:
    # void, were the host's load not the other bot's own. That bot's eight escaped burners use every core while
    # the slow bot thinks: it, not the host, made the move late, and it loses; the run does not wait for it.
    monkeypatch.setattr(process, "host_lag_monitor", lambda: ConstantLag(10_000 * MS))
    monkeypatch.setattr(process, "stdout_pair", os.pipe)
    slow = f"name=slow cmd='python3 {TESTBOT} slow 150'"
    burner = f"name=burner cmd='python3 {TESTBOT} burn 8'"
    out = tmp_path / "m"
    argv = ["match", "--black", slow, "--white", burner, "--movetime", "0.1", "--size", "3x3", "--games", "1"]
    assert main([*argv, "--out", str(out), "-j1"]) == 0, capsys.readouterr().err
    records = [GameRecord.model_validate_json(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(records) == 1
    record = records[0]
    assert record.termination is Termination.TIME and record.loser == "white", record.reason
    assert record.reason.startswith("white (burner) lost: its processes used "), record.reason
    assert "played again" not in record.reason
    assert "and that move came late because the host was busy (black (slow) took" in record.reason
    # While its burners start up (a Python each) they may not yet fill the cores: such a try is void, and the
    # next one, with the same bot and its burners running, is not.
    assert json.loads((out / "match.json").read_text())["void_games"] < backoff.MAX_CALM_VOIDS - 1
