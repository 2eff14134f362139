"""int8 GEMM and convolution graphs (inference: forward pass only) in three forms.

  integer: Y:int32 = MatMulInteger / ConvInteger(X:uint8, W:int8), no zero points: DeepBench's
           "8-bit multiply, 32-bit accumulate" exactly.
  qlinear: Y:uint8 = QLinearMatMul / QLinearConv(X:uint8 zp 128, W:int8 zp 0, Y zp 128).
  qdq:     X:float32 -> QuantizeLinear -> DequantizeLinear -> MatMul / Conv <- DequantizeLinear <- W:int8,
           then QuantizeLinear -> DequantizeLinear -> Y:float32; symmetric int8 (zero points 0), the
           explicit-quantisation pattern TensorRT documents. ONNX Runtime fuses it into QLinearMatMul /
           QLinearConv and OpenVINO into an int8 kernel (without the output Q, ONNX Runtime would run
           the Conv in float).
GEMMs use the MatMul layout Y[n, m] = X[n, k] @ W[k, m] (W is DeepBench's A, the weight); a_t and b_t
are not applied (every int8 DeepBench GEMM is NN). Convolutions are NCHW with conv.py's attributes.
Scales and zero points are scalar initializers; the weight is a graph input (role weight).
gemm.py and conv.py hand their precision-int8 graphs to this module.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from onnx import helper, numpy_helper

from dbench.catalog.kernels import ConvKernel, GemmKernel
from dbench.errors import UnsupportedError, UsageError
from dbench.gen import conv_math
from dbench.gen.family import PlannedGraph, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.int8_quant import (
    WEIGHT_RANGE,
    FormTypes,
    check_form,
    padded_dims,
    reduction_length,
    requantize,
    round_saturate,
    scales,
)
from dbench.gen.options import GenOptions
from dbench.gen.tolerance import Tolerance

Int8Kernel = GemmKernel | ConvKernel


def _conv_attrs(kernel: ConvKernel) -> dict:
    return {
        "kernel_shape": [kernel.r, kernel.s],
        "pads": [kernel.pad_h, kernel.pad_w, kernel.pad_h, kernel.pad_w],
        "strides": [kernel.hstride, kernel.wstride],
        **conv_math.grouping(kernel),
    }


def _shapes(kernel: Int8Kernel) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """X, W and Y shapes of the executed (possibly padded) kernel."""
    if isinstance(kernel, GemmKernel):
        batch = (kernel.batch,) if kernel.batch != 1 else ()
        return (*batch, kernel.n, kernel.k), (*batch, kernel.k, kernel.m), (*batch, kernel.n, kernel.m)
    return (
        (kernel.n, kernel.c, kernel.h, kernel.w),
        (kernel.k, kernel.group_c, kernel.r, kernel.s),
        (kernel.n, kernel.k, kernel.out_h, kernel.out_w),
    )


def _tensors(kernel: Int8Kernel, form: str, types: FormTypes) -> tuple[TensorSpec, TensorSpec, TensorSpec]:
    """Graph input X (activation), W (weight) and output Y with their dtypes and feed ranges."""
    xs, ws, ys = _shapes(kernel)
    if form == "qdq":
        x = TensorSpec("X", xs, "float32", "activation", -1.0, 1.0)
        y = TensorSpec("Y", ys, "float32", "output")
    else:
        x = TensorSpec("X", xs, types.x, "activation", 0, 255)
        y = TensorSpec("Y", ys, types.y, "output")
    batched = isinstance(kernel, GemmKernel) and kernel.batch != 1  # both operands are activations
    return x, TensorSpec("W", ws, types.w, "activation" if batched else "weight", *WEIGHT_RANGE), y


def _nodes(kernel: Int8Kernel, form: str) -> list:
    """The form's nodes; the GEMM/convolution node is named after the family for profiles."""
    gemm = isinstance(kernel, GemmKernel)
    if form == "integer":
        return [
            helper.make_node(
                "MatMulInteger" if gemm else "ConvInteger",
                ["X", "W"],
                ["Y"],
                name=kernel.family,
                **({} if gemm else _conv_attrs(kernel)),
            )
        ]
    if form == "qlinear":
        ins = ["X", "x_scale", "x_zero_point", "W", "w_scale", "w_zero_point", "y_scale", "y_zero_point"]
        return [
            helper.make_node(
                "QLinearMatMul" if gemm else "QLinearConv",
                ins,
                ["Y"],
                name=kernel.family,
                **({} if gemm else _conv_attrs(kernel)),
            )
        ]
    return [
        helper.make_node("QuantizeLinear", ["X", "x_scale", "x_zero_point"], ["Xq"], name="quantize_x"),
        helper.make_node("DequantizeLinear", ["Xq", "x_scale", "x_zero_point"], ["Xd"], name="dequantize_x"),
        helper.make_node("DequantizeLinear", ["W", "w_scale", "w_zero_point"], ["Wd"], name="dequantize_w"),
        helper.make_node(
            "MatMul" if gemm else "Conv",
            ["Xd", "Wd"],
            ["Yf"],
            name=kernel.family,
            **({} if gemm else _conv_attrs(kernel)),
        ),
        helper.make_node("QuantizeLinear", ["Yf", "y_scale", "y_zero_point"], ["Yq"], name="quantize_y"),
        helper.make_node("DequantizeLinear", ["Yq", "y_scale", "y_zero_point"], ["Y"], name="dequantize_y"),
    ]


