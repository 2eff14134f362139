"""Kernel dataclasses: one DeepBench problem each, with its stable id, FLOPs and minimum bytes.

FLOP formulas are DeepBench's own (its result sheets; see data/NOTES.md), so our TFLOP/s
figures compare with published DeepBench numbers. Where a graph executes more work than
DeepBench counts (an RNN op that includes W·x_t, a dilated backward-filter convolution),
the graph reports that separately as executed FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

EXTENSION = "extension"
"""Field metadata key marking a parameter DeepBench's columns lack (batch, groups, dilations)."""


def extension(default: int) -> Any:
    """A parameter beyond DeepBench's columns: optional in kernel files, left out of params() at its default."""
    return field(default=default, metadata={EXTENSION: True})


@dataclass(frozen=True, kw_only=True)
class Origin:
    """Where a kernel row came from: suite, application and line (upstream header or user file)."""

    suite: str
    app: str
    line: int
    source: str = "deepbench"
    role: str = ""
    """What the kernel is in its model (`q_proj`, `mlp norm`): the transformer suite's rows say it."""
    config: str = ""
    """The model's configuration fields its sizes come from (`m=hidden_size n=batch*seq k=hidden_size`)."""


@dataclass(frozen=True, kw_only=True)
class Kernel:
    """A DeepBench problem. Identical tuples (upstream duplicates, or the same problem in two
    suites) are one Kernel with several origins, so each is generated and timed once."""

    origins: tuple[Origin, ...] = ()

    family: ClassVar[str] = ""

    @property
    def id(self) -> str:
        raise NotImplementedError

    @property
    def suites(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o.suite for o in self.origins))

    @property
    def apps(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o.app for o in self.origins))

    @property
    def op(self) -> str:
        """The op selector this kernel answers to besides its family (RNN cells override)."""
        return self.family

    def copies(self, suite: str) -> int:
        """How many upstream rows of `suite` are this kernel (2 for upstream duplicates)."""
        return sum(o.suite == suite for o in self.origins)

    def params(self) -> dict[str, Any]:
        """The problem's parameters, in upstream column order, without origins; an extension field
        (beyond DeepBench's columns) only when it differs from its default, so DeepBench's kernels keep
        their parameters, ids and manifests."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "origins" and not (f.metadata.get(EXTENSION) and getattr(self, f.name) == f.default)
        }

    def flops(self) -> int:
        """FLOPs by DeepBench's formula for this family."""
        raise NotImplementedError

    def min_bytes(self, itemsize: int) -> int:
        """Bytes the forward problem must move at least: every operand read once, result written once."""
        raise NotImplementedError


def _t(flag: bool) -> str:
    return "t" if flag else "n"


@dataclass(frozen=True, kw_only=True)
class GemmKernel(Kernel):
    """C (m x n) = op(A) (m x k) · op(B) (k x n) + C, column-major as in cuBLAS; `batch` independent
    products of these sizes (a batched MatMul, e.g. attention scores; 1 for DeepBench's kernels)."""

    m: int
    n: int
    k: int
    a_t: bool
    b_t: bool
    batch: int = extension(1)

    family: ClassVar[str] = "gemm"

    @property
    def id(self) -> str:
        batch = f"_b{self.batch}" if self.batch != 1 else ""
        return f"gemm_m{self.m}_n{self.n}_k{self.k}_{_t(self.a_t)}{_t(self.b_t)}{batch}"

    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k

    def min_bytes(self, itemsize: int) -> int:
        # A and B read, C read (beta = 1) and written.
        return itemsize * self.batch * (self.m * self.k + self.k * self.n + 2 * self.m * self.n)


