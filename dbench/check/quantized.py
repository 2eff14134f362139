"""The rule a quantized graph's outputs are judged by (docs/method.md, "Quantized outputs"), derived
from the graph and its reference, in one place for whole models, `--graphs` files and predict's units.

Two correct runtimes compute the value before each rounding (a QuantizeLinear, a DynamicQuantizeLinear,
a QLinear op's requantization) in different float arithmetic: sums in another order, a fused multiplier,
int32 against float32 accumulation. Where the exact value lies within that difference of a rounding
tie, they round it a step apart; the step moves every value computed from it, which flips more ties
further on. The reference is evaluated again PERTURBED_EVALUATIONS times with every rounding made of
x/scale + η, η uniform in [-EPSILON, EPSILON] steps and drawn anew for every element: each evaluation
is one more implementation that differs only by rounding, and its outputs' distance from the
reference is what the chain of requantizations accumulates from such differences.

A quantized output (an 8-bit integer output, or a DequantizeLinear of a quantized value computed in the
graph) is compared in steps of its scale: its largest error at most SPREAD_FACTOR times the largest
any perturbed evaluation showed plus SPREAD_MARGIN step (the maximum of many elements varies from run
to run, and the runtime's own last rounding may fall on the other side of theirs), its root mean
square at most RMS_FACTOR times theirs (at least RMS_FLOOR), its mean shifted by at most BIAS_MARGIN
step more than theirs (a rounding to nearest is unbiased; no faithful rounding of the last
requantization shifts its output by half a step or more), and a dequantized output must lie on its
grid. Any other output (a float computed after a rounding: a dynamic MatMulInteger's rescaled result)
keeps its relative metric, its bound the float tolerance
plus FLOAT_MARGIN times the largest relative difference the perturbed evaluations showed, and its
relative root mean square (RMS(out - ref) / RMS(ref)) within the float tolerance plus RMS_FACTOR times
theirs."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from dbench.gen.graph import GraphSpec
from dbench.gen.tolerance import OutputRule, Tolerance

EPSILON = 2.0**-10
"""The most, in steps, two correct implementations' values before one rounding differ: an fp32 dot
product of up to 4096 terms whose sum is within the 8-bit range (2^8 steps) is off by about
sqrt(4096) · 2^-24 · 2^8 = 2^-10 steps. The cascade it starts hardly depends on it: on ResNet-18 int8,
ε from 1e-4 to 1e-2 moved the outputs by the same 0.45-0.50 steps RMS as ONNX Runtime's and OpenVINO's
own differences from the reference (docs/method.md)."""
PERTURBED_EVALUATIONS = 3
SPREAD_FACTOR = 1.5
SPREAD_MARGIN = 1.0
RMS_FACTOR = 1.5
RMS_FLOOR = 0.5
BIAS_MARGIN = 0.5
FLOAT_MARGIN = 2.0
ROUNDING_OPS = frozenset({"QuantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul"})
"""The ops that round a computed value onto an integer grid."""
STEP_TYPES = frozenset({TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT16, TensorProto.INT16})
"""Integer outputs whose units are quantization steps."""
SEED = 0x51D


def rounding_nodes(model: onnx.ModelProto) -> int:
    """How many nodes of the main graph round a computed value (ROUNDING_OPS)."""
    return sum(node.op_type in ROUNDING_OPS for node in model.graph.node)


def _constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def _step_values(model: onnx.ModelProto, names) -> dict[str, tuple[float, float, bool]]:  # noqa: ANN001
    """Which of `names` are quantized values: name -> (scale, zero point, on a grid). An 8- or 16-bit
    integer output, or a rounding op's integer result, has steps for units (scale 1); a
    DequantizeLinear with a scalar scale of an integer value the graph computed is on its grid,
    (q - zero point) · scale."""
    producers = {name: node for node in model.graph.node for name in node.output}
    types = {v.name: v.type.tensor_type.elem_type for v in model.graph.output}
    constants = _constants(model)
    found = {}
    for name in names:
        node = producers.get(name)
        rounded = node is not None and node.op_type in ROUNDING_OPS and name == node.output[0]
        if types.get(name) in STEP_TYPES or rounded:
            found[name] = (1.0, 0.0, False)
            continue
        if node is None or node.op_type != "DequantizeLinear" or node.input[0] in constants:
            continue
        scale = constants.get(node.input[1])
        zero = constants.get(node.input[2]) if len(node.input) > 2 and node.input[2] else np.zeros(())
        if scale is not None and zero is not None and scale.size == 1 and zero.size == 1:
            found[name] = (float(scale.reshape(())), float(zero.reshape(())), True)
    return found


def perturbed_ops(rng: np.random.Generator) -> list:
    """onnx.reference implementations of the rounding ops that round x/scale + η (η uniform in
    [-EPSILON, EPSILON], drawn from `rng` per element) instead of x/scale."""
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops.op_conv import Conv
    from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_21

    def jitter(shape: tuple[int, ...]) -> np.ndarray:
        return rng.uniform(-EPSILON, EPSILON, shape)

    def requantize(x: np.ndarray, scale: np.ndarray, zero: np.ndarray | None, dtype) -> np.ndarray:  # noqa: ANN001
        info = np.iinfo(dtype)
        q = np.rint(x / scale + jitter(x.shape)) + (0 if zero is None else zero.astype(np.float64))
        return np.clip(q, info.min, info.max).astype(dtype)

    def per_axis(scale: np.ndarray, ndim: int, axis: int) -> np.ndarray:
        scale = np.asarray(scale, dtype=np.float64)
        if scale.ndim == 1 and ndim > 0:
            view = [1] * ndim
            view[axis % ndim] = -1
            return scale.reshape(view)
        return scale

    class QuantizeLinear(OpRun):
        op_domain = ""

        def _run(self, x, y_scale, zero_point=None, axis=1, **_unused):  # noqa: ANN001, ANN202
            dtype = zero_point.dtype if zero_point is not None else np.uint8
            zero = None if zero_point is None else per_axis(zero_point, x.ndim, axis)
            return (requantize(x.astype(np.float64), per_axis(y_scale, x.ndim, axis), zero, dtype),)

    class DynamicQuantizeLinear(OpRun):
        op_domain = ""

        def _run(self, x):  # noqa: ANN001, ANN202 (ONNX's formula: scale and zero point from the range)
            high, low = np.float32(max(0.0, float(np.max(x)))), np.float32(min(0.0, float(np.min(x))))
            scale = np.float32(1.0 if high == low else high - low) / np.float32(255)
            zero = np.rint(np.clip(np.float32(0) - low / scale, 0, 255))
            y = requantize(x.astype(np.float32), scale, np.asarray(zero), np.uint8)
            return y, np.array(scale, dtype=x.dtype), np.array(zero, dtype=np.uint8)

    class QLinearMatMul(OpRun):
        op_domain = ""

        def _run(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):  # noqa: ANN001, ANN202
            acc = np.matmul(
                a.astype(np.float64) - a_zero_point.astype(np.float64),
                b.astype(np.float64) - per_axis(b_zero_point, b.ndim, -1),
            )
            exact = acc * (np.float64(a_scale) * per_axis(b_scale, b.ndim, -1))
            return (requantize(exact, np.float64(y_scale), y_zero_point, y_zero_point.dtype),)

    class QLinearConv(OpRun):
        op_domain = ""

        def _run(self, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, **attrs):  # noqa: ANN001, ANN202, N803
            xf = DequantizeLinear_21.eval(x, x_scale, x_zero_point).astype(np.float64)
            wf = DequantizeLinear_21.eval(w, w_scale, w_zero_point, axis=0).astype(np.float64)
            bias = None if B is None else B.astype(np.float64) * np.float64(x_scale) * np.asarray(w_scale, np.float64)
            kept = {k: v for k, v in attrs.items() if v is not None}
            exact = Conv.eval(xf, wf, bias, **kept) if bias is not None else Conv.eval(xf, wf, **kept)
            return (requantize(exact, np.float64(y_scale), y_zero_point, y_zero_point.dtype),)

    return [QuantizeLinear, DynamicQuantizeLinear, QLinearMatMul, QLinearConv]


def _relative_rms(out: np.ndarray, ref: np.ndarray) -> float:
    """RMS(out - ref) / RMS(ref)."""
    spread = float(np.sqrt(np.mean(ref**2))) if out.size else 0.0
    return float(np.sqrt(np.mean((out - ref) ** 2))) / spread if spread > 0 else 0.0


def _relative(out: np.ndarray, ref: np.ndarray) -> float:
    diff = float(np.abs(out - ref).max()) if out.size else 0.0
    scale = float(np.abs(ref).max()) if out.size else 0.0
    return diff / scale if scale > 0 else diff


def derive(
    model: onnx.ModelProto,
    spec: GraphSpec,
    feeds: dict[str, np.ndarray],
    expected: dict[str, np.ndarray],
    base: Tolerance,
    every_value: bool = False,
) -> Tolerance:
    """The graph's rule: `base` where nothing in it rounds; else a rule of its own (module docstring)
    for every output, or with `every_value` for every value the reference computed (`expected` then
    holds them all: what the first node that differs is looked for with), from PERTURBED_EVALUATIONS
    perturbed evaluations of the reference. A perturbed evaluation the reference cannot finish leaves
    `base`, saying nothing more than before."""
    from dbench.sources.model_reference import reference_outputs, reference_values

    if not rounding_nodes(model):
        return base
    evaluate = reference_values if every_value else reference_outputs
    steps = _step_values(model, expected)
    rng = np.random.default_rng(SEED)
    spread = {name: 0.0 for name in expected}
    shift, rms = dict(spread), dict(spread)
    for _ in range(PERTURBED_EVALUATIONS):
        perturbed, _by = evaluate(model, spec, feeds, new_ops=perturbed_ops(rng))
        if perturbed is None:
            return base
        for name, ref in expected.items():
            out, ref64 = np.asarray(perturbed[name], np.float64), np.asarray(ref, np.float64)
            finite = np.isfinite(ref64) & np.isfinite(out)
            if name in steps:
                diff = (out[finite] - ref64[finite]) / steps[name][0]
                spread[name] = max(spread[name], float(np.abs(diff).max()) if diff.size else 0.0)
                shift[name] = max(shift[name], abs(float(diff.mean())) if diff.size else 0.0)
                rms[name] = max(rms[name], float(np.sqrt(np.mean(diff**2))) if diff.size else 0.0)
            else:
                spread[name] = max(spread[name], _relative(out[finite], ref64[finite]))
                rms[name] = max(rms[name], _relative_rms(out[finite], ref64[finite]))
    rules = []
    for name in expected:
        seen = f"{PERTURBED_EVALUATIONS} evaluations rounding within {EPSILON:g} step of ties otherwise"
        if name in steps:
            scale, zero, grid = steps[name]
            rules.append(
                OutputRule(
                    name,
                    "steps",
                    SPREAD_FACTOR * spread[name] + SPREAD_MARGIN,
                    scale,
                    zero,
                    shift[name] + BIAS_MARGIN,
                    max(RMS_FACTOR * rms[name], RMS_FLOOR),
                    grid,
                    f"at most {spread[name]:g} steps, {rms[name]:.3g} in root mean square and a {shift[name]:.3g}-step "
                    f"shift in {seen}",
                )
            )
        else:
            rules.append(
                OutputRule(
                    name,
                    base.metric,
                    base.bound + FLOAT_MARGIN * spread[name],
                    rms=base.bound + RMS_FACTOR * rms[name],
                    why=f"at most {spread[name]:.3g} relative, {rms[name]:.3g} in relative root mean square in {seen}",
                )
            )
    return Tolerance(base.metric, base.bound, tuple(rules))


def _depths(model: onnx.ModelProto) -> dict[str, int]:
    """Every value's number of rounding nodes on the longest path from the graph's inputs to it."""
    depth: dict[str, int] = {}
    for node in model.graph.node:  # ONNX graphs are topologically sorted
        here = max((depth.get(name, 0) for name in node.input if name), default=0) + (node.op_type in ROUNDING_OPS)
        for name in node.output:
            depth[name] = here
    return depth


def chain_rule(model: onnx.ModelProto, base: Tolerance) -> Tolerance:
    """The rule where the reference cannot run (nothing to perturb): a quantized output within one step
    per rounding on its longest chain of them, its mean within half a step; every other output `base`."""
    if not rounding_nodes(model):
        return base
    depth = _depths(model)
    rules = tuple(
        OutputRule(
            name,
            "steps",
            float(max(1, depth.get(name, 0))),
            scale=scale,
            zero_point=zero,
            bias=BIAS_MARGIN,
            grid=grid,
            why=f"one step for each of the {depth.get(name, 0)} roundings on its longest chain (no reference "
            "to perturb)",
        )
        for name, (scale, zero, grid) in _step_values(model, [o.name for o in model.graph.output]).items()
    )
    return Tolerance(base.metric, base.bound, rules)
