"""Compare a runtime's outputs with the numpy reference under the graph's tolerance rule."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dbench.gen.tolerance import Tolerance


@dataclass(frozen=True)
class Verdict:
    """`ok` when every output is within tolerance; `error` is the worst output's error under the metric."""

    ok: bool
    error: float
    metric: str
    bound: float
    detail: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def compare(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray], tolerance: Tolerance) -> Verdict:
    """max|out - ref| / max|ref| (metric `rel`) or max|out - ref| (metric `abs`), worst over outputs."""
    worst, detail = 0.0, ""
    for name, ref in reference.items():
        if name not in outputs:
            return Verdict(False, float("inf"), tolerance.metric, tolerance.bound, f"output {name} missing")
        out = np.asarray(outputs[name])
        if out.shape != ref.shape:
            return Verdict(False, float("inf"), tolerance.metric, tolerance.bound, f"output {name} has shape {out.shape}, expected {ref.shape}")
        diff = np.abs(out.astype(np.float64) - np.asarray(ref, dtype=np.float64))
        if not np.all(np.isfinite(diff)):
            return Verdict(False, float("inf"), tolerance.metric, tolerance.bound, f"output {name} has non-finite values")
        error = float(diff.max()) if diff.size else 0.0
        if tolerance.metric == "rel":
            scale = float(np.abs(ref).max()) if ref.size else 0.0
            error = error / scale if scale > 0 else error
        if error > worst:
            worst, detail = error, name
    return Verdict(worst <= tolerance.bound, worst, tolerance.metric, tolerance.bound, detail)
