"""dbench's onnx.reference implementations of the ONNX Runtime contrib ops it puts into unit graphs,
against a numpy reference written here: a max over each window, padding never chosen."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from dbench.sources.contrib_reference import CONTRIB_OPS


def max_pool_nhwc(x: np.ndarray, kernel: int, stride: int, pad: int) -> np.ndarray:
    """Max over each kernel x kernel window of an NHWC tensor; the padding (-inf) is never picked."""
    n, h, w, c = x.shape
    padded = np.full((n, h + 2 * pad, w + 2 * pad, c), -np.inf)
    padded[:, pad:pad + h, pad:pad + w] = x
    out_h, out_w = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    y = np.empty((n, out_h, out_w, c))
    for i in range(out_h):
        for j in range(out_w):
            y[:, i, j] = padded[:, i * stride:i * stride + kernel, j * stride:j * stride + kernel].max(axis=(1, 2))
    return y.astype(x.dtype)


@pytest.mark.parametrize("dtype,elem", [(np.uint8, TensorProto.UINT8), (np.int8, TensorProto.INT8)])
@pytest.mark.parametrize("kernel,stride,pad", [(3, 2, 1), (2, 2, 0), (3, 1, 1)])
def test_nhwc_max_pool_is_max_pool_on_the_channels_last_tensor(seed, dtype, elem, kernel, stride, pad):
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(2, 9, 7, 5), endpoint=True).astype(dtype)
    node = helper.make_node("NhwcMaxPool", ["x"], ["y"], domain="com.microsoft", kernel_shape=[kernel, kernel],
                            strides=[stride, stride], pads=[pad] * 4)
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", elem, list(x.shape))],
                              [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    (y,) = ReferenceEvaluator(model, new_ops=list(CONTRIB_OPS)).run(None, {"x": x})
    expected = max_pool_nhwc(x, kernel, stride, pad)
    assert y.dtype == dtype and y.shape == expected.shape and np.array_equal(y, expected)
