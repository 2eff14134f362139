"""Is a row's time the runtime's time? dbench against each runtime's own tool on the same graph, threads
and streams, interleaved in one run.

OpenVINO: dbench against `benchmark_app` (the wheel's; sync API, LATENCY hint, one stream, f32, the same
threads, given as its -load_config), and (`openvino-loop`) against OpenVINO's Python API in a tight loop
as benchmark_app calls it but over the request's own input tensors (the wheel's benchmark_app reads
numpy-made inputs, off a 64 B line). ONNX Runtime CPU: dbench against a tight `run_with_iobinding` loop
of ONNX Runtime's API with dbench's session options. Each loop runs in a fresh process (`--loop`). Each
round times every kernel on every runtime once per side, the sides' order rotated round by round, each
side a fresh process: dbench a one-round `dbench run` (one fresh worker), the tool one run of its own.
It prints each side's median over the rounds, their ratio, the spread of the paired per-round ratios,
and dbench's row note where it flags its state (inputs not on huge pages). Goal: every median within 2 %.
`--baseline DIR` times the dbench of another checkout as a third side of every round (a change's
before and after, interleaved).

Weights: `--weights input` (default: fed per call, as the decode GEMV streams them; benchmark_app gets the
generated file and fills every input with its own random data) or `const` (each file gets its seeded
weights embedded, and that file goes to every side).

The script holds the machine's timing lock (dbench.orchestrator.lock, waiting for it) for the whole
comparison, since the tools time too; its own `dbench run`s take a private lock folder.

    .venv/bin/python benchmarks/fidelity.py --rounds 3                  # about 10 minutes on 2 cores
    .venv/bin/python benchmarks/fidelity.py --kernels gemm_m3072_n1_k1024_nn --runtimes openvino --rounds 9
    mkdir /tmp/before && git archive HEAD~1 dbench | tar -x -C /tmp/before
    .venv/bin/python benchmarks/fidelity.py --baseline /tmp/before

Its figures go to a dated page under docs/measurements/; docs/benchmarks.md lists every benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNELS = (
    "gemm_m3072_n1_k1024_nn",  # the decode-shaped GEMV: 12 MB of weights streamed per call
    "gemm_m3072_n4_k1024_nn",
    "gemm_m6144_n2_k2048_nn",
    "gemm_m128_n1500_k1280_nn",
    "gemm_m512_n1500_k1536_nn",
    "gemm_m35_n700_k2048_nn",
    "conv_w7_h7_c832_n1_k256_s1_r1_pw0_ph0_sw1_sh1",
    "conv_w27_h27_c128_n1_k128_s3_r3_pw1_ph1_sw1_sh1",
    "rnn_lstm_h512_n1_t25",
)
BENCHMARK_APP = Path(sys.executable).with_name("benchmark_app")
MEDIAN_LINE = re.compile(r"Median:\s+([\d.]+) (ms|us)")
TOOLS = {"openvino": "benchmark_app", "ort-cpu": "ORT loop", "openvino-loop": "OpenVINO loop"}


def generate(folder: Path, kernels: list[str]) -> list:
    """`dbench gen` of the inference suite's GEMMs, convolutions and RNNs matching `kernels`; their entries."""
    from dbench.gen.manifest import read_manifest

    subprocess.run(
        [sys.executable, "-m", "dbench", "gen", "--suite", "inference", "--ops", "gemm,conv,rnn"]
        + ["--id", ",".join(k + "*" for k in kernels), "--out", str(folder)],
        check=True,
        capture_output=True,
    )
    entries = read_manifest(folder / "inference")
    found = {e.spec.kernel_id: e for e in entries}
    missing = [k for k in kernels if k not in found]
    if missing:
        raise SystemExit(f"not in the inference suite: {', '.join(missing)}")
    return [found[k] for k in kernels]


