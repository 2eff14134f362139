"""Fidelity and overhead of dbench's timing on ONNX Runtime CPU, measured in one run.

For each kernel, dbench's median (the real path: worker process, IOBinding, calibrated sampling)
is compared with the median of a tight `run_with_iobinding` loop written here, on the same graph
with the same session options and constant weights. ONNX Runtime CPU sessions of the same graph can
differ by more than 3% (this VM has slow spells lasting seconds to minutes), so each side runs several
fresh sessions, the two sides of a kernel back to back in each round, and the ratio reported is the
median over rounds of the paired ratios (dbench / loop within a round). The harness overhead is the difference on the
smallest kernel, plus the cost of the timing loop around a call that does nothing.

    .venv/bin/python benchmarks/ort_fidelity.py [--rounds 5] [--seconds 2]     # a few minutes on 2 cores

Its figures go to a dated page under docs/measurements/ (the last: 2026-11-21-ort-fidelity.md);
docs/benchmarks.md lists every benchmark."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from dbench.catalog import Selection, load_catalog, select
from dbench.gen.feeds import make_feeds
from dbench.gen.options import GenOptions
from dbench.gen.plan import build, plan
from dbench.gen.weights import embed_weights, split_feeds
from dbench.orchestrator.runner import RunConfig, Runner, RunState, Variant
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.sources.generated import items_from_requests
from dbench.stats.interleave import rotated
from dbench.store.log import RunLog
from dbench.worker.timing import TimingConfig, measure

KERNELS = [
    "gemm_m64_n1_k1216_nn",
    "gemm_m128_n1_k1024_nn",
    "gemm_m3072_n1_k1024_nn",
    "gemm_m35_n700_k2048_nn",
    "gemm_m128_n1500_k1280_nn",
    "gemm_m3072_n1500_k128_nn",
    "conv_w7_h7_c512_n1_k512_s3_r3_pw1_ph1_sw1_sh1",
    "conv_w56_h56_c64_n1_k256_s1_r1_pw0_ph0_sw1_sh1",
    "conv_w28_h28_c512_n1_k128_s1_r1_pw0_ph0_sw1_sh1",
    "conv_w14_h14_c256_n1_k1024_s1_r1_pw0_ph0_sw1_sh1",
    "conv_w112_h112_c64_n1_k64_s1_r1_pw0_ph0_sw1_sh1",
    "conv_w7_h7_c2048_n1_k512_s1_r1_pw0_ph0_sw1_sh1",
]


def tight_loop(graph, seconds: float) -> float:
    """Median µs of back-to-back run_with_iobinding calls, written without dbench's runner."""
    import onnxruntime as ort

    feeds = make_feeds(graph.spec)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    model = embed_weights(graph.model, constants)
    so = ort.SessionOptions()
    so.intra_op_num_threads = os.cpu_count()
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    for name, array in per_call.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(array))
    binding.bind_output(graph.spec.outputs[0].name, "cpu")
    run = session.run_with_iobinding
    for _ in range(5):
        run(binding)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 10:
        t0 = time.perf_counter_ns()
        run(binding)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e3


class Silent:
    """A run observer that shows nothing."""

    def on_round(self, number: int, rounds: int, jobs: int) -> None: ...
    def on_start(self, item, variant: str) -> None: ...
    def on_phase(self, item, phase: str) -> None: ...
    def on_row(self, row) -> None: ...


def dbench_medians(kernel_ids: list[str]) -> dict[str, float]:
    """dbench's medians through the real path (Runner, worker process, default timing), one fresh session per kernel."""
    kernels = [k for k in select(load_catalog(), Selection("inference", ops=("gemm", "conv"))) if k.id in kernel_ids]
    items = items_from_requests(plan(kernels, ("inference_server", "inference_device"), GenOptions()))
    with tempfile.TemporaryDirectory() as out:
        with RunLog.create(Path(out), "fidelity", {"kind": "benchmark"}) as log:
            # One round: the tight loop is one session too, so both sides see the same within-session noise.
            config = RunConfig(
                (Variant("ort-cpu", "ort-cpu", RuntimeOptions()),),
                TimingConfig(rounds=1),
                weights="const",
                verify=False,
                profile_runs=0,
            )
            rows = Runner(config, {"ort-cpu": require("ort-cpu")}, log, "fidelity").run(items, RunState(), Silent())
    return {row.kernel_id: row.median_us for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--seconds",
        type=float,
        default=TimingConfig().min_time,
        help="sampling time of the tight loop per kernel (default: dbench's own)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="fresh sessions per kernel on each side")
    args = parser.parse_args()
    kernels = {k.id: k for k in load_catalog() if k.id in KERNELS}
    graphs = {kid: build(plan([k], ("inference_server",), GenOptions())[0]) for kid, k in kernels.items()}
    ours: dict[str, list[float]] = {kid: [] for kid in KERNELS}
    loop: dict[str, list[float]] = {kid: [] for kid in KERNELS}
    # The machine's slow spells last seconds, so the two sides of a kernel run back to back, their
    # order alternating from round to round, and each round is a fresh session on both sides.
    for round_ in range(args.rounds):
        for kid in KERNELS:
            for side in rotated(("loop", "dbench"), round_):
                if side == "loop":
                    loop[kid].append(tight_loop(graphs[kid], args.seconds))
                else:
                    ours[kid].append(dbench_medians([kid])[kid])
    print(f"{'kernel':<52}{'dbench µs':>11}{'loop µs':>10}{'ratio':>7}  per-round ratios (loop µs)")
    ratios, spreads = [], []
    for kid in KERNELS:
        # Paired: each round's two sessions ran back to back, so they most likely shared the machine's state.
        paired = [a / b for a, b in zip(ours[kid], loop[kid])]
        ratios.append(statistics.median(paired))
        spreads.append((max(loop[kid]) - min(loop[kid])) / statistics.median(loop[kid]))
        rounds = " ".join(f"{r:.3f}({v:.1f})" for r, v in zip(paired, loop[kid]))
        print(
            f"{kid:<52}{statistics.median(ours[kid]):>11.1f}{statistics.median(loop[kid]):>10.1f}"
            f"{ratios[-1]:>7.3f}  {rounds}"
        )
    within = sum(abs(r - 1) <= 0.03 for r in ratios)
    steady = sum(s <= 0.03 for s in spreads)
    print(
        f"within 3%: {within} of {len(ratios)}; median ratio {statistics.median(ratios):.3f}; "
        f"the loop's own sessions agreed within 3% on {steady} of {len(ratios)} kernels"
    )
    smallest = min(KERNELS, key=lambda kid: kernels[kid].flops())
    print(
        f"overhead on the smallest kernel ({smallest}): "
        f"{statistics.median(a - b for a, b in zip(ours[smallest], loop[smallest])):+.2f} µs per call (median of "
        "the rounds' differences)"
    )
    empty = measure(lambda: None, TimingConfig(min_time=0.5))
    print(
        f"timing loop around an empty call: {empty.median_us * 1e3:.0f} ns per call ({empty.calls_per_sample} "
        "calls per sample)"
    )


if __name__ == "__main__":
    main()
