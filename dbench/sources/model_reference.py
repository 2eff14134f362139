"""Verify a foreign model against dbench's foreign reference (onnx.reference's ReferenceEvaluator, ONNX's
own Python implementation of every standard op, with dbench's corrections: dbench.sources.foreign_reference),
when it runs every op of the model within its budget of FLOPs and seconds; and every value it computes,
for finding the first node whose outputs a runtime computes otherwise."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import onnx

from dbench.gen.graph import GraphSpec
from dbench.gen.precision import PRECISIONS
from dbench.gen.tolerance import Tolerance
from dbench.sources.contract import ONNX_REFERENCE

BY = ONNX_REFERENCE
MODEL_TOLERANCE = {
    **{name: p.tolerance for name, p in PRECISIONS.items()},
    "fp64": PRECISIONS["fp32"].tolerance,
    "int8": PRECISIONS["fp32"].tolerance,
    "int4": PRECISIONS["fp32"].tolerance,
}
"""Relative error bound of a model by its precision. fp64 as fp32 (OpenVINO computes f64 graphs in f32);
int8 as fp32 for what no rounding reaches: its quantized outputs, and the outputs computed after a
rounding, get rules of their own derived from the graph (dbench.check.quantized). int4 (weight-only) as
fp32: the reference dequantises the same blocks exactly and the runtimes compute in fp32 (dbench pins it)."""
FLOP_BUDGET = 2e11
"""Above this many FLOPs (in the kernels dbench recognises) the evaluator is not tried. Its Conv, Gemm and
MatMul are numpy/BLAS: on the 2-core development VM VGG-19 (39 GFLOP) took 6 s and ResNet-50 (8.2) 1.8 s,
so 200 GFLOP is about half a minute to a minute; pure-Python ops (pooling) are bounded by TIME_BUDGET_S."""
TIME_BUDGET_S = 120.0
"""The most seconds the evaluator may spend on one model: its pooling and a few other ops are Python
loops (Inception v2's 4 GFLOP took 11 s, 10 of them in AveragePool). Past it, the model is verified
by the other checks its row names (docs/method.md, "Foreign graphs: the reference checked")."""


def tolerance(spec: GraphSpec) -> Tolerance:
    """Relative error bound of the model's precision (runtimes and the evaluator sum in different orders)."""
    return Tolerance("rel", MODEL_TOLERANCE[spec.precision])


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0][:200]}" if text else type(err).__name__


RANDOM_OPS = {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli", "Multinomial"}
"""Ops that draw their own random numbers: two implementations never agree on them."""


def _ops(graph: onnx.GraphProto) -> set[str]:
    """Every op type in a graph and its subgraphs."""
    found = set()
    for node in graph.node:
        found.add(node.op_type)
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                found |= _ops(sub)
    return found


class OverBudget(BaseException):
    """The evaluator ran past TIME_BUDGET_S (a BaseException, so that onnx.reference's own handlers of
    Exception let it through)."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the block with OverBudget after `seconds` (a timer signal: only in the main thread,
    where the worker evaluates; elsewhere the block runs unbounded)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):  # noqa: ANN001 (signal handler)
        raise OverBudget

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _evaluator(model: onnx.ModelProto, new_ops: list | None = None):
    """The evaluator that computes the reference: onnx.reference with dbench's corrections and contrib ops
    (and `new_ops` in place of its own where given)."""
    from dbench.sources.foreign_reference import foreign_evaluator

    return foreign_evaluator(model, new_ops)


def unrepeatable(model: onnx.ModelProto) -> str:
    """Why no implementation can reproduce the model's outputs (it draws random numbers), or ""."""
    drawing = sorted(_ops(model.graph) & RANDOM_OPS)
    return f"the model draws random numbers ({', '.join(drawing)}): no reference can reproduce them" if drawing else ""


def _evaluate(
    model: onnx.ModelProto,
    spec: GraphSpec,
    feeds: dict[str, np.ndarray],
    intermediate: bool,
    new_ops: list | None = None,
):
    """(the evaluator's results, "") within the budget, or (None, why not)."""
    if why := unrepeatable(model):
        return None, why
    if spec.flops > FLOP_BUDGET:
        return None, f"{spec.flops / 1e9:.2f} GFLOP is above onnx.reference's budget of {FLOP_BUDGET / 1e9:g} GFLOP"
    if TIME_BUDGET_S <= 0:
        return None, "onnx.reference has no time budget"
    try:
        with _deadline(TIME_BUDGET_S):
            return _evaluator(model, new_ops).run(None, feeds, intermediate=intermediate), ""
    except OverBudget:
        return None, f"onnx.reference ran past its budget of {TIME_BUDGET_S:g} s"
    except Exception as err:  # an op it does not implement, or one of its own failures (MemoryError too)
        return None, f"onnx.reference cannot run this model ({_first_line(err)})"


def reference_outputs(
    model: onnx.ModelProto, spec: GraphSpec, feeds: dict[str, np.ndarray], new_ops: list | None = None
) -> tuple[dict[str, np.ndarray] | None, str]:
    """(outputs by name, BY), or (None, why the model stays unverified by the reference); `new_ops`
    replace the evaluator's implementations of their ops (a perturbed evaluation: dbench.check.quantized)."""
    results, why = _evaluate(model, spec, feeds, False, new_ops)
    if results is None:
        return None, why
    return {t.name: np.asarray(r) for t, r in zip(spec.outputs, results)}, BY


def reference_values(
    model: onnx.ModelProto, spec: GraphSpec, feeds: dict[str, np.ndarray], new_ops: list | None = None
) -> tuple[dict[str, np.ndarray] | None, str]:
    """Every value the reference computes for the model (inputs, intermediates, outputs) by name, or
    (None, why not): what the first node whose outputs disagree is looked for in (`new_ops`: as
    reference_outputs)."""
    results, why = _evaluate(model, spec, feeds, True, new_ops)
    if results is None:
        return None, why
    return {name: np.asarray(value) for name, value in results.items() if name and isinstance(value, np.ndarray)}, BY
