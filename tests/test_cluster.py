"""Tournaments and matches on a real Dask cluster: a `dask scheduler` and `dask worker` processes on 127.0.0.1.

Each cluster runs in process groups of its own and is always torn down. Games are short (instant sample bots,
small boards); the faults are real: a worker's whole process group killed mid-game, the scheduler killed,
a worker that cannot start a bot.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from referee.cli import main
from referee.cluster.config import ClusterConfig, normalize_address
from referee.cluster.dask import ClusterPlayers
from referee.outputs.events import Event
from referee.run.botspec import BotSpec
from referee.run.config import ConfigError, RunPlan, parse_config, resolve_plan
from referee.run.runner import Runner, RunSummary
from tests.conftest import child_pids, pid_alive, reap_orphans

HAVE_DASK = importlib.util.find_spec("distributed") is not None
needs_dask = pytest.mark.skipif(not HAVE_DASK, reason="dask is not installed (pip install 'alternator-arena[cluster]')")
REPO = Path(__file__).resolve().parent.parent
# `dask scheduler` and `dask worker`, run by this Python wherever its scripts were installed.
DASK_SCHEDULER = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
DASK_WORKER = [sys.executable, "-m", "distributed.cli.dask_worker"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class DaskCluster:
    """A scheduler and its workers, each in a process group of its own; `workers` by address."""

    address: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def kill(self, process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        """Signal the process's whole group (a worker: its nanny, the worker process and their helpers)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)

    def descendants(self) -> list[int]:
        """Every process the cluster's processes started, at any depth (the workers' bots among them)."""
        found: list[int] = []
        queue = [process.pid for process in self.processes]
        while queue:
            children = child_pids(queue.pop())
            found += children
            queue += children
        return found

    def stop(self) -> None:
        descendants = self.descendants()
        for process in reversed(self.processes):
            self.kill(process, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(process)
                process.wait()
            self.kill(process)  # whatever the group still holds (a helper the nanny started)
        # The workers' bots die with them (PR_SET_PDEATHSIG, or their stdin closing), a moment later; this
        # process, a subreaper once it has run a bot, inherits them: wait until each is gone, and reap it.
        deadline = time.monotonic() + 10
        while any(pid_alive(pid) for pid in descendants) and time.monotonic() < deadline:
            reap_orphans(wait_s=0)
            time.sleep(0.02)
        reap_orphans(wait_s=0.2)


def start_cluster(
    log_dir: Path, workers: int = 2, worker_paths: list[str] | None = None, tls: Path | None = None
) -> DaskCluster:
    """A scheduler and `workers` one-thread workers on free ports; returns once every worker has joined.

    `worker_paths[i]`, when given, is worker i's PATH (to make a bot program exist on one machine only).
    `tls`: a folder with ca.pem, node.pem and node.key: everything speaks tls:// with those.
    """
    from distributed import Client

    log_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    protocol = "tls" if tls is not None else "tcp"
    cluster = DaskCluster(f"{protocol}://127.0.0.1:{port}")
    security: list[str] = []
    if tls is not None:
        security = ["--tls-ca-file", str(tls / "ca.pem"), "--tls-cert", str(tls / "node.pem")]
        security += ["--tls-key", str(tls / "node.key"), "--protocol", "tls"]

    def spawn(command: list[str], name: str, path: str | None = None) -> subprocess.Popen[bytes]:
        log = (log_dir / f"{name}.log").open("wb")
        env = {**os.environ, "PATH": path} if path is not None else None
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log, start_new_session=True)
        log.close()
        cluster.processes.append(process)
        return process

    try:
        spawn(
            [
                *DASK_SCHEDULER,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-dashboard",
                *security,
            ],
            "scheduler",
        )
        for index in range(workers):
            worker_port = free_port()
            path = worker_paths[index] if worker_paths is not None else None
            process = spawn(
                [
                    *DASK_WORKER,
                    cluster.address,
                    "--nthreads",
                    "1",
                    "--host",
                    "127.0.0.1",
                    "--worker-port",
                    str(worker_port),
                    "--no-dashboard",
                    *security,
                ],
                f"worker{index}",
                path,
            )
            cluster.workers[f"{protocol}://127.0.0.1:{worker_port}"] = process
        from distributed.security import Security

        options = {}
        if tls is not None:
            options = {"tls_ca_file": str(tls / "ca.pem"), "tls_client_cert": str(tls / "node.pem")}
            options["tls_client_key"] = str(tls / "node.key")
        client = Client(  # type: ignore[no-untyped-call]
            cluster.address,
            timeout=30,
            set_as_default=False,
            security=Security(**options),  # type: ignore[no-untyped-call]
        )
        try:
            client.wait_for_workers(workers, timeout=60)
        finally:
            client.close()  # type: ignore[no-untyped-call]
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[DaskCluster]:
    if not HAVE_DASK:
        pytest.skip("dask is not installed (pip install 'alternator-arena[cluster]')")
    cluster = start_cluster(tmp_path / "cluster-logs")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    """One cluster for the tests that leave it as they found it (they kill no worker and no scheduler), started
    once: a cluster serves run after run, each with a client of its own."""
    if not HAVE_DASK:
        pytest.skip("dask is not installed (pip install 'alternator-arena[cluster]')")
    cluster = start_cluster(tmp_path_factory.mktemp("shared-cluster-logs"))
    try:
        yield cluster
    finally:
        cluster.stop()


