"""The transformer suite's catalog: the model configurations against the numbers of each model's
published config.json, the shipped kernel list against its derivation from them, the phases and sizes
each model gets, and the rows `dbench list` shows."""

from __future__ import annotations

import csv
import io

import pytest
from typer.testing import CliRunner

from dbench.catalog import Selection, load_catalog, select
from dbench.catalog.kernels import AttentionKernel, EmbeddingKernel, GemmKernel
from dbench.catalog.listing import kernel_rows, suite_counts
from dbench.catalog.transformer import DECODE, KERNELS_FILE, PREFILL, derive_rows, load_models, to_csv
from dbench.cli import app
from dbench.errors import UnsupportedError
from dbench.gen.options import GenOptions
from dbench.gen.plan import build, plan

PUBLISHED = {
    # model: (hidden, heads, kv_heads, head_dim, intermediate, vocab, max_positions, tokens), as each model's
    # config.json on the Hugging Face Hub states them (docs/transformer.md names the files).
    "BERT-base": (768, 12, 12, 64, 3072, 30522, 512, 0),
    "ViT-B/16": (768, 12, 12, 64, 3072, 0, 0, 197),
    "Whisper-base-encoder": (512, 8, 8, 64, 2048, 0, 1500, 1500),
    "Whisper-base-decoder": (512, 8, 8, 64, 2048, 51865, 448, 0),
    "Llama-3.2-1B": (2048, 32, 8, 64, 8192, 128256, 131072, 0),
    "Qwen2.5-0.5B": (896, 14, 2, 64, 4864, 151936, 32768, 0),
    "Phi-3-mini": (3072, 32, 32, 96, 8192, 32064, 4096, 0),
}

SHAPES = {
    # model: (prefill shapes, decode shapes)
    "BERT-base": (4, 0),  # 128 and 512 at batch 1 and 8; 2048 is beyond its 512 positions
    "ViT-B/16": (2, 0),  # its own 197 tokens at batch 1 and 8
    "Whisper-base-encoder": (2, 0),
    "Whisper-base-decoder": (2, 1),  # 448 positions: prompt 128, cache 128
    "Llama-3.2-1B": (5, 3),
    "Qwen2.5-0.5B": (5, 3),
    "Phi-3-mini": (5, 2),  # 4096 positions: no cache of 4096 before the new token
}


def transformer_kernels():
    return select(load_catalog(), Selection("transformer"))


