"""Graphs written by `dbench gen` (a folder and its manifest) or `dbench export` (a bundle: archive or
folder with SHA256SUMS, verified whole before anything in it runs). Each graph's bytes are read, and
checked against the manifest's hash, only when its turn comes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dbench.bundle.members import read_folder, read_tar
from dbench.bundle.verify import REEXPORT, is_bundle, verify_members
from dbench.errors import InputError
from dbench.gen.graph import MODEL_FAMILY
from dbench.gen.manifest import MANIFEST, Entry, parse_manifest, read_manifest
from dbench.sources.contract import ONNX_REFERENCE, Contract
from dbench.sources.item import Item

GEN_FOLDER = Contract(described_by="its manifest entry", remedy="regenerate the folder with dbench gen --force")
BUNDLE = Contract(described_by="its manifest entry", remedy=REEXPORT)
EXPORTED_UNITS = Contract(reference=ONNX_REFERENCE, described_by="its manifest entry", remedy=REEXPORT)
"""A model's units in a bundle (`dbench export --units`): graphs with no family of dbench's own, verified
against onnx.reference as foreign graphs are."""
FOREIGN_FAMILIES = ("unit", "empty", MODEL_FAMILY)


def open_graphs(path: Path) -> tuple[list[Entry], Callable[[Entry], bytes]]:
    """A `--graphs` path's manifest entries and how to read an entry's graph. A bundle (archive or
    folder) is read into memory and verified whole first, so nothing of it is unpacked anywhere and
    what runs is what was checked; a plain graph folder is confined to itself by its manifest reader."""
    if not path.exists():
        raise InputError(
            f"--graphs {path} does not exist; give a folder made by `dbench gen` or a bundle made by `dbench export`"
        )
    if not is_bundle(path):
        return read_manifest(path), lambda entry: (path / entry.file).read_bytes()
    members = read_tar(path) if path.is_file() else read_folder(path)
    verify_members(members, str(path))
    return parse_manifest(members[MANIFEST], path / MANIFEST), lambda entry: members[entry.file]


def folder_items(path: Path) -> list[Item]:
    """The graphs of a gen folder or of a bundle, in manifest order."""
    entries, read = open_graphs(path)
    contract = BUNDLE if is_bundle(path) else GEN_FOLDER

    def loader(entry: Entry) -> Callable[[], tuple[bytes, str | None]]:
        return lambda: (read(entry), entry.sha256)

    return [Item(e.spec, loader(e), EXPORTED_UNITS if e.spec.family in FOREIGN_FAMILIES else contract) for e in entries]


def made_by_dbench(path: Path) -> bool:
    """A gen folder (with its manifest) or a bundle, as opposed to a model file or a folder of foreign .onnx files."""
    return is_bundle(path) or (path / MANIFEST).exists()
