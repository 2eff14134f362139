"""Which check verifies a graph, and running it with the reference cache:

- `full`: the whole reference (dbench's float64 numpy, or onnx.reference for a foreign model),
  elementwise under the graph's tolerance; `rows` when only a seeded sample of a huge GEMM output's
  rows is compared (as before these checks existed);
- `projection`: a linear output (GEMM, sparse, convolution passes) projected on 20 random sign
  vectors beside the same projection of the reference, computed without the reference; anything
  flagged is settled by the full reference (`projection+full`) or its flagged rows (`projection+rows`);
- `exact-projection`: int8 `integer` outputs projected on random integers, compared exactly;
- `steps`: a recurrent forward graph, every step from the runtime's own previous state.

A projection is used where it costs less than the check it replaces; every reference part that does
not depend on the runtime's output is cached (dbench.cache), so a second runtime pays only for
projecting its own output. False-accept probabilities: docs/method.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from dbench.cache.keys import entry_key
from dbench.cache.store import ReferenceCache
from dbench.check import probes
from dbench.check.linear import ConvBackwardData, ConvBackwardFilter, ConvForward, GemmOutput, LinearOutput, abs_max, gamma
from dbench.check.steps import Anchor, anchored_steps, check_steps, step_inputs
from dbench.gen.graph import GraphSpec
from dbench.gen.tolerance import Tolerance
from dbench.sources.contract import NUMPY
from dbench.worker.verify import Verdict, compare, degenerate

VERIFY_ROWS = 256
"""Above this many output rows (GEMM and sparse), the full check compares a seeded sample of rows."""
EXACT_MIN_BITS = 4
"""Fewer random bits per exact probe than this (huge integer sums near float64's 2^53) and the full check is used."""

FullReference = Callable[[np.ndarray | None], tuple[dict[str, np.ndarray] | None, str, Tolerance]]
"""rows -> (expected outputs, what computed them, tolerance rule); None outputs when it cannot run."""


@dataclass(frozen=True)
class Unverified:
    """The graph has no reference that can run (a foreign model onnx.reference cannot evaluate)."""

    reason: str


def sample_rows(spec: GraphSpec) -> np.ndarray | None:
    """A seeded sample of VERIFY_ROWS output rows of a huge float GEMM or sparse output, else None."""
    from dbench.gen.plan import ROW_SAMPLED

    if spec.family not in ROW_SAMPLED or spec.precision == "int8" or not spec.outputs or not spec.outputs[0].shape:
        return None  # whole outputs: another family, exact int8, or a 0-d output (no rows to sample)
    rows = spec.outputs[0].shape[0]
    if rows <= VERIFY_ROWS:
        return None
    return np.sort(np.random.default_rng(spec.seed).choice(rows, VERIFY_ROWS, replace=False))


def linear_output(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> LinearOutput | None:
    """The graph's output as a LinearOutput where it is one (float GEMM, sparse, convolution passes,
    int8 `integer`), else None."""
    from dbench.catalog.kernels import ConvKernel
    from dbench.gen import gemm, int8, sparse

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


def malformed(spec: GraphSpec, outputs: dict[str, np.ndarray], rule: Tolerance) -> Verdict | None:
    """A failing verdict when an output is missing, has the wrong shape or non-finite values."""
    for tensor in spec.outputs:
        out = outputs.get(tensor.name)
        problem = (f"output {tensor.name} missing" if out is None else
                   f"output {tensor.name} has shape {tuple(out.shape)}, expected {tensor.shape}" if tuple(out.shape) != tensor.shape else
                   f"output {tensor.name} has non-finite values" if not np.isfinite(out).all() else "")
        if problem:
            return Verdict(False, math.inf, rule.metric, rule.bound, problem)
    return None


# ---------------------------------------------------------------------------------------- full


def full_check(spec: GraphSpec, model: bytes, outputs: dict[str, np.ndarray], full_reference: FullReference,
               cache: ReferenceCache, rows: np.ndarray | None = None, via: str = "") -> Verdict | Unverified:
    """The reference outputs (only `rows` of them when given) from the cache or computed and cached,
    compared elementwise; `via` names the check that led here (`projection`)."""
    key = entry_key("full", model, spec, rows=None if rows is None else rows.tolist())
    stored = cache.get(key)
    if stored is not None:
        by, rule = str(stored.pop(".by")), Tolerance(str(stored.pop(".metric")), float(stored.pop(".bound")))
        expected = stored
    else:
        expected, by, rule = full_reference(rows)
        if expected is None:
            return Unverified(by)
        cache.put(key, {**expected, ".by": np.array(by), ".metric": np.array(rule.metric), ".bound": np.array(rule.bound)})
    if rows is not None:
        outputs = {name: np.asarray(value)[rows] for name, value in outputs.items()}
    verdict = compare(outputs, expected, rule)
    kind = "full" if rows is None else "rows"
    total = spec.outputs[0].shape[0] if rows is not None else 0
    return replace(verdict, check=f"{via}+{kind}" if via else kind, by=by,
                   false_accept=0.0 if rows is None else 1.0 - len(rows) / total,
                   rows_checked=None if rows is None else len(rows))


# ---------------------------------------------------------------------------------- projection


@dataclass(frozen=True)
class Projected:
    """A projection check's outcome: per discrepancy element, the largest |Y·z - ref·z| (+ rounding)."""

    deviation: np.ndarray
    flagged: np.ndarray
    error: float
    false_accept: float


def _reference_projection(linear: LinearOutput, z: np.ndarray, model: bytes, spec: GraphSpec, cache: ReferenceCache,
                          **params) -> tuple[np.ndarray, float]:
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


def float_projection(linear: LinearOutput, spec: GraphSpec, model: bytes, y: np.ndarray, rule: Tolerance,
                     cache: ReferenceCache) -> Projected:
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


def exact_projection(linear: LinearOutput, spec: GraphSpec, model: bytes, y: np.ndarray, cache: ReferenceCache) -> Projected:
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
    rows = sample_rows(spec)
    return linear.full_cost * (len(rows) / spec.outputs[0].shape[0] if rows is not None else 1.0)


def projection_pays(linear: LinearOutput, spec: GraphSpec) -> bool:
    """Whether the projection costs less than the full check it replaces."""
    count = probes.SIGN_PROBES if spec.precision != "int8" else math.ceil(probes.INTEGER_POWER_BITS / max(1, exact_bits(linear, spec)))
    return count * linear.probe_cost < _today_cost(linear, spec)


def projection_check(linear: LinearOutput, spec: GraphSpec, model: bytes, outputs: dict[str, np.ndarray],
                     rule: Tolerance, full_reference: FullReference, cache: ReferenceCache) -> Verdict | Unverified:
    """The projection check, settling anything flagged with the full reference (or, for a huge
    GEMM output, with its flagged rows and the seeded sample)."""
    exact = spec.precision == "int8"
    y = outputs[linear.output]
    projected = (exact_projection(linear, spec, model, y, cache) if exact else
                 float_projection(linear, spec, model, y, rule, cache))
    kind = "exact-projection" if exact else "projection"
    if not projected.flagged.any():
        return Verdict(True, projected.error, rule.metric, rule.bound, weak=degenerate(y), check=kind,
                       false_accept=projected.false_accept, by="numpy")
    sampled = sample_rows(spec)
    if sampled is None or exact or y.ndim != 2:
        return full_check(spec, model, outputs, full_reference, cache, via=kind)
    flagged = np.flatnonzero(projected.flagged)
    worst = flagged[np.argsort(projected.deviation[flagged])[::-1][:VERIFY_ROWS]]
    rows = np.union1d(worst, sampled)
    expected, by, rule = full_reference(rows)
    verdict = compare({name: np.asarray(value)[rows] for name, value in outputs.items()}, expected, rule)
    escaped = 0.0 if len(flagged) <= VERIFY_ROWS else 1.0 - len(sampled) / spec.outputs[0].shape[0]
    return replace(verdict, check=f"{kind}+rows", by=by, rows_checked=len(rows),
                   false_accept=min(1.0, projected.false_accept + escaped))


# --------------------------------------------------------------------------------------- steps


def steps_check(spec: GraphSpec, model: bytes, feeds: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
                rule: Tolerance, cache: ReferenceCache) -> Verdict:
    """Every step of a recurrent forward graph from the runtime's own previous state (check.steps).
    The first trajectory that passes is cached as an anchor; a later one (another runtime, a re-run)
    is bounded from it without the recurrent matmuls (`steps-anchored`), and checked exactly only
    when the bounds cannot decide."""
    y = np.asarray(outputs["Y"])
    y = y.reshape(y.shape[0], *y.shape[-2:])
    inputs = step_inputs(spec, feeds)
    key = entry_key("steps-anchor", model, spec)
    stored = cache.get(key)
    tau = rule.bound
    if stored is not None:
        bounded = anchored_steps(inputs, Anchor.from_arrays(stored), y)
        detail = f"Y step {bounded.worst_step}"
        if bounded.upper <= tau * bounded.scale_low:
            error = bounded.upper / bounded.scale_low if bounded.scale_low > 0 else 0.0
            return Verdict(True, error, rule.metric, tau, detail, degenerate(y), "steps-anchored", 0.0, "numpy")
        if bounded.lower > tau * bounded.scale_high:
            error = bounded.lower / bounded.scale_high if bounded.scale_high > 0 else math.inf
            return Verdict(False, error, rule.metric, tau, detail, degenerate(y), "steps-anchored", 0.0, "numpy")
    result, anchor = check_steps(inputs, y, record=stored is None)
    error = result.worst / result.scale if result.scale > 0 else result.worst
    verdict = Verdict(error <= tau, error, rule.metric, tau, f"Y step {result.worst_step}", degenerate(y), "steps", 0.0, "numpy")
    if verdict.ok and anchor is not None:
        cache.put(key, anchor.arrays())
    return verdict


# -------------------------------------------------------------------------------------- choice


def choose(spec: GraphSpec, model: bytes, feeds: dict[str, np.ndarray], cache: ReferenceCache, reference: str = NUMPY) -> str:
    """The check for a graph: `steps` for a recurrent forward graph; the cached full reference when
    there is one (exact, already paid for); a projection where one costs less than the full check it
    replaces; else `full` (`rows` for a huge GEMM output)."""
    if reference != NUMPY:  # a foreign model: onnx.reference's outputs, whole
        return "full"
    if spec.family == "rnn" and spec.pass_name == "fwd":
        return "steps"
    rows = sample_rows(spec)
    full = "full" if rows is None else "rows"
    if cache.contains(entry_key("full", model, spec, rows=None if rows is None else rows.tolist())):
        return full
    linear = linear_output(spec, feeds)
    if linear is None or (spec.precision == "int8" and not exact_usable(linear, spec)) or not projection_pays(linear, spec):
        return full
    return "exact-projection" if spec.precision == "int8" else "projection"


def verify(spec: GraphSpec, model: bytes, feeds: dict[str, np.ndarray], outputs: dict[str, np.ndarray], reference: str,
           full_reference: FullReference, cache: ReferenceCache) -> Verdict | Unverified:
    """Verify a runtime's outputs with the check `choose` picks (module docstring)."""
    from dbench.gen.plan import tolerance

    kind = choose(spec, model, feeds, cache, reference)
    rule = tolerance(spec) if reference == NUMPY else None
    if rule is not None and (bad := malformed(spec, outputs, rule)) is not None:
        return bad
    if kind in ("full", "rows"):
        return full_check(spec, model, outputs, full_reference, cache, sample_rows(spec) if kind == "rows" else None)
    if kind == "steps":
        return steps_check(spec, model, feeds, outputs, rule, cache)
    return projection_check(linear_output(spec, feeds), spec, model, outputs, rule, full_reference, cache)
