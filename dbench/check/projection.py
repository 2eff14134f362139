"""Projection checks of linear outputs (dbench.check.linear): random-sign projections of float outputs
beside the reference's (Freivalds), exact projections on random integers for int8 `integer` outputs,
whether one pays against the full check, and settling what they flag with the full reference."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dbench.cache.keys import entry_key
from dbench.cache.store import ReferenceCache
from dbench.check import probes
from dbench.check.expected import VERIFY_ROWS, verify_rows
from dbench.check.full import FullReference, Unverified, full_check
from dbench.check.linear import (
    ConvBackwardData,
    ConvBackwardFilter,
    ConvForward,
    GemmOutput,
    LinearOutput,
    abs_max,
    gamma,
)
from dbench.check.verdict import Verdict, compare, degenerate
from dbench.gen.graph import GraphSpec
from dbench.gen.tolerance import Tolerance

EXACT_MIN_BITS = 4
"""Fewer random bits per exact probe than this (huge integer sums near float64's 2^53) and the full check is used."""


def linear_output(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> LinearOutput | None:
    """The graph's output as a LinearOutput where it is one (float GEMM, sparse, convolution passes,
    int8 `integer`), else None (an int4 weight-only GEMM too: its projection would need the whole
    dequantised weight, which its full reference never holds at once)."""
    from dbench.catalog.kernels import ConvKernel
    from dbench.gen import gemm, int8, sparse

    if spec.precision == "int4":
        return None

    if spec.precision == "int8":
        if spec.form != "integer":
            return None  # requantised outputs: rounding is not linear, only the full reference is exact
        if spec.family == "gemm":
            return GemmOutput(feeds["X"], feeds["W"])
        return ConvForward(int8.executed_kernel(spec), feeds["X"], feeds["W"]) if spec.family == "conv" else None
    if spec.family == "gemm":
        return GemmOutput(*gemm.operands(spec, feeds))
    if spec.family == "sparse":
        return GemmOutput(*sparse.operands(spec, feeds))
    if spec.family == "conv":
        kernel = ConvKernel(**spec.params)
        if spec.pass_name == "fwd":
            return ConvForward(kernel, feeds["X"], feeds["W"])
        if spec.pass_name == "bwd_data":
            return ConvBackwardData(kernel, feeds["dY"], feeds["W"])
        if spec.pass_name == "bwd_filter":
            return ConvBackwardFilter(kernel, feeds["X"], feeds["dY"])
    return None


@dataclass(frozen=True)
class Projected:
    """A projection check's outcome: per discrepancy element, the largest |Y·z - ref·z| (+ rounding)."""

    deviation: np.ndarray
    flagged: np.ndarray
    error: float
    false_accept: float


def _reference_projection(
    linear: LinearOutput, z: np.ndarray, model: bytes, spec: GraphSpec, cache: ReferenceCache, **params
) -> tuple[np.ndarray, float]:
    """(reference projection, its rounding bound), cached: it depends on the graph alone."""
    key = entry_key("projection", model, spec, width=linear.width, probes=z.shape[1], **params)
    stored = cache.get(key)
    if stored is not None:
        return stored["ref"], float(stored["magnitude"])
    path, magnitude = linear.reference_magnitude()
    ref = linear.project_reference(z)
    bound = gamma(path) * magnitude
    cache.put(key, {"ref": ref, "magnitude": np.array(bound)})
    return ref, bound


def float_projection(
    linear: LinearOutput, spec: GraphSpec, model: bytes, y: np.ndarray, rule: Tolerance, cache: ReferenceCache
) -> Projected:
    """Random-sign projections (probes.SIGN_PROBES) of a float output beside the reference's. With
    M = max|Y| / (1 + τ), an element is flagged when some probe moves more than τ·M after float64
    rounding is added: an element beyond τ times the reference's own maximum escapes one probe with
    probability at most 1/2, all of them with at most 2^-SIGN_PROBES."""
    z = probes.signs(spec.seed, linear.width, probes.SIGN_PROBES)
    ref, ref_rounding = _reference_projection(linear, z, model, spec, cache, sign_probes=z.shape[1])
    y_max = abs_max(y)
    rounding = ref_rounding + gamma(linear.width) * linear.width * y_max
    deviation = np.abs(linear.project_output(y, z) - ref).max(axis=-1) + rounding
    scale = y_max / (1 + rule.bound)
    flagged = ~(deviation <= rule.bound * scale)  # NaN is flagged
    worst = float(deviation.max()) if deviation.size else 0.0
    return Projected(deviation, flagged, worst / scale if scale > 0 else worst, 2.0 ** -z.shape[1])


def exact_bits(linear: LinearOutput, spec: GraphSpec) -> int:
    """Random bits per exact probe entry that keep every projected sum an integer below 2^53."""
    _, magnitude = linear.reference_magnitude()  # Σ|terms| of one projected element at probe entries 1
    y_bound = linear.width * accumulator_bound(spec, linear)
    return min(probes.INTEGER_POWER_BITS, 52 - math.ceil(math.log2(max(magnitude, y_bound, 2.0))))


def exact_usable(linear: LinearOutput, spec: GraphSpec) -> bool:
    """Whether the exact check applies: no correct element can wrap around the int32 accumulator
    (the full reference wraps as the runtime does), and enough random bits fit below 2^53."""
    return accumulator_bound(spec, linear) < 2**31 and exact_bits(linear, spec) >= EXACT_MIN_BITS


def accumulator_bound(spec: GraphSpec, linear: LinearOutput) -> float:
    """The largest |element| a correct int8 `integer` output can hold: reduction length · max|x| · max|w|."""
    operands = (linear.left, linear.right) if isinstance(linear, GemmOutput) else (linear.x, linear.w)
    return spec.attrs["reduction"] * abs_max(operands[0]) * abs_max(operands[1])


def exact_projection(
    linear: LinearOutput, spec: GraphSpec, model: bytes, y: np.ndarray, cache: ReferenceCache
) -> Projected:
    """Projections on random integers in [0, 2^bits), compared exactly (integers below 2^53 are exact in
    float64): a wrong output escapes one probe with probability at most 2^-bits (Schwartz–Zippel), all
    of them with at most 2^-20. An element beyond the largest a correct output can hold is flagged outright."""
    bits = exact_bits(linear, spec)
    z = probes.integers(spec.seed, linear.width, bits)
    ref, _ = _reference_projection(linear, z, model, spec, cache, integer_bits=bits)
    deviation = np.abs(linear.project_output(y, z) - ref).max(axis=-1)
    flagged = (deviation != 0) | (abs_max(y) > accumulator_bound(spec, linear))
    return Projected(deviation, flagged, float(flagged.any()), 2.0 ** -(bits * z.shape[1]))


def _today_cost(linear: LinearOutput, spec: GraphSpec) -> float:
    """Multiply-adds of the full check the projection would replace (row-sampled outputs: the sample)."""
    rows = verify_rows(spec)
    return linear.full_cost * (len(rows) / spec.outputs[0].shape[0] if rows is not None else 1.0)


def projection_pays(linear: LinearOutput, spec: GraphSpec) -> bool:
    """Whether the projection costs less than the full check it replaces."""
    count = (
        probes.SIGN_PROBES
        if spec.precision != "int8"
        else math.ceil(probes.INTEGER_POWER_BITS / max(1, exact_bits(linear, spec)))
    )
    return count * linear.probe_cost < _today_cost(linear, spec)


def projection_check(
    linear: LinearOutput,
    spec: GraphSpec,
    model: bytes,
    outputs: dict[str, np.ndarray],
    rule: Tolerance,
    full_reference: FullReference,
    cache: ReferenceCache,
) -> Verdict | Unverified:
    """The projection check, settling anything flagged with the full reference (or, for a huge
    GEMM output, with its flagged rows and the seeded sample)."""
    exact = spec.precision == "int8"
    y = outputs[linear.output]
    projected = (
        exact_projection(linear, spec, model, y, cache)
        if exact
        else float_projection(linear, spec, model, y, rule, cache)
    )
    kind = "exact-projection" if exact else "projection"
    if not projected.flagged.any():
        return Verdict(
            True,
            projected.error,
            rule.metric,
            rule.bound,
            weak=degenerate(y),
            check=kind,
            false_accept=projected.false_accept,
            by="numpy",
        )
    sampled = verify_rows(spec)
    if sampled is None or exact or y.ndim != 2:
        return full_check(spec, model, outputs, full_reference, cache, via=kind)
    flagged = np.flatnonzero(projected.flagged)
    worst = flagged[np.argsort(projected.deviation[flagged])[::-1][:VERIFY_ROWS]]
    rows = np.union1d(worst, sampled)
    expected, by, rule = full_reference(rows)
    verdict = compare({name: np.asarray(value)[rows] for name, value in outputs.items()}, expected, rule)
    escaped = 0.0 if len(flagged) <= VERIFY_ROWS else 1.0 - len(sampled) / spec.outputs[0].shape[0]
    return replace(
        verdict,
        check=f"{kind}+rows",
        by=by,
        rows_checked=len(rows),
        false_accept=min(1.0, projected.false_accept + escaped),
    )
