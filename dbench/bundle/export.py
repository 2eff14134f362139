"""`dbench export`: the planned graphs written as `dbench gen` writes them, plus SHA256SUMS and a
README, into a folder or a deterministic .tar.gz (sorted members, fixed time, owner and mode: the
same export gives the same bytes). Nothing is left behind when it fails half way."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dbench.bundle.checksums import CHECKSUMS, format_checksums
from dbench.bundle.readme import README, readme_text
from dbench.errors import DbenchError, InputError
from dbench.gen.graph import GraphSpec
from dbench.gen.manifest import MANIFEST, Entry, manifest_text, sha256
from dbench.gen.plan import GraphRequest
from dbench.gen.writer import write_graphs

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")


@dataclass
class Exported:
    """What an export wrote: where, how many graphs, and the generator's skip reasons with counts."""

    path: Path
    graphs: int
    skipped: dict[str, int] = field(default_factory=dict)


def is_archive(path: Path) -> bool:
    return path.name.endswith(ARCHIVE_SUFFIXES)


def _members(requests: list[GraphRequest], suite: str, skipped: dict[str, int]) -> dict[str, bytes]:
    """Generate the graphs and manifest in a scratch folder and return every bundle file's bytes."""
    scratch = Path(tempfile.mkdtemp(prefix="dbench-export-"))
    try:
        for written in write_graphs(requests, scratch):
            if written.reason:
                skipped[written.reason] = skipped.get(written.reason, 0) + 1
        members = {p.name: p.read_bytes() for p in scratch.iterdir() if p.is_file()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    graphs = json.loads(members[MANIFEST])["graphs"]
    if not graphs:
        raise InputError(
            "nothing to export: no graph could be generated for this selection (see --precision and --ops)"
        )
    members[README] = readme_text(len(graphs), suite, sorted({g["precision"] for g in graphs})).encode()
    members[CHECKSUMS] = format_checksums(members).encode()
    return members


def write_archive(members: dict[str, bytes], out: Path) -> None:
    """A gzipped tar of `members`, byte-identical for identical members; written to a temporary name
    and renamed, so a failure leaves no partial archive."""
    partial = out.with_name(out.name + ".partial")
    try:
        with (
            open(partial, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed,
            tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for name in sorted(members):
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(members[name]), 0, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(members[name]))
        os.replace(partial, out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_folder(members: dict[str, bytes], out: Path) -> None:
    """The members as files of a new (or empty) folder; on failure the folder is removed again."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"--out {out} exists and is not an empty folder; choose a new folder or a .tar.gz name")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in sorted(members):
            (out / name).write_bytes(members[name])
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for name in members:
                (out / name).unlink(missing_ok=True)
        raise


def export_bundle(requests: list[GraphRequest], suite: str, out: Path) -> Exported:
    """Write the bundle for `requests` to `out` (a .tar.gz/.tgz archive, else a folder)."""
    if not requests:
        raise InputError("nothing to export: the selection holds no kernels; check --suite, --ops and --id")
    skipped: dict[str, int] = {}
    members = _members(requests, suite, skipped)
    return _write(members, out, skipped)


def export_graphs(graphs: list[tuple[GraphSpec, bytes]], readme: str, out: Path) -> Exported:
    """Write a bundle of graphs already made (a model's units, weights inside) to `out`: one .onnx
    per graph, the manifest of their specs, `readme`, SHA256SUMS."""
    if not graphs:
        raise DbenchError("nothing to export: no graph was made")
    members = {f"{spec.id}.onnx": data for spec, data in graphs}
    entries = [Entry(spec, f"{spec.id}.onnx", sha256(data)) for spec, data in graphs]
    members[MANIFEST] = manifest_text(entries).encode()
    members[README] = readme.encode()
    members[CHECKSUMS] = format_checksums(members).encode()
    return _write(members, out, {})


def _write(members: dict[str, bytes], out: Path, skipped: dict[str, int]) -> Exported:
    """The members as an archive or a folder at `out`; one line when it cannot be written."""
    try:
        if is_archive(out):
            if not out.parent.is_dir():
                raise InputError(f"--out {out}: folder {out.parent} does not exist; create it or choose another path")
            write_archive(members, out)
        else:
            write_folder(members, out)
    except OSError as err:
        raise InputError(f"cannot write the bundle to {out}: {err.strerror}; choose another --out") from None
    graphs = sum(1 for name in members if name.endswith(".onnx"))
    return Exported(out, graphs, skipped)
