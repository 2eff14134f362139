"""Small ONNX models built with onnx.helper whose kernels are known by construction (test helpers)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 21


def model(nodes, inputs, outputs, initializers=(), name: str = "m") -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 10
    return m


def weight(name: str, shape, rng, dtype=np.float32, scale: float = 0.3):
    if np.issubdtype(dtype, np.integer):
        return numpy_helper.from_array(rng.integers(-20, 20, size=shape).astype(dtype), name)
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(dtype), name)


def value(name: str, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def mlp(rng) -> onnx.ModelProto:
    """batch x 64 -> MatMul 64x64 -> Relu -> MatMul 64x64 -> Relu -> Gemm (transB) 10x64: two identical MatMuls."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("MatMul", ["a1", "w2"], ["h2"], name="fc2"),
        helper.make_node("Relu", ["h2"], ["a2"], name="relu2"),
        helper.make_node("Gemm", ["a2", "w3", "b3"], ["y"], name="head", transB=1),
    ]
    inits = [
        weight("w1", (64, 64), rng),
        weight("w2", (64, 64), rng),
        weight("w3", (10, 64), rng),
        weight("b3", (10,), rng),
    ]
    return model(nodes, [value("x", ["batch", 64])], [value("y", ["batch", 10])], inits, "mlp")


def cnn(rng) -> onnx.ModelProto:
    """Conv 3x3 -> depthwise dilated Conv (groups 8, dilation 2) -> the first Conv again -> ConvTranspose x2."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node(
            "Conv",
            ["r1", "wd"],
            ["c2"],
            name="depthwise",
            kernel_shape=[3, 3],
            pads=[2, 2, 2, 2],
            group=8,
            dilations=[2, 2],
        ),
        helper.make_node("Conv", ["c2", "w3", "b3"], ["c3"], name="conv3", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("ConvTranspose", ["c3", "wt"], ["y"], name="up", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    inits = [
        weight("w1", (8, 8, 3, 3), rng),
        weight("wd", (8, 1, 3, 3), rng),
        weight("w3", (8, 8, 3, 3), rng),
        weight("b3", (8,), rng),
        weight("wt", (8, 4, 2, 2), rng),
    ]
    return model(nodes, [value("x", ["n", 8, 12, 12])], [value("y", ["n", 4, 24, 24])], inits, "cnn")


def squeeze_excite(rng) -> onnx.ModelProto:
    """Conv 3x3 (8 -> 20 channels) -> Relu, scaled by its squeeze-excitation (GlobalAveragePool, Conv 1x1,
    Sigmoid, Mul), -> Conv 3x3: ONNX Runtime runs the convolutions in its blocked NCHWc layout and the
    Mul planar, so it inserts a ReorderOutput before the Mul and a ReorderInput after it (20 channels:
    the last block padded)."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("GlobalAveragePool", ["r1"], ["g"], name="squeeze"),
        helper.make_node("Conv", ["g", "ws", "bs"], ["e"], name="excite", kernel_shape=[1, 1]),
        helper.make_node("Sigmoid", ["e"], ["s"], name="gate"),
        helper.make_node("Mul", ["r1", "s"], ["m"], name="scale"),
        helper.make_node("Conv", ["m", "w2"], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    inits = [
        weight("w1", (20, 8, 3, 3), rng),
        weight("ws", (20, 20, 1, 1), rng),
        weight("bs", (20,), rng),
        weight("w2", (20, 20, 3, 3), rng),
    ]
    return model(nodes, [value("x", [1, 8, 10, 10])], [value("y", [1, 20, 10, 10])], inits, "se")


def lstm(rng) -> onnx.ModelProto:
    """Two stacked LSTM layers (T 5, batch 2, hidden 16): one kernel, two copies."""
    h, g = 16, 4
    nodes = [
        helper.make_node("LSTM", ["x", "W1", "R1", "B1"], ["y1"], name="lstm1", hidden_size=h),
        helper.make_node("Squeeze", ["y1", "axis1"], ["s1"], name="squeeze1"),
        helper.make_node("LSTM", ["s1", "W2", "R2", "B2"], ["y2"], name="lstm2", hidden_size=h),
        helper.make_node("Squeeze", ["y2", "axis1"], ["y"], name="squeeze2"),
    ]
    inits = [
        weight(n, s, rng, scale=0.25)
        for n, s in [
            ("W1", (1, g * h, h)),
            ("R1", (1, g * h, h)),
            ("B1", (1, 2 * g * h)),
            ("W2", (1, g * h, h)),
            ("R2", (1, g * h, h)),
            ("B2", (1, 2 * g * h)),
        ]
    ]
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"))
    return model(nodes, [value("x", ["seq", 2, h])], [value("y", ["seq", 2, h])], inits, "lstm")


def attention(rng) -> onnx.ModelProto:
    """Scores = Q·K^T [2, 4, 8, 8] -> Softmax -> ·V: two batched GEMMs (batch 2·4)."""
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        helper.make_node("Softmax", ["scores"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
    ]
    inputs = [value("q", [2, 4, 8, 16]), value("kt", [2, 4, 16, 8]), value("v", [2, 4, 8, 16])]
    return model(nodes, inputs, [value("y", [2, 4, 8, 16])], (), "attention")


def int8_qdq(rng) -> onnx.ModelProto:
    """X -> Q -> DQ -> MatMul <- DQ <- W:int8, then Q -> DQ (int8 qdq), and a MatMulInteger on uint8 x int8."""
    scale = lambda n, v: numpy_helper.from_array(np.array(v, dtype=np.float32), n)
    zero = lambda n: numpy_helper.from_array(np.array(0, dtype=np.int8), n)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="dq_w"),
        helper.make_node("MatMul", ["xd", "wd"], ["yf"], name="qdq_matmul"),
        helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["yq"], name="q_y"),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq_y"),
        helper.make_node("MatMulInteger", ["a", "b"], ["z"], name="integer_matmul"),
    ]
    inits = [
        scale("xs", 2**-7),
        zero("xz"),
        weight("w", (32, 16), rng, np.int8),
        scale("ws", 2**-6),
        zero("wz"),
        scale("ys", 2**-4),
        zero("yz"),
        weight("b", (32, 8), rng, np.int8),
    ]
    inputs = [value("x", [4, 32]), value("a", [4, 32], TensorProto.UINT8)]
    outputs = [value("y", [4, 16]), value("z", [4, 8], TensorProto.INT32)]
    return model(nodes, inputs, outputs, inits, "int8")


