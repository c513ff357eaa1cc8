"""`alternator schema`: print the published JSON Schemas, or rewrite the committed copies.

Every JSON the arena writes or speaks has a schema generated from its pydantic model: the two
directions of the bot protocol, game records, standings, tournament events and match summaries. The files are
committed (under `protocol/schema/` and `referee/schema/`, shipped as package data) so that people
working in other languages can read them; a test fails when one drifts from its model, and
`alternator schema --write` regenerates them all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import protocol
import referee

HELP = "print the JSON Schemas of the protocol, game records, standings and events (--write regenerates them)"

PROTOCOL_DIR = Path(protocol.__file__).resolve().parent / "schema"
REFEREE_DIR = Path(referee.__file__).resolve().parent / "schema"

# protocol.messages.SCHEMA_DIRECTIONS, written out: importing it would load pydantic for `--help`.
PROTOCOL_NAMES = ("referee_to_bot", "bot_to_referee")
# Every schema, in the order they are printed.
NAMES = (
    *PROTOCOL_NAMES,
    "game_record",
    "standings",
    "events",
    "match_summary",
    "ladder_leaderboard",
    "games_page",
)
ALIASES = {"protocol": PROTOCOL_NAMES, "all": NAMES}


def _source(name: str) -> Callable[[], dict[str, Any]]:
    # Imported on demand: the models pull in pydantic, which `--help` does not need.
    if name in PROTOCOL_NAMES:
        from protocol.messages import json_schemas

        return lambda: json_schemas()[name]
    if name == "game_record":
        from referee.record import game_record_schema

        return game_record_schema
    if name == "standings":
        from referee.stats.standings import standings_json_schema

        return standings_json_schema
    if name == "match_summary":
        from referee.stats.head_to_head import match_summary_schema

        return match_summary_schema
    if name == "games_page":
        from referee.outputs.report import games_page_schema

        return games_page_schema
    if name == "ladder_leaderboard":
        from referee.ladder.api import leaderboard_schema

        return leaderboard_schema
    from referee.outputs.events import events_json_schema

    return events_json_schema


def schema_path(name: str) -> Path:
    """Where the committed schema called `name` lives."""
    return (PROTOCOL_DIR if name in PROTOCOL_NAMES else REFEREE_DIR) / f"{name}.json"


def schema(name: str) -> dict[str, Any]:
    """The schema called `name`, generated from its models now."""
    return _source(name)()


def schema_text(document: dict[str, Any]) -> str:
    """The committed text form of a schema: stable key order, two-space indent, final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name",
        nargs="?",
        default="all",
        choices=[*NAMES, *ALIASES],
        help="which schema: one of the names, 'protocol' (both directions) or 'all' (the default);"
        " several are printed as one JSON object keyed by name",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"rewrite the committed files (in {PROTOCOL_DIR} and {REFEREE_DIR}) instead of printing",
    )


def run(args: argparse.Namespace) -> int:
    names = ALIASES.get(args.name, (args.name,))
    if args.write:
        for name in names:
            path = schema_path(name)
            text = schema_text(schema(name))
            changed = not path.exists() or path.read_text(encoding="utf-8") != text
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"{'wrote' if changed else 'unchanged'} {path}", file=sys.stderr)
        return 0
    if len(names) == 1:
        sys.stdout.write(schema_text(schema(names[0])))
    else:
        sys.stdout.write(schema_text({name: schema(name) for name in names}))
    return 0
