"""The manifest: one JSON file per graph folder holding every GraphSpec, the graph file name and its
SHA-256, so the graphs can be run and verified on another machine without the catalog."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbench.catalog.select import SUITES
from dbench.errors import InputError
from dbench.gen.graph import IR_VERSION, OPSET, GraphSpec
from dbench.gen.precision import DTYPES

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
        raise InputError(
            f"{folder / MANIFEST} names graph file {name!r}, which is not a plain file name inside the folder; "
            "regenerate the folder with `dbench gen`"
        )
    path = folder / name
    if path.is_symlink() and not path.resolve().is_relative_to(folder.resolve()):
        raise InputError(
            f"{path} is a link to {path.resolve()}, outside the graph folder; replace it with the file itself"
        )
    return path


def check_version(version: Any, where: Path) -> None:
    """Refuse a manifest written by a newer dbench (its fields may mean something this one ignores)."""
    if not isinstance(version, int) or version < 1:
        raise InputError(
            f"{where} has manifest_version {version!r}, not a version dbench writes; regenerate it with `dbench gen`"
        )
    if version > MANIFEST_VERSION:
        raise InputError(
            f"{where} has manifest version {version}, newer than this dbench understands ({MANIFEST_VERSION}); "
            f"upgrade dbench on this machine (pip install -U dbench) or export with the same dbench version"
        )


TEXT_FIELDS = ("id", "kernel_id", "family", "op", "pass_name", "form", "precision", "file", "sha256")
COUNT_FIELDS = ("flops", "flops_executed", "seed")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_tensor(tensor: Any, where: str) -> None:
    if not isinstance(tensor, dict) or not isinstance(tensor.get("name"), str):
        raise ValueError(f"{where} must be an object with a name")
    where = f"{where} {tensor['name']}"
    shape = tensor.get("shape")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise ValueError(f"{where}: shape must be a list of non-negative integers, not {shape!r}")
    if tensor.get("dtype") not in DTYPES:
        raise ValueError(f"{where}: dtype {tensor.get('dtype')!r} is not one of {', '.join(DTYPES)}")
    for bound in ("low", "high", "zeros"):
        if bound in tensor and not isinstance(tensor[bound], (int, float)):
            raise ValueError(f"{where}: {bound} must be a number")


def _check_entry(entry: Any, index: int) -> None:
    """ValueError naming the graph and field whose value has the wrong type (a hand-edited manifest),
    so a run refuses it before any log exists instead of failing inside the worker."""
    if not isinstance(entry, dict):
        raise ValueError(f"graph {index} must be an object")
    where = f"graph {index} ({entry.get('id')!r})"
    for name in TEXT_FIELDS:
        if not isinstance(entry.get(name), str):
            raise ValueError(f"{where}: {name} must be text, not {entry.get(name)!r}")
    for name in COUNT_FIELDS:
        if not _is_count(entry.get(name)):
            raise ValueError(f"{where}: {name} must be a non-negative integer, not {entry.get(name)!r}")
    for name in ("suites", "apps"):
        if not isinstance(entry.get(name), list) or not all(isinstance(v, str) for v in entry[name]):
            raise ValueError(f"{where}: {name} must be a list of text")
    for name in ("params", "attrs"):
        if not isinstance(entry.get(name, {}), dict):
            raise ValueError(f"{where}: {name} must be an object")
    for role in ("inputs", "outputs"):
        if not isinstance(entry.get(role), list):
            raise ValueError(f"{where}: {role} must be a list")
        for tensor in entry[role]:
            _check_tensor(tensor, f"{where}, {role[:-1]}")


def parse_manifest(text: str | bytes, path: Path) -> list[Entry]:
    """The entries of a manifest's text (read from `path`, named in errors), or a clear error when it
    is malformed or newer than this dbench."""
    try:
        data = json.loads(text)
        check_version(data.get("manifest_version"), path)
        for index, entry in enumerate(data["graphs"]):
            _check_entry(entry, index)
        entries = [
            Entry(
                GraphSpec.from_dict({k: v for k, v in e.items() if k not in ("file", "sha256")}), e["file"], e["sha256"]
            )
            for e in data["graphs"]
        ]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError, ValueError) as err:
        raise InputError(
            f"{path} is malformed ({type(err).__name__}: {err}); regenerate it with `dbench gen --force`"
        ) from None
    _check_listed_once(entries, path)
    return entries


def _check_listed_once(entries: list[Entry], path: Path) -> None:
    """A graph (or a file) listed twice would be timed twice and counted as two rows: refuse the manifest."""
    for what, values in (("graph", [e.spec.id for e in entries]), ("graph file", [e.file for e in entries])):
        seen: set[str] = set()
        for value in values:
            if value in seen:
                raise InputError(
                    f"{path} lists {what} {value!r} twice; remove the duplicate entry or regenerate the "
                    "folder with `dbench gen --force`"
                )
            seen.add(value)


def read_manifest(folder: Path) -> list[Entry]:
    """The entries of `folder/manifest.json`, or a clear error when it is missing, malformed, newer
    than this dbench, or names a file outside the folder."""
    path = folder / MANIFEST
    if not path.is_file():
        suite = f" --suite {folder.name}" if folder.name in SUITES else ""
        raise InputError(
            f"no {MANIFEST} in {folder}; generate the graphs with `dbench gen{suite} --out {folder.parent}` "
            "or point --graphs at a folder made by dbench gen"
        )
    entries = parse_manifest(path.read_bytes(), path)
    for entry in entries:
        confined_file(folder, entry.file)
    return entries


def manifest_text(entries: list[Entry]) -> str:
    """The manifest of `entries`, deterministically (same entries, same text)."""
    data = {
        "manifest_version": MANIFEST_VERSION,
        "opset": OPSET,
        "ir_version": IR_VERSION,
        "graphs": [e.to_dict() for e in entries],
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def write_manifest(folder: Path, entries: list[Entry]) -> None:
    """Write the manifest deterministically (same entries, same bytes)."""
    (folder / MANIFEST).write_text(manifest_text(entries))
