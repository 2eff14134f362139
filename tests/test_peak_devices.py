"""Each row against its own device's ceilings: a GPU runtime's rows against the GPU's bandwidth (measured
on the GPU by `dbench peak`) and the GPU runtimes' GEMM rates, a CPU runtime's against the host's;
never one device's ceilings for another's rows. The GPU measurements themselves run where a GPU is."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dbench.errors import DbenchError
from dbench.peak.ceilings import ceilings, device_kind, merge_peaks, roof_fraction
from dbench.runtimes.registry import RUNTIMES

HOST_TRIAD, GPU_TRIAD = 20.0, 4000.0
CPU_GEMM, GPU_GEMM = 0.5, 50.0


def _peaks(**changes) -> dict:
    """A peak.json of one machine with CPU runtimes and one GPU runtime measured, as `dbench peak` writes it."""
    peaks = {
        "machine_key": "m",
        "taken_at": "t0",
        "copy_gbps": 23.6,
        "triad_gbps": HOST_TRIAD,
        "skipped": {},
        "gemm_tflops": {
            "ort-cpu": {"fp32": CPU_GEMM},
            "torch": {"fp32": 0.3},
            "torch-cuda": {"fp32": GPU_GEMM, "fp16": 400.0},
        },
        "gemm_shapes": {"ort-cpu": {"fp32": []}, "torch": {"fp32": []}, "torch-cuda": {"fp32": [], "fp16": []}},
        "device_bandwidth": {
            "torch-cuda": {
                "copy_gbps": 3800.0,
                "triad_gbps": GPU_TRIAD,
                "array_bytes": 2**30,
                "device": "NVIDIA H200",
                "l2_bytes": 60 * 2**20,
                "taken_at": "t0",
            }
        },
    }
    return {**peaks, **changes}


def _row(runtime: str, tflops: float, precision: str = "fp32", intensity: float = 1e6) -> dict:
    return {
        "runtime": runtime,
        "precision": precision,
        "status": "ok",
        "verified": True,
        "tflops": tflops,
        "intensity": intensity,
    }


def test_the_registry_s_gpu_runtimes_are_the_nvidia_adapters():
    kinds = {name: device_kind(name) for name in RUNTIMES}
    nvidia = {"torch-cuda", "ort-cuda", "ort-trt", "tensorrt", "ort-trt-rtx"}
    assert {name for name, kind in kinds.items() if kind == "gpu"} == nvidia
    assert {name for name, kind in kinds.items() if kind == "cpu"} == set(RUNTIMES) - nvidia
    assert device_kind("no-such-runtime") is None


@pytest.mark.parametrize("runtime", ["ort-cpu", "torch", "openvino"])
def test_a_cpu_row_gets_the_host_s_bandwidth_and_the_best_cpu_gemm_never_the_gpu_s(runtime):
    assert ceilings(_peaks(), "fp32", runtime) == (CPU_GEMM, HOST_TRIAD)
    assert ceilings(_peaks(), "fp16", runtime) == (None, HOST_TRIAD)  # only the GPU measured fp16
    assert ceilings(_peaks(triad_gbps=None), "fp32", runtime) == (CPU_GEMM, None)  # never the GPU's bandwidth


@pytest.mark.parametrize("runtime", ["torch-cuda", "ort-cuda", "ort-trt", "tensorrt"])
def test_a_gpu_row_gets_the_gpu_s_bandwidth_and_gemm_never_the_host_s(runtime):
    assert ceilings(_peaks(), "fp32", runtime) == (GPU_GEMM, GPU_TRIAD)  # the one GPU, measured through torch-cuda
    assert ceilings(_peaks(device_bandwidth={}), "fp32", runtime) == (GPU_GEMM, None)
    gemm = {"ort-cpu": {"fp32": CPU_GEMM}}
    assert ceilings(_peaks(gemm_tflops=gemm), "fp32", runtime) == (None, GPU_TRIAD)
    assert ceilings(_peaks(gemm_tflops=gemm, device_bandwidth={}), "fp32", runtime) == (None, None)


def test_a_row_s_fraction_of_peak_is_against_its_own_device():
    peaks = _peaks()
    assert roof_fraction(_row("torch-cuda", GPU_GEMM / 2), peaks) == pytest.approx(0.5)
    assert roof_fraction(_row("ort-cpu", CPU_GEMM / 2), peaks) == pytest.approx(0.5)
    # memory-bound: 1 FLOP/byte on the GPU is 4 TFLOP/s at 4000 GB/s (the host's 20 GB/s would make it 100x)
    assert roof_fraction(_row("torch-cuda", 2.0, intensity=1.0), peaks) == pytest.approx(0.5)
    assert roof_fraction(_row("torch-cuda", 2.0, intensity=1.0), _peaks(device_bandwidth={})) is None
    assert roof_fraction(_row("no-such-runtime", 0.1), peaks) is None


def test_run_summary_says_each_row_against_its_device():
    from dbench.render.warnings import peak_line

    rows = [{**_row("torch-cuda", GPU_GEMM / 2), "graph_id": "gpu"}, {**_row("ort-cpu", CPU_GEMM), "graph_id": "cpu"}]
    line = peak_line(rows, _peaks())
    assert "median 100% of the roof over 2 rows" in line and "above the measured ceiling" not in line
    assert "no fraction of peak" in peak_line(rows[:1], _peaks(device_bandwidth={}))


def test_a_new_peak_keeps_the_highest_device_bandwidth_and_the_gpus_it_did_not_measure():
    old = _peaks(
        skipped={"ort-trt bandwidth": "no GPU", "tensorrt bandwidth": "no GPU"},
        device_bandwidth={
            **_peaks()["device_bandwidth"],
            "ort-cuda": {
                "copy_gbps": 3900.0,
                "triad_gbps": 3950.0,
                "array_bytes": 2**30,
                "device": "NVIDIA H200",
                "l2_bytes": 60 * 2**20,
                "taken_at": "t0",
            },
        },
    )
    measured = {
        "copy_gbps": 3850.0,
        "triad_gbps": 3000.0,
        "array_bytes": 2**30,
        "device": "NVIDIA H200",
        "l2_bytes": 60 * 2**20,
        "taken_at": "t1",
    }
    new = _peaks(taken_at="t1", device_bandwidth={"torch-cuda": measured, "tensorrt": measured}, skipped={})
    merged = merge_peaks(old, new)
    devices = merged["device_bandwidth"]
    assert devices["torch-cuda"]["copy_gbps"] == 3850.0 and "copy_gbps_taken_at" not in devices["torch-cuda"]
    assert devices["torch-cuda"]["triad_gbps"] == GPU_TRIAD and devices["torch-cuda"]["triad_gbps_taken_at"] == "t0"
    assert devices["ort-cuda"] == old["device_bandwidth"]["ort-cuda"] and devices["tensorrt"] == measured
    assert merged["skipped"] == {"ort-trt bandwidth": "no GPU"}  # tensorrt's skip is stale once measured
    assert merged["triad_gbps"] == HOST_TRIAD


def _frame(rows: list[dict]) -> pd.DataFrame:
    """The report's kernel frame, with only the columns the roofline reads."""
    return pd.DataFrame(
        [
            {
                "machine": "m",
                "precision": "fp32",
                "counts": True,
                "family": "gemm",
                "variant": r["runtime"],
                "min_bytes": 2**31,
                **r,
            }
            for r in rows
        ]
    )