@dataclass(frozen=True, kw_only=True)
class SparseKernel(Kernel):
    """C (m x n) = A (m x k, `sparsity` fraction of zeros) · B (k x n); A is the weight."""

    m: int
    n: int
    k: int
    a_t: bool
    b_t: bool
    sparsity: float

    family: ClassVar[str] = "sparse"

    @property
    def id(self) -> str:
        return f"sparse_m{self.m}_n{self.n}_k{self.k}_{_t(self.a_t)}{_t(self.b_t)}_z{self.sparsity:g}"

    def flops(self) -> int:
        # DeepBench's server sheets multiply by the fraction of zeros (a quirk, kept: NOTES.md).
        return round(2 * self.m * self.n * self.k * self.sparsity)

    def dense_flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def min_bytes(self, itemsize: int) -> int:
        return itemsize * (self.m * self.k + self.k * self.n + self.m * self.n)


@dataclass(frozen=True, kw_only=True)
class ConvKernel(Kernel):
    """NCHW convolution in DeepBench's column order: width before height, filter s (width) before r (height).
    `groups` (channels split into independent convolutions) and the dilations are beyond DeepBench's
    columns (all 1 there): a depthwise convolution has groups = c."""

    w: int
    h: int
    c: int
    n: int
    k: int
    s: int
    r: int
    pad_w: int
    pad_h: int
    wstride: int
    hstride: int
    groups: int = extension(1)
    dil_w: int = extension(1)
    dil_h: int = extension(1)

    family: ClassVar[str] = "conv"

    @property
    def id(self) -> str:
        groups = f"_g{self.groups}" if self.groups != 1 else ""
        dilations = f"_dw{self.dil_w}_dh{self.dil_h}" if (self.dil_w, self.dil_h) != (1, 1) else ""
        return (
            f"conv_w{self.w}_h{self.h}_c{self.c}_n{self.n}_k{self.k}_s{self.s}_r{self.r}"
            f"_pw{self.pad_w}_ph{self.pad_h}_sw{self.wstride}_sh{self.hstride}{groups}{dilations}"
        )

    @property
    def extent_w(self) -> int:
        """Input columns one output column sees: dil_w·(s - 1) + 1."""
        return self.dil_w * (self.s - 1) + 1

    @property
    def extent_h(self) -> int:
        """Input rows one output row sees: dil_h·(r - 1) + 1."""
        return self.dil_h * (self.r - 1) + 1

    @property
    def out_w(self) -> int:
        """P = 1 + floor((w - extent_w + 2 pad_w) / wstride), as cuDNN."""
        return 1 + (self.w - self.extent_w + 2 * self.pad_w) // self.wstride

    @property
    def out_h(self) -> int:
        """Q = 1 + floor((h - extent_h + 2 pad_h) / hstride), as cuDNN."""
        return 1 + (self.h - self.extent_h + 2 * self.pad_h) // self.hstride

    @property
    def group_c(self) -> int:
        """Input channels each filter reads: c / groups."""
        return self.c // self.groups

    def flops(self) -> int:
        # Same count for fwd, bwd_data and bwd_filter (DeepBench's sheets).
        return 2 * self.n * self.k * self.group_c * self.r * self.s * self.out_w * self.out_h

    def min_bytes(self, itemsize: int) -> int:
        x = self.n * self.c * self.h * self.w
        wt = self.k * self.group_c * self.r * self.s
        y = self.n * self.k * self.out_h * self.out_w
        return itemsize * (x + wt + y)


RNN_CELLS = ("vanilla", "lstm", "gru")
_GATES = {"vanilla": 1, "lstm": 4, "gru": 3}


@dataclass(frozen=True, kw_only=True)
class RnnKernel(Kernel):
    """One unidirectional recurrent layer, input width = hidden (DeepBench's skip-input mode)."""

    cell: str
    hidden: int
    batch: int
    timesteps: int

    family: ClassVar[str] = "rnn"

    @property
    def id(self) -> str:
        return f"rnn_{self.cell}_h{self.hidden}_n{self.batch}_t{self.timesteps}"

    @property
    def op(self) -> str:
        return self.cell

    @property
    def gates(self) -> int:
        return _GATES[self.cell]

    def flops(self) -> int:
        """DeepBench's sheets: 2·gates·T·N·H² for the recurrent matmul, plus T·N·H for
        vanilla (all sheets) and for LSTM/GRU in the inference sheets (not the train ones)."""
        t, n, h = self.timesteps, self.batch, self.hidden
        base = 2 * self.gates * t * n * h * h
        if self.cell == "vanilla" or "train" not in self.suites:
            return base + t * n * h
        return base

    def min_bytes(self, itemsize: int) -> int:
        t, n, h = self.timesteps, self.batch, self.hidden
        # Pre-projected inputs read, recurrent weights read, hidden states written.
        return itemsize * (t * n * h * self.gates + self.gates * h * h + t * n * h)


