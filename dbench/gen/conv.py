"""Convolution graphs (NCHW) for the three passes DeepBench times, from standard ONNX ops.

  fwd:        Y[n,k,Q,P]  = Conv(X[n,c,h,w], W[k,c,r,s]), kernel_shape [r, s],
              pads [pad_h, pad_w, pad_h, pad_w], strides [hstride, wstride]
  bwd_data:   dX[n,c,h,w] = ConvTranspose(dY[n,k,Q,P], W[k,c,r,s]) with the same pads/strides and
              output_padding so the result is exactly h x w (what floor division dropped)
  bwd_filter: dW[k,c,r,s] = a convolution of X^T[c,n,h,w] by dY^T[k,n,Q,P] dilated by the strides,
              sliced to r x s and transposed back. It computes R' x S' >= r x s taps when the
              stride does not divide evenly; those extra FLOPs are in `flops_executed`.
Groups and dilations (beyond DeepBench's columns) become Conv/ConvTranspose's `group` and `dilations`
attributes, written only when not 1 (DeepBench's graphs are unchanged); W is [k, c/groups, r, s].
bwd_filter is built for groups = 1 and no dilation only.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from dbench.catalog.kernels import ConvKernel
from dbench.errors import UnsupportedError
from dbench.gen.feeds import default_seed
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, graph_id, make_model
from dbench.gen.precision import dtype_name, float_precision

PASSES = {"fwd": "conv", "bwd_data": "convtranspose", "bwd_filter": "conv_dilated"}
TRAIN_PASSES = ("bwd_data", "bwd_filter")


def _filter_extent(kernel: ConvKernel) -> tuple[int, int]:
    """R', S': taps the dilated backward-filter convolution produces before slicing to r x s."""
    q, p = kernel.out_h, kernel.out_w
    return (kernel.h + 2 * kernel.pad_h - kernel.hstride * (q - 1), kernel.w + 2 * kernel.pad_w - kernel.wstride * (p - 1))


def grouping(kernel: ConvKernel) -> dict:
    """`group` and `dilations` attributes, present only when not 1."""
    attrs = {"group": kernel.groups} if kernel.groups != 1 else {}
    if (kernel.dil_h, kernel.dil_w) != (1, 1):
        attrs["dilations"] = [kernel.dil_h, kernel.dil_w]
    return attrs


def _nodes(kernel: ConvKernel, pass_name: str) -> tuple[list, int]:
    """ONNX nodes for one pass and the FLOPs they execute."""
    pads = [kernel.pad_h, kernel.pad_w, kernel.pad_h, kernel.pad_w]
    strides = [kernel.hstride, kernel.wstride]
    q, p = kernel.out_h, kernel.out_w
    if pass_name == "fwd":
        node = helper.make_node("Conv", ["X", "W"], ["Y"], kernel_shape=[kernel.r, kernel.s], pads=pads, strides=strides,
                                **grouping(kernel))
        return [node], kernel.flops()
    if pass_name == "bwd_data":
        output_padding = [kernel.h - (kernel.hstride * (q - 1) + kernel.extent_h - 2 * kernel.pad_h),
                          kernel.w - (kernel.wstride * (p - 1) + kernel.extent_w - 2 * kernel.pad_w)]
        node = helper.make_node("ConvTranspose", ["dY", "W"], ["dX"], kernel_shape=[kernel.r, kernel.s], pads=pads,
                                strides=strides, output_padding=output_padding, **grouping(kernel))
        return [node], kernel.flops()
    if pass_name == "bwd_filter":
        if grouping(kernel):
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


def build(kernel: ConvKernel, precision: str, pass_name: str = "fwd", form: str | None = None) -> Graph:
    """One pass of the convolution as an ONNX graph in a floating-point precision."""
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
    form = PASSES[pass_name]
    gid = graph_id(kernel.id, pass_name, form, precision)
    spec = GraphSpec(
        id=gid, kernel_id=kernel.id, family=kernel.family, op=kernel.op, params=kernel.params(),
        suites=kernel.suites, apps=kernel.apps, pass_name=pass_name, form=form, precision=precision,
        flops=kernel.flops(), flops_executed=executed, inputs=inputs, outputs=(output,), seed=default_seed(gid),
    )
    return Graph(spec, make_model(gid, nodes, inputs, (output,), doc=f"DeepBench convolution {kernel.id}, {pass_name}"))


def _taps(kernel: ConvKernel):
    """(i, j, row slice, column slice) of the padded input that filter tap (i, j) touches."""
    q, p = kernel.out_h, kernel.out_w
    for i in range(kernel.r):
        for j in range(kernel.s):
            top, left = i * kernel.dil_h, j * kernel.dil_w
            yield (i, j, slice(top, top + kernel.hstride * (q - 1) + 1, kernel.hstride),
                   slice(left, left + kernel.wstride * (p - 1) + 1, kernel.wstride))


def _by_group(kernel: ConvKernel, tensor: np.ndarray) -> np.ndarray:
    """[n, channels, ...] -> [n, groups, channels / groups, ...]."""
    return tensor.reshape(tensor.shape[0], kernel.groups, tensor.shape[1] // kernel.groups, *tensor.shape[2:])


def _tap_weights(kernel: ConvKernel, w: np.ndarray, i: int, j: int) -> np.ndarray:
    """Tap (i, j) of W [k, c/g, r, s] as [g, k/g, c/g]."""
    return w[:, :, i, j].reshape(kernel.groups, kernel.k // kernel.groups, kernel.group_c)


def _pad(x: np.ndarray, kernel: ConvKernel) -> np.ndarray:
    return np.pad(x, ((0, 0), (0, 0), (kernel.pad_h, kernel.pad_h), (kernel.pad_w, kernel.pad_w)))


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """float64 result of one pass, by direct summation over filter taps (independent of ONNX's ops)."""
    kernel = ConvKernel(**spec.params)
    f = {name: np.asarray(v, dtype=np.float64) for name, v in feeds.items()}
    if spec.pass_name == "fwd":
        xp = _pad(f["X"], kernel)
        y = np.zeros((kernel.n, kernel.k, kernel.out_h, kernel.out_w))
        for i, j, rows, cols in _taps(kernel):
            part = np.einsum("ngchw,gkc->ngkhw", _by_group(kernel, xp[:, :, rows, cols]), _tap_weights(kernel, f["W"], i, j), optimize=True)
            y += part.reshape(y.shape)
        return {"Y": y}
    if spec.pass_name == "bwd_data":
        dxp = _pad(np.zeros((kernel.n, kernel.c, kernel.h, kernel.w)), kernel)
        for i, j, rows, cols in _taps(kernel):
            part = np.einsum("ngkhw,gkc->ngchw", _by_group(kernel, f["dY"]), _tap_weights(kernel, f["W"], i, j), optimize=True)
            dxp[:, :, rows, cols] += part.reshape(kernel.n, kernel.c, *part.shape[3:])
        return {"dX": dxp[:, :, kernel.pad_h:kernel.pad_h + kernel.h, kernel.pad_w:kernel.pad_w + kernel.w]}
    if spec.pass_name == "bwd_filter":
        xp = _pad(f["X"], kernel)
        dw = np.zeros((kernel.k, kernel.c, kernel.r, kernel.s))
        for i, j, rows, cols in _taps(kernel):
            dw[:, :, i, j] = np.einsum("nkhw,nchw->kc", f["dY"], xp[:, :, rows, cols], optimize=True)
        return {"dW": dw}
    raise ValueError(f"unknown conv pass {spec.pass_name!r}")


def plan(kernel: ConvKernel, options, train: bool) -> list[tuple[str, str, dict]]:
    """The forward pass always; both backward passes when the kernel is selected for training."""
    passes = ("fwd", *TRAIN_PASSES) if train else ("fwd",)
    return [(p, PASSES[p], {}) for p in passes]
