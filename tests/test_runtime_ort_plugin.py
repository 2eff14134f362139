"""ONNX Runtime's plugin execution providers: ort-openvino (the `onnxruntime-ep-openvino` wheel, in the
test extra on x86-64 Linux) and ort-trt-rtx. Here: the plugin registered by its package, the devices it
offers or the reason it offers none, the precision pin and thread options, where nodes ran read from a
real profile, a fully fallen-back graph refused, the listing and the one-line refusal. Real sessions
through the plugin run where it offers a device (an Intel CPU) and skip elsewhere with its reason."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from dbench.catalog import GemmKernel
from dbench.errors import UnsupportedError, UsageError
from dbench.gen import gemm
from dbench.gen.feeds import make_feeds
from dbench.gen.graph import GraphSpec, TensorSpec
from dbench.gen.weights import split_feeds
from dbench.render.tables import placed_cell
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.onnxruntime import OrtCpu
from dbench.runtimes.ort_openvino import OrtOpenVino
from dbench.runtimes.ort_plugin import ep_devices, fell_back_entirely, placement, register
from dbench.runtimes.ort_trt_rtx import COMPUTE_CAPABILITIES, OrtTrtRtx, capability_problem
from dbench.runtimes.registry import status
from tests.helpers import normalized_error

REPO = Path(__file__).resolve().parents[1]
OPENVINO = "OpenVINOExecutionProvider"
INTEL = 0x8086
SMALL_GEMM = GemmKernel(m=24, n=16, k=32, a_t=False, b_t=False)


def plugin_installed() -> None:
    """Skip where the OpenVINO plugin has no wheel (it is built for x86-64 Linux and Windows only)."""
    pytest.importorskip("onnxruntime_ep_openvino", reason="onnxruntime-ep-openvino has no wheel for this platform")


def openvino_usable() -> None:
    """Skip, with the adapter's own reason, where the plugin offers no device (a non-Intel CPU)."""
    plugin_installed()
    ok, reason = OrtOpenVino.availability()
    if not ok:
        pytest.skip(f"ort-openvino cannot run here: {reason}")


def test_the_openvino_plugin_registers_by_its_package_and_offers_only_intel_devices():
    """The library is found by the package's own get_library_path and registered once per process; its
    devices are those of the Intel hardware ONNX Runtime found (none on another vendor's CPU)."""
    plugin_installed()
    import onnxruntime as ort

    assert register("onnxruntime_ep_openvino") == (OPENVINO,)
    assert register("onnxruntime_ep_openvino") == (OPENVINO,)  # a second call does not register again
    devices = ep_devices(OPENVINO)
    intel = [d for d in ort.get_ep_devices() if d.ep_name == "CPUExecutionProvider" and d.device.vendor_id == INTEL]
    assert bool(devices) == bool(intel) or any(d.device.type.name != "CPU" for d in devices)
    assert all(d.ep_metadata.get("ov_device") for d in devices)
    ok, reason = OrtOpenVino.availability()
    assert ok == bool(devices)
    if not ok:
        assert reason.startswith("onnxruntime-ep-openvino offers no device on this machine (ONNX Runtime found: CPU")
        assert "it serves Intel CPUs, GPUs and NPUs only" in reason


def test_a_plugin_package_that_is_not_installed_is_named_with_its_extra():
    class Missing(OrtOpenVino):
        plugin_module = "dbench_no_such_plugin"
        plugin_distribution = "dbench-no-such-plugin"

    assert Missing.availability() == (
        False,
        "dbench-no-such-plugin is not installed: pip install 'dbench[ort-openvino]'",
    )


def test_both_plugin_runtimes_are_listed_with_their_extras_and_reasons():
    openvino, rtx = status("ort-openvino"), status("ort-trt-rtx")
    assert (openvino.extra, rtx.extra) == ("ort-openvino", "ort-trt-rtx")
    assert (openvino.available, openvino.reason) == OrtOpenVino.availability()
    problem = capability_problem()
    if problem:  # no NVIDIA GPU, or one outside TensorRT-RTX's compute capabilities: said before the package
        assert (rtx.available, rtx.reason) == (False, f"{problem}; it serves {OrtTrtRtx.serves}")
    result = subprocess.run(
        [sys.executable, "-m", "dbench", "runtimes"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "300"},
    )
    assert result.returncode == 0
    assert "ort-openvino" in result.stdout and "ort-trt-rtx" in result.stdout


