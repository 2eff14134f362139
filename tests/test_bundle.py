"""`dbench export` bundles and their verification by `dbench run --graphs`: byte-identical exports,
a verified run from the archive and the folder, and every kind of bad bundle refused with one line,
a non-zero exit and nothing written."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import onnx
import pytest
from typer.testing import CliRunner

from dbench.bundle import members as bundle_members
from dbench.bundle.checksums import CHECKSUMS, format_checksums
from dbench.bundle.export import write_archive
from dbench.cli import app
from dbench.gen.manifest import MANIFEST, MANIFEST_VERSION

runner = CliRunner()
SELECT = ("--suite", "inference-device", "--ops", "gemm", "--id", "gemm_m128_n1_*")


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """A two-graph archive made by `dbench export`."""
    path = tmp_path_factory.mktemp("export") / "bundle.tar.gz"
    result = invoke("export", *SELECT, "--out", str(path))
    assert result.exit_code == 0, result.output
    return path


def members_of(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}


def resealed(members: dict[str, bytes]) -> dict[str, bytes]:
    """The members with a SHA256SUMS recomputed over them (what a careless or hostile editor does)."""
    members = {k: v for k, v in members.items() if k != CHECKSUMS}
    return {**members, CHECKSUMS: format_checksums(members).encode()}


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """A temporary-files folder of this test only, to see whether anything was unpacked into it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def assert_refused(args: list[str], needle: str, tmp_path: Path, private_tmp: Path) -> None:
    """One line naming the problem, exit 2 (bad input), no traceback, no results and nothing unpacked."""
    results = tmp_path / "results"
    result = invoke("run", *args, "--quick", "--out", str(results))
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not results.exists()
    assert list(private_tmp.iterdir()) == []


def test_export_is_byte_identical_and_flat(bundle, tmp_path):
    again = tmp_path / "again.tgz"
    assert invoke("export", *SELECT, "--out", str(again)).exit_code == 0
    assert again.read_bytes() == bundle.read_bytes()
    with tarfile.open(bundle) as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == sorted(i.name for i in infos)
    assert all(i.isreg() and i.mtime == 0 and i.uid == 0 and i.mode == 0o644 for i in infos)
    names = {i.name for i in infos}
    assert {MANIFEST, CHECKSUMS, "README.txt"} <= names and sum(n.endswith(".onnx") for n in names) == 2


def test_folder_export_holds_the_archive_members(bundle, tmp_path):
    folder = tmp_path / "board"
    assert invoke("export", *SELECT, "--out", str(folder)).exit_code == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == members_of(bundle)
    refused = invoke("export", *SELECT, "--out", str(folder))
    assert refused.exit_code != 0 and "not an empty folder" in refused.output


