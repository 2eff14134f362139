"""Does dbench's throughput mode measure what the runtimes' own tools measure? Issue 22's goal, in one run.

For each kernel and stream count N (threads T per stream), interleaved round by round (the order of the
sides rotating each round), on the same graph with the same seeded constant weights:

* dbench `--streams N --threads T` on ort-cpu, through its real path (Runner, a fresh worker process,
  the closed loop, one round of --seconds), against a hand-written concurrent ONNX Runtime loop: N
  Python threads calling run_with_iobinding on one session, each on its own IOBinding, with the session
  options dbench sets (intra_op_num_threads = N x (T - 1) + 1), no timestamps;
* dbench on openvino against benchmark_app `-hint none -nstreams N -nthreads N*T -nireq N -t SECONDS
  -infer_precision f32` (its asynchronous AsyncInferQueue loop; -nthreads counts every stream's threads)
  on a copy of the graph with the weights embedded.

Prints per kernel the median over rounds of the paired ratios dbench / tool (target: within 5 % for
kernels of 1 ms or more and for the small GEMVs), the scaling of 2 x 1 over 1 x 1 on the compute-bound
GEMM (target >= 1.6 on 2 cores), and for the server scenario two identical dbench runs at 60 % of the
closed-loop throughput: measured arrival rate against the asked one (target within 2 %) and the p99 of
the two runs (target within 10 % of each other).

    python benchmarks/throughput_vs_tools.py [--rounds 5] [--seconds 3] [--streams 1,2] [--threads 1]
    python benchmarks/throughput_vs_tools.py --rounds 1 --seconds 0.3 --kernels gemm_m64_n1_k1216_nn   # smoke
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import onnx

from dbench.catalog import Selection, load_catalog, select
from dbench.gen.feeds import make_feeds
from dbench.gen.options import GenOptions
from dbench.gen.plan import build, plan
from dbench.gen.weights import embed_weights, split_feeds
from dbench.sources.generated import items_from_requests
from dbench.orchestrator.runner import RunConfig, Runner, RunState, Variant
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.store.log import RunLog
from dbench.worker.load import Load
from dbench.worker.timing import TimingConfig

COMPUTE = ["gemm_m35_n700_k2048_nn", "gemm_m128_n1500_k1280_nn", "gemm_m3072_n1500_k128_nn",
           "conv_w7_h7_c512_n1_k512_s3_r3_pw1_ph1_sw1_sh1", "conv_w28_h28_c512_n1_k128_s1_r1_pw0_ph0_sw1_sh1",
           "conv_w14_h14_c256_n1_k1024_s1_r1_pw0_ph0_sw1_sh1"]
GEMV = ["gemm_m64_n1_k1216_nn", "gemm_m128_n1_k1024_nn", "gemm_m3072_n1_k1024_nn"]
SCALING = "gemm_m128_n1500_k1280_nn"
BENCHMARK_APP = Path(sys.executable).with_name("benchmark_app")
THROUGHPUT_LINE = re.compile(r"Throughput:\s+([\d.]+) FPS")
TARGET, SCALING_TARGET, RATE_TARGET, P99_TARGET = 0.05, 1.6, 0.02, 0.10
SERVER_LOAD = 0.6
"""The server runs at this share of dbench's closed-loop throughput."""


class Silent:
    """A run observer that shows nothing."""

    def on_round(self, number: int, rounds: int, jobs: int) -> None: ...
    def on_start(self, item, variant: str) -> None: ...
    def on_phase(self, item, phase: str) -> None: ...
    def on_row(self, row) -> None: ...


def graphs_of(kernel_ids: list[str]):
    """Each kernel's fp32 forward graph, generated in memory by dbench."""
    kernels = {k.id: k for k in select(load_catalog(), Selection("inference", ops=("gemm", "conv"))) if k.id in kernel_ids}
    missing = sorted(set(kernel_ids) - set(kernels))
    if missing:
        raise SystemExit(f"not inference GEMM or convolution kernels of the catalog: {', '.join(missing)}")
    return {kid: build(plan([kernels[kid]], ("inference_server",), GenOptions())[0]) for kid in kernel_ids}


