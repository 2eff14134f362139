"""Small pieces the transformer suite's graphs share: scalar and vector constants, the opset or domain
an operator needs, and the float precision a graph is built in."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dbench.gen.graph import OPSET
from dbench.gen.precision import DTYPES, dtype_name, float_precision

IR_FOR_OPSET = {23: 11}
"""The IR version onnx writes for an ONNX opset newer than graph.OPSET (opset 23: IR 11)."""


def float_dtype(precision: str) -> str:
    """The manifest's dtype name of a floating-point precision (a usage error for another precision)."""
    return dtype_name(float_precision(precision).dtype)


def constant(output: str, value: float | list[int], dtype: str) -> onnx.NodeProto:
    """A Constant node: a scalar of `dtype` for a float, an int64 vector for a list (axes, slice bounds)."""
    array = np.asarray(value, dtype=np.int64) if isinstance(value, list) else np.asarray(value, dtype=DTYPES[dtype])
    return helper.make_node("Constant", [], [output], value=numpy_helper.from_array(array, name=output))


def at_opset(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """The model importing ONNX's own domain at `opset` (an op of a newer opset than dbench pins, e.g.
    RMSNormalization, opset 23), with the IR version its onnx release writes."""
    if opset > OPSET:
        for entry in model.opset_import:
            if entry.domain in ("", "ai.onnx"):
                entry.version = opset
        model.ir_version = IR_FOR_OPSET[opset]
    return model


def with_domain(model: onnx.ModelProto, domain: str, version: int) -> onnx.ModelProto:
    """The model importing an operator domain besides ONNX's (com.microsoft for ONNX Runtime's contrib ops)."""
    model.opset_import.append(helper.make_opsetid(domain, version))
    return model
