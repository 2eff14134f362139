"""The OpenVINO adapter on the real OpenVINO CPU plugin: every family verified against its numpy
reference at shrunk sizes, the precision pinned (fp32 runs f32 kernels although this CPU's default is
bf16), kernel names and executed precision from the profile, bad input, and `dbench run` end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from dbench.catalog import ConvKernel, GemmKernel, RnnKernel, SparseKernel
from dbench.catalog.kernels import Origin
from dbench.check.verdict import compare
from dbench.cli import app
from dbench.errors import DbenchError, UnsupportedError, UsageError
from dbench.gen import conv, gemm
from dbench.gen.feeds import make_feeds
from dbench.gen.graph import Graph
from dbench.gen.options import GenOptions
from dbench.gen.plan import GraphRequest, build, plan, reference, tolerance
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import NodeProfile, RuntimeOptions
from dbench.runtimes.openvino import KERNEL_PRECISION, OpenVino, kernel_precision
from dbench.runtimes.registry import status
from dbench.store.schema import executed_precision
from tests.helpers import write_csv

CONV = ConvKernel(w=9, h=7, c=3, n=2, k=4, s=3, r=2, pad_w=1, pad_h=0, wstride=2, hstride=1)
GEMM = GemmKernel(m=64, n=32, k=48, a_t=True, b_t=False)
TRAIN = (Origin(suite="train", app="test", line=1),)


def capabilities() -> list[str]:
    import openvino

    return openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def execute(graph: Graph, seed: int, weights: str = "const", **options) -> tuple[OpenVino, list[NodeProfile], object]:
    """Prepare, bind, run, verify against the family's reference, and profile, as the worker does."""
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, weights)
    runtime = OpenVino(RuntimeOptions(threads=1, **options))
    session = runtime.prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    session.run()
    verdict = compare(session.outputs(), reference(graph.spec, feeds), tolerance(graph.spec))
    nodes = session.profile(5).nodes
    session.close()
    return runtime, nodes, verdict


def precision_of(nodes: list[NodeProfile]) -> str:
    return executed_precision([vars(n) for n in nodes])


def arithmetic_precision(nodes: list[NodeProfile]) -> str:
    """The precision of the graph's one arithmetic layer (the convolution or GEMM): on these shrunk shapes
    it takes about a microsecond, as long as the conversions around it, so the slowest layer, which the
    row's `precision_executed` names, can be either of them from one run to the next."""
    (layer,) = [n for n in nodes if n.op_type in ("Convolution", "FullyConnected", "MatMul")]
    return layer.precision


def compute(nodes: list[NodeProfile]) -> list[NodeProfile]:
    return [n for n in nodes if n.precision]


@pytest.mark.parametrize(
    "kernel,pass_name,form,weights",
    [
        (GEMM, "fwd", "gemm", "const"),
        (GEMM, "fwd", "gemm", "input"),
        (GEMM, "fwd", "matmul", "const"),
        (CONV, "fwd", "conv", "const"),
        (CONV, "bwd_data", "convtranspose", "input"),
        (CONV, "bwd_filter", "conv_dilated", "input"),
    ],
    ids=lambda v: v if isinstance(v, str) else v.family,
)
def test_fp32_gemm_and_conv_verify_and_run_f32_kernels(kernel, pass_name, form, weights, seed):
    graph = build(GraphRequest(kernel, "fp32", pass_name, form))
    runtime, nodes, verdict = execute(graph, seed, weights)
    assert verdict.ok, verdict
    assert compute(nodes) and all(n.kernel.endswith("_f32") and n.provider == "CPU" for n in compute(nodes))
    assert precision_of(nodes) == "fp32"
    heavy = max(compute(nodes), key=lambda n: n.time_us)
    assert heavy.op_type in ("FullyConnected", "MatMul", "Convolution", "ConvolutionBackpropData")
    compiled = runtime.describe()["compiled"]
    assert compiled["INFERENCE_PRECISION_HINT"] == "f32" and compiled["PERFORMANCE_HINT"] == "LATENCY"
    assert compiled["NUM_STREAMS"] == "1" and compiled["INFERENCE_NUM_THREADS"] == "1"
    assert compiled["PERF_COUNT"] == "NO"  # the timed model carries no counters; profiling compiles its own


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_constant_weights_are_constants_not_inputs(precision, seed):
    """`weights=const`: the weight parameters are replaced by Constants holding the arrays (no ONNX
    serialisation), so the compiled model's only inputs are the activations, and the answer holds."""
    if precision == "bf16" and "BF16" not in capabilities():
        pytest.skip("this CPU has no bf16")
    graph = conv.build(CONV, precision, "fwd")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    session = OpenVino(RuntimeOptions(threads=1)).prepare(graph.model, graph.spec, constants)
    assert [i.get_any_name() for i in session.compiled.inputs] == list(per_call) == ["X"]
    session.bind(per_call)
    session.run()
    assert compare(session.outputs(), reference(graph.spec, feeds), tolerance(graph.spec)).ok


