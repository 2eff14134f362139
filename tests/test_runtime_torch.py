"""The torch runtime (PyTorch on the CPU) and, CPU-side, torch-cuda: every family built from its
specification, verified on fresh inputs against dbench's numpy reference, the profile and the
precision it reports, the settings pinned, the refusals; `gpu`-marked: the same on a GPU, device-timed
with and without a CUDA graph (skipped here with the probe's reason)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from dbench.catalog.kernels import ConvKernel, GemmKernel, RnnKernel, SparseKernel
from dbench.check.verdict import compare
from dbench.errors import DbenchError, UnsupportedError, UsageError
from dbench.gen import conv, gemm, rnn, sparse
from dbench.gen.feeds import make_feeds
from dbench.gen.graph import Graph
from dbench.gen.plan import reference, tolerance
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import runtime_class
from dbench.runtimes.torch import TorchCpu, TorchCuda, installed_cuda_version, torch_cuda_problem
from dbench.runtimes.torch_profile import precision_of
from dbench.runtimes.torch_rnn import reorder_gates
from dbench.store.schema import executed_precision, kernel_time
from dbench.worker import main as worker
from dbench.worker.timing import QUICK

torch = pytest.importorskip("torch", reason="torch is not installed: pip install -e '.[test]' installs the CPU build")

REPO = Path(__file__).resolve().parents[1]
CONV = ConvKernel(w=9, h=7, c=4, n=2, k=6, s=3, r=2, pad_w=1, pad_h=0, wstride=2, hstride=1)
GROUPED = ConvKernel(w=9, h=7, c=4, n=2, k=6, s=3, r=3, pad_w=1, pad_h=1, wstride=1, hstride=1, groups=2, dil_w=2)
SPARSE = SparseKernel(m=20, n=7, k=33, a_t=False, b_t=False, sparsity=0.9)


def _graphs(precision: str) -> dict[str, Graph]:
    """One shrunk graph of every float family, pass and form."""
    graphs = {
        f"gemm_{a}{b}": gemm.build(GemmKernel(m=20, n=7, k=33, a_t=a == "t", b_t=b == "t"), precision, "fwd", "gemm")
        for a in "nt"
        for b in "nt"
    }
    graphs["gemm_batched"] = gemm.build(
        GemmKernel(m=20, n=7, k=33, a_t=False, b_t=False, batch=3), precision, "fwd", "matmul"
    )
    graphs |= {f"conv_{p}": conv.build(CONV, precision, p) for p in ("fwd", "bwd_data", "bwd_filter")}
    graphs["conv_grouped_dilated"] = conv.build(GROUPED, precision, "fwd")
    graphs |= {f"sparse_{form}": sparse.build(SPARSE, precision, "fwd", form) for form in ("sparse", "dense")}
    for cell in ("vanilla", "lstm", "gru"):
        kernel = RnnKernel(cell=cell, hidden=8, batch=3, timesteps=5)
        forms = ("recurrence",) if precision == "bf16" else ("op", "recurrence")  # ONNX's RNN ops have no bf16
        graphs |= {f"{cell}_{form}": rnn.build(kernel, precision, "fwd", form) for form in forms}
        graphs[f"{cell}_bptt"] = rnn.build(kernel, precision, "bwd_weights", "bptt")
    graphs["gru_recurrence_relu"] = rnn.build(
        RnnKernel(cell="gru", hidden=8, batch=3, timesteps=4),
        precision,
        "fwd",
        "recurrence_relu",
        gru_activation="relu",
    )
    graphs["gru_bptt_relu"] = rnn.build(
        RnnKernel(cell="gru", hidden=8, batch=3, timesteps=4),
        precision,
        "bwd_weights",
        "bptt_relu",
        gru_activation="relu",
    )
    graphs["lstm_bptt_t1"] = rnn.build(
        RnnKernel(cell="lstm", hidden=8, batch=3, timesteps=1), precision, "bwd_weights", "bptt"
    )
    return graphs


def _run(runtime, graph: Graph, seed: int, weights: str = "const"):
    """Prepare, bind, run twice, read outputs, profile: (verdict, profile, outputs)."""
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, weights)
    with runtime.errors():
        session = runtime.prepare(graph.model, graph.spec, constants)
        session.bind(per_call)
        session.run()
        session.run()
        outputs = session.outputs()
        profile = session.profile(3, 1)
        session.close()
    return compare(outputs, reference(graph.spec, feeds), tolerance(graph.spec)), profile, outputs


CPU_UNSUPPORTED = {("sparse_sparse", "fp16"), ("sparse_sparse", "bf16")}
"""PyTorch's CPU CSR product (MKL) has no fp16 or bf16 kernel: these must be refused, not mismatched."""


