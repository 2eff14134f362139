"""Attention graphs in every form, on shrunk shapes through the path a run takes (plan, build, the worker's
job: feeds, timing, verification against the float64 reference, the executed form read from the runtime),
on ONNX Runtime CPU and OpenVINO CPU."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from dbench.catalog.kernels import AttentionKernel
from dbench.errors import UnsupportedError, UsageError
from dbench.gen import attention
from dbench.gen import plan as gen_plan
from dbench.gen.attention_math import causal_visible
from dbench.gen.feeds import make_feeds
from dbench.gen.options import ATTENTION_FORMS, GenOptions
from dbench.outcome import Status
from dbench.runtimes.base import RuntimeOptions
from dbench.store.schema import Row
from dbench.worker.main import Job, execute
from dbench.worker.timing import QUICK

PREFILL_CAUSAL = AttentionKernel(batch=1, q_len=6, past=0, heads=4, kv_heads=4, head_dim=16, causal=True)
PREFILL_GQA_BIDIRECTIONAL = AttentionKernel(batch=1, q_len=5, past=0, heads=4, kv_heads=2, head_dim=16, causal=False)
DECODE_MQA = AttentionKernel(batch=1, q_len=1, past=9, heads=4, kv_heads=1, head_dim=16, causal=True)
DECODE_BATCH = AttentionKernel(batch=2, q_len=1, past=7, heads=4, kv_heads=4, head_dim=16, causal=True)
CHUNK_GQA = AttentionKernel(batch=1, q_len=3, past=4, heads=4, kv_heads=2, head_dim=16, causal=True)
"""New tokens against a cache, more than one: the causal mask's past offset matters on every row."""
KERNELS = [PREFILL_CAUSAL, PREFILL_GQA_BIDIRECTIONAL, DECODE_MQA, DECODE_BATCH]
RUNTIMES = ["ort-cpu", "openvino"]

REFUSED = {("openvino", DECODE_BATCH.id, "gqa"): "com.microsoft.GroupQueryAttention"}
"""Graphs a runtime refuses, with what its reason names: OpenVINO translates GroupQueryAttention for batch 1 only."""


def _run(graph, runtime: str, verify: bool = True):
    """The graph through the worker's job, as a run's first round makes it."""
    return execute(
        Job(
            spec=graph.spec,
            model=graph.model.SerializeToString(),
            sha256=None,
            runtime=runtime,
            options=RuntimeOptions(threads=1),
            timing=QUICK,
            weights="const",
            verify=verify,
            profile_runs=0,
        )
    )


def _planned(kernels, form: str = "all"):
    return [gen_plan.build(r) for r in gen_plan.plan(kernels, (), GenOptions(attention_form=form))]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.id)
def test_every_form_runs_verified_and_says_what_executed(kernel, runtime):
    graphs = _planned([kernel])
    grouped = kernel.heads != kernel.kv_heads
    assert {g.spec.form for g in graphs} == set(ATTENTION_FORMS) - ({"mha"} if grouped else set())
    for graph in graphs:
        outcome = _run(graph, runtime)
        refused = REFUSED.get((runtime, kernel.id, graph.spec.form))
        if refused:
            assert outcome.status == Status.UNSUPPORTED, outcome.message
            assert refused in outcome.message and "cannot compile" in outcome.message
            continue
        assert outcome.status == Status.OK, f"{graph.id} on {runtime}: {outcome.message}"
        assert outcome.verification["ok"] and outcome.verification["error"] < 1e-5
        verdict, _, layers = outcome.executed_form.partition(": ")
        assert verdict in ("fused", "unfused") and layers, outcome.executed_form


def test_what_each_runtime_executes_for_each_form():
    """ONNX Runtime runs its own attention kernels for the ops, the exporter's subgraph as separate
    nodes (no attention fusion in its CPU graph optimizer); OpenVINO fuses the subgraph's MatMul,
    Softmax and MatMul into one snippet kernel."""
    forms = {g.spec.form: g for g in _planned([PREFILL_CAUSAL])}
    ort = {form: _run(g, "ort-cpu", verify=False).executed_form for form, g in forms.items()}
    assert ort == {
        "subgraph": "unfused: com.microsoft:FusedMatMul + Add + Softmax + MatMul",
        "op": "fused: Attention",
        "mha": "fused: com.microsoft:MultiHeadAttention",
        "gqa": "fused: com.microsoft:GroupQueryAttention",
    }
    ov = _run(forms["subgraph"], "openvino", verify=False).executed_form
    assert ov.startswith("fused: ") and "Subgraph[Mul,Add,Softmax,MatMul]" in ov


def test_a_form_that_cannot_express_the_kernel_is_unsupported_with_its_reason():
    """`all` leaves MultiHeadAttention out of a grouped-query kernel; asked for by name, it is planned
    and its build refuses, which a run records as unsupported."""
    (request,) = gen_plan.plan([DECODE_MQA], (), GenOptions(attention_form="mha"))
    with pytest.raises(UnsupportedError, match=r"^MultiHeadAttention has one head count .* 4 query heads sharing 1"):
        gen_plan.build(request)


