"""Helpers shared by the tests: plain ONNX Runtime CPU sessions (independent of dbench's adapter),
the ONNX reference evaluator, the error metrics, and a tiny kernel-file writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def ort_session(model):
    """A plain ONNX Runtime CPU InferenceSession for `model`."""
    import onnxruntime as ort

    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def run_ort(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run a model on ONNX Runtime CPU (plain `run`, independent of our adapter)."""
    return ort_session(model).run(None, feeds)


def run_ort_named(session, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A session's outputs by name."""
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def run_reference_evaluator(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def max_abs_error(out: np.ndarray, ref: np.ndarray) -> float:
    """max|out - ref| in float64 — the `abs` metric of dbench's verification."""
    return float(np.abs(np.asarray(out, dtype=np.float64) - np.asarray(ref, dtype=np.float64)).max())


def normalized_error(out: np.ndarray, ref: np.ndarray) -> float:
    """max|out - ref| / max|ref| — the `rel` metric of dbench's verification; the absolute error when
    the reference is all zeros (a ReLU layer can be entirely inactive)."""
    err = max_abs_error(out, ref)
    scale = float(np.abs(np.asarray(ref, dtype=np.float64)).max())
    return err / scale if scale else err


def write_csv(path: Path, header: str, *rows: str) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def rerun_of(log: Path, dest: Path) -> Path:
    """A second run with `log`'s very figures under another run id (a byte copy is the same run, which
    compare refuses as a run named twice)."""
    import json

    run_id = json.loads(log.read_bytes().splitlines()[0])["run_id"]
    dest.write_bytes(log.read_bytes().replace(run_id.encode(), b"run-rerun-of-" + run_id.encode()))
    return dest