def test_export_of_nothing_writes_nothing(tmp_path):
    out = tmp_path / "none.tar.gz"
    result = invoke("export", "--suite", "inference-device", "--id", "nomatch_*", "--out", str(out))
    assert result.exit_code == 2 and "no kernel matches --suite inference-device --id 'nomatch_*'" in " ".join(
        result.output.split()
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("unpacked", [False, True])
def test_run_from_a_bundle_verifies_rows(bundle, tmp_path, private_tmp, unpacked):
    source = bundle
    if unpacked:
        source = tmp_path / "unpacked"
        source.mkdir()
        for name, data in members_of(bundle).items():
            (source / name).write_bytes(data)
    results = tmp_path / "results"
    result = invoke("run", "--graphs", str(source), "--quick", "--profile-runs", "0", "--out", str(results))
    assert result.exit_code == 0, result.output
    rows = [
        json.loads(line)
        for log in results.rglob("*.jsonl")
        for line in log.read_text().splitlines()[1:]
        if '"type": "result"' in line
    ]
    assert len(rows) == 2 and all(r["status"] == "ok" and r["verified"] for r in rows)
    assert list(private_tmp.iterdir()) == []  # the unpacked copy is gone with the run


def _tampered(members: dict[str, bytes]) -> dict[str, bytes]:
    name = next(n for n in members if n.endswith(".onnx"))
    model = onnx.load_model_from_string(members[name])
    model.doc_string = "changed after export"
    return {**members, name: model.SerializeToString()}


def _newer_manifest(members: dict[str, bytes]) -> dict[str, bytes]:
    data = json.loads(members[MANIFEST])
    data["manifest_version"] = MANIFEST_VERSION + 1
    return resealed({**members, MANIFEST: json.dumps(data).encode()})


def _escaping_external_data(members: dict[str, bytes]) -> dict[str, bytes]:
    name = next(n for n in members if n.endswith(".onnx"))
    model = onnx.load_model_from_string(members[name])
    tensor = model.graph.initializer.add(
        name="stolen", data_type=onnx.TensorProto.FLOAT, dims=[4], data_location=onnx.TensorProto.EXTERNAL
    )
    tensor.external_data.add(key="location", value="../../etc/passwd")
    return resealed({**members, name: model.SerializeToString()})


def _manifest_names_outside(members: dict[str, bytes]) -> dict[str, bytes]:
    data = json.loads(members[MANIFEST])
    data["graphs"][0]["file"] = "../outside.onnx"
    return resealed({**members, MANIFEST: json.dumps(data).encode()})


BAD_CONTENTS = {
    "tampered graph": (_tampered, "does not match its checksum"),
    "missing manifest": (lambda m: resealed({k: v for k, v in m.items() if k != MANIFEST}), "has no manifest.json"),
    "missing checksums": (lambda m: {k: v for k, v in m.items() if k != CHECKSUMS}, "has no SHA256SUMS"),
    "unlisted file": (lambda m: {**m, "extra.onnx": m[MANIFEST]}, "'extra.onnx' is not listed in SHA256SUMS"),
    "listed file missing": (
        lambda m: {k: v for k, v in m.items() if k != "README.txt"},
        "lists 'README.txt', which is missing",
    ),
    "newer manifest": (
        _newer_manifest,
        f"manifest version {MANIFEST_VERSION + 1}, newer than this dbench understands ({MANIFEST_VERSION})",
    ),
    "external data escapes": (_escaping_external_data, "external data: member '../../etc/passwd' escapes the bundle"),
    "manifest names a file outside": (_manifest_names_outside, "names graph file '../outside.onnx'"),
}


# A folder without SHA256SUMS is a plain `dbench gen` folder and runs as such: archive only.
CONTENT_CASES = [
    (case, unpacked)
    for case in BAD_CONTENTS
    for unpacked in (False, True)
    if not (unpacked and case == "missing checksums")
]


@pytest.mark.parametrize("case,unpacked", CONTENT_CASES)
def test_bad_bundle_contents_are_refused(bundle, tmp_path, private_tmp, case, unpacked):
    change, needle = BAD_CONTENTS[case]
    members = change(members_of(bundle))
    if unpacked:
        path = tmp_path / "bad"
        path.mkdir()
        for name, data in members.items():
            (path / name).write_bytes(data)
    else:
        path = tmp_path / "bad.tar.gz"
        write_archive(members, path)
    assert_refused(["--graphs", str(path)], needle, tmp_path, private_tmp)


def _tar_with(bundle: Path, path: Path, info: tarfile.TarInfo, data: bytes = b"") -> Path:
    """The bundle's members plus one hand-made member `info` (a link, a device, an escaping name)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members_of(bundle).items():
            member = tarfile.TarInfo(name)
            member.size = len(content)
            tar.addfile(member, io.BytesIO(content))
        info.size = len(data) if info.isreg() else 0
        tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


BAD_MEMBERS = {
    "dot-dot path": (_member("../evil.onnx"), "escapes the bundle with '..'"),
    "absolute path": (_member("/tmp/evil.onnx"), "has an absolute path"),
    "subfolder": (_member("sub/graph.onnx"), "is not a plain file name"),
    "symlink": (_member("passwd", tarfile.SYMTYPE, "/etc/passwd"), "is a link (to '/etc/passwd')"),
    "hard link": (_member("hard", tarfile.LNKTYPE, "manifest.json"), "is a link (to 'manifest.json')"),
    "device": (_member("null", tarfile.CHRTYPE), "is a device"),
    "fifo": (_member("pipe", tarfile.FIFOTYPE), "is a fifo"),
}


@pytest.mark.parametrize("case", list(BAD_MEMBERS))
def test_bad_archive_members_are_refused(bundle, tmp_path, private_tmp, case):
    info, needle = BAD_MEMBERS[case]
    path = _tar_with(bundle, tmp_path / "bad.tar.gz", info, b"x" if info.isreg() else b"")
    assert_refused(["--graphs", str(path)], needle, tmp_path, private_tmp)
    assert not (tmp_path / "evil.onnx").exists() and not Path("/tmp/evil.onnx").exists()


def test_bounds_are_enforced(bundle, tmp_path, private_tmp, monkeypatch):
    monkeypatch.setattr(bundle_members, "MAX_MEMBERS", 3)
    assert_refused(["--graphs", str(bundle)], "holds more than 3 files", tmp_path, private_tmp)
    monkeypatch.setattr(bundle_members, "MAX_MEMBERS", 4096)
    monkeypatch.setattr(bundle_members, "MAX_MEMBER_BYTES", 100)
    assert_refused(["--graphs", str(bundle)], "more than the 0 MiB a bundle file may hold", tmp_path, private_tmp)


def test_link_in_a_bundle_folder_is_refused(bundle, tmp_path, private_tmp):
    folder = tmp_path / "linked"
    folder.mkdir()
    for name, data in members_of(bundle).items():
        (folder / name).write_bytes(data)
    readme = folder / "README.txt"
    readme.unlink()
    readme.symlink_to("/etc/hostname")
    assert_refused(["--graphs", str(folder)], "'README.txt' is a link (to '/etc/hostname')", tmp_path, private_tmp)


def test_not_a_tar_and_missing_path(tmp_path, private_tmp):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tar at all")
    assert_refused(["--graphs", str(junk)], "is not a readable bundle", tmp_path, private_tmp)
    assert_refused(["--graphs", str(tmp_path / "nowhere.tar.gz")], "does not exist", tmp_path, private_tmp)


@pytest.mark.parametrize(
    "file,needle",
    [
        ("../outside.onnx", "not a plain file name inside the folder"),
        ("/etc/passwd", "not a plain file name inside the folder"),
        ("escape.onnx", "outside the graph folder"),
    ],
)
def test_plain_gen_folder_is_confined(tmp_path, private_tmp, file, needle):
    """Issue 13: a manifest may only name files inside its folder, and no link may lead out."""
    gen = invoke("gen", *SELECT, "--out", str(tmp_path / "graphs"))
    assert gen.exit_code == 0, gen.output
    folder = tmp_path / "graphs" / "inference-device"
    outside = tmp_path / "outside.onnx"
    first = json.loads((folder / MANIFEST).read_text())["graphs"][0]["file"]
    shutil.copy(folder / first, outside)
    if file == "escape.onnx":
        (folder / file).symlink_to(outside)
    data = json.loads((folder / MANIFEST).read_text())
    data["graphs"][0]["file"] = file
    (folder / MANIFEST).write_text(json.dumps(data))
    assert_refused(["--graphs", str(folder)], needle, tmp_path, private_tmp)


def test_runtime_the_board_lacks_names_its_provider(bundle, tmp_path, private_tmp):
    """PyPI's onnxruntime has no ACL execution provider (on x86 and aarch64 alike)."""
    import onnxruntime

    if "ACLExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime build has the ACL execution provider")
    assert_refused(
        ["--graphs", str(bundle), "--runtime", "ort-acl"], "build onnxruntime with --use_acl", tmp_path, private_tmp
    )


def test_members_reader_never_writes(bundle, tmp_path):
    """Reading an archive's members only reads: the process's folder is unchanged."""
    before = sorted(os.listdir(tmp_path))
    assert set(bundle_members.read_tar(bundle)) == set(members_of(bundle))
    assert sorted(os.listdir(tmp_path)) == before
