"""Unpacking participants' uploads: good archives land in the entry's folder; every bad kind is refused with its
own message and leaves nothing behind; tokens are checked against their hashes."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from referee.ladder.uploads import (
    UploadError,
    UploadLimits,
    check_token,
    new_token,
    token_digest,
    unpack_upload,
)

LIMITS = UploadLimits(max_bytes=200_000, max_files=5, max_unpacked_bytes=100_000)


def zip_of(members: dict[str, bytes], *, attrs: dict[str, int] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (attrs or {}).get(name, stat.S_IFREG | 0o644) << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def tar_of(members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None, mode: str = "w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:  # type: ignore[call-overload]
        for info in members:
            content = (data or {}).get(info.name)
            if content is not None:
                info.size = len(content)
            archive.addfile(info, io.BytesIO(content) if content is not None else None)
    return buffer.getvalue()


def tar_member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_single_file_a_zip_and_a_tar_are_unpacked_into_the_folder(tmp_path: Path) -> None:
    one = unpack_upload("bot.py", b"print('hi')\n", tmp_path / "a" / "v1", LIMITS)
    assert contents(one) == {"bot.py": b"print('hi')\n"}
    zipped = unpack_upload("x.zip", zip_of({"bot.py": b"1", "lib/util.py": b"2"}), tmp_path / "b" / "v1", LIMITS)
    assert contents(zipped) == {"bot.py": b"1", "lib/util.py": b"2"}
    executable = tar_member("run.sh")
    executable.mode = 0o755
    tarred = unpack_upload("x.tgz", tar_of([executable], {"run.sh": b"#!/bin/sh\n"}), tmp_path / "c" / "v1", LIMITS)
    assert contents(tarred) == {"run.sh": b"#!/bin/sh\n"}
    assert (tarred / "run.sh").stat().st_mode & 0o111


BAD: dict[str, tuple[Callable[[], tuple[str, bytes]], str]] = {
    "too big": (lambda: ("bot.py", b"x" * 200_001), "at most 200,000"),
    "too many files": (lambda: ("x.zip", zip_of({f"f{i}.py": b"1" for i in range(6)})), "holds 6 files"),
    "zip traversal": (lambda: ("x.zip", zip_of({"../evil.py": b"1"})), "path traversal"),
    "tar traversal": (
        lambda: ("x.tar", tar_of([tar_member("ok/../../evil.py")], {"ok/../../evil.py": b"1"}, "w")),
        "path traversal",
    ),
    "zip absolute": (lambda: ("x.zip", zip_of({"/tmp/evil.py": b"1"})), "absolute path"),
    "tar absolute": (lambda: ("x.tgz", tar_of([tar_member("/etc/evil")], {"/etc/evil": b"1"})), "absolute path"),
    "tar symlink": (lambda: ("x.tgz", tar_of([tar_member("link", tarfile.SYMTYPE, "/etc/passwd")])), "symlink"),
    "zip symlink": (
        lambda: ("x.zip", zip_of({"link": b"/etc/passwd"}, attrs={"link": stat.S_IFLNK | 0o777})),
        "symlink",
    ),
    "tar hard link": (lambda: ("x.tgz", tar_of([tar_member("hard", tarfile.LNKTYPE, "/etc/passwd")])), "hard link"),
    "tar device": (lambda: ("x.tgz", tar_of([tar_member("null", tarfile.CHRTYPE)])), "device or special file"),
    "tar fifo": (lambda: ("x.tgz", tar_of([tar_member("pipe", tarfile.FIFOTYPE)])), "device or special file"),
    "zip bomb": (lambda: ("x.zip", zip_of({"zeros": bytes(5_000_000)})), "archive bomb"),
    "tar bomb": (lambda: ("x.tgz", tar_of([tar_member("zeros")], {"zeros": bytes(5_000_000)})), "archive bomb"),
    "file name with folders": (lambda: ("../bot.py", b"1"), "path traversal"),
    "empty": (lambda: ("bot.py", b""), "empty"),
    "damaged zip": (lambda: ("x.zip", b"PK\x03\x04" + b"\x00" * 40), "cannot be read"),
}


@pytest.mark.parametrize("kind", BAD)
def test_every_bad_upload_is_refused_with_its_own_message_and_leaves_nothing(tmp_path: Path, kind: str) -> None:
    make, message = BAD[kind]
    filename, data = make()
    folder = tmp_path / "entries" / "mine" / "v1"
    with pytest.raises(UploadError, match="refused" if kind != "empty" else "empty") as caught:
        unpack_upload(filename, data, folder, LIMITS)
    assert message in str(caught.value)
    assert not folder.exists()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # nothing written anywhere, even half an archive


def test_a_token_matches_its_participant_only() -> None:
    alice, bob = new_token(), new_token()
    stored = [("alice", token_digest(alice)), ("bob", token_digest(bob))]
    assert check_token(alice, stored) == "alice" and check_token(bob, stored) == "bob"
    assert check_token(alice + "x", stored) is None and check_token("", stored) is None
    assert alice not in str(stored)  # only hashes are kept
