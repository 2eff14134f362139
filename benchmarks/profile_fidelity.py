"""Does the profiled kernel time describe the calls dbench timed? For a few inference kernels on each CPU
runtime, one prepared session is timed as the worker times it (its median), then profiling passes are
taken as the worker takes them, alternately with a single warm-up call (dbench before the profiling
warm-up) and with the worker's warm-up (`_profile_warmup`). Prints, per kernel and side, the median over
rounds of kernel time / timed median and kernel time / the pass's own time per call.

    python benchmarks/profile_fidelity.py [--rounds 5] [--runtimes ort-cpu,openvino]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import asdict

from dbench.catalog.kernels import ConvKernel, GemmKernel, RnnKernel
from dbench.gen.feeds import make_feeds
from dbench.gen.plan import GraphRequest, build
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.store.metadata import load_average
from dbench.store.schema import kernel_time
from dbench.worker.profiling import profile_runs as _profile_runs, profile_warmup as _profile_warmup
from dbench.worker.timing import TimingConfig, measure

KERNELS = [
    GraphRequest(GemmKernel(m=35, n=700, k=2048, a_t=False, b_t=False), "fp32", "fwd", "gemm"),
    GraphRequest(GemmKernel(m=3072, n=1, k=1024, a_t=False, b_t=False), "fp32", "fwd", "gemm"),
    GraphRequest(ConvKernel(w=7, h=7, c=512, n=1, k=512, s=3, r=3, pad_w=1, pad_h=1, wstride=1, hstride=1),
                 "fp32", "fwd", "conv"),
    GraphRequest(RnnKernel(cell="lstm", hidden=256, batch=1, timesteps=150), "fp32", "fwd", "op"),
]
TIMING = TimingConfig(min_time=0.5, max_time=2.0)


def ratios(session, runs: int, warmup: int, median_us: float) -> tuple[float, float]:
    """(kernel / timed median, kernel / the pass's own time per call) of one profiling pass."""
    profile = session.profile(runs, warmup)
    kernel = kernel_time([asdict(n) for n in profile.nodes])
    return kernel / median_us, kernel / profile.call_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runtimes", default="ort-cpu,openvino")
    args = parser.parse_args()
    print(f"1-minute load at start: {(load_average() or ['?'])[0]}")
    print("| runtime | kernel | median µs | warm-up calls | kernel / median (1 warm-up) | kernel / median (worker's) "
          "| kernel / pass (worker's) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.runtimes.split(","):
        runtime = require(name)(RuntimeOptions())
        for request in KERNELS:
            graph = build(request)
            constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec), "const")
            session = runtime.prepare(graph.model, graph.spec, constants)
            session.bind(per_call)
            median = measure(session.run, TIMING).median_us
            runs, warmup = _profile_runs(10, median), _profile_warmup(median)
            cold, warm, own = [], [], []
            for _ in range(args.rounds):
                cold.append(ratios(session, runs, 1, median)[0])
                to_median, to_pass = ratios(session, runs, warmup, median)
                warm.append(to_median)
                own.append(to_pass)
            session.close()
            print(f"| {name} | {graph.spec.id} | {median:.0f} | {warmup} | {statistics.median(cold):.2f} "
                  f"| {statistics.median(warm):.2f} | {statistics.median(own):.3f} |")
    print(f"1-minute load at end: {(load_average() or ['?'])[0]}")


if __name__ == "__main__":
    main()
