"""How well `dbench predict` predicts a whole model's latency from its units: for every model of the
corpus (benchmarks/predict_corpus.py, built here) and every runtime, one `dbench predict` run (the
model, an empty graph and every distinct unit, interleaved in rounds), then one Markdown row per model
and runtime (predicted, measured, error and its paired 95% interval, units), the share within ±10%,
and the scatter of predicted against measured with the ±10% band (predicted-vs-measured.png).

    PYTHONPATH=. python benchmarks/predict_accuracy.py --threads 1 --out results-predict           # full
    PYTHONPATH=. python benchmarks/predict_accuracy.py --models mlp,kws,resnext --quick --out /tmp/p  # smoke
    PYTHONPATH=. python benchmarks/predict_accuracy.py --from-runs results-predict  # earlier runs, predicted again
    PYTHONPATH=. python benchmarks/predict_accuracy.py --models real --torchvision-python ../tv/bin/python \\
        --lock /work/cpu.lock --out results-real          # the real architectures, each pair alone on the machine

Each run's rows give every way of taking the units (dbench.units.prediction.METHODS: model-state, the
default; warm, the units alone and repeated; evicted, every unit after the model's traffic), measured
in the same rounds: the summary sets them side by side, per runtime, within ±5 % and ±10 %, with the
mean signed error.

--from-runs reads the prediction runs already under a folder instead of running: the same measurements
through the current prediction rule (dbench.units.prediction), so a change of the rule is judged on
the rows it was designed from; a fresh run is the test of it.

Every figure comes from the run logs under --out (each row names its run); run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.predict_corpus import MODELS, REAL, TORCHVISION_PYTHON, build
from dbench.render.numbers import format_time
from dbench.report.predictions import BAND, scatter
from dbench.store.log import RunLog
from dbench.store.metadata import host_metadata
from dbench.units.prediction import METHODS, MODEL_STATE, predictions

TIGHT = 0.05
"""The tighter band reported beside BAND (±10 %)."""


def predict(model: Path, runtime: str, out: Path, threads: str, extra: list[str], lock: str) -> tuple[Path, int]:
    """One `dbench predict` run (under an exclusive `flock` on `lock` when given: one model and runtime
    per hold); its log (the one new under `out`) and exit status."""
    before = set(out.rglob("*.jsonl"))
    command = [
        sys.executable,
        "-m",
        "dbench",
        "predict",
        str(model),
        "--runtime",
        runtime,
        "--threads",
        threads,
        "--out",
        str(out),
        "--format",
        "json",
        *extra,
    ]
    done = subprocess.run(
        (["flock", "-x", lock] if lock else []) + command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    new = sorted(set(out.rglob("*.jsonl")) - before)
    if not new:
        raise SystemExit(f"dbench predict {model.name} on {runtime} wrote no run: {done.stderr.strip()[-500:]}")
    return new[0], done.returncode


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:+.1f}%"


def run_all(args: argparse.Namespace) -> list[Path]:
    """One `dbench predict` run per model and runtime: their logs."""
    extra = (
        (["--quick"] if args.quick else [])
        + (["--rounds", args.rounds] if args.rounds else [])
        + (["--min-time", args.min_time] if args.min_time else [])
    )
    names = list(REAL) if args.models == "real" else args.models.split(",")
    paths = build(args.corpus, names, args.torchvision_python)
    host = host_metadata()
    print(
        f"machine: {host['cpu_model']}, {host['cpu_count']} cores; --threads {args.threads}; "
        f"load average at start {os.getloadavg()[0]:.1f}" + ("; --quick: smoke figures only" if args.quick else "")
    )
    logs = []
    for name, path in paths.items():
        for runtime in args.runtimes.split(","):
            started = time.monotonic()
            log, status = predict(path, runtime, args.out, args.threads, extra, args.lock)
            logs.append(log)
            print(
                f"  {name} on {runtime}: {log.stem} (exit {status}, {time.monotonic() - started:.0f} s, "
                f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.2f} after)",
                file=sys.stderr,
                flush=True,
            )
    return logs


def summary_line(method: str, runtime: str, found: list) -> str:
    """Within ±5 % and ±10 %, the mean signed and the median absolute error of `found`'s pairs."""
    if not found:
        return f"{method}, {runtime}: no pair"
    errors = sorted(p.error for p in found)
    tight, band = sum(abs(e) <= TIGHT for e in errors), sum(abs(e) <= BAND for e in errors)
    return (
        f"{method}, {runtime}: {band}/{len(errors)} within ±{BAND:.0%}, {tight}/{len(errors)} within ±{TIGHT:.0%}; "
        f"mean signed error {sum(errors) / len(errors) * 100:+.1f}%, median |error| "
        f"{sorted(abs(e) for e in errors)[len(errors) // 2] * 100:.1f}%, range {errors[0] * 100:+.1f}% to "
        f"{errors[-1] * 100:+.1f}%"
    )


