"""Where a suite's wall time goes, phase by phase, on one or more runtimes run one after the other.

Phases: timed calls, drawing inputs, preparing sessions, warm-up, verification, profiling, and the rest
(start-up, building graphs, worker round trips, logging), with verification and profiling split by
family and by check. The runtimes share one fresh reference cache (a temporary folder, unless
--cache-dir), so the first pays for the references and the next ones show what a cached run costs.
Default: the inference suite's GEMM and convolution kernels in fp32 on ort-cpu, default settings.

    python benchmarks/suite_time.py --suite inference --ops gemm,conv,rnn,sparse --runtime ort-cpu,openvino \
-- --quick --timeout 1800
    python benchmarks/suite_time.py --suite inference --ops gemm,conv,rnn,sparse --runtime ort-cpu,openvino \
--keep suite.jsonl
    python benchmarks/suite_time.py --suite inference-device --ops gemm --id 'gemm_m64_*' -- --quick   # smoke

Its figures go to dated pages under docs/measurements/ (the last: 2026-11-26-suite-time-quick-caps.md);
docs/benchmarks.md lists every benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
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


def run_suite(args: argparse.Namespace, runtime: str, out: str, cache: str) -> tuple[float, list[dict]]:
    """One `dbench run` on `runtime`: its wall time (less what it waited for the machine's timing lock,
    under --wait) and rows."""
    command = [sys.executable, "-m", "dbench", "run", "--suite", args.suite, "--runtime", runtime, "--out", out]
    command += (["--ops", args.ops] if args.ops else []) + (["--id", args.id] if args.id else []) + args.extra
    start = time.perf_counter()
    done = subprocess.run(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DBENCH_CACHE_DIR": cache},
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):  # 3: some row not ok, still a complete run
        sys.exit(f"dbench run on {runtime} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    from dbench.store.log import RunLog

    (log,) = [
        RunLog.read(p) for p in Path(out).glob("*/*.jsonl") if RunLog.read(p).header()["runtime"]["name"] == runtime
    ]
    waited = (log.header().get("timing_lock") or {}).get("waited_s") or 0.0
    if waited:
        print(f"{runtime}: waited {waited:.1f} s for the timing lock (left out of its wall time)")
    return wall - waited, log.rows()


def report(runtime: str, wall: float, rows: list[dict]) -> None:
    statuses = Counter(row["status"] for row in rows)
    phases: dict[str, float] = defaultdict(float)
    for row in rows:
        phases["timed calls"] += row.get("timed_s") or 0.0
        for key in PHASES:
            phases[key.removesuffix("_s")] += row.get(key) or 0.0
    loads = [row["load_1m"] for row in rows if row.get("load_1m") is not None]
    print(
        f"\n{runtime}: {len(rows)} graphs ({dict(statuses)}), wall {wall:.1f} s, 1-minute load "
        f"{min(loads, default=0):.1f} to {max(loads, default=0):.1f}"
    )
    phases["rest"] = wall - sum(phases.values())
    for name, seconds in phases.items():
        print(f"  {name:<12}{seconds:8.1f} s  {100 * seconds / wall:5.1f} %")
    print(f"  share outside timed calls: {100 * (1 - phases['timed calls'] / wall):.1f} %")
    by_family: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    by_check: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for row in rows:
        family = by_family[row["family"]]
        family[0] += row.get("timed_s") or 0.0
        family[1] += row.get("verify_s") or 0.0
        family[2] += row.get("profile_s") or 0.0
        family[3] += row.get("prepare_s") or 0.0
        check = by_check[row.get("verify_check") or "unverified"]
        check[0] += 1
        check[1] += row.get("verify_s") or 0.0
    print("  by family:  timed s / verify s / profile s / prepare s")
    for name, (timed, verify, profile, prepare) in sorted(by_family.items()):
        print(f"    {name:<10}{timed:9.1f}{verify:10.1f}{profile:11.1f}{prepare:11.1f}")
    print("  by check:   graphs, verify s")
    for name, (count, seconds) in sorted(by_check.items()):
        print(f"    {name:<20}{count:5d}{seconds:10.1f}")
    huge = [r for r in rows if r.get("min_bytes", 0) >= HUGE_BYTES]
    if huge:
        others_wall = wall - sum(outside(r) + (r.get("timed_s") or 0.0) for r in huge)
        timed = sum(r.get("timed_s") or 0.0 for r in rows if r not in huge)
        print(
            f"  graphs moving >= 0.5 GiB: {len(huge)}, {sum(outside(r) for r in huge):.1f} s outside timed calls "
            f"for {sum(r.get('timed_s') or 0.0 for r in huge):.1f} s timed; the other {len(rows) - len(huge)} graphs: "
            f"{100 * (1 - timed / others_wall):.1f} % outside timed calls"
        )
    slowest = sorted(rows, key=outside, reverse=True)[:3]
    print(
        "  most time outside timed calls: "
        + "; ".join(
            f"{r['graph_id']} {outside(r):.1f} s (verify {r.get('verify_s') or 0:.1f}, profile "
            f"{r.get('profile_s') or 0:.1f})"
            for r in slowest
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default="inference")
    parser.add_argument("--ops", default="gemm,conv", help="--ops of dbench run ('' for every family)")
    parser.add_argument("--id", help="--id of dbench run: only kernels matching this glob")
    parser.add_argument("--runtime", default="ort-cpu", help="comma-separated, run in this order on one shared cache")
    parser.add_argument("--cache-dir", help="reference cache to use (default: a fresh temporary one)")
    parser.add_argument("--keep", help="write every run's rows (JSON lines) to this file, for a per-graph look")
    parser.add_argument("extra", nargs="*", help="more `dbench run` options, after --")
    args = parser.parse_args()
    fresh, again = first_touch_s_per_gib()
    kept = []
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as temporary_cache:
        cache = args.cache_dir or temporary_cache
        for runtime in args.runtime.split(","):
            wall, rows = run_suite(args, runtime, out, cache)
            report(runtime, wall, rows)
            kept += rows
    if args.keep:
        Path(args.keep).write_text("\n".join(json.dumps(row) for row in kept) + "\n")
    print(f"\nmemory first touch on this machine: {fresh:.2f} s per GiB (written again: {again:.2f} s)")


if __name__ == "__main__":
    main()
