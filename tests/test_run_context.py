"""Two runs in one process share no run state: each run's cores and the bot folders its sandboxes hide are its
own, passed down from its runner (`referee.run.runner.LocalPlayers` → `GameSlot` → the play loop and its pool),
never kept in a module global that a second run would inherit or add to.
"""

from __future__ import annotations

from pathlib import Path

import trio

from referee.host.containment import CpuSlots
from referee.record import Termination
from referee.run.config import RunPlan, parse_config, resolve_plan
from referee.run.runner import GameSlot, LocalPlayers, game_settings
from referee.run.schedule import ScheduledGame


def bot_folder(root: Path, name: str) -> Path:
    """A folder of its own for a bot (its working directory)."""
    folder = root / name
    folder.mkdir(parents=True)
    return folder


def plan_for(root: Path, *, concurrency: int, affinity: bool) -> RunPlan:
    folders = [bot_folder(root, "one"), bot_folder(root, "two")]
    config = parse_config(
        {
            "bots": [{"name": folder.name, "command": "random", "dir": str(folder)} for folder in folders],
            "size": "4x4",
            "time_control": "10+0",
            "concurrency": concurrency,
            "cpu_affinity": affinity,
        },
        source="test",
    )
    return resolve_plan(config, base_dir=root, source="test", default_out=root / "out")


def slot_state(slot: GameSlot) -> tuple[list[int] | None, list[str]]:
    """The cores and the hidden bot folders a slot was given, wherever its play loop runs."""
    if slot._worker is not None:
        return slot._worker.cores, sorted(slot._worker.hidden)
    return slot._pool.cores, sorted(str(path) for path in slot._pool.hidden)


def test_two_runs_in_one_process_share_no_folders_or_cores(tmp_path: Path) -> None:
    first = plan_for(tmp_path / "first", concurrency=2, affinity=True)
    second = plan_for(tmp_path / "second", concurrency=1, affinity=False)
    first_players = LocalPlayers(first, tmp_path / "first" / "logs")
    second_players = LocalPlayers(second, tmp_path / "second" / "logs")
    first_slots = [first_players.player(index) for index in range(first_players.slots)]
    second_slot = second_players.player(0)
    assert isinstance(second_slot, GameSlot) and all(isinstance(slot, GameSlot) for slot in first_slots)

    first_folders = sorted(str(spec.dir) for spec in first.bots)
    second_folders = sorted(str(spec.dir) for spec in second.bots)
    assert not set(first_folders) & set(second_folders)
    sets = CpuSlots(2).sets
    for index, slot in enumerate(first_slots):
        assert isinstance(slot, GameSlot)
        cores, hidden = slot_state(slot)
        assert cores == (sets[index % len(sets)] or None)
        assert hidden == first_folders  # its own run's folders, none of the other's
    cores, hidden = slot_state(second_slot)
    assert cores is None  # no --cpu-affinity in this run, whatever the first asked for
    assert hidden == second_folders

    async def play_both() -> list[Termination]:
        results: list[Termination] = []

        async def play(slot: GameSlot, plan: RunPlan) -> None:
            game = ScheduledGame(number=1, pairing=0, round=0, black="one", white="two", opening=())
            try:
                record = await slot.play(game, game_settings(plan, game), None)
            finally:
                await slot.aclose()
            results.append(record.termination)

        async with trio.open_nursery() as nursery:
            first_slot = first_slots[0]
            assert isinstance(first_slot, GameSlot)
            nursery.start_soon(play, first_slot, first)
            nursery.start_soon(play, second_slot, second)
        for slot in first_slots[1:]:
            assert isinstance(slot, GameSlot)
            await slot.aclose()
        return results

    # Both runs play at once in this process, each with its own slots, and each game ends as a game ends.
    assert sorted(t.value for t in trio.run(play_both)) == sorted([Termination.NORMAL.value] * 2)