@pytest.mark.parametrize("weights", ["const", "input"])
@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_every_float_family_verifies_in_its_own_precision(precision, weights, seed):
    runtime = TorchCpu(RuntimeOptions(threads=1))
    for name, graph in _graphs(precision).items():
        if (name, precision) in CPU_UNSUPPORTED:
            with pytest.raises(UnsupportedError, match="not implemented for"):
                _run(runtime, graph, seed, weights)
            continue
        verdict, profile, outputs = _run(runtime, graph, seed, weights)
        assert verdict.ok, f"{name}: error {verdict.error:.3g} > {verdict.bound}"
        assert {k: v.shape for k, v in outputs.items()} == {t.name: t.shape for t in graph.spec.outputs}
        nodes = [asdict(n) for n in profile.nodes]
        assert executed_precision(nodes) == precision, name
        summed = kernel_time(nodes)
        assert summed is None or summed <= profile.call_us, (
            f"{name}: nodes {summed} us outside their call {profile.call_us} us"
        )


@pytest.mark.parametrize("form", ["qlinear", "qdq"])
@pytest.mark.parametrize("family", ["gemm", "conv"])
@pytest.mark.parametrize("weights", ["const", "input"])
def test_int8_runs_on_the_quantized_engine_bit_exact(family, form, weights, seed):
    kernel = (
        GemmKernel(m=22, n=7, k=33, a_t=False, b_t=False)
        if family == "gemm"
        else ConvKernel(w=9, h=7, c=3, n=2, k=6, s=3, r=2, pad_w=1, pad_h=0, wstride=2, hstride=1)
    )
    build = gemm.build if family == "gemm" else conv.build
    graph = build(kernel, "int8", "fwd", form)
    runtime = TorchCpu(RuntimeOptions(threads=1))
    verdict, profile, _ = _run(runtime, graph, seed, weights)
    assert verdict.ok and verdict.error == 0.0, verdict  # power-of-two scales: exact, even for qdq
    ops = {n.op_type for n in profile.nodes if n.precision}
    assert f"quantized::{'linear' if family == 'gemm' else 'conv2d'}" in ops, (
        ops
    )  # which op took longest is timing, not a fact
    assert (f"quantized::{'linear' if family == 'gemm' else 'conv2d'}_prepack" in ops) == (weights == "input"), ops
    quantized_op = f"quantized::{'linear' if family == 'gemm' else 'conv2d'}"
    assert {n.precision for n in profile.nodes if n.op_type == quantized_op} == {"int8"}
    if weights == "const":  # int8 is then the only compute a call does; weights fed per call are scaled in
        # fp32 first (aten::mul), which on a shape this small can outlast the int8 product (seen in CI: 10 vs 19 µs)
        assert executed_precision([asdict(n) for n in profile.nodes]) == "int8"
    described = runtime.describe()["kernel"]
    assert described["weight_packing"] == ("at load" if weights == "const" else "in every call (weights fed per call)")


