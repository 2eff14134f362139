"""`dbench gen`: write planned graphs as `<id>.onnx` files plus the folder's manifest, idempotently."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dbench.errors import InputError, UnsupportedError
from dbench.gen.manifest import MANIFEST, Entry, read_manifest, sha256, write_manifest
from dbench.gen.plan import GraphRequest, build


@dataclass(frozen=True)
class Written:
    """What happened to one request: `written`, `unchanged`, or `skipped` (with the reason)."""

    request: GraphRequest
    status: str
    reason: str = ""


def prepare_folder(folder: Path) -> Path:
    """Create the output folder and check it is writable before any graph is built."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".dbench-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise InputError(f"cannot write graphs to {folder}: {err.strerror}; choose another folder with --out") from None
    return folder


def write_graphs(requests: list[GraphRequest], folder: Path, force: bool = False) -> Iterator[Written]:
    """Build and write each graph (same request, same bytes). The manifest keeps the folder's earlier
    entries and is written when the generator finishes or is interrupted, so the folder stays valid.
    Without `force`, a file that already holds the same bytes is left untouched."""
    entries: dict[str, Entry] = {}
    if (folder / MANIFEST).exists():
        entries = {e.spec.id: e for e in read_manifest(folder)}
    try:
        for request in requests:
            try:
                graph = build(request)
            except UnsupportedError as err:
                yield Written(request, "skipped", str(err))
                continue
            data = graph.model.SerializeToString()
            digest = sha256(data)
            path = folder / f"{graph.id}.onnx"
            unchanged = not force and path.exists() and sha256(path.read_bytes()) == digest
            if not unchanged:
                path.write_bytes(data)
            entries[graph.id] = Entry(graph.spec, path.name, digest)
            yield Written(request, "unchanged" if unchanged else "written")
    finally:
        write_manifest(folder, list(entries.values()))
