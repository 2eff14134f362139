"""A unit's own graph: the nodes it owns, the DequantizeLinear nodes it repeats, and the nodes of the
static values it reads (weights' conversions, shape arithmetic: the runtime folds them again when it
loads the unit, as it did in the model); the model's weights it reads as initializers; every other
value it reads as an input of the model's real shape; what it hands to other units (or the model's
outputs) as its outputs. Its nodes keep their names, so its profile names the same layers."""

from __future__ import annotations

import onnx
from onnx import helper

from dbench.errors import UnsupportedError
from dbench.executed import CHANNELS_LAST, NCHWC_BLOCK_KEY, TO_CHANNELS_LAST, ExecutedLayer, nchwc_block
from dbench.frommodel.dims import FIRST_IR_WITHOUT_INPUT_INITIALIZERS
from dbench.units.cut import Unit
from dbench.units.structure import Structure


def members(structure: Structure, unit: Unit) -> list[int]:
    """The nodes of the unit's graph, in model order: owned, repeated, and the static values' nodes."""
    found = set(unit.nodes) | set(unit.borrowed)
    todo = list(found)
    while todo:
        i = todo.pop()
        for t in structure.reads[i]:
            p = structure.producer.get(t)
            if p is not None and p not in found and t in structure.static:
                found.add(p)
                todo.append(p)
    return sorted(found)


def _value(name: str, types: dict[str, onnx.ValueInfoProto], what: str) -> onnx.ValueInfoProto:
    """The value's inferred type; an input's shape must be known too (it is drawn at that shape)."""
    value = types.get(name)
    if value is None or not value.type.HasField("tensor_type") or not value.type.tensor_type.elem_type:
        raise UnsupportedError(
            f"the type of {what} {name!r} is unknown after shape inference: this unit cannot be a graph of its own"
        )
    tensor = value.type.tensor_type
    if what == "input" and not (tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim)):
        raise UnsupportedError(
            f"the shape of input {name!r} is unknown after shape inference: this unit cannot be a graph of its own"
        )
    return value


def value_types(shapes: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Every typed value of the inferred model by name (inputs, intermediate values, outputs)."""
    return {v.name: v for v in [*shapes.graph.input, *shapes.graph.value_info, *shapes.graph.output]}


def unit_model(
    model: onnx.ModelProto, types: dict[str, onnx.ValueInfoProto], structure: Structure, unit: Unit, name: str
) -> onnx.ModelProto:
    """The unit as a model of its own (`model`: the whole model with its weights and dbench's node
    names; `types`: its inferred values). UnsupportedError when a value it reads or writes has no
    known type."""
    nodes = members(structure, unit)
    inside = set(nodes)
    owned = set(unit.nodes)
    produced = {t for i in nodes for t in structure.nodes[i].output if t}
    reads = list(dict.fromkeys(t for i in nodes for t in structure.reads[i] if t not in produced))
    stored = {t.name: t for t in model.graph.initializer}
    initializers = [stored[t] for t in reads if t in stored]
    inputs = [_value(t, types, "input") for t in reads if t not in stored]
    used_outside = [
        t
        for i in sorted(owned)
        for t in structure.nodes[i].output
        if t and (t in structure.outputs or any(r not in inside for r in structure.readers.get(t, [])))
    ]
    if not used_outside:  # a dead end (nothing reads it): its last node's outputs
        used_outside = [t for t in structure.nodes[max(owned)].output if t]
    outputs = [_value(t, types, "output") for t in dict.fromkeys(used_outside)]
    graph = helper.make_graph([structure.nodes[i] for i in nodes], name, inputs, outputs, initializer=initializers)
    unit_graph = helper.make_model(graph, opset_imports=list(model.opset_import), producer_name="dbench units")
    unit_graph.ir_version = max(model.ir_version, FIRST_IR_WITHOUT_INPUT_INITIALIZERS)
    unit_graph.functions.extend(model.functions)
    return unit_graph


def _channels_last(value: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    """The value as a channels-last tensor: its 4-d NCHW shape as NHWC, the same name and element type."""
    dims = [value.type.tensor_type.shape.dim[i].dim_value for i in TO_CHANNELS_LAST]
    return helper.make_tensor_value_info(value.name, value.type.tensor_type.elem_type, dims)


def executed_model(unit_graph: onnx.ModelProto, layer: ExecutedLayer) -> onnx.ModelProto | None:
    """The unit as the runtime executes it inside the model: its one channels-last layer's node, reading
    and writing the unit's own input and output as NHWC tensors (what the model's neighbouring layers
    hand it), with the unit graph's opsets and the layer's domain. None where the unit is not one such
    layer over one 4-d input and one 4-d output: then the unit graph itself is timed."""
    graph = unit_graph.graph
    stored = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in stored]
    if (
        layer.layout != CHANNELS_LAST
        or len(inputs) != 1
        or len(graph.output) != 1
        or len(layer.inputs) != 1
        or any(len(v.type.tensor_type.shape.dim) != 4 for v in [*inputs, *graph.output])
    ):
        return None
    domain, _, op_type = layer.op_type.rpartition(":")
    node = helper.make_node(
        op_type,
        [inputs[0].name],
        [graph.output[0].name],
        name=layer.name,
        domain=domain or None,
        **dict(layer.attributes),
    )
    executed = helper.make_graph([node], graph.name, [_channels_last(inputs[0])], [_channels_last(graph.output[0])])
    opsets = [o for o in unit_graph.opset_import if o.domain != domain] + (
        [helper.make_opsetid(domain, 1)] if domain else []
    )
    model = helper.make_model(executed, opset_imports=opsets, producer_name="dbench units")
    model.ir_version = unit_graph.ir_version
    return model


Shape = tuple[int, list[int]]
"""A tensor's ONNX element type and dimensions."""