def test_refusals_name_their_reason(seed):
    runtime = TorchCpu(RuntimeOptions(threads=1))
    integer = gemm.build(GemmKernel(m=24, n=8, k=32, a_t=False, b_t=False), "int8", "fwd", "integer")
    with pytest.raises(UnsupportedError, match="no u8 x s8 -> s32"):
        _run(runtime, integer, seed)
    batched = gemm.build(GemmKernel(m=24, n=8, k=32, a_t=False, b_t=False, batch=2), "int8", "fwd", "qlinear")
    with pytest.raises(UnsupportedError, match="batched int8 GEMM"):
        _run(runtime, batched, seed)
    gru_relu = rnn.build(
        RnnKernel(cell="gru", hidden=8, batch=2, timesteps=3), "fp32", "fwd", "op_relu", gru_activation="relu"
    )
    with pytest.raises(UnsupportedError, match="tanh candidate only"):
        _run(runtime, gru_relu, seed)
    model = gemm.build(GemmKernel(m=8, n=4, k=8, a_t=False, b_t=False), "fp32", "fwd", "gemm")
    foreign = Graph(replace(model.spec, family="model"), model.model)
    with pytest.raises(UnsupportedError, match="foreign graph or whole model"):
        _run(runtime, foreign, seed)


def test_torch_cuda_refuses_int8_it_has_no_call_for():
    """CUDA's int8 limits are checked from the spec alone (no GPU needed): conv, the integer form,
    and torch._int_mm's shape rules."""
    from dbench.runtimes.torch_int8 import check_int8

    small = gemm.build(GemmKernel(m=32, n=8, k=64, a_t=False, b_t=False), "int8", "fwd", "qdq").spec
    with pytest.raises(UnsupportedError, match="more than 16 rows"):
        check_int8(small, "cuda:0")
    check_int8(gemm.build(GemmKernel(m=32, n=24, k=64, a_t=False, b_t=False), "int8", "fwd", "qdq").spec, "cuda:0")
    with pytest.raises(UnsupportedError, match="no int8 convolution on CUDA"):
        check_int8(conv.build(CONV, "int8", "fwd", "qdq").spec, "cuda:0")
    check_int8(conv.build(CONV, "int8", "fwd", "qdq").spec, "cpu")


def test_lstm_and_gru_gate_blocks_follow_torch_order():
    blocks = torch.arange(4).repeat_interleave(2).float()  # ONNX blocks 0..3 of 2 rows each
    assert reorder_gates(torch, blocks, "lstm", 2).tolist() == [0, 0, 2, 2, 3, 3, 1, 1]  # i o f c -> i f g o
    assert reorder_gates(torch, blocks[:6], "gru", 2).tolist() == [1, 1, 0, 0, 2, 2]  # z r h -> r z n


def test_fp32_stays_ieee_unless_the_runtime_may_choose():
    """Run in a fresh process each: the precision switches are process-wide."""
    code = (
        "import json\nfrom dbench.runtimes.base import RuntimeOptions\nfrom dbench.runtimes.torch import TorchCpu\n"
        "import sys\nr = TorchCpu(RuntimeOptions(threads=1, allow_runtime_precision=sys.argv[1] == '1'))\n"
        "print(json.dumps(r.describe()['fp32_precision']))"
    )
    seen = {}
    for allowed in ("0", "1"):
        done = subprocess.run(
            [sys.executable, "-c", code, allowed], capture_output=True, text=True, timeout=120, cwd=REPO
        )
        assert done.returncode == 0, done.stderr
        seen[allowed] = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(seen["0"].values()) == {"ieee"}
    assert "ieee" not in seen["1"].values()


def test_describe_records_the_settings_in_force():
    runtime = TorchCpu(RuntimeOptions(threads=1, extra={"quantized_engine": "fbgemm", "mkldnn": "0"}))
    runtime.prepare(None, conv.build(CONV, "fp32", "fwd").spec, {})
    described = runtime.describe()
    assert described["quantized_engine"] == "fbgemm" and described["mkldnn_enabled"] is False
    assert described["intra_op_threads"] == 1 and described["grad"] == "disabled"
    assert described["kernel"]["call"] == "torch.nn.functional.conv2d"
    torch.backends.mkldnn.enabled = True  # process-wide: leave it as PyTorch's default for other tests


