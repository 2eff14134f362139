"""The transformer suite's own graphs (norm, gelu, swiglu, rotary, embedding): every graph of the suite
valid, and each family and form on shrunk shapes run by ONNX Runtime CPU and OpenVINO CPU through
dbench's adapters, verified against its float64 numpy reference, which ONNX's reference evaluator checks."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from dbench.catalog import Selection, load_catalog, select
from dbench.catalog.kernels import EmbeddingKernel, GatedKernel, GeluKernel, NormKernel, RotaryKernel
from dbench.check.verdict import compare
from dbench.errors import UnsupportedError
from dbench.gen.feeds import make_feeds
from dbench.gen.graph import Graph
from dbench.gen.options import GenOptions
from dbench.gen.plan import GraphRequest, build, plan, reference, tolerance
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from tests.helpers import run_reference_evaluator

SHRUNK = [
    (NormKernel(kind="layer", batch=2, seq=3, hidden=16), "op"),
    (NormKernel(kind="layer", batch=2, seq=3, hidden=16), "subgraph"),
    (NormKernel(kind="rms", batch=2, seq=3, hidden=16), "op"),
    (NormKernel(kind="rms", batch=2, seq=3, hidden=16), "subgraph"),
    (GeluKernel(batch=2, seq=3, width=24), "op"),
    (GeluKernel(batch=2, seq=3, width=24), "erf"),
    (GatedKernel(batch=2, seq=3, width=24), "subgraph"),
    (RotaryKernel(batch=2, seq=3, heads=4, head_dim=8), "subgraph"),
    (RotaryKernel(batch=2, seq=3, heads=4, head_dim=8), "op"),
    (RotaryKernel(batch=2, seq=3, heads=4, head_dim=8), "ms"),
    (EmbeddingKernel(batch=2, seq=3, vocab=50, hidden=8), "gather"),
]
IDS = [f"{k.id}-{form}" for k, form in SHRUNK]
EVALUATED = [(k, form) for k, form in SHRUNK if form != "ms"]
"""The forms onnx.reference runs: it has no com.microsoft ops (the ms form's reference is the op form's code)."""


def runtime(name: str):
    if name == "ort-cpu":
        from dbench.runtimes.onnxruntime import OrtCpu

        return OrtCpu(RuntimeOptions(threads=1))
    from dbench.runtimes.openvino import OpenVino

    return OpenVino(RuntimeOptions(threads=1))


def execute(graph: Graph, name: str, seed: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The runtime's outputs and the reference's, on fresh inputs; weights as constants, as a run makes them."""
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    session = runtime(name).prepare(graph.model, graph.spec, constants)
    try:
        session.bind(per_call)
        session.run()
        return session.outputs(), reference(graph.spec, feeds)
    finally:
        session.close()


def test_every_graph_of_the_suite_is_valid():
    kernels = select(load_catalog(), Selection("transformer"))
    built = unsupported = 0
    for request in plan(kernels, ("transformer_prefill", "transformer_decode"), GenOptions()):
        try:
            graph = build(request)
        except UnsupportedError:
            unsupported += 1
            assert request.kernel.family == "attention"
            continue
        onnx.checker.check_model(graph.model, full_check=True)
        assert [i.name for i in graph.model.graph.input] == [t.name for t in graph.spec.inputs]
        built += 1
    assert built > 200
    assert unsupported == len([k for k in kernels if k.family == "attention"]) or unsupported == 0


@pytest.mark.parametrize("kernel,form", SHRUNK, ids=IDS)
@pytest.mark.parametrize("name", ["ort-cpu", "openvino"])
def test_runtime_output_matches_the_reference(kernel, form, name, seed):
    graph = build(GraphRequest(kernel, "fp32", "fwd", form))
    outputs, expected = execute(graph, name, seed)
    verdict = compare(outputs, expected, tolerance(graph.spec))
    assert verdict.ok, verdict


@pytest.mark.parametrize("kernel,form", EVALUATED, ids=[f"{k.id}-{form}" for k, form in EVALUATED])
def test_reference_agrees_with_onnx_reference_evaluator(kernel, form, seed):
    """A second implementation of each graph (onnx.reference) sides with dbench's numpy reference, so a
    wrong reference cannot verify a wrong runtime."""
    graph = build(GraphRequest(kernel, "fp32", "fwd", form))
    feeds = make_feeds(graph.spec, seed)
    (evaluated,) = run_reference_evaluator(graph.model, feeds)
    np.testing.assert_allclose(evaluated, reference(graph.spec, feeds)["Y"], rtol=1e-4, atol=1e-5)


def test_references_compute_what_the_kernel_names(seed):
    """Properties that do not depend on the graph: LayerNorm rows have mean 0 before the affine, the gate
    is 0 where G is 0, the rotation keeps each pair's norm when cos² + sin² = 1, a gather copies rows."""
    norm = build(GraphRequest(NormKernel(kind="layer", batch=1, seq=2, hidden=32), "fp32", "fwd", "op"))
    feeds = make_feeds(norm.spec, seed)
    feeds["gamma"][:], feeds["beta"][:] = 1.0, 0.0
    assert np.allclose(reference(norm.spec, feeds)["Y"].mean(axis=-1), 0.0, atol=1e-12)
    gate = build(GraphRequest(GatedKernel(batch=1, seq=1, width=4), "fp32", "fwd", "subgraph"))
    feeds = make_feeds(gate.spec, seed)
    feeds["G"][..., 0] = 0.0
    assert reference(gate.spec, feeds)["Y"][..., 0] == 0.0
    rope = build(GraphRequest(RotaryKernel(batch=1, seq=2, heads=1, head_dim=4), "fp32", "fwd", "subgraph"))
    feeds = make_feeds(rope.spec, seed)
    angle = np.random.default_rng(seed).uniform(0, 6, size=(2, 2))
    feeds["COS"][:], feeds["SIN"][:] = np.tile(np.cos(angle), 2), np.tile(np.sin(angle), 2)
    y, x = reference(rope.spec, feeds)["Y"], feeds["X"].astype(np.float64)
    pair_norm = lambda v: v[..., :2] ** 2 + v[..., 2:] ** 2  # noqa: E731
    assert np.allclose(pair_norm(y), pair_norm(x))
    embed = build(GraphRequest(EmbeddingKernel(batch=1, seq=3, vocab=10, hidden=2), "fp32", "fwd", "gather"))
    feeds = make_feeds(embed.spec, seed)
    assert np.array_equal(reference(embed.spec, feeds)["Y"][0], feeds["TABLE"][feeds["IDS"][0]])
