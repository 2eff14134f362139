"""The ONNX Runtime CPU adapter: bound inputs, outputs, per-node profile and the precision it reports."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from dbench.catalog import ConvKernel, GemmKernel
from dbench.errors import DbenchError, OutOfMemory, UnsupportedError
from dbench.gen import conv, gemm
from dbench.gen.feeds import make_feeds
from dbench.gen.precision import DTYPES
from dbench.gen.weights import embed_weights, split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.onnxruntime import GraphLoadError, OrtCpu, classified
from dbench.runtimes.registry import RUNTIMES, runtime_class, status
from dbench.store.schema import executed_precision
from tests.helpers import normalized_error

KERNEL = ConvKernel(w=9, h=7, c=3, n=2, k=4, s=3, r=2, pad_w=1, pad_h=0, wstride=2, hstride=1)


@pytest.mark.parametrize("weights", ["const", "input"])
def test_fp32_conv_runs_verifies_and_profiles(weights, seed):
    graph = conv.build(KERNEL, "fp32", "fwd")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, weights)
    session = OrtCpu(RuntimeOptions(threads=1)).prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    session.run()
    out = session.outputs()["Y"]
    assert normalized_error(out, conv.reference(graph.spec, feeds)["Y"]) < 1e-5
    nodes = session.profile(3).nodes
    compute = [n for n in nodes if n.precision]  # const weights add NCHWc Reorder nodes (no precision)
    assert [n.op_type for n in compute] == ["Conv"] and compute[0].provider == "CPUExecutionProvider"
    assert executed_precision([vars(n) for n in nodes]) == "fp32"


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_constants_in_memory_act_as_embedded_weights(precision, seed):
    """Weights handed over as in-memory external initializers: the model ORT parses holds no weight
    data, the weights are no longer inputs, and the optimised graph and outputs equal the embedded way's."""
    graph = conv.build(KERNEL, precision, "fwd")
    constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec, seed), "const")
    runtime = OrtCpu(RuntimeOptions(threads=1))
    sessions = [
        runtime.prepare(graph.model, graph.spec, constants),
        runtime.prepare(embed_weights(graph.model, constants), graph.spec, {}),
    ]
    assert [i.name for i in sessions[0].session.get_inputs()] == list(per_call)
    results = []
    for session in sessions:
        session.bind(per_call)
        session.run()
        results.append((session.outputs()["Y"], [(n.op_type, n.precision) for n in session.profile(2).nodes]))
    in_memory = sessions[0]
    parsed = onnx.load_model_from_string(in_memory.model_bytes)
    assert [(t.name, t.data_location, t.raw_data) for t in parsed.graph.initializer if t.name in constants] == [
        (name, onnx.TensorProto.EXTERNAL, b"") for name in constants
    ]
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


def test_runtimes_that_take_a_self_contained_model_get_the_weights_embedded(seed):
    """`constants_in_memory = False` (the TensorRT EP's setting) serialises the weights into the model."""

    class Embedding(OrtCpu):
        constants_in_memory = False

    graph = conv.build(KERNEL, "fp32", "fwd")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    session = Embedding(RuntimeOptions(threads=1)).prepare(graph.model, graph.spec, constants)
    parsed = onnx.load_model_from_string(session.model_bytes)
    assert {t.name for t in parsed.graph.initializer if t.raw_data} >= set(constants) and not session.constants
    session.bind(per_call)
    session.run()
    assert normalized_error(session.outputs()["Y"], conv.reference(graph.spec, feeds)["Y"]) < 1e-5


def test_bf16_constants_are_shared_not_copied():
    """bfloat16 has no numpy type in ORT: the OrtValue wraps the array's 16-bit words in place."""
    from dbench.runtimes.onnxruntime import _ortvalue

    array = np.zeros((2, 3), dtype=DTYPES["bfloat16"])
    value = _ortvalue(array, "cpu", 0)
    array[0, 0] = 5
    assert value.data_type() == "tensor(bfloat16)" and value.data_ptr() == array.ctypes.data


def _profile_events(runs: list[dict[str, list[int]]]) -> list[dict]:
    """ORT-like profiler events: each run a `model_run` span holding node events (name -> durations)."""
    events, ts = [], 0
    for nodes in runs:
        start = ts
        for name, durations in nodes.items():
            op = name.split("_")[0]
            shape = [{"int64": []}] if op == "Loop" else [{"float": [2, 2]}]
            for dur in durations:
                events.append(
                    {
                        "cat": "Node",
                        "name": f"{name}_kernel_time",
                        "ts": ts,
                        "dur": dur,
                        "args": {"op_name": op, "provider": "CPUExecutionProvider", "input_type_shape": shape},
                    }
                )
                ts += dur + 1
        events.append({"cat": "Session", "name": "model_run", "ts": start, "dur": ts - start})
        ts += 5
    return events


