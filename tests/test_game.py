"""run_game: the clock with fake bots in memory (autojump_clock), and every adjudication path with real bots.

The first half drives `BotChannel`s over trio memory streams, with a fake bot task on the other end whose
"thinking" is `trio.sleep` on the virtual clock, so times are exact and tests take no real time. The second
half plays real games between `tests/bots/testbot.py` processes (never under autojump_clock).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from protocol.framing import LineBuffer
from protocol.messages import TimeControl, Turn, encode, parse_referee_line
from protocol.rules import BLACK, Position
from referee.play.game import INFO_BUDGET_CHARS, MAX_INFOS_PER_MOVE, Limits, _Game, _move_record, run_game
from referee.play.process import BotChannel, open_bot
from referee.play.reader import TurnWrite
from referee.record import GameRecord, GameSettings, MoveRecord, Termination
from referee.timing.clock import parse_time_control
from referee.timing.latency import NO_LAG, LagSource
from tests.conftest import BotSpecFactory, live_pids

# -- a fake bot in memory -------------------------------------------------------------------------


@dataclass
class FakeBot:
    """Plays the first legal move after `think(n)` seconds on its n-th turn (1-based); answers pings."""

    think: Callable[[int], float] = lambda n: 0.0
    answer_pings: bool = True
    answer_hello: bool = True
    before_move: dict[int, bytes] = field(default_factory=dict)  # lines sent before the move on turn n
    before_ready: bytes = b""  # lines sent before ready
    received: list[dict[str, Any]] = field(default_factory=list)
    pings: int = 0

    async def serve(self, stream: trio.abc.Stream) -> None:
        buffer = LineBuffer()
        turns = 0
        async with trio.open_nursery() as nursery:
            while data := await stream.receive_some(65536):
                for line in buffer.feed(bytes(data)):
                    message = json.loads(line)
                    parse_referee_line(line)  # everything the referee sends is valid protocol
                    kind = message["type"]
                    if kind == "ping":
                        self.pings += 1
                        if self.answer_pings:
                            await stream.send_all(b'{"type":"pong","id":%d}\n' % message["id"])
                        continue
                    self.received.append(message)
                    if kind == "hello" and self.answer_hello:
                        await stream.send_all(b'{"type":"hello","protocol":1,"name":"fake"}\n')
                    elif kind == "new_game":
                        ready = b'{"type":"ready","game_id":"%s"}\n' % message["game_id"].encode()
                        await stream.send_all(self.before_ready + ready)
                    elif kind == "turn":
                        turns += 1
                        nursery.start_soon(self._move, stream, message, turns)
                    elif kind == "quit":
                        nursery.cancel_scope.cancel()
                        return

    async def _move(self, stream: trio.abc.Stream, turn: dict[str, Any], n: int) -> None:
        await trio.sleep(self.think(n))
        if n in self.before_move:
            await stream.send_all(self.before_move[n])
        new_game = next(m for m in self.received if m["type"] == "new_game")
        position = Position.from_moves(turn["moves"], new_game["width"], new_game["height"], new_game["komi"])
        await stream.send_all(b'{"type":"move","move":"%s"}\n' % str(position.legal_moves()[0]).encode())

    def turns(self) -> list[dict[str, Any]]:
        return [m for m in self.received if m["type"] == "turn"]


DEFAULT_LIMITS = Limits()


def serve_fakes(
    nursery: trio.Nursery, black: FakeBot, white: FakeBot, lag_source: LagSource = NO_LAG
) -> list[BotChannel]:
    """The referee's channels to two fake bots served in memory by tasks in `nursery`."""
    channels = []
    for name, fake in (("black-bot", black), ("white-bot", white)):
        referee_end, bot_end = trio.testing.memory_stream_pair()
        nursery.start_soon(fake.serve, bot_end)
        channels.append(BotChannel(name, referee_end, referee_end, lag_source=lag_source))
    return channels