def test_model_configurations_are_the_published_ones():
    models = {m.model: m for m in load_models()}
    assert set(models) == set(PUBLISHED)
    for name, numbers in PUBLISHED.items():
        m = models[name]
        assert (
            m.hidden,
            m.heads,
            m.kv_heads,
            m.head_dim,
            m.intermediate,
            m.vocab,
            m.max_positions,
            m.tokens,
        ) == numbers
        assert m.source.startswith("https://huggingface.co/") and m.source.endswith("/config.json")
        assert m.heads * m.head_dim == m.hidden or name == "Llama-3.2-1B"  # Llama states head_dim itself
    vit = models["ViT-B/16"]
    assert (vit.image // vit.patch) ** 2 + 1 == vit.tokens


def test_the_shipped_list_is_the_derivation():
    from importlib import resources

    shipped = (resources.files("dbench.catalog") / "data" / KERNELS_FILE).read_text()
    assert shipped == to_csv(derive_rows(load_models())), "run scripts/transformer_catalog.py"


def test_each_model_gets_its_phases_and_sizes():
    rows = derive_rows(load_models())
    for model, (prefill, decode) in SHAPES.items():
        mine = [r for r in rows if r["app"] == model]
        prefill_shapes = {(r["n"]) for r in mine if r["suite"] == PREFILL and r["role"] == "o_proj"}
        decode_shapes = {r["past"] for r in mine if r["suite"] == DECODE and r["role"] == "self-attention"}
        assert (len(prefill_shapes), len(decode_shapes)) == (prefill, decode), model


def test_rows_are_derived_from_their_configuration():
    kernels = transformer_kernels()
    by_source = {}
    for k in kernels:
        for o in (o for o in k.origins if o.suite in (PREFILL, DECODE)):
            by_source.setdefault((o.app, o.suite, o.role), []).append(k)
    llama_head = by_source[("Llama-3.2-1B", DECODE, "lm_head")]
    assert {k.id for k in llama_head} == {"gemm_m128256_n1_k2048_nn"}  # the tied 128256 x 2048 table, a GEMV
    assert {k.m for k in by_source[("Qwen2.5-0.5B", PREFILL, "k_proj")]} == {2 * 64}
    assert {k.m for k in by_source[("Phi-3-mini", PREFILL, "qkv_proj")]} == {3 * 3072}
    assert {k.m for k in by_source[("Phi-3-mini", PREFILL, "gate_up_proj")]} == {2 * 8192}
    assert {k.n for k in by_source[("Whisper-base-decoder", PREFILL, "cross k_proj")]} == {1500, 8 * 1500}
    decode_attention = by_source[("Llama-3.2-1B", DECODE, "self-attention")]
    assert {(k.q_len, k.past, k.heads, k.kv_heads, k.causal) for k in decode_attention} == {
        (1, p, 32, 8, True) for p in (128, 1024, 4096)
    }
    assert not any(k.causal for k in by_source[("BERT-base", PREFILL, "self-attention")])
    fc1 = by_source[("BERT-base", PREFILL, "fc1")]
    assert all(isinstance(k, GemmKernel) and (k.m, k.k) == (3072, 768) for k in fc1)
    assert {k.n for k in fc1} == {128, 512, 8 * 128, 8 * 512}  # batch x seq tokens
    for key, found in by_source.items():
        assert found and all(o.config for k in found for o in k.origins if (o.app, o.suite, o.role) == key), key


def test_decode_attention_flops_and_bytes_follow_the_documented_formula():
    """One new token against a cache of P: 4·h·d·(P + 1) FLOPs; Q and the output (2·h·d) and K, V of
    P + 1 tokens (2·g·(P + 1)·d), in bytes of 4."""
    k = AttentionKernel(batch=1, q_len=1, past=4096, heads=32, kv_heads=8, head_dim=64, causal=True)
    assert k.flops() == 4 * 32 * 64 * 4097
    assert k.min_bytes(4) == 4 * (2 * 32 * 64 + 2 * 8 * 4097 * 64)


def test_embedding_bytes_are_the_rows_touched_not_the_table():
    k = EmbeddingKernel(batch=1, seq=128, vocab=128256, hidden=2048)
    assert k.min_bytes(4) == 4 * 2 * 128 * 2048 + 8 * 128
    graph = build(plan([k], [PREFILL], GenOptions())[0])
    assert graph.spec.min_bytes == k.min_bytes(4)
    assert graph.spec.weights[0].nbytes == 128256 * 2048 * 4  # the table is still the graph's weight


def test_phase_selectors_split_the_suite():
    prefill = select(load_catalog(), Selection("transformer-prefill"))
    decode = select(load_catalog(), Selection("transformer-decode"))
    both = transformer_kernels()
    assert {k.id for k in prefill} | {k.id for k in decode} == {k.id for k in both}
    assert all(PREFILL in k.suites for k in prefill) and all(DECODE in k.suites for k in decode)
    assert select(both, Selection("transformer", ops=("rmsnorm",))) and all(
        k.op == "rmsnorm" for k in select(both, Selection("transformer", ops=("rmsnorm",)))
    )


def test_attention_rows_build_or_are_unsupported_with_the_reason():
    """The suite's attention rows reach the attention family's builder where this version has it, and are
    one unsupported graph each, naming why, where it has not (never a KeyError)."""
    from dbench.gen.plan import FAMILIES

    attention = select(transformer_kernels(), Selection("transformer", ops=("attention",)))
    assert attention
    requests = plan(attention, [PREFILL, DECODE], GenOptions())
    if "attention" in FAMILIES:
        assert build(requests[0]).spec.family == "attention"
        return
    assert len(requests) == len(attention)
    with pytest.raises(UnsupportedError, match="no graph builder for attention kernels"):
        build(requests[0])


def test_list_names_every_rows_model_role_and_config():
    kernels = transformer_kernels()
    rows = kernel_rows(kernels, ("transformer_prefill", "transformer_decode"))
    assert rows and all(r["source"] for r in rows)
    assert all("[" in r["source"] and "=" in r["source"] for r in rows)
    counts = suite_counts(kernels, ("transformer_prefill", "transformer_decode"))
    assert sum(c["rows"] for c in counts) == len(derive_rows(load_models()))
    result = CliRunner().invoke(app, ["list", "--suite", "transformer", "--format", "csv"])
    assert result.exit_code == 0, result.output
    listed = list(csv.DictReader(io.StringIO(result.output)))
    assert len(listed) == len(kernels) and all(r["source"] for r in listed)
    table = CliRunner().invoke(app, ["list", "--suite", "transformer"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "kernels per model and phase" in table.output and "Phi-3-mini" in table.output
