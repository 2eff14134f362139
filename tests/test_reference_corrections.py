"""dbench's corrections to onnx.reference (dbench.sources.reference_corrections): each one against a numpy
reference of its version's spec written here, on fresh random inputs, and each checked to fail on
onnx.reference itself, so that the test can fail; then that they apply to the wrong versions only,
inside subgraphs too, and that the check of a foreign model (model_reference) uses them."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

F32 = np.float32


def one_node(
    op: str,
    version: int,
    inputs: dict[str, np.ndarray | None],
    outputs: int = 1,
    stored: tuple[str, ...] = (),
    **attributes,
) -> onnx.ModelProto:
    """A model of one `op` node at opset `version`; None marks an omitted optional input, `stored`
    inputs are initializers; outputs are left untyped (the evaluators do not need their types)."""
    names = [name if value is not None else "" for name, value in inputs.items()]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, [f"y{i}" for i in range(outputs)], **attributes)
    graph_inputs = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for n, v in inputs.items()
        if v is not None and n not in stored
    ]
    initializers = [numpy_helper.from_array(v, n) for n, v in inputs.items() if v is not None and n in stored]
    graph = helper.make_graph(
        [node],
        op,
        graph_inputs,
        [helper.make_value_info(f"y{i}", onnx.TypeProto()) for i in range(outputs)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])
    model.ir_version = 7
    return model


def feeds_of(model: onnx.ModelProto, inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    stored = {t.name for t in model.graph.initializer}
    return {n: v for n, v in inputs.items() if v is not None and n not in stored}


def close(got, expected, rtol: float = 1e-5) -> bool:  # noqa: ANN001
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return False
    if expected.dtype.kind in "biu":
        return bool(np.array_equal(got, expected))
    return bool(np.allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=rtol))


def check(
    model: onnx.ModelProto, inputs: dict[str, np.ndarray | None], expected: list[np.ndarray], rtol: float = 1e-5
) -> None:
    """dbench's reference gives `expected`; onnx.reference alone does not (it raises or differs)."""
    from onnx.reference import ReferenceEvaluator

    from dbench.sources.foreign_reference import foreign_evaluator

    feeds = feeds_of(model, inputs)
    got = foreign_evaluator(model).run(None, feeds)
    assert len(got) >= len(expected) and all(close(g, e, rtol) for g, e in zip(got, expected)), (got, expected)
    try:
        raw = ReferenceEvaluator(model).run(None, feeds)
    except Exception:  # onnx.reference cannot run it at all: also a failure of the uncorrected reference
        return
    assert not (len(raw) >= len(expected) and all(close(r, e, rtol) for r, e in zip(raw, expected))), (
        "onnx.reference alone passes: the correction is not needed for this case"
    )


# ---------------------------------------------------------------- normalization


def coerced(x: np.ndarray, axis: int, op: str) -> np.ndarray:
    rows = x.astype(np.float64).reshape(math.prod(x.shape[:axis]), -1)
    shifted = rows - rows.max(axis=1, keepdims=True)
    if op == "Softmax":
        out = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    elif op == "LogSoftmax":
        out = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    else:
        out = (np.arange(rows.shape[1]) == rows.argmax(axis=1)[:, None]).astype(np.float64)
    return out.reshape(x.shape).astype(x.dtype)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("version", [1, 11])
def test_softmax_family_before_13_coerces_the_input_to_2d_at_axis(seed, op, version):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 2, 2)).astype(F32)
    check(one_node(op, version, {"x": x}), {"x": x}, [coerced(x, 1, op)])  # axis left out: 1, not 13's -1
    check(one_node(op, version, {"x": x}, axis=1), {"x": x}, [coerced(x, 1, op)])  # rows of 12, not 3 per position
    x = rng.standard_normal((1, 10, 1, 1)).astype(
        F32
    )  # a classifier's [1, C, 1, 1] output: onnx.reference gives all ones
    check(one_node(op, version, {"x": x}), {"x": x}, [coerced(x, 1, op)])


