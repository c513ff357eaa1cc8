"""The ladder's JSON API, as models: what `GET /api/leaderboard` returns, and its published schema
(`referee/schema/ladder_leaderboard.json`, written by `alternator schema --write`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["active", "provisional", "suspended", "retired"]


class LeaderboardEntry(BaseModel):
    """One entry on the leaderboard: its current version's figures."""

    model_config = ConfigDict(extra="forbid")

    rank: int | None = Field(description="Its place (1 is the best rating); null for a retired entry.")
    name: str = Field(description="The entry's name.")
    rating: float = Field(description="The current version's Glicko-2 rating (1500 to start).")
    uncertainty: float = Field(description="Its rating deviation: one standard deviation (350 to start).")
    games: int = Field(description="Games the current version has played.")
    wins: int = Field(description="Of those, won.")
    draws: int = Field(description="Of those, drawn.")
    losses: int = Field(description="Of those, lost.")
    trend: float | None = Field(description="Rating change over its last 10 games (null: no games yet).")
    status: Status = Field(
        description="active; provisional (active, rating not settled: uncertainty above 110); suspended (see"
        " reason); retired."
    )
    reason: str | None = Field(
        description="Why it is suspended: only for the entry's owner and the organiser (a request with their"
        " token); null otherwise, and always null on the public leaderboard."
    )
    version: int = Field(description="The current version's number (1, 2, ...: each update adds one).")


class GameInProgress(BaseModel):
    """A game being played now."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The game's id (its record will have it).")
    black: str = Field(description="Black's version key (NAME.vN).")
    white: str = Field(description="White's version key (NAME.vN).")
    since: str = Field(description="When it started (ISO 8601, UTC).")


class Leaderboard(BaseModel):
    """The ladder's leaderboard: every entry, best first, and the games in progress."""

    model_config = ConfigDict(extra="forbid")

    generated: str = Field(description="When this was computed (ISO 8601, UTC).")
    paused: bool = Field(description="Whether the organiser paused the ladder (no new games).")
    games: int = Field(description="Games played in the ladder, all versions.")
    entries: list[LeaderboardEntry] = Field(description="The entries: ranked ones by rating, then retired ones.")
    playing: list[GameInProgress] = Field(description="Games in progress.")


FAULT_TERMINATIONS = ("crash", "protocol", "unresponsive")
"""Forfeits whose reason says what went wrong inside a bot (its crash message, what it sent, its stderr): told to
the entry's owner and the organiser only."""
PRIVATE_NOTE = "the details are shown to the entry's owner and the organiser"


def public_reason(termination: str, reason: str) -> str:
    """What everyone may read of why a game ended: a fault's reason names the side, the bot and the kind of fault
    only (`white (alice.v1) forfeits: crash`); other reasons as they are."""
    if termination not in FAULT_TERMINATIONS:
        return reason
    side, found, _ = reason.partition(") ")
    head = f"{side}) " if found else ""
    return f"{head}forfeits: {termination} ({PRIVATE_NOTE})"


def public_record(record: dict[str, Any]) -> dict[str, Any]:
    """A game record (as JSON) as everyone may read it: a fault's reason shortened, no stderr lines."""
    return {
        **record,
        "reason": public_reason(str(record.get("termination", "")), str(record.get("reason", ""))),
        "stderr_tail": [],
    }


def leaderboard_schema() -> dict[str, Any]:
    """The published JSON Schema of `GET /api/leaderboard`."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Alternator ladder leaderboard v1",
        "description": "GET /api/leaderboard of `alternator ladder DIR --serve`: every entry's rating, uncertainty,"
        " games, W-D-L, trend and status, and the games in progress.",
        **{k: v for k, v in Leaderboard.model_json_schema().items() if k not in ("title", "description")},
    }
