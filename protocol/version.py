"""The protocol version, in one place: the pydantic messages and the pydantic-free bot kit both import it."""

from __future__ import annotations

PROTOCOL_VERSION = 1
"""The version of the line protocol (PROTOCOL.md) that the referee and the kit speak."""