def batch_norm(x, scale, bias, mean, var, epsilon):  # noqa: ANN001, ANN201
    view = (1, -1, *([1] * (x.ndim - 2))) if scale.ndim == 1 else (1, *scale.shape)
    s, b, m, v = (a.astype(np.float64).reshape(view) for a in (scale, bias, mean, var))
    return (s * (x - m) / np.sqrt(v + epsilon) + b).astype(x.dtype)


@pytest.mark.parametrize("version", [7, 9])
def test_batch_normalization_with_one_output_is_inference_with_the_given_statistics(seed, version):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 4, 4)).astype(F32)
    scale, bias, mean = (rng.standard_normal(3).astype(F32) for _ in range(3))
    var = rng.uniform(0.5, 2, 3).astype(F32)
    inputs = {"x": x, "s": scale, "b": bias, "m": mean, "v": var}
    model = one_node("BatchNormalization", version, inputs, stored=("s", "b", "m", "v"), epsilon=1e-3, momentum=0.7)
    check(model, inputs, [batch_norm(x, scale, bias, mean, var, 1e-3)])


def test_batch_normalization_6_in_test_mode_keeps_per_activation_statistics_without_spatial(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 2, 2)).astype(F32)
    scale, bias, mean = (rng.standard_normal((3, 2, 2)).astype(F32) for _ in range(3))
    var = rng.uniform(0.5, 2, (3, 2, 2)).astype(F32)
    inputs = {"x": x, "s": scale, "b": bias, "m": mean, "v": var}
    model = one_node("BatchNormalization", 6, inputs, stored=("s", "b", "m", "v"), is_test=1, spatial=0)
    check(model, inputs, [batch_norm(x, scale, bias, mean, var, 1e-5)])


@pytest.mark.parametrize("version", [1, 13])
def test_lrn_normalises_every_channel(seed, version):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 5, 2, 3)).astype(F32)
    size, alpha, beta, bias = 3, 0.4, 0.75, 1.5
    square = np.zeros(x.shape)
    for c in range(5):
        square[:, c] = (x[:, max(0, c - 1) : min(4, c + 1) + 1].astype(np.float64) ** 2).sum(axis=1)
    expected = (x / (bias + alpha / size * square) ** beta).astype(F32)
    check(one_node("LRN", version, {"x": x}, size=size, alpha=alpha, beta=beta, bias=bias), {"x": x}, [expected])


# ---------------------------------------------------------------- pooling


def max_pool_1d(x: np.ndarray, kernel: int, stride: int, begin: int, end: int) -> np.ndarray:
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (begin, end)], constant_values=-np.inf)
    out = (padded.shape[-1] - kernel) // stride + 1
    return np.stack([padded[..., i * stride : i * stride + kernel].max(axis=-1) for i in range(out)], axis=-1).astype(
        x.dtype
    )


@pytest.mark.parametrize("version", [1, 8, 10, 11, 12, 22])
def test_max_pool_pads_its_start_and_end_as_given(seed, version):
    x = np.random.default_rng(seed).standard_normal((2, 3, 6)).astype(F32)
    check(one_node("MaxPool", version, {"x": x}, kernel_shape=[3], pads=[0, 2]), {"x": x}, [max_pool_1d(x, 3, 1, 0, 2)])


@pytest.mark.parametrize("version", [1, 8, 10, 11, 12, 22])
def test_max_pool_same_lower_has_ceil_of_size_over_stride_outputs(seed, version):
    x = np.random.default_rng(seed).standard_normal((1, 2, 7)).astype(F32)
    # SAME_LOWER, kernel 2, stride 2: 4 outputs, total padding 1, put at the start
    check(
        one_node("MaxPool", version, {"x": x}, kernel_shape=[2], strides=[2], auto_pad="SAME_LOWER"),
        {"x": x},
        [max_pool_1d(x, 2, 2, 1, 0)],
    )