def test_options_are_checked_in_the_parent():
    for options, message in [
        (RuntimeOptions(extra={"cuda_graph": "1"}), "not a torch option"),
        (RuntimeOptions(extra={"quantized_engine": "arm"}), "use one of x86"),
        (RuntimeOptions(device="1"), "--device is not supported by runtime torch"),
        (RuntimeOptions(graph_optimization="basic"), "--graph-opt is not supported"),
    ]:
        with pytest.raises(UsageError, match=message):
            TorchCpu.validate(options)
    with pytest.raises(UsageError, match="--threads is not supported by runtime torch-cuda"):
        TorchCuda.validate(RuntimeOptions(threads=2))
    with pytest.raises(UsageError, match="not a CUDA device index"):
        TorchCuda.validate(RuntimeOptions(device="gpu"))
    TorchCuda.validate(RuntimeOptions(device="cuda:1", extra={"cudnn_benchmark": "0"}))


def test_a_cuda_library_refusing_a_case_is_unsupported_and_other_runtime_errors_fail():
    from dbench.runtimes.torch import classified

    refused = (
        "CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling cublasLtMatmul with transpose_mat1 0 "
        "transpose_mat2 0 m 32 n 24 k 64"
    )  # as torch 2.11 said it on an H200
    with pytest.raises(UnsupportedError, match="CUBLAS_STATUS_NOT_SUPPORTED"):
        with classified():
            raise RuntimeError(refused)
    with pytest.raises(DbenchError) as caught:
        with classified():
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
    assert not isinstance(caught.value, UnsupportedError)


def test_profile_precision_names():
    assert precision_of("aten::addmm", ["float", "float"]) == "fp32"
    assert precision_of("aten::mm", ["c10::BFloat16"]) == "bf16"
    assert precision_of("quantized::linear", ["c10::quint8", ""]) == "int8"
    assert precision_of("aten::copy_", ["float"]) == ""
    assert precision_of("aten::mm", ["float"], "sm80_xmma_gemm_f32f32_tf32f32_f32_nn") == "tf32"


def test_input_types_from_kineto_events_agree_with_the_events_own(seed):
    """torch 2.11's FunctionEvent has no input_dtypes: the kineto lookup that stands in for it must give every
    event of a real profile the same types this torch records on the event itself."""
    import torch

    from dbench.runtimes.torch_profile import CALL_RANGE, dtypes_by_start, input_dtypes

    generator = torch.Generator().manual_seed(seed)
    a, b = torch.randn(16, 8, generator=generator), torch.randn(8, 4, generator=generator).half()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as profiler:
        with torch.profiler.record_function(CALL_RANGE):
            torch.mm(a.half(), b).float().relu()
    by_start = dtypes_by_start(profiler)
    events = [e for e in profiler.events() if e.input_dtypes]
    stand_in = type("OldEvent", (), {})  # an event as torch 2.11 builds it: no input_dtypes attribute
    for event in events:
        old = stand_in()
        old.name, old.time_range = event.name, event.time_range
        assert input_dtypes(old, by_start) == event.input_dtypes, event.name
    assert any(e.name == "aten::mm" and e.input_dtypes[0] == "c10::Half" for e in events)


def test_a_tf32_kernel_is_an_allowed_fallback_of_an_fp32_row_never_of_fp16():
    from dbench.store.invariants import violations

    assert violations({"precision": "fp32", "precision_executed": "tf32"}) == []
    assert violations({"precision": "fp16", "precision_executed": "tf32"})


def test_the_worker_times_verifies_and_profiles_a_torch_job():
    graph = rnn.build(RnnKernel(cell="lstm", hidden=16, batch=2, timesteps=4), "fp32", "fwd", "op")
    job = worker.Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime="torch",
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        profile_runs=3,
    )
    outcome = worker.execute(job)
    assert outcome.status == "ok", outcome.message
    assert outcome.verification["ok"] and outcome.verification["by"] == "numpy"
    assert outcome.stats.median_us > 0 and outcome.nodes and outcome.nodes[0]["op_type"] == "aten::lstm"
    assert outcome.runtime_options["kernel"]["call"] == "torch.nn.LSTM"
    assert outcome.device_median_us is None and outcome.device_graph_median_us is None and outcome.gpu_state is None


