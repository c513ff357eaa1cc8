"""A busy host slows a run down; it never stops it (`referee.run.backoff`): the policy as tables, then real runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from referee.cli import main
from referee.record import GameRecord, Termination
from referee.run import backoff
from referee.run.backoff import Backoff, HostReading, HostWatch, parse_duration

ROOT = Path(__file__).resolve().parent.parent
TESTBOT = ROOT / "tests" / "bots" / "testbot.py"
CALM = dict(pressure_pct=3.0, lateness_ms=0.1)
BUSY = dict(pressure_pct=60.0, lateness_ms=0.1)


def calm(at: float) -> HostReading:
    return HostReading(at, **CALM)


def busy(at: float) -> HostReading:
    return HostReading(at, **BUSY)


# -- the policy --------------------------------------------------------------------------------------------


def test_voids_lower_the_games_at_once_to_one_then_pause() -> None:
    policy = Backoff(3, max_wait_s=600, calm_for_s=5, ramp_after_s=30)
    steps = [policy.void(t, game=t, calm_at_start=False) for t in (1, 2, 3)]
    assert [(s.games_at_once, s.paused, s.changed) for s in steps] == [
        (2, False, True),
        (1, False, True),
        (1, True, True),
    ]
    assert policy.lowest == 1 and policy.pauses == 1 and policy.voids == 3
    assert [policy.admits(slot) for slot in range(3)] == [False, False, False]
    # A void while paused (a game that was still in progress) changes nothing more.
    assert policy.void(4, game=9, calm_at_start=False).changed is False and policy.pauses == 1


def test_a_pause_ends_after_the_host_has_been_calm_for_a_while_then_full_speed_comes_back_step_by_step() -> None:
    policy = Backoff(2, max_wait_s=600, calm_for_s=5, ramp_after_s=30)
    policy.void(0, game=1, calm_at_start=True)
    policy.void(1, game=2, calm_at_start=True)
    assert policy.paused
    table = [
        (busy(2), 1, True, False),
        (calm(3), 1, True, False),  # calm from 3 s...
        (busy(4), 1, True, False),  # ... not for long
        (calm(5), 1, True, False),
        (calm(9), 1, True, False),  # calm for 4 s: not yet
        (calm(10), 1, False, True),  # 5 s: resume, one game at once
        (calm(20), 1, False, False),
        (calm(40), 2, False, True),  # 30 s calm with no void: back to full speed
        (calm(80), 2, False, False),
    ]
    for reading, at_once, paused, changed in table:
        step = policy.reading(reading)
        assert (step.games_at_once, step.paused, step.changed) == (at_once, paused, changed), reading
    assert policy.waited_s == pytest.approx(9.0)  # paused from 1 s to 10 s
    assert not policy.backing_off


def test_the_run_gives_up_only_after_one_pause_longer_than_the_limit() -> None:
    policy = Backoff(1, max_wait_s=120, calm_for_s=5)
    policy.void(0, game=1, calm_at_start=False)
    assert policy.reading(busy(119)).give_up is None
    step = policy.reading(busy(121))
    assert step.give_up is not None and "the host stayed busy for 2 min" in step.give_up, step.give_up
    assert "CPU pressure 60 %" in step.give_up


def test_calm_spells_reset_the_clock_of_a_pause_only_by_resuming() -> None:
    # Paused, with readings busy and calm in turn (never 5 s calm in a row): the limit still counts from the
    # start of the pause.
    policy = Backoff(1, max_wait_s=60, calm_for_s=5)
    policy.void(0, game=1, calm_at_start=False)
    for t in range(1, 60, 2):
        assert policy.reading(busy(t)).give_up is None
        assert policy.reading(calm(t + 1)).give_up is None
    assert policy.reading(busy(61)).give_up is not None


def test_a_game_void_again_and_again_on_a_calm_host_stops_the_run_the_host_is_not_the_cause() -> None:
    policy = Backoff(1, max_wait_s=600, calm_for_s=1, max_calm_voids=3)
    at = 0.0
    for attempt in range(1, 4):
        step = policy.void(at, game=7, calm_at_start=True)
        if attempt < 3:
            assert step.give_up is None and step.paused
            assert policy.reading(calm(at + 0.5)).paused
            assert not policy.reading(calm(at + 1.5)).paused
            at += 2
    assert step.give_up == "was void 3 times in a row, each time started on a calm host"


def test_a_void_on_a_busy_host_or_a_game_played_in_between_ends_the_streak() -> None:
    policy = Backoff(1, max_wait_s=600, calm_for_s=1, max_calm_voids=2)
    policy.void(0, game=7, calm_at_start=True)
    policy.reading(calm(1))
    policy.reading(calm(2))
    assert policy.void(3, game=7, calm_at_start=False).give_up is None  # started busy: the host's doing
    policy.reading(calm(4))
    policy.reading(calm(5))
    assert policy.void(6, game=7, calm_at_start=True).give_up is None
    policy.scored(7)
    policy.reading(calm(7))
    policy.reading(calm(8))
    assert policy.void(9, game=7, calm_at_start=True).give_up is None


@pytest.mark.parametrize(
    ("pressure", "lateness", "is_calm"),
    [
        (3.0, 0.2, True),
        (30.0, 0.2, False),
        (3.0, 5.0, False),
        (None, 0.2, True),
        (3.0, None, True),
        (None, None, False),
    ],
)
def test_what_counts_as_a_calm_host(pressure: float | None, lateness: float | None, is_calm: bool) -> None:
    assert HostReading(0, pressure, lateness).calm is is_calm


def test_the_status_line_says_the_load_the_pause_and_the_host() -> None:
    policy = Backoff(2, max_wait_s=1800)
    policy.void(0, game=1, calm_at_start=False)
    policy.void(1, game=2, calm_at_start=False)
    policy.reading(HostReading(181, 48.0, 0.4))
    assert policy.status(181) == (
        "host busy: 2 → 1 game at once; paused 3 min (at most 30 min); CPU pressure 48 %, referee timers 0.4 ms late"
    )


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("30min", 1800.0), ("2h", 7200.0), ("0", 0.0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "-5m", "nan", "5d", ""])
def test_bad_durations_say_what_is_accepted(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


def test_the_host_watch_reads_pressure_from_psi(tmp_path: Path) -> None:
    psi = tmp_path / "cpu"
    psi.write_text("some avg10=30.23 avg60=8.83 avg300=4.81 total=26815899\nfull avg10=0.00 avg60=0.00\n")
    assert HostWatch(psi).pressure_pct() == pytest.approx(30.23)
    assert HostWatch(tmp_path / "absent").pressure_pct() is None


# -- real runs ----------------------------------------------------------------------------------------------


def void_for_lag(record: GameRecord) -> GameRecord:
    return record.model_copy(
        update={
            "termination": Termination.VOID,
            "result": "*",
            "winner": None,
            "reason": "void, the host was late: black (a) took 180 ms, 80 ms over its 100 ms, but the referee"
            " measured 900 ms of its own lateness during that move",
            "referee_lag_ms": 900.0,
        }
    )


def first_plays_void(monkeypatch: pytest.MonkeyPatch, voids: int) -> list[str]:
    """The first `voids` games played (any slot) come back void for the host's lateness."""
    import referee.run.runner as runner_module

    calls: list[str] = []
    play = runner_module.GameSlot.play

    async def voiding(self: Any, game: Any, *args: Any, **kwargs: Any) -> GameRecord:
        record = await play(self, game, *args, **kwargs)
        calls.append(game.game_id)
        return void_for_lag(record) if len(calls) <= voids else record

    monkeypatch.setattr(runner_module.GameSlot, "play", voiding)
    return calls