def test_average_pool_1_divides_by_the_elements_outside_the_padding(seed):
    x = np.random.default_rng(seed).standard_normal((2, 2, 5)).astype(F32)
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1)])
    counts = np.pad(np.ones(5), (1, 1))
    windows = [(padded[..., i : i + 3].sum(axis=-1) / counts[i : i + 3].sum()) for i in range(0, 5, 2)]
    check(
        one_node("AveragePool", 1, {"x": x}, kernel_shape=[3], pads=[1, 1], strides=[2]),
        {"x": x},
        [np.stack(windows, axis=-1).astype(F32)],
    )


@pytest.mark.parametrize("version", [18, 22])
def test_lp_pool_with_ceil_mode_drops_only_a_window_starting_in_the_end_padding(seed, version):
    x = np.random.default_rng(seed).standard_normal((1, 2, 7)).astype(F32)
    # kernel 2, stride 2, pads 1 and 2: ceil((7 + 3 - 2) / 2) + 1 = 5 windows, the fifth would start at 8,
    # in the padding
    windows = [(0, 1), (1, 3), (3, 5), (5, 7)]
    expected = np.stack(
        [np.sqrt((x[..., a:b].astype(np.float64) ** 2).sum(axis=-1)) for a, b in windows], axis=-1
    ).astype(F32)
    check(
        one_node("LpPool", version, {"x": x}, kernel_shape=[2], strides=[2], pads=[1, 2], ceil_mode=1, p=2),
        {"x": x},
        [expected],
    )


@pytest.mark.parametrize("version", [1, 22])
def test_global_max_pool_keeps_the_channel_axis_of_a_3d_input(seed, version):
    x = np.random.default_rng(seed).standard_normal((2, 3, 5)).astype(F32)
    check(one_node("GlobalMaxPool", version, {"x": x}), {"x": x}, [x.max(axis=2, keepdims=True)])


@pytest.mark.parametrize("version", [2, 22])
def test_global_lp_pool_is_the_p_norm_over_the_spatial_axes(seed, version):
    x = np.random.default_rng(seed).standard_normal((2, 3, 2, 2)).astype(F32)
    expected = (np.abs(x.astype(np.float64)) ** 3).sum(axis=(2, 3), keepdims=True) ** (1 / 3)
    check(one_node("GlobalLpPool", version, {"x": x}, p=3), {"x": x}, [expected.astype(F32)])


# ---------------------------------------------------------------- convolution


def conv_transpose_1d(x: np.ndarray, w: np.ndarray, stride: int, begin: int, end: int) -> np.ndarray:
    n, c, length = x.shape
    k = w.shape[2]
    full = np.zeros((n, w.shape[1], (length - 1) * stride + k))
    for i in range(length):
        full[:, :, i * stride : i * stride + k] += np.einsum(
            "nc,cmk->nmk", x[:, :, i].astype(np.float64), w.astype(np.float64)
        )
    return full[:, :, begin : full.shape[2] - end].astype(x.dtype)


@pytest.mark.parametrize("version", [1, 11, 22])
def test_conv_transpose_runs_groups(seed, version):
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((2, 4, 4)).astype(F32), rng.standard_normal((4, 2, 3)).astype(F32)
    inputs = {"x": x, "w": w}
    # two groups of 2 input channels and 2 output channels each; SAME_UPPER, stride 2: output 8 of the 9 reached
    # (total padding 1: start 0, end 1)
    expected = np.concatenate(
        [conv_transpose_1d(x[:, :2], w[:2], 2, 0, 1), conv_transpose_1d(x[:, 2:], w[2:], 2, 0, 1)], axis=1
    )
    check(
        one_node("ConvTranspose", version, inputs, stored=("w",), strides=[2], auto_pad="SAME_UPPER", group=2),
        inputs,
        [expected],
    )


# ---------------------------------------------------------------- recurrent


