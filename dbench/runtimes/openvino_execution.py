"""OpenVINO's executed graph: the compiled model's runtime graph (`get_runtime_model()`), one layer per
executed primitive, each listing in `originalLayersNames` the layers of the model it was made of.
Those are OpenVINO's names; the model as OpenVINO read it maps them to the ONNX tensors its ops
produce, so each layer's sources are names of the ONNX model. Imported in the worker only."""

from __future__ import annotations

from collections import deque

from dbench.executed import ExecutedGraph, ExecutedLayer

MOVES_DATA = {"Reorder", "Convert", "Reshape", "Squeeze", "Unsqueeze"}
"""Layer types whose output holds their first input's values (another layout, precision or shape)."""
NOT_EXECUTED = {"Const", "Constant", "Input", "Parameter", "Output", "Result"}
"""Layer types that hold or hand over data and never run per call."""
SIDES = {"Parameter", "Result"}
"""Ops of the read model that carry a graph input's or output's tensor names without computing them."""


def _text(info, key: str) -> str:
    return info[key].astype(str) if key in info else ""


def tensor_names(model) -> dict[str, tuple[str, ...]]:
    """OpenVINO op friendly name -> the ONNX tensor names it computes: its outputs' names, or, for an
    op the ONNX frontend added while decomposing a node (`conv1/WithoutBiases`, a reshaped bias), the
    names of the first named ops its outputs flow into (the node it is part of)."""
    ops = list(model.get_ordered_ops())
    own = {
        op.get_friendly_name(): tuple(sorted(n for out in op.outputs() for n in out.get_names()))
        for op in ops
        if op.get_type_name() not in SIDES
    }
    found: dict[str, tuple[str, ...]] = {}
    for op in ops:
        name = op.get_friendly_name()
        if op.get_type_name() in SIDES:
            continue
        if own.get(name):
            found[name] = own[name]
            continue
        named: set[str] = set()
        seen = {name}
        todo = deque(target.get_node() for out in op.outputs() for target in out.get_target_inputs())
        while todo and not named:  # breadth first: the nearest named consumers
            for _ in range(len(todo)):
                consumer = todo.popleft()
                key = consumer.get_friendly_name()
                if key in seen or consumer.get_type_name() in SIDES:
                    continue
                seen.add(key)
                if own.get(key):
                    named.add(key)
                else:
                    todo.extend(target.get_node() for out in consumer.outputs() for target in out.get_target_inputs())
        # One named consumer: the node this op is part of. Several (a constant shared by many nodes): none.
        found[name] = own[named.pop()] if len(named) == 1 else ()
    return found


def executed_graph(compiled, model, runtime: str) -> ExecutedGraph:
    """The compiled model's runtime layers, in execution order, each with its original layers' names
    and the ONNX tensor names those compute (`model`: the model as OpenVINO read it, before compiling)."""
    names = tensor_names(model)
    layers = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        kind = _text(info, "layerType") or op.get_type_name()
        original = [n for n in _text(info, "originalLayersNames").split(",") if n]
        sources = tuple(dict.fromkeys([s for n in original for s in (n, *names.get(n, ()))]))
        inputs = tuple(
            f"{i.get_source_output().get_node().get_friendly_name()}#{i.get_source_output().get_index()}"
            for i in op.inputs()
        )
        outputs = tuple(f"{op.get_friendly_name()}#{index}" for index in range(len(op.outputs())))
        layers.append(
            ExecutedLayer(
                op.get_friendly_name(),
                kind,
                sources,
                inputs,
                outputs,
                moves_data=kind in MOVES_DATA,
                executes=kind not in NOT_EXECUTED,
            )
        )
    return ExecutedGraph(runtime, tuple(layers), tensor_names=False)