@pytest.mark.usefixtures("quick_backoff")
def test_a_run_on_a_busy_host_plays_fewer_games_at_once_pauses_and_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = first_plays_void(monkeypatch, 2)
    out, events = tmp_path / "m", tmp_path / "events.jsonl"
    a, b = f"name=a cmd='python3 {TESTBOT}'", f"name=b cmd='python3 {TESTBOT}'"
    argv = ["match", "--black", a, "--white", b, "--size", "3x3", "--games", "6", "-j", "2", "--out", str(out)]
    assert main([*argv, "--events", str(events)]) == 0
    text = capsys.readouterr().out
    assert len(calls) == 8
    records = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert sorted(r["game_id"] for r in records) == [f"g000{n}" for n in range(1, 7)]
    assert all(r["termination"] == "normal" for r in records)
    busy_events = [e for e in map(json.loads, events.read_text().splitlines()) if e["type"] == "host_busy"]
    # 2 → 1 game at once, then paused, then resumed at one; full speed may come back before the last game.
    steps = [(e["games_at_once"], e["paused"]) for e in busy_events]
    assert steps[:3] == [(1, False), (1, True), (1, False)] and steps[3:] in ([], [(2, False)]), steps
    if steps[3:]:
        assert busy_events[-1]["status"] == "host calm: back to full speed"
    assert busy_events[0]["status"].startswith("host busy: 2 → 1 game at once")
    assert "host busy: 2 → 1 game at once; paused" in text
    summary = json.loads((out / "match.json").read_text())
    assert summary["ended"] == "completed" and summary["void_games"] == 2 and summary["host_wait_s"] > 0
    finished = [e for e in map(json.loads, events.read_text().splitlines()) if e["type"] == "run_finished"]
    assert finished[0]["host_wait_s"] > 0
    assert "the host was busy: the run came down to 1 game(s) at once and was paused 1 time(s)" in text