def known_shape(name: str, types: dict[str, onnx.ValueInfoProto]) -> Shape | None:
    """A value's element type and dimensions where the model's shape inference knows them all."""
    value = types.get(name)
    tensor = value.type.tensor_type if value is not None and value.type.HasField("tensor_type") else None
    if (
        tensor is None
        or not tensor.elem_type
        or not tensor.HasField("shape")
        or not all(d.HasField("dim_value") for d in tensor.shape.dim)
    ):
        return None
    return tensor.elem_type, [d.dim_value for d in tensor.shape.dim]


def _blocked(planar: list[int], channels_last: bool, block: int, channels: int | None = None) -> list[int]:
    """The NCHWc tensor of a planar 4-d tensor (NCHW, or NHWC where `channels_last`): [N, C padded to
    the block, H, W] (`channels`: C where the planar side is not known)."""
    n, spatial = planar[0], (planar[1:3] if channels_last else planar[2:])
    c = channels if channels is not None else (planar[3] if channels_last else planar[1])
    return [n, -(-c // block) * block, *spatial]


def _inserted_shapes(layer: ExecutedLayer, types: dict[str, onnx.ValueInfoProto]) -> tuple[Shape, Shape] | None:
    """The input's and output's type and dimensions of a layer the runtime inserted: the side that is
    a tensor of the model as shape inference gives it, the other side from the op (the NCHWc block
    padding of a reorder, a Transpose's permutation, a Cast's type); None where neither can be told."""
    source, target = known_shape(layer.inputs[0], types), known_shape(layer.outputs[0], types)
    attributes = dict(layer.attributes)
    op = layer.op_type.rpartition(":")[2]
    block = nchwc_block(layer.layout)
    channels_last = bool(attributes.get("channels_last", 0))
    if op == "ReorderInput" and block and source and len(source[1]) == 4:
        return source, (source[0], _blocked(source[1], channels_last, block))
    if op == "ReorderOutput" and block and target and len(target[1]) == 4:
        return (target[0], _blocked(target[1], channels_last, block, int(attributes["channels"]))), target
    if op == "Transpose" and (source or target) and "perm" in attributes:  # a report without it kept no attributes
        perm = list(attributes["perm"])
        if source:
            return source, (source[0], [source[1][p] for p in perm])
        dims = [0] * len(perm)
        for axis, p in enumerate(perm):
            dims[p] = target[1][axis]
        return (target[0], dims), target
    if op == "Cast" and source and "to" in attributes:
        return source, (int(attributes["to"]), source[1])
    return None


def inserted_model(
    model: onnx.ModelProto, types: dict[str, onnx.ValueInfoProto], layer: ExecutedLayer
) -> onnx.ModelProto | None:
    """A layer the runtime inserted between the model's layers (ONNX Runtime's NCHWc ReorderInput and
    ReorderOutput, the NHWC transformer's Transposes, a Cast), as a graph of its one node with the
    runtime's attributes, reading and writing its tensors at the shapes they have inside the model; an
    NCHWc reorder's graph records the block (NCHWC_BLOCK_KEY) for the reference check. None where the
    layer is not one input copied to one output whose shapes can be told (dbench.runtimes.ort_execution.COPIES
    lists those reported with their attributes): it is then shown with its time inside the model only."""
    if len(layer.inputs) != 1 or len(layer.outputs) != 1:
        return None
    shapes = _inserted_shapes(layer, types)
    if shapes is None:
        return None
    (in_type, in_dims), (out_type, out_dims) = shapes
    domain, _, op_type = layer.op_type.rpartition(":")
    node = helper.make_node(
        op_type, [layer.inputs[0]], [layer.outputs[0]], name=layer.name, domain=domain or None, **dict(layer.attributes)
    )
    graph = helper.make_graph(
        [node],
        layer.name,
        [helper.make_tensor_value_info(layer.inputs[0], in_type, in_dims)],
        [helper.make_tensor_value_info(layer.outputs[0], out_type, out_dims)],
    )
    opsets = [o for o in model.opset_import if not domain or o.domain != domain] + (
        [helper.make_opsetid(domain, 1)] if domain else []
    )
    inserted = helper.make_model(graph, opset_imports=opsets, producer_name="dbench units")
    inserted.ir_version = max(model.ir_version, FIRST_IR_WITHOUT_INPUT_INITIALIZERS)
    block = nchwc_block(layer.layout)
    if block:
        inserted.metadata_props.add(key=NCHWC_BLOCK_KEY, value=str(block))
    return inserted


def shaped(model: onnx.ModelProto, types: dict[str, onnx.ValueInfoProto]) -> onnx.ModelProto:
    """A copy of a unit graph with the model's inferred types of its inner values (its shapes, as the
    kernel walk and the feed rules read them)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    declared = {v.name for v in [*copy.graph.input, *copy.graph.output]}
    inner = {t for node in copy.graph.node for t in node.output if t and t not in declared}
    copy.graph.value_info.extend(types[t] for t in sorted(inner) if t in types)
    return copy