def make_plan(out: Path, bots: list[dict[str, object]], *, games: int = 2, cluster: str | None = None) -> RunPlan:
    data: dict[str, object] = {"bots": bots, "games": games, "size": "5x5", "time_control": "10+0", "concurrency": 2}
    if cluster is not None:
        data["cluster"] = cluster
    config = parse_config(data, source="test")
    return resolve_plan(config, base_dir=REPO, source="test", default_out=out)


def stored_games(out: Path) -> tuple[list[int], list[dict[str, Any]]]:
    """The numbers of the games done in the database, and the records in games.jsonl."""
    with sqlite3.connect(out / "run.db") as db:
        done = [row[0] for row in db.execute("SELECT number FROM games WHERE status = 'done' ORDER BY number")]
    lines = (out / "games.jsonl").read_text().splitlines()
    return done, [json.loads(line) for line in lines]


def slow_bot(bot_spec: object, name: str) -> dict[str, object]:
    """A test bot that takes 40 ms a move: games last long enough to be killed in the middle."""
    spec: BotSpec = bot_spec("testbot", "slow", "40", name=name)  # type: ignore[operator]
    return {"name": spec.name, "command": spec.command}


# --- configuration (no cluster needed) ------------------------------------------------------------------


def test_addresses_are_normalized_and_bad_ones_explained() -> None:
    assert normalize_address("10.0.0.5") == "tcp://10.0.0.5:8786"
    assert normalize_address("tls://sched.example.org:9000") == "tls://sched.example.org:9000"
    with pytest.raises(ValueError, match="not a scheduler address; give tcp://HOST:PORT"):
        normalize_address("http://10.0.0.5:8786")
    with pytest.raises(ValueError, match="out of range"):
        normalize_address("tcp://h:70000")


def test_config_cluster_as_string_or_table(tmp_path: Path) -> None:
    plan = make_plan(tmp_path / "out", [{"name": "a", "command": "random"}, {"name": "b", "command": "greedy"}])
    assert plan.cluster is None
    data = {"bots": [{"name": "a", "command": "random"}, {"name": "b", "command": "greedy"}]}
    config = parse_config({**data, "cluster": "127.0.0.1:9999"}, source="t.toml")
    assert config.cluster == ClusterConfig(address="tcp://127.0.0.1:9999")
    table = {"address": "tls://h:8786", "ca_file": "ca.pem", "cert": "me.pem", "key": "me.key"}
    plan = resolve_plan(
        parse_config({**data, "cluster": table}, source="t.toml"), base_dir=tmp_path, source="t", default_out=tmp_path
    )
    assert plan.cluster is not None and plan.cluster.ca_file == tmp_path / "ca.pem"
    # The cluster is where games run, not what they are: resuming elsewhere (or locally) is allowed.
    assert "cluster" not in plan.fingerprint
    with pytest.raises(ConfigError, match="tls:// scheduler needs ca_file, cert and key; missing cert, key"):
        parse_config({**data, "cluster": {"address": "tls://h:8786", "ca_file": "ca.pem"}}, source="t.toml")
    with pytest.raises(ConfigError, match="does not use certificates"):
        parse_config({**data, "cluster": {"address": "tcp://h:8786", "key": "k.pem"}}, source="t.toml")
    with pytest.raises(ConfigError, match=r"t.toml: cluster.port: unknown key; the keys here are address, ca_file"):
        parse_config({**data, "cluster": {"address": "tcp://h:1", "port": 3}}, source="t.toml")


