"""The committed JSON Schemas match their models, document every field, and `alternator schema` prints them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol.messages import SCHEMA_DIRECTIONS, json_schemas
from referee.cli import main
from referee.commands import schema as schema_command
from referee.commands.schema import NAMES, PROTOCOL_NAMES, schema, schema_text


@pytest.mark.parametrize("name", NAMES)
def test_the_committed_schema_matches_the_models(name: str) -> None:
    path = schema_command.schema_path(name)
    committed = path.read_text(encoding="utf-8") if path.exists() else None
    assert committed == schema_text(schema(name)), (
        f"{path} is out of date with its models: regenerate it with `alternator schema --write` "
        "(or `python -m referee schema --write`) and commit the result"
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_published_schema_is_draft_2020_12_with_a_title(name: str) -> None:
    document = schema(name)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document.get("title") and document.get("description")


def test_the_command_names_the_protocol_directions_as_the_models_do() -> None:
    assert PROTOCOL_NAMES == SCHEMA_DIRECTIONS


def _models(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    # The objects: an enum such as Color has no fields to document.
    defs: dict[str, dict[str, Any]] = schema["$defs"]
    return {name: model for name, model in defs.items() if "enum" not in model}


@pytest.mark.parametrize("direction", SCHEMA_DIRECTIONS)
def test_every_message_and_field_is_documented_and_every_tag_required(direction: str) -> None:
    schema = json_schemas()[direction]
    assert schema["discriminator"]["propertyName"] == "type"
    for name, model in _models(schema).items():
        assert model.get("description"), f"{name} has no docstring"
        for field, spec in model["properties"].items():
            assert spec.get("description"), f"{name}.{field} has no description"
        if "type" in model["properties"]:
            assert "type" in model["required"], f"{name}.type has a default, so it drops out of `required`"


def test_bot_messages_forbid_extra_fields_and_referee_messages_allow_them() -> None:
    schemas = json_schemas()
    for ref in schemas["bot_to_referee"]["oneOf"]:
        model = _models(schemas["bot_to_referee"])[ref["$ref"].split("/")[-1]]
        assert model["additionalProperties"] is False
    for ref in schemas["referee_to_bot"]["oneOf"]:
        model = _models(schemas["referee_to_bot"])[ref["$ref"].split("/")[-1]]
        assert model["additionalProperties"] is True


def test_the_message_names_of_each_direction() -> None:
    schemas = json_schemas()
    assert set(schemas["referee_to_bot"]["discriminator"]["mapping"]) == {
        "hello",
        "new_game",
        "turn",
        "game_over",
        "ping",
        "quit",
    }
    assert set(schemas["bot_to_referee"]["discriminator"]["mapping"]) == {"hello", "ready", "move", "info", "pong"}


def test_the_command_prints_both_directions_as_one_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "protocol"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(json_schemas()))


def test_the_command_prints_every_schema_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == list(NAMES)
    assert printed["game_record"]["title"].startswith("Alternator game record")


def test_the_command_prints_one_schema_exactly_as_committed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "bot_to_referee"]) == 0
    assert capsys.readouterr().out == schema_command.schema_path("bot_to_referee").read_text(encoding="utf-8")


def test_write_regenerates_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(schema_command, "PROTOCOL_DIR", tmp_path / "protocol")
    monkeypatch.setattr(schema_command, "REFEREE_DIR", tmp_path / "referee")
    assert main(["schema", "--write"]) == 0
    for name in NAMES:
        folder = "protocol" if name in SCHEMA_DIRECTIONS else "referee"
        written = (tmp_path / folder / f"{name}.json").read_text(encoding="utf-8")
        assert written == schema_text(schema(name))
    assert capsys.readouterr().err.count("wrote") == len(NAMES)
    assert main(["schema", "--write"]) == 0
    assert capsys.readouterr().err.count("unchanged") == len(NAMES)
