"""Compare a runtime's outputs with the reference under the graph's tolerance rule, say when the
comparison says little (outputs that are all zero or hold a handful of values), and the verdict every
check returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dbench.gen.tolerance import Tolerance

FEW_VALUES = 3
"""An output of at least DEGENERATE_SIZE elements holding this many distinct values or fewer is degenerate."""
DEGENERATE_SIZE = 16
SAMPLE = 1 << 16


@dataclass(frozen=True)
class Verdict:
    """`ok` when every output is within tolerance; `error` is the worst output's error under the metric
    (for a projection check, an upper bound of it: docs/method.md); `weak` says why agreement proves
    little (every output degenerate), empty otherwise. `check` names the check that decided (`full`,
    `rows`, `projection`, `steps`...), `false_accept` bounds the probability that it passed an output the
    full reference would reject, `by` what computed the expected values."""

    ok: bool
    error: float
    metric: str
    bound: float
    detail: str = ""
    weak: str = ""
    check: str = "full"
    false_accept: float = 0.0
    by: str | None = None
    rows_checked: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _same_non_finite(out: np.ndarray, ref: np.ndarray) -> bool:
    """NaN and infinities in the same places with the same values: both computed a function outside
    its domain (a log of a negative input) alike."""
    out_bad, ref_bad = ~np.isfinite(out), ~np.isfinite(ref)
    if not np.array_equal(out_bad, ref_bad):
        return False
    a, b = out[out_bad], ref[ref_bad]
    return bool(np.all((np.isnan(a) & np.isnan(b)) | (a == b)))


def degenerate(values: np.ndarray) -> str:
    """Why an output proves little when it matches ("" when it does not): all zero, one value, or a
    few distinct values over many elements (booleans: only one of the two)."""
    if values.size == 0:
        return ""
    if not np.any(values):
        return "all zero"
    flat = values.reshape(-1)
    if np.unique(flat[:SAMPLE]).size > FEW_VALUES:  # a prefix decides at once for large outputs
        return ""
    distinct = np.unique(flat).size
    if distinct == 1:
        return "a single value"
    if values.dtype != np.bool_ and values.size >= DEGENERATE_SIZE and distinct <= FEW_VALUES:
        return f"{distinct} distinct values in {values.size}"
    return ""


def compare(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray], tolerance: Tolerance) -> Verdict:
    """max|out - ref| / max|ref| (metric `rel`) or max|out - ref| (metric `abs`), worst over outputs,
    over the finite values (NaN and infinities must sit where the reference has the same)."""
    worst, detail = 0.0, ""
    why = []
    for name, ref in reference.items():
        if name not in outputs:
            return Verdict(False, float("inf"), tolerance.metric, tolerance.bound, f"output {name} missing")
        out = np.asarray(outputs[name])
        ref = np.asarray(ref)
        if out.shape != ref.shape:
            return Verdict(
                False,
                float("inf"),
                tolerance.metric,
                tolerance.bound,
                f"output {name} has shape {out.shape}, expected {ref.shape}",
            )
        out64, ref64 = out.astype(np.float64), ref.astype(np.float64)
        if not _same_non_finite(out64, ref64):
            return Verdict(
                False, float("inf"), tolerance.metric, tolerance.bound, f"output {name} has non-finite values"
            )
        finite = np.isfinite(ref64)
        diff = np.abs(out64[finite] - ref64[finite])
        error = float(diff.max()) if diff.size else 0.0
        if tolerance.metric == "rel":
            scale = float(np.abs(ref64[finite]).max()) if diff.size else 0.0
            error = error / scale if scale > 0 else error
        if error > worst:
            worst, detail = error, name
        reason = degenerate(ref)
        why.append(f"{name}: {reason}" if reason else "")
    weak = "; ".join(why) if why and all(why) else ""
    return Verdict(worst <= tolerance.bound, worst, tolerance.metric, tolerance.bound, detail, weak)
