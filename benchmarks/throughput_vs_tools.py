"""Does dbench's throughput mode measure what the runtimes' own tools measure? In one interleaved run.

For each kernel and stream count N (threads T per stream), interleaved round by round (the order of the
sides rotating each round), on the same graph with the same seeded constant weights:

* dbench `--streams N --threads T` on ort-cpu, through its real path (Runner, a fresh worker process,
  the closed loop, one round of --seconds), against a hand-written concurrent ONNX Runtime loop: N
  Python threads calling run_with_iobinding on one session, each on its own IOBinding, with the session
  options dbench sets (intra_op_num_threads = N x (T - 1) + 1), no timestamps;
* dbench on openvino against benchmark_app `-hint none -nstreams N -nthreads N*T -nireq N -t SECONDS
  -infer_precision f32` (its asynchronous AsyncInferQueue loop; -nthreads counts every stream's threads)
  on a copy of the graph with the weights embedded, and against the same compiled configuration looped
  in C++ (benchmarks/ov_loop.cpp, built here with g++ against the OpenVINO wheel's headers and library,
  no Python on the path) two ways: `C++ sync`, N threads each calling its request's infer() (dbench's
  own loop), and `C++ async`, each request restarted from its completion callback (benchmark_app's
  design). The wheel ships only the Python benchmark_app; the C++ loops say what the Python tools' own
  loops cost and what OpenVINO's asynchronous path costs by itself.

Every side also runs an "empty" graph (one Add of a 1 x 16 tensor to itself) in the same rounds: its
time per inference (1e6 / inf/s) is that side's own floor, what its loop costs per request with next
to no kernel behind it (benchmark_app's Python loop is suspected to cost ~0.12 ms per request).

Prints per kernel the median over rounds of the paired ratios dbench / tool (target: within 5 % for
kernels of 1 ms or more and for the small GEMVs) and, derived from the medians, the same ratio with each
side's floor taken off its time per inference (what the ratio would be if only the kernel's own time
counted; it assumes a loop's cost adds to the kernel's time, as it does at one stream); each side's
floor; the scaling of 2 x 1 over 1 x 1 on the compute-bound GEMM (target >= 1.6 on 2 cores); and for
the server scenario two identical dbench runs (3 rounds, the default 2500 arrivals) at 60 % of the
closed-loop throughput: measured arrival rate against the asked one (target within 2 %) and the p99 of
the two runs (target within 10 % of each other) with each one's order-statistic interval.

    python benchmarks/throughput_vs_tools.py [--rounds 5] [--seconds 3] [--streams 1,2] [--threads 1]
    python benchmarks/throughput_vs_tools.py --rounds 1 --seconds 0.3 --kernels gemm_m64_n1_k1216_nn   # smoke

Its figures go to a dated page under docs/measurements/ (the last: 2026-11-26-throughput-vs-tools.md);
docs/benchmarks.md lists every benchmark.
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from dbench.catalog import Selection, load_catalog, select
from dbench.gen.feeds import make_feeds
from dbench.gen.options import GenOptions
from dbench.gen.plan import build, plan
from dbench.gen.weights import embed_weights, split_feeds
from dbench.orchestrator.runner import RunConfig, Runner, RunState, Variant
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.scenario import Load
from dbench.sources.generated import items_from_requests
from dbench.sources.item import Item
from dbench.sources.model import model_item
from dbench.stats.interleave import rotated
from dbench.stats.quantile import P99, P99_ABOVE, arrivals_for
from dbench.store.log import RunLog
from dbench.worker.timing import TimingConfig

COMPUTE = [
    "gemm_m35_n700_k2048_nn",
    "gemm_m128_n1500_k1280_nn",
    "gemm_m3072_n1500_k128_nn",
    "conv_w7_h7_c512_n1_k512_s3_r3_pw1_ph1_sw1_sh1",
    "conv_w28_h28_c512_n1_k128_s1_r1_pw0_ph0_sw1_sh1",
    "conv_w14_h14_c256_n1_k1024_s1_r1_pw0_ph0_sw1_sh1",
]
GEMV = ["gemm_m64_n1_k1216_nn", "gemm_m128_n1_k1024_nn", "gemm_m3072_n1_k1024_nn"]
SCALING = "gemm_m128_n1500_k1280_nn"
BENCHMARK_APP = Path(sys.executable).with_name("benchmark_app")
OV_LOOP_SOURCE = Path(__file__).with_name("ov_loop.cpp")
THROUGHPUT_LINE = re.compile(r"Throughput:\s+([\d.]+) FPS")
TARGET, SCALING_TARGET, RATE_TARGET, P99_TARGET = 0.05, 1.6, 0.02, 0.10
SERVER_LOAD = 0.6
"""The server runs at this share of dbench's closed-loop throughput."""
EMPTY = "empty_add"
"""The graph whose time per inference is each side's own floor: Y = X + X on a 1 x 16 float tensor."""


