"""When two units are the same microbenchmark: the same ops with the same attributes wired the same
way, over inputs and weights of the same types and shapes. Small constants (shapes, axes, scales,
zero points) must hold the same values; large weights need not, since the time does not depend on
them. Names (of nodes and tensors) do not count; the opsets do (an op's meaning changes with them)."""

from __future__ import annotations

import hashlib

import onnx

SMALL = 64
"""Constants of at most this many elements are compared by value."""


def _tensor_key(tensor: onnx.TensorProto) -> tuple:
    """Type and shape; the value too (without the name) for a small constant."""
    elements = 1
    for d in tensor.dims:
        elements *= d
    value = ""
    if elements <= SMALL:
        nameless = onnx.TensorProto()
        nameless.CopyFrom(tensor)
        nameless.name = ""
        value = hashlib.sha256(nameless.SerializeToString(deterministic=True)).hexdigest()
    return ("const", tensor.data_type, tuple(tensor.dims), value)


def _value_key(value: onnx.ValueInfoProto) -> tuple:
    tensor = value.type.tensor_type
    return (
        "input",
        tensor.elem_type,
        tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in tensor.shape.dim),
    )


def _attribute_key(attribute: onnx.AttributeProto) -> bytes:
    return attribute.SerializeToString(deterministic=True)


def signature(model: onnx.ModelProto) -> str:
    """A digest that two unit graphs share exactly when they are the same microbenchmark."""
    graph = model.graph
    local: dict[str, int] = {}
    parts: list = []
    for value in graph.input:
        local[value.name] = len(local)
        parts.append(_value_key(value))
    first_use: dict[str, int] = {}
    for position, name in enumerate(n for node in graph.node for n in node.input):
        first_use.setdefault(name, position)
    for tensor in sorted(graph.initializer, key=lambda t: first_use.get(t.name, -1)):
        local[tensor.name] = len(local)
        parts.append(_tensor_key(tensor))
    for node in graph.node:
        inputs = tuple(local.get(n, n) if n else "" for n in node.input)
        for out in node.output:
            if out:
                local.setdefault(out, len(local))
        parts.append(
            (
                node.domain,
                node.op_type,
                inputs,
                tuple(local.get(o, "") for o in node.output),
                tuple(_attribute_key(a) for a in node.attribute),
            )
        )
    parts.append(tuple(local.get(o.name, o.name) for o in graph.output))
    parts.append(tuple(sorted((o.domain, o.version) for o in model.opset_import)))
    return hashlib.sha256(repr(parts).encode()).hexdigest()