@dataclass(frozen=True, kw_only=True)
class AttentionKernel(Kernel):
    """Scaled dot-product attention of `q_len` new tokens against `past` cached ones (keys and values of
    past + q_len tokens): `heads` query heads sharing `kv_heads` key/value heads (grouped-query when fewer),
    each of `head_dim`; `causal` masks a query from the keys after its own position. Prefill has past = 0,
    decode q_len = 1."""

    batch: int
    q_len: int
    past: int
    heads: int
    kv_heads: int
    head_dim: int
    causal: bool

    family: ClassVar[str] = "attention"

    @property
    def id(self) -> str:
        mask = "c" if self.causal else "f"
        return f"attn_b{self.batch}_q{self.q_len}_p{self.past}_h{self.heads}_g{self.kv_heads}_d{self.head_dim}_{mask}"

    @property
    def kv_len(self) -> int:
        """Keys (and values) each head attends over: the cache and the new tokens."""
        return self.past + self.q_len

    def pairs(self) -> int:
        """(query, key) pairs not masked, per batch and head: q_len·kv_len, or for a causal mask
        q_len·past + q_len·(q_len + 1)/2 (query i sees the past and new tokens 0..i)."""
        if not self.causal:
            return self.q_len * self.kv_len
        return self.q_len * self.past + self.q_len * (self.q_len + 1) // 2

    def flops(self) -> int:
        """2·d per pair for the scores Q·Kᵀ and 2·d for the context P·V, over the unmasked pairs of
        every batch and query head (softmax and scaling not counted, as matmul-FLOP conventions do)."""
        return 4 * self.batch * self.heads * self.head_dim * self.pairs()

    def min_bytes(self, itemsize: int) -> int:
        """Q read and the output written (batch·heads·q_len·d each), K and V read once
        (batch·kv_heads·kv_len·d each): the KV cache dominates decode."""
        q_and_out = 2 * self.batch * self.heads * self.q_len * self.head_dim
        k_and_v = 2 * self.batch * self.kv_heads * self.kv_len * self.head_dim
        return itemsize * (q_and_out + k_and_v)


NORM_KINDS = ("layer", "rms")
"""LayerNorm (mean and variance, scale and shift) and RMSNorm (root mean square, scale only)."""


@dataclass(frozen=True, kw_only=True)
class NormKernel(Kernel):
    """A normalization over the last axis of `batch` x `seq` tokens of width `hidden`: LayerNorm
    (x - mean) / sqrt(var + eps) · gamma + beta, or RMSNorm x / sqrt(mean(x²) + eps) · gamma."""

    kind: str
    batch: int
    seq: int
    hidden: int

    family: ClassVar[str] = "norm"

    @property
    def id(self) -> str:
        return f"norm_{self.kind}_b{self.batch}_s{self.seq}_h{self.hidden}"

    @property
    def op(self) -> str:
        return "layernorm" if self.kind == "layer" else "rmsnorm"

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    def flops(self) -> int:
        """Per element: LayerNorm 7 (mean: add; centre: sub; variance: mul, add; normalize: mul; scale: mul;
        shift: add), RMSNorm 4 (square, add, normalize, scale); the per-row sqrt and reciprocal not counted."""
        return (7 if self.kind == "layer" else 4) * self.tokens * self.hidden

    def min_bytes(self, itemsize: int) -> int:
        """x read, y written, gamma (and LayerNorm's beta) read."""
        params = 2 if self.kind == "layer" else 1
        return itemsize * (2 * self.tokens * self.hidden + params * self.hidden)


