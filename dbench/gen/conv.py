"""Convolution graphs (NCHW) for the three passes DeepBench times, from standard ONNX ops.

  fwd:        Y[n,k,Q,P]  = Conv(X[n,c,h,w], W[k,c,r,s]), kernel_shape [r, s],
              pads [pad_h, pad_w, pad_h, pad_w], strides [hstride, wstride]
  bwd_data:   dX[n,c,h,w] = ConvTranspose(dY[n,k,Q,P], W[k,c,r,s]) with the same pads/strides and
              output_padding so the result is exactly h x w (what floor division dropped)
  bwd_filter: dW[k,c,r,s] = a convolution of X^T[c,n,h,w] by dY^T[k,n,Q,P] dilated by the strides,
              sliced to r x s and transposed back. It computes R' x S' >= r x s taps when the
              stride does not divide evenly; those extra FLOPs are in `flops_executed`.
Groups and dilations (beyond DeepBench's columns) become Conv/ConvTranspose's `group` and `dilations`
attributes (conv_math.grouping); W is [k, c/groups, r, s]. bwd_filter is built for groups = 1 and no
dilation only.
Precision int8 (forward pass only) is built by int8.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from dbench.catalog.kernels import ConvKernel
from dbench.errors import UnsupportedError
from dbench.gen import conv_math, int8
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import GenOptions
from dbench.gen.precision import PRECISIONS, dtype_name, float_precision
from dbench.gen.tolerance import Tolerance

SUPPORTED_PRECISIONS = (*PRECISIONS, "int8")
ROW_SAMPLED = False
PASSES = {"fwd": "conv", "bwd_data": "convtranspose", "bwd_filter": "conv_dilated"}
TRAIN_PASSES = ("bwd_data", "bwd_filter")


def _filter_extent(kernel: ConvKernel) -> tuple[int, int]:
    """R', S': taps the dilated backward-filter convolution produces before slicing to r x s."""
    q, p = kernel.out_h, kernel.out_w
    return (
        kernel.h + 2 * kernel.pad_h - kernel.hstride * (q - 1),
        kernel.w + 2 * kernel.pad_w - kernel.wstride * (p - 1),
    )


def _nodes(kernel: ConvKernel, pass_name: str) -> tuple[list, int]:
    """ONNX nodes for one pass and the FLOPs they execute."""
    pads = [kernel.pad_h, kernel.pad_w, kernel.pad_h, kernel.pad_w]
    strides = [kernel.hstride, kernel.wstride]
    q, p = kernel.out_h, kernel.out_w
    if pass_name == "fwd":
        node = helper.make_node(
            "Conv",
            ["X", "W"],
            ["Y"],
            kernel_shape=[kernel.r, kernel.s],
            pads=pads,
            strides=strides,
            **conv_math.grouping(kernel),
        )
        return [node], kernel.flops()
    if pass_name == "bwd_data":
        output_padding = [
            kernel.h - (kernel.hstride * (q - 1) + kernel.extent_h - 2 * kernel.pad_h),
            kernel.w - (kernel.wstride * (p - 1) + kernel.extent_w - 2 * kernel.pad_w),
        ]
        node = helper.make_node(
            "ConvTranspose",
            ["dY", "W"],
            ["dX"],
            kernel_shape=[kernel.r, kernel.s],
            pads=pads,
            strides=strides,
            output_padding=output_padding,
            **conv_math.grouping(kernel),
        )
        return [node], kernel.flops()
    if pass_name == "bwd_filter":
        if conv_math.grouping(kernel):
            raise UnsupportedError("the backward-filter graph is built for groups = 1 and no dilation only")
        r_ext, s_ext = _filter_extent(kernel)
        nodes = [
            helper.make_node("Transpose", ["X"], ["Xt"], perm=[1, 0, 2, 3]),
            helper.make_node("Transpose", ["dY"], ["dYt"], perm=[1, 0, 2, 3]),
            helper.make_node("Conv", ["Xt", "dYt"], ["dWt_full"], kernel_shape=[q, p], pads=pads, dilations=strides),
            helper.make_node("Constant", [], ["starts"], value_ints=[0, 0]),
            helper.make_node("Constant", [], ["ends"], value_ints=[kernel.r, kernel.s]),
            helper.make_node("Constant", [], ["axes"], value_ints=[2, 3]),
            helper.make_node("Slice", ["dWt_full", "starts", "ends", "axes"], ["dWt"]),
            helper.make_node("Transpose", ["dWt"], ["dW"], perm=[1, 0, 2, 3]),
        ]
        return nodes, 2 * kernel.n * kernel.k * kernel.c * q * p * r_ext * s_ext
    raise ValueError(f"unknown conv pass {pass_name!r}; valid: {', '.join(PASSES)}")


def build(kernel: ConvKernel, precision: str, pass_name: str = "fwd", form: str | None = None, **attrs: Any) -> Graph:
    """One pass of the convolution as an ONNX graph (int8: in the int8 form `form`, see int8)."""
    if precision == "int8":
        return int8.build(kernel, precision, pass_name, form or "qdq", **attrs)
    prec = float_precision(precision)
    dt = dtype_name(prec.dtype)
    n, c, h, w, k, r, s = kernel.n, kernel.c, kernel.h, kernel.w, kernel.k, kernel.r, kernel.s
    x = TensorSpec("X", (n, c, h, w), dt, "activation")
    wt = TensorSpec("W", (k, kernel.group_c, r, s), dt, "weight")
    dy = TensorSpec("dY", (n, k, kernel.out_h, kernel.out_w), dt, "activation")
    inputs, output = {
        "fwd": ((x, wt), TensorSpec("Y", dy.shape, dt, "output")),
        "bwd_data": ((dy, wt), TensorSpec("dX", x.shape, dt, "output")),
        "bwd_filter": ((x, dy), TensorSpec("dW", wt.shape, dt, "output")),
    }[pass_name]
    nodes, executed = _nodes(kernel, pass_name)
    spec = make_spec(
        kernel, precision, pass_name, PASSES[pass_name], inputs=inputs, outputs=(output,), flops_executed=executed
    )
    return Graph(
        spec, make_model(spec.id, nodes, inputs, (output,), doc=f"DeepBench convolution {kernel.id}, {pass_name}")
    )


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 result of one pass by direct summation over filter taps (conv_math); the exact
    integer result for int8."""
    check_whole_outputs("conv", rows)
    if spec.precision == "int8":
        return int8.reference(spec, feeds)
    kernel = ConvKernel(**spec.params)
    f = {name: np.asarray(v, dtype=np.float64) for name, v in feeds.items()}
    if spec.pass_name == "fwd":
        return {"Y": conv_math.forward(kernel, f["X"], f["W"])}
    if spec.pass_name == "bwd_data":
        return {"dX": conv_math.backward_data(kernel, f["dY"], f["W"])}
    if spec.pass_name == "bwd_filter":
        return {"dW": conv_math.backward_filter(kernel, f["X"], f["dY"])}
    raise ValueError(f"unknown conv pass {spec.pass_name!r}")


def tolerance(spec: GraphSpec) -> Tolerance:
    """int8's exactness rule, else the precision's relative bound."""
    return int8.tolerance(spec) if spec.precision == "int8" else float_tolerance(spec)


def plan(kernel: ConvKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """The forward pass always; both backward passes when the kernel is selected for training
    (int8: the forward pass in the chosen int8 form)."""
    if options.precision == "int8":
        return int8.plan(kernel, options, train)
    passes = ("fwd", *TRAIN_PASSES) if train else ("fwd",)
    return [(p, PASSES[p], {}) for p in passes]