def dbench_row(graph, runtime: str, load: Load, threads: int, seconds: float) -> dict:
    """One dbench row through the real path (Runner, a fresh worker, one round of `seconds`)."""
    kernels = [k for k in load_catalog() if k.id == graph.spec.kernel_id]
    items = [i for i in items_from_requests(plan(kernels, ("inference_server",), GenOptions())) if i.spec.id == graph.spec.id]
    timing = TimingConfig(rounds=1, min_time=seconds, max_time=max(3 * seconds, seconds + 5))
    config = RunConfig((Variant(runtime, runtime, RuntimeOptions(threads=threads), load),), timing, weights="const",
                       verify=False, profile_runs=0)
    with tempfile.TemporaryDirectory() as out:
        with RunLog.create(Path(out), "throughput", {"kind": "benchmark"}) as log:
            (row,) = Runner(config, {runtime: require(runtime)}, log, "throughput").run(items, RunState(), Silent())
    if row.status != "ok":
        raise SystemExit(f"dbench {runtime} {graph.spec.id}: {row.status}: {row.message}")
    return row.to_dict()


def ort_loop(graph, streams: int, threads: int, seconds: float) -> float:
    """Inferences/s of a hand-written concurrent loop: `streams` threads on one session, one IOBinding
    each, after 3 warm-up calls per thread; the calls in flight when time is up are counted and waited
    for, as dbench counts its ramp-down."""
    import onnxruntime as ort

    constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec), "const")
    options = ort.SessionOptions()
    options.intra_op_num_threads = streams * (threads - 1) + 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(embed_weights(graph.model, constants).SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    bindings = []
    for _ in range(streams):
        binding = session.io_binding()
        for name, array in per_call.items():
            binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(array.copy()))
        binding.bind_output(graph.spec.outputs[0].name, "cpu")
        bindings.append(binding)
    counts = [0] * streams
    stop = threading.Event()
    gate = threading.Barrier(streams + 1)

    def loop(k: int) -> None:
        run, binding = session.run_with_iobinding, bindings[k]
        for _ in range(3):
            run(binding)
        gate.wait()
        done = 0
        while not stop.is_set():
            run(binding)
            done += 1
        counts[k] = done

    workers = [threading.Thread(target=loop, args=(k,)) for k in range(streams)]
    for worker in workers:
        worker.start()
    gate.wait()
    start = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for worker in workers:
        worker.join()
    return sum(counts) / (time.perf_counter() - start)


def app_throughput(model: Path, streams: int, threads: int, seconds: float) -> float:
    """benchmark_app's throughput (FPS) with `streams` streams and requests and their threads."""
    result = subprocess.run([str(BENCHMARK_APP), "-m", str(model), "-d", "CPU", "-hint", "none", "-nstreams", str(streams),
                             "-nthreads", str(streams * threads), "-nireq", str(streams), "-t", str(max(1, round(seconds))),
                             "-infer_precision", "f32", "-api", "async"], capture_output=True, text=True, check=True)
    match = THROUGHPUT_LINE.search(result.stdout)
    if not match:
        raise SystemExit(f"benchmark_app printed no throughput for {model.name}:\n{result.stdout[-2000:]}")
    return float(match.group(1))


def embedded(graph, folder: Path) -> Path:
    """The graph with its seeded constant weights embedded (what dbench's const weights hold), for benchmark_app."""
    constants, _ = split_feeds(graph.spec, make_feeds(graph.spec), "const")
    path = folder / f"{graph.spec.id}.onnx"
    onnx.save(embed_weights(graph.model, constants), path)
    return path


SIDES = ("dbench ort-cpu", "loop", "dbench openvino", "benchmark_app")


def measure(graphs: dict, args, folder: Path) -> tuple[dict, dict]:
    """Inferences/s per (kernel, streams, side) and round, the four sides' order rotating each round; and
    dbench's rows of the last round (their latency under load)."""
    results: dict[tuple[str, int, str], list[float]] = {}
    rows: dict[tuple[str, int, str], dict] = {}
    files = {kid: embedded(graph, folder) for kid, graph in graphs.items()}
    for number in range(args.rounds):
        order = SIDES[number % len(SIDES):] + SIDES[:number % len(SIDES)]
        for kid, graph in graphs.items():
            for streams in args.streams:
                for side in order:
                    if side.startswith("dbench"):
                        runtime = side.split()[1]
                        row = dbench_row(graph, runtime, Load("throughput", streams), args.threads, args.seconds)
                        rows[(kid, streams, side)] = row
                        value = row["inferences_per_s"]
                    elif side == "loop":
                        value = ort_loop(graph, streams, args.threads, args.seconds)
                    else:
                        value = app_throughput(files[kid], streams, args.threads, args.seconds)
                    results.setdefault((kid, streams, side), []).append(value)
                print(f"round {number + 1}/{args.rounds} {kid} {streams}x{args.threads}: " + ", ".join(
                    f"{side} {results[(kid, streams, side)][-1]:.1f}/s" for side in SIDES), file=sys.stderr, flush=True)
    return results, rows


