"""The manifest: one JSON file per graph folder holding every GraphSpec, the graph file name and its
SHA-256, so the graphs can be run and verified on another machine without the catalog."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbench.errors import DbenchError
from dbench.gen.graph import IR_VERSION, OPSET, GraphSpec

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Entry:
    """A graph in a folder: its spec, file name and content hash."""

    spec: GraphSpec
    file: str
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.spec.to_dict(), "file": self.file, "sha256": self.sha256}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def confined_file(folder: Path, name: str) -> Path:
    """`folder/name` when `name` is a plain file name whose path, links resolved, stays inside
    `folder`; a one-line error otherwise (graph folders travel between machines: never read outside)."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise DbenchError(f"{folder / MANIFEST} names graph file {name!r}, which is not a plain file name inside the folder; regenerate the folder with `dbench gen`")
    path = folder / name
    if path.is_symlink() and not path.resolve().is_relative_to(folder.resolve()):
        raise DbenchError(f"{path} is a link to {path.resolve()}, outside the graph folder; replace it with the file itself")
    return path


def check_version(version: Any, where: Path) -> None:
    """Refuse a manifest written by a newer dbench (its fields may mean something this one ignores)."""
    if not isinstance(version, int) or version < 1:
        raise DbenchError(f"{where} has manifest_version {version!r}, not a version dbench writes; regenerate it with `dbench gen`")
    if version > MANIFEST_VERSION:
        raise DbenchError(f"{where} has manifest version {version}, newer than this dbench understands ({MANIFEST_VERSION}); "
                          f"upgrade dbench on this machine (pip install -U dbench) or export with the same dbench version")


def parse_manifest(text: str | bytes, path: Path) -> list[Entry]:
    """The entries of a manifest's text (read from `path`, named in errors), or a clear error when it
    is malformed or newer than this dbench."""
    try:
        data = json.loads(text)
        check_version(data.get("manifest_version"), path)
        return [Entry(GraphSpec.from_dict({k: v for k, v in e.items() if k not in ("file", "sha256")}), e["file"], e["sha256"])
                for e in data["graphs"]]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError, ValueError) as err:
        raise DbenchError(f"{path} is malformed ({type(err).__name__}: {err}); regenerate it with `dbench gen --force`") from None


def read_manifest(folder: Path) -> list[Entry]:
    """The entries of `folder/manifest.json`, or a clear error when it is missing, malformed, newer
    than this dbench, or names a file outside the folder."""
    path = folder / MANIFEST
    if not path.is_file():
        raise DbenchError(f"no {MANIFEST} in {folder}; generate the graphs with `dbench gen --out {folder.parent}` or point --graphs at a folder made by dbench gen")
    entries = parse_manifest(path.read_bytes(), path)
    for entry in entries:
        confined_file(folder, entry.file)
    return entries


def write_manifest(folder: Path, entries: list[Entry]) -> None:
    """Write the manifest deterministically (same entries, same bytes)."""
    data = {
        "manifest_version": MANIFEST_VERSION,
        "opset": OPSET,
        "ir_version": IR_VERSION,
        "graphs": [e.to_dict() for e in entries],
    }
    (folder / MANIFEST).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
