"""Does dbench time OpenVINO as OpenVINO's own `benchmark_app` does?

For GEMM and convolution inference kernels, both tools time the same .onnx file made by `dbench gen`
(sync API, LATENCY hint, one stream, f32, same threads), interleaved kernel by kernel and round by
round; prints each tool's median of medians and their ratio as a Markdown table (target: within 5% for
kernels of 0.1 ms or more).

Weights: `dbench gen` files hold no weights (every weight is a graph input). With `--weights const`
(default) each file gets its seeded weights embedded as initializers and that file goes to both tools
(dbench with `--weights const` embeds the very same values); with `--weights input` both tools feed the
weights per call and benchmark_app gets the generated file itself.

    .venv/bin/python benchmarks/openvino_fidelity.py --rounds 7      # about 8 minutes on 2 cores
    .venv/bin/python benchmarks/openvino_fidelity.py [--count 12] [--rounds 5] [--threads N] [--weights const|input]

Its figures go to a dated page under docs/measurements/ (the last: 2026-11-21-openvino-fidelity.md);
docs/benchmarks.md lists every benchmark.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

from dbench.gen.feeds import make_feeds
from dbench.gen.manifest import Entry, read_manifest, write_manifest
from dbench.gen.weights import embed_weights, split_feeds
from dbench.stats.interleave import rotated

BENCHMARK_APP = Path(sys.executable).with_name("benchmark_app")
MEDIAN_LINE = re.compile(r"Median:\s+([\d.]+) (ms|us)")
TARGET = 0.05


def generate(folder: Path) -> list[Entry]:
    """`dbench gen --suite inference --ops gemm,conv` into `folder`; its manifest entries."""
    subprocess.run(
        [sys.executable, "-m", "dbench", "gen", "--suite", "inference", "--ops", "gemm,conv", "--out", str(folder)],
        check=True,
        capture_output=True,
    )
    return read_manifest(folder / "inference")


def pick(entries: list[Entry], count: int, low: float, high: float) -> list[Entry]:
    """`count` graphs, half GEMM and half convolution, spread evenly in log(FLOPs) over [low, high]."""
    chosen = []
    for family, share in (("gemm", count // 2), ("conv", count - count // 2)):
        pool = sorted(
            (e for e in entries if e.spec.family == family and low <= e.spec.flops <= high), key=lambda e: e.spec.flops
        )
        step = max(1, (len(pool) - 1) / max(1, share - 1))
        chosen += [pool[min(len(pool) - 1, round(i * step))] for i in range(min(share, len(pool)))]
    return chosen


def subset(source: Path, entries: list[Entry], target: Path, weights: str) -> dict[str, Path]:
    """A gen folder with just `entries` (for `dbench run --graphs`), and the file benchmark_app gets per graph."""
    target.mkdir()
    files = {}
    for entry in entries:
        shutil.copy(source / entry.file, target / entry.file)
        if weights == "const":
            model = onnx.load(source / entry.file)
            files[entry.spec.id] = target / f"{entry.spec.id}.const.onnx"
            constants, _ = split_feeds(entry.spec, make_feeds(entry.spec), "const")
            onnx.save(embed_weights(model, constants), files[entry.spec.id])
        else:
            files[entry.spec.id] = target / entry.file
    write_manifest(target, entries)
    return files


def dbench_median(graphs: Path, entry: Entry, threads: int, weights: str, out: Path) -> float:
    """dbench's median latency (ms) for one graph: a whole `dbench run` with its default timing."""
    before = set(out.glob("*/*.jsonl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "dbench",
            "run",
            "--graphs",
            str(graphs),
            "--id",
            entry.spec.kernel_id,
            "--runtime",
            "openvino",
            "--threads",
            str(threads),
            "--weights",
            weights,
            "--profile-runs",
            "0",
            "--no-verify",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    (log,) = set(out.glob("*/*.jsonl")) - before
    (row,) = [r for r in map(json.loads, log.read_text().splitlines()[1:]) if r.get("type") == "result"]
    if row["status"] != "ok":
        raise SystemExit(f"dbench: {entry.spec.id}: {row['status']}: {row['message']}")
    return row["median_us"] / 1e3


def benchmark_app_median(model: Path, config: Path, niter: int) -> float:
    """benchmark_app's median latency (ms): sync API, latency hint, f32, and the config file's
    streams and threads (benchmark_app refuses -nstreams/-nthreads together with -hint)."""
    result = subprocess.run(
        [
            str(BENCHMARK_APP),
            "-m",
            str(model),
            "-d",
            "CPU",
            "-api",
            "sync",
            "-hint",
            "latency",
            "-infer_precision",
            "f32",
            "-niter",
            str(niter),
            "-load_config",
            str(config),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    match = MEDIAN_LINE.search(result.stdout)
    if not match:
        raise SystemExit(f"benchmark_app printed no median for {model.name}:\n{result.stdout[-2000:]}")
    value, unit = float(match.group(1)), match.group(2)
    return value / 1e3 if unit == "us" else value


def spread(values: list[float]) -> float:
    """(max - min) / median of one tool's per-round medians: how much fresh processes disagree."""
    return (max(values) - min(values)) / statistics.median(values)


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def measure(
    chosen: list[Entry], graphs: Path, files: dict[str, Path], args, work: Path
) -> tuple[dict, dict, list[str]]:
    """Per-round medians of both tools for every graph, alternating which tool goes first each round."""
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
    ours: dict[str, list[float]] = {e.spec.id: [] for e in chosen}
    theirs: dict[str, list[float]] = {e.spec.id: [] for e in chosen}
    loads = [load_average()]
    for round_ in range(args.rounds):
        for entry in chosen:
            gid = entry.spec.id
            for tool in rotated(("dbench", "app"), round_):
                if tool == "dbench":
                    ours[gid].append(dbench_median(graphs, entry, args.threads, args.weights, work / "results"))
                else:
                    estimate = statistics.median(ours[gid]) if ours[gid] else 1.0
                    niter = max(100, min(20000, math.ceil(args.seconds * 1e3 / estimate)))
                    theirs[gid].append(benchmark_app_median(files[gid], config, niter))
            print(
                f"round {round_ + 1}/{args.rounds} {gid}: dbench {ours[gid][-1]:.4f} ms, "
                f"benchmark_app {theirs[gid][-1]:.4f} ms",
                file=sys.stderr,
                flush=True,
            )
        loads.append(load_average())
    return ours, theirs, loads


def print_table(chosen: list[Entry], ours: dict[str, list[float]], theirs: dict[str, list[float]]) -> None:
    print(
        "| kernel | GFLOP | dbench ms | benchmark_app ms | difference µs | ratio | within 5% | round spread "
        "dbench / app |"
    )
    print("|---|---:|---:|---:|---:|---:|:-:|---:|")
    inside = counted = 0
    for entry in chosen:
        gid = entry.spec.id
        a, b = statistics.median(ours[gid]), statistics.median(theirs[gid])
        ratio = a / b
        applies = min(a, b) >= 0.1
        ok = abs(ratio - 1) <= TARGET
        counted += applies
        inside += applies and ok
        verdict = ("yes" if ok else "**no**") if applies else "n/a (< 0.1 ms)"
        print(
            f"| {entry.spec.kernel_id} | {entry.spec.flops / 1e9:.3f} | {a:.4f} | {b:.4f} | {(a - b) * 1e3:+.1f} | "
            f"{ratio:.3f} | {verdict} | {spread(ours[gid]):.0%} / {spread(theirs[gid]):.0%} |"
        )
    print(f"\n{inside} of {counted} kernels of 0.1 ms or more within {TARGET:.0%}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=12, help="graphs (half GEMM, half convolution)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per graph and tool")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="inference threads for both tools")
    parser.add_argument("--weights", choices=("const", "input"), default="const")
    parser.add_argument("--min-flops", type=float, default=2e7, help="smallest kernel (FLOPs)")
    parser.add_argument("--max-flops", type=float, default=3e9, help="largest kernel (FLOPs)")
    parser.add_argument("--seconds", type=float, default=2.0, help="benchmark_app time per round (sets -niter)")
    args = parser.parse_args()
    import openvino

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        chosen = pick(generate(work / "gen"), args.count, args.min_flops, args.max_flops)
        graphs = work / "graphs"
        files = subset(work / "gen" / "inference", chosen, graphs, args.weights)
        ours, theirs, loads = measure(chosen, graphs, files, args, work)
    print(
        f"OpenVINO {openvino.__version__}, CPU, {args.threads} threads, weights {args.weights}, "
        f"{args.rounds} interleaved rounds; load average (1/5/15 min) per round: {' | '.join(loads)}\n"
    )
    print_table(chosen, ours, theirs)


if __name__ == "__main__":
    main()
