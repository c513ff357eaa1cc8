"""SPSA tuning: the schedules and the update by hand; `alternator tune` resumes after `kill -9` with the same state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from referee.cli import main
from referee.stats.spsa import SpsaParameter, SpsaSettings, TuneState, flips, gains, perturbed, svg_plot, update
from tests.conftest import reap_orphans

PROBE = Path(__file__).parent / "bots" / "probebot.py"
SETTINGS = SpsaSettings(iterations=100, pairs=2, seed=3)
DEPTH = SpsaParameter(name="depth", start=2, min=1, max=10, c_end=1, r_end=0.25, integer=True)


def test_the_gains_follow_spalls_schedules_and_end_at_c_end_and_r_end() -> None:
    last = gains(DEPTH, SETTINGS, 99)
    assert last.c == pytest.approx(1.0) and last.r * last.c**2 == pytest.approx(0.25)
    first = gains(DEPTH, SETTINGS, 0)
    assert first.c == pytest.approx(100**0.101)  # c_end * (N / 1)^gamma
    a0 = 0.25 * ((10 + 100) / (10 + 1)) ** 0.602  # a_end * ((A + N) / (A + 1))^alpha, A = 0.1 N
    assert first.r * first.c**2 == pytest.approx(a0)


def test_flips_repeat_for_an_iteration_and_theta_moves_toward_the_winner() -> None:
    assert flips(["x", "y"], SETTINGS, 7) == flips(["x", "y"], SETTINGS, 7)
    assert len({tuple(flips(["x", "y", "z"], SETTINGS, k).values()) for k in range(20)}) > 1
    sign = flips(["depth"], SETTINGS, 0)["depth"]
    plus, minus = perturbed([DEPTH], {"depth": 2.0}, SETTINGS, 0)
    assert plus["depth"] == pytest.approx(2 + sign * gains(DEPTH, SETTINGS, 0).c) or plus["depth"] in (1, 10)
    assert minus["depth"] == max(1.0, 2 - sign * gains(DEPTH, SETTINGS, 0).c) or sign < 0
    won = update([DEPTH], {"depth": 2.0}, SETTINGS, 0, 3)  # the plus side won by 3
    assert (won["depth"] - 2) * sign > 0 and won["depth"] - 2 == pytest.approx(
        3 * sign * gains(DEPTH, SETTINGS, 0).r * gains(DEPTH, SETTINGS, 0).c
    )
    assert update([DEPTH], {"depth": 9.9}, SETTINGS, 0, 400 * sign)["depth"] == 10  # clamped to the bounds


def test_the_state_and_plot_record_the_path() -> None:
    state = TuneState.start(SETTINGS, [DEPTH])
    plus, minus = perturbed([DEPTH], state.theta, SETTINGS, 0)
    state.finish_iteration(0, plus, minus, (3, 0, 1))
    again = TuneState.model_validate_json(state.model_dump_json())
    assert again == state and again.next_iteration == 1
    assert "<polyline" in svg_plot(state) and "depth: 2 -> " in svg_plot(state)
    assert state.same_run(SETTINGS, [DEPTH]) == [] and state.same_run(SETTINGS.model_copy(update={"seed": 4}), [DEPTH])


def _config(tmp_path: Path, name: str) -> Path:
    config = tmp_path / f"{name}.toml"
    config.write_text(
        f"bot = \"name=probe cmd='{sys.executable} {PROBE} {tmp_path / name}.log'\"\n"
        'iterations = 5\npairs = 1\nseed = 2\ntime_control = "10+0.1"\nsize = "4x4"\nkomi = 0.5\n'
        f'openings_plies = 1\nconcurrency = 1\nout = "{name}"\n'
        '[[params]]\nname = "level"\nstart = 5\nmin = 1\nmax = 10\nc_end = 2\nr_end = 0.5\n'
    )
    return config


def test_tuning_resumes_after_kill_9_with_the_same_state(tmp_path: Path) -> None:
    assert main(["tune", str(_config(tmp_path, "whole"))]) == 0
    whole = json.loads((tmp_path / "whole" / "tune.json").read_text())
    assert len(whole["history"]) == 5 and (tmp_path / "whole" / "tune.svg").is_file()
    assert any(record["theta"]["level"] != 5 for record in whole["history"])  # the games moved it

    config = _config(tmp_path, "killed")
    command = [sys.executable, "-m", "referee", "tune", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = tmp_path / "killed" / "tune.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (state.exists() and json.loads(state.read_text())["history"]):
        time.sleep(0.02)
    # Killed during the second iteration's games (or just after the first), its state mid-run.
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    reap_orphans()
    assert 1 <= len(json.loads(state.read_text())["history"]) < 5
    assert main(["tune", str(config)]) == 0
    assert json.loads(state.read_text())["history"] == whole["history"]


def test_a_parameter_the_bot_does_not_declare_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(
        'bot = "alphabeta"\niterations = 2\n[[params]]\nname = "Depth"\nstart = 3\nmin = 1\nmax = 9\nc_end = 1\n'
    )
    assert main(["tune", str(config)]) == 2
    assert (
        "bot 'alphabeta' declares no option 'Depth' (its options: depth (int, 1..64, default 64)"
        in capsys.readouterr().err
    )