def test_fp32_request_runs_f32_although_the_cpu_default_is_bf16(seed):
    """The precision lie this adapter exists to prevent: left alone, OpenVINO runs an fp32 graph in bf16."""
    if "BF16" not in capabilities():
        pytest.skip("this CPU has no bf16, so OpenVINO's default is already f32: nothing to pin against")
    graph = gemm.build(GEMM, "fp32", "fwd", "gemm")
    runtime, nodes, verdict = execute(graph, seed, allow_runtime_precision=True)
    assert runtime.describe()["device_default_precision"] == {"CPU": "bf16"}
    assert runtime.describe()["compiled"]["INFERENCE_PRECISION_HINT"] == "bf16"
    assert arithmetic_precision(nodes) == "bf16" and any(n.kernel.endswith("_bf16") for n in compute(nodes))
    pinned, nodes, verdict = execute(graph, seed)
    assert verdict.ok and verdict.error < 1e-5  # bf16 arithmetic would be ~1e-3 off
    assert precision_of(nodes) == "fp32" and not any("bf16" in n.kernel for n in nodes)
    assert pinned.describe()["compiled"]["INFERENCE_PRECISION_HINT"] == "f32"


def test_bf16_graph_runs_bf16_kernels_or_is_unsupported(seed):
    graph = gemm.build(GEMM, "bf16", "fwd", "gemm")
    if "BF16" not in capabilities():
        with pytest.raises(UnsupportedError, match="does not execute bf16"):
            execute(graph, seed)
        return
    _, nodes, verdict = execute(graph, seed)
    assert verdict.ok, verdict
    assert arithmetic_precision(nodes) == "bf16"


def test_fp16_without_f16_hardware_is_unsupported_unless_the_runtime_may_choose(seed):
    """OpenVINO turns an f16 hint into bf16 on this CPU without a word: dbench refuses, or with
    --allow-runtime-precision runs it and records what really ran."""
    graph = conv.build(CONV, "fp16", "fwd")
    if "FP16" in capabilities():
        _, nodes, verdict = execute(graph, seed)
        assert verdict.ok and arithmetic_precision(nodes) == "fp16"
        return
    with pytest.raises(UnsupportedError, match="does not execute fp16.*--allow-runtime-precision"):
        execute(graph, seed)
    runtime, nodes, verdict = execute(graph, seed, allow_runtime_precision=True)
    assert verdict.ok, verdict
    chosen = runtime.describe()["compiled"]["INFERENCE_PRECISION_HINT"]
    assert chosen != "f16" and arithmetic_precision(nodes) == KERNEL_PRECISION[chosen]


def test_auto_device_pins_the_precision_of_the_device_it_picks(seed):
    runtime, nodes, verdict = execute(gemm.build(GEMM, "fp32", "fwd", "gemm"), seed, device="AUTO")
    assert verdict.ok and precision_of(nodes) == "fp32"
    compiled = runtime.describe()["compiled"]
    assert (
        compiled["EXECUTION_DEVICES"] == "CPU" and compiled["DEVICE_PROPERTIES.CPU.INFERENCE_PRECISION_HINT"] == "f32"
    )
    if "FP16" not in capabilities():
        with pytest.raises(UnsupportedError, match="does not execute fp16"):
            execute(gemm.build(GEMM, "fp16", "fwd", "gemm"), seed, device="AUTO")


RNN_CASES = [
    (cell, pass_name, form)
    for cell in ("vanilla", "lstm", "gru")
    for pass_name, form in (("fwd", "op"), ("fwd", "recurrence"), ("bwd_weights", "bptt"))
]
RNN_CASES += [("gru", "fwd", "op_relu"), ("gru", "fwd", "recurrence_relu")]  # DeepBench README's ReLU candidate


