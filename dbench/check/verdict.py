"""Compare a runtime's outputs with the reference under the graph's tolerance rule, say when the
comparison says little (outputs that are all zero or hold a handful of values), and the verdict every
check returns."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from dbench.gen.tolerance import OutputRule, Tolerance

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


GRID_SLACK = 1e-3
"""How far from an integer (in steps) a value on a quantization grid may lie: float32's rounding of
(q - zero_point) · scale moves it by at most 2^-24 of 2^8 steps, far less."""


def _output_error(out64: np.ndarray, ref64: np.ndarray, finite: np.ndarray, rule: OutputRule) -> tuple[float, str]:
    """(the output's error under its rule, why it fails beyond the error: a shift or values off the grid)."""
    if rule.metric == "steps":
        steps = (out64[finite] - ref64[finite]) / rule.scale
        if not steps.size:
            return 0.0, ""
        if rule.grid:
            q = out64[finite] / rule.scale + rule.zero_point
            off = float(np.abs(q - np.rint(q)).max())
            if off > GRID_SLACK:
                return (
                    math.inf,
                    f"not on its quantization grid (a value {off:.2g} steps off it: the output was not quantized)",
                )
        worst, shift, rms = float(np.abs(steps).max()), float(steps.mean()), float(np.sqrt(np.mean(steps**2)))
        if abs(shift) > rule.bias:
            return worst, f"shifted by {shift:+.3g} steps on average, over its budget of {rule.bias:.3g}"
        if rms > rule.rms:
            return worst, f"{rms:.3g} steps off in root mean square, over its budget of {rule.rms:.3g}"
        return worst, ""
    diff = np.abs(out64[finite] - ref64[finite])
    error = float(diff.max()) if diff.size else 0.0
    if rule.metric == "rel":
        scale = float(np.abs(ref64[finite]).max()) if diff.size else 0.0
        error = error / scale if scale > 0 else error
        if diff.size and math.isfinite(rule.rms):
            spread = float(np.sqrt(np.mean(ref64[finite] ** 2)))
            rms = float(np.sqrt(np.mean(diff**2))) / spread if spread > 0 else 0.0
            if rms > rule.rms:
                return error, f"{rms:.3g} off in relative root mean square, over its budget of {rule.rms:.3g}"
    return error, ""


def _share(error: float, bound: float) -> float:
    """How much of its bound an error uses (what makes errors under different rules comparable)."""
    if bound > 0:
        return error / bound
    return math.inf if error > 0 else 0.0


def compare(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray], tolerance: Tolerance) -> Verdict:
    """Every output under its rule (Tolerance.rule_for): max|out - ref| / max|ref| (metric `rel`),
    max|out - ref| (metric `abs`), or in quantization steps (metric `steps`: also its mean shift and,
    where asked, its grid); the verdict carries the output that uses most of its bound, over the finite
    values (NaN and infinities must sit where the reference has the same)."""
    worst, worst_share, detail, worst_rule, failed = 0.0, -1.0, "", tolerance.rule_for(""), ""
    why = []
    for name, ref in reference.items():
        rule = tolerance.rule_for(name)
        if name not in outputs:
            return Verdict(False, float("inf"), rule.metric, rule.bound, f"output {name} missing")
        out = np.asarray(outputs[name])
        ref = np.asarray(ref)
        if out.shape != ref.shape:
            return Verdict(
                False,
                float("inf"),
                rule.metric,
                rule.bound,
                f"output {name} has shape {out.shape}, expected {ref.shape}",
            )
        out64, ref64 = out.astype(np.float64), ref.astype(np.float64)
        if not _same_non_finite(out64, ref64):
            return Verdict(False, float("inf"), rule.metric, rule.bound, f"output {name} has non-finite values")
        error, beyond = _output_error(out64, ref64, np.isfinite(ref64), rule)
        share = math.inf if beyond else _share(error, rule.bound)
        if share > worst_share:
            worst, worst_share, worst_rule = error, share, rule
            detail = f"{name} {beyond}" if beyond else name
            failed = beyond
        reason = degenerate(ref)
        why.append(f"{name}: {reason}" if reason else "")
    weak = "; ".join(why) if why and all(why) else ""
    ok = not failed and worst <= worst_rule.bound
    return Verdict(ok, worst, worst_rule.metric, worst_rule.bound, detail, weak)


def failure(verdict: Verdict) -> str:
    """What a failing verdict found, in a line: the output and its error over the bound, or, for an
    output within its bound that fails otherwise (shifted, off its grid), the output and why."""
    if verdict.error <= verdict.bound:
        return verdict.detail
    return f"{verdict.detail}: error {verdict.error:.3g} > {verdict.metric} tolerance {verdict.bound:g}"