def test_profile_drops_the_cold_first_run():
    from dbench.runtimes.onnxruntime import parse_profile

    (node,) = parse_profile(_profile_events([{"Gemm_0": [100]}, {"Gemm_0": [10]}, {"Gemm_0": [12]}])).nodes
    assert node.time_us == 10 and node.precision == "fp32" and node.kernel == "Gemm:CPUExecutionProvider"
    assert node.calls == 1 and not node.container


def test_profile_drops_its_warm_up_runs_and_keeps_the_pass_time_per_call():
    """A fresh session's first calls are slow: every warm-up run is left out of node and pass times."""
    from dbench.runtimes.onnxruntime import parse_profile

    runs = [{"Gemm_0": [us]} for us in (3400, 5600, 2900, 1200, 1180, 1220)]
    profile = parse_profile(_profile_events(runs), warmup=3)
    (node,) = profile.nodes
    assert node.time_us == 1190  # the runs no slower than the median: 1200 and 1180
    assert profile.call_us == 1191  # their model_run spans: the node plus the fake events' 1 µs gaps


def test_node_times_add_up_within_the_pass_however_they_vary_between_runs():
    """Under load two nodes can be slow in different runs: per-node medians (10 + 10) would exceed every
    typical run (13 µs). Means over the same runs keep the sum inside their mean run, as each run's sum
    is inside that run, and the run preempted for both nodes (22 µs) is left out."""
    from dbench.runtimes.onnxruntime import parse_profile
    from dbench.store.schema import kernel_time

    runs = [
        {"Gemm_0": [1], "Gemm_1": [1]},
        {"Gemm_0": [10], "Gemm_1": [1]},
        {"Gemm_0": [10], "Gemm_1": [10]},
        {"Gemm_0": [1], "Gemm_1": [10]},
    ]
    profile = parse_profile(_profile_events(runs))
    assert kernel_time([vars(n) for n in profile.nodes]) == 11 and profile.call_us == 13


def test_a_real_profiling_pass_brackets_its_node_times(seed):
    """On ORT itself: the warm-up runs happen (one model_run each) and the node sum stays within the pass."""
    from dbench.store.invariants import violations
    from dbench.store.schema import kernel_time

    graph = conv.build(KERNEL, "fp32", "fwd")
    constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec, seed), "const")
    session = OrtCpu(RuntimeOptions(threads=1)).prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    profile = session.profile(3, warmup=4)
    nodes = [vars(n) for n in profile.nodes]
    kernel = kernel_time(nodes)
    assert profile.call_us is not None and 0 < kernel <= profile.call_us
    assert (
        violations(
            {
                "precision": "fp32",
                "precision_executed": "fp32",
                "kernel_time_us": kernel,
                "profile_call_us": profile.call_us,
                "nodes": nodes,
            }
        )
        == []
    )


def test_loop_body_events_are_summed_per_run_and_the_loop_is_a_container():
    """A Loop's body nodes log one event per iteration; the Loop's own input is its int64 trip count."""
    from dbench.runtimes.onnxruntime import parse_profile
    from dbench.store.schema import executed_precision, kernel_time

    run = {"Gemm_1": [2, 3, 2], "Loop_0": [40]}
    nodes = {n.name: n for n in parse_profile(_profile_events([run, run, run])).nodes}
    assert nodes["Gemm_1"].time_us == 7 and nodes["Gemm_1"].calls == 3 and nodes["Gemm_1"].precision == "fp32"
    assert nodes["Loop_0"].container and nodes["Loop_0"].precision == ""
    as_rows = [vars(n) for n in nodes.values()]
    assert executed_precision(as_rows) == "fp32"
    assert kernel_time(as_rows) is None  # per-iteration events: their sum would measure the profiler


