"""Output files are replaced whole (never half, no temporary left, with the umask); input files are bounded text."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.host.limits import MAX_BOTS
from referee.outputs.files import (
    InputFileError,
    current_umask,
    prepare_output_dir,
    read_input_text,
    write_text_atomic,
)


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


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_are_written_with_the_umask_like_any_other_tool(tmp_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        assert current_umask() == umask
        write_text_atomic(tmp_path / "game-001.json", "{}")
        (tmp_path / "plain.txt").write_text("x")  # what open() would give
    finally:
        os.umask(previous)
    mode = stat.S_IMODE((tmp_path / "game-001.json").stat().st_mode)
    assert mode == 0o666 & ~umask == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)


def test_an_input_file_is_read_as_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "openings.txt"
    path.write_text("d5d4 é\n", encoding="utf-8")
    assert read_input_text(path, "openings file", max_bytes=100) == "d5d4 é\n"


def test_a_binary_input_file_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "tournament.toml"
    path.write_bytes(b"games = 2\n\x89PNG\r\n\x1a\n\x00\xff")
    with pytest.raises(InputFileError) as error:
        read_input_text(path, "config file", max_bytes=1000)
    assert str(error.value) == (
        f"{path}: the config file is not UTF-8 text (byte 10 is b'\\x89'); give a text file saved as UTF-8"
    )


def test_an_input_file_over_its_limit_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "huge.toml"
    path.write_bytes(b"#" * (3 << 20))
    with pytest.raises(InputFileError, match=r"huge.toml: the config file is larger than 1 MiB"):
        read_input_text(path, "config file", max_bytes=1 << 20)


def test_binary_or_huge_configs_openings_and_bot_files_are_one_line_errors(tmp_path: Path) -> None:
    from referee.run.botspec import BotSpecError, load_bot_file
    from referee.run.config import ConfigError, load_config
    from referee.run.schedule import OpeningsFileError, read_openings_file

    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(128, 256)))
    for load, error_type in (
        (load_config, ConfigError),
        (lambda p: read_openings_file(p, 8, 8, 3.5), OpeningsFileError),
        (load_bot_file, BotSpecError),
    ):
        with pytest.raises(error_type) as error:
            load(binary)
        assert str(error.value).startswith(f"{binary}: the ") and "is not UTF-8 text" in str(error.value)
        assert "\n" not in str(error.value)


def test_a_config_with_120000_bots_is_refused_quickly_with_the_limit(tmp_path: Path) -> None:
    from referee.run.config import ConfigError, load_config, parse_config

    path = tmp_path / "tournament.toml"
    path.write_text("".join(f'[[bots]]\nname = "bot{i}"\ncommand = "random"\n' for i in range(120_000)))
    assert path.stat().st_size > 4 << 20
    with pytest.raises(ConfigError, match=r"the config file is larger than 1 MiB"):
        load_config(path)
    # Under the size limit, the number of bots has its own limit.
    bots = [{"name": f"bot{i}", "command": "random"} for i in range(MAX_BOTS + 1)]
    with pytest.raises(ConfigError, match=rf"t.toml: bots: more than {MAX_BOTS} bots; split them"):
        parse_config({"bots": bots}, source="t.toml")


BWRAP = shutil.which("bwrap")


def in_bwrap(args: list[str], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in this Python inside bubblewrap with extra mount `args` (a real read-only or full file system)."""
    assert BWRAP is not None
    return subprocess.run(
        [BWRAP, "--dev-bind", "/", "/", *args, sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap (bwrap) for a real read-only mount")
def test_a_read_only_output_directory_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir()
    code = (
        "from pathlib import Path\nfrom referee.outputs.files import OutputDirError, prepare_output_dir\n"
        "for p in (Path('ro'), Path('ro/new/deeper')):\n"
        "    try:\n        prepare_output_dir(p)\n    except OutputDirError as e:\n        print(e)\n"
    )
    result = in_bwrap(["--ro-bind", str(tmp_path / "ro"), str(tmp_path / "ro")], code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"cannot write to the output directory {name} (Read-only file system); make it writable or choose another"
        " one (--out DIR)"
        for name in ("ro", "ro/new/deeper")
    ]
    prepare_output_dir(tmp_path / "rw" / "new")  # outside the sandbox it is writable
    assert list((tmp_path / "rw" / "new").iterdir()) == []  # and the probe is gone


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap (bwrap) for a real full file system")
def test_a_full_disk_is_recognised_from_a_file_write_and_from_sqlite(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sqlite3
        from pathlib import Path
        from referee.outputs.files import is_disk_full
        try:
            Path("full/big").write_bytes(bytes(200_000))
        except OSError as e:
            print("file", is_disk_full(e))
        Path("full/big").unlink()
        Path("full/pad").write_bytes(bytes(60_000))
        db = sqlite3.connect("full/t.db")
        try:
            db.execute("CREATE TABLE t (x)")
            db.execute("INSERT INTO t VALUES (?)", (bytes(100_000),))
            db.commit()
        except sqlite3.Error as e:
            print("sqlite", is_disk_full(e))
        print("other", is_disk_full(OSError(2, "x")), is_disk_full(sqlite3.OperationalError("x")))
        """
    )
    (tmp_path / "full").mkdir()
    result = in_bwrap(["--size", "65536", "--tmpfs", str(tmp_path / "full")], code, tmp_path)
    assert result.stdout.splitlines() == ["file True", "sqlite True", "other False False"], result.stderr


def test_a_line_that_cannot_be_appended_whole_is_not_appended_at_all(tmp_path: Path) -> None:
    # A 64 KiB disk: the line that does not fit leaves the file as it was, never half a record.
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    disk = tmp_path / "disk"
    disk.mkdir()
    code = (
        "import sys; from pathlib import Path; from referee.outputs.files import append_line\n"
        f"path = Path({str(disk / 'games.jsonl')!r})\n"
        "append_line(path, '{\"game\": 1}\\n')\n"
        "try:\n"
        "    append_line(path, '{\"game\": 2, \"pad\": \"' + 'x' * 200_000 + '\"}\\n')\n"
        "except OSError as error:\n"
        "    print('refused', error.errno)\n"
        "print(repr(path.read_text()))\n"
    )
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", "--size", str(64 * 1024), "--tmpfs", str(disk), "--chdir", str(root),
         sys.executable, "-c", code],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["refused 28", repr('{"game": 1}\n')]