def test_trt_rtx_serves_only_the_rtx_compute_capabilities():
    assert COMPUTE_CAPABILITIES == ("7.5", "8.6", "8.9", "12.0")
    assert "9.0" not in COMPUTE_CAPABILITIES  # a data-center Hopper (H100, H200) is refused by its capability


@pytest.mark.parametrize("name", ["ort-openvino", "ort-trt-rtx"])
def test_dbench_run_on_an_unusable_plugin_runtime_fails_fast_with_the_reason(name, tmp_path):
    usable, reason = status(name).available, status(name).reason
    if usable:
        pytest.skip(f"{name} is usable here")
    result = subprocess.run(
        [sys.executable, "-m", "dbench", "run", "--runtime", name, "--suite", "inference-device", "--ops", "gemm"]
        + ["--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode != 0
    assert (result.stdout + result.stderr).strip().splitlines() == [
        f"error: runtime {name} is not usable here: {reason}"
    ]
    assert not list(tmp_path.rglob("*.jsonl"))


def test_precision_and_threads_go_to_openvino_through_the_plugins_load_config():
    """The plugin reads OpenVINO properties from load_config and ignores the older provider's
    `precision` and `num_of_threads`: the pin is INFERENCE_PRECISION_HINT f32 there."""
    pinned = OrtOpenVino(RuntimeOptions(threads=3))
    assert json.loads(pinned.provider_options()["load_config"]) == {
        "CPU": {"INFERENCE_NUM_THREADS": "3", "NUM_STREAMS": "1", "INFERENCE_PRECISION_HINT": "f32"}
    }
    assert list(pinned.provider_options()) == ["load_config"]
    assert [pinned.provider_precision(p) for p in ("fp32", "fp16", "int8")] == ["fp32", "fp32", ""]
    free = OrtOpenVino(RuntimeOptions(threads=2, device="GPU.1", allow_runtime_precision=True))
    assert json.loads(free.provider_options()["load_config"]) == {
        "GPU.1": {"INFERENCE_NUM_THREADS": "2", "NUM_STREAMS": "1"}
    }
    assert free.provider_precision("fp32") == ""
    chosen = RuntimeOptions(threads=1, allow_runtime_precision=True, extra={"INFERENCE_PRECISION_HINT": "bf16"})
    assert OrtOpenVino(chosen).properties()["INFERENCE_PRECISION_HINT"] == "bf16"
    assert OrtOpenVino(chosen).provider_precision("fp32") == ""
    arena = OrtOpenVino(RuntimeOptions(threads=1, extra={"use_arena": "0", "ENABLE_CPU_PINNING": "NO"}))
    assert "use_arena" not in arena.properties() and arena.cpu_mem_arena is False  # a CPU provider session option
    assert arena.properties()["ENABLE_CPU_PINNING"] == "NO"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (RuntimeOptions(extra={"INFERENCE_PRECISION_HINT": "f16"}), "overrides the precision dbench pins"),
        (RuntimeOptions(device="VPU"), "--device VPU is not an OpenVINO device"),
        (RuntimeOptions(extra={"precision": "FP32"}), "--option precision is not a OpenVINOExecutionProvider option"),
        (RuntimeOptions(extra={"use_arena": "2"}), "--option use_arena=2 is not valid"),
        (RuntimeOptions(extra={"NUM_STREAMS": "many"}), "--option NUM_STREAMS=many is not valid"),
    ],
)
def test_bad_options_are_refused_in_one_line(options, words):
    with pytest.raises(UsageError, match=words):
        OrtOpenVino.validate(options)
    OrtOpenVino.validate(
        RuntimeOptions(device="GPU.1", allow_runtime_precision=True, extra={"INFERENCE_PRECISION_HINT": "f16"})
    )