def test_group_query_attention_of_several_tokens_against_a_past_is_planned_at_batch_1_only():
    """ONNX Runtime's GroupQueryAttention refuses several new tokens against a past beyond batch 1 (its
    shape check, at run time): `all` leaves that form out, and by name it is unsupported with the reason."""
    chunk_batch = AttentionKernel(batch=2, q_len=3, past=4, heads=4, kv_heads=2, head_dim=16, causal=True)
    assert "gqa" not in {g.spec.form for g in _planned([chunk_batch])}
    assert "gqa" in {g.spec.form for g in _planned([CHUNK_GQA])}
    (request,) = gen_plan.plan([chunk_batch], (), GenOptions(attention_form="gqa"))
    with pytest.raises(UnsupportedError, match=r"^GroupQueryAttention takes several new tokens .* only at batch 1"):
        gen_plan.build(request)


def test_an_unknown_form_is_refused_in_one_line():
    with pytest.raises(UsageError, match=r"^unknown attention form 'sdpa'; valid: subgraph, op, mha, gqa, all$"):
        GenOptions(attention_form="sdpa")


@pytest.mark.parametrize("kernel", [*KERNELS, CHUNK_GQA], ids=lambda k: k.id)
def test_the_reference_agrees_with_onnx_own_reference_of_its_attention_op(kernel):
    """onnx's ReferenceEvaluator implements opset 23's Attention (bottom-right causal alignment with a
    cache) independently of dbench's numpy reference."""
    graph = attention.build(kernel, "fp32", "fwd", "op")
    feeds = make_feeds(graph.spec)
    expected = attention.reference(graph.spec, feeds)
    got = ReferenceEvaluator(graph.model).run(None, feeds)
    for spec, value in zip(graph.spec.outputs, got, strict=True):
        assert np.abs(value - expected[spec.name]).max() < 1e-5 * np.abs(expected[spec.name]).max()


def test_query_i_sees_the_cache_and_new_tokens_up_to_its_own():
    assert causal_visible(2, 3).tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_mask_off_by_one_position_fails_verification(runtime):
    """The subgraph with its causal mask moved one key later (each query also sees the next token):
    the runtime computes it faithfully, and the check against the reference catches it."""
    graph = attention.build(CHUNK_GQA, "fp32", "fwd", "subgraph")
    model = onnx.ModelProto()
    model.CopyFrom(graph.model)
    (diagonal,) = [n for n in model.graph.node if n.output[0] == "mask_diagonal"]
    diagonal.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array(CHUNK_GQA.past + 2, np.int64), "mask_diagonal"))
    outcome = _run(dataclasses.replace(graph, model=model), runtime)
    assert outcome.status == Status.MISMATCH, outcome.message
    assert outcome.verification["error"] > 1e-2


LLAMA_DECODE = AttentionKernel(batch=1, q_len=1, past=1024, heads=32, kv_heads=8, head_dim=64, causal=True)


@pytest.mark.parametrize("form", ["subgraph", "op"])
def test_a_decode_row_has_the_flops_and_bytes_of_the_docs_formulas(form):
    """docs/attention.md: FLOPs = 4·B·H·d·(P·q + q(q+1)/2) over the unmasked pairs (decode: 4·B·H·d·L);
    bytes = s·(2·B·H·q·d + 2·B·G·L·d + 2·B·G·L·d): Q and the output, K and V read, the cache with the
    new token written (fp32: s = 4)."""
    b, h, g, q, p, d = 1, 32, 8, 1, 1024, 64
    length = p + q
    graph = attention.build(LLAMA_DECODE, "fp32", "fwd", form)
    row = Row.build(
        "run",
        0,
        graph.spec,
        {"name": "ort-cpu", "version": "0", "options": {}},
        "const",
        _run(attention.build(LLAMA_DECODE, "fp32", "fwd", form), "ort-cpu"),
    )
    assert row.status == Status.OK and row.executed_form
    assert row.flops == 4 * b * h * d * (p * q + q * (q + 1) // 2) == 4 * b * h * d * length == 8_396_800
    assert row.min_bytes == 4 * (2 * b * h * q * d + 2 * b * g * length * d + 2 * b * g * length * d) == 8_413_184
    assert row.min_bytes == LLAMA_DECODE.min_bytes(4) + 4 * 2 * b * g * length * d
    assert row.flops_executed == row.flops  # one query sees every key: nothing masked


def test_prefill_executes_the_masked_pairs_too():
    graph = attention.build(PREFILL_CAUSAL, "fp32", "fwd", "subgraph")
    b, h, q, d = 1, 4, 6, 16
    assert graph.spec.flops == 4 * b * h * d * q * (q + 1) // 2
    assert graph.spec.flops_executed == 4 * b * h * d * q * q


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_every_form_is_a_valid_onnx_graph(precision):
    for kernel in [*KERNELS, CHUNK_GQA]:
        for request in gen_plan.plan([kernel], (), GenOptions(precision=precision)):
            onnx.checker.check_model(gen_plan.build(request).model, full_check=True)