async def fake_game(
    black: FakeBot,
    white: FakeBot,
    control: TimeControl,
    *,
    margin_ms: int = 0,
    size: int = 3,
    opening: list[str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    on_move: Callable[[MoveRecord, Position], None] | None = None,
    lag_source: LagSource = NO_LAG,
) -> tuple[GameRecord, BotChannel, BotChannel]:
    settings = GameSettings(width=size, height=size, time_control=control, margin_ms=margin_ms, opening=opening or [])
    async with trio.open_nursery() as nursery:
        channels = serve_fakes(nursery, black, white, lag_source)
        record = await run_game("g1", channels[0], channels[1], settings, on_move=on_move, limits=limits)
        nursery.cancel_scope.cancel()
    GameRecord.model_validate_json(record.model_dump_json())  # the record is valid against its own schema
    return record, channels[0], channels[1]


def replay(record: GameRecord) -> Position:
    """Every move in the record is legal from the start, and the final position matches."""
    settings = record.settings
    position = Position.from_moves(record.all_moves(), settings.width, settings.height, settings.komi)
    assert position.to_string() == record.final_position
    return position


async def test_every_move_is_charged_exactly_its_time(autojump_clock: trio.testing.MockClock) -> None:
    record, _, _ = await fake_game(FakeBot(lambda n: 0.25), FakeBot(lambda n: 0.5), parse_time_control("10+1"))
    assert record.termination is Termination.NORMAL
    black = [m for m in record.moves if m.color == "black"]
    white = [m for m in record.moves if m.color == "white"]
    assert black and white
    for n, move in enumerate(black, start=1):
        assert move.elapsed_ms == pytest.approx(250, abs=1e-3)
        assert move.clock_ms == 10_000 + n * 750
    for n, move in enumerate(white, start=1):
        assert move.elapsed_ms == pytest.approx(500, abs=1e-3)
        assert move.clock_ms == 10_000 + n * 500
    replay(record)


async def test_turns_show_both_clocks_and_the_whole_history(autojump_clock: trio.testing.MockClock) -> None:
    black, white = FakeBot(lambda n: 1.0), FakeBot(lambda n: 2.0)
    record, _, _ = await fake_game(black, white, parse_time_control("60+0"), opening=["a1b1"])
    turns = white.turns() + black.turns()
    turns.sort(key=lambda t: len(t["moves"]))
    assert turns[0]["moves"] == ["a1b1"]  # White moves first after a one-move opening
    for turn in turns:
        done = len(turn["moves"]) - 1  # bot moves made before this turn
        white_moves, black_moves = (done + 1) // 2, done // 2
        assert turn["clock"]["white_ms"] == 60_000 - 2_000 * white_moves
        assert turn["clock"]["black_ms"] == 60_000 - 1_000 * black_moves
        assert turn["moves"] == record.all_moves()[: len(turn["moves"])]
    assert [m.move for m in record.moves] == record.all_moves()[1:]  # the record keeps the opening apart


async def test_periods_refill_and_count_moves_to_go(autojump_clock: trio.testing.MockClock) -> None:
    black = FakeBot(lambda n: 0.4)
    record, _, _ = await fake_game(black, FakeBot(), parse_time_control("2/1"))
    assert record.termination is Termination.NORMAL  # 0.8 s of every 1 s period: never out of time
    clocks = [(t["clock"]["moves_to_go"], t["clock"]["black_ms"]) for t in black.turns()]
    assert clocks[:4] == [(2, 1000), (1, 600), (2, 1200), (1, 800)]


async def test_time_loss_says_by_how_much_and_the_margin_counts(autojump_clock: trio.testing.MockClock) -> None:
    control = parse_time_control("movetime:2")
    # 2.05 s is inside a 100 ms margin: in time, and charged exactly.
    record, _, _ = await fake_game(FakeBot(lambda n: 2.05), FakeBot(), control, margin_ms=100)
    assert record.termination is Termination.NORMAL
    assert record.moves[0].elapsed_ms == pytest.approx(2050, abs=1e-3)

    record, black, white = await fake_game(FakeBot(lambda n: 0.1 if n < 2 else 2.2), FakeBot(), control, margin_ms=100)
    assert record.termination is Termination.TIME
    assert (record.loser, record.winner, record.result) == ("black", "white", "0-1")
    assert record.overrun_ms == pytest.approx(100, abs=1)
    assert "lost on time: no move after 2100 ms, 100 ms over its 2000 ms (a 100 ms margin was allowed)" in record.reason
    assert record.reason.startswith("black (black-bot) ")
    assert black.broken and not white.broken  # its late move would poison the next game
    assert len([m for m in record.moves if m.color == "black"]) == 1


async def test_game_clock_runs_out(autojump_clock: trio.testing.MockClock) -> None:
    record, _, _ = await fake_game(FakeBot(), FakeBot(lambda n: 0.6), parse_time_control("1"))
    assert record.termination is Termination.TIME and record.loser == "white"
    assert "over its 400 ms" in record.reason  # 1000 - 600 left for the second move


async def test_slow_bot_that_answers_pings_is_not_hung(autojump_clock: trio.testing.MockClock) -> None:
    slow = FakeBot(lambda n: 30.0 if n == 1 else 0.0)
    limits = Limits(ping_interval_s=1, ping_timeout_s=2)
    record, _, _ = await fake_game(slow, FakeBot(), parse_time_control("60"), limits=limits)
    assert record.termination is Termination.NORMAL
    assert 25 <= slow.pings <= 31  # about one per second while it thought
    assert record.moves[0].elapsed_ms == pytest.approx(30_000, abs=1e-3)  # pings are not the bot's time


async def test_hung_bot_is_unresponsive_long_before_its_clock_ends(autojump_clock: trio.testing.MockClock) -> None:
    hung = FakeBot(lambda n: math.inf, answer_pings=False)
    limits = Limits(ping_interval_s=1, ping_timeout_s=2)
    start = trio.current_time()
    record, black, _ = await fake_game(hung, FakeBot(), parse_time_control("600"), limits=limits)
    assert record.termination is Termination.UNRESPONSIVE and record.loser == "black"
    assert "stopped answering pings: no pong to ping 1 within 2 s" in record.reason
    assert trio.current_time() - start == pytest.approx(3, abs=0.1)
    assert black.broken


async def test_handshake_and_ready_limits_are_their_own(autojump_clock: trio.testing.MockClock) -> None:
    limits = Limits(handshake_s=5, ready_s=5)
    record, _, _ = await fake_game(FakeBot(), FakeBot(answer_hello=False), parse_time_control("1"), limits=limits)
    assert record.termination is Termination.PROTOCOL and record.loser == "white"
    assert "failed the handshake: no hello within 5 s" in record.reason
    assert record.moves == []


async def test_game_over_is_sent_to_both(autojump_clock: trio.testing.MockClock) -> None:
    black, white = FakeBot(), FakeBot()
    record, _, _ = await fake_game(black, white, parse_time_control("5"))
    for fake in (black, white):
        over = [m for m in fake.received if m["type"] == "game_over"]
        assert len(over) == 1
        assert (over[0]["result"], over[0]["winner"], over[0]["reason"]) == (
            record.result,
            record.winner,
            record.reason,
        )
    assert record.reason.startswith("two passes in a row: ")
    position = replay(record)
    outcome = position.outcome()
    assert outcome is not None and outcome.result() == record.result
    assert (record.black_score, record.white_score) == (outcome.black_score, outcome.white_score)


async def test_referee_failure_is_void_not_a_loss(autojump_clock: trio.testing.MockClock) -> None:
    def explode(record: MoveRecord, position: Position) -> None:
        raise RuntimeError("disk full")

    record, black, white = await fake_game(FakeBot(), FakeBot(), parse_time_control("5"), on_move=explode)
    assert record.termination is Termination.VOID
    assert (record.result, record.winner, record.loser) == ("*", None, None)
    assert "RuntimeError: disk full" in record.reason and "not scored" in record.reason
    assert black.broken and white.broken


async def test_unplayable_opening_is_refused_before_anything_is_sent() -> None:
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("1"), opening=["a1c3"])
    referee_end, _ = trio.testing.memory_stream_pair()
    channel = BotChannel("x", referee_end, referee_end)
    with pytest.raises(ValueError, match="opening of game 'g' is not playable: a1c3"):
        await run_game("g", channel, channel, settings)
    # An opening that ends the game leaves nothing to play: no game to score.
    settings = settings.model_copy(update={"opening": ["a1b1", "pass", "pass"]})
    with pytest.raises(ValueError, match=r"opening of game 'g' ends the game \(two passes\); leave moves for the bots"):
        await run_game("g", channel, channel, settings)


