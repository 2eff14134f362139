"""Which op versions dbench computes itself instead of onnx.reference, and with which implementation
(dbench.sources.corrections: each class written from the spec of the versions it serves, its
docstring naming the rule onnx.reference breaks). benchmarks/reference_sweep.py finds them
(docs/foreign-reference.md); each has a test that fails on onnx.reference itself
(tests/test_reference_corrections.py). A correction covers every version that onnx.reference serves
with the implementation found wrong. Imported only where a reference is computed (it imports onnx.reference)."""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx.reference.op_run import OpRun

from dbench.sources.corrections import (
    convolution,
    detection,
    legacy,
    ml,
    normalization,
    pooling,
    quantization,
    recurrent,
    resampling,
)


@dataclass(frozen=True)
class Correction:
    """dbench's implementation of the op `op_type` of `domain` at the op versions (the schemas'
    since_version) `versions`, replacing onnx.reference's there and nowhere else."""

    op_type: str
    versions: tuple[int, ...]
    implementation: type[OpRun]
    domain: str = ""


CORRECTIONS: tuple[Correction, ...] = (
    Correction("Softmax", (1, 11), normalization.SoftmaxCoerced),
    Correction("LogSoftmax", (1, 11), normalization.LogSoftmaxCoerced),
    Correction("Hardmax", (1, 11), normalization.HardmaxCoerced),
    Correction("BatchNormalization", (6, 7, 9), normalization.BatchNormalizationByMode),
    Correction("LRN", (1, 13), normalization.LocalResponseNormalization),
    Correction("MaxPool", (1, 8, 10, 11, 12, 22), pooling.MaxPoolSpec),
    Correction("AveragePool", (1,), pooling.AveragePoolExcludingPads),
    Correction("LpPool", (18, 22), pooling.LpPoolSpec),
    Correction("GlobalMaxPool", (1, 22), pooling.GlobalPool),
    Correction("GlobalLpPool", (1, 2, 22), pooling.GlobalPool),
    Correction("ConvTranspose", (1, 11, 22), convolution.ConvTransposeSpec),
    Correction("RNN", (1, 7, 14, 22), recurrent.RecurrentSpec),
    Correction("GRU", (1, 3, 7, 14, 22), recurrent.RecurrentSpec),
    Correction("LSTM", (1, 7, 14, 22), recurrent.RecurrentSpec),
    *(Correction(op, (1, 6), legacy.LegacyBinary) for op in ("Add", "Sub", "Mul", "Div")),
    *(Correction(op, (1,), legacy.LegacyBinary) for op in ("Pow", "And", "Or", "Xor", "Equal", "Greater", "Less")),
    Correction("Gemm", (1, 6), legacy.GemmBroadcast),
    Correction("Cast", (1,), legacy.CastByName),
    Correction("Clip", (1,), legacy.ClipByAttributes),
    Correction("Dropout", (1, 6), legacy.DropoutTestMode),
    Correction("Reshape", (1,), legacy.ReshapeByAttribute),
    Correction("Split", (1,), legacy.SplitFirst),
    Correction("Concat", (1,), legacy.ConcatDefaultAxis),
    Correction("Tile", (1,), legacy.TileAlongAxis),
    Correction("Mean", (8, 13), legacy.MeanBroadcast),
    Correction("Pad", (11, 13, 18, 19, 21, 23, 24, 25), legacy.PadSpec),
    Correction("Scatter", (9, 11), legacy.ScatterAsElements),
    Correction("DequantizeLinear", (10, 13), quantization.DequantizeLinearEarly),
    Correction("Upsample", (7, 9, 10), resampling.ResampleAsymmetric),
    Correction("Resize", (10,), resampling.ResampleAsymmetric),
    Correction("RoiAlign", (10,), detection.RoiAlignOutputHalfPixel),
    Correction("LabelEncoder", (1,), ml.LabelEncoderByIndex, "ai.onnx.ml"),
)
"""Every correction dbench makes to onnx.reference."""


def correction_for(domain: str, op_type: str, opset: int) -> type[OpRun] | None:
    """dbench's implementation of `op_type` in a graph importing `opset` of `domain`, or None where
    onnx.reference's own is right."""
    candidates = [c for c in CORRECTIONS if c.domain == domain and c.op_type == op_type]
    if not candidates:
        return None
    try:
        version = onnx.defs.get_schema(op_type, opset, domain).since_version
    except onnx.defs.SchemaError:
        return None
    return next((c.implementation for c in candidates if version in c.versions), None)