def test_dbench_run_on_torch_writes_verified_rows(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dbench",
            "run",
            "--runtime",
            "torch",
            "--suite",
            "inference-device",
            "--ops",
            "gemm",
            "--id",
            "*_n1_*",
            "--quick",
            "--threads",
            "1",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for path in tmp_path.rglob("*.jsonl") for line in path.read_text().splitlines()]
    results = [r for r in rows if r["type"] == "result"]
    assert results and all(r["status"] == "ok" and r["verified"] and r["precision_executed"] == "fp32" for r in results)
    assert all(r["runtime"] == "torch" and r["runtime_options"]["kernel"]["call"] for r in results)
    assert not any(r["invariant_violations"] for r in results)
    assert "USDT" not in done.stderr, "the profiler's progress lines reached the terminal"


# ---- torch-cuda, CPU-side ------------------------------------------------------------------------


def test_cuda_version_is_read_from_the_installed_package(tmp_path):
    (tmp_path / "version.py").write_text("__version__ = '2.13.0'\ncuda: Optional[str] = '13.0'\n")
    assert installed_cuda_version(tmp_path) == "13.0"
    (tmp_path / "version.py").write_text("__version__ = '2.13.0+cpu'\ncuda: Optional[str] = None\n")
    assert installed_cuda_version(tmp_path) is None


def test_torch_cuda_probe_is_truthful_here():
    ok, reason = TorchCuda.availability()
    if ok:
        pytest.skip("torch-cuda is usable here: covered by the gpu tests")
    assert reason == torch_cuda_problem()
    if installed_cuda_version(Path(torch.__file__).parent) is None:
        assert reason == (
            f"the installed torch {importlib.metadata.version('torch')} is a CPU build: install a CUDA "
            "build of PyTorch (pip install 'dbench[torch-cuda]')"
        )


def test_torch_cuda_probe_of_a_cuda_build_without_a_driver_names_the_driver(tmp_path):
    (tmp_path / "version.py").write_text("cuda: Optional[str] = '13.0'\n")
    assert torch_cuda_problem("libcuda-not-here.so.1", tmp_path).startswith(
        "no NVIDIA driver: libcuda-not-here.so.1 not found"
    )


def test_dbench_run_on_torch_cuda_fails_fast_with_the_reason(tmp_path):
    ok, reason = runtime_class("torch-cuda").availability()
    if ok:
        pytest.skip("torch-cuda is usable here")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dbench",
            "run",
            "--runtime",
            "torch-cuda",
            "--suite",
            "inference-device",
            "--ops",
            "gemm",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode != 0
    assert (done.stdout + done.stderr).strip().splitlines() == [
        f"error: runtime torch-cuda is not usable here: {reason}"
    ]
    assert not list(tmp_path.rglob("*.jsonl"))


def test_check_gpu_script_stops_with_one_line_without_a_gpu(tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("nvidia-smi is here: scripts/check-gpu.sh runs for real on this machine")
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "check-gpu.sh"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        "check-gpu: no NVIDIA GPU visible (nvidia-smi -L failed): run this on a GPU machine"
    ]