# -- real bots: every adjudication path -----------------------------------------------------------

FAST = Limits(handshake_s=10, ready_s=5, ping_interval_s=0.5, ping_timeout_s=5)
QUIT_GRACE_S = 0.2
"""How long a bot has to exit after the game (a testbot that obeys quit needs milliseconds; most misbehaving
ones here never do, and wait out the whole grace before they are killed)."""


async def play(
    bot_spec: BotSpecFactory,
    log_dir: Path,
    black: list[str],
    white: list[str],
    *,
    control: str = "20",
    size: int = 3,
    opening: list[str] | None = None,
    limits: Limits = FAST,
) -> GameRecord:
    settings = GameSettings(width=size, height=size, time_control=parse_time_control(control), opening=opening or [])
    async with (
        open_bot(bot_spec("testbot", *black, name="B"), log_dir, quit_grace_s=QUIT_GRACE_S) as black_bot,
        open_bot(bot_spec("testbot", *white, name="W"), log_dir, quit_grace_s=QUIT_GRACE_S) as white_bot,
    ):
        record = await run_game("real", black_bot, white_bot, settings, limits=limits)
    GameRecord.model_validate_json(record.model_dump_json())
    replay(record)
    return record


async def test_two_good_bots_play_to_the_end(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    record = await play(bot_spec, tmp_path, [], ["info", "--infos", "2"], size=4)
    assert record.termination is Termination.NORMAL and record.loser is None
    assert record.black.announced_name == "testbot" and record.black.command[-1].endswith("testbot.py")
    assert record.black_score is not None and record.white_score is not None
    assert record.black_score + record.white_score == 16 + 3.5
    assert all(0 < m.elapsed_ms < 2000 for m in record.moves)
    white_infos = [m.infos for m in record.moves if m.color == "white"]
    assert white_infos[0] == [
        {"depth": 1, "nodes": 10, "text": "depth 1"},
        {"depth": 2, "nodes": 20, "text": "depth 2"},
    ]
    assert all(m.infos == [] for m in record.moves if m.color == "black")
    assert record.stderr_tail == []


async def test_slow_moves_are_measured(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    record = await play(bot_spec, tmp_path, ["slow", "150"], [], control="movetime:2")
    assert record.termination is Termination.NORMAL
    black = [m.elapsed_ms for m in record.moves if m.color == "black"]
    assert all(150 <= ms < 1500 for ms in black)


@dataclass(frozen=True)
class Case:
    black: list[str]
    white: list[str]
    termination: Termination
    loser: str
    says: str
    control: str = "20"
    size: int = 3
    opening: tuple[str, ...] = ()
    limits: Limits = FAST
    stderr: str | None = None


CASES = {
    "crash": Case(
        ["crash", "3", "--on", "2"], [], Termination.CRASH, "black", "exited with code 3", stderr="about to crash"
    ),
    "signal": Case([], ["signal", "SEGV"], Termination.CRASH, "white", "killed by SIGSEGV", stderr="about to die"),
    "hang": Case(["hang"], [], Termination.TIME, "black", "lost on time: no move after", control="movetime:0.3"),
    "no-pongs": Case(
        [], ["hang"], Termination.UNRESPONSIVE, "white", "stopped answering pings",
        limits=Limits(ping_interval_s=0.2, ping_timeout_s=0.3),
    ),
    "garbage": Case(["garbage"], [], Termination.PROTOCOL, "black", "sent malformed JSON"),
    "unknown": Case(["unknown"], [], Termination.PROTOCOL, "black", "unknown type 'resign'"),
    "out-of-turn": Case([], ["outofturn"], Termination.PROTOCOL, "white", "sent 'ready' during its turn"),
    "move-between-turns": Case(
        ["twice"], [], Termination.PROTOCOL, "black", "sent 'move' when it was not asked for anything"
    ),
    "move-between-turns-read-on-turn": Case(
        ["twowrites"], [], Termination.PROTOCOL, "black", "sent 'move' when it was not asked for anything"
    ),
    "pong-between-turns": Case(
        ["strangepong"], [], Termination.PROTOCOL, "black", "answered ping 999, which was never sent"
    ),
    "illegal": Case(
        [], ["move", "f3e3"], Termination.ILLEGAL_MOVE, "white",
        "illegal move f3e3: the tree at f3 (size 1) is smaller than the tree at e3 (size 4)",
        size=8, opening=("d5d4", "d4e4", "e4e3"),
    ),
    "off-board": Case(["move", "c3c4"], [], Termination.ILLEGAL_MOVE, "black", "illegal move c3c4: c4 is off the 3x3"),
    "malformed-move": Case(["move", "d5-d4"], [], Termination.ILLEGAL_MOVE, "black", "malformed move 'd5-d4'"),
    "move-not-text": Case(["badmove"], [], Termination.PROTOCOL, "black", "invalid 'move' message"),
    "long-line": Case(["longline", "100000"], [], Termination.PROTOCOL, "black", "over-long line"),
    "endless-line": Case([], ["longline", "0"], Termination.PROTOCOL, "white", "over-long line"),
    "slow-hello": Case(
        ["slowhello", "3000"], [], Termination.PROTOCOL, "black", "failed the handshake: no hello within 0.5 s",
        limits=Limits(handshake_s=0.5),
    ),
    "version": Case(
        [], ["version", "2"], Termination.PROTOCOL, "white",
        "failed the handshake: speaks protocol 2, the referee speaks 1",
    ),
    "ready-flood": Case(
        ["readyflood"], [], Termination.PROTOCOL, "black", "failed to start the game: no ready within 0.5 s",
        limits=Limits(ready_s=0.5),
    ),
    "no-ready": Case(
        ["noready"], [], Termination.PROTOCOL, "black", "failed to start the game: no ready within 0.5 s",
        limits=Limits(ready_s=0.5),
    ),
    "close-stdout": Case(
        [], ["closeout", "--on", "2"], Termination.CRASH, "white", "closed its output but is still running"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_adjudication(case: Case, bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    record = await play(
        bot_spec,
        tmp_path,
        case.black,
        case.white,
        control=case.control,
        size=case.size,
        opening=list(case.opening),
        limits=case.limits,
    )
    assert record.termination is case.termination, record.reason
    assert record.loser == case.loser
    winner = "white" if case.loser == "black" else "black"
    assert (record.winner, record.result) == (winner, "1-0" if winner == "black" else "0-1")
    assert case.says in record.reason
    name = "B" if case.loser == "black" else "W"
    assert record.reason.startswith(f"{case.loser} ({name}) ")
    assert record.black_score is None and record.white_score is None
    assert (record.overrun_ms is not None) is (case.termination is Termination.TIME)
    if case.stderr is not None:
        assert record.stderr_tail[-1] == case.stderr
    log = Path(getattr(record, case.loser).stderr_log or "")
    assert log.parent == tmp_path and log.exists()


async def test_time_loss_overrun_is_small_and_honest(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    record = await play(bot_spec, tmp_path, [], ["slow", "2000", "--on", "2"], control="movetime:0.3")
    assert record.termination is Termination.TIME and record.loser == "white"
    assert record.overrun_ms is not None and 0 <= record.overrun_ms < 250
    assert "over its 300 ms" in record.reason
    assert len([m for m in record.moves if m.color == "white"]) == 1  # its first move was in time


async def test_stderr_flood_does_not_disturb_the_game(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    record = await play(bot_spec, tmp_path, ["stderrflood", "3"], [], size=4)
    assert record.termination is Termination.NORMAL
    log = Path(record.black.stderr_log or "")
    assert 1 << 20 <= log.stat().st_size < (1 << 20) + 200
    assert max(m.elapsed_ms for m in record.moves) < 1000


async def test_a_game_leaves_no_grandchild(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    record = await play(bot_spec, tmp_path, ["grandchild"], ["ignorequit"])
    assert record.termination is Termination.NORMAL
    lines = Path(record.black.stderr_log or "").read_text().splitlines()
    grandchild = int(next(line for line in lines if line.startswith("grandchild pid")).split()[-1])
    assert live_pids([grandchild]) == []


def test_hand_built_turn_line_is_the_protocol_turn() -> None:
    for control in ("40/60+1", "movetime:0.5", "1"):
        settings = GameSettings(
            width=3, height=3, time_control=parse_time_control(control), opening=["a1b1", "pass"], margin_ms=7
        )
        referee_end, _ = trio.testing.memory_stream_pair()
        channel = BotChannel("x", referee_end, referee_end)
        game = _Game('g"1', channel, channel, settings, None, Limits())
        game.clock.charge(BLACK, 1_234_567)
        line = game._turn_line(BLACK)
        expected = Turn(type="turn", game_id='g"1', moves=["a1b1", "pass"], clock=game.clock.message(BLACK))
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert parse_referee_line(line) == expected
        assert json.loads(line) == json.loads(encode(expected))


def test_a_move_record_made_on_the_per_move_path_is_what_model_construct_makes() -> None:
    fields: dict[str, Any] = {
        "color": BLACK,
        "move": "d5d4",
        "elapsed_ms": 12.5,
        "clock_ms": 900,
        "latency_ms": 0.1,
        "infos": [{"depth": 3}],
        "infos_dropped": 2,
        "cpu_ms": 11.0,
        "opponent_cpu_ms": None,
    }
    made, constructed = _move_record(dict(fields)), MoveRecord.model_construct(**fields)
    assert made == constructed and made.model_fields_set == constructed.model_fields_set
    assert made.model_dump_json() == constructed.model_dump_json()
    made.opponent_cpu_ms = 3.0  # still a model: assignment works as on any other
    assert MoveRecord.model_validate_json(made.model_dump_json()).opponent_cpu_ms == 3.0


async def test_stray_pong_is_a_protocol_fault_and_a_late_one_is_not(autojump_clock: trio.testing.MockClock) -> None:
    white = FakeBot(
        before_move={1: b'{"type":"pong","id":0}\n{"type":"info","depth":1}\n', 2: b'{"type":"pong","id":99}\n'}
    )
    record, _, _ = await fake_game(FakeBot(), white, parse_time_control("5"))
    assert record.termination is Termination.PROTOCOL and record.loser == "white"
    assert "answered ping 99, which was never sent" in record.reason
    assert [m.infos for m in record.moves if m.color == "white"] == [[{"depth": 1}]]


async def test_an_info_flood_keeps_the_last_infos_of_each_move(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    record = await play(bot_spec, tmp_path, ["infoflood", "3000"], ["info", "--infos", "2"])
    assert record.termination is Termination.NORMAL, record.reason
    black = [m for m in record.moves if m.color == "black"]
    assert black
    for move in black:
        # The earliest infos are counted, not kept: a bot cannot make its record (or the referee) grow unbounded.
        assert [info["depth"] for info in move.infos] == list(range(3000 - MAX_INFOS_PER_MOVE, 3000))
        assert move.infos_dropped == 3000 - MAX_INFOS_PER_MOVE
    assert all(len(m.infos) == 2 and m.infos_dropped == 0 for m in record.moves if m.color == "white")


async def test_infos_kept_per_game_are_capped(autojump_clock: trio.testing.MockClock) -> None:
    big = b'{"type":"info","depth":%d,"text":"' + b"x" * 4000 + b'"}\n'
    sent = MAX_INFOS_PER_MOVE + 4
    flood = FakeBot(before_move={n: b"".join(big % d for d in range(sent)) for n in range(1, 100)})
    record, _, _ = await fake_game(flood, FakeBot(), parse_time_control("60"), size=8)
    assert record.termination is Termination.NORMAL, record.reason
    black = [m for m in record.moves if m.color == "black"]
    assert all(len(m.infos) + m.infos_dropped == sent for m in black)
    # Each move keeps a suffix of its infos; once the game's budget for the side is spent, nothing more.
    assert all([i["depth"] for i in m.infos] == list(range(sent - len(m.infos), sent)) for m in black)
    kept = sum(len(m.infos) for m in black)
    assert 0 < kept * 4000 <= INFO_BUDGET_CHARS < (kept + MAX_INFOS_PER_MOVE) * 4064
    assert black[0].infos_dropped == 4 and black[-1].infos == []


async def test_a_pong_to_a_ping_never_sent_is_a_fault_before_the_game_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    chatty = FakeBot(before_ready=b'{"type":"info","depth":1}\n{"type":"pong","id":0}\n')
    record, _, _ = await fake_game(chatty, FakeBot(), parse_time_control("5"))
    assert record.termination is Termination.NORMAL  # infos and stale pongs are fine while it gets ready

    stray = FakeBot(before_ready=b'{"type":"pong","id":7}\n')
    record, _, white = await fake_game(FakeBot(), stray, parse_time_control("5"))
    assert record.termination is Termination.PROTOCOL and record.loser == "white"
    assert "failed to start the game: answered ping 7, which was never sent" in record.reason
    assert white.broken and record.moves == []


async def test_a_stop_while_game_over_is_sent_does_not_lose_the_finished_game(
    autojump_clock: trio.testing.MockClock,
) -> None:
    black, white = FakeBot(), FakeBot()
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("5"))
    record: GameRecord | None = None
    async with trio.open_nursery() as nursery:
        channels = serve_fakes(nursery, black, white)
        with trio.CancelScope() as stop:

            def stop_after_the_last_move(move: MoveRecord, position: Position) -> None:
                if position.is_over():
                    stop.cancel()  # e.g. Ctrl-C in a tournament, just as the game ends

            record = await run_game("g1", channels[0], channels[1], settings, on_move=stop_after_the_last_move)
        await trio.sleep(0.1)
        nursery.cancel_scope.cancel()
    assert record is not None and record.termination is Termination.NORMAL
    assert all([m["type"] for m in fake.received][-1] == "game_over" for fake in (black, white))


@dataclass
class ChattyBot(FakeBot):
    """Sends an info at 0.1 s and 0.2 s into each turn, then two infos and its move in one write at 0.3 s."""

    async def _move(self, stream: trio.abc.Stream, turn: dict[str, Any], n: int) -> None:
        for depth in (1, 2):
            await trio.sleep(0.1)
            await stream.send_all(b'{"type":"info","depth":%d}\n' % depth)
        await trio.sleep(0.1)
        self.before_move[n] = b'{"type":"info","depth":3}\n{"type":"info","depth":4}\n'
        await super()._move(stream, turn, n)


async def test_the_move_is_charged_up_to_the_chunk_that_completed_it(autojump_clock: trio.testing.MockClock) -> None:
    record, _, _ = await fake_game(ChattyBot(), FakeBot(), parse_time_control("10+0"))
    black = [m for m in record.moves if m.color == "black"]
    assert black and all(m.elapsed_ms == pytest.approx(300, abs=1e-3) for m in black)
    assert all([i["depth"] for i in m.infos] == [1, 2, 3, 4] for m in black)
    assert [m.clock_ms for m in black] == [10_000 - 300 * n for n in range(1, len(black) + 1)]


class SlowWriter(BotChannel):
    """A channel whose turn's write call returns `write_ns` after the move's start, as when the writer was
    preempted between its stamp and its write (`TurnWrite.write_ns`)."""

    def __init__(self, name: str, stream: trio.abc.Stream, write_ns: int) -> None:
        super().__init__(name, stream, stream)
        self._write_ns = write_ns

    async def send_turn(self, line: bytes, written: Callable[[int], None] | None = None) -> TurnWrite:
        self.session.sent("turn")
        turn = TurnWrite.made(line, self.now_ns())
        turn.write_ns = self._write_ns
        await self._write(line)
        return turn


async def slow_writer_game(think: float, *, write_ns: int) -> GameRecord:
    """A game at movetime 0.3 s between two fake bots that think `think` s, over `SlowWriter` channels."""
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("movetime:0.3"))
    async with trio.open_nursery() as nursery:
        channels = []
        for name in ("black-bot", "white-bot"):
            referee_end, bot_end = trio.testing.memory_stream_pair()
            nursery.start_soon(FakeBot(lambda n: think).serve, bot_end)
            channels.append(SlowWriter(name, referee_end, write_ns=write_ns))
        record = await run_game("g1", channels[0], channels[1], settings)
        nursery.cancel_scope.cancel()
    return record


@pytest.mark.parametrize("write_ms", [0, 30])
async def test_a_turn_whose_write_took_long_voids_a_loss_by_less(
    autojump_clock: trio.testing.MockClock, write_ms: int
) -> None:
    # The writer was preempted between the start and its write call (30 ms there, say): the bot may have got its
    # turn that much later, so a move 20 ms over is the host's doing (void); with a prompt write it is a loss.
    record = await slow_writer_game(0.32, write_ns=write_ms * 1_000_000)
    if write_ms:
        assert record.termination is Termination.VOID, record.reason
        assert "the referee measured 30 ms of its own lateness" in record.reason
    else:
        assert record.termination is Termination.TIME, record.reason
