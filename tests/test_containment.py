"""Containing untrusted bots: every process a bot starts ends with it, a crash is seen when the bot exits,
the sandbox hides what is not the bot's, a fork bomb is bounded, CPU is accounted and a waiting bot can be
frozen, and nothing a bot wrote reaches the terminal raw. Real misbehaving bots (tests/bots/testbot.py),
with cgroups where the host allows them (cgroup v2 preferred, and v1 alone where writable) and with /proc
tracking alone; cgroup v2's controller files, which this host's v2 hierarchy lacks, through stand-in hierarchies.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from referee.cli import main
from referee.host import containment
from referee.host.containment import V2, CpuSlots, HostSupport, detect_host, end_leftovers, host_support
from referee.outputs.terminal import printable
from referee.play.game import run_game
from referee.play.process import open_bot
from referee.record import GameRecord, GameSettings, Termination
from referee.timing.clock import parse_time_control
from tests.conftest import BotSpecFactory, live_pids, make_bot_spec, reap_orphans
from tests.test_process import TURN, start_game

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
)
needs_cgroups = pytest.mark.skipif(
    not host_support().uses_cgroups, reason=f"no writable cgroups: {host_support().cgroup_problem}"
)
ESCAPED = re.compile(r"escaped pid (\d+)")


@pytest.fixture(params=["cgroups", "cgroup-v1", "proc"])
def tracking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test with cgroups as the host allows them (v2 preferred), with cgroup v1 alone (where the host has
    it writable), and with /proc tracking alone."""
    if request.param == "cgroups":
        if not host_support().uses_cgroups:
            pytest.skip(f"no writable cgroups: {host_support().cgroup_problem}")
    elif request.param == "cgroup-v1":
        v1 = detect_host(v2=False)
        if not v1.uses_cgroups:
            pytest.skip(f"no writable cgroup v1 controllers: {v1.cgroup_problem}")
        monkeypatch.setattr(containment, "host_support", lambda: v1)
    else:
        real = host_support()
        fallback = HostSupport(subreaper=real.subreaper, pdeathsig=real.pdeathsig, cgroup_problem="test")
        monkeypatch.setattr(containment, "host_support", lambda: fallback)
    yield request.param


def escaped_pids(lines: list[str]) -> list[int]:
    return [int(match.group(1)) for line in lines if (match := ESCAPED.search(line))]


async def wait_for_escapee(bot: object, count: int = 1) -> list[int]:
    with trio.fail_after(10):
        while len(pids := escaped_pids(bot.stderr_tail())) < count:  # type: ignore[attr-defined]
            await trio.sleep(0.01)
    return pids


def settings(tc: str = "30+1") -> GameSettings:
    return GameSettings(width=5, height=5, time_control=parse_time_control(tc))


