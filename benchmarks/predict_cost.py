"""What a `dbench predict` costs: for each model, in interleaved rounds, the wall time of a prediction
that times every unit (`--fresh`: a new model), of the same prediction again (every unit from the unit
cache), and optionally of another dbench tree's prediction (`--baseline PATH`: a checkout's folder that
holds its `dbench` package, run with PYTHONPATH=PATH; its own unit cache, if it has one, is never
reused: each baseline round writes to a fresh results folder). A fresh or baseline prediction starts
with an empty reference cache (a new model's references are not known); the cached one uses the
references its model's fresh prediction left. Each prediction's error against the
model's measured time and its phases (the run's rounds: timed calls, warm-up, preparing, verification,
profiling, inputs) are printed too, with the 1-minute load. The script holds the machine's timing lock
(dbench.orchestrator.lock, waiting for it) for the whole comparison; its predictions take a private lock
folder, so none waits between them.

    PYTHONPATH=. python benchmarks/predict_cost.py resnet18.onnx@batch=1 mobilenet_v3_small.onnx \\
        --threads 1 --rounds 3 --baseline /tmp/old-tree --baseline-models resnet18

Its figures go to dated pages under docs/measurements/ (the first: 2026-12-02-predict-cost.md);
docs/benchmarks.md lists every benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PHASES = ("inputs_s", "prepare_s", "verify_s", "profile_s")


def predict(
    model: str, args: argparse.Namespace, out: Path, more: list[str], tree: str | None, references: Path
) -> dict:
    """One `dbench predict` with the reference cache at `references`: its wall time (less what it waited
    for the machine's timing lock, under --wait), its prediction (JSON) and the phases its log's rounds took."""
    path, _, dims = model.partition("@")
    command = [sys.executable, "-m", "dbench", "predict", str(Path(path).resolve()), "--runtime", args.runtime]
    command += ["--out", str(out)]
    command += [f"--dim={d}" for d in (dims.split(",") if dims else args.dim)]
    command += ["--threads", str(args.threads)] if args.threads else []
    command += ["--format", "json", *more, *args.extra]
    env = {**os.environ, "DBENCH_CACHE_DIR": str(references), "DBENCH_LOCK_DIR": str(out.parent / "lock")}
    env.update({"PYTHONPATH": tree} if tree else {})  # this script holds the machine's timing lock
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=out.parent)  # not this tree's cwd
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):
        sys.exit(f"dbench predict exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    (shown,) = json.loads(done.stdout[done.stdout.index("[") :])
    (path,) = out.rglob(f"{shown['run_id']}.jsonl")
    waited = (json.loads(path.read_text().splitlines()[0]).get("timing_lock") or {}).get("waited_s") or 0.0
    return {"wall": wall - waited, "prediction": shown, "phases": phases(path), "load": os.getloadavg()[0]}


def phases(path: Path) -> dict[str, float]:
    """Seconds the run's rounds spent in each phase, over every graph, and how many graphs were timed."""
    totals = dict.fromkeys(("timed_s", "warmup_s", *PHASES), 0.0)
    timed = set()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") != "round":
            continue
        outcome = record["outcome"]
        timed.add(record["graph_id"])
        for key in PHASES:
            totals[key] += outcome.get(key) or 0.0
        for key in ("timed_s", "warmup_s"):
            totals[key] += (outcome.get("stats") or {}).get(key) or 0.0
    return {**totals, "graphs_timed": len(timed)}


def stem(model: str) -> str:
    """The model's name, without its --dim."""
    return Path(model.partition("@")[0]).stem


def spread(values: list[float]) -> str:
    """Median [min, max] of a list of seconds."""
    return f"{statistics.median(values):.1f} s [{min(values):.1f}, {max(values):.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="model files; MODEL.onnx@batch=1,seq=8 gives a model its own --dim")
    parser.add_argument("--dim", action="append", default=[], help="--dim of dbench predict (repeatable)")
    parser.add_argument("--runtime", default="ort-cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="a dbench tree to time interleaved with this one (PYTHONPATH)")
    parser.add_argument("--baseline-models", type=lambda v: v.split(","), help="the models (names) --baseline times")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)  # more `dbench predict` options, after --
    args = parser.parse_args(argv[:cut])
    args.extra = argv[cut + 1 :]
    kinds = ["fresh", "cached"] + (["baseline"] if args.baseline else [])
    results: dict[tuple[str, str], list[dict]] = {}
    references: dict[tuple[str, str], Path] = {}
    from dbench.orchestrator.lock import TimingLock

    with (
        tempfile.TemporaryDirectory() as folder,
        TimingLock("benchmarks/predict_cost.py", folder, "wait").acquire(lambda line: print(line, flush=True)),
    ):
        print(f"holding the machine's timing lock; load {os.getloadavg()[0]:.1f}", flush=True)
        for number in range(args.rounds):
            for model in args.models:
                order = kinds[number % len(kinds) :] + kinds[: number % len(kinds)]
                for kind in order:  # rotated round by round; `cached` follows the fresh run of its round
                    out = Path(folder) / (f"baseline-{number}" if kind == "baseline" else "this")
                    if kind == "cached" and not (out / f"done-{stem(model)}").exists():
                        continue
                    if kind == "baseline" and args.baseline_models and stem(model) not in args.baseline_models:
                        continue
                    more = ["--fresh"] if kind == "fresh" else []
                    if kind != "cached":  # a new model's references are not cached yet; a known one's are
                        references[model, kind] = Path(folder) / f"references-{kind}-{number}-{stem(model)}"
                    tree = args.baseline if kind == "baseline" else None
                    where = references[model, "fresh" if kind == "cached" else kind]
                    found = predict(model, args, out, more, tree, where)
                    results.setdefault((model, kind), []).append(found)
                    if kind == "fresh":
                        (out / f"done-{stem(model)}").touch()
                    p = found["prediction"]
                    print(
                        f"round {number + 1} {stem(model)} {kind}: {found['wall']:.1f} s, "
                        f"{found['phases']['graphs_timed']} graphs timed, error {p['error']:+.1%} "
                        f"(model {p['measured_us']:.0f} µs), load {found['load']:.1f}",
                        flush=True,
                    )
    print("\nmodel | kind | wall, median [min, max] | graphs timed | error per round | timed calls | rest in rounds")
    for (model, kind), found in results.items():
        walls = [f["wall"] for f in found]
        errors = ", ".join(f"{f['prediction']['error']:+.1%}" for f in found)
        rest = [sum(f["phases"][k] for k in ("warmup_s", *PHASES)) for f in found]
        print(
            f"{stem(model)} | {kind} | {spread(walls)} | {found[0]['phases']['graphs_timed']} | {errors} | "
            f"{spread([f['phases']['timed_s'] for f in found])} | {spread(rest)}"
        )


if __name__ == "__main__":
    main()
