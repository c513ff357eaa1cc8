"""The arena's files: output written so that a reader, or a referee killed mid-write, never sees half of one;
users' input files (configs, openings, bot files) read with a size limit and a message naming the file.

No output file is opened through a symbolic link (`open_output`, O_NOFOLLOW): one planted in the output
directory (`run.lock -> ~/.bashrc`) would otherwise have its target truncated or appended to. Files
replaced whole (`write_text_atomic`) are safe by construction: the rename replaces a link, never follows it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO, cast


def write_text_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write `text` (a string, or pieces of one) to `path`: readers see the old content or the new, never a mix.

    The text goes to a temporary file beside `path`, is flushed to disk, then renamed over `path`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())  # mkstemp makes it 0600; a record is as readable as any file
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


class UnsafeOutputError(OSError):
    """An output file that is a symbolic link (or a hard link, or not a regular file): refused, so its target is
    left alone."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            errno.ELOOP,
            f"{path} is a symbolic link, a hard link or not a regular file; the arena does not write through it"
            " (its target would be overwritten). Remove it, or choose another output directory (--out DIR)",
        )
        self.path = path

    def __str__(self) -> str:
        return str(self.strerror)


def open_output_fd(path: Path, flags: int, mode: int = 0o666) -> int:
    """os.open for an output file, never through a symbolic link and only onto a regular file (UnsafeOutputError)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafeOutputError(path) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:  # a FIFO, a device or a hard link planted there
        os.close(fd)
        raise UnsafeOutputError(path)
    os.set_blocking(fd, True)
    return fd


def open_output(path: Path, mode: str, *, line_buffered: bool = True) -> TextIO:
    """A text file in an output directory opened with `mode` ("w", "a", "a+"), not through a symbolic link;
    `line_buffered`: each line is written as it ends (else when the buffer fills, or at `flush`)."""
    flags = {"w": os.O_WRONLY | os.O_CREAT, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}
    flags["a+"] = os.O_RDWR | os.O_CREAT | os.O_APPEND
    fd = open_output_fd(path, flags[mode])
    if mode == "w":
        os.ftruncate(fd, 0)  # after the checks (O_TRUNC would cut a hard-linked file before them)
    line = line_buffered and mode != "a+"
    return cast(TextIO, os.fdopen(fd, mode, encoding="utf-8", buffering=1 if line else -1))


def refuse_link(path: Path) -> None:
    """UnsafeOutputError when `path` is a symbolic link (a file a library opens by name: the database, the logs)."""
    if path.is_symlink():
        raise UnsafeOutputError(path)


def append_line(path: Path, line: str) -> None:
    """Append one line (newline included) whole or not at all: on an error (a full disk) the file is cut back to
    its size before, so a reader of a line-per-record file never meets half a record. The error is raised."""
    data = line.encode()
    fd = open_output_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def current_umask() -> int:
    """The process's umask, read without changing it where the system shows it (Linux), so threads are safe."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: the only portable way to read it is to set it and put it back
    os.umask(mask)
    return mask


class InputFileError(ValueError):
    """A user's input file that is too large or not UTF-8 text; the message names the file and the fix."""


def read_input_text(path: Path, what: str, *, max_bytes: int) -> str:
    """The text of a user's input file (`what` names it: "config file"), read as UTF-8.

    OSError (FileNotFoundError, PermissionError, ...) as opening the file raises it; InputFileError when
    it holds more than `max_bytes` or is not UTF-8 text (a binary file given by mistake), so the user gets
    one line naming the file instead of a decoding traceback or a minute of silence.
    """
    with path.open("rb") as file:
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputFileError(
            f"{path}: the {what} is larger than {_size(max_bytes)}, more than any real one; check that it is the"
            " right file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputFileError(
            f"{path}: the {what} is not UTF-8 text (byte {error.start} is {data[error.start : error.start + 1]!r});"
            " give a text file saved as UTF-8"
        ) from None


def _size(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count >> 10} KiB"


class OutputDirError(Exception):
    """The output directory cannot be written; the message names it, says why and what to do."""


def prepare_output_dir(path: Path) -> None:
    """Create `path` (and parents) and check that files can be created in it; OutputDirError otherwise.

    Done before anything else is written, so that a read-only or missing mount is one clear line rather
    than a traceback from whichever write happens to come first (the lock, the logs, the database).
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise OutputDirError(
            f"cannot write to the output directory {path} ({error.strerror or error}); make it writable or choose"
            " another one (--out DIR)"
        ) from None


def disk_full_in(error: BaseException) -> BaseException | None:
    """The disk-full error in `error` or in the exception groups it holds (a nursery's), or None."""
    if is_disk_full(error):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = disk_full_in(inner)
            if found is not None:
                return found
    return None


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` is the file system running out of space (or of the user's quota), from a file or SQLite."""
    if isinstance(error, sqlite3.Error):
        return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)