def sigmoid(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


def recurrent(op: str, x, w, r, b, lengths, clip):  # noqa: ANN001, ANN201
    """Y, Y_h of a forward RNN/GRU/LSTM with default activations, zero initial state, `clip` on the
    activations' inputs, and sequence lengths."""
    seq, batch, _ = x.shape
    hidden = r.shape[-1]
    y = np.zeros((seq, 1, batch, hidden))
    y_h = np.zeros((1, batch, hidden))
    bias = b[0].astype(np.float64)
    for n in range(batch):
        h, c = np.zeros(hidden), np.zeros(hidden)
        for t in range(lengths[n]):
            xt = x[t, n].astype(np.float64)
            gates = w[0] @ xt + r[0] @ h + bias[: len(bias) // 2] + bias[len(bias) // 2 :]
            if op == "RNN":
                h = np.tanh(np.clip(gates, -clip, clip))
            elif op == "GRU":
                z = sigmoid(np.clip(gates[:hidden], -clip, clip))
                reset = sigmoid(np.clip(gates[hidden : 2 * hidden], -clip, clip))
                wh, rh = w[0][2 * hidden :], r[0][2 * hidden :]
                wb, rb = bias[2 * hidden : 3 * hidden], bias[5 * hidden :]
                candidate = np.tanh(np.clip(wh @ xt + rh @ (reset * h) + rb + wb, -clip, clip))
                h = (1 - z) * candidate + z * h
            else:
                i, o, f, g = (np.clip(gates[k * hidden : (k + 1) * hidden], -clip, clip) for k in range(4))
                c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
                h = sigmoid(o) * np.tanh(c)
            y[t, 0, n] = h
        y_h[0, n] = h
    return y.astype(F32), y_h.astype(F32)


@pytest.mark.parametrize("op,versions", [("RNN", (1, 7, 14, 22)), ("GRU", (1, 3, 7, 14, 22)), ("LSTM", (1, 7, 14, 22))])
def test_recurrent_ops_stop_each_sequence_at_its_length_and_clip(seed, op, versions):
    rng = np.random.default_rng(seed)
    gates, hidden = {"RNN": 1, "GRU": 3, "LSTM": 4}[op], 3
    x = rng.standard_normal((4, 3, 2)).astype(F32)
    w = rng.standard_normal((1, gates * hidden, 2)).astype(F32)
    r = rng.standard_normal((1, gates * hidden, hidden)).astype(F32)
    b = rng.standard_normal((1, 2 * gates * hidden)).astype(F32)
    lengths = np.array([4, 2, 3], dtype=np.int32)
    inputs = {"x": x, "w": w, "r": r, "b": b, "lengths": lengths}
    expected = list(recurrent(op, x, w, r, b, lengths, 0.5))
    for version in versions:
        check(
            one_node(op, version, inputs, outputs=2, stored=("w", "r", "b"), hidden_size=hidden, clip=0.5),
            inputs,
            expected,
        )


# ---------------------------------------------------------------- early versions and other tensor ops


def test_element_wise_ops_before_7_broadcast_b_from_axis(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, 3, 4, 5)).astype(F32), rng.standard_normal((3, 4)).astype(F32)
    for op, formula in (
        ("Add", np.add),
        ("Sub", np.subtract),
        ("Mul", np.multiply),
        ("Div", np.divide),
        ("Pow", np.power),
    ):
        base = np.abs(a) + 0.5 if op == "Pow" else a
        inputs = {"a": base, "b": b}
        for version in (1, 6):
            check(
                one_node(op, version, inputs, broadcast=1, axis=1),
                inputs,
                [formula(base, b.reshape(1, 3, 4, 1)).astype(F32)],
            )
    x, y = rng.random((2, 3, 4)) < 0.5, rng.random(3) < 0.5
    for op, formula in (("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)):
        check(
            one_node(op, 1, {"a": x, "b": y}, broadcast=1, axis=1), {"a": x, "b": y}, [formula(x, y.reshape(1, 3, 1))]
        )
    p, q = rng.integers(0, 3, (2, 3, 4)).astype(np.int32), rng.integers(0, 3, 3).astype(np.int32)
    check(one_node("Equal", 1, {"a": p, "b": q}, broadcast=1, axis=1), {"a": p, "b": q}, [p == q.reshape(1, 3, 1)])
    f, g = rng.standard_normal((2, 3, 4)).astype(F32), rng.standard_normal(3).astype(F32)
    for op, formula in (("Greater", np.greater), ("Less", np.less)):
        check(
            one_node(op, 1, {"a": f, "b": g}, broadcast=1, axis=1), {"a": f, "b": g}, [formula(f, g.reshape(1, 3, 1))]
        )


@pytest.mark.parametrize("version", [1, 6])
def test_gemm_before_7_scales_c_by_beta(seed, version):
    rng = np.random.default_rng(seed)
    a, b, c = (
        rng.standard_normal((2, 3)).astype(F32),
        rng.standard_normal((3, 4)).astype(F32),
        rng.standard_normal((2, 4)).astype(F32),
    )
    inputs = {"a": a, "b": b, "c": c}
    check(one_node("Gemm", version, inputs, alpha=0.5, beta=0.25), inputs, [(0.5 * a @ b + 0.25 * c).astype(F32)])


def test_cast_1_takes_the_type_by_name(seed):
    x = np.random.default_rng(seed).uniform(-50, 50, (3, 4)).astype(F32)
    check(one_node("Cast", 1, {"x": x}, to="INT32"), {"x": x}, [x.astype(np.int32)])


def test_clip_1_takes_its_bounds_from_attributes(seed):
    x = np.random.default_rng(seed).standard_normal((3, 4)).astype(F32)
    check(one_node("Clip", 1, {"x": x}, min=-0.3, max=0.4), {"x": x}, [np.clip(x, F32(-0.3), F32(0.4))])


@pytest.mark.parametrize("version", [1, 6])
def test_dropout_before_7_in_test_mode_copies_its_input(seed, version):
    x = np.random.default_rng(seed).standard_normal((3, 4)).astype(F32)
    check(one_node("Dropout", version, {"x": x}, is_test=1, ratio=0.3), {"x": x}, [x])


def test_reshape_1_takes_the_shape_attribute(seed):
    x = np.random.default_rng(seed).standard_normal((2, 3, 4)).astype(F32)
    check(one_node("Reshape", 1, {"x": x}, shape=[0, -1]), {"x": x}, [x.reshape(2, 12)])


def test_split_1_takes_lengths_from_its_attribute(seed):
    x = np.random.default_rng(seed).standard_normal((2, 6)).astype(F32)
    check(one_node("Split", 1, {"x": x}, outputs=2, axis=1, split=[2, 4]), {"x": x}, [x[:, :2], x[:, 2:]])


def test_concat_1_defaults_to_axis_1(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((2, 3)).astype(F32), rng.standard_normal((2, 2)).astype(F32)
    check(one_node("Concat", 1, {"x": x, "y": y}), {"x": x, "y": y}, [np.concatenate([x, y], axis=1)])


def test_tile_1_repeats_along_one_axis(seed):
    x = np.random.default_rng(seed).standard_normal((2, 3)).astype(F32)
    inputs = {"x": x, "tiles": np.array(3, dtype=F32), "axis": np.array(1, dtype=F32)}
    check(one_node("Tile", 1, inputs, stored=("tiles", "axis")), inputs, [np.concatenate([x] * 3, axis=1)])


@pytest.mark.parametrize("version", [8, 13])
def test_mean_broadcasts_its_inputs(seed, version):
    rng = np.random.default_rng(seed)
    inputs = {"a": rng.standard_normal((1, 3)).astype(F32), "b": rng.standard_normal((2, 1)).astype(F32)}
    check(one_node("Mean", version, inputs), inputs, [((inputs["a"] + inputs["b"]) / 2).astype(F32)])


@pytest.mark.parametrize("version", [11, 13, 18, 19, 21, 23, 24, 25])
def test_pad_removes_elements_for_negative_pads(seed, version):
    x = np.random.default_rng(seed).standard_normal((3, 5)).astype(F32)
    inputs = {"x": x, "pads": np.array([-1, 2, 1, -2], dtype=np.int64)}
    expected = np.pad(x[1:, :-2], [(0, 1), (2, 0)])
    check(one_node("Pad", version, inputs, stored=("pads",)), inputs, [expected])


@pytest.mark.parametrize("version", [9, 11])
def test_scatter_is_scatter_elements(seed, version):
    rng = np.random.default_rng(seed)
    data, updates = (
        rng.standard_normal((3, 4)).astype(F32),
        rng.standard_normal((2, 2)).astype(F32),
    )  # indices smaller than data
    indices = np.stack([rng.permutation(4)[:2] for _ in range(2)]).astype(np.int64)
    expected = data.copy()
    for i in range(2):
        for j in range(2):
            expected[i, indices[i, j]] = updates[i, j]
    inputs = {"data": data, "indices": indices, "updates": updates}
    check(one_node("Scatter", version, inputs, axis=1), inputs, [expected])


@pytest.mark.parametrize("version", [10, 13])
def test_dequantize_linear_before_19_scales_the_shifted_integers(seed, version):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (2, 3, 2)).astype(np.int8)
    if version == 10:
        inputs = {"x": x, "scale": np.array(0.05, dtype=F32), "zero": np.array(3, dtype=np.int8)}
        expected = (x.astype(np.int64) - 3) * F32(0.05)
    else:
        inputs = {"x": x, "scale": rng.uniform(0.01, 0.1, 3).astype(F32), "zero": np.array([1, -2, 0], dtype=np.int8)}
        expected = (x.astype(np.int64) - inputs["zero"].reshape(1, 3, 1)) * inputs["scale"].reshape(1, 3, 1)
    check(one_node("DequantizeLinear", version, inputs, stored=("scale", "zero")), inputs, [expected.astype(F32)])


def test_upsample_and_resize_10_read_the_input_at_output_over_scale(seed):
    x = np.random.default_rng(seed).standard_normal((1, 1, 3, 4)).astype(F32)
    nearest = x.repeat(2, axis=2).repeat(3, axis=3)
    cols = np.minimum(np.arange(12) / 3, 3)
    low = np.floor(cols).astype(int)
    weight = cols - low
    linear_cols = x[..., low] * (1 - weight) + x[..., np.minimum(low + 1, 3)] * weight
    rows = np.minimum(np.arange(6) / 2, 2)
    top = np.floor(rows).astype(int)
    row_weight = (rows - top)[:, None]
    linear = (
        linear_cols[..., top, :] * (1 - row_weight) + linear_cols[..., np.minimum(top + 1, 2), :] * row_weight
    ).astype(F32)
    scales = np.array([1, 1, 2, 3], dtype=F32)
    for mode, expected in (("nearest", nearest), ("linear", linear)):
        check(one_node("Upsample", 7, {"x": x}, mode=mode, scales=[1.0, 1.0, 2.0, 3.0]), {"x": x}, [expected])
        for op, version in (("Upsample", 9), ("Resize", 10)):
            inputs = {"x": x, "scales": scales}
            if op == "Upsample" and mode == "nearest":
                # onnx.reference runs Upsample-9 nearest with whole scales right; the correction serves it alike
                continue
            check(one_node(op, version, inputs, stored=("scales",), mode=mode), inputs, [expected])


# ---------------------------------------------------------------- where the corrections apply


def test_corrections_apply_to_the_versions_named_and_no_other():
    from dbench.sources.reference_corrections import CORRECTIONS, correction_for

    assert correction_for("", "Softmax", 12) is not None and correction_for("", "Softmax", 13) is None
    assert (
        correction_for("", "BatchNormalization", 13) is not None
        and correction_for("", "BatchNormalization", 14) is None
    )
    assert correction_for("", "Conv", 11) is None and correction_for("", "NoSuchOp", 11) is None
    for correction in CORRECTIONS:
        versions = [
            s.since_version
            for s in onnx.defs.get_all_schemas_with_history()
            if s.name == correction.op_type and s.domain == correction.domain
        ]
        assert set(correction.versions) <= set(versions), correction
        for version in versions:
            found = correction_for(correction.domain, correction.op_type, version)
            assert (found is correction.implementation) == (version in correction.versions)


def test_a_subgraph_is_corrected_too(seed):
    """If's branches (and every nested evaluator) are built from dbench's evaluator class."""
    from dbench.sources.foreign_reference import foreign_evaluator

    x = np.random.default_rng(seed).standard_normal((1, 6, 1, 1)).astype(F32)
    branch = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["s"])],
        "branch",
        [],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
    )
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
    graph = helper.make_graph(
        [node],
        "if",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    (y,) = foreign_evaluator(model).run(None, {"c": np.array(True), "x": x})
    assert close(y, coerced(x, 1, "Softmax"))


def test_the_check_of_a_foreign_model_uses_the_corrected_reference(tmp_path, seed):
    """model_reference verifies a user's model against dbench's foreign reference: a classifier head
    of opset 11 (Softmax over [1, C, 1, 1]) gets its softmax over the channels, not all ones."""
    from dbench.gen.feeds import make_feeds
    from dbench.sources.model import model_item
    from dbench.sources.model_reference import reference_outputs

    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    graph = helper.make_graph(
        [node],
        "head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10, 1, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    path = tmp_path / "head.onnx"
    onnx.save(model, str(path))
    item = model_item(path, {})
    feeds = make_feeds(item.spec)
    outputs, by = reference_outputs(model, item.spec, feeds)
    assert outputs is not None and close(outputs["y"], coerced(feeds["x"], 1, "Softmax"))
    assert not np.allclose(outputs["y"], 1.0)


def test_roi_align_10_uses_the_region_coordinates_unshifted(seed):
    """Version 10 has only output_half_pixel: a region [x1, y1, x2, y2] of a constant-gradient image
    (value = column index) averages to the column at the bin's centre, without the half-pixel shift."""
    rng = np.random.default_rng(seed)
    x = np.tile(np.arange(8, dtype=F32), (1, 1, 8, 1))  # value = column
    x1 = float(rng.uniform(1, 3))
    rois = np.array([[x1, 1.0, x1 + 2.0, 3.0]], dtype=F32)
    inputs = {"x": x, "rois": rois, "batch": np.zeros(1, dtype=np.int64)}
    # one bin, 2 x 2 samples at x1 + 0.5 and x1 + 1.5: the mean column is x1 + 1
    check(
        one_node("RoiAlign", 10, inputs, stored=("rois", "batch"), output_height=1, output_width=1, sampling_ratio=2),
        inputs,
        [np.full((1, 1, 1, 1), x1 + 1.0, dtype=F32)],
    )


def test_label_encoder_1_maps_strings_to_their_index(seed):
    from onnx.reference import ReferenceEvaluator

    from dbench.sources.foreign_reference import foreign_evaluator

    names = ["cat", "dog", "emu"]
    x = np.array(np.random.default_rng(seed).choice(names + ["yak"], size=6), dtype=object)
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", classes_strings=names, default_int64=-7)
    graph = helper.make_graph(
        [node],
        "encoder",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [6])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [6])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1), helper.make_opsetid("", 13)])
    expected = np.array([names.index(v) if v in names else -7 for v in x], dtype=np.int64)
    (y,) = foreign_evaluator(model).run(None, {"x": x})
    assert np.array_equal(y, expected)
    # onnx.reference runs version 2's keys/values rule: version 1's attributes cannot feed it
    with pytest.raises(TypeError, match="LabelEncoder"):
        ReferenceEvaluator(model).run(None, {"x": x})