def _stand_in_gpu(tmp_path: Path) -> dict[str, str]:
    """An environment whose nvidia-smi lists one GPU (a shell script): check-gpu.sh goes past its GPU check."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Stand-in (UUID: GPU-0)'\n")
    (fake / "nvidia-smi").chmod(0o755)
    return {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "PYTHON": sys.executable}


def test_check_gpu_script_says_why_each_runtime_could_not_run(tmp_path):
    """A stand-in nvidia-smi lists a GPU, no GPU runtime is usable here: every line says the probe's
    reason, nothing is attempted, and the script fails (nothing ran)."""
    env = _stand_in_gpu(tmp_path)
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "check-gpu.sh"), "--no-install", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    summary = done.stdout[done.stdout.index("check-gpu summary") :]
    for name in ("torch-cuda", "ort-cuda", "ort-trt", "tensorrt"):
        ok, reason = runtime_class(name).availability()
        assert not ok and f"could not: {name}: {reason}" in summary
    assert "could not: allreduce nccl: missing cupy" in summary and "ran:" not in summary
    assert "nothing could run on this GPU machine" in done.stdout


def test_check_gpu_script_unpacks_carried_parts_only_when_all_match(tmp_path):
    """--packed: the parts scripts/pack-ort-gpu.sh makes are unpacked into the deps folder when they all
    match ort-gpu.sha256, and refused in one line when one is cut short (a call that did not carry it)."""
    import hashlib
    import io
    import lzma
    import tarfile

    stand_in = _stand_in_gpu(tmp_path)
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w") as tar:
        data = os.urandom(4096)  # incompressible: the archive splits into parts
        info = tarfile.TarInfo("onnxruntime_gpu-0.0.0.dist-info/RECORD")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    packed = lzma.compress(payload.getvalue())
    carried = tmp_path / "carry"
    carried.mkdir()
    half = len(packed) // 2
    (carried / "ort-gpu.tar.xz.part00").write_bytes(packed[:half])
    (carried / "ort-gpu.tar.xz.part01").write_bytes(packed[half:])
    (carried / "ort-gpu.sha256").write_text(f"{hashlib.sha256(packed).hexdigest()}  ort-gpu.tar.xz\n")

    def check(deps: Path) -> str:
        env = {**stand_in, "DBENCH_GPU_DEPS": str(deps)}
        done = subprocess.run(
            [
                "bash",
                str(REPO / "scripts" / "check-gpu.sh"),
                "--no-install",
                "--packed",
                str(carried),
                "--only",
                "nccl",
                "--out",
                str(tmp_path / "out"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        return done.stdout

    assert "unpacking onnxruntime-gpu from 2 carried parts" in check(tmp_path / "deps")
    assert (tmp_path / "deps" / "onnxruntime_gpu-0.0.0.dist-info" / "RECORD").read_bytes() == data
    (carried / "ort-gpu.tar.xz.part01").write_bytes(packed[half:-10])
    assert "the parts do not match ort-gpu.sha256 (one missing or cut short): not unpacked" in check(tmp_path / "short")
    assert not (tmp_path / "short").exists()


def test_pack_script_plans_a_lease_whose_calls_each_carry_one_part(tmp_path):
    """pack-ort-gpu.sh --plan: one call per part, each copying it into /tmp/carry; the first also carries
    the wheels the image lacks (and measures the peak), the middle ones run torch-cuda slices without it,
    and only the last unpacks the parts and checks ort-cuda."""
    carried = tmp_path / "carry"
    carried.mkdir()
    for name in (
        "ort-gpu.tar.xz.part00",
        "ort-gpu.tar.xz.part01",
        "ort-gpu.tar.xz.part02",
        "ort-gpu.tar.xz.part03",
        "ort-gpu.sha256",
    ):
        (carried / name).write_bytes(b"x")
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "pack-ort-gpu.sh"), "--plan", "--out", str(carried)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    carries = [line for line in lines if ". carry [" in line]
    commands = [line.strip() for line in lines if line.strip().startswith("mkdir -p /tmp/carry")]
    assert len(carries) == len(commands) == 4
    for i, (carry, command) in enumerate(zip(carries, commands)):
        assert f"ort-gpu.tar.xz.part0{i}" in carry and "ort-gpu.sha256" in carry
        assert ("wheels" in carry) == (i == 0)
        assert ("--packed /tmp/carry --only ort-cuda" in command) == (i == 3)
        assert ("--no-peak" in command) == (i in (1, 2))
        assert command.endswith(f"tar -czf $OUT/gpu-check-{i + 1}.tgz gpu-check")
    assert [op for c in commands for op in ("rnn", "sparse", "gemm,conv") if f"--ops {op} " in c] == [
        "rnn",
        "sparse",
        "gemm,conv",
    ]
    empty = tmp_path / "empty"
    refused = subprocess.run(
        ["bash", str(REPO / "scripts" / "pack-ort-gpu.sh"), "--plan", "--out", str(empty)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [
        f"pack-ort-gpu: no parts in {empty} (run it without --plan first)"
    ]


# ---- gpu-marked: torch-cuda on a GPU ---------------------------------------------------------------

GPU_GRAPHS = {
    "gemm_fp32": lambda: gemm.build(GemmKernel(m=64, n=32, k=48, a_t=True, b_t=False), "fp32", "fwd", "gemm"),
    "gemm_fp16": lambda: gemm.build(GemmKernel(m=64, n=32, k=48, a_t=False, b_t=True), "fp16", "fwd", "gemm"),
    "conv_fwd": lambda: conv.build(CONV, "fp32", "fwd"),
    "conv_bwd_data": lambda: conv.build(CONV, "fp32", "bwd_data"),
    "conv_bwd_filter": lambda: conv.build(CONV, "fp32", "bwd_filter"),
    "lstm_op": lambda: rnn.build(RnnKernel(cell="lstm", hidden=16, batch=2, timesteps=3), "fp32", "fwd", "op"),
    "gru_op": lambda: rnn.build(RnnKernel(cell="gru", hidden=16, batch=2, timesteps=3), "fp32", "fwd", "op"),
    "gru_bptt": lambda: rnn.build(
        RnnKernel(cell="gru", hidden=16, batch=2, timesteps=3), "fp32", "bwd_weights", "bptt"
    ),
    "sparse": lambda: sparse.build(
        SparseKernel(m=64, n=8, k=32, a_t=False, b_t=False, sparsity=0.9), "fp32", "fwd", "sparse"
    ),
    "int8_qdq": lambda: gemm.build(GemmKernel(m=32, n=32, k=64, a_t=False, b_t=False), "int8", "fwd", "qdq"),
}


def test_device_event_rounds_stay_within_a_quick_rounds_sampling():
    """The CUDA-event figures (two a round, EVENT_ROUNDS event rounds each) cost about 50 ms a round at
    the defaults, but only the round's share of --min-time under --quick: 0.5 s of events a graph and
    round had made a GPU smoke run of the inference suite about three times as long as its sampling."""
    from dbench.worker.profiling import PROFILE_BUDGET_S
    from dbench.worker.timing import TimingConfig

    quick, default = QUICK.per_round(), TimingConfig().per_round()
    assert worker._device_iterations(20.0, default) * 20.0 == pytest.approx(PROFILE_BUDGET_S * 1e6)
    assert worker._device_iterations(20.0, quick) * 20.0 <= quick.min_time * 1e6 + 20.0
    assert worker._device_iterations(20.0, quick) < worker._device_iterations(20.0, default) / 5
    assert worker._device_iterations(5e4, quick) == 1  # a 50 ms GRU: one call an event round, not 10 (5 s a graph)
    assert worker._device_iterations(5e4, default) == 1
    assert worker._device_iterations(0.1, default) == 10_000


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_GRAPHS)
def test_torch_cuda_runs_verified_and_device_timed_with_and_without_a_graph(name):
    ok, reason = TorchCuda.availability()
    if not ok:
        pytest.skip(f"torch-cuda: {reason}")
    graph = GPU_GRAPHS[name]()
    job = worker.Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime="torch-cuda",
        options=RuntimeOptions(),
        timing=QUICK,
        profile_runs=3,
    )
    outcome = worker.execute(job)
    assert outcome.status == "ok", outcome.message
    assert outcome.verification["ok"]
    assert outcome.device_median_us > 0 and outcome.device_graph_median_us > 0
    assert outcome.gpu_state["start"]["sm_clock_mhz"] and outcome.gpu_state["end"]["temperature_c"] is not None
    assert outcome.nodes and all(n["provider"] == "cuda" for n in outcome.nodes)
    expected = "int8" if graph.spec.precision == "int8" else graph.spec.precision
    assert executed_precision(outcome.nodes) == expected
    assert outcome.runtime_options["fp32_precision"] == {"cublas": "ieee", "cudnn_conv": "ieee", "cudnn_rnn": "ieee"}
    assert outcome.runtime_options["gpu"]["uuid"]