def test_the_roofline_draws_one_roof_per_device_from_its_own_ceilings():
    from dbench.report import plots

    frame = _frame(
        [
            {"runtime": "ort-cpu", "intensity": 10.0, "tflops": 0.1, "gbps": 10.0},
            {"runtime": "torch-cuda", "intensity": 10.0, "tflops": 30.0, "gbps": 3000.0},
        ]
    )
    figure, notes = plots.roofline(frame, "m", "fp32", _peaks(), {"L3": 32 * 2**20})
    roofs = [line.get_label() for line in figure.axes[0].get_lines()]
    assert roofs == [
        f"CPU: triad {HOST_TRIAD:.0f} GB/s, GEMM {CPU_GEMM:.3g} TFLOP/s",
        f"NVIDIA H200: triad {GPU_TRIAD:.0f} GB/s, GEMM {GPU_GEMM:.3g} TFLOP/s",
    ]
    assert notes == []  # the GPU row at 3000 GB/s is under its own roof, not above the host's 20 GB/s
    figure, notes = plots.roofline(frame, "m", "fp32", _peaks(device_bandwidth={}), {"L3": 32 * 2**20})
    assert notes == ["no GPU memory bandwidth in peak.json: run dbench peak --runtime torch-cuda"]
    assert [line.get_label() for line in figure.axes[0].get_lines()][1] == f"GPU: GEMM {GPU_GEMM:.3g} TFLOP/s"


