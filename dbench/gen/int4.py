"""4-bit weight-only GEMM graphs (inference: forward pass only) in the two forms a user may hold.

Both compute Y[n, m] = X[n, k] @ dequant(W)[k, m] with float32 activations X (DeepBench's B) and a
4-bit weight W (DeepBench's A) quantised in blocks of `block` consecutive values along k, each block
with its own float32 scale and, for uint4, its own zero point: w = (q - zero) * scale.

  nbits: ONNX Runtime's com.microsoft `MatMulNBits` (bits 4, block_size, K, N, accuracy_level 1: fp32
         compute). B is uint8 [m, k_blocks, block / 2], two codes a byte, the lower nibble first along k;
         scales float32 [m * k_blocks]; zero points packed uint8 [m * ceil(k_blocks / 2)] (lower nibble
         first); without them every code's zero point is 8, the symmetric int4 weight stored as q + 8.
  dq:    the standard form: DequantizeLinear (opset 21 blocked quantisation: axis 0, block_size) of an
         int4 or uint4 W [k, m] with scales float32 [k_blocks, m] (and zero points uint4 [k_blocks, m]),
         then MatMul.

a_t and b_t are not applied (the MatMul layout, as int8's). Every weight tensor (codes, scales, zero
points) is a graph input tagged `weight`, made a constant at load time like any weight. The reference
dequantises the same blocks in float64 and multiplies in float64; its float32 rounding bound is the
fp32 rule (the runtime may dequantise in float32 or run the GEMM in a different order)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from dbench.catalog.kernels import GemmKernel
from dbench.errors import UnsupportedError, UsageError
from dbench.gen.family import PlannedGraph, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import INT4_FORMS, INT4_TYPES, GenOptions
from dbench.gen.tolerance import Tolerance

MS_DOMAIN = "com.microsoft"
ACCURACY_FP32 = 1
"""MatMulNBits' accuracy_level for fp32 compute: the activations stay float32 (level 4 would quantise
them to int8 per block, a different kernel)."""
SCALE_RANGE = (2.0**-5, 2.0**-4)
"""Per-block scales are drawn from this range: dequantised weights within about [-0.5, 0.5]."""
TOLERANCE = 1e-3
"""max|out - ref| / max|ref| for fp32 compute: the fp32 rule (a float32 dequantisation rounds each weight
by half a float32 unit at most; what dominates is the GEMM's float32 summation)."""
SYMMETRIC_ZERO = 8
"""MatMulNBits' implied zero point of a 4-bit code without zero points: code = int4 value + 8."""


def k_blocks(k: int, block: int) -> int:
    """Blocks along k (the last one may be partial)."""
    return -(-k // block)


def _tensors(kernel: GemmKernel, form: str, block: int, wtype: str) -> tuple[TensorSpec, ...]:
    """The graph's inputs: X (activation) and the weight's codes, scales and zero points (role weight)."""
    n, k, m = kernel.n, kernel.k, kernel.m
    blocks = k_blocks(k, block)
    x = TensorSpec("X", (n, k), "float32", "activation")
    if form == "nbits":
        codes = TensorSpec("W", (m, blocks, block // 2), "uint8", "weight", 0, 255)
        scales = TensorSpec("scales", (m * blocks,), "float32", "weight", *SCALE_RANGE)
        zeros = TensorSpec("zero_points", (m * -(-blocks // 2),), "uint8", "weight", 0, 255)
    else:
        low, high = (-8, 7) if wtype == "int4" else (0, 15)
        codes = TensorSpec("W", (k, m), wtype, "weight", low, high)
        scales = TensorSpec("scales", (blocks, m), "float32", "weight", *SCALE_RANGE)
        zeros = TensorSpec("zero_points", (blocks, m), "uint4", "weight", 0, 15)
    return (x, codes, scales, *((zeros,) if wtype == "uint4" else ()))


def _node(kernel: GemmKernel, form: str, block: int, inputs: tuple[TensorSpec, ...]) -> list:
    """The form's nodes; the GEMM node is named `gemm` for profiles."""
    names = [t.name for t in inputs]
    if form == "nbits":
        return [
            helper.make_node(
                "MatMulNBits",
                names,
                ["Y"],
                name="gemm",
                domain=MS_DOMAIN,
                K=kernel.k,
                N=kernel.m,
                bits=4,
                block_size=block,
                accuracy_level=ACCURACY_FP32,
            )
        ]
    return [
        helper.make_node("DequantizeLinear", names[1:], ["Wd"], name="dequantize_w", axis=0, block_size=block),
        helper.make_node("MatMul", ["X", "Wd"], ["Y"], name="gemm"),
    ]


def build(
    kernel: GemmKernel,
    precision: str = "int4",
    pass_name: str = "fwd",
    form: str = "nbits",
    block: int = 32,
    weight_type: str = "int4",
) -> Graph:
    """The GEMM with a 4-bit blocked weight in form `form` (nbits | dq)."""
    if precision != "int4":
        raise UsageError(f"dbench.gen.int4 builds precision int4 only, not {precision!r}")
    if form not in INT4_FORMS:
        raise UsageError(f"unknown int4 form {form!r}; valid: {', '.join(INT4_FORMS)}")
    if weight_type not in INT4_TYPES:
        raise UsageError(f"unknown int4 weight type {weight_type!r}; valid: {', '.join(INT4_TYPES)}")
    if pass_name != "fwd":
        raise UnsupportedError(f"int4 graphs are inference only: pass {pass_name!r} is not built; use --passes fwd")
    if kernel.batch != 1:
        raise UnsupportedError("a batched GEMM multiplies two activations: it has no weight to quantise to int4")
    inputs = _tensors(kernel, form, block, weight_type)
    y = TensorSpec("Y", (kernel.n, kernel.m), "float32", "output")
    id_form = f"{form}-b{block}" + ("-u4" if weight_type == "uint4" else "")
    spec = make_spec(
        kernel,
        precision,
        pass_name,
        form,
        inputs=inputs,
        outputs=(y,),
        flops_executed=kernel.flops(),
        attrs={"block": block, "weight_type": weight_type, "layout": "matmul", "compute": "fp32"},
        id_form=id_form,
    )
    model = make_model(
        spec.id,
        _node(kernel, form, block, inputs),
        inputs,
        (y,),
        doc=f"DeepBench GEMM {kernel.id}, 4-bit weight-only ({form}, {weight_type}, blocks of {block})",
    )
    if form == "nbits":
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return Graph(spec, model)


def unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """uint8 bytes -> their 4-bit codes, the lower nibble first: [..., b] -> [..., 2b]."""
    packed = np.asarray(packed, dtype=np.uint8)
    return np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1)


def nbits_weight(
    packed: np.ndarray,
    scales: np.ndarray,
    zero_points: np.ndarray | None,
    k: int,
    n_out: int,
    block: int,
    first: int = 0,
    last: int | None = None,
) -> np.ndarray:
    """MatMulNBits' B, scales and zero points -> the float64 weight [k, n_out] (N = n_out columns of the
    output), or only its blocks first..last-1 (rows first · block up to last · block). Codes beyond k in
    the last block are padding and dropped."""
    blocks = k_blocks(k, block)
    last = blocks if last is None else last
    codes = unpack_nibbles(np.asarray(packed)[:, first:last]).astype(np.float64)
    if zero_points is None:
        zeros = np.full((n_out, last - first), float(SYMMETRIC_ZERO))
    else:
        zeros = unpack_nibbles(np.asarray(zero_points).reshape(n_out, -1))[:, first:last].astype(np.float64)
    scale = np.asarray(scales, dtype=np.float64).reshape(n_out, blocks)[:, first:last]
    weight = (codes - zeros[:, :, None]) * scale[:, :, None]
    return weight.reshape(n_out, -1)[:, : min(last * block, k) - first * block].T


def blocked_weight(
    codes: np.ndarray, scales: np.ndarray, zero_points: np.ndarray | None, block: int, axis: int = 0
) -> np.ndarray:
    """DequantizeLinear-21's blocked rule in float64: (q - zero) * scale, each scale and zero point
    repeated over `block` values along `axis` (the last block may be partial)."""
    q = np.asarray(codes).astype(np.float64)
    length = q.shape[axis]
    spread = lambda t: np.repeat(np.asarray(t).astype(np.float64), block, axis=axis).take(range(length), axis=axis)
    zero = 0.0 if zero_points is None else spread(zero_points)
    return (q - zero) * spread(scales)


REFERENCE_CHUNK = 2**20
"""Weights dequantised at a time by the reference (8 MB of float64): a [500000, 1024] weight (DeepBench's
speaker-ID GEMVs) never exists whole in float64."""


def dequantized_rows(spec: GraphSpec, feeds: dict[str, np.ndarray], first: int, last: int) -> np.ndarray:
    """Blocks first..last-1 of the graph's weight, dequantised in float64 by the form's rule: rows
    [first · block, min(last · block, k)) of the [k, m] weight."""
    block, zeros, k, m = spec.attrs["block"], feeds.get("zero_points"), spec.params["k"], spec.params["m"]
    if spec.form == "nbits":
        return nbits_weight(feeds["W"], feeds["scales"], zeros, k, m, block, first, last)
    rows = min(last * block, k) - first * block
    part = slice(first, last)
    return blocked_weight(
        np.asarray(feeds["W"])[first * block : first * block + rows],
        np.asarray(feeds["scales"])[part],
        None if zeros is None else np.asarray(zeros)[part],
        block,
    )


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Y = X @ dequant(W) in float64, the weight dequantised a chunk of blocks at a time."""
    x = np.asarray(feeds["X"], dtype=np.float64)
    block, k, m = spec.attrs["block"], spec.params["k"], spec.params["m"]
    blocks = k_blocks(k, block)
    step = max(1, REFERENCE_CHUNK // (block * max(1, m)))
    out = np.zeros((x.shape[0], m))
    for first in range(0, blocks, step):
        last = min(blocks, first + step)
        out += x[:, first * block : min(last * block, k)] @ dequantized_rows(spec, feeds, first, last)
    return {"Y": out}


def tolerance(spec: GraphSpec) -> Tolerance:
    """The fp32 bound: a float32 dequantisation rounds each weight by half a unit at most, the GEMM rounds
    as an fp32 one."""
    return Tolerance("rel", TOLERANCE)


def plan(kernel: GemmKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """One forward graph per chosen int4 form (`--int4-form`) and block (`--int4-block`), of `--int4-type`."""
    return [
        ("fwd", form, {"block": block, "weight_type": options.int4_type})
        for form in options.int4_forms
        for block in options.int4_blocks
    ]
