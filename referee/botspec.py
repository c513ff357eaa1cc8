"""How to start a bot: its name, command line, working directory and environment.

The command line is a list of arguments and is never run through a shell.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class BotSpec(BaseModel):
    """A bot as the user configured it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64, description="The name in records and standings.")
    command: list[str] = Field(min_length=1, description="The program and its arguments (no shell).")
    dir: Path | None = Field(None, description="Working directory (default: the referee's).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
