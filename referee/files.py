"""Writing the arena's output files so that a reader, or a referee killed mid-write, never sees half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def write_text_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write `text` (a string, or pieces of one) to `path`: readers see the old content or the new, never a mix.

    The text goes to a temporary file beside `path`, is flushed to disk, then renamed over `path`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as file:
            if isinstance(text, str):
                file.write(text)
            else:
                file.writelines(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
