"""`alternator schema`: print the JSON Schemas of protocol v1, or rewrite the committed copies.

The schemas are generated from the pydantic models in `protocol.messages`; the files in
`protocol/schema/` are committed so that people writing bots in other languages can read them, and a
test fails when they drift from the models.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import protocol

HELP = "print the JSON Schemas of the bot protocol (--write regenerates protocol/schema/*.json)"

# Next to the models, inside the `protocol` package (shipped as package data).
SCHEMA_DIR = Path(protocol.__file__).resolve().parent / "schema"


def schema_path(direction: str) -> Path:
    """Where the committed schema of one direction lives."""
    return SCHEMA_DIR / f"{direction}.json"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--direction",
        choices=["referee_to_bot", "bot_to_referee"],
        help="print only the schema of this direction (default: both, as one JSON object keyed by direction)",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"write protocol/schema/<direction>.json (in {SCHEMA_DIR}) instead of printing",
    )


def run(args: argparse.Namespace) -> int:
    from protocol.messages import SCHEMA_DIRECTIONS, json_schemas, schema_text

    schemas = json_schemas()
    directions = [args.direction] if args.direction else list(SCHEMA_DIRECTIONS)
    if args.write:
        SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
        for direction in directions:
            path = schema_path(direction)
            text = schema_text(schemas[direction])
            changed = not path.exists() or path.read_text(encoding="utf-8") != text
            path.write_text(text, encoding="utf-8")
            print(f"{'wrote' if changed else 'unchanged'} {path}", file=sys.stderr)
        return 0
    if args.direction:
        sys.stdout.write(schema_text(schemas[args.direction]))
    else:
        sys.stdout.write(json.dumps({d: schemas[d] for d in directions}, indent=2, ensure_ascii=False) + "\n")
    return 0
