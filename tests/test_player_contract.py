"""One contract for every player: a game played in a play loop (a thread), in a play worker (a process) or on
a real Dask cluster (a scheduler and workers) streams every move, in order, before it returns the record, and
the same game with the same deterministic bots is the same game wherever it is played.

The runner holds a player (`referee.run.runner.Slot`: `GameSlot` here, `ClusterSlot` on a cluster) and never asks
which kind it has; this test is what lets it not ask.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio

from referee.record import GameRecord, PlayedMove, Termination
from referee.run.config import RunPlan, parse_config, resolve_plan
from referee.run.runner import GameSlot, LocalPlayers, Slot, game_settings
from referee.run.schedule import ScheduledGame
from tests.conftest import child_pids
from tests.test_cluster import HAVE_DASK, REPO, start_cluster

PLAYERS = ["thread", "process", "dask"]
GAMES = [
    ScheduledGame(number=1, pairing=0, round=0, black="alpha", white="greedy", opening=()),
    ScheduledGame(number=2, pairing=0, round=1, black="greedy", white="alpha", opening=("b3b4",)),
]


def make_plan(out: Path) -> RunPlan:
    config = parse_config(
        {
            "bots": [{"name": "alpha", "command": "alphabeta", "nodes": 3000}, {"name": "greedy", "command": "greedy"}],
            "size": "5x5",
            "time_control": "10+0",
        },
        source="test",
    )
    return resolve_plan(config, base_dir=REPO, source="test", default_out=out)


PLAN = make_plan(Path("unused"))
"""The settings of the games (`referee.run.runner.game_settings`: a node limit for the search bot, 10+0, 5x5)."""


@pytest.fixture(scope="module", params=PLAYERS)
def kind(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The kind of player, and for "dask" the address of a scheduler with one worker, started once for the
    module's tests (each connects a client of its own, as each run does). Module-scoped: the tests run kind by
    kind, and the cluster is up only while the Dask players' run."""
    if request.param != "dask":
        yield request.param, ""
        return
    if not HAVE_DASK:
        pytest.skip("dask is not installed (pip install 'alternator-arena[cluster]')")
    dask = start_cluster(tmp_path_factory.mktemp("cluster-logs"), workers=1)
    try:
        yield "dask", dask.address
    finally:
        dask.stop()


@pytest.fixture
async def player(kind: tuple[str, str], tmp_path: Path) -> AsyncIterator[Slot]:
    plan = make_plan(tmp_path / "out")
    slot: Slot
    name, address = kind
    if name == "dask":
        from referee.cluster.config import ClusterConfig
        from referee.cluster.dask import Cluster, ClusterPlayers

        cluster = await Cluster.connect(ClusterConfig(address=address))
        try:
            await cluster.preflight(plan.bots, plan.start_timeout_s)
            slot = ClusterPlayers(cluster, plan.bots, plan.start_timeout_s).player(0)
            yield slot
            await slot.aclose()
        finally:
            await cluster.close()
        return
    # A play loop in this process with one slot; a play worker per slot with two or more.
    concurrency = 2 if name == "process" else 1
    slot = LocalPlayers(dataclasses.replace(plan, concurrency=concurrency), tmp_path / "logs").player(0)
    try:
        yield slot
    finally:
        with trio.CancelScope(shield=True):
            await slot.aclose()


async def play(player: Slot, game: ScheduledGame) -> tuple[GameRecord, list[tuple[int, PlayedMove]]]:
    streamed: list[tuple[int, PlayedMove]] = []
    settings = game_settings(PLAN, game)
    with trio.fail_after(120):
        record = await player.play(game, settings, lambda moves: streamed.extend((ply, move) for move, ply in moves))
    return record, streamed


async def test_every_player_streams_every_move_in_order_before_the_record(player: Slot) -> None:
    for game in GAMES:
        record, streamed = await play(player, game)
        assert record.game_id == game.game_id and record.termination is Termination.NORMAL, record.reason
        assert (record.black.name, record.white.name) == (game.black, game.white)
        assert record.moves, "a game of moves"
        # Every move, once, in order, numbered from the first move after the opening.
        first = len(game.opening) + 1
        assert [ply for ply, _ in streamed] == list(range(first, first + len(record.moves)))
        assert [(m.color, m.move) for _, m in streamed] == [(m.color, m.move) for m in record.moves]


async def test_the_same_game_is_the_same_game_on_every_player(player: Slot, tmp_path: Path) -> None:
    record, _ = await play(player, GAMES[1])
    # The reference: the same game played in a play loop of this process, with bots of its own.
    reference = GameSlot(9, make_plan(tmp_path / "ref"), tmp_path / "ref-logs")
    try:
        expected, _ = await play(reference, GAMES[1])
    finally:
        with trio.CancelScope(shield=True):
            await reference.aclose()
    assert expected.termination is Termination.NORMAL, expected.reason
    assert record.result == expected.result and record.reason == expected.reason
    assert [m.move for m in record.moves] == [m.move for m in expected.moves]


async def test_a_closed_local_player_leaves_no_bot_process(player: Slot) -> None:
    await play(player, GAMES[0])
    if isinstance(player, GameSlot):
        assert player.running() == {"alpha", "greedy"}  # kept open between games
        await player.aclose()
        with trio.fail_after(10):
            while child_pids():
                await trio.sleep(0.05)
    else:
        assert player.running() == set()  # the workers choose their own slots and keep their own bots
