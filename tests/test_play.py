"""Play apart from coordination: a slot's games in a loop of their own, results and moves handed back.

Real threads and real trio loops: `PlayLoop.run` runs a function in the play loop's thread and returns its
result (or raises its error); cancelling the caller cancels the function there and waits for it; the moves of
a game played there reach the coordinator's loop in order, before the game's record.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio
import trio.testing

from referee.outputs.viewerline import line_text
from referee.play.loop import (
    PAYLOAD,
    BotPool,
    MoveRelay,
    PlayLoop,
    ProcessPlayLoop,
    frame,
    play_in_pool,
    read_message,
    stored_form,
)
from referee.play.process import BotStartError
from referee.record import GameRecord, GameSettings, MoveRecord, PlayedMove, Termination
from referee.run.botspec import BotSpec
from referee.timing.clock import parse_time_control
from tests.conftest import BotSpecFactory


async def test_a_function_runs_in_the_play_loop_s_thread_and_its_result_or_error_comes_back() -> None:
    loop = PlayLoop("play-test")
    try:

        async def where() -> str:
            await trio.sleep(0)
            return threading.current_thread().name

        assert await loop.run(where) == "play-test"

        async def fails() -> None:
            raise ValueError("the opening is not playable")

        with pytest.raises(ValueError, match="the opening is not playable"):
            await loop.run(fails)
    finally:
        await loop.aclose()
    assert not loop._thread.is_alive()


async def test_cancelling_the_caller_cancels_the_game_in_the_play_loop_and_waits_for_it() -> None:
    loop = PlayLoop("play-test")
    ended = threading.Event()

    async def forever() -> None:
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(0.05)  # unwinding takes a moment: the caller must wait for it
            ended.set()

    try:
        with trio.move_on_after(0.1) as scope:
            await loop.run(forever)
        assert scope.cancelled_caught and ended.is_set()
    finally:
        await loop.aclose()


async def test_moves_reach_the_coordinator_in_order_in_its_own_thread() -> None:
    loop = PlayLoop("play-test")
    seen: list[tuple[str, int, str]] = []

    def on_moves(moves: Sequence[tuple[PlayedMove, int]]) -> None:
        seen.extend((move.move, ply, threading.current_thread().name) for move, ply in moves)

    relay = MoveRelay(on_moves, trio.lowlevel.current_trio_token())

    async def play() -> None:
        from protocol.rules import Position

        position = Position(3, 3)
        for ply in range(1, 41):
            position.history.append(None)  # type: ignore[arg-type]  # only its length is read
            relay.push(MoveRecord.model_construct(color="black", move=f"m{ply}"), position)
        relay.flush()

    try:
        await loop.run(play)
        await trio.testing.wait_all_tasks_blocked()
    finally:
        await loop.aclose()
    assert [(move, ply) for move, ply, _ in seen] == [(f"m{n}", n) for n in range(1, 41)]
    assert {thread for _, _, thread in seen} == {threading.current_thread().name}


async def test_a_game_in_a_play_loop_streams_every_move_before_its_record(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    loop = PlayLoop("play-test")
    streamed: list[tuple[str, int]] = []
    relay = MoveRelay(
        lambda moves: streamed.extend((move.move, ply) for move, ply in moves), trio.lowlevel.current_trio_token()
    )
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("10+0.1"))
    pool = BotPool(tmp_path / "logs", loop.nursery)

    async def game() -> GameRecord:
        record = await play_in_pool(
            pool, "g1", ("a", bot_spec("testbot", name="a")), ("b", bot_spec("testbot", name="b")), settings, relay.push
        )
        relay.flush()
        pool.close_all()
        return record

    try:
        record = await loop.run(game)
        await trio.testing.wait_all_tasks_blocked()
    finally:
        await loop.aclose()
    assert record.termination is Termination.NORMAL, record.reason
    moves = record.moves
    assert streamed == [(move.move, ply) for ply, move in enumerate(moves, start=1)]
    assert all(move.opponent_cpu_ms is not None for move in moves)  # complete when handed over


# -- a slot's games in a play worker process ------------------------------------------------------------------


def test_worker_messages_are_taken_whole_from_any_cut_of_the_stream_with_their_payloads_as_sent() -> None:
    record = b'{"game_id":"g1","reason":"a \\"quoted\\" reason\\n","moves":["a1b1"]}'
    stream = frame({"op": "moves", "id": 1, "moves": [[1, "black"]]}) + frame({"op": "done", "id": 1}, record)
    for cut in range(len(stream) + 1):  # every way the socket may split the two messages
        buffer = bytearray(stream[:cut])
        taken = []
        while (message := read_message(buffer)) is not None:
            taken.append(message)
        buffer += stream[cut:]
        while (message := read_message(buffer)) is not None:
            taken.append(message)
        assert taken == [{"op": "moves", "id": 1, "moves": [[1, "black"]]}, {"op": "done", "id": 1, PAYLOAD: record}]
        assert not buffer


def test_a_worker_message_claiming_more_than_the_limit_is_refused_before_it_is_buffered() -> None:
    with pytest.raises(ValueError, match="play worker message of"):
        read_message(bytearray(b"\x00\x00\x00\x10\x7f\xff\xff\xff{}"))


async def test_a_game_in_a_play_worker_streams_every_move_and_returns_its_record(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    worker = ProcessPlayLoop("play-test", tmp_path / "logs")
    streamed: list[tuple[str, int, str]] = []
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("10+0.1"))
    sides = ("a", bot_spec("testbot", name="a")), ("b", bot_spec("testbot", name="b"))
    try:
        record, running = await worker.play(
            "g1",
            *sides,
            settings,
            lambda moves: streamed.extend((move.move, ply, threading.current_thread().name) for move, ply in moves),
        )
        again, _ = await worker.play("g2", *sides, settings, None)  # the same bots, reused
    finally:
        await worker.aclose()
    assert record.termination is Termination.NORMAL and again.termination is Termination.NORMAL, record.reason
    assert [(move, ply) for move, ply, _ in streamed] == [(m.move, n) for n, m in enumerate(record.moves, start=1)]
    assert {thread for _, _, thread in streamed} == {threading.current_thread().name}
    assert running == {"a", "b"} and record.black.stderr_log == again.black.stderr_log
    # The forms the store keeps come made by the worker, the same as the coordinator would make them, once.
    text, line = stored_form(record)
    assert (text, line) == (record.model_dump_json(), line_text(record))
    assert stored_form(record) == (text, None)  # taken: a second call dumps the record again
    copy = again.model_copy(update={"reason": "changed"})
    assert stored_form(copy) == (copy.model_dump_json(), None)  # a copy is never given the original's forms
    assert stored_form(again)[0] == again.model_dump_json()


async def test_a_bot_that_cannot_start_in_a_play_worker_is_a_start_error(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    worker = ProcessPlayLoop("play-test", tmp_path / "logs")
    missing = BotSpec(name="missing", command=["no-such-bot-program"])
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("10+0.1"))
    try:
        with pytest.raises(BotStartError, match="program 'no-such-bot-program' not found"):
            await worker.play("g1", ("m", missing), ("b", bot_spec("testbot", name="b")), settings, None)
    finally:
        await worker.aclose()


def slow_game_in_a_worker(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> tuple[ProcessPlayLoop, GameSettings, tuple[str, BotSpec], tuple[str, BotSpec]]:
    """A play worker, settings at 30 s a game, a bot that thinks 5 s a move and one that answers at once."""
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("30+0"))
    slow = ("slow", bot_spec("testbot", "think", "5000", name="slow"))
    quick = ("quick", bot_spec("testbot", name="quick"))
    return ProcessPlayLoop("play-test", tmp_path / "logs"), settings, slow, quick


async def test_a_lost_play_worker_voids_its_game_and_the_next_game_gets_a_new_one(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    worker, settings, slow, quick = slow_game_in_a_worker(bot_spec, tmp_path)
    try:

        async def kill_the_worker() -> None:
            while worker._process is None:
                await trio.sleep(0.01)
            await trio.sleep(1.0)  # the game has started: the slow bot thinks
            os.kill(worker._process.pid, signal.SIGKILL)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(kill_the_worker)
            record, _ = await worker.play("g1", slow, quick, settings, None)
        assert record.termination is Termination.VOID and "play worker for this slot was lost" in record.reason
        record, _ = await worker.play("g2", quick, ("quick2", bot_spec("testbot", name="quick2")), settings, None)
        assert record.termination is Termination.NORMAL, record.reason
    finally:
        await worker.aclose()


async def test_a_cancelled_game_stops_in_the_play_worker_which_plays_on(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    worker, settings, slow, quick = slow_game_in_a_worker(bot_spec, tmp_path)
    try:
        with trio.move_on_after(1.5) as scope:
            await worker.play("g1", slow, quick, settings, None)
        assert scope.cancelled_caught
        record, _ = await worker.play("g2", quick, ("q2", bot_spec("testbot", name="q2")), settings, None)
        assert record.termination is Termination.NORMAL, record.reason
    finally:
        await worker.aclose()
    assert worker._process is None


async def test_a_game_waiting_in_a_blocking_poll_is_cancelled_at_once(bot_spec: BotSpecFactory, tmp_path: Path) -> None:
    """In a play loop a reply is awaited in a blocking poll (`sole_game_loop`); a cancellation from the caller
    must wake it, not wait for the poll's own timeout (here the next ping, ten minutes away)."""
    from referee.play.game import Limits, run_game
    from referee.play.process import open_bot

    loop = PlayLoop("play-test")
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("movetime:900"))

    async def game() -> None:
        slow, quick = bot_spec("testbot", "think", "900000", name="slow"), bot_spec("testbot", name="quick")
        async with open_bot(slow, tmp_path) as black, open_bot(quick, tmp_path) as white:
            await run_game("g1", black, white, settings, limits=Limits(ping_interval_s=600))

    try:
        # A hang, not a timing: without the wake it would wait ten minutes; with it, at most the bots' start and
        # stop (seconds, more on a loaded host).
        with trio.fail_after(120):
            with trio.move_on_after(1.0) as scope:
                await loop.run(game)
        assert scope.cancelled_caught
    finally:
        await loop.aclose()
