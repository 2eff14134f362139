"""onnx.reference implementations of the ONNX Runtime contrib ops dbench itself puts into graphs (a unit
timed as the layer ONNX Runtime executes, dbench.units.graph.executed_model; a layer it inserts,
dbench.units.graph.inserted_model): each one is the standard op computed on the standard layout, or the
layout transform ONNX Runtime defines, so the layer is verified against what the model's own nodes
compute. Imported only by the reference check (it imports onnx.reference)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference.op_run import OpRun

from dbench.executed import NCHWC_BLOCK_KEY, NCHWC_DOMAIN, TO_CHANNELS_FIRST, TO_CHANNELS_LAST


def _attributes(op: OpRun) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in op.onnx_node.attribute}


class NhwcMaxPool(OpRun):
    """com.microsoft.NhwcMaxPool: MaxPool with the same attributes on the NCHW transpose of its NHWC
    (u)int8 input, computed in float64 (exact for 8-bit values) by dbench's foreign reference, transposed back."""

    op_domain = "com.microsoft"

    def _run(self, x, **_unused):  # noqa: ANN001, ANN202 (onnx.reference's calling convention)
        from dbench.sources.foreign_reference import foreign_evaluator  # the standard MaxPool as dbench corrects it

        node = helper.make_node("MaxPool", ["x"], ["y"], **_attributes(self))
        graph = helper.make_graph(
            [node],
            "max_pool",
            [helper.make_tensor_value_info("x", TensorProto.DOUBLE, None)],
            [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
        planar = np.ascontiguousarray(np.transpose(x, TO_CHANNELS_FIRST)).astype(np.float64)
        (pooled,) = foreign_evaluator(model).run(None, {"x": planar})
        return (np.ascontiguousarray(np.transpose(pooled, TO_CHANNELS_LAST)).astype(x.dtype),)


class MatMulNBits(OpRun):
    """com.microsoft.MatMulNBits (4-bit): A times the weight its blocks hold, dequantised in float64 by
    dbench's rule for the form (dbench.gen.int4.nbits_weight: codes packed two a byte, the lower nibble
    first; zero points packed likewise, or 8 when absent, or a float per block), plus the bias."""

    op_domain = "com.microsoft"

    def _run(self, a, b, scales, zero_points=None, g_idx=None, bias=None, **_unused):  # noqa: ANN001, ANN202
        from dbench.gen.int4 import blocked_weight, nbits_weight, unpack_nibbles

        attrs = _attributes(self)
        if int(attrs.get("bits", 4)) != 4:
            raise NotImplementedError(f"MatMulNBits with {attrs['bits']}-bit weights: the reference is 4-bit only")
        if g_idx is not None:
            raise NotImplementedError("MatMulNBits with g_idx (act-order): the reference has no reordering")
        k, n, block = int(attrs["K"]), int(attrs["N"]), int(attrs["block_size"])
        if zero_points is not None and np.issubdtype(zero_points.dtype, np.floating):
            blocks = -(-k // block)
            codes = unpack_nibbles(b).reshape(n, -1)[:, :k]
            weight = blocked_weight(codes, scales.reshape(n, blocks), zero_points.reshape(n, blocks), block, axis=1).T
        else:
            weight = nbits_weight(b, scales, zero_points, k, n, block)
        out = np.asarray(a, dtype=np.float64) @ weight
        if bias is not None:
            out = out + bias
        return (out.astype(a.dtype),)


CONTRIB_OPS = (NhwcMaxPool, MatMulNBits)
"""The contrib ops every graph may hold, as ReferenceEvaluator's `new_ops` takes them."""


def to_nchwc(planar: np.ndarray, block: int) -> np.ndarray:
    """A 4-d NCHW tensor in ONNX Runtime's NCHWc layout, as its [N, C padded to the block, H, W] tensor
    holds it: the channels in blocks of `block`, each block's channels innermost (N, C/block, H, W,
    block), the last block's padding zeros."""
    n, c, h, w = planar.shape
    padded = np.zeros((n, -(-c // block) * block, h, w), dtype=planar.dtype)
    padded[:, :c] = planar
    blocked = padded.reshape(n, padded.shape[1] // block, block, h, w).transpose(0, 1, 3, 4, 2)
    return np.ascontiguousarray(blocked).reshape(padded.shape)


def from_nchwc(blocked: np.ndarray, block: int, channels: int) -> np.ndarray:
    """The NCHW tensor of `channels` channels an NCHWc tensor holds (its padding dropped)."""
    n, padded, h, w = blocked.shape
    planar = np.ascontiguousarray(blocked).reshape(n, padded // block, h, w, block).transpose(0, 1, 4, 2, 3)
    return np.ascontiguousarray(planar.reshape(n, padded, h, w)[:, :channels])


def nchwc_ops(block: int) -> tuple[type[OpRun], ...]:
    """com.microsoft.nchwc's ReorderInput (NCHW, or NHWC with channels_last, to NCHWc) and ReorderOutput
    (NCHWc to `channels` channels of NCHW, or NHWC with channels_last) for the CPU's block."""

    class ReorderInput(OpRun):
        op_domain = NCHWC_DOMAIN

        def _run(self, x, **_unused):  # noqa: ANN001, ANN202 (onnx.reference's calling convention)
            planar = np.transpose(x, TO_CHANNELS_FIRST) if _attributes(self).get("channels_last", 0) else x
            return (to_nchwc(planar, block),)

    class ReorderOutput(OpRun):
        op_domain = NCHWC_DOMAIN

        def _run(self, x, **_unused):  # noqa: ANN001, ANN202
            attributes = _attributes(self)
            planar = from_nchwc(x, block, int(attributes["channels"]))
            return (
                np.ascontiguousarray(np.transpose(planar, TO_CHANNELS_LAST))
                if attributes.get("channels_last", 0)
                else planar,
            )

    return ReorderInput, ReorderOutput


def contrib_ops(model: onnx.ModelProto) -> tuple[type[OpRun], ...]:
    """The contrib ops `model` may hold, as ReferenceEvaluator's `new_ops` takes them: CONTRIB_OPS, and
    the NCHWc reorders at the block the graph records (NCHWC_BLOCK_KEY) where it records one."""
    block = next((int(p.value) for p in model.metadata_props if p.key == NCHWC_BLOCK_KEY), None)
    return CONTRIB_OPS + (nchwc_ops(block) if block else ())
