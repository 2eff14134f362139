"""Native TensorRT runtime, CPU-side: engine cache keys and headers, the weights file layout its
parser reads (checked by running it on ONNX Runtime CPU), and inspector/profiler parsing for both
TensorRT 10 and 11 JSON schemas. The GPU path itself is in test_runtime_gpu.py (gpu-marked)."""

from __future__ import annotations

import onnx
import pytest

from dbench.catalog import GemmKernel
from dbench.gen import gemm
from dbench.gen.feeds import make_feeds
from dbench.gen.weights import split_feeds
from dbench.runtimes import engine_cache
from dbench.runtimes.tensorrt import write_external_model
from dbench.runtimes.tensorrt_layers import node_profiles, precision_of
from tests.helpers import normalized_error, run_ort

FIELDS = {
    "graph_sha256": "ab" * 32,
    "tensorrt": "10.16.1.11",
    "gpu": "NVIDIA H100",
    "gpu_uuid": "0f" * 16,
    "compute_capability": "9.0",
    "strongly_typed": True,
    "builder_optimization_level": 3,
    "workspace_mb": None,
}


@pytest.mark.parametrize(
    "field,other",
    [
        ("graph_sha256", "cd" * 32),
        ("tensorrt", "11.4.0.106"),
        ("gpu", "NVIDIA H200"),
        ("gpu_uuid", "1f" * 16),
        ("compute_capability", "8.0"),
        ("builder_optimization_level", 5),
        ("workspace_mb", 512),
    ],
)
def test_engine_key_changes_with_every_field(field, other):
    assert engine_cache.engine_key({**FIELDS, field: other}) != engine_cache.engine_key(FIELDS)
    assert engine_cache.engine_key(dict(reversed(list(FIELDS.items())))) == engine_cache.engine_key(FIELDS)


def test_graph_hash_changes_with_one_weight_element(seed):
    graph = gemm.build(GemmKernel(m=8, n=4, k=8, a_t=False, b_t=False), "fp32", "fwd", "gemm")
    constants, _ = split_feeds(graph.spec, make_feeds(graph.spec, seed), "const")
    model = graph.model.SerializeToString()
    base = engine_cache.graph_hash(model, constants)
    changed = {name: array.copy() for name, array in constants.items()}
    name = next(iter(changed))
    changed[name].flat[0] += 1
    assert engine_cache.graph_hash(model, changed) != base
    assert engine_cache.graph_hash(model, {}) != base and engine_cache.graph_hash(model, constants) == base


def test_cache_round_trip_and_stale_headers_are_rebuilt(tmp_path):
    path = tmp_path / "e.engine"
    assert engine_cache.read_engine(path, FIELDS) == (None, "")
    engine_cache.write_engine(path, FIELDS, b"\x00plan\nbytes")
    assert engine_cache.read_engine(path, FIELDS) == (b"\x00plan\nbytes", "")
    assert not list(tmp_path.glob("*.partial"))
    plan, note = engine_cache.read_engine(path, {**FIELDS, "tensorrt": "11.4.0.106", "gpu": "NVIDIA H200"})
    assert (
        plan is None and note == f"engine cache {path} was built for gpu='NVIDIA H100', tensorrt='10.16.1.11'; rebuilt"
    )
    path.write_bytes(b"some other engine")
    assert engine_cache.read_engine(path, FIELDS) == (None, f"engine cache {path} has no dbench header; rebuilt")


def test_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DBENCH_CACHE_DIR", str(tmp_path))
    assert engine_cache.cache_root() == tmp_path / "engines"


def test_weights_written_beside_the_model_are_the_graph_constants(tmp_path, seed):
    """The file layout TensorRT's parser reads, checked by ONNX Runtime CPU loading it from disk."""
    graph = gemm.build(GemmKernel(m=16, n=8, k=12, a_t=True, b_t=False), "fp32", "fwd", "gemm")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    path = write_external_model(graph.model, constants, tmp_path)
    model = onnx.load(str(path))
    assert [i.name for i in model.graph.input] == list(per_call)
    out = run_ort(model, per_call)[0]
    assert normalized_error(out, gemm.reference(graph.spec, feeds)["Y"]) < 1e-5


LAYERS_10 = {
    "Layers": [
        {
            "Name": "reformat_in",
            "LayerType": "Reformat",
            "Inputs": [{"Name": "X", "Format/Datatype": "Row major linear FP32"}],
            "Outputs": [{"Name": "x16", "Format/Datatype": "Channel major FP16 format where channel % 8 == 0"}],
            "TacticName": "",
        },
        {
            "Name": "conv",
            "LayerType": "CaskConvolution",
            "Inputs": [{"Name": "x16", "Format/Datatype": "Channel major FP16 format"}],
            "Outputs": [{"Name": "Y", "Format/Datatype": "Row major linear FP32"}],
            "TacticName": "sm90_xmma_fprop_implicit_gemm_f16f16",
        },
    ],
    "Bindings": ["X", "Y"],
}
LAYERS_11 = {
    "Layers": [
        {
            "Name": "gemm",
            "LayerType": "gemm",
            "Inputs": [{"Name": "X", "DataType": "Int8", "Format": "kLINEAR"}],
            "Outputs": [{"Name": "Y", "DataType": "Float", "Format": "kLINEAR"}],
            "TacticName": "sm90_xmma_gemm_s8s8",
        },
    ],
    "I/O Tensors": [{"Name": "X", "IOMode": "Input", "DataType": "Int8"}],
}


def test_inspector_json_of_tensorrt_10_and_11_gives_layers_kernels_and_executed_precision():
    nodes = node_profiles(LAYERS_10, {"conv": 12.5, "reformat_in": 1.0})
    assert [(n.name, n.op_type, n.kernel, n.precision, n.time_us) for n in nodes] == [
        ("reformat_in", "Reformat", "", "", 1.0),
        ("conv", "CaskConvolution", "sm90_xmma_fprop_implicit_gemm_f16f16", "fp16", 12.5),
    ]
    (node,) = node_profiles(LAYERS_11, {})
    assert (node.precision, node.time_us, node.provider) == ("int8", 0.0, "TensorRT")
    assert [n.name for n in node_profiles({"Layers": ["a", "b"]}, {"a": 2.0})] == ["a", "b"]


@pytest.mark.parametrize(
    "text,name",
    [
        ("Row major linear FP32", "fp32"),
        ("Half", "fp16"),
        ("BFloat16", "bf16"),
        ("Int8", "int8"),
        ("Float", "fp32"),
        ("Row major linear INT32", "int32"),
        ("Bool", ""),
    ],
)
def test_precision_names(text, name):
    assert precision_of(text) == name


def test_layer_times_are_means_over_the_typical_runs_after_the_warm_up():
    """Two warm-up reports, then three runs of which the second was preempted: it is left out of both
    the layer times and the time per call, so the layers still fit inside the call."""
    from dbench.runtimes.tensorrt_layers import typical_layer_times

    layers, call = typical_layer_times({"conv": [90.0, 50.0, 10.0, 40.0, 12.0], "odd": [3.0]}, 2, [12.0, 45.0, 14.0])
    assert layers == {"conv": 11.0, "odd": 3.0} and call == 13.0