class Silent:
    """A run observer that shows nothing."""

    def on_round(self, number: int, rounds: int, jobs: int) -> None: ...
    def on_start(self, item, variant: str) -> None: ...
    def on_phase(self, item, phase: str) -> None: ...
    def on_row(self, row) -> None: ...


@dataclass(frozen=True)
class Subject:
    """One graph every side runs: dbench's item (its real path), the ONNX file with the weights embedded
    (benchmark_app and the hand-written loop load it), one call's inputs and the output to bind."""

    name: str
    item: Item
    path: Path
    feeds: dict[str, np.ndarray]
    output: str


def kernel_subjects(kernel_ids: list[str], folder: Path) -> dict[str, Subject]:
    """Each kernel's fp32 forward graph, generated by dbench, with its seeded constant weights embedded
    in a file (what dbench's const weights hold)."""
    kernels = {
        k.id: k for k in select(load_catalog(), Selection("inference", ops=("gemm", "conv"))) if k.id in kernel_ids
    }
    missing = sorted(set(kernel_ids) - set(kernels))
    if missing:
        raise SystemExit(f"not inference GEMM or convolution kernels of the catalog: {', '.join(missing)}")
    subjects = {}
    for kid in kernel_ids:
        request = plan([kernels[kid]], ("inference_server",), GenOptions())
        graph = build(request[0])
        (item,) = [i for i in items_from_requests(request) if i.spec.id == graph.spec.id]
        constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec), "const")
        path = folder / f"{graph.spec.id}.onnx"
        onnx.save(embed_weights(graph.model, constants), path)
        subjects[kid] = Subject(kid, item, path, per_call, graph.spec.outputs[0].name)
    return subjects


