"""A model's nodes -> catalog kernels with the node's real parameters, or the reason dbench cannot
express the node. Reads shapes from ONNX shape inference (dims already bound); imports onnx only.

Mappings (DeepBench's GEMM is column-major: its MatMul form is Y[n, m] = X[n, k] @ W[k, m]):
  MatMul A[..., n, k] @ B[..., k, m]     gemm m, n, k, nn; B without batch axes folds A's into n;
                                         equal batch axes on both sides are a batched GEMM (batch)
  Gemm A, B (transA, transB)             gemm with b_t = transA, a_t = transB (gen/gemm.py's layout)
  Conv X[n, c, h, w], W[k, c/g, r, s]    conv fwd with groups and dilations
  ConvTranspose X[n, k, q, p] -> [n, c, h, w]   conv bwd_data of the convolution that maps [n, c, h, w]
                                         to [n, k, q, p] (the same ONNX op and weight layout)
  LSTM / GRU / RNN                       rnn (forward `op` form); a bidirectional layer is two kernels
  QLinearMatMul / QLinearConv            int8, form qlinear; MatMulInteger / ConvInteger: form integer
  MatMul / Conv fed by DequantizeLinear on both inputs: int8, form qdq (the Q/DQ nodes are folded in)
  com.microsoft MatMulNBits (bits 4)      int4 weight-only, form nbits, its block_size (uint4 with zero points)
  MatMul whose weight is DequantizeLinear of int4/uint4 data (blocked): int4 weight-only, form dq
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import onnx
from onnx import TensorProto, helper

from dbench.catalog.kernels import ConvKernel, GemmKernel, Kernel, RnnKernel

FLOAT_PRECISIONS = {TensorProto.FLOAT: "fp32", TensorProto.FLOAT16: "fp16", TensorProto.BFLOAT16: "bf16"}
INT8_TYPES = (TensorProto.INT8, TensorProto.UINT8)
INT4_TYPES = {TensorProto.INT4: "int4", TensorProto.UINT4: "uint4"}
MS_DOMAIN = "com.microsoft"
DATA_MOVEMENT = {
    "Reshape",
    "Transpose",
    "Concat",
    "Split",
    "Slice",
    "Gather",
    "GatherElements",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Shape",
    "Size",
    "Constant",
    "ConstantOfShape",
    "Identity",
    "Cast",
    "CastLike",
    "Expand",
    "Tile",
    "Pad",
    "Range",
    "Dropout",
}
RNN_CELLS = {"RNN": "vanilla", "LSTM": "lstm", "GRU": "gru"}
DEFAULT_ACTIVATIONS = {"vanilla": ["Relu"], "lstm": ["Sigmoid", "Tanh", "Tanh"], "gru": ["Sigmoid", "Tanh"]}


class NotExpressed(Exception):
    """A node dbench has no kernel for; the message is the reason shown to the user."""


@dataclass(frozen=True)
class Found:
    """A node as a kernel (no origins yet): the graph to build for it, and the Q/DQ nodes it absorbs.
    `repeat` counts the kernel more than once for one node (both directions of a bidirectional RNN);
    `attrs` are build attributes of its graph, as (name, value) pairs (a Gemm's C as the model has it)."""

    kernel: Kernel
    precision: str
    form: str
    pass_name: str = "fwd"
    folded: tuple[str, ...] = ()
    repeat: int = 1
    attrs: tuple[tuple[str, Any], ...] = ()


def node_names(nodes) -> list[str]:
    """One name per node, by position, never empty and never shared: its own name, `<op>_<index>` when
    it has none, and `<name>_<index>` when an earlier node took it. Node identity rests on this, not on
    what the exporter wrote (many write no names, some write one name twice)."""
    names: list[str] = []
    taken: set[str] = set()
    for index, node in enumerate(nodes):
        name = node.name or f"{node.op_type}_{index}"
        if name in taken:
            name = f"{name}_{index}"
        taken.add(name)
        names.append(name)
    return names


class Shapes:
    """Element types and static shapes of every value (from `typed`, the inferred model with the most
    shapes), and who produces and reads each value in the walked `graph`, with its nodes' names."""

    def __init__(self, typed: onnx.ModelProto, graph: onnx.GraphProto, names: list[str]) -> None:
        self.types: dict[str, onnx.TypeProto] = {}
        for value in [*typed.graph.input, *typed.graph.value_info, *typed.graph.output]:
            self.types[value.name] = value.type
        for tensor in typed.graph.initializer:
            self.types[tensor.name] = helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims))
        self.nodes, self.names = list(graph.node), names
        self.producers = {out: index for index, node in enumerate(self.nodes) for out in node.output}
        self.consumers: dict[str, list[int]] = {}
        for index, node in enumerate(self.nodes):
            for name in node.input:
                self.consumers.setdefault(name, []).append(index)

    def shape(self, name: str) -> tuple[int, ...]:
        tensor = self.types.get(name)
        if tensor is None or not tensor.tensor_type.HasField("shape"):
            raise NotExpressed(f"shape of {name!r} unknown after shape inference")
        dims = []
        for dim in tensor.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                raise NotExpressed(
                    f"{name!r} has a dimension {dim.dim_param or '?'!r} shape inference could not "
                    "resolve (data-dependent)"
                )
            dims.append(dim.dim_value)
        return tuple(dims)

    def elem_type(self, name: str) -> int:
        tensor = self.types.get(name)
        return tensor.tensor_type.elem_type if tensor is not None else TensorProto.UNDEFINED


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _float_precision(shapes: Shapes, name: str, op: str) -> str:
    elem = shapes.elem_type(name)
    if elem not in FLOAT_PRECISIONS:
        raise NotExpressed(
            f"{op} on {TensorProto.DataType.Name(elem).lower()}: dbench builds fp32, fp16, bf16 and int8 kernels"
        )
    return FLOAT_PRECISIONS[elem]


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def gemm_of_matmul(a: tuple[int, ...], b: tuple[int, ...]) -> GemmKernel:
    """The GEMM a (batched, broadcast) MatMul computes."""
    a = (1, *a) if len(a) == 1 else a
    b = (*b, 1) if len(b) == 1 else b
    (n, k), (k2, m) = a[-2:], b[-2:]
    if k != k2:
        raise NotExpressed(f"MatMul inner dimensions differ ({k} vs {k2})")
    batch_a, batch_b = a[:-2], b[:-2]
    if _prod(batch_b) == 1:
        return GemmKernel(m=m, n=n * _prod(batch_a), k=k, a_t=False, b_t=False)
    width = max(len(batch_a), len(batch_b))
    padded_a, padded_b = (1,) * (width - len(batch_a)) + batch_a, (1,) * (width - len(batch_b)) + batch_b
    if padded_a != padded_b:
        raise NotExpressed(
            f"MatMul broadcasting batch axes {list(batch_a)} against {list(batch_b)}: not one batched GEMM"
        )
    return GemmKernel(m=m, n=n, k=k, a_t=False, b_t=False, batch=_prod(batch_a))


