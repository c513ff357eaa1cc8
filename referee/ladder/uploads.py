"""Participants' uploads: tokens, and a bot (one file, or a zip or tar archive) unpacked into its entry's folder.

Tokens: `new_token()` is shown once to the organiser; the ladder keeps only its SHA-256 (`token_digest`), and
`check_token` compares a presented token's digest with every stored one with `hmac.compare_digest` (constant time,
and no early exit on the first match: the time says nothing about which participant or how many there are).

Unpacking refuses, with one clear message each (`UploadError`): a file over `max_bytes`, an archive of more than
`max_files` members, a member whose path is absolute or climbs out (`..`), a symlink or hard link, a device, FIFO
or other special file, and an archive that unpacks to more than `max_unpacked_bytes` (an archive bomb: the bytes
are counted as they are written, whatever the archive claims). Everything is written below a fresh folder of the
entry's (files created with O_EXCL and O_NOFOLLOW, modes without set-uid bits or execute bits for others), which
is renamed into place only once all of it is in: a refused upload leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import re
import secrets
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "ORGANISER",
    "UploadError",
    "UploadLimits",
    "check_token",
    "new_token",
    "token_digest",
    "unpack_upload",
]

ORGANISER = "*organiser*"
"""The tokens table's name for the organiser's token (`alternator ladder DIR token add --organiser`): it reads
every entry's fault reasons and stderr logs; no participant may take the name."""
ENTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
"""An uploaded entry's name: letters, digits, `_` and `-` (it names a folder and appears in URLs)."""
CHUNK = 1 << 16


class UploadError(ValueError):
    """An upload the ladder refuses; the message says what is wrong and what is allowed."""


@dataclass(frozen=True)
class UploadLimits:
    max_bytes: int = 8 << 20
    """The upload itself (the file or the archive)."""
    max_files: int = 200
    """Members of an archive."""
    max_unpacked_bytes: int = 64 << 20
    """What an archive unpacks to, all members together."""


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_token(token: str, stored: Sequence[tuple[str, str]]) -> str | None:
    """The participant whose token this is, or None; every stored digest is compared, in constant time each."""
    digest = token_digest(token)
    found = None
    for participant, expected in stored:
        if hmac.compare_digest(digest.encode(), expected.encode()):
            found = participant
    return found


def check_entry_name(name: str) -> str:
    if not ENTRY_NAME.fullmatch(name):
        raise UploadError(
            f"{name[:60]!r} is not a usable entry name: give 1 to 40 letters, digits, '_' or '-', starting with a"
            " letter or digit"
        )
    return name


def _member_path(name: str) -> PurePosixPath:
    """An archive member's path, checked: relative, no `..`, not empty."""
    text = name.replace("\\", "/")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise UploadError(f"refused: {name!r} is an absolute path; an archive may hold relative paths only")
    path = PurePosixPath(text)
    if ".." in path.parts:
        raise UploadError(f"refused: {name!r} climbs out of the archive (path traversal with '..')")
    parts = [part for part in path.parts if part not in ("", ".")]
    if not parts:
        raise UploadError(f"refused: {name!r} is not a usable file name")
    return PurePosixPath(*parts)


