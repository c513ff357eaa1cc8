"""The committed JSON Schema of game records matches the model it is generated from."""

from __future__ import annotations

import json

from referee.record import SCHEMA_PATH, game_record_schema, game_record_schema_text


def test_committed_schema_is_up_to_date() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == game_record_schema_text(), (
        f"{SCHEMA_PATH} is out of date with referee.record.GameRecord;"
        " regenerate it with `python -m referee.record --write-schema` and commit it"
    )


def test_schema_describes_every_record_field() -> None:
    schema = game_record_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert schema["additionalProperties"] is False
    expected = {"game_id", "black", "white", "settings", "result", "termination", "reason", "final_position"}
    assert expected <= set(schema["required"])
    move = schema["$defs"]["MoveRecord"]
    assert {"color", "move", "elapsed_ms", "clock_ms"} <= set(move["required"])
    assert json.loads(game_record_schema_text()) == schema
