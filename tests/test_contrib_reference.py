"""dbench's onnx.reference implementations of the ONNX Runtime contrib ops it puts into unit graphs,
against a numpy reference written here (a max over each window, padding never chosen; the NCHWc layout
element by element) and, for the NCHWc reorders, against ONNX Runtime itself on this CPU."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from dbench.sources.contrib_reference import CONTRIB_OPS


def max_pool_nhwc(x: np.ndarray, kernel: int, stride: int, pad: int) -> np.ndarray:
    """Max over each kernel x kernel window of an NHWC tensor; the padding (-inf) is never picked."""
    n, h, w, c = x.shape
    padded = np.full((n, h + 2 * pad, w + 2 * pad, c), -np.inf)
    padded[:, pad : pad + h, pad : pad + w] = x
    out_h, out_w = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    y = np.empty((n, out_h, out_w, c))
    for i in range(out_h):
        for j in range(out_w):
            y[:, i, j] = padded[:, i * stride : i * stride + kernel, j * stride : j * stride + kernel].max(axis=(1, 2))
    return y.astype(x.dtype)


@pytest.mark.parametrize("dtype,elem", [(np.uint8, TensorProto.UINT8), (np.int8, TensorProto.INT8)])
@pytest.mark.parametrize("kernel,stride,pad", [(3, 2, 1), (2, 2, 0), (3, 1, 1)])
def test_nhwc_max_pool_is_max_pool_on_the_channels_last_tensor(seed, dtype, elem, kernel, stride, pad):
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(2, 9, 7, 5), endpoint=True).astype(dtype)
    node = helper.make_node(
        "NhwcMaxPool",
        ["x"],
        ["y"],
        domain="com.microsoft",
        kernel_shape=[kernel, kernel],
        strides=[stride, stride],
        pads=[pad] * 4,
    )
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    (y,) = ReferenceEvaluator(model, new_ops=list(CONTRIB_OPS)).run(None, {"x": x})
    expected = max_pool_nhwc(x, kernel, stride, pad)
    assert y.dtype == dtype and y.shape == expected.shape and np.array_equal(y, expected)


def nchwc_by_index(planar: np.ndarray, block: int) -> np.ndarray:
    """ONNX Runtime's NCHWc layout element by element: channel c of pixel (h, w) at flat index
    ((n * blocks + c // block) * H * W + h * W + w) * block + c % block, padding zeros."""
    n, c, h, w = planar.shape
    padded = -(-c // block) * block
    flat = np.zeros(n * padded * h * w, dtype=planar.dtype)
    for i, ch, y, x in np.ndindex(n, c, h, w):
        flat[((i * (padded // block) + ch // block) * h * w + y * w + x) * block + ch % block] = planar[i, ch, y, x]
    return flat.reshape(n, padded, h, w)


@pytest.mark.parametrize("block", [8, 16])
@pytest.mark.parametrize("channels", [4, 12, 16, 20])
def test_the_nchwc_layout_puts_each_blocks_channels_innermost_and_pads_the_last_block_with_zeros(seed, block, channels):
    from dbench.sources.contrib_reference import from_nchwc, to_nchwc

    x = np.random.default_rng(seed).standard_normal((2, channels, 3, 5)).astype(np.float32)
    blocked = nchwc_by_index(x, block)
    assert np.array_equal(to_nchwc(x, block), blocked)
    assert np.array_equal(from_nchwc(blocked, block, channels), x)


def _reorder(op: str, shape: list[int], block: int, **attributes) -> onnx.ModelProto:
    from onnx import TensorProto

    from dbench.executed import NCHWC_BLOCK_KEY, NCHWC_DOMAIN

    node = helper.make_node(op, ["x"], ["y"], domain=NCHWC_DOMAIN, **attributes)
    graph = helper.make_graph(
        [node],
        op,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(NCHWC_DOMAIN, 1)])
    model.metadata_props.add(key=NCHWC_BLOCK_KEY, value=str(block))
    return model


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("channels", [4, 20, 32])
def test_the_reference_reorders_give_onnx_runtimes_own_on_this_cpu(seed, channels_last, channels):
    """ReorderInput and ReorderOutput through onnx.reference with dbench's implementations, at the block
    ONNX Runtime reports here, against ONNX Runtime itself (bit for bit: they only move values)."""
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    from dbench.runtimes.ort_execution import nchwc_block_size
    from dbench.sources.contrib_reference import contrib_ops

    block = nchwc_block_size()
    rng = np.random.default_rng(seed)
    planar = [2, 3, 5, channels] if channels_last else [2, channels, 3, 5]
    padded = -(-channels // block) * block
    cases = [
        (_reorder("ReorderInput", planar, block, channels_last=channels_last), planar),
        (
            _reorder("ReorderOutput", [2, padded, 3, 5], block, channels=channels, channels_last=channels_last),
            [2, padded, 3, 5],
        ),
    ]
    for model, shape in cases:
        x = rng.standard_normal(shape).astype(np.float32)
        (expected,) = ReferenceEvaluator(model, new_ops=list(contrib_ops(model))).run(None, {"x": x})
        (got,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        assert expected.shape == got.shape and np.array_equal(expected, got), model.graph.node[0].op_type


def test_a_graph_without_a_recorded_block_gets_no_reorders():
    from dbench.sources.contrib_reference import CONTRIB_OPS, contrib_ops

    model = _reorder("ReorderInput", [1, 4, 2, 2], 16)
    assert [op.__name__ for op in contrib_ops(model)] == ["NhwcMaxPool", "MatMulNBits", "ReorderInput", "ReorderOutput"]
    del model.metadata_props[:]
    assert contrib_ops(model) == CONTRIB_OPS