def test_the_plan_never_estimates_a_gpu_graph_from_the_host_s_ceilings(tmp_path):
    from dbench.orchestrator.estimate import graph_costs
    from dbench.orchestrator.request import RunRequest
    from dbench.sources.resolve import build_items
    from tests.helpers import write_csv

    items = build_items(
        RunRequest(kernels=str(write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "512,512,512,0,0"))), "qdq"
    )
    folder = tmp_path / "machine"
    folder.mkdir()
    (folder / "peak.json").write_text(json.dumps(_peaks(device_bandwidth={})))
    costs = graph_costs(items, {"ort-cpu": 2, "torch-cuda": 1}, folder)
    assert costs[(items[0].spec.id, "ort-cpu")].source == "roofline"
    assert costs[(items[0].spec.id, "torch-cuda")].source == "settings only"
    (folder / "peak.json").write_text(json.dumps(_peaks()))
    cost = graph_costs(items, {"torch-cuda": 1}, folder)[(items[0].spec.id, "torch-cuda")]
    assert cost.source == "roofline" and cost.call_s == pytest.approx(2 * 512**3 / (GPU_GEMM * 1e12))


def _torch_cuda() -> None:
    """Skip unless PyTorch sees a CUDA device."""
    torch = pytest.importorskip("torch", reason="torch-cuda bandwidth needs PyTorch")
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} sees no CUDA device (a CPU build, or no GPU here)")


def test_without_a_gpu_the_device_bandwidth_says_why():
    from dbench.peak.measure import torch_device_bandwidth

    torch = pytest.importorskip("torch", reason="the check of PyTorch without CUDA needs PyTorch")
    if torch.cuda.is_available():
        pytest.skip("PyTorch sees a GPU here: the GPU test measures it")
    with pytest.raises(DbenchError, match="PyTorch sees no CUDA device"):
        torch_device_bandwidth(0)


@pytest.mark.gpu
@pytest.mark.parametrize("runtime,library", [("torch-cuda", "torch"), ("ort-cuda", "cupy")])
def test_a_gpu_runtime_s_bandwidth_is_measured_on_the_gpu(runtime, library):
    """Through the library each adapter uses: far above a host's ~20 GB/s (an H200 gives ~4000)."""
    from dbench.peak.measure import GPU_ARRAY_FLOOR, measure_device_bandwidth

    _torch_cuda()
    pytest.importorskip(library, reason=f"{runtime}'s bandwidth is measured through {library}")
    measured = measure_device_bandwidth(runtime)
    assert measured.copy_gbps > 200 and measured.triad_gbps > 200, measured
    assert measured.array_bytes >= max(GPU_ARRAY_FLOOR, 8 * measured.l2_bytes) and measured.l2_bytes > 0
    assert measured.device