def test_on_a_calm_host_the_host_watch_sleeps_until_the_run_backs_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watch's one-second sleep, told apart by its length: on a calm host it never runs (it woke the referee every
    # second for nothing); after a void it does, and the host is read.
    import trio

    import referee.run.runner as runner_module

    interval = 0.0123
    monkeypatch.setattr(runner_module, "HOST_READING_INTERVAL_S", interval)
    sleep, watch_sleeps, reads = trio.sleep, [], []

    async def counted(seconds: float) -> None:
        if seconds == interval:
            watch_sleeps.append(seconds)
        await sleep(seconds)

    class CountedHost(HostWatch):
        async def read(self, at_s: float) -> HostReading:
            reads.append(at_s)
            return calm(at_s)

    monkeypatch.setattr(trio, "sleep", counted)
    monkeypatch.setattr(backoff, "HostWatch", CountedHost)
    a, b = f"name=a cmd='python3 {TESTBOT}'", f"name=b cmd='python3 {TESTBOT}'"
    argv = ["match", "--black", a, "--white", b, "--size", "3x3", "--games", "4", "-j", "2"]
    assert main([*argv, "--out", str(tmp_path / "calm")]) == 0
    assert watch_sleeps == [] and reads == []
    first_plays_void(monkeypatch, 1)
    assert main([*argv, "--out", str(tmp_path / "busy")]) == 0
    assert watch_sleeps and reads


@pytest.mark.usefixtures("quick_backoff")
def test_past_the_limit_of_one_pause_the_run_stops_with_the_message_about_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class BusyHost(HostWatch):
        async def read(self, at_s: float) -> HostReading:
            return HostReading(at_s, 70.0, 3.0)

    monkeypatch.setattr(backoff, "HostWatch", BusyHost)
    first_plays_void(monkeypatch, 1)
    out = tmp_path / "m"
    a, b = f"name=a cmd='python3 {TESTBOT}'", f"name=b cmd='python3 {TESTBOT}'"
    argv = ["match", "--black", a, "--white", b, "--size", "3x3", "--games", "2", "-j", "1", "--out", str(out)]
    assert main([*argv, "--max-host-wait", "0.5s"]) == 1
    err = capsys.readouterr().err
    assert re.search(r"the host stayed busy for 0\.\d s \(CPU pressure 70 %, referee timers 3\.0 ms late\)", err), err
    assert "this machine cannot play it fairly now" in err and "--max-host-wait is 0.5 s" in err
    assert json.loads((out / "match.json").read_text())["ended"] == "error"


def test_a_bad_max_host_wait_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["match", "--black", "random", "--white", "greedy", "--size", "3x3", "--out", str(tmp_path / "m")]
    assert main([*argv, "--max-host-wait", "later"]) == 2
    assert "--max-host-wait: 'later' is not a duration" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
