"""Text a bot wrote, made safe for the operator's terminal.

A bot controls its stderr, its announced name and parts of every forfeit reason. Written raw, an escape
sequence in them could clear the screen, retitle the window, recolour or hide what follows, or move the
cursor to overwrite earlier lines. `printable` is the one function every printing path passes such text
through: control characters (C0 but newline and tab, DEL, C1) and the Unicode bidirectional overrides that
reorder what is shown become visible escapes (`\\x1b`, `\\u202e`), so the text is shown, never obeyed.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character and bidi override shown as an escape; newlines and tabs kept."""
    return _UNSAFE.sub(_escape, text)
