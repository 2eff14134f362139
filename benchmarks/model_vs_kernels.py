"""Whole-model latency against the sum of its kernels, for the example models on each CPU runtime.

For every model and runtime: `dbench gen --from-model`, `dbench run --graphs` on its kernels, then
`dbench run --model` on the whole model; prints one markdown row per (model, runtime) from
dbench.frommodel.predict.model_vs_kernels, plus the run ids so every figure can be traced to its log.

    PYTHONPATH=. python benchmarks/model_vs_kernels.py --out results-models --threads 1
    PYTHONPATH=. python benchmarks/model_vs_kernels.py --out /tmp/mvk --models lstm --runtimes ort-cpu   # smoke

Its figures go to a dated page under docs/measurements/ (the last: 2026-11-23-model-vs-kernels.md,
whose run logs are kept in docs/measurements/reference-results/vm-epyc-2core/models/);
docs/benchmarks.md lists every benchmark.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from dbench.frommodel.predict import model_vs_kernels
from dbench.store.log import RunLog
from dbench.store.metadata import host_metadata

MODELS = {  # file in examples/models -> --dim
    "resnet18": "batch=1",
    "encoder": "batch=1,seq=64",
    "lstm": "seq=32,batch=4",
}


def dbench(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "dbench", *args], check=True, stdout=subprocess.DEVNULL)


def newest_log(folder: Path, before: set[Path]) -> RunLog:
    (path,) = set(folder.rglob("*.jsonl")) - before
    return RunLog.read(path)


def measure(model: str, dims: str, runtime: str, out: Path, threads: str) -> tuple[dict, RunLog, RunLog]:
    path = Path("examples/models") / f"{model}.onnx"
    dbench("gen", "--from-model", str(path), "--dim", dims, "--out", str(out / "graphs"))
    before = set(out.rglob("*.jsonl"))
    dbench(
        "run",
        "--graphs",
        str(out / "graphs" / model),
        "--runtime",
        runtime,
        "--threads",
        threads,
        "--out",
        str(out / "results"),
    )
    kernels = newest_log(out / "results", before)
    before = set(out.rglob("*.jsonl"))
    dbench(
        "run",
        "--model",
        str(path),
        "--dim",
        dims,
        "--runtime",
        runtime,
        "--threads",
        threads,
        "--out",
        str(out / "results"),
    )
    whole = newest_log(out / "results", before)
    (row,) = model_vs_kernels(whole.rows(), kernels.rows())
    return row, kernels, whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results-models"))
    parser.add_argument("--threads", default="1")
    parser.add_argument("--runtimes", default="ort-cpu,openvino")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    host = host_metadata()
    print(
        f"machine: {host['cpu_model']}, {host['cpu_count']} cores; --threads {args.threads}; "
        f"load average at start {os.getloadavg()[0]:.1f}\n"
    )
    print(
        "| model | --dim | runtime | model median µs (cv) | Σ kernel median x copies µs (median cv) | share | "
        "model min µs | Σ kernel min x copies µs | share of min | kernels ok | nodes covered | model check | runs "
        "(kernels, model) |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for model in args.models.split(","):
        for runtime in args.runtimes.split(","):
            row, kernels, whole = measure(model, MODELS[model], runtime, args.out, args.threads)
            check = row["model_verified_by"] if row["model_status"] == "ok" else row["model_status"]
            model_cv = whole.rows()[0]["cv"]
            kernel_cv = statistics.median(r["cv"] for r in kernels.rows() if r.get("cv") is not None)
            print(
                f"| {model} | {MODELS[model]} | {runtime} | {row['model_us']:.0f} ({model_cv:.2f}) | "
                f"{row['kernels_us']:.0f} ({kernel_cv:.2f}) | {row['share']:.0%} | {row['model_min_us']:.0f} | "
                f"{row['kernels_min_us']:.0f} | {row['share_of_min']:.0%} | {row['kernels_timed']}/{row['kernels']} | "
                f"{row['kernel_nodes_timed']}/{row['model_nodes']} | {check} | "
                f"{kernels.header()['run_id']}, {whole.header()['run_id']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
