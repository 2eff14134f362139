"""Shared test helpers: fresh random seeds, a tiny kernel-file writer, runtime sessions."""

from __future__ import annotations

import secrets
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def seed() -> int:
    """A fresh seed per test run (printed on failure through the test id's locals)."""
    return secrets.randbits(31)


def run_ort(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run a model on ONNX Runtime CPU (plain `run`, independent of our adapter)."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_reference_evaluator(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def normalized_error(out: np.ndarray, ref: np.ndarray) -> float:
    """max|out - ref| / max|ref| — the `rel` metric of dbench's verification."""
    out64 = np.asarray(out).astype(np.float64)
    return float(np.abs(out64 - ref).max() / np.abs(ref).max())


def write_csv(path: Path, header: str, *rows: str) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path
