"""The precisions graphs can be built in: ONNX element type, numpy dtype, verification tolerance."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from onnx import TensorProto

from dbench.errors import UsageError


@dataclass(frozen=True)
class Precision:
    """One floating-point precision. `tolerance` bounds max|out - ref| / max|ref| for a verified result."""

    name: str
    onnx_type: int
    dtype: np.dtype
    tolerance: float


PRECISIONS: dict[str, Precision] = {
    "fp32": Precision("fp32", TensorProto.FLOAT, np.dtype(np.float32), 1e-3),
    "fp16": Precision("fp16", TensorProto.FLOAT16, np.dtype(np.float16), 1e-2),
    "bf16": Precision("bf16", TensorProto.BFLOAT16, np.dtype(ml_dtypes.bfloat16), 4e-2),
}

# int8 graphs are built by dbench.gen.int8; it is a valid --precision, with its own exactness rules.
# int4 (dbench.gen.int4) is weight-only: 4-bit weights in blocks, float32 activations and compute.
ALL_PRECISIONS = (*PRECISIONS, "int8", "int4")

WEIGHT_ONLY_COMPUTE = {"int4": "fp32"}
"""Weight-only precisions and the compute precision their graphs ask for: a row states the weights a
kernel read and the precision it computed in apart (`int4 weights, fp32 compute`)."""

DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "int16": np.dtype(np.int16),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
    "int4": np.dtype(ml_dtypes.int4),
    "uint4": np.dtype(ml_dtypes.uint4),
}
"""Element types a graph input or output can have (foreign models bring the ones after int64)."""

ONNX_TYPES: dict[str, int] = {
    "float32": TensorProto.FLOAT,
    "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16,
    "float64": TensorProto.DOUBLE,
    "int8": TensorProto.INT8,
    "uint8": TensorProto.UINT8,
    "int32": TensorProto.INT32,
    "int64": TensorProto.INT64,
    "int16": TensorProto.INT16,
    "uint16": TensorProto.UINT16,
    "uint32": TensorProto.UINT32,
    "uint64": TensorProto.UINT64,
    "bool": TensorProto.BOOL,
    "int4": TensorProto.INT4,
    "uint4": TensorProto.UINT4,
}

PACKED_BITS = {"int4": 4, "uint4": 4}
"""Element types stored below a byte: ONNX packs two 4-bit values a byte (numpy holds one a byte)."""


def float_precision(name: str) -> Precision:
    """The floating-point precision called `name`, or a usage error listing the valid ones."""
    if name not in PRECISIONS:
        raise UsageError(f"unsupported precision {name!r} here; valid precisions: {', '.join(ALL_PRECISIONS)}")
    return PRECISIONS[name]


def dtype_name(dtype: np.dtype) -> str:
    """The manifest's name for a numpy dtype (`bfloat16` for ml_dtypes' type)."""
    for name, candidate in DTYPES.items():
        if candidate == dtype:
            return name
    raise ValueError(f"no manifest name for dtype {dtype}")


def pack_4bit(array: np.ndarray) -> np.ndarray:
    """A 4-bit array (numpy holds one value a byte) as ONNX and OpenVINO store it: two values a byte,
    the first in the lower nibble, in row-major order (the last byte zero-padded)."""
    nibbles = (np.asarray(array).astype(np.int8).reshape(-1) & 0x0F).astype(np.uint8)
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8)
