"""The first node whose outputs disagree: where a runtime and the reference part ways, found by running
both on a copy of the graph whose every computed float value is also an output, and comparing value by
value in graph (topological) order. The first value over the tolerance belongs to a node whose inputs
all agreed, so the node itself is computed differently."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import onnx

from dbench.check.verdict import compare
from dbench.gen.graph import GraphSpec, TensorSpec
from dbench.gen.precision import DTYPES, ONNX_TYPES
from dbench.gen.tolerance import Tolerance

MAX_EXPOSED_BYTES = 1 << 30
"""The most bytes of intermediate values one side may hold; a larger graph is not localised."""
NO_OPS = ("Identity", "Dropout")
"""Nodes that hand their input on: a value read only by them is exposed as their output (OpenVINO keeps
one name of the two, the later one)."""
DTYPE_OF = {
    onnx_type: name for name, onnx_type in ONNX_TYPES.items() if name in ("float32", "float16", "float64", "bfloat16")
}
"""The float element types compared (integer values are indices and shapes; their consumers show them)."""


def exposed(model: onnx.ModelProto, spec: GraphSpec) -> tuple[onnx.ModelProto, GraphSpec] | str:
    """A copy of the model whose every float value computed in its main graph is an output too (graph
    order, after the model's own outputs), and its spec; or why not (its values would not fit)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    typed = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output] if v.type.HasField("tensor_type")}
    own = {o.name for o in model.graph.output}
    readers: dict[str, set[str]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    extra: list[TensorSpec] = []
    infos = []
    total = 0
    for node in model.graph.node:
        for name in node.output:
            value = typed.get(name)
            if (
                not name
                or name in own
                or value is None
                or value.type.tensor_type.elem_type not in DTYPE_OF
                or (readers.get(name) and readers[name] <= set(NO_OPS))
            ):
                continue
            dtype = DTYPE_OF[value.type.tensor_type.elem_type]
            dims = [d.dim_value if d.HasField("dim_value") else 0 for d in value.type.tensor_type.shape.dim]
            total += math.prod(dims) * DTYPES[dtype].itemsize
            extra.append(TensorSpec(name, tuple(dims), dtype, "output"))
            infos.append(value)
    if total > MAX_EXPOSED_BYTES:
        return f"its intermediate values take {total / 2**30:.1f} GiB, above {MAX_EXPOSED_BYTES / 2**30:g} GiB"
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.graph.output.extend(infos)
    return copy, dataclasses.replace(spec, outputs=spec.outputs + tuple(extra))


def _upstream(graph: onnx.GraphProto, targets: list[str]) -> set[str]:
    """Every value the targets are computed from, the targets included."""
    producers = {name: node for node in graph.node for name in node.output}
    seen, todo = set(targets), list(targets)
    while todo:
        node = producers.get(todo.pop())
        for name in node.input if node is not None else ():
            if name and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def first_disagreement(
    model: onnx.ModelProto,
    reference: dict[str, np.ndarray],
    runtime: dict[str, np.ndarray],
    rule: Tolerance,
    targets: list[str],
) -> dict | None:
    """The first node of the main graph (graph order) that feeds one of the `targets` (the outputs that
    disagree) and one of whose outputs the runtime computed outside the tolerance of the reference's:
    its name, op, domain and opset, the output and its error; None when every such value agrees. Values
    no target depends on are not compared (an inference Dropout's unused mask, which the spec leaves open)."""
    opsets = {(o.domain or "ai.onnx"): o.version for o in model.opset_import}
    wanted = _upstream(model.graph, targets)
    for index, node in enumerate(model.graph.node):
        for name in node.output:
            if name in wanted and name in reference and name in runtime:
                verdict = compare({name: runtime[name]}, {name: reference[name]}, rule)
                if not verdict.ok:
                    domain = node.domain or "ai.onnx"
                    return {
                        "node": node.name or f"#{index}",
                        "op": node.op_type,
                        "domain": domain,
                        "opset": opsets.get(domain),
                        "output": name,
                        "error": verdict.error,
                    }
    return None