def _initializers(types: FormTypes, scale: dict[str, float]) -> list:
    """Scalar scales (float32) and zero points (typed like the tensor they describe)."""
    out = []
    for key, dtype, zero in (("x", types.x, types.x_zero), ("w", types.w, types.w_zero), ("y", types.y, types.y_zero)):
        out.append(numpy_helper.from_array(np.array(scale[key], dtype=np.float32), f"{key}_scale"))
        out.append(numpy_helper.from_array(np.array(zero, dtype=dtype), f"{key}_zero_point"))
    return out


def build(
    kernel: Int8Kernel, precision: str = "int8", pass_name: str = "fwd", form: str = "qdq", pad: bool = True
) -> Graph:
    """The kernel's forward pass in an int8 form, padded by DeepBench's rule unless `pad` is False."""
    if precision != "int8":
        raise UsageError(f"dbench.gen.int8 builds precision int8 only, not {precision!r}")
    if not isinstance(kernel, (GemmKernel, ConvKernel)):
        raise UnsupportedError(f"{kernel.family} kernels have no int8 form (int8 covers gemm, conv)")
    if pass_name != "fwd":
        raise UnsupportedError(f"int8 graphs are inference only: pass {pass_name!r} is not built; use --passes fwd")
    types = check_form(form)
    padded = padded_dims(kernel) if pad else {}
    executed = replace(kernel, **padded)
    reduction = reduction_length(executed)
    scale = {} if form == "integer" else scales(reduction)
    zeros = {"x": types.x_zero, "w": types.w_zero} | ({} if form == "integer" else {"y": types.y_zero})
    x, w, y = _tensors(executed, form, types)
    spec = make_spec(
        kernel,
        precision,
        pass_name,
        form,
        inputs=(x, w),
        outputs=(y,),
        flops_executed=executed.flops(),
        attrs={
            "pad": pad,
            "padded": padded,
            "layout": "matmul" if isinstance(kernel, GemmKernel) else "nchw",
            "int_types": {"x": types.x, "w": types.w, "y": types.y},
            "zero_points": zeros,
            "scales": scale,
            "reduction": reduction,
        },
        id_form=f"{form}-pad4" if padded else None,
    )
    model = make_model(
        spec.id, _nodes(executed, form), (x, w), (y,), doc=f"DeepBench {kernel.family} {kernel.id}, int8 {form}"
    )
    if scale:
        model.graph.initializer.extend(_initializers(types, scale))
    return Graph(spec, model)


def executed_kernel(spec: GraphSpec) -> Int8Kernel:
    """The kernel the graph computes: the spec's kernel with the padded dimensions applied."""
    cls = GemmKernel if spec.family == "gemm" else ConvKernel
    return cls(**{**spec.params, **spec.attrs["padded"]})


def _accumulate(kernel: Int8Kernel, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ x·w over the reduction, exactly: integers in float64 stay exact below 2^53 (K·255·128 is far below)."""
    if isinstance(kernel, GemmKernel):
        return x @ w
    return conv_math.forward(kernel, x, w)


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The exact integer result (int32 for `integer`, the 8-bit output for `qlinear`, and the
    dequantised requantised output for `qdq`), from the spec's attrs alone."""
    kernel = executed_kernel(spec)
    zero, scale, types = spec.attrs["zero_points"], spec.attrs["scales"], spec.attrs["int_types"]
    x = np.asarray(feeds["X"], dtype=np.float64)
    if spec.form == "qdq":
        x = round_saturate(x / scale["x"], zero["x"], types["x"]).astype(np.float64)
    acc = _accumulate(kernel, x - zero["x"], np.asarray(feeds["W"], dtype=np.float64) - zero["w"])
    if spec.form == "integer":
        return {"Y": acc.astype(np.int64).astype(np.int32)}  # wraps as an int32 accumulator would
    y = requantize(acc, scale, zero["y"], types["y"])
    if spec.form == "qlinear":
        return {"Y": y}
    return {"Y": (y.astype(np.float64) - zero["y"]) * scale["y"]}


def tolerance(spec: GraphSpec) -> Tolerance:
    """integer and qlinear must match exactly; qdq within one output quantisation step (y_scale):
    Q/DQ lets a runtime compute the MatMul/Conv in float (any order, Winograd...) before requantising,
    which can move a value lying at a rounding boundary by one step."""
    if spec.form == "qdq":
        return Tolerance("abs", spec.attrs["scales"]["y"])
    return Tolerance("abs", 0.0)


def plan(kernel: Int8Kernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """One forward graph in the chosen int8 form (`--int8-form`), padded unless `--no-pad`."""
    return [("fwd", options.int8_form, {"pad": options.int8_pad})]
