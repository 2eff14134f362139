"""The README's first-hour proof (scripts/first_hour.py, run by .ci/run) stays in step with the README:
it finds the Quick start's first command and knows every command of "The CLI at a glance", and each
placeholder there becomes something real. Running the proof itself takes minutes: .ci/run does it."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def first_hour():
    spec = importlib.util.spec_from_file_location("first_hour", ROOT / "scripts" / "first_hour.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["first_hour"] = module
    spec.loader.exec_module(module)
    return module


def test_the_proof_knows_every_glance_command_and_the_first_one():
    proof = first_hour()
    first, glance = proof.readme_commands((ROOT / "README.md").read_text())
    assert (
        first
        == "python3 -m venv .venv && .venv/bin/pip install -e '.[cpu]' && .venv/bin/dbench run --suite inference-device"
    )
    assert glance == list(proof.STEPS), "README's glance and scripts/first_hour.py STEPS differ: update STEPS"
    assert "dbench report results/" in glance and "dbench compare RUN-A RUN-B" in glance


def test_every_placeholder_becomes_real(tmp_path):
    proof = first_hour()
    (tmp_path / "examples" / "models").mkdir(parents=True)
    (tmp_path / proof.FOREIGN).write_bytes(b"onnx")
    state = proof.Proof(
        tmp_path, runs={made_by: ["run-x"] for made_by in proof.RUN_MADE_BY.values()}, interrupted="run-i"
    )
    for command in proof.STEPS:
        words = state.substituted(command)
        assert not {
            "RUN",
            "RUN-A",
            "RUN-B",
            "RUN-ID",
            "KERNELS-RUN",
            "model.onnx",
            "graphs/model/",
            "folder-of-onnx-files/",
            "4-7",
        } & set(words), words
        for word in words:
            if word.startswith("examples/"):
                assert (ROOT / word).exists(), word
    assert shlex.join(state.substituted("dbench compare RUN-A RUN-B")) == "dbench compare run-x run-x"
