"""The published JSON Schema of game records describes the record (its drift test is in test_schema.py)."""

from __future__ import annotations

from referee.record import game_record_schema


def test_schema_describes_every_record_field() -> None:
    schema = game_record_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert schema["additionalProperties"] is False
    expected = {"game_id", "black", "white", "settings", "result", "termination", "reason", "final_position"}
    assert expected <= set(schema["required"])
    move = schema["$defs"]["MoveRecord"]
    assert {"color", "move", "elapsed_ms", "clock_ms"} <= set(move["required"])