@pytest.mark.parametrize("cell,pass_name,form", RNN_CASES)
def test_rnn_both_forms_and_bptt_verify(cell, pass_name, form, seed):
    kernel = RnnKernel(cell=cell, hidden=8, batch=2, timesteps=3, origins=TRAIN)
    graph = build(GraphRequest(kernel, "fp32", pass_name, form))
    _, nodes, verdict = execute(graph, seed, "const" if pass_name == "fwd" else "input")
    assert verdict.ok, verdict
    if form == "op":
        (layer,) = compute(nodes)
        assert layer.op_type.endswith("Sequence") and layer.kernel.endswith("_f32") and precision_of(nodes) == "fp32"
    else:
        # A Scan, or a GRU with a ReLU candidate (no oneDNN cell for it), becomes one TensorIterator/Loop
        # layer whose body is not profiled: no precision is claimed for it.
        loops = [n for n in nodes if n.op_type in ("TensorIterator", "Loop")]
        assert loops and all(n.precision == "" for n in loops)
        assert all(n.kernel.endswith("_f32") for n in compute(nodes))


@pytest.mark.parametrize(
    "kernel",
    [
        GemmKernel(m=16, n=8, k=32, a_t=False, b_t=False),
        ConvKernel(w=9, h=7, c=4, n=2, k=8, s=3, r=2, pad_w=1, pad_h=0, wstride=2, hstride=1),
    ],
    ids=["gemm", "conv"],
)
def test_int8_qdq_runs_int8_kernels_and_verifies(kernel, seed):
    (request,) = plan([kernel], (), GenOptions(precision="int8", int8_form=OpenVino.int8_form))
    _, nodes, verdict = execute(build(request), seed)
    assert verdict.ok, verdict
    (layer,) = [n for n in nodes if n.op_type in ("FullyConnected", "Convolution")]
    assert layer.kernel.lower().endswith(("_i8", "_u8")) and layer.precision == "int8"
    # The (de)quantising element-wise layers around it are conversions, not the kernel's math.
    assert [n.kernel for n in compute(nodes)] == [layer.kernel] and precision_of(nodes) == "int8"


@pytest.mark.parametrize("form", ["sparse", "dense"])
def test_sparse_verifies(form, seed):
    kernel = SparseKernel(m=32, n=8, k=16, a_t=False, b_t=False, sparsity=0.9)
    graph = build(GraphRequest(kernel, "fp32", "fwd", form))
    _, nodes, verdict = execute(graph, seed)
    assert verdict.ok, verdict
    assert precision_of(nodes) == "fp32"


@pytest.mark.parametrize(
    "node_type,exec_type,fused,precision",
    [
        ("FullyConnected", "brgemm_avx512_bf16", (), "bf16"),
        ("Convolution", "brgconv_avx512_I8", (), "int8"),
        ("FullyConnected", "gemm_mlas_f32", (), "fp32"),
        ("Reorder", "jit_uni_f32", (), ""),
        ("Subgraph", "jit_avx512_f16", ("Convert_3673",), ""),  # a Convert OpenVINO inserted
        ("Subgraph", "jit_avx512_f32", ("quantize_x", "Convert_11902"), ""),  # the graph's QuantizeLinear
        ("Subgraph", "jit_avx512_f32", ("Convert_3674", "Y", "Y.0"), "fp32"),  # a Convert fused into the Gemm's + C
        ("TensorIterator", "unknown_i32", (), ""),
    ],
)
def test_kernel_names_give_the_precision(node_type, exec_type, fused, precision):
    sources = {"quantize_x": "QuantizeLinear", "Y": "Gemm"}
    assert kernel_precision(node_type, exec_type, fused, sources) == precision


def _layers(us: float) -> list:
    from datetime import timedelta
    from types import SimpleNamespace

    import openvino

    return [
        SimpleNamespace(
            node_name="mm",
            node_type="FullyConnected",
            exec_type="brgemm_avx512_f32",
            status=openvino.ProfilingInfo.Status.EXECUTED,
            real_time=timedelta(microseconds=us),
        )
    ]


def test_cpu_profile_is_a_running_average_whose_cold_first_run_is_taken_out():
    """OpenVINO's CPU plugin reports the average over all runs since compile: a cold 70 µs run then
    four of 10 µs read 70, 40, 30, 25, 22. The warm runs' time is 10, not a median of averages (27.5)."""
    from dbench.runtimes.openvino import parse_profile

    (node,) = parse_profile([_layers(us) for us in (70, 40, 30, 25, 22)], "CPU", {}, {}).nodes
    assert node.time_us == pytest.approx(10) and node.precision == "fp32" and node.kernel == "brgemm_avx512_f32"


def test_cpu_running_average_leaves_out_every_warm_up_run():
    """Three warm-up runs (70, 10, 10 µs) then two of 10 µs: averages 70, 40, 30 | 25, 22; read from
    the third on, the later runs' mean is (5 * 22 - 3 * 30) / 2 = 10."""
    from dbench.runtimes.openvino import parse_profile

    profile = parse_profile([_layers(us) for us in (30, 25, 22)], "CPU", {}, {}, warmup=3, latencies_us=[12.0, 14.0])
    (node,) = profile.nodes
    assert node.time_us == pytest.approx(10) and profile.call_us == 13.0


