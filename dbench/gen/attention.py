"""Attention graphs: scaled dot-product attention of an AttentionKernel in the forms a user meets
(`--attention-form`), each checked against one float64 reference (attention_math).

Forms (B batch, H query heads, G key/value heads, q new tokens, P cached ones, d head size, L = P + q):
  subgraph  what an exporter writes (torch.onnx, a Hugging Face decoder): Q [B, H, q, d]; K, V [B, G, q, d];
            the cache past_key, past_value [B, G, P, d] concatenated in front of K, V; grouped heads
            repeated (Unsqueeze, Expand, Reshape); MatMul(Q, Transpose(K)), Mul by the scale, Add of a causal
            mask (built in the graph from ConstantOfShape and Trilu: a constant the runtime folds), Softmax,
            MatMul with V. Computes every (query, key) pair, masked ones too.
  op        ONNX's Attention op (opset 23) on the same 4-D tensors, past_key/past_value as its own inputs,
            `is_causal` (bottom-right aligned: query i sees keys 0..P + i).
  mha       ONNX Runtime's com.microsoft MultiHeadAttention: Q, K, V [B, q, H·d], the cache as past_key,
            past_value [B, H, P, d], `unidirectional` for the causal mask. Only for H == G.
  gqa       ONNX Runtime's com.microsoft GroupQueryAttention: Q [B, q, H·d], K, V [B, q, G·d], the cache
            as the buffer ONNX Runtime GenAI shares between past and present: past_key, past_value
            [B, G, L, d] whose first P rows hold the cache and whose last q rows the op fills with the new
            K and V; seqlens_k (L - 1 per sequence) and total_sequence_length (L) are constants in the
            graph. OpenVINO translates this op only in that layout (a cache of P rows crashed its CPU
            plugin), and only with the buffer given, prefill included. A bidirectional kernel sets the
            op's `causal` attribute to 0 (versions without it refuse the graph).

The cache is its own pair of inputs, concatenated with the new tokens' K and V, as exporters write a
decoder: a cache that grows by one token per step is then never copied by the caller. A graph with a
cache also writes the cache with the new tokens appended (present_key, present_value [B, G, L, d]), as
every decoder layer does and as ONNX's Attention requires (past and present go together). Its bytes
(`GraphSpec.min_bytes`, every input and output once) are therefore the kernel's minimum plus that write;
the gqa form's buffer adds q rows to its past and gives prefill a past and present too.
FLOPs: the kernel's count over the unmasked pairs; `flops_executed` every pair, as the subgraph computes
them and as a fused kernel may (whether it skips masked blocks is its own affair).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper, numpy_helper

from dbench.catalog.kernels import AttentionKernel
from dbench.errors import UnsupportedError
from dbench.gen.attention_math import attention, default_scale, heads_first, heads_last
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import ALL_ATTENTION_FORMS, ATTENTION_FORMS, GenOptions
from dbench.gen.precision import PRECISIONS, dtype_name, float_precision

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = False
CONTRIB = "com.microsoft"
ATTENTION_OPSET = 23
"""The first ONNX opset with the Attention op (only the `op` form imports it)."""
QUERY_RANGE = 4.0
"""Queries are drawn in ±QUERY_RANGE (keys and values in ±1): scores of a few units, so the softmax is
far from uniform and the output depends on which keys each query sees (a wrong mask is caught)."""


def reason_not_applicable(kernel: AttentionKernel, form: str) -> str | None:
    """Why `form` cannot express the kernel (None: it can)."""
    if form == "mha" and kernel.heads != kernel.kv_heads:
        return (
            f"MultiHeadAttention has one head count for Q, K and V; this kernel has {kernel.heads} query heads "
            f"sharing {kernel.kv_heads} key/value heads (grouped-query): use the gqa, op or subgraph form"
        )
    if kernel.heads % kernel.kv_heads:
        return f"{kernel.heads} query heads cannot share {kernel.kv_heads} key/value heads evenly"
    if form == "gqa" and kernel.batch > 1 and kernel.q_len > 1 and kernel.past > 0:
        return (
            "GroupQueryAttention takes several new tokens against a past only at batch 1 (ONNX Runtime's shape "
            "check of the op: 'batch_size must be 1 when sequence_length > 1 and past context is given'); "
            "use the op or subgraph form"
        )
    return None


def _const(name: str, value: Any, dtype: Any) -> Any:
    """A Constant node holding `value` as a tensor named `name`."""
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype), name))


def _inputs(kernel: AttentionKernel, form: str, dt: str) -> tuple[TensorSpec, ...]:
    """The graph's inputs: Q, K, V (4-D with the heads first, or 3-D with them packed last for the
    contrib ops) and, with a cache, past_key and past_value."""
    b, h, g, q, d = kernel.batch, kernel.heads, kernel.kv_heads, kernel.q_len, kernel.head_dim
    if form in ("mha", "gqa"):
        shapes = [(b, q, h * d), (b, q, g * d), (b, q, g * d)]
    else:
        shapes = [(b, h, q, d), (b, g, q, d), (b, g, q, d)]
    tensors = [
        TensorSpec("Q", shapes[0], dt, "activation", -QUERY_RANGE, QUERY_RANGE),
        TensorSpec("K", shapes[1], dt, "activation"),
        TensorSpec("V", shapes[2], dt, "activation"),
    ]
    cache = cache_rows(kernel, form)
    if cache:
        tensors += [TensorSpec(name, (b, g, cache, d), dt, "activation") for name in ("past_key", "past_value")]
    return tuple(tensors)


def cache_rows(kernel: AttentionKernel, form: str) -> int:
    """Rows of the past_key/past_value inputs: the P cached tokens, or for gqa the shared buffer of L."""
    return kernel.kv_len if form == "gqa" else kernel.past


def _outputs(kernel: AttentionKernel, form: str, dt: str) -> tuple[TensorSpec, ...]:
    """Y (the layout of Q) and, with a cache, present_key and present_value [B, G, L, d]."""
    b, h, g, q, d = kernel.batch, kernel.heads, kernel.kv_heads, kernel.q_len, kernel.head_dim
    y = TensorSpec("Y", (b, q, h * d) if form in ("mha", "gqa") else (b, h, q, d), dt, "output")
    if not cache_rows(kernel, form):
        return (y,)
    present = (b, g, kernel.kv_len, d)
    return (y, TensorSpec("present_key", present, dt, "output"), TensorSpec("present_value", present, dt, "output"))


def _subgraph_nodes(kernel: AttentionKernel, dtype: np.dtype) -> list[Any]:
    """The exporter's MatMul-Softmax-MatMul (see the module's docstring)."""
    b, h, g, q, p, d = kernel.batch, kernel.heads, kernel.kv_heads, kernel.q_len, kernel.past, kernel.head_dim
    nodes: list[Any] = []
    keys, values = "K", "V"
    if p:
        nodes += [
            helper.make_node("Concat", ["past_key", "K"], ["present_key"], axis=2),
            helper.make_node("Concat", ["past_value", "V"], ["present_value"], axis=2),
        ]
        keys, values = "present_key", "present_value"
    if h != g:  # Hugging Face's repeat_kv: [B, G, L, d] -> [B, G, 1, L, d] -> [B, G, H/G, L, d] -> [B, H, L, d]
        nodes += [
            _const("unsqueeze_axes", [2], np.int64),
            _const("expanded_shape", [b, g, h // g, kernel.kv_len, d], np.int64),
            _const("heads_shape", [b, h, kernel.kv_len, d], np.int64),
        ]
        for name in (keys, values):
            nodes += [
                helper.make_node("Unsqueeze", [name, "unsqueeze_axes"], [f"{name}_5d"]),
                helper.make_node("Expand", [f"{name}_5d", "expanded_shape"], [f"{name}_expanded"]),
                helper.make_node("Reshape", [f"{name}_expanded", "heads_shape"], [f"{name}_repeated"]),
            ]
        keys, values = f"{keys}_repeated", f"{values}_repeated"
    nodes += [
        helper.make_node("Transpose", [keys], ["keys_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["Q", "keys_t"], ["qk"]),
        _const("scale", default_scale(d), dtype),
        helper.make_node("Mul", ["qk", "scale"], ["scores"]),
    ]
    scores = "scores"
    if kernel.causal and q > 1:  # a single new token sees every key: exporters skip the mask then
        nodes += [
            _const("mask_shape", [q, kernel.kv_len], np.int64),
            helper.make_node(
                "ConstantOfShape",
                ["mask_shape"],
                ["mask_fill"],
                value=numpy_helper.from_array(np.array([np.finfo(dtype).min], dtype)),
            ),
            _const("mask_diagonal", p + 1, np.int64),
            helper.make_node("Trilu", ["mask_fill", "mask_diagonal"], ["mask"], upper=1),
            helper.make_node("Add", ["scores", "mask"], ["masked"]),
        ]
        scores = "masked"
    nodes += [
        helper.make_node("Softmax", [scores], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", values], ["Y"]),
    ]
    return nodes


def _presents(kernel: AttentionKernel) -> list[str]:
    return ["present_key", "present_value"] if kernel.past else []


def _pasts(kernel: AttentionKernel) -> list[str]:
    return ["past_key", "past_value"] if kernel.past else []


def _op_nodes(kernel: AttentionKernel) -> list[Any]:
    """ONNX's Attention (opset 23) on 4-D inputs (the head counts are read from the shapes)."""
    return [
        helper.make_node(
            "Attention",
            ["Q", "K", "V", "", *_pasts(kernel)],
            ["Y", *_presents(kernel)],
            is_causal=int(kernel.causal),
            scale=default_scale(kernel.head_dim),
        )
    ]