def subset(source: Path, entries: list, target: Path, weights: str) -> dict[str, Path]:
    """A gen folder with just `entries` (for `dbench run --graphs`), and the file the tools get per graph:
    the generated one, or (`const`) a copy with the seeded weights embedded."""
    import onnx

    from dbench.gen.feeds import make_feeds
    from dbench.gen.manifest import write_manifest
    from dbench.gen.weights import embed_weights, split_feeds

    target.mkdir()
    files = {}
    for entry in entries:
        shutil.copy(source / entry.file, target / entry.file)
        files[entry.spec.id] = target / entry.file
        if weights == "const":
            constants, _ = split_feeds(entry.spec, make_feeds(entry.spec), "const")
            files[entry.spec.id] = target / f"{entry.spec.id}.const.onnx"
            onnx.save(embed_weights(onnx.load(source / entry.file), constants), files[entry.spec.id])
    write_manifest(target, entries)
    return files


def dbench_round(
    graphs: Path, kernel: str, runtime: str, args, out: Path, code: Path | None = None
) -> tuple[float, float | None, str]:
    """One one-round `dbench run` (a fresh worker): the row's median µs, the runtime's own clock's median
    of the same calls (OpenVINO's `InferRequest.latency`, what benchmark_app reports; None where the
    runtime keeps none) and the row's message; `code`: the dbench of another checkout (its worker too)."""
    before = set(out.glob("*/*.jsonl"))
    command = [sys.executable, "-m", "dbench", "run", "--graphs", str(graphs), "--id", kernel]
    command += ["--runtime", runtime, "--threads", str(args.threads), "--weights", args.weights, "--rounds", "1"]
    command += ["--min-time", str(args.seconds), "--profile-runs", "0", "--no-verify", "--out", str(out)]
    env = {**os.environ, "DBENCH_LOCK_DIR": str(out / "lock")}  # this script holds the machine's lock
    if code is not None:
        env["PYTHONPATH"] = str(code)
    subprocess.run(command, check=True, capture_output=True, env=env)
    (log,) = set(out.glob("*/*.jsonl")) - before
    (row,) = [r for r in map(json.loads, log.read_text().splitlines()[1:]) if r.get("type") == "result"]
    if row["status"] != "ok":
        raise SystemExit(f"dbench: {kernel} on {runtime}: {row['status']}: {row['message']}")
    return row["median_us"], row.get("runtime_median_us"), row.get("message") or ""


def benchmark_app_round(model: Path, config: Path, seconds: float) -> float:
    """benchmark_app's median latency (µs): sync API, latency hint, f32, the config's streams and threads
    (benchmark_app refuses -nstreams/-nthreads together with -hint)."""
    command = [str(BENCHMARK_APP), "-m", str(model), "-d", "CPU", "-api", "sync", "-hint", "latency"]
    command += ["-infer_precision", "f32", "-t", str(max(1, round(seconds))), "-load_config", str(config)]
    result = subprocess.run(command, check=True, capture_output=True, text=True)
    match = MEDIAN_LINE.search(result.stdout)
    if not match:
        raise SystemExit(f"benchmark_app printed no median for {model.name}:\n{result.stdout[-2000:]}")
    value, unit = float(match.group(1)), match.group(2)
    return value if unit == "us" else value * 1e3


def loop_round(graphs: Path, model: Path, kernel: str, runtime: str, args) -> float:
    """A fresh process's tight loop of the runtime's own API (`--loop`): its median µs."""
    command = [sys.executable, __file__, "--loop", str(model), "--graphs", str(graphs), "--kernels", kernel]
    command += ["--runtimes", runtime, "--threads", str(args.threads), "--weights", args.weights]
    command += ["--seconds", str(args.seconds)]
    return float(subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()[-1])


def per_call_feeds(graphs: Path, kernel: str, weights: str) -> dict:
    """The graph's per-call inputs, seeded as dbench's, made by numpy as a user's script makes them."""
    from dbench.gen.feeds import make_feeds
    from dbench.gen.manifest import read_manifest
    from dbench.gen.weights import split_feeds

    (entry,) = [e for e in read_manifest(graphs) if e.spec.kernel_id == kernel]
    return split_feeds(entry.spec, make_feeds(entry.spec), weights)[1]


