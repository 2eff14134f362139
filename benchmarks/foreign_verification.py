"""The goal of verifying the models users bring, on real CNN structures
(docs/measurements/2026-11-28-foreign-verification.md):

  goal    `dbench run --model` for each model on both CPU runtimes (one interleaved run per model, fresh
          reference cache): every row's status, the check that decided it and by what, the second
          implementation's word, the first node that differs; a mismatch is counted and listed.
  costs   what verifying one model costs each way, in this process, interleaved over rounds: onnx.reference
          on the whole model, a second runtime in a child worker (prepare and one run), and the same
          runtime's own session of the random-weight copy (structure-only models).

    .venv/bin/python benchmarks/foreign_verification.py goal MODEL.onnx... [--out DIR]
    .venv/bin/python benchmarks/foreign_verification.py costs MODEL.onnx... [--rounds 3]

Models: onnx's nine `light_*` networks (.venv/lib/python3.11/site-packages/onnx/backend/test/data/light/)
and benchmarks/old_opset_models.py's exports."""

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


def run_goal(paths: list[Path], out: Path) -> list[dict]:
    """One `dbench run --model` per model (both CPU runtimes interleaved), each with an empty reference
    cache so the reference is paid for; the rows of every run."""
    rows = []
    for path in paths:
        with tempfile.TemporaryDirectory(prefix="dbench-cache-") as cache:
            command = [
                sys.executable,
                "-m",
                "dbench",
                "run",
                "--model",
                str(path),
                "--runtime",
                "ort-cpu,openvino",
                "--quick",
                "--threads",
                "1",
                "--profile-runs",
                "0",
                "--out",
                str(out / path.stem),
            ]
            subprocess.run(
                command,
                env={**os.environ, "DBENCH_CACHE_DIR": cache},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        for log in sorted((out / path.stem).rglob("*.jsonl")):
            rows += [r for r in map(json.loads, log.read_text().splitlines()) if r.get("type") == "result"]
    return rows


def goal_table(rows: list[dict]) -> list[str]:
    lines = [
        "| model | GFLOP | runtime | status | check | by | second implementation | first node that differs | "
        "random weights | verify s |",
        "|---|---:|---|---|---|---|---|---|---:|---:|",
    ]
    for r in rows:
        second = r.get("cross_check") or {}
        word = (
            "—"
            if not second
            else second.get("why")
            or f"{second['runtime']} {'agrees' if second.get('agrees') else 'differs'}"
            + (
                ""
                if second.get("agrees_with_reference") is None
                else f", {'agrees' if second['agrees_with_reference'] else 'differs'} with the reference"
            )
        )
        first = r.get("first_difference") or {}
        where = (
            f"{first['op']} opset {first['opset']}"
            if first.get("op")
            else (first.get("why", "—")[:60] if first else "—")
        )
        check = r.get("verify_check") or ("unverified" if r["status"] == "ok" else "—")
        lines.append(
            f"| {r['graph_id']} | {r['flops'] / 1e9:.2f} | {r['runtime']} | {r['status']} | {check} | "
            f"{r.get('verified_by') or '—'} | {word} | {where} | {r.get('verify_random_weights') or '—'} | "
            f"{r['verify_s']:.1f} |"
            if r.get("verify_s") is not None
            else f"| {r['graph_id']} | {r['flops'] / 1e9:.2f} | {r['runtime']} | {r['status']} | — | — | — | — | "
            "— | — |"
        )
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    unnamed = [r["graph_id"] for r in rows if r["status"] in ("ok", "disputed") and not r.get("verify_check")]
    lines += [
        "",
        f"rows {len(rows)}: "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        + f"; mismatch rows {counts.get('mismatch', 0)}; passing rows without a named check: {len(unnamed)} {unnamed}",
    ]
    return lines


def costs(paths: list[Path], rounds: int) -> list[str]:
    """Seconds per round of each way to verify each model, interleaved: median and range over rounds."""
    import onnx

    from dbench.gen.feeds import make_feeds
    from dbench.runtimes.base import RuntimeOptions
    from dbench.sources.contract import stored_weights
    from dbench.sources.model import model_item
    from dbench.sources.model_reference import reference_outputs
    from dbench.sources.verify_weights import for_verification
    from dbench.worker.second import OutputsJob, outputs_elsewhere

    lines = [
        "| model | GFLOP | onnx.reference s | ort-cpu (optimizations off) in a child s | openvino in a child s | "
        "rounds |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for path in paths:
        item = model_item(path, {})
        model = onnx.load_model_from_string(item.load()[0])
        feeds = {**make_feeds(item.spec), **stored_weights(model, "const")}
        checked = for_verification(model, item.spec)
        data = checked.model.SerializeToString()
        took: dict[str, list[float]] = {"reference": [], "ort-cpu": [], "openvino": []}
        for _ in range(rounds):
            t0 = time.perf_counter()
            expected, why = reference_outputs(checked.model, checked.spec, feeds)
            took["reference"].append(time.perf_counter() - t0 if expected is not None else float("nan"))
            for runtime, level in (("ort-cpu", "disable"), ("openvino", "all")):
                t0 = time.perf_counter()
                answer = outputs_elsewhere(
                    OutputsJob(checked.spec, data, runtime, RuntimeOptions(threads=1, graph_optimization=level), feeds)
                )
                took[runtime].append(time.perf_counter() - t0 if not isinstance(answer, str) else float("nan"))

        def cell(values: list[float]) -> str:
            return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"

        lines.append(
            f"| {path.stem} | {item.spec.flops / 1e9:.2f} | {cell(took['reference'])} | {cell(took['ort-cpu'])} | "
            f"{cell(took['openvino'])} | {rounds} |"
        )
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("goal", "costs"))
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "dbench-foreign-verification")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.what == "goal":
        print("\n".join(goal_table(run_goal(args.models, args.out))))
    else:
        print("\n".join(costs(args.models, args.rounds)))


if __name__ == "__main__":
    main()
