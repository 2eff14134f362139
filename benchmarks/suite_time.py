"""Wall time of a full `dbench run` with default settings, and the share of it spent outside timed
calls, split into the phases the worker reports (drawing inputs, preparing sessions, warm-up,
verification, profiling) and the rest (start-up, building graphs, worker round trips, logging).
Default: the inference suite's GEMM and convolution kernels in fp32 on ort-cpu."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

PHASES = ("inputs_s", "prepare_s", "warmup_s", "verify_s", "profile_s")
HUGE_BYTES = 2**29
"""Graphs that move at least this much memory (`min_bytes`) are reported apart: their cost is memory traffic."""


def first_touch_s_per_gib() -> tuple[float, float]:
    """Seconds to write 1 GiB of freshly allocated memory, and to write it again: what a machine (or a
    VM that backs its memory lazily) charges for memory a process has not touched yet."""
    start = time.perf_counter()
    block = np.empty(2**28, dtype=np.float32)
    block.fill(1.0)
    fresh = time.perf_counter() - start
    start = time.perf_counter()
    block.fill(2.0)
    return fresh, time.perf_counter() - start


def outside(row: dict) -> float:
    return sum(row.get(key) or 0.0 for key in PHASES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--suite", default="inference")
    parser.add_argument("--ops", default="gemm,conv")
    parser.add_argument("--runtime", default="ort-cpu")
    parser.add_argument("--keep", help="write the run's rows (JSON lines) to this file, for a per-graph look")
    parser.add_argument("extra", nargs="*", help="more `dbench run` options, after --")
    args = parser.parse_args()
    fresh, again = first_touch_s_per_gib()
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dbench", "run", "--suite", args.suite, "--ops", args.ops,
                        "--runtime", args.runtime, "--out", out, *args.extra], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        (log,) = Path(out).glob("*/*.jsonl")
        rows = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    phases = defaultdict(float)
    for row in rows:
        phases["timed calls"] += row.get("timed_s") or 0.0
        for key in PHASES:
            phases[key.removesuffix("_s")] += row.get(key) or 0.0
    statuses = defaultdict(int)
    for row in rows:
        statuses[row["status"]] += 1
    print(f"{len(rows)} graphs ({dict(statuses)}) on {args.runtime}: wall {wall:.1f} s")
    phases["rest"] = wall - sum(phases.values())
    for name, seconds in phases.items():
        print(f"  {name:<12}{seconds:8.1f} s  {100 * seconds / wall:5.1f} %")
    if args.keep:
        Path(args.keep).write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    print(f"share outside timed calls: {100 * (1 - phases['timed calls'] / wall):.1f} %")
    huge = [r for r in rows if r.get("min_bytes", 0) >= HUGE_BYTES]
    if huge:
        others_wall = wall - sum(outside(r) + (r.get("timed_s") or 0.0) for r in huge)
        timed = sum(r.get("timed_s") or 0.0 for r in rows if r not in huge)
        print(f"graphs moving >= 0.5 GiB: {len(huge)}, {sum(outside(r) for r in huge):.1f} s outside timed calls "
              f"for {sum(r.get('timed_s') or 0.0 for r in huge):.1f} s timed; the other {len(rows) - len(huge)} graphs: "
              f"{100 * (1 - timed / others_wall):.1f} % outside timed calls")
    print(f"memory first touch on this machine: {fresh:.2f} s per GiB (written again: {again:.2f} s)")


if __name__ == "__main__":
    main()