@dataclass(frozen=True, kw_only=True)
class GeluKernel(Kernel):
    """GELU, x · Φ(x) with the exact erf (BERT, ViT, Whisper: `gelu`), over `batch` x `seq` tokens of the
    MLP's intermediate `width`."""

    batch: int
    seq: int
    width: int

    family: ClassVar[str] = "gelu"

    @property
    def id(self) -> str:
        return f"gelu_b{self.batch}_s{self.seq}_w{self.width}"

    def flops(self) -> int:
        """5 per element: x/√2, erf (counted as one), + 1, · 0.5, · x."""
        return 5 * self.batch * self.seq * self.width

    def min_bytes(self, itemsize: int) -> int:
        return itemsize * 2 * self.batch * self.seq * self.width


@dataclass(frozen=True, kw_only=True)
class GatedKernel(Kernel):
    """The elementwise gate of a SiLU-gated MLP (SwiGLU): SiLU(g) ⊙ u = g · sigmoid(g) · u, where g and u
    are the gate and up projections' outputs (those projections are GEMM rows of their own)."""

    batch: int
    seq: int
    width: int

    family: ClassVar[str] = "swiglu"

    @property
    def id(self) -> str:
        return f"swiglu_b{self.batch}_s{self.seq}_w{self.width}"

    def flops(self) -> int:
        """6 per element: sigmoid as 4 (negate, exp, add, reciprocal), then · g and · u."""
        return 6 * self.batch * self.seq * self.width

    def min_bytes(self, itemsize: int) -> int:
        """g and u read, the product written."""
        return itemsize * 3 * self.batch * self.seq * self.width


@dataclass(frozen=True, kw_only=True)
class RotaryKernel(Kernel):
    """Rotary position embedding (rotate-half form, as Llama, Qwen2 and Phi-3 export it) applied to one
    projection's `heads` heads of `head_dim` for `batch` x `seq` tokens: x · cos + rotate_half(x) · sin,
    with cos and sin the [seq, head_dim] tables of the tokens' positions."""

    batch: int
    seq: int
    heads: int
    head_dim: int

    family: ClassVar[str] = "rotary"

    @property
    def id(self) -> str:
        return f"rope_b{self.batch}_s{self.seq}_h{self.heads}_d{self.head_dim}"

    @property
    def elements(self) -> int:
        return self.batch * self.heads * self.seq * self.head_dim

    def flops(self) -> int:
        """3 per element: x · cos, rotate_half(x) · sin and their sum (rotate_half's sign flip not counted)."""
        return 3 * self.elements

    def min_bytes(self, itemsize: int) -> int:
        """x read and written once, the cos and sin tables read once."""
        return itemsize * (2 * self.elements + 2 * self.seq * self.head_dim)


TOKEN_ID_BYTES = 8
"""An int64 token id."""


@dataclass(frozen=True, kw_only=True)
class EmbeddingKernel(Kernel):
    """The token embedding: a Gather of `batch` x `seq` rows of `hidden` from a `vocab` x `hidden` table."""

    batch: int
    seq: int
    vocab: int
    hidden: int

    family: ClassVar[str] = "embedding"

    @property
    def id(self) -> str:
        return f"embed_b{self.batch}_s{self.seq}_v{self.vocab}_h{self.hidden}"

    def flops(self) -> int:
        return 0

    def min_bytes(self, itemsize: int) -> int:
        """The rows touched, not the table: each token's row read and written, its id read."""
        tokens = self.batch * self.seq
        return itemsize * 2 * tokens * self.hidden + TOKEN_ID_BYTES * tokens


KERNEL_TYPES: dict[str, type[Kernel]] = {
    cls.family: cls
    for cls in (
        GemmKernel,
        ConvKernel,
        RnnKernel,
        SparseKernel,
        AttentionKernel,
        NormKernel,
        GeluKernel,
        GatedKernel,
        RotaryKernel,
        EmbeddingKernel,
    )
}