def test_placement_from_a_real_profile_and_a_graph_that_fell_back_entirely(seed):
    """Where ONNX Runtime ran each node, read from its profile: a session on the CPU provider alone
    places every node there, which for a plugin runtime means its provider took none: refused."""
    graph = gemm.build(SMALL_GEMM, "fp32", "fwd", "gemm")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    session = OrtCpu(RuntimeOptions(threads=1)).prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    nodes = session.profile(2).nodes
    split = placement(nodes)
    assert list(split) == ["CPUExecutionProvider"] and split["CPUExecutionProvider"] == [n.name for n in nodes]
    reason = fell_back_entirely(split, OPENVINO)
    assert reason.startswith(f"{OPENVINO} took none of this graph's nodes")
    assert f"CPUExecutionProvider: {len(nodes)}" in reason
    assert fell_back_entirely(split, "CPUExecutionProvider") is None
    assert placed_cell({OPENVINO: ["subgraph"], "CPUExecutionProvider": ["a", "b"]}) == "OpenVINO 1 · [yellow]CPU 2[/]"
    assert placed_cell(split) == f"CPU {len(nodes)}"


def _gemm_session(runtime, seed, weights="const"):
    graph = gemm.build(SMALL_GEMM, "fp32", "fwd", "gemm")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, weights)
    session = runtime.prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    session.run()
    return session, gemm.reference(graph.spec, feeds)


@pytest.mark.parametrize("weights", ["const", "input"])
def test_a_gemm_runs_through_the_plugin_verified_on_openvino_in_fp32(weights, seed):
    openvino_usable()
    runtime = OrtOpenVino(RuntimeOptions(threads=1))
    session, reference = _gemm_session(runtime, seed, weights)
    (name,) = reference
    assert normalized_error(session.outputs()[name], reference[name]) < 1e-5
    assert list(runtime.split) == [OPENVINO], "a GEMM is OpenVINO's whole"
    described = runtime.describe()
    assert json.loads(described["provider_options"]["load_config"])["CPU"]["INFERENCE_PRECISION_HINT"] == "f32"
    assert described["placement"] == runtime.split
    nodes = session.profile(2).nodes
    assert {n.provider for n in nodes} == {OPENVINO} and {n.precision for n in nodes} == {"fp32"}


def test_without_the_pin_the_providers_precision_is_not_claimed(seed):
    openvino_usable()
    session, _ = _gemm_session(OrtOpenVino(RuntimeOptions(threads=1, allow_runtime_precision=True)), seed)
    assert {n.precision for n in session.profile(2).nodes if n.provider == OPENVINO} == {""}


def _spec(inputs: dict[str, tuple[int, ...]], outputs: dict[str, tuple[int, ...]]) -> GraphSpec:
    """A small GEMM's spec with these fp32 inputs and outputs (a hand-made graph's)."""
    tensors = [
        tuple(TensorSpec(n, shape, "float32", "activation") for n, shape in t.items()) for t in (inputs, outputs)
    ]
    return dataclasses.replace(gemm.build(SMALL_GEMM, "fp32").spec, inputs=tensors[0], outputs=tensors[1])