def empty_subject(folder: Path) -> Subject:
    """The empty graph, run by dbench as a model file."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 16])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 16])
    graph = helper.make_graph([helper.make_node("Add", ["X", "X"], ["Y"])], EMPTY, [x], [y])
    path = folder / f"{EMPTY}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return Subject(EMPTY, model_item(path, {}), path, {"X": np.ones((1, 16), np.float32)}, "Y")


def dbench_row(
    item: Item, runtime: str, load: Load, threads: int, seconds: float, rounds: int = 1, max_time: float | None = None
) -> dict:
    """One dbench row through the real path (Runner, a fresh worker per round, `rounds` rounds of
    `seconds` in all, at most `max_time`)."""
    timing = TimingConfig(rounds=rounds, min_time=seconds, max_time=max_time or max(3 * seconds, seconds + 5))
    config = RunConfig(
        (Variant(runtime, runtime, RuntimeOptions(threads=threads), load),),
        timing,
        weights="const",
        verify=False,
        profile_runs=0,
    )
    with tempfile.TemporaryDirectory() as out:
        with RunLog.create(Path(out), "throughput", {"kind": "benchmark"}) as log:
            (row,) = Runner(config, {runtime: require(runtime)}, log, "throughput").run([item], RunState(), Silent())
    if row.status != "ok":
        raise SystemExit(f"dbench {runtime} {item.spec.id}: {row.status}: {row.message}")
    return row.to_dict()


def ort_loop(subject: Subject, streams: int, threads: int, seconds: float) -> float:
    """Inferences/s of a hand-written concurrent loop: `streams` threads on one session, one IOBinding
    each, after 3 warm-up calls per thread; the calls in flight when time is up are counted and waited
    for, as dbench counts its ramp-down."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = streams * (threads - 1) + 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(str(subject.path), options, providers=["CPUExecutionProvider"])
    bindings = []
    for _ in range(streams):
        binding = session.io_binding()
        for name, array in subject.feeds.items():
            binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(array.copy()))
        binding.bind_output(subject.output, "cpu")
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
    result = subprocess.run(
        [
            str(BENCHMARK_APP),
            "-m",
            str(model),
            "-d",
            "CPU",
            "-hint",
            "none",
            "-nstreams",
            str(streams),
            "-nthreads",
            str(streams * threads),
            "-nireq",
            str(streams),
            "-t",
            str(max(1, round(seconds))),
            "-infer_precision",
            "f32",
            "-api",
            "async",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    match = THROUGHPUT_LINE.search(result.stdout)
    if not match:
        raise SystemExit(f"benchmark_app printed no throughput for {model.name}:\n{result.stdout[-2000:]}")
    return float(match.group(1))


def build_ov_loop(folder: Path) -> Path:
    """benchmarks/ov_loop.cpp compiled against the installed OpenVINO wheel's headers and library."""
    import openvino

    wheel = Path(openvino.__file__).parent
    libraries = sorted((wheel / "libs").glob("libopenvino.so.*"))
    if not libraries or not (wheel / "include").is_dir():
        raise SystemExit(
            f"the OpenVINO wheel in {wheel} has no C++ headers or libopenvino.so: cannot build the C++ loop"
        )
    target = folder / "ov_loop"
    command = [
        "g++",
        "-O2",
        "-std=c++17",
        str(OV_LOOP_SOURCE),
        "-I",
        str(wheel / "include"),
        str(libraries[0]),
        f"-Wl,-rpath,{wheel / 'libs'}",
        "-pthread",
        "-o",
        str(target),
    ]
    try:
        subprocess.run(command, capture_output=True, text=True, check=True)
    except FileNotFoundError:
        raise SystemExit("g++ is not installed: it builds the C++ OpenVINO loop (apt install g++)") from None
    except subprocess.CalledProcessError as err:
        raise SystemExit(f"building {OV_LOOP_SOURCE.name} failed:\n{err.stderr[-2000:]}") from None
    return target


def cpp_throughput(loop: Path, model: Path, streams: int, threads: int, seconds: float, mode: str) -> float:
    """The C++ loop's inferences/s (`mode` sync or async) with `streams` streams and requests and their threads."""
    result = subprocess.run(
        [str(loop), str(model), str(streams), str(threads), str(seconds), mode], capture_output=True, text=True
    )
    if result.returncode:
        raise SystemExit(f"ov_loop failed on {model.name}: {result.stderr.strip()[-2000:]}")
    return float(result.stdout)


SIDES = ("dbench ort-cpu", "loop", "dbench openvino", "benchmark_app", "C++ sync", "C++ async")


def measure(subjects: dict[str, Subject], args) -> tuple[dict, dict]:
    """Inferences/s per (subject, streams, side) and round, the sides' order rotating each round; and
    dbench's rows of the last round (their latency under load)."""
    results: dict[tuple[str, int, str], list[float]] = {}
    rows: dict[tuple[str, int, str], dict] = {}
    for number in range(args.rounds):
        order = rotated(SIDES, number)
        for name, subject in subjects.items():
            for streams in args.streams:
                for side in order:
                    if side.startswith("dbench"):
                        runtime = side.split()[1]
                        row = dbench_row(subject.item, runtime, Load("throughput", streams), args.threads, args.seconds)
                        rows[(name, streams, side)] = row
                        value = row["inferences_per_s"]
                    elif side == "loop":
                        value = ort_loop(subject, streams, args.threads, args.seconds)
                    elif side.startswith("C++"):
                        value = cpp_throughput(
                            args.ov_loop, subject.path, streams, args.threads, args.seconds, side.split()[1]
                        )
                    else:
                        value = app_throughput(subject.path, streams, args.threads, args.seconds)
                    results.setdefault((name, streams, side), []).append(value)
                print(
                    f"round {number + 1}/{args.rounds} {name} {streams}x{args.threads}: "
                    + ", ".join(f"{side} {results[(name, streams, side)][-1]:.1f}/s" for side in SIDES),
                    file=sys.stderr,
                    flush=True,
                )
    return results, rows


def paired_ratio(results: dict, kid: str, streams: int, ours: str, theirs: str) -> float:
    """The median over rounds of ours / theirs (each round's two sides ran back to back)."""
    return statistics.median(a / b for a, b in zip(results[(kid, streams, ours)], results[(kid, streams, theirs)]))


def floor_us(results: dict, streams: int, side: str) -> float:
    """A side's own floor at `streams`: its median time per inference on the empty graph, µs."""
    return 1e6 / statistics.median(results[(EMPTY, streams, side)])


def net_ratio(results: dict, kid: str, streams: int, ours: str, theirs: str) -> str:
    """Derived: ours / theirs in inferences/s after each side's floor is taken off its median time per
    inference ('n/a' where a floor is as long as the kernel's time)."""
    net = [
        1e6 / statistics.median(results[(kid, streams, side)]) - floor_us(results, streams, side)
        for side in (ours, theirs)
    ]
    return f"{net[1] / net[0]:.3f}" if min(net) > 0 else "n/a"


def print_fidelity(kernels: list[str], results: dict, rows: dict, args) -> None:
    print(
        "| kernel | streams | latency p50 | dbench ort inf/s | loop inf/s | ratio | net of floors (derived) "
        "| dbench openvino inf/s | benchmark_app inf/s | ratio | net of floors (derived) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    inside = counted = 0
    for kid in kernels:
        for streams in args.streams:
            median = {side: statistics.median(results[(kid, streams, side)]) for side in SIDES}
            ort_ratio = paired_ratio(results, kid, streams, "dbench ort-cpu", "loop")
            ov_ratio = paired_ratio(results, kid, streams, "dbench openvino", "benchmark_app")
            p50 = rows[(kid, streams, "dbench ort-cpu")]["latency_p50_us"]
            applies = kid in GEMV or p50 >= 1000
            counted += 2 * applies
            inside += applies * ((abs(ort_ratio - 1) <= TARGET) + (abs(ov_ratio - 1) <= TARGET))
            print(
                f"| {kid} | {streams}x{args.threads} | {p50 / 1e3:.3f} ms | {median['dbench ort-cpu']:.1f} | "
                f"{median['loop']:.1f} | "
                f"{ort_ratio:.3f} | {net_ratio(results, kid, streams, 'dbench ort-cpu', 'loop')} | "
                f"{median['dbench openvino']:.1f} | {median['benchmark_app']:.1f} | {ov_ratio:.3f} | "
                f"{net_ratio(results, kid, streams, 'dbench openvino', 'benchmark_app')} |"
            )
    print(
        f"\n{inside} of {counted} ratios (GEMVs, and kernels whose p50 under load is 1 ms or more) within {TARGET:.0%}."
    )
    print(
        "net of floors (derived): the ratio of the medians after each side's floor (below) is taken off its time per "
        "inference; it assumes a loop's own cost adds to the kernel's time (true at one stream, approximate at more)."
    )


def print_cpp(kernels: list[str], results: dict, rows: dict, args) -> None:
    """OpenVINO's sides against the C++ loops of the same compiled model: dbench against the sync loop,
    benchmark_app against the async one."""
    print("\nOpenVINO against the C++ loops (same compiled configuration, no Python on their path):")
    print(
        "| kernel | streams | C++ sync inf/s | C++ async inf/s | dbench openvino / C++ sync | benchmark_app / C++ "
        "async |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    inside = counted = 0
    for kid in kernels:
        for streams in args.streams:
            ours = paired_ratio(results, kid, streams, "dbench openvino", "C++ sync")
            app = paired_ratio(results, kid, streams, "benchmark_app", "C++ async")
            applies = kid in GEMV or rows[(kid, streams, "dbench ort-cpu")]["latency_p50_us"] >= 1000
            counted += applies
            inside += applies * (abs(ours - 1) <= TARGET)
            print(
                f"| {kid} | {streams}x{args.threads} | {statistics.median(results[(kid, streams, 'C++ sync')]):.1f} | "
                f"{statistics.median(results[(kid, streams, 'C++ async')]):.1f} | {ours:.3f} | {app:.3f} |"
            )
    print(f"\n{inside} of {counted} dbench openvino / C++ sync ratios within {TARGET:.0%} (same kernels as above).")


def print_floors(results: dict, args) -> None:
    print(f"\nfloors: time per inference on {EMPTY} (Y = X + X, 1 x 16 fp32), µs, median over rounds:")
    print("| streams | " + " | ".join(SIDES) + " |")
    print("|---|" + "---:|" * len(SIDES))
    for streams in args.streams:
        print(
            f"| {streams}x{args.threads} | "
            + " | ".join(f"{floor_us(results, streams, side):.2f}" for side in SIDES)
            + " |"
        )


def print_scaling(results: dict, args) -> None:
    if SCALING not in {kid for kid, _, _ in results} or not {1, 2} <= set(args.streams) or args.threads != 1:
        print(f"\nscaling: needs {SCALING}, --streams 1,2 and --threads 1")
        return
    for side in SIDES:
        ratio = statistics.median(results[(SCALING, 2, side)]) / statistics.median(results[(SCALING, 1, side)])
        print(f"scaling 2x1 / 1x1 on {SCALING}, {side}: {ratio:.2f} (target >= {SCALING_TARGET})")


def server_pair(subject: Subject, runtime: str, streams: int, rate: float, threads: int, seconds: float) -> list[dict]:
    """Two identical dbench server runs at `rate` (same seeded schedules), 3 rounds each, with --max-time
    long enough for the default arrivals (so that the p99 rests on P99_ABOVE requests)."""
    max_time = max(3 * seconds, seconds + 5, 1.2 * arrivals_for(P99, P99_ABOVE) / rate)
    return [
        dbench_row(subject.item, runtime, Load("server", streams, rate), threads, seconds, rounds=3, max_time=max_time)
        for _ in range(2)
    ]


def p99_text(row: dict) -> str:
    """`19.8 ms (CI 17.1-23.4, 25 above)`: the p99, its order-statistic interval and what it rests on."""
    low, high = (row.get(k) for k in ("latency_p99_ci_low_us", "latency_p99_ci_high_us"))
    ci = f"{low / 1e3:.3f}-" + (f"{high / 1e3:.3f}" if high else "inf") if low else "none"
    return f"{row['latency_p99_us'] / 1e3:.3f} ms (CI {ci}, {row['latency_p99_above']} above)"


def print_server(subjects: dict[str, Subject], results: dict, args) -> None:
    kid = SCALING if SCALING in subjects else next(k for k in subjects if k != EMPTY)
    streams = max(args.streams)
    print(
        f"\nserver scenario on {kid}, {streams}x{args.threads}, {SERVER_LOAD:.0%} of dbench's closed-loop throughput:"
    )
    for runtime in ("ort-cpu", "openvino"):
        rate = SERVER_LOAD * statistics.median(results[(kid, streams, f"dbench {runtime}")])
        first, second = server_pair(subjects[kid], runtime, streams, rate, args.threads, args.seconds)
        arrival = [abs(r["arrival_rate"] / rate - 1) for r in (first, second)]
        p99 = abs(second["latency_p99_us"] / first["latency_p99_us"] - 1)
        print(
            f"{runtime}: asked {rate:.1f}/s, measured {first['arrival_rate']:.1f} and {second['arrival_rate']:.1f}/s "
            f"(off by {max(arrival):.1%}, target {RATE_TARGET:.0%}); p99 {p99_text(first)} and {p99_text(second)}: "
            f"{p99:.1%} apart, target {P99_TARGET:.0%}; {first['requests']} and {second['requests']} requests"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per kernel, stream count and side")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="timed seconds per measurement (benchmark_app: rounded, at least 1)"
    )
    parser.add_argument("--streams", type=lambda t: [int(v) for v in t.split(",")], default=[1, 2])
    parser.add_argument("--threads", type=int, default=1, help="threads per stream")
    parser.add_argument("--kernels", type=lambda t: t.split(","), default=COMPUTE + GEMV)
    args = parser.parse_args()
    import onnxruntime
    import openvino

    with tempfile.TemporaryDirectory() as tmp:
        args.ov_loop = build_ov_loop(Path(tmp))
        subjects = {EMPTY: empty_subject(Path(tmp)), **kernel_subjects(args.kernels, Path(tmp))}
        results, rows = measure(subjects, args)
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"ONNX Runtime {onnxruntime.__version__}, OpenVINO {openvino.__version__}, {os.cpu_count()} CPUs, "
            f"{args.rounds} interleaved rounds of {args.seconds:g} s; load average at the end {load}\n"
        )
        print_fidelity(args.kernels, results, rows, args)
        print_cpp(args.kernels, results, rows, args)
        print_floors(results, args)
        print_scaling(results, args)
        print_server(subjects, results, args)


if __name__ == "__main__":
    main()
