"""Hints for the classic mistakes of a new bot, added to the reason of the forfeit they cause.

A forfeit reason says what the bot did wrong; for a few mistakes every bot author makes once (output
left in a buffer, a kit bot started without the arena's Python) the cause is not obvious from that
alone, so the reason gets one more sentence saying what to check. Pure functions over text.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

_NO_OUTPUT = re.compile(r"no (hello|ready|move) within")
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(protocol|sample_bots|referee)(\.[\w.]+)?'")


def forfeit_hint(reason: str, stderr_tail: list[str], command: list[str]) -> str | None:
    """One sentence saying what to check for `reason` (a forfeit's), or None when there is nothing to add."""
    module = next((m for line in stderr_tail if (m := _MISSING_MODULE.search(line))), None)
    if module is not None:
        program = Path(command[0]).name if command else ""
        if command and not program.startswith("python"):
            script = command[0]
            return (
                f"hint: the arena's `{module.group(1)}` package is not importable by the Python in {script}'s"
                f" #! line; start it as `python3 {shlex.join([Path(script).name, *command[1:]])}` so that it runs"
                " with the arena's Python"
            )
        return (
            f"hint: the arena's `{module.group(1)}` package is not importable; install the arena in the Python"
            " that runs the bot (pip install alternator-arena) or set PYTHONPATH to the arena's folder"
        )
    found = _NO_OUTPUT.search(reason)
    if found is not None:
        return (
            f"hint: did the bot flush its standard output after writing its {found.group(1)}? Output to a pipe"
            " is buffered in most languages: flush after every line (Python: print(..., flush=True))"
        )
    return None


def with_hint(reason: str, stderr_tail: list[str], command: list[str]) -> str:
    """`reason`, followed by its hint when there is one."""
    hint = forfeit_hint(reason, stderr_tail, command)
    return reason if hint is None else f"{reason}; {hint}"
