"""Would pinning each request's thread to its own CPU change what ONNX Runtime's throughput and server
rows measure? (OpenVINO pins its streams' threads by default; dbench leaves ONNX Runtime's calling
threads, where its Runs compute, to the scheduler.) One ort-cpu session of `gemm_m128_n1500_k1280`
(2 requests x 1 thread), in one process, through dbench's own loops, interleaved trial by trial (the
order flipped each trial): each request's thread pinned to CPU k (on its first call) against left to
the scheduler; both sides call through the same wrapper.

* closed loop (dbench.worker.streams.keep_busy): inferences/s per trial;
* server (dbench.worker.server.serve): Poisson arrivals at --load x the closed-loop rate, --arrivals per
  trial: the p99 per trial, how many trials had an excursion (p99 over 3 x the median trial's), and
  what each trial's runs themselves took (the median call's wall and thread CPU time, timed by the
  wrapper) beside the CPU time the hypervisor says it stole from this VM (/proc/stat), to tell a
  slower machine from a slower loop.

    python benchmarks/request_pinning.py [--trials 24] [--load 0.6] [--arrivals 800] [--seconds 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from dbench.catalog.kernels import GemmKernel
from dbench.gen.feeds import make_feeds
from dbench.gen.plan import GraphRequest, build
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.worker.server import serve
from dbench.worker.streams import capacity, keep_busy

SIDES = ("pinned", "unpinned")


def session(streams: int):
    graph = build(GraphRequest(GemmKernel(m=128, n=1500, k=1280, a_t=False, b_t=False), "fp32", "fwd", "gemm"))
    constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec), "const")
    prepared = require("ort-cpu")(RuntimeOptions(threads=1)).prepare_concurrent(graph.model, graph.spec, constants, streams)
    prepared.bind(per_call)
    return prepared


def steal_s() -> float:
    """CPU time stolen from this VM by its host since boot, all CPUs (0 where /proc/stat has no such field)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def calls(prepared, pinned: bool, record: list | None = None) -> list:
    """Each request's call, its thread pinned to CPU `request` on its first call where `pinned`; with
    `record`, each call's wall and thread CPU time (ns) appended to it."""
    def wrap(request: int):
        run, placed = prepared.runner(request), [not pinned]

        def call() -> None:
            if not placed[0]:
                os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[request]})  # pid 0: this thread only
                placed[0] = True
            if record is None:
                run()
                return
            wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
            run()
            record.append((time.perf_counter_ns() - wall, time.thread_time_ns() - cpu))
        return call
    return [wrap(k) for k in range(prepared.requests)]


def interleaved(trials: int, measure) -> dict[str, list]:
    """`measure(side, trial)` for each side in each trial, the order flipped every trial."""
    results: dict[str, list] = {side: [] for side in SIDES}
    for trial in range(trials):
        for side in (SIDES if trial % 2 == 0 else SIDES[::-1]):
            results[side].append(measure(side, trial))
    return results


def show(title: str, results: dict[str, list[float]], unit: str, digits: int) -> None:
    print(title)
    for side, values in results.items():
        print(f"  {side:9} {' '.join(f'{v:.{digits}f}' for v in values)} {unit} | median {statistics.median(values):.{digits}f}")
    lower = sum(p < u for p, u in zip(results["pinned"], results["unpinned"]))
    print(f"  pinned lower in {lower} of {len(results['pinned'])} trials")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--load", type=float, default=0.6, help="server arrival rate as a share of the closed-loop rate")
    parser.add_argument("--arrivals", type=int, default=800, help="arrivals per server trial")
    parser.add_argument("--seconds", type=float, default=1.0, help="closed-loop seconds per trial")
    args = parser.parse_args()
    prepared = session(2)
    if len(os.sched_getaffinity(0)) < prepared.requests:
        raise SystemExit(f"needs {prepared.requests} CPUs to give each request its own")

    def closed(side: str, trial: int) -> float:
        busy = keep_busy(calls(prepared, side == "pinned"), lambda b, elapsed: elapsed >= args.seconds and b.reached(2))
        return busy.inferences / busy.wall_s

    show(f"closed loop, {args.trials} trials of {args.seconds:g} s, inferences/s:", interleaved(args.trials, closed), "/s", 0)
    rate = args.load * capacity(prepared, 1.0)
    runner = prepared.runner

    def server(side: str, trial: int) -> tuple[float, float, float, float]:
        record: list[tuple[int, int]] = []
        wrapped = calls(prepared, side == "pinned", record)
        prepared.runner = lambda request: wrapped[request]
        stolen = steal_s()
        p99 = serve(prepared, rate, args.arrivals, trial, None)["latency_p99_us"] / 1e3
        prepared.runner = runner
        return (p99, statistics.median(w for w, _ in record) / 1e6, statistics.median(c for _, c in record) / 1e6,
                steal_s() - stolen)

    results = interleaved(args.trials, server)
    p99s = {side: [trial[0] for trial in values] for side, values in results.items()}
    show(f"server at {rate:.0f}/s ({args.load:.0%} of the closed loop), {args.arrivals} arrivals a trial, p99:", p99s, "ms", 1)
    typical = statistics.median(p99s["pinned"] + p99s["unpinned"])
    for side, values in p99s.items():
        print(f"  {side}: {sum(v > 3 * typical for v in values)} of {len(values)} trials with p99 over 3 x {typical:.1f} ms")
    print("  every trial, by p99: p99 ms | the median run's wall ms, thread CPU ms | CPU time stolen by the host ms")
    for p99, wall, cpu, stolen in sorted(trial for values in results.values() for trial in values):
        print(f"    {p99:7.1f} | {wall:6.2f} {cpu:6.2f} | {stolen * 1e3:5.0f}")

if __name__ == "__main__":
    main()
