"""The referee's lateness: the summary of a run (pure), the host monitor's windows, and the reader threads'
lifetime with real bot processes."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trio

from protocol.rules import BLACK, WHITE
from referee.play.game import run_game
from referee.play.process import open_bot
from referee.play.reader import stamped_stdout
from referee.record import BotInfo, GameRecord, GameSettings, MoveRecord, Termination
from referee.timing import latency as latency_module
from referee.timing.clock import parse_time_control
from referee.timing.latency import (
    IDLE_NS,
    VOID_WARNING_PCT,
    HostLagMonitor,
    LatencyTally,
    ReadWatch,
    host_lag_monitor,
    latency_text,
    summarize_latency,
)
from tests.conftest import BotSpecFactory


def record(termination: Termination, latencies: list[float | None], *, lag_ms: float | None = None) -> GameRecord:
    bot = BotInfo(name="x", command=["x"])
    moves = [
        MoveRecord(color=BLACK if i % 2 == 0 else WHITE, move="pass", elapsed_ms=1.0, clock_ms=None, latency_ms=lat)
        for i, lat in enumerate(latencies)
    ]
    now = datetime.now(UTC)
    return GameRecord(
        game_id="g",
        black=bot,
        white=bot,
        settings=GameSettings(time_control=parse_time_control("1+0")),
        moves=moves,
        result="*" if termination in (Termination.VOID, Termination.ABORTED) else "1/2-1/2",
        winner=None,
        termination=termination,
        reason="test",
        referee_lag_ms=lag_ms,
        black_score=None,
        white_score=None,
        final_position="",
        started_at=now,
        finished_at=now,
    )


def test_the_summary_takes_observed_percentiles_and_counts_voids_for_lag() -> None:
    games = [
        record(Termination.NORMAL, [float(v) for v in range(1, 101)]),  # 1 .. 100 ms
        record(Termination.VOID, [0.5, None], lag_ms=12.0),  # void for the host's lateness
        record(Termination.VOID, []),  # void for a referee error: not counted as lateness
        record(Termination.ABORTED, [1000.0]),  # stopped by the user: left out
    ]
    summary = summarize_latency(games)
    assert summary.moves == 101
    assert (summary.p50_ms, summary.p99_ms, summary.max_ms) == (50.0, 99.0, 100.0)  # nearest rank of 101 values
    assert (summary.games, summary.void_for_lag) == (3, 1)
    assert summary.void_for_lag_pct == pytest.approx(100 / 3)
    assert summary.warning is not None and "Lower --concurrency" in summary.warning and "--margin-ms" in summary.warning
    text = latency_text(summary)
    assert "p50 50.000 ms, p99 99.000 ms, max 100.000 ms over 101 moves" in text
    assert "\nWARNING: 1 of 3 games (33.3%) were void" in text


def test_few_voids_give_no_warning_and_no_moves_give_no_figures() -> None:
    games = [record(Termination.NORMAL, [0.1]) for _ in range(99)] + [record(Termination.VOID, [], lag_ms=3.0)]
    summary = summarize_latency(games)
    assert summary.void_for_lag_pct == pytest.approx(1.0)
    assert summary.void_for_lag_pct < VOID_WARNING_PCT and summary.warning is None
    empty = summarize_latency([])
    assert (empty.moves, empty.p50_ms, empty.max_ms, empty.games, empty.warning) == (0, None, None, 0, None)
    assert latency_text(empty).startswith("referee latency: no moves measured")


def test_a_monitor_window_keeps_the_stalls_that_overlap_it_clipped_to_it() -> None:
    monitor = HostLagMonitor()  # not started: the stalls are noted by hand, as its thread would
    window = monitor.open(1_000)
    monitor._note_stall(500, 1_500, 1_000)  # began before the window: only 500 ns of it are in it
    monitor._note_stall(2_000, 2_100, 100)  # shorter than the worst so far: not kept
    monitor._note_stall(3_000, 3_900, 900)
    assert window.lag_ns(1_200) == 200  # up to 1 200 ns, only 200 ns of the first stall had passed
    assert window.lag_ns(2_500) == 500
    assert window.lag_ns(10_000) == 900
    # A stall in progress (the thread should have woken 5 ms ago and has not) counts too.
    now = time.monotonic_ns()
    late = monitor.open(now - 10_000_000)
    monitor._target_ns = now - 5_000_000
    assert late.lag_ns(time.monotonic_ns()) >= 5_000_000
    window.close()
    late.close()
    assert monitor.windows == set()


async def test_the_monitor_runs_only_for_bots_it_can_help_and_stops_with_them(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    def monitor_running() -> bool:
        return any(t.name == "lag-monitor" for t in threading.enumerate())

    assert not monitor_running()
    async with open_bot(bot_spec("testbot"), tmp_path) as first, open_bot(bot_spec("testbot"), tmp_path) as second:
        await first.handshake()
        await second.handshake()
        assert monitor_running() and first.lag_source.monitors  # not pinned: the monitor watches the reads
        assert 0 <= await first.ping() < 10
    for _ in range(400):  # the monitor thread ends when it has had no user for a second (IDLE_NS)
        if not monitor_running():
            break
        await trio.sleep(0.01)
    assert not monitor_running()
    assert host_lag_monitor().windows == set()
    if stamped_stdout() and hasattr(os, "sched_getaffinity"):
        # Pinned beside its game's loop, a bot whose replies the kernel stamps needs no monitor at all.
        async with open_bot(bot_spec("testbot"), tmp_path, cores=sorted(os.sched_getaffinity(0))) as pinned:
            await pinned.handshake()
            assert not pinned.lag_source.monitors and not monitor_running()


def test_the_monitor_looks_at_every_period_only_where_a_move_needs_it() -> None:
    monitor = HostLagMonitor()  # not started: its plan is asked by hand, as its thread would
    now = time.monotonic_ns()
    s, ms = 10**9, 10**6
    # A stamped move that may sleep until 500 ms (its deadline 250 ms after that), its bot asleep on its input: no
    # look for its first period (the game's to ask, `look`: most moves are over by then), then every period until
    # it reads its turn.
    watch = ReadWatch(lambda: 0, lambda: 0, start_wait=0)
    far = monitor.open(now, watch, quiet_until_ns=now + 500 * ms)
    assert far.look_ns == now + monitor.period_ns
    assert monitor._quiet_until(now, (far,)) == now + 500 * ms
    far.look()
    assert far.look_ns is None and monitor._quiet_until(now + ms, (far,)) is None
    watch.written = True
    watch.check(now + ms)  # its input emptied: read
    assert monitor._quiet_until(now + ms, (far,)) == now + 500 * ms  # asleep until its deadline nears
    assert monitor._quiet_until(now + 500 * ms, (far,)) is None
    # Another, read too (no watch), which may sleep less long: the sleep ends when that one's deadline nears.
    near = monitor.open(now + 100 * ms, quiet_until_ns=now + 200 * ms)
    assert monitor._quiet_until(now + 150 * ms, (far, near)) == now + 200 * ms
    assert monitor._quiet_until(now + 200 * ms, (far, near)) is None
    # One a minute from its deadline: a sleep of a second at most (whether it still has a user).
    minute = monitor.open(now + 150 * ms, quiet_until_ns=now + 60 * s)
    assert monitor._quiet_until(now + 160 * ms, (minute,)) == now + 160 * ms + IDLE_NS
    for window in (far, near, minute):
        window.close()
    assert monitor._quiet_until(now + 200 * ms, ()) == now + 200 * ms + IDLE_NS  # nothing to watch: asleep
    # A move whose reply is not stamped is watched all along, with no look asked of the game.
    unstamped = monitor.open(now + 300 * ms, ReadWatch(lambda: 0, lambda: 0, start_wait=0))
    assert unstamped.look_ns is None and monitor._quiet_until(now + 300 * ms, (unstamped,)) is None
    unstamped.close()
    # Stamped moves that come fast and end within a period leave it asleep (nothing to look at) ...
    for at in (now + 400 * ms, now + 405 * ms):
        monitor.open(at, ReadWatch(lambda: 0, lambda: 0, start_wait=0), quiet_until_ns=at + 10 * s).close()
    assert monitor._quiet_until(now + 410 * ms, ()) is not None
    # ... and unstamped ones keep it at every period for a second, rather than waking it for each.
    for at in (now + 500 * ms, now + 505 * ms):
        monitor.open(at).close()
    assert monitor._quiet_until(now + 900 * ms, ()) is None
    assert monitor._quiet_until(now + 505 * ms + IDLE_NS, ()) is not None


def test_the_monitor_thread_sleeps_through_a_stamped_move_far_from_its_deadline_and_wakes_for_one_near() -> None:
    monitor = HostLagMonitor()
    monitor.acquire()
    try:
        time.sleep(0.02)  # the thread's first wake, before it knew of any move, is past
        now = time.monotonic_ns()
        far = monitor.open(now, quiet_until_ns=now + 60 * 10**9)  # read (no watch), its deadline a minute away
        before = monitor.wakes
        time.sleep(0.3)
        quiet = monitor.wakes - before
        assert quiet <= 2, quiet  # about 0: every 1 ms would be about 300
        near = monitor.open(time.monotonic_ns(), quiet_until_ns=time.monotonic_ns())  # at its deadline now
        before = monitor.wakes
        time.sleep(0.3)
        assert monitor.wakes - before > 50, monitor.wakes - before  # about 300: every 1 ms
        far.close()
        near.close()
    finally:
        monitor.release()


def test_a_stamped_move_is_watched_once_the_game_asks_a_period_after_its_start_and_until_its_turn_is_read() -> None:
    monitor = HostLagMonitor()
    monitor.acquire()
    try:
        time.sleep(0.02)  # the thread's first wake, before it knew of any move, is past
        unread = [40]
        watch = ReadWatch(lambda: unread[0], lambda: 0, start_wait=0)
        watch.written = True
        now = time.monotonic_ns()
        window = monitor.open(now, watch, quiet_until_ns=now + 60 * 10**9)  # a stamped move, its deadline far
        before = monitor.wakes
        time.sleep(0.2)
        assert monitor.wakes - before <= 2, monitor.wakes - before  # not woken for it: most moves end sooner
        window.look()  # still on a period after its start: the game asks
        time.sleep(0.2)
        assert monitor.wakes - before > 30, monitor.wakes - before  # about 200: every period while it is unread
        assert watch.read_seen_ns is None
        unread[0] = 0
        time.sleep(0.05)
        assert watch.read_seen_ns is not None  # read: seen within a period
        before = monitor.wakes
        time.sleep(0.2)
        assert monitor.wakes - before <= 2, monitor.wakes - before  # asleep again until its deadline nears
        window.close()
    finally:
        monitor.release()


async def test_a_game_asks_the_monitor_to_watch_only_the_moves_still_on_a_period_after_their_start(
    bot_spec: BotSpecFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not stamped_stdout():
        pytest.skip("replies are not stamped by the kernel here: the monitor watches every move all along")
    looks: list[int] = []
    look = latency_module._MonitorWindow.look

    def counted(window: Any, watch: ReadWatch | None = None) -> None:
        looks.append(window.start_ns)
        assert watch is not None and watch.written  # the bot's read, watched from now on
        look(window, watch)

    monkeypatch.setattr(latency_module._MonitorWindow, "look", counted)
    settings = GameSettings(width=3, height=3, time_control=parse_time_control("30+0"))
    # Bots that take 20 ms a move, not pinned (the monitor watches their reads): every move is still on after a
    # period, and is watched from then on.
    async with (
        open_bot(bot_spec("testbot", "slow", "20"), tmp_path) as black,
        open_bot(bot_spec("testbot", "slow", "20"), tmp_path) as white,
    ):
        assert black.lag_source.monitors
        record = await run_game("g1", black, white, settings)
    assert record.termination is Termination.NORMAL
    assert len(looks) >= len(record.moves) > 2, (len(looks), len(record.moves))


def test_a_tally_added_game_by_game_gives_the_same_summary() -> None:
    games = [record(Termination.NORMAL, [0.2, 0.4, None]), record(Termination.VOID, [1.5], lag_ms=2.0)]
    tally = LatencyTally()
    for game in games:
        tally.add(game)
    assert tally.summary() == summarize_latency(games)
    assert (tally.summary().moves, tally.summary().max_ms) == (3, 1.5)