def int8_pool(rng) -> onnx.ModelProto:
    """A static QDQ Conv+Relu -> MaxPool -> Conv chain (uint8 activations, int8 weights), as
    onnxruntime.quantization writes one: ONNX Runtime runs the first convolution as an NHWC QLinearConv
    and the pool after it as com.microsoft.NhwcMaxPool on its channels-last output."""
    scalar = lambda n, v, dt: numpy_helper.from_array(np.array(v, dtype=dt), n)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["w1", "sw", "zw"], ["w1d"], name="dq_w1"),
        helper.make_node("Conv", ["xd", "w1d"], ["h"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["h"], ["hr"], name="relu1"),
        helper.make_node("QuantizeLinear", ["hr", "sh", "zh"], ["hq"], name="q_h"),
        helper.make_node("DequantizeLinear", ["hq", "sh", "zh"], ["hd"], name="dq_h"),
        helper.make_node("MaxPool", ["hd"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["p", "sh", "zh"], ["pq"], name="q_p"),
        helper.make_node("DequantizeLinear", ["pq", "sh", "zh"], ["pd"], name="dq_p"),
        helper.make_node("DequantizeLinear", ["w2", "sw", "zw"], ["w2d"], name="dq_w2"),
        helper.make_node("Conv", ["pd", "w2d"], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    inits = [
        weight("w1", (16, 8, 3, 3), rng, np.int8),
        weight("w2", (16, 16, 3, 3), rng, np.int8),
        scalar("sx", 0.02, np.float32),
        scalar("zx", 128, np.uint8),
        scalar("sw", 0.01, np.float32),
        scalar("zw", 0, np.int8),
        scalar("sh", 0.05, np.float32),
        scalar("zh", 0, np.uint8),
    ]
    return model(nodes, [value("x", [1, 8, 32, 32])], [value("y", [1, 16, 16, 16])], inits, "int8_pool")


def save(m: onnx.ModelProto, folder, name: str):
    path = folder / f"{name}.onnx"
    onnx.save(m, str(path))
    return path


def flatten_by_shape_arithmetic(rng) -> onnx.ModelProto:
    """x [seq, batch, 16] reshaped to [seq·batch, 16] through Shape/Slice/Mul/Reshape/Concat (as PyTorch's
    exporter writes it; ONNX data propagation leaves the result's first dim open), then MatMul 16 -> 8."""
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, dtype=np.int64), n)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Slice", ["shape", "zero", "one"], ["d0"], name="d0"),
        helper.make_node("Slice", ["shape", "one", "two"], ["d1"], name="d1"),
        helper.make_node("Mul", ["d0", "d1"], ["rows"], name="rows"),
        helper.make_node("Reshape", ["rows", "one"], ["rows1"], name="rows1"),
        helper.make_node("Concat", ["rows1", "width"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"], name="flat"),
        helper.make_node("MatMul", ["flat", "w"], ["y"], name="proj"),
    ]
    inits = [i64("zero", [0]), i64("one", [1]), i64("two", [2]), i64("width", [16]), weight("w", (16, 8), rng)]
    return model(nodes, [value("x", ["seq", "batch", 16])], [value("y", [None, 8])], inits, "flatten")


def int8_qlinear(rng) -> onnx.ModelProto:
    """QLinearConv (3x3, pad 1), ConvInteger (3x3, stride 2) and QLinearMatMul on 8-bit inputs."""
    scalar = lambda n, v, dt: numpy_helper.from_array(np.array(v, dtype=dt), n)
    nodes = [
        helper.make_node(
            "QLinearConv",
            ["x", "s", "zu", "w1", "s", "zs", "s", "zu"],
            ["y1"],
            name="qconv",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("ConvInteger", ["x", "w2"], ["y2"], name="iconv", kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("QLinearMatMul", ["a", "s", "zu", "b", "s", "zs", "s", "zu"], ["y3"], name="qmatmul"),
    ]
    inits = [
        scalar("s", 0.05, np.float32),
        scalar("zu", 128, np.uint8),
        scalar("zs", 0, np.int8),
        weight("w1", (8, 4, 3, 3), rng, np.int8),
        weight("w2", (8, 4, 3, 3), rng, np.int8),
        weight("b", (32, 16), rng, np.int8),
    ]
    inputs = [value("x", [1, 4, 8, 8], TensorProto.UINT8), value("a", [4, 32], TensorProto.UINT8)]
    outputs = [
        value("y1", [1, 8, 8, 8], TensorProto.UINT8),
        value("y2", [1, 8, 3, 3], TensorProto.INT32),
        value("y3", [4, 16], TensorProto.UINT8),
    ]
    return model(nodes, inputs, outputs, inits, "int8_qlinear")


def initializers_as_inputs(
    m: onnx.ModelProto, ir_version: int | None = None, opset: int | None = None
) -> onnx.ModelProto:
    """`m` as exporters write it with initializers kept as inputs (every IR < 4 model does): each
    initializer is also declared as a graph input; optionally at another IR version and opset."""
    out = onnx.ModelProto()
    out.CopyFrom(m)
    declared = {i.name for i in out.graph.input}
    out.graph.input.extend(
        value(t.name, list(t.dims), t.data_type) for t in out.graph.initializer if t.name not in declared
    )
    if opset is not None:
        del out.opset_import[:]
        out.opset_import.append(helper.make_opsetid("", opset))
    if ir_version is not None:
        out.ir_version = ir_version
    return out


def unnamed(m: onnx.ModelProto) -> onnx.ModelProto:
    """`m` with every node's name removed (many exporters write none)."""
    out = onnx.ModelProto()
    out.CopyFrom(m)
    for node in out.graph.node:
        node.name = ""
    return out


def ir3_folded_scale(rng) -> onnx.ModelProto:
    """IR 3, opset 7: Conv -> Dropout (its mask's shape stays open, so shape arithmetic is folded) ->
    Mul by Sqrt(2) (a small value the folding computes) -> Conv. Two 8-channel 3x3 convolutions."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Dropout", ["c1"], ["d", "mask"], ratio=0.1),
        helper.make_node("Sqrt", ["two"], ["root"]),
        helper.make_node("Mul", ["d", "root"], ["scaled"]),
        helper.make_node("Conv", ["scaled", "w2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    inits = [
        weight("w1", (8, 4, 3, 3), rng),
        numpy_helper.from_array(np.array([2.0], np.float32), "two"),
        weight("w2", (8, 8, 3, 3), rng),
    ]
    m = model(nodes, [value("x", ["batch", 4, 6, 6])], [value("y", ["batch", 8, 6, 6])], inits, "ir3")
    return initializers_as_inputs(m, ir_version=3, opset=7)


def linear_ir3(rng) -> onnx.ModelProto:
    """An IR 3 (opset 8) MLP as old exporters wrote it: Gemm(x, W1, b1) -> Relu -> Reshape by an int64
    shape initializer -> MatMul W2; every initializer is also a graph input."""
    i64 = numpy_helper.from_array(np.array([-1, 16], dtype=np.int64), "shape")
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "shape"], ["flat"], name="flat"),
        helper.make_node("MatMul", ["flat", "w2"], ["y"], name="fc2"),
    ]
    inits = [weight("w1", (16, 12), rng), weight("b1", (16,), rng), i64, weight("w2", (16, 6), rng)]
    m = model(nodes, [value("x", ["batch", 12])], [value("y", ["batch", 6])], inits, "linear_ir3")
    return initializers_as_inputs(m, ir_version=3, opset=8)


def structure_only() -> onnx.ModelProto:
    """x [1, 4, 6, 6] -> Conv (8) -> Relu -> Flatten -> Gemm (10) -> Softmax, every weight and bias a
    ConstantOfShape (one value throughout), as onnx's light_* networks are stored."""

    def filled(name: str, shape, value: float) -> list:
        dims = numpy_helper.from_array(np.array(shape, dtype=np.int64), f"{name}_shape")
        node = helper.make_node(
            "ConstantOfShape",
            [f"{name}_shape"],
            [name],
            name=f"fill_{name}",
            value=numpy_helper.from_array(np.array([value], dtype=np.float32)),
        )
        return [dims, node]

    parts = [
        filled("w1", [8, 4, 3, 3], 0.02),
        filled("b1", [8], 0.0),
        filled("w2", [10, 8 * 36], 0.01),
        filled("b2", [10], 0.0),
    ]
    nodes = [p[1] for p in parts] + [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Flatten", ["r1"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    m = model(nodes, [value("x", [1, 4, 6, 6])], [value("prob", [1, 10])], [p[0] for p in parts], "structure")
    m.opset_import[0].version = 13
    m.ir_version = 7
    return m