# -- nothing outlives its bot ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["setsid", "setpgid", "daemon"])
async def test_children_that_leave_the_group_end_with_the_bot(
    tracking: str, mode: str, bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    async with open_bot(bot_spec("testbot", mode), tmp_path) as bot:
        await bot.handshake()
        escapees = await wait_for_escapee(bot)
        assert live_pids(escapees, wait_s=0) == escapees  # running while the bot runs
    assert live_pids([bot.pid, *escapees]) == []


@pytest.mark.parametrize("mode", ["crashchild", "daemon"])
async def test_a_crash_with_a_living_child_holding_stdout_is_a_crash_at_once(
    tracking: str, mode: str, bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    crasher, good = bot_spec("testbot", mode, "3", name="crasher"), bot_spec("testbot", name="good")
    async with open_bot(crasher, tmp_path) as black, open_bot(good, tmp_path) as white:
        if mode == "daemon":
            # The daemon is double-forked at start-up, out of the bot's sight: its line may come after the crash, and
            # the bot's end kills it. Seen running first, it is known to be there when the bot crashes.
            await black.handshake()
            await wait_for_escapee(black)
        started = trio.current_time()
        record = await run_game("g", black, white, settings("30+1"))
        took = trio.current_time() - started
        escapees = escaped_pids(record.stderr_tail)
    assert record.termination is Termination.CRASH, record.reason
    assert record.reason == "black (crasher) exited with code 3"
    assert took < 10  # not a loss on time 30 s later, nor unresponsive (the figure is generous: a busy machine)
    assert escapees and live_pids(escapees) == []


async def test_the_crash_is_seen_when_the_process_exits_not_when_its_output_closes(
    bot_spec: BotSpecFactory, tmp_path: Path
) -> None:
    async with open_bot(bot_spec("testbot", "crashchild", "1"), tmp_path) as bot:
        await start_game(bot)
        await bot.send_turn(TURN)
        with trio.fail_after(5):
            with pytest.raises(Exception, match="exited with code 1"):
                await bot.receive()


def _start_referee_with(bot: str, out: Path) -> subprocess.Popen[bytes]:
    argv = ["--black", bot, "--white", "random", "--size", "4x4", "--tc", "60", "--out", str(out)]
    return subprocess.Popen(
        [sys.executable, "-m", "referee", "match", *argv],
        cwd=Path(__file__).resolve().parent.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _log_pids(out: Path, pattern: re.Pattern[str]) -> list[int]:
    pids: list[int] = []
    for log in (out / "logs").glob("*.stderr.log"):
        pids += [int(m.group(1)) for m in pattern.finditer(log.read_text(errors="replace"))]
    return pids


def test_a_bot_ignoring_end_of_input_dies_with_a_referee_killed_by_sigkill(tmp_path: Path) -> None:
    """No quit, no EOF honoured, no killpg: only PR_SET_PDEATHSIG stops the bot."""
    script = Path(__file__).parent / "bots" / "testbot.py"
    out = tmp_path / "m"
    referee = _start_referee_with(f'name=stubborn cmd="python3 {script} hang --name stubborn"', out)
    try:
        deadline = time.monotonic() + 20
        bot_pid: int | None = None
        while bot_pid is None and time.monotonic() < deadline:
            time.sleep(0.05)
            bot_pid = next((int(p.name.split("-")[-1].split(".")[0]) for p in (out / "logs").glob("stubborn-*")), None)
        assert bot_pid is not None, "the bot did not start"
        time.sleep(0.5)  # on its first turn, hanging
        referee.send_signal(signal.SIGKILL)
        referee.wait()
        assert live_pids([bot_pid], wait_s=5) == []
        reap_orphans(wait_s=5)
    finally:
        if referee.poll() is None:
            referee.kill()
            referee.wait()


def test_a_run_on_the_same_output_directory_ends_what_a_killed_referee_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bot dies with the referee, its setsid child does not: the next run on the folder ends it."""
    script = Path(__file__).parent / "bots" / "testbot.py"
    out = tmp_path / "m"
    referee = _start_referee_with(f'name=leaver cmd="python3 {script} setsid --hang"', out)
    escapees: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not escapees and time.monotonic() < deadline:
            time.sleep(0.05)
            escapees = _log_pids(out, ESCAPED) if (out / "logs").is_dir() else []
        assert escapees, "the bot's child never started: the test proves nothing"
        time.sleep(0.3)  # let the /proc tracker note it
        referee.send_signal(signal.SIGKILL)
        referee.wait()
        time.sleep(0.2)
        assert live_pids(escapees, wait_s=0) == escapees  # left behind by the killed referee
        # The next run on the same output directory ends them before its first bot starts.
        again = ["match", "--black", "random", "--white", "greedy", "--size", "4x4", "--games", "1"]
        assert main([*again, "--out", str(out)]) == 0
        assert live_pids(escapees) == []
        assert not list((out / "logs" / containment.RUNNING_DIR).glob("*.json"))
    finally:
        reap_orphans(wait_s=5)
        if referee.poll() is None:
            referee.kill()
            referee.wait()
        for pid in live_pids(escapees, wait_s=0):
            os.kill(pid, signal.SIGKILL)


# -- the sandbox shows a bot only what it needs -------------------------------------------------------------


@needs_bwrap
async def test_a_sandboxed_bot_cannot_read_the_output_directory_other_bots_or_secrets(tmp_path: Path) -> None:
    mine, other, out = tmp_path / "bots" / "mine", tmp_path / "bots" / "other", tmp_path / "out"
    for folder in (mine, other, out / "logs"):
        folder.mkdir(parents=True)
    (other / "book.txt").write_text("the other bot's secrets\n")
    (out / "logs" / "white-1.stderr.log").write_text("seed 42\n")
    (mine / "own.txt").write_text("mine\n")
    targets = [
        mine / "own.txt",
        out / "logs" / "white-1.stderr.log",
        out,
        other / "book.txt",
        Path("/etc/shadow"),
        Path("/home"),
        *[path for path in Path.home().iterdir() if path.name not in (".pyenv", ".local")][:3],
    ]
    script = Path(__file__).parent / "bots" / "testbot.py"
    results: dict[str, str] = {}
    for target in targets:
        spec = make_bot_spec(script, "read", name="reader").model_copy(
            update={"sandbox": True, "dir": mine, "env": {"READ_PATH": str(target)}}
        )
        neighbour = make_bot_spec(script, name="neighbour").model_copy(update={"dir": other})
        assert neighbour.dir is not None
        async with open_bot(spec, out / "logs", hidden=[mine, neighbour.dir]) as bot:  # the run's bot folders
            await bot.handshake()
            await bot.settle()
            line = next(line for line in bot.stderr_tail() if line.startswith("read "))
        results[str(target)] = line.split(": ", 1)[1]
    assert results.pop(str(mine / "own.txt")) == "ok"  # the control: its own folder
    assert all(result.startswith("denied") for result in results.values()), results


@needs_bwrap
@needs_cgroups
async def test_a_fork_bomb_in_the_sandbox_is_bounded_by_max_processes(tmp_path: Path) -> None:
    bomb = make_bot_spec("testbot", "forkbomb", "300", name="bomb").model_copy(
        update={"sandbox": True, "max_processes": 24}
    )
    async with open_bot(bomb, tmp_path) as bot:
        with trio.fail_after(30):
            await bot.handshake()
        await bot.settle()
        line = next(line for line in bot.stderr_tail() if line.startswith("forked"))
        tree = bot.tree
        assert tree is not None and tree.limit_in_force.startswith("pids.max=24 (cgroup v")
        during = len(tree.pids())
    forked = int(line.split()[1])
    assert 0 < forked < 24 and during <= 24  # bwrap, its init and the bot's threads count too
    assert live_pids([bot.pid]) == []


@needs_cgroups  # without cgroups only RLIMIT_NPROC is left, which counts every process of the user
async def test_a_fork_bomb_without_the_sandbox_is_bounded_too(tmp_path: Path) -> None:
    bomb = make_bot_spec("testbot", "forkbomb", "300", name="bomb").model_copy(update={"max_processes": 16})
    async with open_bot(bomb, tmp_path) as bot:
        with trio.fail_after(30):
            await bot.handshake()
        await bot.settle()
        line = next(line for line in bot.stderr_tail() if line.startswith("forked"))
    assert 0 < int(line.split()[1]) < 16


# -- CPU: accounted per move, and a waiting bot frozen with --no-ponder ------------------------------------


async def play_burner_against_thinker(tmp_path: Path, *, ponder: bool, cores: list[int] | None) -> GameRecord:
    burner = make_bot_spec("testbot", "burn", name="burner").model_copy(update={"ponder": ponder})
    thinker = make_bot_spec("testbot", "think", "60", name="thinker")
    async with (
        open_bot(burner, tmp_path / "logs", cores=cores) as black,
        open_bot(thinker, tmp_path / "logs", cores=cores) as white,
    ):
        await wait_for_escapee(black)
        record = await run_game(
            "cpu", black, white, GameSettings(width=4, height=4, time_control=parse_time_control("60+1"))
        )
    assert record.termination is Termination.NORMAL, record.reason
    return record


def burner_share(record: GameRecord) -> float:
    """Of the CPU used during the thinker's turns, the part the burner took (on their shared core)."""
    moves = [m for m in record.moves if m.color == "white"]
    burner = sum(m.opponent_cpu_ms or 0 for m in moves)
    return burner / (burner + sum(m.cpu_ms or 0 for m in moves))


async def test_a_burner_is_charged_off_turn_cpu_and_frozen_with_no_ponder(tracking: str, tmp_path: Path) -> None:
    core = [sorted(os.sched_getaffinity(0))[0]]  # both on one core: the burner competes with the thinker
    pondering = await play_burner_against_thinker(tmp_path, ponder=True, cores=core)
    frozen = await play_burner_against_thinker(tmp_path, ponder=False, cores=core)
    thinker_moves = [m for m in pondering.moves if m.color == "white"]
    assert all(m.opponent_cpu_ms is not None and m.cpu_ms is not None for m in thinker_moves)
    # While the thinker thinks, the pondering burner burns: its off-turn CPU is recorded, per move and per game.
    assert pondering.black.off_turn_cpu_ms is not None and pondering.black.off_turn_cpu_ms > 50
    assert pondering.black.off_turn_cpu_ms == pytest.approx(sum(m.opponent_cpu_ms or 0 for m in thinker_moves))
    # Frozen on the thinker's turns, it uses next to nothing then (only the instants between a reply and its
    # stop signal, longer on a loaded host), and the thinker gets its core back.
    assert frozen.black.off_turn_cpu_ms is not None
    assert frozen.black.off_turn_cpu_ms < 0.1 * pondering.black.off_turn_cpu_ms
    assert not frozen.black.ponder and frozen.black.cores == core
    # The share of the thinker's core the burner took on the thinker's turns: about half (the scheduler is fair
    # to the two), and nothing when frozen.
    assert burner_share(pondering) > 0.2 and burner_share(frozen) < 0.05


# -- nothing a bot wrote reaches the terminal raw -----------------------------------------------------------


def test_printable_escapes_control_characters_and_bidi_overrides() -> None:
    assert printable("\x1b[2J\x1b]0;owned\x07 ok\ttab\nline") == "\\x1b[2J\\x1b]0;owned\\x07 ok\ttab\nline"
    assert printable("a\u202eb\x9bc\x7f\r") == "a\\u202eb\\x9bc\\x7f\\x0d"
    assert printable("plain: é, 中, emoji 🙂") == "plain: é, 中, emoji 🙂"


def test_ansi_sequences_a_bot_sends_are_escaped_in_the_match_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = Path(__file__).parent / "bots" / "testbot.py"
    bot = f'name=evil cmd="python3 {script} ansi --on 2"'
    argv = ["match", "--black", bot, "--white", "random", "--size", "4x4", "--games", "1", "--out", str(tmp_path)]
    assert main([*argv, "--show-moves"]) == 0
    out = capsys.readouterr().out
    assert "black (evil) exited with code 1" in out
    assert "\\x1b[2J\\x1b]0;owned\\x07\\x1b[31mred\\x1b[0m" in out  # its info text, shown escaped
    assert "\x1b[2J" not in out and "\x1b]0;" not in out and "\x07" not in out and "\x1b[31m" not in out


def test_standings_show_off_turn_cpu() -> None:
    from referee.stats.standings import ScoredGame, compute_standings, to_text

    games = [ScoredGame("a", "b", "1-0", Termination.NORMAL, 1500.0, 20.0), ScoredGame("b", "a", "1-0")]
    standings = compute_standings(games, ["a", "b"])
    assert {bot.name: bot.off_turn_cpu_s for bot in standings.bots} == {"a": 1.5, "b": 0.02}
    assert "Off-turn CPU" in to_text(standings) and "1.5 s" in to_text(standings)
    assert all(bot.off_turn_cpu_s is None for bot in compute_standings(games[1:], ["a", "b"]).bots)


async def test_a_bot_frozen_for_not_pondering_is_thawed_for_the_next_game(tmp_path: Path) -> None:
    frozen = make_bot_spec("testbot", name="frozen").model_copy(update={"ponder": False})
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("30+1"))
    async with open_bot(frozen, tmp_path) as black, open_bot(make_bot_spec("testbot", name="b"), tmp_path) as white:
        first = await run_game("g1", black, white, settings)
        assert black.tree is not None and not black.tree.frozen
        second = await run_game("g2", white, black, settings)
    assert first.termination is Termination.NORMAL and second.termination is Termination.NORMAL, second.reason
    assert not first.black.ponder and first.black.off_turn_cpu_ms is not None


def test_the_containment_flags_reach_the_records(tmp_path: Path) -> None:
    from referee.commands.replay import read_record

    argv = ["match", "--black", "random", "--white", "greedy", "--size", "4x4", "--games", "1", "--out", str(tmp_path)]
    assert main([*argv, "-j", "1", "--no-ponder", "--cpu-affinity", "--max-processes", "32"]) == 0
    record = read_record(tmp_path, "g0001")
    for side in (record.black, record.white):
        assert not side.ponder and side.max_processes == 32 and side.cores == sorted(os.sched_getaffinity(0))
        assert side.containment is not None and side.off_turn_cpu_ms is not None and side.cpu_ms is not None
    assert all(move.cpu_ms is not None and move.opponent_cpu_ms is not None for move in record.moves)


def test_cpu_slots_give_each_slot_its_own_cores() -> None:
    assert CpuSlots(2, cores=[0, 1, 2, 3]).sets == [[0, 1], [2, 3]]
    assert CpuSlots(3, cores=[0, 1, 2, 3]).sets == [[0], [1], [2]]  # a core left over stays unused
    assert CpuSlots(8, cores=[0, 1]).sets == [[0], [1]]  # more slots than cores: slots share (i modulo 2)


def test_cpu_affinity_is_on_by_default_when_each_game_can_have_a_core_of_its_own(tmp_path: Path) -> None:
    from referee.run.config import load_config, resolve_plan

    cores = len(os.sched_getaffinity(0))
    bots = '[[bots]]\nname = "a"\ncommand = "random"\n[[bots]]\nname = "b"\ncommand = "greedy"\n'

    def plan_for(settings: str) -> bool:
        config = tmp_path / "t.toml"
        config.write_text(settings + bots)
        plan = resolve_plan(load_config(config), base_dir=tmp_path, source="t.toml", default_out=tmp_path / "out")
        return plan.cpu_affinity

    assert not plan_for("concurrency = 1\n")  # one game: nothing to keep apart
    assert plan_for("concurrency = 2\n") is (cores >= 2)
    assert not plan_for(f"concurrency = {cores + 1}\n")  # more games than cores: they must share anyway
    assert not plan_for("concurrency = 2\ncpu_affinity = false\n")  # the config decides when it says
    assert plan_for("concurrency = 1\ncpu_affinity = true\n")
    argv = ["match", "--black", "random", "--white", "random", "--size", "3x3", "--games", "2", "-j", "2"]
    assert main([*argv, "--no-cpu-affinity", "--out", str(tmp_path / "off")]) == 0
    off = [GameRecord.model_validate_json(line) for line in (tmp_path / "off" / "games.jsonl").read_text().splitlines()]
    assert off and all(record.black.cores is None and record.white.cores is None for record in off)
    if cores >= 2:  # by default two games at once on two cores or more: each game's bots on cores of their own
        assert main([*argv, "--out", str(tmp_path / "on")]) == 0
        games = (tmp_path / "on" / "games.jsonl").read_text().splitlines()
        on = [GameRecord.model_validate_json(line) for line in games]
        assert {tuple(record.black.cores or ()) for record in on} <= {tuple(cores) for cores in CpuSlots(2).sets}
        assert all(record.black.cores and record.black.cores == record.white.cores for record in on)


async def test_a_bot_past_its_cpu_limit_for_the_game_loses_on_time_even_off_turn(tmp_path: Path) -> None:
    burner = make_bot_spec("testbot", "burn", name="burner").model_copy(update={"cpu_limit_s": 0.3})
    thinker = make_bot_spec("testbot", "think", "50", name="thinker")
    settings = GameSettings(width=5, height=5, time_control=parse_time_control("60+1"))
    async with open_bot(burner, tmp_path) as black, open_bot(thinker, tmp_path) as white:
        record = await run_game("cpu-limit", black, white, settings)
    assert record.termination is Termination.TIME and record.loser == "black", record.reason
    assert "lost on CPU time" in record.reason and "over its limit of 0.3 s per game" in record.reason
    assert record.black.cpu_limit_s == 0.3 and record.overrun_ms is not None and record.overrun_ms > 0


def test_bot_forms_config_keys_and_flags_for_containment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.run.botspec import BotSpecError, parse_bot_arg
    from referee.run.config import load_config, resolve_plan

    spec = parse_bot_arg("name=x cmd=random max_processes=8 ponder=0 cpu_limit_s=2.5")
    assert (spec.max_processes, spec.ponder, spec.cpu_limit_s) == (8, False, 2.5)
    with pytest.raises(BotSpecError, match="ponder='maybe': write ponder=0"):
        parse_bot_arg("name=x cmd=random ponder=maybe")
    with pytest.raises(BotSpecError, match="max_processes='0': give a whole number"):
        parse_bot_arg("name=x cmd=random max_processes=0")
    config = tmp_path / "t.toml"
    config.write_text(
        "ponder = false\ncpu_affinity = true\nmax_processes = 40\ncpu_limit_s = 9\n"
        '[[bots]]\nname = "a"\ncommand = "random"\nponder = true\n[[bots]]\nname = "b"\ncommand = "greedy"\n'
    )
    plan = resolve_plan(load_config(config), base_dir=tmp_path, source="t.toml", default_out=tmp_path / "out")
    assert plan.cpu_affinity
    assert [(b.ponder, b.max_processes, b.cpu_limit_s) for b in plan.bots] == [(True, 40, 9.0), (False, 40, 9.0)]
    argv = ["match", "--black", "random", "--white", "greedy", "--out", str(tmp_path / "m")]
    assert main([*argv, "--max-processes", "0"]) == 2
    assert main([*argv, "--cpu-limit", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--max-processes 0: give at least 1" in err and "--cpu-limit -1: give a positive number" in err


def test_end_leftovers_spares_the_processes_of_a_referee_still_running(tmp_path: Path) -> None:
    import json

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = containment.process_start_time(sleeper.pid)
        notes = tmp_path / containment.RUNNING_DIR
        notes.mkdir()

        def note(referee: list[int | None]) -> None:
            data = {"referee": referee, "processes": [[sleeper.pid, start]], "cgroups": []}
            (notes / "live.json").write_text(json.dumps(data))

        me = [os.getpid(), containment.process_start_time(os.getpid())]
        note(me)
        assert end_leftovers(tmp_path) == 0 and sleeper.poll() is None  # its referee (this process) is alive
        note([me[0], (me[1] or 0) + 1])  # the same pid, another start time: a referee long gone
        assert end_leftovers(tmp_path) == 1
        assert live_pids([sleeper.pid]) == []
        assert not (notes / "live.json").exists()
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def test_without_cgroups_a_bot_s_cpu_is_exact_for_its_main_process_and_proc_is_walked_seldom(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The CPU is read four times a move. Walking /proc for the whole tree each time cost milliseconds a move;
    # the main process's own CPU clock is exact and cheap, and the walk (for its children) is rate-limited.
    real = host_support()
    fallback = HostSupport(subreaper=real.subreaper, pdeathsig=real.pdeathsig, cgroup_problem="test")
    walks: list[int] = []
    walk = containment._process_table

    def counted_walk() -> dict[int, tuple[int, int, int]]:
        walks.append(1)
        return walk()

    monkeypatch.setattr(containment, "_process_table", counted_walk)
    monkeypatch.setattr(containment, "TREE_WALK_INTERVAL_S", 3600.0)
    tree = containment.ProcessTree("cpu", support=fallback)
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(60)\n"
    process = subprocess.Popen([sys.executable, "-c", spin])
    try:
        tree.started(process.pid)
        readings: list[int] = []
        give_up = time.monotonic() + 60  # a guard against a hang, not a timing
        while (not readings or readings[-1] < 300_000_000) and time.monotonic() < give_up:
            reading = tree.cpu_ns()
            assert reading is not None
            readings.append(reading)
            time.sleep(0.005)
        assert readings[-1] >= 300_000_000  # the spin's 0.3 s, seen with no walk since the first
        assert readings == sorted(readings)
        assert len(walks) <= 1
    finally:
        process.kill()
        process.wait()
        tree.close()


# -- cgroup v2: for real where this host has it, and the controller files through a stand-in ----------------

needs_cgroup_v2 = pytest.mark.skipif(
    V2 not in host_support().cgroups, reason=f"no writable cgroup v2 hierarchy: {host_support().cgroup_problem}"
)


@needs_cgroup_v2
async def test_on_cgroup_v2_a_bot_s_whole_tree_is_its_cgroup_frozen_counted_and_killed_by_cgroup_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[tuple[str, str]] = []
    write = containment._write

    def noted(path: Path, text: str) -> None:
        writes.append((path.name, text))
        write(path, text)

    monkeypatch.setattr(containment, "_write", noted)
    async with open_bot(make_bot_spec("testbot", "burn", name="burner"), tmp_path) as bot:
        await bot.handshake()
        escapees = await wait_for_escapee(bot)  # a CPU burner in a session of its own
        tree = bot.tree
        assert tree is not None and tree.describe().startswith("cgroup v2 (")
        cgroup = tree.cgroups[V2]
        assert cgroup.parent == host_support().cgroups[V2]
        members = {int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()}
        assert {bot.pid, *escapees} <= members  # the escapee left the session, not the cgroup
        # CPU: cpu.stat counts the burner, which is not a child the bot waits for.
        before = tree.cpu_ns()
        await trio.sleep(0.3)
        after = tree.cpu_ns()
        assert before is not None and after is not None and after - before > 50_000_000
        # Frozen by cgroup.freeze: the kernel says so, and the burner's CPU stops.
        tree.freeze()
        assert "frozen 1" in (cgroup / "cgroup.events").read_text()
        frozen_at = tree.cpu_ns()
        await trio.sleep(0.3)
        assert frozen_at is not None and (tree.cpu_ns() or 0) - frozen_at < 20_000_000
        tree.thaw()
        assert "frozen 0" in (cgroup / "cgroup.events").read_text()
    # The end of the bot: one write to cgroup.kill, then nothing of it is left. Its cgroup, empty and thawed, is kept
    # for the next bot, which counts its own CPU only; the ended bot's tree touches it no more.
    assert ("cgroup.kill", "1") in writes
    assert live_pids([bot.pid, *escapees]) == []
    assert (cgroup / "cgroup.procs").read_text() == "" and "frozen 0" in (cgroup / "cgroup.events").read_text()
    burnt = tree.cpu_ns()
    assert burnt is not None and burnt > 50_000_000
    async with open_bot(make_bot_spec("testbot", name="next"), tmp_path) as following:
        await following.handshake()
        assert following.tree is not None and following.tree.cgroups[V2] == cgroup
        assert following.pid in {int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()}
        assert (following.tree.cpu_ns() or 0) < burnt
        tree.freeze()
        assert "frozen 0" in (cgroup / "cgroup.events").read_text() and tree.kill_all() == 0
        assert live_pids([following.pid], wait_s=0) == [following.pid]
    assert live_pids([following.pid]) == []


@needs_cgroup_v2
def test_a_cgroup_that_still_holds_a_process_is_never_given_to_the_next_bot(tmp_path: Path) -> None:
    if "pids" not in host_support().cgroups:
        pytest.skip("the host's pids controller is in the v2 cgroup: a process cannot be in one of a bot's alone")
    stray = subprocess.Popen(["sleep", "60"])
    held: list[dict[str, Path]] = []
    try:
        # A process in one of the bot's cgroups only (as a bot run as root could put itself): its v2 cgroup, where
        # the kill looks, is empty; its pids cgroup is not. The slot is not kept.
        first = containment.ProcessTree("first", max_processes=8)
        held.append(dict(first.cgroups))
        (first.cgroups["pids"] / "cgroup.procs").write_text(str(stray.pid))
        first.close()
        second = containment.ProcessTree("second", max_processes=8)
        assert all(second.cgroups[key] != path for key, path in held[0].items())
        # A slot kept empty that a process joined while it waited for the next bot is not handed out either.
        held.append(dict(second.cgroups))
        second.close()
        (held[1][V2] / "cgroup.procs").write_text(str(stray.pid))
        third = containment.ProcessTree("third", max_processes=8)
        assert all(third.cgroups[key] != path for key, path in held[1].items())
        third.close()
    finally:
        stray.kill()
        stray.wait()
    for paths in held:
        for path in paths.values():
            with contextlib.suppress(OSError):
                path.rmdir()


@needs_cgroup_v2
def test_one_note_per_referee_and_output_directory_ends_only_its_own_cgroups_leftovers(tmp_path: Path) -> None:
    """The note of a bot held by cgroups names the folders of its referee's cgroups and their names' prefix."""
    import json

    logs = tmp_path / "logs"
    notes = logs / containment.RUNNING_DIR
    trees = [containment.ProcessTree(name, note_dir=notes) for name in ("a", "b")]
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in trees]
    try:
        for tree, sleeper in zip(trees, sleepers, strict=True):
            tree.started(sleeper.pid)
        assert [path.name for path in notes.glob("*.json")] == [f"referee-{os.getpid()}.json"]
        note = json.loads((notes / f"referee-{os.getpid()}.json").read_text())
        assert note["cgroup_prefix"] and str(host_support().cgroups[V2]) in note["cgroup_folders"]
        # A dead referee's note, and a cgroup beside its own in the same folder that is not its: only its own goes.
        base = host_support().cgroups[V2]
        mine, other = base / "bdead-1", base / "bother-1"
        mine.mkdir()
        other.mkdir()
        try:
            (mine / "cgroup.procs").write_text(str(sleepers[0].pid))
            (other / "cgroup.procs").write_text(str(sleepers[1].pid))
            dead = {**note, "referee": [os.getpid(), 1], "cgroup_prefix": "bdead"}  # the same pid, another start
            (notes / "dead.json").write_text(json.dumps(dead))
            assert end_leftovers(logs) == 1
            assert live_pids([sleepers[0].pid]) == [] and live_pids([sleepers[1].pid], wait_s=0) == [sleepers[1].pid]
            assert not mine.exists() and not (notes / "dead.json").exists()
            assert (notes / f"referee-{os.getpid()}.json").exists()  # a live referee's: kept
        finally:
            sleepers[1].kill()
            sleepers[1].wait()
            for folder in (mine, other):
                with contextlib.suppress(OSError):
                    folder.rmdir()
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
        for tree in trees:
            tree.close()
    # Kept while the process may start more bots there, and dropped at the end of its command.
    assert (notes / f"referee-{os.getpid()}.json").exists()
    containment.drop_idle_notes()
    assert not list(notes.glob("*.json"))


def _standin_v2(root: Path, controllers: str) -> Path:
    """A folder laid out as a cgroup v2 hierarchy's root offering `controllers`, with our base made as the kernel
    would make it (its interface files there)."""
    root.mkdir(parents=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("")
    (root / "cgroup.procs").write_text("")
    base = root / "alternator" / str(os.getpid())
    base.mkdir(parents=True)
    for name in ("cgroup.freeze", "cgroup.kill", "cgroup.subtree_control", "cgroup.procs"):
        (base / name).write_text("")
    return base


def test_a_stand_in_cgroup_v2_with_controllers_gives_each_bot_pids_max_memory_max_without_swap_and_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from referee.host.sandbox import launch_command

    root = tmp_path / "cgroup2"
    made = _standin_v2(root, "cpuset cpu io memory hugetlb pids rdma misc")
    writes: list[tuple[Path, str]] = []
    write = containment._write

    def noted(path: Path, text: str) -> None:
        writes.append((path, text))
        write(path, text)

    monkeypatch.setattr(containment, "_write", noted)
    base, controllers, kill, problem = containment.probe_v2(root, "/")
    assert base == made and controllers == {"pids", "memory", "cpuset"} and kill and problem is None
    # Enabled from the hierarchy's root down to our folder, so that every bot's cgroup has them.
    for folder in (root, root / "alternator", made):
        assert {text for path, text in writes if path == folder / "cgroup.subtree_control"} == {
            "+pids",
            "+memory",
            "+cpuset",
        }
    support = HostSupport(
        subreaper=False, pdeathsig=False, cgroups={V2: base}, v2_controllers=controllers, v2_kill=True
    )
    assert support.memory_cgroup == "v2" and support.describe().endswith("memory limits: cgroup v2 memory.max")
    tree = containment.ProcessTree("jvm", max_processes=50, memory_mb=256, cores=[0], support=support)
    bot = tree.cgroups[V2]
    assert bot.parent == base and list(tree.cgroups) == [V2]
    assert (bot / "pids.max").read_text() == "50" and (bot / "cpuset.cpus").read_text() == "0"
    assert (bot / "memory.max").read_text() == str(256 << 20)
    assert (bot / "memory.swap.max").read_text() == "0" and (bot / "memory.oom.group").read_text() == "1"
    assert tree.memory_limit == "memory.max=256 MiB (cgroup v2, no swap)"
    assert tree.describe().endswith(
        "process limit: pids.max=50 (cgroup v2); memory limit: memory.max=256 MiB (cgroup v2, no swap)"
    )
    # The bot joins it through the trampoline, and its command is not wrapped in an address-space limit.
    argv, preexec = tree.launch(["./bot"])
    assert preexec is None and str(bot / "cgroup.procs") in argv
    spec = make_bot_spec("testbot", "jvm", "100").model_copy(update={"memory_mb": 256})
    assert launch_command(spec, address_limit=tree.memory_limit is None) == spec.command
    # CPU from cpu.stat (microseconds), an OOM kill from memory.events.
    (bot / "cpu.stat").write_text("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
    assert tree.cpu_ns() == 1_500_000
    (bot / "memory.events").write_text("low 0\nhigh 0\nmax 40\noom 1\noom_kill 0\noom_group_kill 0\n")
    assert not tree.memory_killed()
    (bot / "memory.events").write_text("low 0\nhigh 0\nmax 41\noom 2\noom_kill 1\noom_group_kill 1\n")
    assert tree.memory_killed()
    tree.close()
    assert ("cgroup.kill", "1") not in [(path.name, text) for path, text in writes]  # nothing was left to kill


def test_a_stand_in_cgroup_v2_without_controllers_still_tracks_and_says_what_is_missing(tmp_path: Path) -> None:
    # As this machine's /sys/fs/cgroup/unified: tracking, freezing, killing and CPU, but no pids or memory.
    root = tmp_path / "cgroup2"
    made = _standin_v2(root, "")
    base, controllers, kill, problem = containment.probe_v2(root, "/")
    assert (base, controllers, kill) == (made, frozenset(), True)
    assert problem == f"{root} offers none of the pids, memory, cpuset controllers"
    # Without cgroup.freeze (Linux before 5.2) it is not used at all.
    (made / "cgroup.freeze").unlink()
    base, _, _, problem = containment.probe_v2(root, "/")
    assert base is None and problem is not None and "has no cgroup.freeze" in problem


def test_a_stand_in_cgroup_v1_memory_controller_limits_resident_memory_and_swap(tmp_path: Path) -> None:
    pids, memory = tmp_path / "pids" / "alternator" / "1", tmp_path / "memory" / "alternator" / "1"
    pids.mkdir(parents=True)
    memory.mkdir(parents=True)
    support = HostSupport(subreaper=False, pdeathsig=False, cgroups={"pids": pids}, memory=memory)
    assert support.memory_cgroup == "v1"
    tree = containment.ProcessTree("hog", memory_mb=64, support=support)
    cgroup = tree.cgroups["memory"]
    assert (cgroup / "memory.limit_in_bytes").read_text() == str(64 << 20)
    assert (cgroup / "memory.memsw.limit_in_bytes").read_text() == str(64 << 20)
    assert tree.memory_limit == "memory.limit_in_bytes=64 MiB (cgroup v1, no swap)"
    (cgroup / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    (cgroup / "memory.failcnt").write_text("7\n")
    assert not tree.memory_killed()  # the limit was hit (reclaimed), nothing was killed
    (cgroup / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    assert tree.memory_killed()
    # A kernel without the oom_kill line (before 4.13): a hit of the limit is taken as the cause.
    older = containment.ProcessTree("hog", memory_mb=64, support=support)
    (older.cgroups["memory"] / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\n")
    (older.cgroups["memory"] / "memory.failcnt").write_text("3\n")
    assert older.memory_killed()
    # A bot without a memory limit joins no memory cgroup.
    assert "memory" not in containment.ProcessTree("plain", support=support).cgroups


SCOPE = "/user.slice/user-1000.slice/user@1000.service/app.slice/run-alternator.scope"


def _standin_kernel(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make writes to a stand-in v2 hierarchy follow the kernel's two rules that matter here: a cgroup other than
    the root that holds processes cannot give controllers to children (EBUSY), and a process is in one cgroup."""
    write = containment._write

    def kernel(path: Path, text: str) -> None:
        procs = path.parent / "cgroup.procs"
        busy = path.parent != root and procs.exists() and procs.read_text().split()
        if path.name == "cgroup.subtree_control" and busy:
            raise OSError(errno.EBUSY, "Device or resource busy")
        if path.name == "cgroup.procs":
            for other in root.rglob("cgroup.procs"):
                other.write_text("".join(f"{pid}\n" for pid in other.read_text().split() if pid != text))
        write(path, text)

    monkeypatch.setattr(containment, "_write", kernel)


def test_a_referee_alone_in_a_delegated_scope_moves_into_a_leaf_so_its_bots_get_the_controllers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cgroup2"
    _standin_v2(root, "cpuset cpu io memory pids")
    scope = root / SCOPE.lstrip("/")
    made = _standin_v2(scope, "cpuset memory pids")
    (scope / "cgroup.procs").write_text(f"{os.getpid()}\n")
    _standin_kernel(root, monkeypatch)
    base, controllers, _, problem = containment.probe_v2(root, SCOPE)
    assert base == made and controllers == {"pids", "memory", "cpuset"} and problem is None
    assert (scope / "alternator-referee" / "cgroup.procs").read_text() == str(os.getpid())
    assert (scope / "cgroup.procs").read_text() == ""
    # Its play workers, started there, find the scope again rather than making their own in the leaf.
    base, controllers, _, _ = containment.probe_v2(root, SCOPE + "/alternator-referee")
    assert base == made and controllers == {"pids", "memory", "cpuset"}


def test_a_referee_sharing_its_scope_gets_no_controllers_there_and_a_root_one_takes_the_hierarchy_s_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cgroup2"
    at_root = _standin_v2(root, "cpuset cpu io memory pids")
    scope = root / SCOPE.lstrip("/")
    in_scope = _standin_v2(scope, "cpuset memory pids")
    (scope / "cgroup.procs").write_text(f"1234\n{os.getpid()}\n")  # a login shell beside the referee
    _standin_kernel(root, monkeypatch)
    assert containment._enable_controllers(scope, os.getpid()) == (
        frozenset(),
        f"cannot enable the pids, memory, cpuset controllers in {scope} (Device or resource busy)",
    )
    assert (scope / "cgroup.procs").read_text().split() == ["1234", str(os.getpid())]  # nobody was moved
    base, controllers, _, _ = containment.probe_v2(root, SCOPE)
    assert base == at_root and controllers == {"pids", "memory", "cpuset"}
    assert in_scope.exists()  # (a stand-in: the kernel would have removed the empty folder left unused)