def _matmul_then_ml_normalizer() -> tuple[onnx.ModelProto, GraphSpec]:
    """A MatMul (OpenVINO's) followed by ai.onnx.ml's Normalizer, which ONNX Runtime's CPU provider has
    and OpenVINO's ONNX frontend does not take."""
    nodes = [
        helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul"),
        helper.make_node("Normalizer", ["c"], ["y"], name="normalizer", domain="ai.onnx.ml", norm="MAX"),
    ]
    graph = helper.make_graph(
        nodes,
        "fallback",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [6, 8]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [8, 5]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    return model, _spec({"a": (6, 8), "b": (8, 5)}, {"y": (6, 5)})


def test_a_node_the_provider_does_not_take_falls_back_to_the_cpu_and_the_row_says_so():
    openvino_usable()
    model, spec = _matmul_then_ml_normalizer()
    rng = np.random.default_rng()
    a, b = rng.standard_normal((6, 8), dtype=np.float32), rng.standard_normal((8, 5), dtype=np.float32)
    runtime = OrtOpenVino(RuntimeOptions(threads=1))
    session = runtime.prepare(model, spec, {})
    session.bind({"a": a, "b": b})
    session.run()
    c = a.astype(np.float64) @ b
    expected = c / np.abs(c).max(axis=1, keepdims=True)
    assert normalized_error(session.outputs()["y"], expected) < 1e-5
    assert set(runtime.split) == {OPENVINO, "CPUExecutionProvider"}
    assert runtime.split["CPUExecutionProvider"] == ["normalizer"]


def test_a_graph_the_provider_takes_none_of_is_unsupported():
    openvino_usable()
    node = helper.make_node("Normalizer", ["x"], ["y"], name="normalizer", domain="ai.onnx.ml", norm="L1")
    graph = helper.make_graph(
        [node],
        "cpu-only",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    spec = _spec({"x": (3, 4)}, {"y": (3, 4)})
    with pytest.raises(UnsupportedError, match=f"{OPENVINO} took none of this graph's nodes"):
        OrtOpenVino(RuntimeOptions(threads=1)).prepare(model, spec, {})


@pytest.mark.gpu
def test_trt_rtx_runs_a_gemm_verified_on_an_rtx_gpu(seed):
    ok, reason = OrtTrtRtx.availability()
    if not ok:
        pytest.skip(f"ort-trt-rtx cannot run here: {reason}")
    runtime = OrtTrtRtx(RuntimeOptions(threads=1))
    session, reference = _gemm_session(runtime, seed)
    (name,) = reference
    assert normalized_error(session.outputs()[name], reference[name]) < 1e-3
    assert "NvTensorRTRTXExecutionProvider" in runtime.split


class CpuThroughPluginPath(OrtOpenVino):
    """The plugin adapter's whole path (library registered, device attached by add_provider_for_devices,
    the profiled placement call, the provider's precision on its nodes, concurrent requests) with the
    one provider whose device every machine offers: ONNX Runtime's CPU provider."""

    provider = "CPUExecutionProvider"

    def select_device(self, devices):
        return devices[0]

    def provider_options(self):
        return {}


def test_the_plugin_path_runs_end_to_end_on_the_device_api_with_the_cpu_providers_device(seed):
    plugin_installed()
    runtime = CpuThroughPluginPath(RuntimeOptions(threads=1))
    session, reference = _gemm_session(runtime, seed)
    (name,) = reference
    assert normalized_error(session.outputs()[name], reference[name]) < 1e-5
    assert list(runtime.split) == ["CPUExecutionProvider"] and runtime.split["CPUExecutionProvider"]
    assert runtime.describe()["placement"] == runtime.split
    nodes = session.profile(2).nodes
    assert {n.provider for n in nodes} == {"CPUExecutionProvider"}
    assert {n.precision for n in nodes} == {"fp32"}, "the provider's nodes carry the precision its option pins"
    graph = gemm.build(SMALL_GEMM, "fp32", "fwd", "gemm")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    concurrent = runtime.prepare_concurrent(graph.model, graph.spec, constants, 2)
    concurrent.bind(per_call)
    for request in (0, 1):
        concurrent.run(request)
        assert normalized_error(concurrent.outputs(request)[name], reference[name]) < 1e-5
    assert runtime.describe()["concurrency"]["requests"] == 2


@pytest.mark.parametrize("name", ["ort-openvino", "ort-trt-rtx"])
def test_predict_refuses_a_plugin_runtime_with_its_reason(name, tmp_path):
    """A compiled subgraph is one fused node to ONNX Runtime: no executed layers to cut a model into."""
    from dbench.orchestrator.predict import check_predictable
    from dbench.orchestrator.request import RunRequest
    from dbench.runtimes.registry import runtime_class

    model = tmp_path / "model.onnx"
    onnx.save(gemm.build(SMALL_GEMM, "fp32").model, model)
    with pytest.raises(UsageError, match=f"runtime {name} cannot tell which layers it executes"):
        check_predictable(RunRequest(graphs=str(model), runtime=name), {name: runtime_class(name)})


@pytest.mark.parametrize("width", [80, 160])
def test_the_run_table_shows_where_the_nodes_ran_only_where_a_row_has_a_placement(width):
    from io import StringIO

    from rich.console import Console

    from dbench.render.tables import results_table

    row = {"graph_id": "gemm_m24_n16_k32_nn.fwd.gemm.fp32", "status": "ok", "precision": "fp32", "verified": True}
    split = {OPENVINO: ["subgraph"], "CPUExecutionProvider": ["normalizer"]}

    def shown(rows):
        console = Console(file=StringIO(), width=width, color_system=None)
        console.print(results_table(rows, "t", width))
        return console.file.getvalue()

    assert "placed" not in shown([row])
    text = shown([row, {**row, "placement": split}])
    assert "placed" in text and "OpenVINO 1 · CPU 1" in text
    assert max(len(line) for line in text.splitlines()) <= width