def test_a_real_profiling_pass_brackets_its_layer_times(seed):
    """On OpenVINO itself: the layer times of a pass (whole-µs running averages) sum to within the
    request's own latency, as the row invariant requires. A GEMM of some 50 µs: the test's tiny GEMM takes
    under a microsecond a layer on an AVX-512 core, which whole-µs averages report as 0."""
    from dbench.store.invariants import violations
    from dbench.store.schema import kernel_time

    graph = gemm.build(GemmKernel(m=256, n=128, k=256, a_t=True, b_t=False), "fp32", "fwd")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    session = OpenVino(RuntimeOptions(threads=1)).prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    profile = session.profile(3, warmup=6)
    session.close()
    nodes = [vars(n) for n in profile.nodes]
    assert profile.call_us is not None and kernel_time(nodes) > 0
    assert (
        violations(
            {
                "precision": "fp32",
                "precision_executed": "fp32",
                "kernel_time_us": kernel_time(nodes),
                "profile_call_us": profile.call_us,
                "nodes": nodes,
            }
        )
        == []
    )


class _Counting:
    """A proxy counting one OpenVINO object's calls to `infer` (and handing out counted requests)."""

    def __init__(self, target, counter: list[int]) -> None:
        self.target, self.counter = target, counter

    def create_infer_request(self):
        return _Counting(self.target.create_infer_request(), self.counter)

    def infer(self, *args, **kwargs):
        self.counter.append(1)
        return self.target.infer(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.target, name)


def test_a_profiling_pass_never_exceeds_its_runs(seed, monkeypatch):
    """--profile-runs is a cap: on the CPU plugin (running averages) the warm-up shrinks to the runs
    instead of the runs growing to the warm-up, so a pass asked for 3 runs after 50 warm-up calls makes 6 calls."""
    graph = gemm.build(GEMM, "fp32", "fwd")
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    runtime = OpenVino(RuntimeOptions(threads=1))
    session = runtime.prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    calls: list[int] = []
    compile_model = runtime.compile
    monkeypatch.setattr(runtime, "compile", lambda *args, **kwargs: _Counting(compile_model(*args, **kwargs), calls))
    profile = session.profile(3, warmup=50)
    session.close()
    assert len(calls) == 6 and profile.call_us is not None


def test_per_run_profile_of_another_device_drops_the_cold_first_run():
    from dbench.runtimes.openvino import parse_profile

    (node,) = parse_profile([_layers(us) for us in (100, 10, 12)], "GPU.0", {}, {}).nodes
    assert node.time_us == 11


def test_per_run_profile_leaves_out_a_preempted_run_by_its_latency():
    """A device that reports per run: the run whose request took 40 µs (preempted) is left out of the
    layer's time and of the time per call alike, as on ONNX Runtime and TensorRT."""
    from dbench.runtimes.openvino import parse_profile

    profile = parse_profile([_layers(us) for us in (100, 10, 35, 12)], "GPU.0", {}, {}, latencies_us=[11.0, 40.0, 13.0])
    (node,) = profile.nodes
    assert node.time_us == 11 and profile.call_us == 12


def test_cpu_plugin_still_reports_running_averages():
    """The premise of the rule above, checked on this OpenVINO: the counters belong to the compiled
    model and accumulate over its runs, so a request that never ran reports the earlier runs' times."""
    import numpy as np
    import openvino

    graph = gemm.build(GEMM, "fp32", "fwd")
    core = openvino.Core()
    model = core.read_model(graph.model.SerializeToString(), openvino.Tensor(np.empty(0, dtype=np.uint8)))
    compiled = core.compile_model(model, "CPU", {"PERF_COUNT": "YES", "INFERENCE_PRECISION_HINT": "f32"})

    def layer_times(request) -> dict[str, float]:
        return {
            layer.node_name: layer.real_time.total_seconds()
            for layer in request.get_profiling_info()
            if layer.status == openvino.ProfilingInfo.Status.EXECUTED
        }

    ran = compiled.create_infer_request()
    for _ in range(3):
        ran.infer(make_feeds(graph.spec, 0))
    never_ran = compiled.create_infer_request()
    assert layer_times(ran) and layer_times(never_ran) == layer_times(ran)


def test_unknown_device_lists_the_devices_openvino_sees():
    with pytest.raises(DbenchError, match=r"device 'NOSUCH' is not available here; devices OpenVINO sees: CPU"):
        OpenVino(RuntimeOptions(device="NOSUCH")).describe()


