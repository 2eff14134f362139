"""Reading a bundle's members (name -> bytes) from a tar archive or a folder, refusing anything that
is not a regular file with a plain name (no `..`, no absolute path, no subfolder, no link, device
or fifo) and anything beyond the size and count bounds, before a byte of it is written anywhere."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path, PurePosixPath

from dbench.errors import InputError

MAX_MEMBERS = 4096
"""Files in one bundle: the whole DeepBench catalog in every precision is about 2,000 graphs."""
MAX_MEMBER_BYTES = 64 * 2**20
"""One file: graphs hold no weight data, so the largest DeepBench graph is a few KiB."""
MAX_TOTAL_BYTES = 512 * 2**20
"""All files together, as unpacked (bounds what a compressed bundle can expand to)."""


def check_name(name: str, where: str) -> None:
    """Refuse a member name that is not a plain file name at the bundle's top level."""
    path = PurePosixPath(name)
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise InputError(
            f"{where}: member {name!r} has an absolute path; refusing the bundle (re-export it with `dbench export`)"
        )
    if ".." in path.parts:
        raise InputError(
            f"{where}: member {name!r} escapes the bundle with '..'; refusing the bundle (re-export it with "
            "`dbench export`)"
        )
    if len(path.parts) != 1 or "\\" in name or "\0" in name or name in (".", ""):
        raise InputError(
            f"{where}: member {name!r} is not a plain file name (bundles are flat); re-export it with `dbench export`"
        )


def _check_count(count: int, total: int, where: str) -> None:
    if count > MAX_MEMBERS:
        raise InputError(
            f"{where} holds more than {MAX_MEMBERS} files; export fewer graphs per bundle (--ops, --precision)"
        )
    if total > MAX_TOTAL_BYTES:
        raise InputError(
            f"{where} unpacks to more than {MAX_TOTAL_BYTES // 2**20} MiB; export fewer graphs per bundle (--ops, "
            "--precision)"
        )


def _check_size(name: str, size: int, where: str) -> None:
    if size > MAX_MEMBER_BYTES:
        raise InputError(
            f"{where}: member {name!r} is {size} bytes, more than the {MAX_MEMBER_BYTES // 2**20} MiB a bundle "
            "file may hold; refusing the bundle"
        )


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.issym() or member.islnk():
        return f"a link (to {member.linkname!r})"
    if member.isdir():
        return "a folder"
    if member.ischr() or member.isblk():
        return "a device"
    if member.isfifo():
        return "a fifo"
    return "not a regular file" if not member.isreg() else ""


def read_tar(path: Path) -> dict[str, bytes]:
    """The members of a (gzipped) tar bundle, read into memory after each header is checked."""
    where = str(path)
    members: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar:  # headers one by one: a bad one stops before its data is decompressed
                check_name(member.name, where)
                kind = _tar_kind(member)
                if kind:
                    raise InputError(
                        f"{where}: member {member.name!r} is {kind}; bundles hold regular files only (re-export "
                        "it with `dbench export`)"
                    )
                if member.name in members:
                    raise InputError(
                        f"{where}: member {member.name!r} appears twice; refusing the bundle (re-export it with "
                        "`dbench export`)"
                    )
                if hasattr(tarfile, "data_filter"):
                    tarfile.data_filter(member, "/nonexistent-bundle-root")  # the stdlib's own 'data' checks too
                _check_size(member.name, member.size, where)
                total += member.size
                _check_count(len(members) + 1, total, where)
                data = tar.extractfile(member).read(member.size + 1)
                if len(data) != member.size:
                    raise InputError(f"{where}: member {member.name!r} is truncated; copy the bundle again")
                members[member.name] = data
    except (tarfile.TarError, EOFError, OSError, ValueError) as err:  # FilterError is a TarError
        reason = str(err).splitlines()[0].rstrip(":") if str(err) else type(err).__name__
        raise InputError(
            f"{where} is not a readable bundle ({reason}); copy it again or re-export it with `dbench export`"
        ) from None
    return members


def read_folder(folder: Path) -> dict[str, bytes]:
    """The files of an unpacked bundle folder; links, subfolders, devices and fifos are refused."""
    where = str(folder)
    members: dict[str, bytes] = {}
    total = 0
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_symlink():
                raise InputError(
                    f"{where}: {entry.name!r} is a link (to {os.readlink(entry.path)!r}); bundles hold regular "
                    "files only: copy the file itself"
                )
            if not entry.is_file(follow_symlinks=False):
                kind = "a folder" if entry.is_dir(follow_symlinks=False) else "a device, fifo or socket"
                raise InputError(
                    f"{where}: {entry.name!r} is {kind}; bundle folders hold regular files only: remove it"
                )
            size = entry.stat(follow_symlinks=False).st_size
            _check_size(entry.name, size, where)
            total += size
            _check_count(len(members) + 1, total, where)
            members[entry.name] = Path(entry.path).read_bytes()
    return members
