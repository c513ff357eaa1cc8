"""`alternator replay`: good records check out; tampered ones fail naming the move and the reason."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from protocol.messages import TimeControl
from protocol.rules import Position
from referee.cli import main
from referee.commands.replay import RecordCheckError, check_record
from referee.record import BotInfo, GameRecord, GameSettings, MoveRecord, Termination

SETTINGS = GameSettings(width=4, height=4, komi=0.5, time_control=TimeControl(base_ms=10_000, increment_ms=100))


def played_record(seed: int = 1, *, stop_after: int | None = None, settings: GameSettings = SETTINGS) -> GameRecord:
    """A game of random legal moves, finished normally unless `stop_after` cuts it short."""
    rng = random.Random(seed)
    position = Position.from_moves(settings.opening, settings.width, settings.height, settings.komi)
    moves: list[MoveRecord] = []
    while not position.is_over() and (stop_after is None or len(moves) < stop_after):
        legal = position.legal_moves()
        # Pass rarely, so that games are long enough to be interesting.
        move = rng.choice(legal[:-1]) if len(legal) > 1 and rng.random() < 0.9 else legal[-1]
        moves.append(MoveRecord(color=str(position.turn), move=str(move), elapsed_ms=1.5, clock_ms=9_000))  # type: ignore[arg-type]
        position.push(move)
    outcome = position.outcome()
    now = datetime.now(UTC)
    common: dict[str, Any] = {
        "game_id": "t-1",
        "black": BotInfo(name="alice", command=["alice"]),
        "white": BotInfo(name="bob", command=["bob"]),
        "settings": settings,
        "moves": moves,
        "final_position": position.to_string(),
        "started_at": now,
        "finished_at": now,
    }
    if outcome is None:
        return GameRecord(
            **common, result="*", winner=None, termination=Termination.ABORTED, reason="stopped",
            black_score=None, white_score=None,
        )  # fmt: skip
    return GameRecord(
        **common,
        result=outcome.result(),
        winner=outcome.winner,
        termination=Termination.NORMAL,
        reason="both passed",
        black_score=outcome.black_score,
        white_score=outcome.white_score,
    )


def write(tmp_path: Path, record: GameRecord | dict[str, Any]) -> Path:
    path = tmp_path / "game.json"
    data = record.model_dump(mode="json") if isinstance(record, GameRecord) else record
    path.write_text(json.dumps(data))
    return path


def test_a_good_record_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = played_record()
    assert main(["replay", str(write(tmp_path, record)), "--moves"]) == 0
    out = capsys.readouterr().out
    final = Position.from_string(record.final_position)
    assert final.diagram().splitlines()[0] in out
    assert f"result: {record.result}" in out
    assert f"   1. black {record.moves[0].move}" in out
    assert f"{len(record.moves)} moves legal" in out


def test_moves_show_their_infos_and_how_many_were_not_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = played_record()
    first = record.moves[0].model_copy(update={"infos": [{"depth": 7, "pv": ["a1a2"]}], "infos_dropped": 40})
    record = record.model_copy(update={"moves": [first, *record.moves[1:]]})
    assert main(["replay", str(write(tmp_path, record)), "--moves"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("   1. black"))
    assert lines[at + 1 : at + 3] == ["        info (40 earlier infos not kept)", "        info depth 7 pv a1a2"]
    assert not lines[at + 3].strip().startswith("info")


def test_an_illegal_move_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = played_record()
    data = record.model_dump(mode="json")
    data["moves"][3]["move"] = data["moves"][0]["move"]  # the pit of move 1 already has a dot
    assert main(["replay", str(write(tmp_path, data))]) == 1
    err = capsys.readouterr().err
    pit = record.moves[0].move[:2]
    assert f"move 4 ({record.moves[3].color} {record.moves[0].move}): " in err
    assert f"{pit} already has a dot" in err


def test_a_wrong_result_is_caught(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = played_record()
    flipped = {"1-0": "0-1", "0-1": "1-0", "1/2-1/2": "1-0"}[record.result]
    data = record.model_dump(mode="json") | {"result": flipped}
    assert main(["replay", str(write(tmp_path, data))]) == 1
    assert f"the result is {flipped}" in capsys.readouterr().err


def test_wrong_scores_and_positions_are_caught() -> None:
    record = played_record()
    assert record.black_score is not None
    with pytest.raises(RecordCheckError, match="the scores are"):
        check_record(record.model_copy(update={"black_score": record.black_score + 2}))
    with pytest.raises(RecordCheckError, match="final_position"):
        check_record(record.model_copy(update={"final_position": "4/4/4/4 b 0 0.5"}))
    with pytest.raises(RecordCheckError, match="do not end with two passes"):
        check_record(
            record.model_copy(update={"moves": record.moves[:-1], "final_position": _position_after(record, -1)})
        )
    with pytest.raises(RecordCheckError, match=r"move 2 .*it was white's turn"):
        moves = [record.moves[0], record.moves[1].model_copy(update={"color": "black"}), *record.moves[2:]]
        check_record(record.model_copy(update={"moves": moves}))


def _position_after(record: GameRecord, cut: int) -> str:
    s = record.settings
    return Position.from_moves([m.move for m in record.moves[:cut]], s.width, s.height, s.komi).to_string()


def test_forfeits_must_name_the_right_loser_and_winner() -> None:
    partial = played_record(stop_after=5)  # black made moves 1, 3, 5: white is to move
    base = partial.model_copy(
        update={
            "termination": Termination.TIME,
            "reason": "overran",
            "loser": "white",
            "winner": "black",
            "result": "1-0",
        }
    )
    assert check_record(base).turn.value == "white"
    with pytest.raises(RecordCheckError, match="white forfeited, so black wins"):
        check_record(base.model_copy(update={"result": "0-1", "winner": "white"}))
    with pytest.raises(RecordCheckError, match="black cannot lose by time: it was white's turn"):
        check_record(base.model_copy(update={"loser": "black", "winner": "white", "result": "0-1"}))
    crash = base.model_copy(
        update={"termination": Termination.CRASH, "loser": "black", "winner": "white", "result": "0-1"}
    )
    assert check_record(crash) is not None  # a bot may crash while the other one thinks
    with pytest.raises(RecordCheckError, match="must name the loser"):
        check_record(base.model_copy(update={"loser": None}))
    check_record(partial)  # aborted: no result
    with pytest.raises(RecordCheckError, match="result \\*"):
        check_record(partial.model_copy(update={"result": "1-0"}))


def test_a_game_voided_or_stopped_after_its_last_move_checks_out() -> None:
    finished = played_record()  # ends with two passes
    for termination in (Termination.VOID, Termination.ABORTED):
        # e.g. the referee failed while showing the last move: the game is not scored, but the record is sound.
        unscored = finished.model_copy(
            update={"termination": termination, "result": "*", "winner": None, "black_score": None, "white_score": None}
        )
        assert check_record(unscored).is_over()
    forfeit = finished.model_copy(update={"termination": Termination.CRASH, "loser": "white", "winner": "black"})
    with pytest.raises(RecordCheckError, match="the moves end with two passes"):
        check_record(forfeit.model_copy(update={"result": "1-0"}))


def test_an_opening_is_replayed_first() -> None:
    settings = SETTINGS.model_copy(update={"opening": ["a1a2", "b2b1"]})
    record = played_record(3, settings=settings)
    assert check_record(record).history[:2] == Position.from_moves(["a1a2", "b2b1"], 4, 4).history
    bad = record.model_copy(update={"settings": settings.model_copy(update={"opening": ["a1a2", "a1b1"]})})
    with pytest.raises(RecordCheckError, match="opening move 2 \\(a1b1\\)"):
        check_record(bad)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"hello": 1}', "is not a game record: game_id: Field required"),
        ("not json at all", "is not a game record"),
        (None, "no such file"),
    ],
)
def test_a_file_that_is_not_a_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, words: str
) -> None:
    path = tmp_path / "x.json"
    if content is not None:
        path.write_text(content)
    assert main(["replay", str(path)]) == 2
    assert words in capsys.readouterr().err