def test_recurrence_graph_reports_fp32_and_no_kernel_time_above_its_median(tmp_path):
    """End to end on ORT: the Loop form of a vanilla RNN used to report int64 and 10-80x its median."""
    from dbench.cli import app

    result = CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            "inference",
            "--id",
            "rnn_vanilla_h64_*",
            "--rnn-form",
            "recurrence",
            "--quick",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    (log,) = tmp_path.glob("*/*.jsonl")
    (row,) = [json.loads(line) for line in log.read_text().splitlines()[1:] if '"type": "result"' in line]
    assert row["status"] == "ok" and row["precision_executed"] == "fp32" and not row["precision_fallback"]
    assert row["kernel_time_us"] is None and any(n["calls"] > 1 for n in row["nodes"])


def test_fp16_on_cpu_reports_the_fp32_it_really_ran(seed):
    """ORT CPU has no fp16 Conv: it inserts Casts and runs fp32. The profile must say so."""
    graph = conv.build(KERNEL, "fp16", "fwd")
    session = OrtCpu(RuntimeOptions()).prepare(graph.model, graph.spec, {})
    session.bind(make_feeds(graph.spec, seed))
    session.run()
    nodes = [vars(n) for n in session.profile(2).nodes]
    assert any(n["op_type"] == "Cast" for n in nodes)
    assert executed_precision(nodes) == "fp32"


def test_bf16_is_unsupported_with_the_runtime_message():
    graph = gemm.build(GemmKernel(m=4, n=4, k=4, a_t=False, b_t=False), "bf16", "fwd", "gemm")
    with pytest.raises(UnsupportedError, match="NOT_IMPLEMENTED"):
        OrtCpu(RuntimeOptions()).prepare(graph.model, graph.spec, {})


def test_registry_reports_what_each_runtime_says_of_itself():
    """Whatever this machine has (a GPU or not): every runtime's status is its availability, with a
    version when usable and, when not, the pip extra that installs it or (XNNPACK, ACL: in no PyPI
    wheel) the onnxruntime build flag that provides it."""
    assert {"ort-cpu", "ort-cuda", "ort-trt", "openvino"} <= set(RUNTIMES)
    for name in RUNTIMES:
        cls = runtime_class(name)
        usable, reason = cls.availability()
        shown = status(name)
        assert (shown.available, shown.reason) == (usable, reason)
        assert bool(shown.version) == usable
        assert (
            usable
            or f"dbench[{cls.extra}]" in reason
            or "build onnxruntime with --use_" in reason
            or f"it serves {getattr(cls, 'serves', None)}" in reason  # a plugin provider without its hardware
        )
        assert cls.int8_form in ("qlinear", "qdq", "integer")
    assert status("ort-cpu").available


@pytest.mark.gpu
def test_cuda_provider_runs_and_verifies(seed):
    ok, reason = runtime_class("ort-cuda").availability()
    if not ok:
        pytest.skip(f"no CUDA execution provider here: {reason}")
    graph = gemm.build(GemmKernel(m=64, n=32, k=48, a_t=True, b_t=False), "fp16", "fwd", "gemm")
    feeds = make_feeds(graph.spec, seed)
    session = runtime_class("ort-cuda")(RuntimeOptions()).prepare(graph.model, graph.spec, {})
    session.bind(feeds)
    session.run()
    assert normalized_error(session.outputs()["Y"], gemm.reference(graph.spec, feeds)["Y"]) < 1e-2
    assert executed_precision([vars(n) for n in session.profile(3).nodes]) == "fp16"
    assert session.device_memory() > 0


@pytest.mark.parametrize(
    "raised,expected,message",
    [
        (
            lambda s: s.RuntimeException(
                "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Exception during initialization: std::bad_alloc"
            ),
            OutOfMemory,
            "bad_alloc",
        ),
        (lambda s: MemoryError("std::bad_alloc"), OutOfMemory, "out of memory: std::bad_alloc"),
        (
            lambda s: s.NotImplemented("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation"),
            UnsupportedError,
            "NOT_IMPLEMENTED",
        ),
        (lambda s: s.InvalidGraph("[ONNXRuntimeError] : 10 : INVALID_GRAPH : bad"), GraphLoadError, "InvalidGraph"),
        (lambda s: s.Fail("[ONNXRuntimeError] : 1 : FAIL : something"), DbenchError, "FAIL : something"),
    ],
)
def test_ort_exceptions_are_classified_by_type(raised, expected, message):
    """ORT's own exception types (and MemoryError, std::bad_alloc at the Python boundary) become
    dbench's; only an allocation failure ORT reports as a plain RuntimeException is told by its text."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    with pytest.raises(expected, match=message) as caught:
        with classified():
            raise raised(state)
    assert type(caught.value) is expected