def _pads(
    attrs: dict, size: tuple[int, int], extent: tuple[int, int], strides: tuple[int, int], op: str
) -> tuple[int, int]:
    """Symmetric (pad_h, pad_w) of a 2-D convolution, from `pads` or `auto_pad`."""
    auto = _text(attrs.get("auto_pad", "NOTSET"))
    if auto == "VALID":
        return 0, 0
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        totals = [max(0, (-(-s // st) - 1) * st + e - s) for s, e, st in zip(size, extent, strides)]
        pads = [t // 2 for t in totals] * 2
        if any(t % 2 for t in totals):
            raise NotExpressed(
                f"{op} {auto} needs asymmetric padding {totals}: dbench's convolutions pad both sides equally"
            )
    else:
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if pads[:2] != pads[2:]:
        raise NotExpressed(f"{op} with asymmetric pads {pads}: dbench's convolutions pad both sides equally")
    return pads[0], pads[1]


def conv_of(x: tuple[int, ...], w: tuple[int, ...], attrs: dict, op: str) -> ConvKernel:
    """The ConvKernel of a 2-D NCHW convolution X [n, c, h, w] * W [k, c/g, r, s]."""
    if len(x) != 4:
        raise NotExpressed(f"{op} over {len(x) - 2}-D data: dbench's convolution family is 2-D (NCHW)")
    n, c, h, wd = x
    k, _, r, s = w
    groups = int(attrs.get("group", 1))
    dil_h, dil_w = attrs.get("dilations", [1, 1])
    st_h, st_w = attrs.get("strides", [1, 1])
    pad_h, pad_w = _pads(attrs, (h, wd), (dil_h * (r - 1) + 1, dil_w * (s - 1) + 1), (st_h, st_w), op)
    return ConvKernel(
        w=wd,
        h=h,
        c=c,
        n=n,
        k=k,
        s=s,
        r=r,
        pad_w=pad_w,
        pad_h=pad_h,
        wstride=st_w,
        hstride=st_h,
        groups=groups,
        dil_w=dil_w,
        dil_h=dil_h,
    )


def _check_output(kernel: ConvKernel, out: tuple[int, ...], op: str) -> None:
    if out[2:] != (kernel.out_h, kernel.out_w):
        raise NotExpressed(f"{op} output {list(out)} differs from the convolution's {kernel.out_h}x{kernel.out_w}")


def _matmul(node, shapes: Shapes) -> Found:
    return Found(
        gemm_of_matmul(shapes.shape(node.input[0]), shapes.shape(node.input[1])),
        _float_precision(shapes, node.input[0], node.op_type),
        form="matmul",
    )


def _gemm(node, shapes: Shapes) -> Found:
    attrs = _attrs(node)
    trans_a, trans_b = bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))
    a, b = shapes.shape(node.input[0]), shapes.shape(node.input[1])
    rows, inner = (a[1], a[0]) if trans_a else a
    cols = b[0] if trans_b else b[1]
    kernel = GemmKernel(m=cols, n=rows, k=inner, a_t=trans_b, b_t=trans_a)
    has_c = len(node.input) > 2 and node.input[2]
    c_shape = shapes.shape(node.input[2]) if has_c else None
    attrs = () if c_shape == (rows, cols) else (("c_shape", c_shape),)  # the full M x N C is the kernel's own
    return Found(kernel, _float_precision(shapes, node.input[0], "Gemm"), form="gemm", attrs=attrs)


def _conv(node, shapes: Shapes) -> Found:
    kernel = conv_of(shapes.shape(node.input[0]), shapes.shape(node.input[1]), _attrs(node), node.op_type)
    _check_output(kernel, shapes.shape(node.output[0]), node.op_type)
    return Found(kernel, _float_precision(shapes, node.input[0], node.op_type), form="conv")


def _transpose_pads(attrs: dict, x: tuple[int, ...], kernel: tuple[int, ...], y: tuple[int, ...]) -> list[int]:
    """A ConvTranspose's [begin_h, begin_w, end_h, end_w] pads, explicit or resolved as the ONNX spec
    resolves `output_shape` and `auto_pad`: total = stride·(x - 1) + output_padding + extent - y, split
    begin = total - total/2 (SAME_UPPER: total/2), end = the rest."""
    auto = _text(attrs.get("auto_pad", "NOTSET"))
    if auto == "NOTSET" and "output_shape" not in attrs:
        return list(attrs.get("pads", [0, 0, 0, 0]))
    strides, dilations = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    output_padding = attrs.get("output_padding", [0, 0])
    totals = [
        st * (xi - 1) + op + d * (k - 1) + 1 - yi
        for st, xi, op, d, k, yi in zip(strides, x, output_padding, dilations, kernel, y)
    ]
    if any(t < 0 for t in totals):
        raise NotExpressed(
            f"ConvTranspose output {list(y)} is larger than its input and kernel produce: not one convolution's "
            "transpose"
        )
    if auto == "SAME_UPPER":
        begin, end = [t // 2 for t in totals], [t - t // 2 for t in totals]
    else:
        begin, end = [t - t // 2 for t in totals], [t // 2 for t in totals]
    return begin + end


def _conv_transpose(node, shapes: Shapes) -> Found:
    """ConvTranspose X [n, k, q, p], W [k, c/g, r, s] -> Y [n, c, h, w] is the bwd_data pass of the
    convolution [n, c, h, w] -> [n, k, q, p] with the same attributes."""
    attrs = _attrs(node)
    x, w, y = shapes.shape(node.input[0]), shapes.shape(node.input[1]), shapes.shape(node.output[0])
    if len(x) != 4:
        raise NotExpressed(f"ConvTranspose over {len(x) - 2}-D data: dbench's convolution family is 2-D (NCHW)")
    pads = _transpose_pads(attrs, x[2:], w[2:], y[2:])
    explicit = {**attrs, "pads": pads, "auto_pad": "NOTSET"}
    forward = conv_of((y[0], y[1], y[2], y[3]), (x[1], w[1], w[2], w[3]), explicit, "ConvTranspose")
    if (forward.out_h, forward.out_w) != x[2:]:
        raise NotExpressed(f"ConvTranspose {list(x)} -> {list(y)} is not the exact transpose of one convolution")
    return Found(
        forward, _float_precision(shapes, node.input[0], "ConvTranspose"), pass_name="bwd_data", form="convtranspose"
    )


def _rnn(node, shapes: Shapes) -> Found:
    cell = RNN_CELLS[node.op_type]
    attrs = _attrs(node)
    t, n, width = shapes.shape(node.input[0])
    # hidden_size is optional in the schema: R [directions, gates·hidden, hidden] says it as well.
    hidden = int(attrs["hidden_size"]) if "hidden_size" in attrs else shapes.shape(node.input[2])[-1]
    inputs = list(node.input) + [""] * 8
    activations = [_text(a) for a in attrs.get("activations", [])]
    if int(attrs.get("layout", 0)) != 0:
        raise NotExpressed(f"{node.op_type} layout=1 (batch first): dbench's rnn kernels are sequence first")
    if width != hidden:
        raise NotExpressed(
            f"{node.op_type} input width {width} != hidden {hidden}: dbench's rnn kernels take input width = "
            "hidden (DeepBench's)"
        )
    if inputs[4] or (cell == "lstm" and inputs[7]):
        raise NotExpressed(f"{node.op_type} with sequence_lens or peepholes: dbench's rnn kernels have neither")
    if "clip" in attrs or attrs.get("input_forget", 0):
        raise NotExpressed(f"{node.op_type} with clip or input_forget: dbench's rnn kernels have neither")
    default = DEFAULT_ACTIVATIONS[cell]
    if activations and activations[: len(default)] != default:
        raise NotExpressed(f"{node.op_type} activations {activations}: dbench's {cell} uses {default}")
    if cell == "vanilla" and not activations:
        raise NotExpressed("RNN with the default Tanh activation: dbench's vanilla RNN is DeepBench's ReLU RNN")
    if cell == "gru" and not attrs.get("linear_before_reset", 0):
        raise NotExpressed(
            "GRU with linear_before_reset=0: dbench's GRU applies the reset gate after the recurrent product (=1, "
            "cuDNN's and PyTorch's)"
        )
    directions = 2 if _text(attrs.get("direction", "forward")) == "bidirectional" else 1
    return Found(
        RnnKernel(cell=cell, hidden=hidden, batch=n, timesteps=t),
        _float_precision(shapes, node.input[0], node.op_type),
        form="op",
        repeat=directions,
    )


def _int8_types(shapes: Shapes, names: list[str], op: str) -> None:
    for name in names:
        if shapes.elem_type(name) not in INT8_TYPES:
            raise NotExpressed(
                f"{op} on {TensorProto.DataType.Name(shapes.elem_type(name)).lower()}: dbench's int8 kernels are 8-bit"
            )


def _qlinear_matmul(node, shapes: Shapes) -> Found:
    _int8_types(shapes, [node.input[0], node.input[3]], node.op_type)
    return Found(gemm_of_matmul(shapes.shape(node.input[0]), shapes.shape(node.input[3])), "int8", form="qlinear")


def _matmul_integer(node, shapes: Shapes) -> Found:
    _int8_types(shapes, [node.input[0], node.input[1]], node.op_type)
    return Found(gemm_of_matmul(shapes.shape(node.input[0]), shapes.shape(node.input[1])), "int8", form="integer")


def _qlinear_conv(node, shapes: Shapes) -> Found:
    _int8_types(shapes, [node.input[0], node.input[3]], node.op_type)
    kernel = conv_of(shapes.shape(node.input[0]), shapes.shape(node.input[3]), _attrs(node), node.op_type)
    _check_output(kernel, shapes.shape(node.output[0]), node.op_type)
    return Found(kernel, "int8", form="qlinear")


def _conv_integer(node, shapes: Shapes) -> Found:
    _int8_types(shapes, [node.input[0], node.input[1]], node.op_type)
    kernel = conv_of(shapes.shape(node.input[0]), shapes.shape(node.input[1]), _attrs(node), node.op_type)
    _check_output(kernel, shapes.shape(node.output[0]), node.op_type)
    return Found(kernel, "int8", form="integer")


def _matmul_nbits(node, shapes: Shapes) -> Found:
    """ONNX Runtime's 4-bit weight-only GEMM: A[..., K] times the [K, N] weight its blocks hold."""
    attrs = _attrs(node)
    if int(attrs.get("bits", 4)) != 4:
        raise NotExpressed(f"MatMulNBits with {attrs['bits']}-bit weights: dbench's weight-only kernels are 4-bit")
    a = shapes.shape(node.input[0])
    kernel = GemmKernel(m=int(attrs["N"]), n=_prod(a[:-1]), k=int(attrs["K"]), a_t=False, b_t=False)
    zero_points = len(node.input) > 3 and bool(node.input[3])
    return Found(
        kernel,
        "int4",
        form="nbits",
        attrs=(("block", int(attrs["block_size"])), ("weight_type", "uint4" if zero_points else "int4")),
    )


OP_KERNELS: dict[str, Callable[[onnx.NodeProto, Shapes], Found]] = {
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "LSTM": _rnn,
    "GRU": _rnn,
    "RNN": _rnn,
    "QLinearMatMul": _qlinear_matmul,
    "MatMulInteger": _matmul_integer,
    "QLinearConv": _qlinear_conv,
    "ConvInteger": _conv_integer,
}
CONTRIB_KERNELS: dict[str, Callable[[onnx.NodeProto, Shapes], Found]] = {"MatMulNBits": _matmul_nbits}
"""com.microsoft ops dbench has a kernel for."""


def as_weight_only(node: onnx.NodeProto, found: Found, shapes: Shapes) -> Found | None:
    """A float MatMul whose weight (second input) is DequantizeLinear of blocked 4-bit data, and whose
    activation is not dequantised: an int4 weight-only kernel in the dq form, the DQ folded in."""
    producer_ops = [
        shapes.nodes[shapes.producers[name]].op_type if name in shapes.producers else "" for name in node.input[:2]
    ]
    if node.op_type != "MatMul" or producer_ops[0] == "DequantizeLinear" or producer_ops[1] != "DequantizeLinear":
        return None
    producer = shapes.producers[node.input[1]]
    dq = shapes.nodes[producer]
    wtype = INT4_TYPES.get(shapes.elem_type(dq.input[0]))
    block = int(_attrs(dq).get("block_size", 0))
    if wtype is None or not block:
        return None
    attrs = (("block", block), ("weight_type", wtype))
    return Found(found.kernel, "int4", "dq", found.pass_name, (shapes.names[producer],), attrs=attrs)


def as_qdq(node: onnx.NodeProto, found: Found, shapes: Shapes) -> Found:
    """A float MatMul/Conv whose two inputs both come from DequantizeLinear of 8-bit data is an int8
    kernel in the qdq form; those DQ nodes, a QuantizeLinear of its output, and a QuantizeLinear that
    makes a DQ's data from a value no node computes (a model input, or a float constant) are folded into
    it: the kernel's own input quantisation, which no earlier kernel absorbed."""
    if node.op_type not in ("MatMul", "Conv"):
        return found
    weight_only = as_weight_only(node, found, shapes)
    if weight_only is not None:
        return weight_only
    producers = [shapes.producers.get(name) for name in node.input[:2]]
    if not all(p is not None and shapes.nodes[p].op_type == "DequantizeLinear" for p in producers):
        return found
    _int8_types(shapes, [shapes.nodes[p].input[0] for p in producers], f"{node.op_type} (Q/DQ)")
    before = [
        q
        for q in (shapes.producers.get(shapes.nodes[p].input[0]) for p in producers)
        if q is not None
        and shapes.nodes[q].op_type == "QuantizeLinear"
        and shapes.nodes[q].input[0] not in shapes.producers
    ]
    after = [c for c in shapes.consumers.get(node.output[0], []) if shapes.nodes[c].op_type == "QuantizeLinear"]
    return Found(
        found.kernel, "int8", "qdq", found.pass_name, tuple(shapes.names[i] for i in [*before, *producers, *after])
    )


def node_kernel(node: onnx.NodeProto, shapes: Shapes) -> Found:
    """The kernel of one node, or NotExpressed with the reason."""
    if node.domain == MS_DOMAIN and node.op_type in CONTRIB_KERNELS:
        return CONTRIB_KERNELS[node.op_type](node, shapes)
    if node.domain not in ("", "ai.onnx"):
        raise NotExpressed(f"op of domain {node.domain!r}: dbench reads standard ONNX ops only")
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        raise NotExpressed(f"{node.op_type} (control flow): its body is not walked")
    if node.op_type in OP_KERNELS:
        return as_qdq(node, OP_KERNELS[node.op_type](node, shapes), shapes)
    if node.op_type in DATA_MOVEMENT:
        raise NotExpressed("data movement, no arithmetic kernel")
    if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
        raise NotExpressed("quantisation between kernels (elementwise): no DeepBench kernel family")
    raise NotExpressed(f"{node.op_type}: no DeepBench kernel family (gemm, conv, rnn) computes it")
