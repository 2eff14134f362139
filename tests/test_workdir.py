"""The session's guard against files left in the working directory sees a new file, however deep, and
nothing that was there before or that tools write (bytecode caches)."""

from __future__ import annotations

from tests.workdir import files_under, left_behind


def test_files_left_behind_are_found(tmp_path):
    (tmp_path / "kept.txt").write_text("before")
    (tmp_path / "results").mkdir()
    before = files_under(tmp_path)
    (tmp_path / "onnxruntime_profile__1.json").write_text("{}")
    (tmp_path / "results" / "machine").mkdir()
    (tmp_path / "results" / "machine" / "run.jsonl").write_text("")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").write_bytes(b"")
    assert left_behind(before, tmp_path) == [
        "onnxruntime_profile__1.json",
        "results/machine",
        "results/machine/run.jsonl",
    ]


def test_nothing_new_is_nothing_left(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.onnx").write_bytes(b"")
    assert left_behind(files_under(tmp_path), tmp_path) == []