def test_unreachable_scheduler_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not HAVE_DASK:
        pytest.skip("dask is not installed (pip install 'alternator-arena[cluster]')")
    address = f"tcp://127.0.0.1:{free_port()}"
    code = main(["tournament", "--bot", "random", "--bot", "greedy", "--out", str(tmp_path), "--cluster", address])
    assert code == 2
    err = capsys.readouterr().err
    assert f"cannot reach the Dask scheduler at {address}" in err
    assert "start it with `dask scheduler`" in err


# --- the worker side, without Dask ------------------------------------------------------------------------


def test_worker_games_reuse_processes_and_report_bots_that_cannot_start(tmp_path: Path, bot_spec: object) -> None:
    """A worker's games loop keeps bot processes between games; a bot that fails to start is the worker's
    failure (no record, no forfeit), whether its program is missing or it dies before its hello."""
    from referee.cluster.dask import GameJob, _WorkerGames, portable_spec
    from referee.record import GameRecord, GameSettings
    from referee.timing.clock import parse_time_control

    good: BotSpec = bot_spec("testbot", name="good")  # type: ignore[operator]
    settings = GameSettings(width=4, height=4, time_control=parse_time_control("10+0"))
    games = _WorkerGames(tmp_path / "logs")
    try:
        first = games.run(games.play, GameJob("g1", portable_spec(good), portable_spec(_random()), settings), "w1")
        second = games.run(games.play, GameJob("g2", portable_spec(_random()), portable_spec(good), settings), "w1")
        records = [GameRecord.model_validate_json(reply.record_json) for reply in (first, second)]
        assert [record.worker for record in records] == ["w1", "w1"]
        assert records[0].black.stderr_log == records[1].white.stderr_log  # the same process, reused
        missing = BotSpec(name="ghost", command=[str(tmp_path / "no-such-bot")])
        reply = games.run(games.play, GameJob("g3", missing, good, settings), "w1")
        assert reply.record_json is None and "program" in reply.failure and "not found" in reply.failure
        dies = BotSpec(name="dies", command=[sys.executable, "-c", "import sys; print('no luck', file=sys.stderr)"])
        reply = games.run(games.play, GameJob("g4", good, portable_spec(dies), settings), "w1")
        assert reply.record_json is None
        assert reply.failure.startswith("bot 'dies' started but its handshake failed: it ")
        assert "no luck" in reply.failure
    finally:
        games.close()


def _random() -> BotSpec:
    return BotSpec(name="random", command=[sys.executable, "-m", "sample_bots.random"])


class _Finished:
    """A Dask future whose task has finished (for a coordinator without a cluster)."""

    def __init__(self, reply: object) -> None:
        self.reply = reply

    def result(self, timeout: float | None = None) -> object:
        return self.reply

    def cancel(self) -> None:
        pass


class _ScriptedClient:
    """Two one-thread workers; each submitted game is answered by the next scripted reply."""

    status = "running"

    def __init__(self, replies: list[object]) -> None:
        self.replies = replies
        self.restrictions: list[object] = []

    def submit(self, function: object, job: object, **options: object) -> _Finished:
        self.restrictions.append(options.get("workers"))
        return _Finished(self.replies.pop(0))

    def scheduler_info(self, n_workers: int = -1) -> dict[str, object]:
        return {"workers": {"tcp://w1:1": {"nthreads": 1}, "tcp://w2:1": {"nthreads": 1}}}

    def subscribe_topic(self, topic: str, handler: object) -> None:
        """The moves' topic (`Cluster.play` streams moves through it); nothing is published here."""