def _mha_nodes(kernel: AttentionKernel) -> list[Any]:
    """ONNX Runtime's MultiHeadAttention: no bias, padding mask or attention bias; the cache as past_*."""
    return [
        helper.make_node(
            "MultiHeadAttention",
            ["Q", "K", "V", "", "", "", *_pasts(kernel)],
            ["Y", *_presents(kernel)],
            domain=CONTRIB,
            num_heads=kernel.heads,
            unidirectional=int(kernel.causal),
            scale=default_scale(kernel.head_dim),
        )
    ]


def _gqa_nodes(kernel: AttentionKernel) -> list[Any]:
    """ONNX Runtime's GroupQueryAttention on the shared cache buffer, every sequence of the batch L long
    (seqlens_k = L - 1); its `causal` attribute only for a bidirectional kernel (causal is its default,
    and older versions lack it)."""
    extra = {} if kernel.causal else {"causal": 0}
    return [
        _const("seqlens_k", [kernel.kv_len - 1] * kernel.batch, np.int32),
        _const("total_sequence_length", kernel.kv_len, np.int32),
        helper.make_node(
            "GroupQueryAttention",
            ["Q", "K", "V", "past_key", "past_value", "seqlens_k", "total_sequence_length"],
            ["Y", "present_key", "present_value"],
            domain=CONTRIB,
            num_heads=kernel.heads,
            kv_num_heads=kernel.kv_heads,
            scale=default_scale(kernel.head_dim),
            **extra,
        ),
    ]


