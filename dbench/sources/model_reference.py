"""Verify a foreign model against dbench's foreign reference (onnx.reference's ReferenceEvaluator, ONNX's
own Python implementation of every standard op, with dbench's corrections: dbench.sources.foreign_reference),
when it runs every op of the model and the model is small enough for it."""

from __future__ import annotations

import numpy as np
import onnx

from dbench.gen.graph import GraphSpec
from dbench.gen.precision import PRECISIONS
from dbench.gen.tolerance import Tolerance
from dbench.sources.contract import ONNX_REFERENCE

BY = ONNX_REFERENCE
MODEL_TOLERANCE = {**{name: p.tolerance for name, p in PRECISIONS.items()}, "fp64": PRECISIONS["fp32"].tolerance,
                   "int8": 1e-2}
"""Relative error bound of a model by its precision. fp64 as fp32 (OpenVINO computes f64 graphs in f32);
int8 about two steps of the 8-bit grid at the output's largest value (runtimes round requantised
values their own way, a step apart)."""
FLOP_BUDGET = 5e8
"""Above this many FLOPs (in the kernels dbench recognises) the pure-Python evaluator is too slow to use."""


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
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                found |= _ops(sub)
    return found


def reference_outputs(model: onnx.ModelProto, spec: GraphSpec, feeds: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray] | None, str]:
    """(outputs by name, BY), or (None, why the model stays unverified)."""
    drawing = sorted(_ops(model.graph) & RANDOM_OPS)
    if drawing:
        return None, f"the model draws random numbers ({', '.join(drawing)}): no reference can reproduce them"
    if spec.flops > FLOP_BUDGET:
        return None, f"{spec.flops / 1e9:.2f} GFLOP is above onnx.reference's budget of {FLOP_BUDGET / 1e9:g} GFLOP"
    from dbench.sources.foreign_reference import foreign_evaluator

    try:
        evaluator = foreign_evaluator(model)
        results = evaluator.run(None, feeds)
    except Exception as err:  # an op it does not implement, or one of its own failures
        return None, f"onnx.reference cannot run this model ({_first_line(err)})"
    return {t.name: np.asarray(r) for t, r in zip(spec.outputs, results)}, BY