@needs_dask
async def test_a_worker_whose_games_keep_failing_is_taken_out() -> None:
    """Three void games in a row on a worker take it out of the run; its void games are never scored, and
    later games go to the other workers only."""
    from referee.cluster.dask import WORKER_FAILURE_LIMIT, Cluster, ClusterLostError, WorkerReply, _void_record
    from referee.record import GameSettings
    from referee.timing.clock import parse_time_control

    settings = GameSettings(time_control=parse_time_control("10+0"))
    a, b = (BotSpec(name=name, command=["bot"]) for name in "ab")
    void = _void_record("g", a, b, settings, "the referee failed", "tcp://w1:1").model_dump_json()
    replies: list[object] = [WorkerReply("tcp://w1:1", void) for _ in range(WORKER_FAILURE_LIMIT)]
    messages: list[str] = []
    client = _ScriptedClient(replies)
    cluster = Cluster(client, ClusterConfig(address="tcp://scheduler:8786"), messages.append)  # type: ignore[arg-type]
    assert cluster.slots == 2 and cluster.in_flight == 4
    for number in range(WORKER_FAILURE_LIMIT):
        record = await cluster.play(f"g{number}", a, b, settings)
        assert record.termination == "void" and not record.termination.is_scored
    assert messages == [
        f"worker tcp://w1:1 is taken out of this run: its last {WORKER_FAILURE_LIMIT} games failed (last: void: not"
        " played on the cluster: the referee failed; the game is not scored); its games are played on the others"
    ]
    assert cluster.slots == 1
    assert client.restrictions == [None] * WORKER_FAILURE_LIMIT
    client.replies.append(WorkerReply("tcp://w2:1", None, failure="cannot start bot 'a': program 'bot' not found"))
    with pytest.raises(ClusterLostError, match="every worker of tcp://scheduler:8786 is out of this run"):
        await cluster.play("g9", a, b, settings)
    assert client.restrictions[-1] == ["tcp://w2:1"]  # only the healthy worker
    assert messages[-1].startswith("worker tcp://w2:1 is taken out of this run: cannot start bot 'a'")


# --- real clusters --------------------------------------------------------------------------------------


@needs_dask
async def test_tournament_survives_a_worker_killed_mid_game(
    tmp_path: Path, dask_cluster: DaskCluster, bot_spec: object
) -> None:
    """Every scheduled game is recorded exactly once, each by the worker that played it to the end."""
    from referee.cluster.dask import Cluster

    out = tmp_path / "out"
    bots: list[dict[str, object]] = [
        slow_bot(bot_spec, "slow"),
        {"name": "random", "command": "random"},
        {"name": "greedy", "command": "greedy"},
    ]
    plan = make_plan(out, bots, games=4)
    cluster = await Cluster.connect(ClusterConfig(address=dask_cluster.address))
    killed: list[str] = []
    finished = trio.Event()

    played_on: set[str | None] = set()

    def on_event(event: Event) -> None:
        if event.type == "game_finished":
            played_on.add(event.worker)
            if event.games_done >= 2:
                finished.set()

    tournament = Runner(plan, on_event=on_event, players=ClusterPlayers(cluster, plan.bots))
    try:
        await cluster.preflight(plan.bots)
        assert cluster.slots == 2
        async with trio.open_nursery() as nursery:

            async def kill_a_busy_worker() -> None:
                await finished.wait()
                while not killed:
                    busy = await trio.to_thread.run_sync(cluster.client.processing)
                    for address, keys in busy.items():
                        if keys and address in dask_cluster.workers:
                            dask_cluster.kill(dask_cluster.workers[address])
                            killed.append(address)
                            break
                    await trio.sleep(0.01)

            nursery.start_soon(kill_a_busy_worker)
            summary = await tournament.run()
    finally:
        await cluster.close()
    assert killed
    survivor = next(address for address in dask_cluster.workers if address not in killed)
    assert summary.games_done == summary.games_total == 12
    done, records = stored_games(out)
    assert done == list(range(1, 13))
    assert sorted(record["game_id"] for record in records) == [f"g{n:04d}" for n in range(1, 13)]
    assert {record["worker"] for record in records} <= {killed[0], survivor}
    assert survivor in played_on and played_on <= {killed[0], survivor}  # game_finished events name the worker
    assert all(record["termination"] == "normal" for record in records)
    # A worker keeps its bot processes between games: one process per bot on the survivor (its stderr log).
    for name in ("slow", "random", "greedy"):
        logs = {r[side]["stderr_log"] for r in records for side in ("black", "white") if r[side]["name"] == name}
        survivor_logs = {
            r[side]["stderr_log"]
            for r in records
            for side in ("black", "white")
            if r[side]["name"] == name and r["worker"] == survivor
        }
        assert len(survivor_logs) == 1, (name, logs)
    lines = cluster.summary_lines()
    assert any(line.startswith(f"{survivor}: ") and " games" in line and "latency p50" in line for line in lines)


def done_count(out: Path) -> int:
    try:
        with sqlite3.connect(out / "run.db") as db:
            return int(db.execute("SELECT COUNT(*) FROM games WHERE status = 'done'").fetchone()[0])
    except sqlite3.Error:
        return 0  # not created yet


