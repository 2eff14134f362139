"""The transformer suite's kernel rows, derived from published model configurations
(data/transformer_models.csv): every projection, attention, normalization, activation, rotary embedding
and embedding gather of one layer (and the model's ends) per model, phase and size, each row naming its
model, role and the configuration fields its sizes come from. `scripts/transformer_catalog.py` writes
the rows to data/transformer.csv, the list `dbench list --suite transformer` reads; a test checks that
the file is this derivation."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

MODELS_FILE = "transformer_models.csv"
KERNELS_FILE = "transformer.csv"

PREFILL = "transformer_prefill"
DECODE = "transformer_decode"
PREFILL_SEQS = (128, 512, 2048)
"""Prompt lengths of prefill (a model with a fixed length, ViT's 197 tokens or Whisper's 1500 frames,
uses its own; lengths beyond the model's positions are left out)."""
PREFILL_BATCHES = {1: PREFILL_SEQS, 8: (128, 512)}
"""Batch 1 at every prompt length; the server batch of 8 up to 512 tokens (8 x 2048 tokens would make a
single projection a minute on a 2-core machine)."""
DECODE_PASTS = (128, 1024, 4096)
"""KV-cache lengths one decoded token attends over (left out where past + 1 exceeds the model's positions)."""
DECODE_BATCH = 1

COLUMNS = (
    "suite",
    "app",
    "role",
    "config",
    "family",
    "m",
    "n",
    "k",
    "a_t",
    "b_t",
    "w",
    "h",
    "c",
    "s",
    "r",
    "pad_w",
    "pad_h",
    "wstride",
    "hstride",
    "kind",
    "batch",
    "seq",
    "q_len",
    "past",
    "heads",
    "kv_heads",
    "head_dim",
    "causal",
    "hidden",
    "width",
    "vocab",
)
"""transformer.csv's columns: where the row comes from, then every family's parameters (a row fills its own)."""


@dataclass(frozen=True)
class ModelConfig:
    """One model stack's published configuration, in dbench's field names; `keys` maps each to the model's
    own config.json expression (Whisper's d_model is hidden_size elsewhere)."""

    model: str
    stack: str
    """`encoder` (every token sees every other) or `decoder` (causal, with a decode phase)."""
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    max_positions: int
    tokens: int
    mel_bins: int
    image: int
    patch: int
    channels: int
    norm: str
    norm_place: str
    """`pre`: a norm before attention and MLP and a final one (GPT-style); `post`: after them, and one on
    the embeddings (BERT)."""
    mlp: str
    qkv: str
    mlp_proj: str
    positions: str
    lm_head: bool
    cross_frames: int
    keys: dict[str, str]
    source: str
    notes: str

    @property
    def causal(self) -> bool:
        return self.stack == "decoder"

    def key(self, field: str) -> str:
        """The model's own config.json name (or expression) for one of dbench's fields."""
        key = self.keys.get(field, field)
        return f"({key})" if any(op in key for op in "/+*^") else key


def _int(text: str) -> int:
    return int(text) if text.strip() else 0


def parse_models(text: str) -> list[ModelConfig]:
    """The model configurations of transformer_models.csv."""
    models = []
    for row in csv.DictReader(text.splitlines()):
        keys = dict(pair.split("=", 1) for pair in row["keys"].split(";"))
        ints = {
            name: _int(row[name])
            for name in (
                "hidden",
                "heads",
                "kv_heads",
                "head_dim",
                "intermediate",
                "vocab",
                "max_positions",
                "tokens",
                "mel_bins",
                "image",
                "patch",
                "channels",
                "cross_frames",
            )
        }
        names = ("model", "stack", "norm", "norm_place", "mlp", "qkv", "mlp_proj", "positions")
        texts = {name: row[name] for name in names}
        lm_head = row["lm_head"] == "1"
        models.append(
            ModelConfig(**texts, **ints, lm_head=lm_head, keys=keys, source=row["source"], notes=row["notes"])
        )
    return models


def load_models() -> list[ModelConfig]:
    """The shipped model configurations."""
    return parse_models((resources.files("dbench.catalog") / "data" / MODELS_FILE).read_text())


@dataclass(frozen=True)
class Shape:
    """One phase and size of a model: `batch` sequences of `seq` new tokens after `past` cached ones."""

    suite: str
    batch: int
    seq: int
    past: int

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    def tokens_expr(self) -> str:
        return "batch*seq" if self.suite == PREFILL else "batch"


def shapes(model: ModelConfig) -> Iterator[Shape]:
    """The model's phases and sizes: prefill at each batch and length that fits it (an encoder with a fixed
    length at that length only); decode for decoders, batch 1, at each cache length that fits."""
    for batch, seqs in PREFILL_BATCHES.items():
        lengths = (model.tokens,) if model.tokens else tuple(s for s in seqs if s <= model.max_positions)
        for seq in lengths:
            yield Shape(PREFILL, batch, seq, 0)
    if model.causal:
        for past in DECODE_PASTS:
            if past + 1 <= model.max_positions:
                yield Shape(DECODE, DECODE_BATCH, 1, past)


def _row(model: ModelConfig, shape: Shape, role: str, config: str, family: str, **params: Any) -> dict[str, Any]:
    return {"suite": shape.suite, "app": model.model, "role": role, "config": config, "family": family, **params}


def _gemm(
    model: ModelConfig,
    shape: Shape,
    role: str,
    m: int,
    m_expr: str,
    k: int,
    k_expr: str,
    tokens: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """A projection x[tokens, k] · W[k, m]: DeepBench's m = outputs, n = tokens, k = inputs; `tokens`
    (count, config expression) where they are not the shape's (the LM head's last positions, encoder frames)."""
    n, n_expr = tokens or (shape.tokens, shape.tokens_expr())
    config = f"m={m_expr} n={n_expr} k={k_expr}"
    return _row(model, shape, role, config, "gemm", m=m, n=n, k=k, a_t=0, b_t=0)


def _attention_rows(model: ModelConfig, shape: Shape) -> Iterator[dict[str, Any]]:
    """Self-attention over the cache and the new tokens; a decoder with an encoder also attends to its frames."""
    heads = f"heads={model.key('heads')} kv_heads={model.key('kv_heads')} head_dim={model.key('head_dim')}"
    past = "past=0" if shape.suite == PREFILL else "past=cache"
    yield _row(
        model,
        shape,
        "self-attention",
        f"{heads} q_len={'seq' if shape.suite == PREFILL else '1'} {past} causal={int(model.causal)}",
        "attention",
        batch=shape.batch,
        q_len=shape.seq,
        past=shape.past,
        heads=model.heads,
        kv_heads=model.kv_heads,
        head_dim=model.head_dim,
        causal=int(model.causal),
    )
    if model.cross_frames:
        yield _row(
            model,
            shape,
            "cross-attention",
            f"{heads} keys={model.key('cross_frames')} (past=keys-q_len) causal=0",
            "attention",
            batch=shape.batch,
            q_len=shape.seq,
            past=model.cross_frames - shape.seq,
            heads=model.heads,
            kv_heads=model.kv_heads,
            head_dim=model.head_dim,
            causal=0,
        )


def _projection_rows(model: ModelConfig, shape: Shape) -> Iterator[dict[str, Any]]:
    """QKV (separate or fused), output, the MLP's projections and the LM head."""
    h, hk = model.hidden, model.key("hidden")
    q = model.heads * model.head_dim
    kv = model.kv_heads * model.head_dim
    q_expr = f"{model.key('heads')}*{model.key('head_dim')}"
    kv_expr = f"{model.key('kv_heads')}*{model.key('head_dim')}"
    if model.qkv == "fused":
        yield _gemm(model, shape, "qkv_proj", q + 2 * kv, f"({q_expr})+2*({kv_expr})", h, hk)
    else:
        yield _gemm(model, shape, "q_proj", q, q_expr, h, hk)
        yield _gemm(model, shape, "k_proj", kv, kv_expr, h, hk)
        yield _gemm(model, shape, "v_proj", kv, kv_expr, h, hk)
    yield _gemm(model, shape, "o_proj", h, hk, q, q_expr)
    if model.cross_frames:
        yield _gemm(model, shape, "cross q_proj", q, q_expr, h, hk)
        yield _gemm(model, shape, "cross o_proj", h, hk, q, q_expr)
        if shape.suite == PREFILL:  # the encoder's keys and values, projected once per utterance
            frames = (shape.batch * model.cross_frames, f"batch*{model.key('cross_frames')}")
            yield _gemm(model, shape, "cross k_proj", kv, kv_expr, h, hk, frames)
            yield _gemm(model, shape, "cross v_proj", kv, kv_expr, h, hk, frames)
    i, ik = model.intermediate, model.key("intermediate")
    if model.mlp == "gelu":
        yield _gemm(model, shape, "fc1", i, ik, h, hk)
        yield _gemm(model, shape, "fc2", h, hk, i, ik)
    else:
        if model.mlp_proj == "fused":
            yield _gemm(model, shape, "gate_up_proj", 2 * i, f"2*{ik}", h, hk)
        else:
            yield _gemm(model, shape, "gate_proj", i, ik, h, hk)
            yield _gemm(model, shape, "up_proj", i, ik, h, hk)
        yield _gemm(model, shape, "down_proj", h, hk, i, ik)
    if model.lm_head:  # logits of the last position only (generation keeps one), and of the one new token
        yield _gemm(model, shape, "lm_head", model.vocab, model.key("vocab"), h, hk, (shape.batch, "batch"))


def _elementwise_rows(model: ModelConfig, shape: Shape) -> Iterator[dict[str, Any]]:
    """Normalizations, the MLP's activation, rotary embedding of queries and keys."""
    kind = "layer" if model.norm == "layer" else "rms"
    size = {"batch": shape.batch, "seq": shape.seq}
    norm_config = f"hidden={model.key('hidden')} tokens={shape.tokens_expr()}"
    norms = ["attention norm", "mlp norm"] + (["cross-attention norm"] if model.cross_frames else [])
    norms.append("final norm" if model.norm_place == "pre" else "embedding norm")
    for role in norms:
        yield _row(model, shape, role, norm_config, "norm", kind=kind, hidden=model.hidden, **size)
    width_config = f"width={model.key('intermediate')} tokens={shape.tokens_expr()}"
    family = "gelu" if model.mlp == "gelu" else "swiglu"
    yield _row(model, shape, f"mlp {family}", width_config, family, width=model.intermediate, **size)
    if model.positions == "rotary":
        for role, heads, key in (("rotary q", model.heads, "heads"), ("rotary k", model.kv_heads, "kv_heads")):
            config = f"heads={model.key(key)} head_dim={model.key('head_dim')} tokens={shape.tokens_expr()}"
            yield _row(model, shape, role, config, "rotary", heads=heads, head_dim=model.head_dim, **size)


def _input_rows(model: ModelConfig, shape: Shape) -> Iterator[dict[str, Any]]:
    """What turns the model's input into its first hidden states: the token embedding gather, ViT's patch
    convolution or Whisper's two convolutions over the mel frames."""
    if model.vocab:
        config = f"vocab={model.key('vocab')} hidden={model.key('hidden')} tokens={shape.tokens_expr()}"
        yield _row(
            model,
            shape,
            "token embedding",
            config,
            "embedding",
            batch=shape.batch,
            seq=shape.seq,
            vocab=model.vocab,
            hidden=model.hidden,
        )
    conv = {"n": shape.batch, "k": model.hidden, "pad_h": 0}
    if model.patch:
        side, p = model.image, model.patch
        config = (
            f"image={model.key('image')} patch={model.key('patch')} c={model.key('channels')} k={model.key('hidden')}"
        )
        yield _row(
            model,
            shape,
            "patch embedding",
            config,
            "conv",
            **{**conv, "w": side, "h": side, "c": model.channels, "s": p, "r": p, "pad_w": 0},
            **{"wstride": p, "hstride": p},
        )
    if model.mel_bins:
        frames, c = 2 * model.tokens, model.mel_bins
        base = f"w=2*{model.key('tokens')} h=1 kernel 3 pad 1 k={model.key('hidden')}"
        yield _row(
            model,
            shape,
            "conv1",
            f"{base} c={model.key('mel_bins')}",
            "conv",
            **{**conv, "w": frames, "h": 1, "c": c, "s": 3, "r": 1, "pad_w": 1, "wstride": 1, "hstride": 1},
        )
        yield _row(
            model,
            shape,
            "conv2",
            f"{base} c={model.key('hidden')} stride 2",
            "conv",
            **{**conv, "w": frames, "h": 1, "c": model.hidden, "s": 3, "r": 1, "pad_w": 1, "wstride": 2, "hstride": 1},
        )


def derive_rows(models: list[ModelConfig]) -> list[dict[str, Any]]:
    """Every kernel row of the suite, model by model, phase by phase, size by size. A decode phase's rows
    that do not depend on the cache (projections, norms, activations) repeat at each cache length, as they
    run at each; the catalog merges identical rows into one kernel with several origins."""
    rows = []
    for model in models:
        for shape in shapes(model):
            rows += _input_rows(model, shape)
            rows += _projection_rows(model, shape)
            rows += _attention_rows(model, shape)
            rows += _elementwise_rows(model, shape)
    return [{column: row.get(column, "") for column in COLUMNS} for row in rows]


def to_csv(rows: list[dict[str, Any]]) -> str:
    """The rows as transformer.csv."""
    lines = [",".join(COLUMNS)]
    for row in rows:
        lines.append(",".join(_cell(row[c]) for c in COLUMNS))
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    text = str(value)
    return f'"{text}"' if "," in text else text
