"""4-bit weight-only models as onnxruntime.quantization makes them (MatMulNBits, or DequantizeLinear of
blocked int4 then MatMul) from a small torch-exported BERT-like encoder: recognised as int4, and run
verified against the foreign reference, whose MatMulNBits dequantises the same blocks."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from dbench.catalog.kernels import GemmKernel
from dbench.frommodel.model_file import load_model
from dbench.frommodel.walk import extract
from dbench.gen import int4
from dbench.gen.feeds import make_feeds
from dbench.gen.weights import embed_weights, split_feeds
from dbench.sources.foreign_reference import foreign_evaluator
from dbench.sources.model_spec import model_precision
from tests.encoder_models import bert_like, quantized_4bit


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return bert_like(tmp_path_factory.mktemp("encoder") / "encoder.onnx")


@pytest.mark.parametrize("qdq", [False, True], ids=["matmulnbits", "qdq"])
def test_a_4bit_model_is_recognised_as_int4_weight_only(encoder, qdq, tmp_path):
    model = quantized_4bit(encoder, tmp_path / "q.onnx", block=32, qdq=qdq)
    loaded = load_model(model, {}, weights=False)
    extraction = extract(loaded)
    assert model_precision(loaded.model, extraction) == "int4"
    weight_only = [k for k in extraction.kernels if k.precision == "int4"]
    assert {k.form for k in weight_only} == {"dq" if qdq else "nbits"}
    assert {dict(k.attrs)["block"] for k in weight_only} == {32}
    assert sum(len(k.nodes) for k in weight_only) == 8  # q·k·v, out, up, down in each of 2 layers (qkv is one)
    if qdq:
        assert any("folded into the int4 kernel" in s.reason for s in extraction.skipped)


@pytest.mark.parametrize("weight_type", ["int4", "uint4"])
def test_the_reference_matmulnbits_is_dbench_s_dequantisation(weight_type, seed):
    """onnx.reference with dbench's MatMulNBits against the kernel's numpy reference, zero points or not."""
    graph = int4.build(GemmKernel(m=24, n=3, k=96, a_t=False, b_t=False), form="nbits", weight_type=weight_type)
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    (out,) = foreign_evaluator(embed_weights(graph.model, constants)).run(None, per_call)
    np.testing.assert_allclose(out, int4.reference(graph.spec, feeds)["Y"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("qdq", [False, True], ids=["matmulnbits", "qdq"])
def test_a_4bit_encoder_runs_verified_with_4bit_weights_on_both_cpu_runtimes(encoder, qdq, tmp_path):
    from dbench.cli import app

    model = quantized_4bit(encoder, tmp_path / "q.onnx", block=32, qdq=qdq)
    args = [
        "run",
        "--model",
        str(model),
        "--runtime",
        "ort-cpu,openvino",
        "--rounds",
        "1",
        "--out",
        str(tmp_path / "r"),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (log,) = (tmp_path / "r").glob("*/*.jsonl")
    rows = [json.loads(line) for line in log.read_text().splitlines() if '"type": "result"' in line]
    assert {r["runtime"] for r in rows} == {"ort-cpu", "openvino"}
    for row in rows:
        assert row["status"] == "ok" and row["verified"] and row["precision"] == "int4", row["message"]
        stated = (row["weights_executed"], row["precision_executed"])
        assert stated == ("int4", "fp32"), (row["runtime"], row["nodes"], row["message"])


def test_a_model_whose_4bit_scale_is_off_is_a_mismatch(encoder, tmp_path):
    """The reference reads the model's scales; a runtime fed other scales would disagree: here the model
    is the same but one MatMulNBits' scales doubled in the runtime's copy only, through the evaluator."""
    model = onnx.load(str(quantized_4bit(encoder, tmp_path / "q.onnx", block=32)))
    ids = np.random.default_rng(0).integers(0, 128, size=(1, 16)).astype(np.int64)
    (ref,) = foreign_evaluator(model).run(None, {"ids": ids})
    scales = next(t for t in model.graph.initializer if t.name.endswith("_scales"))
    doubled = onnx.numpy_helper.to_array(scales) * 2
    scales.CopyFrom(onnx.numpy_helper.from_array(doubled.astype(np.float32), scales.name))
    from tests.helpers import run_ort

    out = run_ort(model, {"ids": ids})[0]
    assert np.max(np.abs(out - ref)) / np.max(np.abs(ref)) > 1e-3  # beyond int4 models' bound