def time_calls(call, seconds: float) -> float:
    """Median µs of back-to-back calls for `seconds` (at least 10), after 0.1 s of warm-up."""
    clock = time.perf_counter_ns
    end = time.perf_counter() + 0.1
    while time.perf_counter() < end:
        call()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 10:
        t0 = clock()
        call()
        times.append(clock() - t0)
    return statistics.median(times) / 1e3


def ort_loop(model: Path, feeds: dict, threads: int, seconds: float) -> float:
    """`run_with_iobinding` on dbench's ORT session options, the numpy inputs bound as they are."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    for name, array in feeds.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array)))
    for output in session.get_outputs():
        binding.bind_output(output.name, "cpu")
    return time_calls(lambda: session.run_with_iobinding(binding), seconds)


def openvino_loop(model: Path, feeds: dict, threads: int, seconds: float) -> float:
    """OpenVINO's sync `infer` as benchmark_app calls it (latency hint, one stream, f32, the threads), the
    inputs copied into the request's own tensors (the plugin's allocator, as the C++ benchmark_app's
    `ov::Tensor`s), the wall time of each call as dbench takes it."""
    import openvino as ov

    config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1, "INFERENCE_NUM_THREADS": threads}
    compiled = ov.Core().compile_model(str(model), "CPU", {**config, "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    for port in compiled.inputs:
        request.get_tensor(port).data[...] = feeds[port.any_name]
    return time_calls(lambda: request.infer(share_outputs=True), seconds)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(entries: list, graphs: Path, files: dict[str, Path], args, work: Path) -> tuple[dict, list[str]]:
    """Per (kernel, runtime): each side's per-round medians (µs) and dbench's row notes, the sides' order
    rotated round by round."""
    from dbench.stats.interleave import rotated

    config = work / "config.json"
    config.write_text(
        json.dumps(
            {
                "CPU": {
                    "PERFORMANCE_HINT": "LATENCY",
                    "NUM_STREAMS": "1",
                    "INFERENCE_NUM_THREADS": str(args.threads),
                    "INFERENCE_PRECISION_HINT": "f32",
                }
            }
        )
    )
    results: dict[tuple[str, str], dict] = {
        (e.spec.kernel_id, r): {"dbench": [], "clock": [], "tool": [], "baseline": [], "notes": set()}
        for e in entries
        for r in args.runtimes
    }
    sides = ("dbench", "tool", "baseline") if args.baseline else ("dbench", "tool")
    loads = [load_average()]
    for number in range(args.rounds):
        for position, entry in enumerate(entries):
            kernel = entry.spec.kernel_id
            for runtime in args.runtimes:
                cell = results[(kernel, runtime)]
                timed = runtime.removesuffix("-loop")  # openvino-loop: dbench on openvino against the loop
                for side in rotated(sides, number + position):
                    if side == "baseline":
                        cell["baseline"].append(
                            dbench_round(graphs, kernel, timed, args, work / "baseline", args.baseline)[0]
                        )
                    elif side == "dbench":
                        median, clock, note = dbench_round(graphs, kernel, timed, args, work / "results")
                        cell["dbench"].append(median)
                        cell["clock"].append(clock)
                        if note:
                            cell["notes"].add(note)
                    elif runtime == "openvino":
                        cell["tool"].append(benchmark_app_round(files[entry.spec.id], config, args.seconds))
                    else:
                        cell["tool"].append(loop_round(graphs, files[entry.spec.id], kernel, runtime, args))
                print(
                    f"round {number + 1}/{args.rounds} {kernel} {runtime}: dbench {cell['dbench'][-1]:.1f} µs, "
                    f"{TOOLS[runtime]} {cell['tool'][-1]:.1f} µs",
                    file=sys.stderr,
                    flush=True,
                )
        loads.append(load_average())
    return results, loads


def spread(values: list[float]) -> str:
    """(max - min) / median of one side's per-round medians: how much its fresh processes disagreed."""
    return f"{(max(values) - min(values)) / statistics.median(values):.0%}"