FUSED_NODES = {"op": _op_nodes, "mha": _mha_nodes, "gqa": _gqa_nodes}
"""The forms that are one attention node (the subgraph's nodes also depend on the precision's dtype)."""


def _opsets(form: str) -> dict[str, int]:
    """The opset imports of a form's graph: opset 23 for ONNX's Attention, the contrib domain for ONNX Runtime's ops."""
    if form == "op":
        return {"": ATTENTION_OPSET}
    if form in ("mha", "gqa"):
        return {CONTRIB: 1}
    return {}


def build(kernel: AttentionKernel, precision: str, pass_name: str = "fwd", form: str = "subgraph") -> Graph:
    """The attention in `form` as an ONNX graph; UnsupportedError where the form cannot express the kernel."""
    if form not in ATTENTION_FORMS:
        raise ValueError(f"unknown attention form {form!r}; valid: {', '.join(ATTENTION_FORMS)}")
    if pass_name != "fwd":
        raise ValueError(f"attention graphs have the forward pass only, not {pass_name!r}")
    prec = float_precision(precision)
    reason = reason_not_applicable(kernel, form)
    if reason:
        raise UnsupportedError(reason)
    dt = dtype_name(prec.dtype)
    inputs, outputs = _inputs(kernel, form, dt), _outputs(kernel, form, dt)
    nodes = _subgraph_nodes(kernel, prec.dtype) if form == "subgraph" else FUSED_NODES[form](kernel)
    dense = 4 * kernel.batch * kernel.heads * kernel.head_dim * kernel.q_len * kernel.kv_len
    spec = make_spec(kernel, precision, pass_name, form, inputs=inputs, outputs=outputs, flops_executed=dense)
    doc = f"attention {kernel.id}, {form} form"
    return Graph(spec, make_model(spec.id, nodes, inputs, outputs, doc=doc, opsets=_opsets(form)))


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 outputs from attention_math, the cache concatenated in front of the new K and V (the
    present outputs are that concatenation)."""
    check_whole_outputs("attention", rows)
    kernel = AttentionKernel(**spec.params)
    packed = spec.form in ("mha", "gqa")
    q = heads_first(feeds["Q"], kernel.heads) if packed else feeds["Q"]
    k, v = (heads_first(feeds[n], kernel.kv_heads) if packed else feeds[n] for n in ("K", "V"))
    if kernel.past:  # the cached rows (of gqa's buffer: its first P; the op writes the new tokens after them)
        k = np.concatenate([feeds["past_key"][:, :, : kernel.past], k], axis=2)
        v = np.concatenate([feeds["past_value"][:, :, : kernel.past], v], axis=2)
    y = attention(q, k, v, kernel.causal, default_scale(kernel.head_dim))
    out = {"Y": heads_last(y) if packed else y}
    if cache_rows(kernel, spec.form):
        out["present_key"], out["present_value"] = k.astype(np.float64), v.astype(np.float64)
    return out


tolerance = float_tolerance  # float precisions only: the precision's relative bound


def plan(kernel: AttentionKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """The forward pass in the chosen form (`--attention-form`); `all`: every form that can express the
    kernel (MultiHeadAttention is left out of a grouped-query kernel). A form chosen by name is planned
    even where it cannot express the kernel, so the run says why it is unsupported."""
    if options.attention_form != ALL_ATTENTION_FORMS:
        return [("fwd", options.attention_form, {})]
    return [("fwd", form, {}) for form in ATTENTION_FORMS if reason_not_applicable(kernel, form) is None]