def test_graph_openvino_cannot_compile_is_unsupported_with_its_message():
    graph = gemm.build(GemmKernel(m=8, n=4, k=4, a_t=False, b_t=False), "fp32", "fwd", "matmul")
    model = onnx.ModelProto()
    model.CopyFrom(graph.model)
    model.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(UnsupportedError, match="OpenVINO cannot compile this graph on CPU: .*NoSuchOp"):
        OpenVino(RuntimeOptions()).prepare(model, graph.spec, {})


def test_precision_hint_option_needs_allow_runtime_precision():
    with pytest.raises(UsageError, match="--allow-runtime-precision"):
        OpenVino.validate(RuntimeOptions(extra={"INFERENCE_PRECISION_HINT": "bf16"}))


def test_missing_openvino_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "openvino", None)  # what `import openvino` sees when it is not installed
    assert OpenVino.availability() == (False, "openvino is not installed: pip install 'dbench[openvino]'")
    assert not status("openvino").available
    result = CliRunner().invoke(app, ["run", "--runtime", "openvino", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "pip install 'dbench[openvino]'" in result.output


def rows_of(out: Path) -> list[dict]:
    (log,) = out.glob("*/*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()[1:] if '"type": "result"' in line]


@pytest.mark.slow
def test_dbench_run_on_openvino_end_to_end(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "32,8,32,1,0", "48,8,32,0,1")
    out = tmp_path / "res"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--runtime",
            "openvino",
            "--kernels",
            str(kernels),
            "--quick",
            "--profile-runs",
            "2",
            "--threads",
            "1",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = rows_of(out)
    assert len(rows) == 3
    for row in rows:
        assert row["status"] == "ok" and row["verified"] is True, row["message"]
        assert row["precision_executed"] == "fp32" and not row["precision_fallback"]
        assert row["runtime"] == "openvino" and row["median_us"] > 0
        kernels_run = [n["kernel"] for n in row["nodes"] if n["precision"]]
        assert kernels_run and all(k.endswith("_f32") for k in kernels_run)
        assert all(n["provider"] == "CPU" for n in row["nodes"])
        options = row["runtime_options"]
        assert options["config"]["PERFORMANCE_HINT"] == "LATENCY" and options["config"]["NUM_STREAMS"] == "1"
        assert options["config"]["INFERENCE_NUM_THREADS"] == "1" and options["inference_precision"].startswith("pinned")
        # What the compiled model reported, per graph, in the worker (not only what was asked).
        assert options["compiled"]["INFERENCE_PRECISION_HINT"] == "f32" and options["compiled"]["PERF_COUNT"] == "NO"


@pytest.mark.slow
def test_dbench_run_with_an_unknown_device_is_one_line(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0")
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--runtime",
            "openvino",
            "--device",
            "GPU",
            "--kernels",
            str(kernels),
            "--quick",
            "--out",
            str(tmp_path / "res"),
        ],
    )
    assert result.exit_code == 1
    assert (
        "device 'GPU' is not available here; devices OpenVINO sees: CPU" in result.output
        and "Traceback" not in result.output
    )


def test_graph_input_nothing_reads_is_fed_to_openvino_without_error(seed):
    """OpenVINO removes a graph input no node reads; binding every feed by name used to fail with
    "Port for tensor name ... was not found" (a T = 1 GRU backward graph, or a user's graph)."""
    from onnx import helper

    from dbench.gen.graph import GraphSpec, TensorSpec, make_model

    a = TensorSpec("A", (3, 4), "float32", "activation")
    unused = TensorSpec("U", (2,), "float32", "activation")
    y = TensorSpec("Y", (3, 4), "float32", "activation")
    model = make_model("relu", [helper.make_node("Relu", ["A"], ["Y"])], [a], [y])
    model.graph.input.append(unused.value_info())  # as a user's graph may; dbench's generators refuse to
    spec = GraphSpec(
        id="relu.fwd.op.fp32",
        kernel_id="relu",
        family="test",
        op="relu",
        params={},
        suites=(),
        apps=(),
        pass_name="fwd",
        form="op",
        precision="fp32",
        flops=0,
        flops_executed=0,
        inputs=(a, unused),
        outputs=(y,),
        seed=seed,
    )
    feeds = make_feeds(spec, seed)
    session = OpenVino(RuntimeOptions()).prepare(model, spec, {})
    session.bind(feeds)
    session.run()
    np.testing.assert_array_equal(session.outputs()["Y"], np.maximum(feeds["A"], 0))
