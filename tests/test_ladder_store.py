"""The ladder's store: versions, W-D-L and rating history per game, faults that suspend, tokens; all in SQLite,
read back by a second connection as another process would."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from referee.ladder.rating import Rating
from referee.ladder.store import LadderError, LadderStore, VersionRow
from referee.record import BotInfo, GameRecord, GameSettings, Termination
from referee.run.botspec import BotSpec
from referee.timing.clock import movetime_control

SPEC = BotSpec(name="x", command=["true"])


def record(game_id: str, black: VersionRow, white: VersionRow, result: str) -> GameRecord:
    at = datetime.now(UTC).isoformat()
    return GameRecord.model_validate(
        {
            "game_id": game_id,
            "black": BotInfo(name=black.key, command=["true"]),
            "white": BotInfo(name=white.key, command=["true"]),
            "settings": GameSettings(time_control=movetime_control(0.1)),
            "result": result,
            "winner": {"1-0": "black", "0-1": "white"}.get(result),
            "termination": Termination.NORMAL,
            "reason": "two passes",
            "black_score": 1,
            "white_score": 0,
            "final_position": "",
            "started_at": at,
            "finished_at": at,
        }
    )


def play(
    store: LadderStore, game_id: str, black: VersionRow, white: VersionRow, result: str, *, black_fault: bool = False
) -> int:
    game = record(game_id, black, white, result)
    ratings = (Rating(1600, 300), Rating(1400, 300))
    return store.record_game(game, black, white, ratings, (black_fault, False), game.model_dump_json())


def test_versions_games_and_history_are_kept_and_read_by_another_connection(tmp_path: Path) -> None:
    store = LadderStore(tmp_path)
    a1 = store.add_entry("a", SPEC, "given")
    b1 = store.add_entry("b", SPEC, "given")
    with pytest.raises(LadderError, match="already an entry 'a'"):
        store.add_entry("a", SPEC, "again")
    assert a1.key == "a.v1" and a1.spec.name == "a.v1"
    assert play(store, "g1", a1, b1, "1-0") == 1
    assert play(store, "g2", b1, a1, "1/2-1/2") == 2
    a2 = store.update_entry("a", SPEC, "new")
    assert (a2.number, a2.rating, a2.rd, a2.games) == (2, 1500, 350, 0)
    other = LadderStore(tmp_path, create=False)  # as the leaderboard server or a command would
    versions = other.versions("a")
    assert [(v.number, v.games, v.wins, v.draws, v.losses) for v in versions] == [(1, 2, 1, 1, 0), (2, 0, 0, 0, 0)]
    assert versions[0].retired_at is not None and versions[1].retired_at is None
    assert [seq for seq, _, _ in other.history(a1.id)] == [1, 2]
    assert other.playable()[0].entry in ("a", "b") and {v.key for v in other.playable()} == {"a.v2", "b.v1"}
    assert [g.game_id for g in other.recent_games(10, entry="a")] == ["g2", "g1"]
    assert [g.game_id for g in other.all_games()] == ["g1", "g2"]
    assert other.trends([b1.id], 10) == {b1.id: pytest.approx(100.0)}  # 1500 -> 1400 -> 1600
    other.close()
    store.close()


def test_faults_in_a_row_suspend_an_entry_and_a_clean_game_resets_the_count(tmp_path: Path) -> None:
    store = LadderStore(tmp_path)
    a = store.add_entry("a", SPEC, "given")
    b = store.add_entry("b", SPEC, "given")
    play(store, "g1", a, b, "0-1", black_fault=True)
    assert not store.note_game_fault(a, "crashed", "boom", suspend_after=3)
    play(store, "g2", a, b, "1-0")  # clean: the count starts again
    play(store, "g3", a, b, "0-1", black_fault=True)
    assert not store.note_game_fault(a, "crashed", None, suspend_after=3)
    assert not store.add_fault(a, "cannot start", None, suspend_after=3)
    assert store.add_fault(a, "cannot start again", None, suspend_after=3)
    entry = store.entry("a")
    assert entry is not None and entry.status == "suspended"
    assert entry.reason == "3 faults in a row; the last: cannot start again"
    assert [f.reason for f in store.faults("a")][:2] == ["cannot start again", "cannot start"]
    assert store.playable() == [v for v in store.playable() if v.entry == "b"]
    store.enable("a")
    enabled = store.entry("a")
    assert enabled is not None and enabled.status == "active" and enabled.version is not None
    assert enabled.version.faults == 0
    store.retire("b")
    with pytest.raises(LadderError, match="is retired"):
        store.suspend("b", "why")
    store.close()


def test_paused_flag_game_numbers_and_tokens_survive_reopening(tmp_path: Path) -> None:
    store = LadderStore(tmp_path)
    store.set_paused(True)
    assert [store.next_game_number() for _ in range(3)] == [1, 2, 3]
    store.set_token_hash("alice", "ab" * 32)
    store.close()
    again = LadderStore(tmp_path, create=False)
    assert again.paused and again.next_game_number() == 4
    assert again.token_hashes() == [("alice", "ab" * 32)]
    again.close()
    with pytest.raises(LadderError, match="no ladder here"):
        LadderStore(tmp_path / "elsewhere", create=False)