@needs_dask
async def test_coordinator_killed_then_scheduler_lost_then_resumed_locally(
    tmp_path: Path, dask_cluster: DaskCluster
) -> None:
    """kill -9 of the coordinator, then of the scheduler: each run resumes where the last stopped, locally at the
    end, and every scheduled game is recorded once."""
    from referee.cli import build_parser
    from referee.cluster.dask import Cluster, ClusterLostError
    from referee.commands.tournament import build_plan
    from referee.exceptions import find_exception

    out = tmp_path / "out"
    bots = ["--bot", "slow=python3 tests/bots/testbot.py slow 30", "--bot", "random"]
    argv = ["tournament", *bots, "--games", "10", "--size", "5", "--tc", "10+0", "--out", str(out)]
    # 1. The coordinator (a real `alternator tournament --cluster`) killed with SIGKILL after two games.
    coordinator = subprocess.Popen(
        [sys.executable, "-m", "referee", *argv, "--cluster", dask_cluster.address],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while done_count(out) < 2 and coordinator.poll() is None:
            await trio.sleep(0.02)
    finally:
        coordinator.kill()
        coordinator.wait()
    after_kill = done_count(out)
    assert 2 <= after_kill < 10

    # 2. Resumed on the cluster; the scheduler killed after two more games: the run stops, standings written.
    plan = build_plan(build_parser().parse_args(argv))
    cluster = await Cluster.connect(ClusterConfig(address=dask_cluster.address))

    def on_event(event: Event) -> None:
        if event.type == "game_finished" and event.games_done == after_kill + 2:
            dask_cluster.kill(dask_cluster.processes[0])  # the scheduler

    try:
        with pytest.raises(BaseException) as caught:
            await Runner(plan, on_event=on_event, players=ClusterPlayers(cluster, plan.bots)).run()
    finally:
        await cluster.close()
    lost = find_exception(caught.value, ClusterLostError)
    assert lost is not None, caught.value
    assert "re-run the same command to resume" in str(lost)
    assert (out / "standings.json").is_file()
    done_before, _ = stored_games(out)
    assert after_kill + 2 <= len(done_before) < 10

    # 3. Resumed here, without the cluster.
    summary = await Runner(plan).run()
    assert summary.games_done == 10 and summary.played_now == 10 - len(done_before)
    done, records = stored_games(out)
    assert done == list(range(1, 11))
    assert sorted(record["game_id"] for record in records) == [f"g{n:04d}" for n in range(1, 11)]
    assert {record["worker"] is None for record in records} == {True, False}
    assert all(record["termination"] == "normal" for record in records)


@needs_dask
def test_a_worker_that_cannot_start_a_bot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The preflight names the worker and the bot; in a run, such a worker is taken out and forfeits nothing."""
    from referee.cluster.dask import Cluster, ClusterLostError
    from referee.record import GameSettings
    from referee.timing.clock import parse_time_control

    # A bot program on the first worker's PATH only: installed on one machine, missing on the other.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "mybot"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {REPO / 'tests' / 'bots' / 'testbot.py'}\n")
    program.chmod(0o755)
    path = os.environ.get("PATH", "/usr/bin:/bin")
    cluster = start_cluster(tmp_path / "logs", 2, [f"{bin_dir}:{path}", path])
    try:
        good, bad = list(cluster.workers)
        bot = "local=mybot"
        code = main(
            ["tournament", "--bot", bot, "--bot", "random", "--out", str(tmp_path / "a"), "--cluster", cluster.address]
        )
        err = capsys.readouterr().err
        assert code == 2, err
        assert "not every worker can start every bot" in err
        assert f"worker {bad}: bot 'local': cannot start bot 'local': program 'mybot' not found" in err
        assert f"worker {good}:" not in err

        # Past the preflight (a worker that breaks during the run): its games are void and played elsewhere.
        messages: list[str] = []
        plan = make_plan(
            tmp_path / "b",
            [{"name": "local", "command": "mybot"}, {"name": "random", "command": "random"}],
            games=6,
        )

        async def run() -> RunSummary:
            coordinator = await Cluster.connect(ClusterConfig(address=cluster.address), on_message=messages.append)
            try:
                return await Runner(plan, players=ClusterPlayers(coordinator, plan.bots)).run()
            finally:
                await coordinator.close()

        summary = trio.run(run)
        assert summary.games_done == 6
        done, records = stored_games(tmp_path / "b")
        assert done == list(range(1, 7))
        assert {record["worker"] for record in records} == {good}
        assert not any(record["termination"] != "normal" for record in records)
        assert any(f"worker {bad} is taken out of this run" in message for message in messages), messages

        # Every worker gone: the scheduler would keep a game waiting for one forever, so the run stops.
        async def orphaned() -> str:
            coordinator = await Cluster.connect(ClusterConfig(address=cluster.address))
            coordinator.no_workers_grace_s = 0.5
            for process in cluster.workers.values():
                cluster.kill(process)
            black, white = (BotSpec(name=name, command=[sys.executable, "-m", "sample_bots.random"]) for name in "ab")
            settings = GameSettings(time_control=parse_time_control("10+0"))
            try:
                with pytest.raises(ClusterLostError) as caught:
                    await coordinator.play("g0001", black, white, settings)
            finally:
                await coordinator.close()
            return str(caught.value)

        message = trio.run(orphaned)
        assert message.startswith(f"the Dask scheduler at {cluster.address} has had no workers for 0.5 s")
    finally:
        cluster.stop()


def make_certificates(folder: Path) -> None:
    """A CA and one certificate for 127.0.0.1 signed by it (openssl), as a site would make for its cluster."""
    folder.mkdir()

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=ca")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=127.0.0.1")
    (folder / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "node.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "node.pem",
        "-extfile",
        "ext",
    )


@needs_dask
def test_tls_cluster_from_a_config_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tls:// scheduler with the CA, certificate and key in the config's [cluster] table."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: it makes the test certificates")
    certs = tmp_path / "certs"
    make_certificates(certs)
    cluster = start_cluster(tmp_path / "logs", 1, tls=certs)
    try:
        config = tmp_path / "league.toml"
        config.write_text(
            'games = 2\nsize = "5x5"\n'
            '[[bots]]\nname = "random"\ncommand = "random"\n[[bots]]\nname = "greedy"\ncommand = "greedy"\n'
            f'[cluster]\naddress = "{cluster.address}"\nca_file = "certs/ca.pem"\ncert = "certs/node.pem"\n'
            'key = "certs/node.key"\n'
        )
        code = main(["tournament", str(config), "--out", str(tmp_path / "out")])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        _, records = stored_games(tmp_path / "out")
        assert [record["worker"] for record in records] == [next(iter(cluster.workers))] * 2
        assert "workers:\n  tls://127.0.0.1:" in captured.out
    finally:
        cluster.stop()


@needs_dask
def test_sprt_match_on_a_cluster_survives_a_killed_worker(
    tmp_path: Path, dask_cluster: DaskCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """`alternator match --sprt --cluster`: a worker's process group killed mid-run; the SPRT still counts
    every committed game once and stops at its verdict."""
    import threading

    out = tmp_path / "match"
    killed: list[str] = []
    done_at_kill: list[int] = []
    finished = threading.Event()

    def kill_a_worker_after_some_games() -> None:
        while done_count(out) < 2 and not finished.is_set():  # well before the SPRT can decide (4+ games)
            time.sleep(0.005)
        if finished.is_set():
            return
        address, process = next(iter(dask_cluster.workers.items()))
        dask_cluster.kill(process)
        killed.append(address)
        done_at_kill.append(done_count(out))

    killer = threading.Thread(target=kill_a_worker_after_some_games)
    killer.start()
    try:
        argv = ["match", "--black", "greedy", "--white", "random", "--size", "5", "--tc", "10+0", "--games", "200"]
        argv += ["--openings-plies", "2", "--sprt", "elo0=0", "elo1=300", "alpha=0.1", "beta=0.1"]
        code = main([*argv, "--out", str(out), "--cluster", dask_cluster.address])
    finally:
        finished.set()
        killer.join()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads((out / "match.json").read_text())
    assert summary["ended"] == "sprt", summary["ended"]
    done, records = stored_games(out)
    ids = [record["game_id"] for record in records]
    assert len(ids) == len(set(ids)) == len(done) >= 4
    assert killed and len(done) > done_at_kill[0], "the worker was killed after the match"
    assert {record["worker"] for record in records} <= set(dask_cluster.workers)
    survivor = next(address for address in dask_cluster.workers if address not in killed)
    assert f"{survivor}: " in captured.out + captured.err


@needs_dask
def test_a_cluster_match_streams_every_move_to_show_moves(
    tmp_path: Path, shared_cluster: DaskCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workers publish each game's moves as they play them: `--show-moves` prints all of them, in order."""
    out = tmp_path / "match"
    argv = ["match", "--black", "random", "--white", "greedy", "--size", "4x4", "--games", "2", "--show-moves"]
    code = main([*argv, "--cluster", shared_cluster.address, "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    _, records = stored_games(out)
    assert len(records) == 2 and all(record["worker"] for record in records)
    for record in records:
        shown = [line.split()[1:4] for line in captured.out.splitlines() if line.startswith(record["game_id"] + " ")]
        played = [[f"{ply}.", move["color"], move["move"]] for ply, move in enumerate(record["moves"], start=1)]
        assert [line for line in shown if line and line[0].endswith(".")] == played


def test_the_cluster_preflight_refuses_option_values_a_bot_does_not_take(tmp_path: Path, bot_spec: object) -> None:
    """On a cluster each worker's preflight checks the option values as a local run does before its first game."""
    from referee.cluster.dask import _WorkerGames

    good: BotSpec = bot_spec("testbot", name="good")  # type: ignore[operator]
    tuned = good.model_copy(update={"name": "tuned", "options": {"Depth": 5}})
    games = _WorkerGames(tmp_path / "logs")
    try:
        results = games.run(games.probe, [good, tuned], "w1", 10.0)
    finally:
        games.close()
    assert [(result.bot, result.failure is None) for result in results] == [("good", True), ("tuned", False)]
    failure = results[1].failure
    assert failure is not None and "Depth" in failure and "option.NAME=VALUE" in failure


@needs_dask
def test_tuning_plays_its_iterations_on_a_cluster(
    tmp_path: Path, shared_cluster: DaskCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """`alternator tune` with a [cluster] table: every iteration's games are played by the cluster's workers."""
    config = tmp_path / "tune.toml"
    config.write_text(
        'bot = "alphabeta"\niterations = 2\npairs = 1\nseed = 1\nnodes = 500\ntime_control = "60+1"\n'
        'size = "4x4"\nopenings_plies = 1\nconcurrency = 2\nout = "out"\n'
        '[[params]]\nname = "depth"\nstart = 2\nmin = 1\nmax = 6\nc_end = 1\nr_end = 0.3\n'
        f'[cluster]\naddress = "{shared_cluster.address}"\n'
    )
    assert main(["tune", str(config)]) == 0, capsys.readouterr().err
    state = json.loads((tmp_path / "out" / "tune.json").read_text())
    assert len(state["history"]) == 2
    played = [
        json.loads(line)
        for games in (tmp_path / "out" / "iterations").glob("*/games.jsonl")
        for line in games.read_text().splitlines()
        if line.strip()
    ]
    assert len(played) == 4 and {game["worker"] for game in played} <= set(shared_cluster.workers)


@needs_dask
def test_the_loss_of_the_scheduler_is_said_in_our_words_and_dasks_in_one_line(tmp_path: Path) -> None:
    """Dask logs the lost scheduler with ~30 lines of traceback; the run holds that back to one line (unless
    --verbose) and then says what happened and what to do."""
    cluster = start_cluster(tmp_path / "logs", 1)
    try:
        out = tmp_path / "t"
        args = ["tournament", "--bot", "random", "--bot", "greedy", "--games", "400", "--size", "4x4"]
        process = subprocess.Popen(
            [sys.executable, "-m", "referee", *args, "--tc", "5+0.1", "--out", str(out), "--cluster", cluster.address],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not (out / "games.jsonl").is_file() or not (out / "games.jsonl").read_text().count("\n") >= 2:
            assert time.monotonic() < deadline and process.poll() is None, "no game was played"
            time.sleep(0.1)
        cluster.kill(cluster.processes[0])  # the scheduler
        _, err = process.communicate(timeout=120)
    finally:
        cluster.stop()
    assert process.returncode == 1, err
    assert "Traceback" not in err and "distributed.comm" not in err
    assert err.count("cluster: Dask logged an error") <= 1  # at most one line of Dask's own
    assert f"lost the Dask scheduler at {cluster.address}" in err


def test_the_cluster_paragraph_is_printed_once_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("match", "tournament"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert capsys.readouterr().out.count("Cluster: --cluster tcp://HOST:8786 plays the games") == 1, command
