"""Verify a bundle before anything in it runs: every file listed in SHA256SUMS and matching it, a
manifest this dbench understands naming only files of the bundle, and no graph whose external data
points anywhere but inside it (dbench.sources.folder runs a bundle only after this)."""

from __future__ import annotations

import json
from pathlib import Path

import onnx

from dbench.bundle.checksums import CHECKSUMS, digest, parse_checksums
from dbench.bundle.external import external_locations
from dbench.bundle.members import check_name
from dbench.errors import InputError
from dbench.gen.manifest import MANIFEST, check_version

REEXPORT = "copy the bundle again or re-export it with `dbench export`"


def _check_checksums(members: dict[str, bytes], where: str) -> None:
    if CHECKSUMS not in members:
        raise InputError(f"{where} has no {CHECKSUMS}, so it cannot be verified; make bundles with `dbench export`")
    try:
        sums = parse_checksums(members[CHECKSUMS].decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{where}: {CHECKSUMS} is not text; {REEXPORT}") from None
    for name in sorted(set(members) - set(sums) - {CHECKSUMS}):
        raise InputError(
            f"{where}: {name!r} is not listed in {CHECKSUMS} (added after export?); remove it or re-export the bundle"
        )
    for name in sorted(set(sums) - set(members)):
        raise InputError(f"{where}: {CHECKSUMS} lists {name!r}, which is missing; {REEXPORT}")
    for name, expected in sorted(sums.items()):
        check_name(name, f"{where}: {CHECKSUMS}")
        if digest(members[name]) != expected:
            raise InputError(
                f"{where}: {name!r} does not match its checksum in {CHECKSUMS} (changed or damaged since export); "
                f"{REEXPORT}"
            )


def _check_manifest(members: dict[str, bytes], where: str) -> None:
    if MANIFEST not in members:
        raise InputError(f"{where} has no {MANIFEST}; make bundles with `dbench export`")
    try:
        data = json.loads(members[MANIFEST])
        check_version(data.get("manifest_version"), Path(where) / MANIFEST)
        files = [entry["file"] for entry in data["graphs"]]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as err:
        raise InputError(f"{where}: {MANIFEST} is malformed ({type(err).__name__}: {err}); {REEXPORT}") from None
    for name in files:
        if not isinstance(name, str) or name not in members or name in (MANIFEST, CHECKSUMS):
            raise InputError(
                f"{where}: {MANIFEST} names graph file {name!r}, which is not a graph of the bundle; {REEXPORT}"
            )


def _check_graphs(members: dict[str, bytes], where: str) -> None:
    for name, data in sorted(members.items()):
        if not name.endswith(".onnx"):
            continue
        try:
            model = onnx.load_model_from_string(data)
        except Exception as err:  # protobuf's DecodeError and friends
            raise InputError(
                f"{where}: {name!r} is not a readable ONNX graph ({type(err).__name__}); {REEXPORT}"
            ) from None
        for location in external_locations(model):
            check_name(location, f"{where}: {name} external data")
            if location not in members:
                raise InputError(
                    f"{where}: {name!r} reads external data from {location!r}, which is not a file of the bundle; "
                    f"{REEXPORT}"
                )


def verify_members(members: dict[str, bytes], where: str) -> None:
    """Raise a one-line InputError (exit 2) unless the members form an intact bundle."""
    _check_checksums(members, where)
    _check_manifest(members, where)
    _check_graphs(members, where)


ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


def is_bundle(path: Path) -> bool:
    """A tar archive by its name, or a folder holding SHA256SUMS (a plain `dbench gen` folder has none)."""
    return path.name.endswith(ARCHIVE_SUFFIXES) or (path / CHECKSUMS).exists() or (path / CHECKSUMS).is_symlink()