class _Writer:
    """Writes members below `root`, counting every byte against the limits."""

    def __init__(self, root: Path, limits: UploadLimits) -> None:
        self.root = root
        self.limits = limits
        self.written = 0
        self.files = 0

    def directory(self, path: PurePosixPath) -> None:
        target = self._target(path)
        target.mkdir(parents=True, exist_ok=True)

    def file(self, path: PurePosixPath, source: io.BufferedIOBase | io.RawIOBase | Iterator[bytes], mode: int) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise UploadError(f"refused: the archive holds more than {self.limits.max_files} files")
        target = self._target(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(target, flags, 0o755 if mode & 0o111 else 0o644)
        except FileExistsError:
            raise UploadError(f"refused: {str(path)!r} appears twice in the archive") from None
        with os.fdopen(fd, "wb") as out:
            chunks = source if isinstance(source, Iterator) else iter(lambda: source.read(CHUNK), b"")
            for chunk in chunks:
                self.written += len(chunk)
                if self.written > self.limits.max_unpacked_bytes:
                    raise UploadError(
                        f"refused: the archive unpacks to more than {self.limits.max_unpacked_bytes >> 20} MiB (an"
                        " archive bomb?); make it smaller"
                    )
                out.write(chunk)

    def _target(self, path: PurePosixPath) -> Path:
        target = self.root.joinpath(*path.parts)
        resolved = target.parent.resolve() / target.name
        if not resolved.is_relative_to(self.root.resolve()):
            raise UploadError(f"refused: {str(path)!r} would be written outside the entry's folder")
        return target


def _unpack_zip(data: bytes, writer: _Writer) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
        if len(members) > writer.limits.max_files:
            raise UploadError(f"refused: the archive holds {len(members)} files; at most {writer.limits.max_files}")
        for info in members:
            path = _member_path(info.filename)
            kind = stat.S_IFMT(info.external_attr >> 16)
            if kind == stat.S_IFLNK:
                raise UploadError(
                    f"refused: {info.filename!r} is a symlink; an archive may hold files and folders only"
                )
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise UploadError(f"refused: {info.filename!r} is a device or special file; files and folders only")
            if info.is_dir():
                writer.directory(path)
                continue
            if info.flag_bits & 0x1:
                raise UploadError(f"refused: {info.filename!r} is encrypted")
            with archive.open(info) as source:
                writer.file(path, source, info.external_attr >> 16)


def _unpack_tar(data: bytes, writer: _Writer) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        count = 0
        for member in archive:
            count += 1
            if count > writer.limits.max_files:
                raise UploadError(f"refused: the archive holds more than {writer.limits.max_files} files")
            path = _member_path(member.name)
            if member.issym() or member.islnk():
                raise UploadError(
                    f"refused: {member.name!r} is a {'symlink' if member.issym() else 'hard link'}; an archive may"
                    " hold files and folders only"
                )
            if member.isdev() or member.isfifo() or not (member.isfile() or member.isdir()):
                raise UploadError(f"refused: {member.name!r} is a device or special file; files and folders only")
            if member.isdir():
                writer.directory(path)
                continue
            source = archive.extractfile(member)
            assert source is not None  # a regular file
            with source:
                writer.file(path, source, member.mode)


def archive_kind(filename: str, data: bytes) -> str:
    """zip, tar or file: what the upload is, by its content (a name may lie)."""
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            archive.next()
        return "tar"
    except (tarfile.TarError, EOFError, OSError):
        return "file"


def unpack_upload(filename: str, data: bytes, folder: Path, limits: UploadLimits) -> Path:
    """Unpack an upload into the new folder `folder` (which must not exist) and return it; UploadError says why not.

    A zip or tar archive is unpacked (a single top folder holding everything is kept as it is: the command runs in
    `folder`); anything else is saved as the one file `filename` (its base name, checked).
    """
    if len(data) > limits.max_bytes:
        raise UploadError(f"refused: the upload is {len(data):,} bytes; at most {limits.max_bytes:,}")
    if not data:
        raise UploadError("refused: the upload is empty; send the bot's file or a zip/tar archive with -F file=@...")
    folder.parent.mkdir(parents=True, exist_ok=True)
    incoming = folder.parent / f".incoming-{secrets.token_hex(6)}"
    incoming.mkdir()
    try:
        writer = _Writer(incoming, limits)
        kind = archive_kind(filename, data)
        try:
            if kind == "zip":
                _unpack_zip(data, writer)
            elif kind == "tar":
                _unpack_tar(data, writer)
            else:
                path = _member_path(filename)
                if len(path.parts) != 1:
                    raise UploadError(f"refused: the file name {filename!r} has folders in it; give a plain file name")
                writer.file(path, iter([data]), 0o644)
        except (zipfile.BadZipFile, tarfile.TarError, EOFError) as error:
            raise UploadError(f"refused: the archive cannot be read ({error}); send a valid zip or tar file") from None
        os.rename(incoming, folder)
    except BaseException:
        shutil.rmtree(incoming, ignore_errors=True)
        raise
    return folder
