"""GPU runtimes (ort-cuda, ort-trt, tensorrt). CPU-side: probes name what is missing, a session asked
for CUDA never runs on the CPU, options map and are refused with one line, device timing reaches the
row. `gpu`-marked: every family through every GPU runtime, verified (skipped here with the reason)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dbench.catalog import ConvKernel, GemmKernel
from dbench.catalog.kernels import RnnKernel, SparseKernel
from dbench.errors import DbenchError, UsageError
from dbench.gen import conv, gemm, int8, rnn, sparse
from dbench.runtimes import gpu
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.elf import needed_libraries
from dbench.runtimes.ort_gpu import (
    OrtCuda,
    OrtTensorrt,
    ort_gpu_problem,
    require_provider,
    tiny_model,
    trt_provider_options,
)
from dbench.runtimes.registry import RUNTIMES, runtime_class
from dbench.runtimes.tensorrt import Tensorrt
from dbench.runtimes.tensorrt_options import parse_cuda_options, parse_tensorrt_options
from dbench.worker import main as worker
from dbench.worker.timing import QUICK

GPU_RUNTIMES = ("ort-cuda", "ort-trt", "tensorrt")
REPO = Path(__file__).resolve().parents[1]


def _ort_library() -> str:
    import onnxruntime

    return glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "onnxruntime_pybind11_state*.so"))[0]


def test_elf_reader_lists_the_libraries_a_shared_object_needs():
    needed = needed_libraries(_ort_library())
    assert "libc.so.6" in needed and all(name.startswith(("lib", "ld-")) for name in needed)
    if shutil.which("readelf"):
        listing = subprocess.run(["readelf", "-d", _ort_library()], capture_output=True, text=True).stdout
        assert needed == [line.split("[")[1].split("]")[0] for line in listing.splitlines() if "(NEEDED)" in line]


def test_elf_reader_refuses_a_non_elf_file(tmp_path):
    (tmp_path / "x.so").write_bytes(b"not an elf")
    with pytest.raises(ValueError, match="not a 64-bit little-endian ELF"):
        needed_libraries(tmp_path / "x.so")


def test_library_search_finds_a_library_on_ld_library_path_and_names_what_is_missing(tmp_path, monkeypatch):
    assert gpu.find_library("libnvinfer.so.10") is None or "libnvinfer" in gpu.find_library("libnvinfer.so.10")
    (tmp_path / "libnvinfer.so.77").write_bytes(b"")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    assert gpu.find_library("libnvinfer.so.77") == str(tmp_path / "libnvinfer.so.77")
    assert gpu.missing_library(["libc.so.6", "libnvinfer.so.77"]) is None
    reason = gpu.missing_library(["libc.so.6", "libnvonnxparser.so.78", "libcudnn.so.79"])
    assert reason.startswith("libnvonnxparser.so.78 not found") and "pip install 'dbench[tensorrt78]'" in reason
    assert "pip install 'dbench[gpu]'" in gpu.missing_library(["libcudnn.so.79"])
    assert "pip install 'dbench[gpu]'" in gpu.missing_library(["libcudart.so.79"])


def test_the_provider_libraries_missing_sonames_are_named():
    """With onnxruntime-gpu installed but no CUDA libraries, the probe names the first missing .so."""
    from dbench.runtimes.ort_gpu import provider_library

    library = provider_library("TensorrtExecutionProvider")
    if library is None:
        pytest.skip("onnxruntime-gpu is not installed")
    needed = needed_libraries(library)
    assert "libnvinfer.so.10" in needed
    missing = gpu.missing_library(needed)
    assert missing is None or missing.split(" ")[0] in needed


def test_driver_probe_says_no_driver_when_libcuda_cannot_load():
    assert gpu.driver_problem("libcuda-not-here.so.1") == (
        "no NVIDIA driver: libcuda-not-here.so.1 not found (install the NVIDIA driver; a container needs the GPU "
        "passed through)"
    )


def test_probes_on_this_machine_are_truthful():
    """Whatever this machine has, each GPU runtime is usable exactly when a driver and device are."""
    driver = gpu.driver_problem()
    for name in GPU_RUNTIMES:
        ok, reason = runtime_class(name).availability()
        assert ok == (reason == "")
        if driver is not None:
            assert not ok, f"{name} claims to be usable without a GPU"


def test_ort_gpu_probe_names_the_cpu_onnxruntime():
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA EP")
    for cls in (OrtCuda, OrtTensorrt):
        ok, reason = cls.availability()
        assert not ok and reason == (
            f"onnxruntime-gpu is not installed (the CPU onnxruntime {onnxruntime.__version__} is): "
            "pip install 'dbench[gpu]' in its own environment"
        )


def test_tensorrt_probe_names_the_missing_package():
    if Tensorrt.availability()[0]:
        pytest.skip("TensorRT is usable here")
    from dbench.runtimes.tensorrt import installed_tensorrt

    if installed_tensorrt() is None:
        assert Tensorrt.availability()[1].startswith("tensorrt is not installed: pip install 'dbench[tensorrt10]'")


def test_a_session_asked_for_cuda_never_runs_on_the_cpu():
    """The CPU onnxruntime silently drops a provider it lacks and builds a CPU session; ours refuses."""
    reason = ort_gpu_problem("CUDAExecutionProvider")
    if reason is None:
        pytest.skip("a real CUDA EP is here: covered by the gpu tests")
    with pytest.raises(DbenchError) as refused:
        OrtCuda(RuntimeOptions()).make_session(tiny_model(), {}, profiling=False)
    assert str(refused.value) == f"CUDAExecutionProvider cannot run here, refusing to run on the CPU instead: {reason}"


def test_each_refusal_layer_stops_a_cpu_session_on_its_own():
    """The session option alone makes ONNX Runtime refuse; the provider check alone refuses a CPU session."""
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA EP")
    options = OrtCuda(RuntimeOptions()).session_options(profiling=False)
    with pytest.warns(UserWarning), pytest.raises(Exception, match="fallback to CPU EP has been explicitly disabled"):
        onnxruntime.InferenceSession(tiny_model(), options, providers=["CUDAExecutionProvider"], enable_fallback=0)
    cpu_session = onnxruntime.InferenceSession(tiny_model(), providers=["CPUExecutionProvider"])
    with pytest.raises(DbenchError, match=r"registered \['CPUExecutionProvider'\] instead of CUDAExecutionProvider"):
        require_provider(cpu_session, "CUDAExecutionProvider")


def test_worker_records_a_cuda_job_here_as_failed_not_timed_on_the_cpu():
    if ort_gpu_problem("CUDAExecutionProvider") is None:
        pytest.skip("a real CUDA EP is here")
    graph = gemm.build(GemmKernel(m=8, n=4, k=8, a_t=False, b_t=False), "fp32", "fwd", "gemm")
    job = worker.Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime="ort-cuda",
        options=RuntimeOptions(),
        timing=QUICK,
        profile_runs=2,
    )
    outcome = worker.execute(job)
    assert outcome.status == "failed" and "refusing to run on the CPU" in outcome.message
    assert outcome.stats is None and outcome.device_median_us is None


def test_gpu_sessions_refuse_cpu_fallback_in_their_session_options():
    options = OrtCuda(RuntimeOptions()).session_options(profiling=False)
    assert options.get_session_config_entry("session.disable_cpu_ep_fallback") == "1"
    assert (
        OrtCuda(RuntimeOptions()).run_options(True).get_run_config_entry("disable_synchronize_execution_providers")
        == "0"
    )


@pytest.mark.parametrize("name", GPU_RUNTIMES)
def test_dbench_run_on_a_gpu_runtime_fails_fast_with_the_reason(name, tmp_path):
    ok, reason = runtime_class(name).availability()
    if ok:
        pytest.skip(f"{name} is usable here")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dbench",
            "run",
            "--runtime",
            name,
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
    assert result.returncode != 0
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert lines == [f"error: runtime {name} is not usable here: {reason}"]
    assert not list(tmp_path.rglob("*.jsonl")), "no rows for a runtime that cannot run"


def test_cuda_options_map_to_provider_options_and_refuse_bad_values():
    runtime = OrtCuda(RuntimeOptions(device="cuda:1", extra={"cudnn_conv_algo_search": "heuristic", "cuda_graph": "1"}))
    assert runtime.provider_options() == {
        "device_id": "1",
        "cudnn_conv_algo_search": "HEURISTIC",
        "use_tf32": "0",
        "enable_cuda_graph": "1",
    }
    assert parse_cuda_options({"use_tf32": "1"}, allow_runtime_precision=True).use_tf32
    with pytest.raises(
        UsageError, match="use_tf32=1 runs fp32 graphs' matrix math in TF32: add --allow-runtime-precision"
    ):
        parse_cuda_options({"use_tf32": "1"}, allow_runtime_precision=False)
    with pytest.raises(UsageError, match="--option warp is not an ort-cuda option; known: cudnn_conv_algo_search"):
        OrtCuda.validate_values(RuntimeOptions(extra={"warp": "9"}))
    with pytest.raises(UsageError, match="use one of EXHAUSTIVE, HEURISTIC, DEFAULT"):
        parse_cuda_options({"cudnn_conv_algo_search": "fast"}, False)
    with pytest.raises(UsageError, match="--device 'gpu' is not a CUDA device index"):
        OrtCuda(RuntimeOptions(device="gpu"))


def test_tensorrt_options_map_to_the_ep_and_refuse_bad_values(tmp_path):
    options = trt_provider_options(
        0,
        {"builder_optimization_level": "5", "workspace_mb": "64", "cuda_graph": "1"},
        allow_runtime_precision=False,
        int8=True,
        cache_dir=str(tmp_path),
    )
    assert options == {
        "device_id": "0",
        "trt_fp16_enable": "False",
        "trt_int8_enable": "True",
        "trt_builder_optimization_level": "5",
        "trt_cuda_graph_enable": "True",
        "trt_max_workspace_size": str(64 << 20),
        "trt_engine_cache_enable": "True",
        "trt_engine_cache_path": str(tmp_path),
        "trt_timing_cache_enable": "True",
        "trt_timing_cache_path": str(tmp_path),
    }
    assert "trt_engine_cache_enable" not in trt_provider_options(0, {}, True, False, None)
    assert trt_provider_options(0, {}, True, False, None)["trt_fp16_enable"] == "True"
    assert parse_tensorrt_options({}).builder_optimization_level == 3
    for extra, needle in [
        ({"builder_optimization_level": "6"}, "use an integer from 0 to 5"),
        ({"cuda_graph": "yes"}, "use cuda_graph=0 or cuda_graph=1"),
        ({"fp16": "1"}, "--option fp16 is not a TensorRT option"),
    ]:
        with pytest.raises(UsageError, match=needle):
            Tensorrt.validate_values(RuntimeOptions(extra=extra))


def test_registry_knows_every_gpu_runtime():
    assert set(GPU_RUNTIMES) <= set(RUNTIMES)
    assert runtime_class("tensorrt").int8_form == "qdq" and runtime_class("ort-trt").int8_form == "qdq"


def test_gpu_metadata_without_nvml_says_why():
    meta = gpu.gpu_metadata(0)
    if "nvml" in meta:
        assert meta["nvml"].startswith("unavailable: pip install nvidia-ml-py")
        assert gpu.process_device_memory(0) is None
    else:
        assert meta["uuid"] and meta["name"]


def test_pip_library_dirs_are_the_wheels_folders(tmp_path, monkeypatch):
    (tmp_path / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    (tmp_path / "tensorrt_libs").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert gpu.pip_library_dirs() == [str(tmp_path / "nvidia" / "cu13" / "lib"), str(tmp_path / "tensorrt_libs")]


# ---- gpu-marked: every family through every GPU runtime, verified -------------------------------

FAMILIES = {
    "gemm": lambda: gemm.build(GemmKernel(m=64, n=32, k=48, a_t=True, b_t=False), "fp16", "fwd", "gemm"),
    "conv": lambda: conv.build(
        ConvKernel(w=9, h=7, c=3, n=2, k=4, s=3, r=2, pad_w=1, pad_h=0, wstride=2, hstride=1), "fp32", "fwd"
    ),
    "rnn": lambda: rnn.build(RnnKernel(cell="lstm", hidden=16, batch=2, timesteps=3), "fp32", "fwd", "op"),
    "sparse": lambda: sparse.build(
        SparseKernel(m=64, n=8, k=32, a_t=False, b_t=False, sparsity=0.9), "fp32", "fwd", "sparse"
    ),
    "int8": lambda: int8.build(GemmKernel(m=32, n=16, k=64, a_t=False, b_t=False), "int8", "fwd", "qdq"),
}


@pytest.mark.gpu
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", GPU_RUNTIMES)
def test_every_family_runs_verified_and_device_timed(name, family):
    ok, reason = runtime_class(name).availability()
    if not ok:
        pytest.skip(f"{name}: {reason}")
    graph = FAMILIES[family]()
    job = worker.Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime=name,
        options=RuntimeOptions(),
        timing=QUICK,
        profile_runs=3,
    )
    outcome = worker.execute(job)
    assert outcome.status == "ok", outcome.message
    assert outcome.verification["ok"]
    assert outcome.device_median_us > 0 and outcome.nodes
    assert outcome.runtime_options["gpu"]["uuid"]
    assert outcome.device_memory_bytes is None or outcome.device_memory_bytes > 0
    assert np.isfinite(outcome.stats.median_us)
