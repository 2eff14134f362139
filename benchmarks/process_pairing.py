"""Does timing A and B in one worker process pair them better than timing each in its own fresh process?
An interleaved run (`--runtime ort-cpu,ort-cpu`, `--threads 1,2`) times each variant of a graph in its own
worker process, back to back in every round; on a noisy VM the two processes of one round often run at
different speeds (one fresh process at half speed), so pairing by round cancels little. This times an
A/A pair (two sessions of the same graph, same settings) both ways, trial by trial, each trial in fresh
processes, and prints the spread of log(A/B) per design:

* separate:   A in a fresh process, then B in another (dbench's interleaved round today);
* one process, blocks: A and B prepared in one fresh process, then A's samples, then B's;
* one process, alternating: the same, sampled in alternating slices (A, B, A, B, ...).

A design whose SD of log(A/B) is smaller resolves smaller changes with the same rounds (the paired
test's power). Each trial's processes are started fresh, as dbench's rounds are.

    python benchmarks/process_pairing.py [--trials 16] [--seconds 0.6] [--slices 6] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time

GRAPHS = {  # id -> (m, n, k): 13, 134, 403 and 1074 MFLOP, about 0.1, 1, 3 and 9 ms on the 2-core Zen 3 VM at 2 threads
    "gemm_m256_n64_k400": (256, 64, 400),
    "gemm_m1024_n64_k1024": (1024, 64, 1024),
    "gemm_m1024_n192_k1024": (1024, 192, 1024),
    "gemm_m1024_n512_k1024": (1024, 512, 1024),
}

CHILD = r"""
import json, sys, time
import numpy as np
from dbench.catalog.kernels import GemmKernel
from dbench.gen.feeds import make_feeds
from dbench.gen.plan import GraphRequest, build
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require

m, n, k, sides, seconds, slices, threads = json.loads(sys.argv[1])
graph = build(GraphRequest(GemmKernel(m=m, n=n, k=k, a_t=False, b_t=False), "fp32", "fwd", "gemm"))
constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec), "const")
sessions = []
for _ in range(sides):
    session = require("ort-cpu")(RuntimeOptions(threads=threads)).prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    for _ in range(3):
        session.run()
    sessions.append(session)
samples = [[] for _ in sessions]
clock = time.perf_counter
for part in range(slices):
    for index, session in enumerate(sessions):
        end = clock() + seconds / slices
        while clock() < end:
            t0 = clock()
            session.run()
            samples[index].append(clock() - t0)
print(json.dumps([float(np.median(s)) for s in samples]))
"""


def child(shape: tuple[int, int, int], sides: int, seconds: float, slices: int, threads: int) -> list[float]:
    """Medians (s) of each side's samples, measured in one fresh process."""
    argument = json.dumps([*shape, sides, seconds, slices, threads])
    done = subprocess.run([sys.executable, "-c", CHILD, argument], capture_output=True, text=True, check=True,
                          start_new_session=True, timeout=600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=0.6, help="sampling per side and trial")
    parser.add_argument("--slices", type=int, default=6, help="alternations in the alternating design")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} trials {args.trials}, {args.seconds} s a side, "
          f"{args.slices} slices, {args.threads} threads")
    for name, shape in GRAPHS.items():
        logs: dict[str, list[float]] = {"separate": [], "one process, blocks": [], "one process, alternating": []}
        medians: list[float] = []
        for trial in range(args.trials):
            designs = list(logs)
            designs = designs[trial % 3:] + designs[:trial % 3]  # rotate which design runs first
            for design in designs:
                if design == "separate":
                    a, b = child(shape, 1, args.seconds, 1, args.threads)[0], child(shape, 1, args.seconds, 1, args.threads)[0]
                else:
                    a, b = child(shape, 2, args.seconds, 1 if design.endswith("blocks") else args.slices, args.threads)
                logs[design].append(math.log(a / b))
                medians += [a, b]
        print(f"{name}: median call {statistics.median(medians) * 1e3:.3f} ms, "
              f"range {min(medians) * 1e3:.3f}-{max(medians) * 1e3:.3f} ms")
        for design, values in logs.items():
            sd = statistics.stdev(values)
            print(f"  {design:26s} SD of log(A/B) {sd * 100:5.1f} %   |A/B - 1| median "
                  f"{statistics.median(abs(math.exp(v) - 1) for v in values) * 100:4.1f} %, "
                  f"max {max(abs(math.exp(v) - 1) for v in values) * 100:5.1f} %")


if __name__ == "__main__":
    main()