def earlier_runs(folder: Path) -> list[Path]:
    """The prediction runs under `folder` (logs whose header says `predict`), oldest first."""
    logs = [path for path in sorted(folder.rglob("*.jsonl")) if RunLog.read(path).header().get("kind") == "predict"]
    if not logs:
        raise SystemExit(f"no prediction runs under {folder}")
    return logs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results-predict"))
    parser.add_argument("--corpus", type=Path, default=Path("build/predict-corpus"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--runtimes", default="ort-cpu,openvino")
    parser.add_argument("--threads", default="1")
    parser.add_argument("--quick", action="store_true", help="dbench predict --quick: a smoke run, not figures")
    parser.add_argument("--rounds", default=None, help="rounds per graph (dbench's default: 3)")
    parser.add_argument(
        "--from-runs", type=Path, default=None, help="predict again from the runs under this folder; run nothing"
    )
    parser.add_argument(
        "--min-time", default=None, help="sampling seconds per graph, shared by its rounds (dbench's default: 2)"
    )
    parser.add_argument(
        "--torchvision-python", default=TORCHVISION_PYTHON, help="an interpreter with torchvision (tv_ models)"
    )
    parser.add_argument("--lock", default="", help="run each prediction under an exclusive flock on this file")
    args = parser.parse_args()
    logs = earlier_runs(args.from_runs) if args.from_runs else run_all(args)
    rows = [{**r, "run_id": RunLog.read(log).header()["run_id"]} for log in logs for r in RunLog.read(log).rows()]
    found = predictions(rows)
    if args.from_runs:
        print(
            f"{len(logs)} prediction runs under {args.from_runs}, predicted again (machine and loads: in their logs)\n"
        )
    else:
        print(f"load average at end {os.getloadavg()[0]:.1f}\n")
    print(
        "| model | runtime | measured | predicted | error | 95% interval (paired rounds) | units timed | nodes | "
        "empty graph | run |"
    )
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---|")
    for p in found:
        interval = (
            f"{_percent(p.error_low)} to {_percent(p.error_high)}" if p.error_low is not None else p.interval_note
        )
        print(
            f"| {p.model} | {p.runtime} | {format_time(p.measured_us)} | {format_time(p.predicted_us)} | "
            f"{_percent(p.error)} | "
            f"{interval} | {p.units_timed}/{p.units_total} | {p.nodes_timed}/{p.nodes_total} | "
            f"{format_time(p.empty_us)} | {p.run_id} |"
        )
    print()
    for method in METHODS:  # the same runs' rows, each way of taking the units (the interleaved comparison)
        judged = [p for p in (found if method == MODEL_STATE else predictions(rows, method)) if p.error is not None]
        for runtime in [*dict.fromkeys(p.runtime for p in judged), "all"]:
            mine = [p for p in judged if runtime in ("all", p.runtime)]
            print(summary_line(method, runtime, mine))
    missing = [f"{p.model} on {p.runtime}: {'; '.join(p.notes)}" for p in found if p.error is None or p.notes]
    for line in missing:
        print(f"note: {line}")
    figure = scatter(found)
    if figure is not None:
        from dbench.report.plots import png

        target = (args.from_runs or args.out) / "predicted-vs-measured.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(png(figure))
        print(f"\nscatter: {target}")


if __name__ == "__main__":
    main()
