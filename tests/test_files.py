"""Output files are replaced whole: the old content or the new, never half, and no temporary file left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.files import write_text_atomic


def test_writes_a_string_or_pieces_and_replaces_the_old_content(tmp_path: Path) -> None:
    path = tmp_path / "out" / "games.jsonl"
    write_text_atomic(path, "old\n")
    write_text_atomic(path, (f"{n}\n" for n in range(3)))
    assert path.read_text(encoding="utf-8") == "0\n1\n2\n"
    assert [p.name for p in path.parent.iterdir()] == ["games.jsonl"]


def test_a_failure_midway_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "standings.md"
    write_text_atomic(path, "complete\n")

    def pieces() -> Iterator[str]:
        yield "half of a new"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_text_atomic(path, pieces())
    assert path.read_text(encoding="utf-8") == "complete\n"
    assert [p.name for p in tmp_path.iterdir()] == ["standings.md"]