def print_table(results: dict, args) -> None:
    """One line per kernel and runtime: each side's median over the rounds, dbench's over the tool's (the
    verdict), the same with the runtime's own clock of dbench's calls where it keeps one (the time inside
    the call, without the Python binding), the paired rounds' ratios and each side's spread."""
    base = " baseline µs | baseline / tool |" if args.baseline else ""
    print(
        "| kernel | runtime | tool | dbench µs | tool µs | ratio | within 2 % | dbench's runtime clock / tool | "
        f"paired ratios (min–max) | rounds' spread dbench / tool |{base} dbench's note |"
    )
    print("|---|---|---|---:|---:|---:|:-:|---:|---:|---:|" + ("---:|---:|" if args.baseline else "") + "---|")
    inside = 0
    for (kernel, runtime), cell in results.items():
        ours, theirs = cell["dbench"], cell["tool"]
        a, b = statistics.median(ours), statistics.median(theirs)
        clocks = [c for c in cell["clock"] if c is not None]
        clock = f"{statistics.median(clocks) / b:.3f}" if clocks else "n/a"
        paired = [x / y for x, y in zip(ours, theirs)]
        inside += abs(a / b - 1) <= 0.02
        baseline = cell["baseline"]
        print(
            f"| {kernel} | {runtime} | {TOOLS[runtime]} | {a:.1f} | {b:.1f} | {a / b:.3f} | "
            f"{'yes' if abs(a / b - 1) <= 0.02 else '**no**'} | {clock} | {min(paired):.2f}–{max(paired):.2f} | "
            f"{spread(ours)} / {spread(theirs)} |"
            + (f" {statistics.median(baseline):.1f} | {statistics.median(baseline) / b:.3f} |" if baseline else "")
            + f" {'; '.join(sorted(cell['notes']))} |"
        )
    print(f"\n{inside} of {len(results)} within 2 %.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default=",".join(KERNELS), help="kernel ids of the inference suite")
    parser.add_argument(
        "--runtimes",
        default="openvino,openvino-loop,ort-cpu",
        help="openvino (against benchmark_app), openvino-loop (against OpenVINO's API in a loop), ort-cpu",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds, each side a fresh process")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="inference threads, every side")
    parser.add_argument("--weights", choices=("const", "input"), default="input")
    parser.add_argument("--seconds", type=float, default=2.0, help="sampling time per side and round")
    parser.add_argument(
        "--baseline", type=Path, help="a checkout of another dbench commit, timed as a third side (before/after)"
    )
    parser.add_argument("--loop", type=Path, help=argparse.SUPPRESS)  # one tight ORT loop in this process
    parser.add_argument("--graphs", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    kernels = args.kernels.split(",")
    if args.loop:
        loop = {"ort-cpu": ort_loop, "openvino-loop": openvino_loop}[args.runtimes]
        print(
            f"{loop(args.loop, per_call_feeds(args.graphs, kernels[0], args.weights), args.threads, args.seconds):.3f}"
        )
        return
    args.runtimes = args.runtimes.split(",")
    if unknown := set(args.runtimes) - set(TOOLS):
        raise SystemExit(f"--runtimes: unknown {', '.join(sorted(unknown))}; valid: {', '.join(TOOLS)}")
    import onnxruntime
    import openvino

    from dbench.orchestrator.lock import TimingLock

    with (
        tempfile.TemporaryDirectory() as tmp,
        TimingLock("benchmarks/fidelity.py", tmp, "wait").acquire(
            lambda line: print(line, file=sys.stderr, flush=True)
        ),
    ):
        work = Path(tmp)
        entries = generate(work / "gen", kernels)
        files = subset(work / "gen" / "inference", entries, work / "graphs", args.weights)
        results, loads = measure(entries, work / "graphs", files, args, work)
    print(
        f"OpenVINO {openvino.__version__}, ONNX Runtime {onnxruntime.__version__}; {args.threads} threads, "
        f"weights {args.weights}, {args.rounds} interleaved rounds of {args.seconds:g} s a side; load average "
        f"(1/5/15 min) at the start and after each round: {' | '.join(loads)}\n"
    )
    print_table(results, args)


if __name__ == "__main__":
    main()