def paired_ratio(results: dict, kid: str, streams: int, ours: str, theirs: str) -> float:
    """The median over rounds of ours / theirs (each round's two sides ran back to back)."""
    return statistics.median(a / b for a, b in zip(results[(kid, streams, ours)], results[(kid, streams, theirs)]))


def print_fidelity(graphs: dict, results: dict, rows: dict, args) -> None:
    print("| kernel | streams | latency p50 | dbench ort inf/s | loop inf/s | ratio | dbench openvino inf/s | benchmark_app inf/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    inside = counted = 0
    for kid in graphs:
        for streams in args.streams:
            median = {side: statistics.median(results[(kid, streams, side)]) for side in SIDES}
            ort_ratio = paired_ratio(results, kid, streams, "dbench ort-cpu", "loop")
            ov_ratio = paired_ratio(results, kid, streams, "dbench openvino", "benchmark_app")
            p50 = rows[(kid, streams, "dbench ort-cpu")]["latency_p50_us"]
            applies = kid in GEMV or p50 >= 1000
            counted += 2 * applies
            inside += applies * ((abs(ort_ratio - 1) <= TARGET) + (abs(ov_ratio - 1) <= TARGET))
            print(f"| {kid} | {streams}x{args.threads} | {p50 / 1e3:.3f} ms | {median['dbench ort-cpu']:.1f} | {median['loop']:.1f} | "
                  f"{ort_ratio:.3f} | {median['dbench openvino']:.1f} | {median['benchmark_app']:.1f} | {ov_ratio:.3f} |")
    print(f"\n{inside} of {counted} ratios (GEMVs, and kernels whose p50 under load is 1 ms or more) within {TARGET:.0%}.")


def print_scaling(results: dict, args) -> None:
    if SCALING not in {kid for kid, _, _ in results} or not {1, 2} <= set(args.streams) or args.threads != 1:
        print(f"\nscaling: needs {SCALING}, --streams 1,2 and --threads 1")
        return
    for side in SIDES:
        ratio = statistics.median(results[(SCALING, 2, side)]) / statistics.median(results[(SCALING, 1, side)])
        print(f"scaling 2x1 / 1x1 on {SCALING}, {side}: {ratio:.2f} (target >= {SCALING_TARGET})")


def server_pair(graph, runtime: str, streams: int, rate: float, threads: int, seconds: float) -> list[dict]:
    """Two identical dbench server runs at `rate` (same seeded schedule)."""
    return [dbench_row(graph, runtime, Load("server", streams, rate), threads, seconds) for _ in range(2)]


def print_server(graphs: dict, results: dict, args) -> None:
    kid = SCALING if SCALING in graphs else next(iter(graphs))
    streams = max(args.streams)
    print(f"\nserver scenario on {kid}, {streams}x{args.threads}, {SERVER_LOAD:.0%} of dbench's closed-loop throughput:")
    for runtime in ("ort-cpu", "openvino"):
        rate = SERVER_LOAD * statistics.median(results[(kid, streams, f"dbench {runtime}")])
        first, second = server_pair(graphs[kid], runtime, streams, rate, args.threads, args.seconds)
        arrival = [abs(r["arrival_rate"] / rate - 1) for r in (first, second)]
        p99 = abs(second["latency_p99_us"] / first["latency_p99_us"] - 1)
        print(f"{runtime}: asked {rate:.1f}/s, measured {first['arrival_rate']:.1f} and {second['arrival_rate']:.1f}/s "
              f"(off by {max(arrival):.1%}, target {RATE_TARGET:.0%}); p99 {first['latency_p99_us'] / 1e3:.3f} and "
              f"{second['latency_p99_us'] / 1e3:.3f} ms ({p99:.1%} apart, target {P99_TARGET:.0%}); "
              f"{first['inferences']} and {second['inferences']} requests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per kernel, stream count and side")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per measurement (benchmark_app: rounded, at least 1)")
    parser.add_argument("--streams", type=lambda t: [int(v) for v in t.split(",")], default=[1, 2])
    parser.add_argument("--threads", type=int, default=1, help="threads per stream")
    parser.add_argument("--kernels", type=lambda t: t.split(","), default=COMPUTE + GEMV)
    args = parser.parse_args()
    import onnxruntime
    import openvino

    graphs = graphs_of(args.kernels)
    with tempfile.TemporaryDirectory() as tmp:
        results, rows = measure(graphs, args, Path(tmp))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"ONNX Runtime {onnxruntime.__version__}, OpenVINO {openvino.__version__}, {os.cpu_count()} CPUs, "
          f"{args.rounds} interleaved rounds of {args.seconds:g} s; load average at the end {load}\n")
    print_fidelity(graphs, results, rows, args)
    print_scaling(results, args)
    print_server(graphs, results, args)


if __name__ == "__main__":
    main()
