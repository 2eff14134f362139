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


def read_manifest(folder: Path) -> list[Entry]:
    """The entries of `folder/manifest.json`, or a clear error when it is missing or malformed."""
    path = folder / MANIFEST
    if not path.is_file():
        raise DbenchError(f"no {MANIFEST} in {folder}; generate the graphs with `dbench gen --out {folder.parent}` or point --graphs at a folder made by dbench gen")
    try:
        data = json.loads(path.read_text())
        return [Entry(GraphSpec.from_dict({k: v for k, v in e.items() if k not in ("file", "sha256")}), e["file"], e["sha256"])
                for e in data["graphs"]]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise DbenchError(f"{path} is malformed ({type(err).__name__}: {err}); regenerate it with `dbench gen --force`") from None


def write_manifest(folder: Path, entries: list[Entry]) -> None:
    """Write the manifest deterministically (same entries, same bytes)."""
    data = {
        "manifest_version": MANIFEST_VERSION,
        "opset": OPSET,
        "ir_version": IR_VERSION,
        "graphs": [e.to_dict() for e in entries],
    }
    (folder / MANIFEST).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
