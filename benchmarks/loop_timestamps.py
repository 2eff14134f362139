"""What dbench's closed loop pays for its per-request timestamps where Python's interpreter lock binds:
N threads calling one ONNX Runtime session on a small GEMV, in one process, interleaved round by round
(the order flipped each round): a bare loop (a threading.Event per call, as the hand-written loop of
throughput_vs_tools.py), the same loop with a list flag, that loop also storing one perf_counter_ns per
run (each run's end, the next run's start) or two (each run's start and end) into preallocated lists,
and dbench's own keep_busy. Prints each loop's median inferences/s.

    python benchmarks/loop_timestamps.py [--streams 2] [--rounds 10] [--seconds 1]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from dbench.catalog.kernels import GemmKernel
from dbench.gen.feeds import make_feeds
from dbench.gen.plan import GraphRequest, build
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.worker.streams import keep_busy, runners


def session(streams: int):
    """gemm_m64_n1_k1216 (11 µs here) on ort-cpu, one request per stream at one thread each."""
    graph = build(GraphRequest(GemmKernel(m=64, n=1, k=1216, a_t=False, b_t=False), "fp32", "fwd", "gemm"))
    constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec), "const")
    prepared = require("ort-cpu")(RuntimeOptions(threads=1)).prepare_concurrent(graph.model, graph.spec, constants, streams)
    prepared.bind(per_call)
    return prepared


def hand_loop(calls, seconds: float, stamps: int | None) -> float:
    """Inferences/s of threads running until the main thread's sleep ends: `None` an Event checked per run,
    else a list flag and `stamps` (0, 1 or 2) timestamps stored per run."""
    event, flag = threading.Event(), [False]
    counts = [0] * len(calls)
    gate = threading.Barrier(len(calls) + 1)

    def loop(k: int) -> None:
        run, clock = calls[k], time.perf_counter_ns
        started, ended = [0] * 4096, [0] * 4096
        gate.wait()
        n = 0
        if stamps is None:
            while not event.is_set():
                run()
                n += 1
        else:
            while not flag[0]:
                if stamps == 2:
                    i = n & 4095
                    started[i] = clock()
                    run()
                    ended[i] = clock()
                elif stamps == 1:
                    run()
                    ended[n & 4095] = clock()
                else:
                    run()
                n += 1
        counts[k] = n

    threads = [threading.Thread(target=loop, args=(k,)) for k in range(len(calls))]
    for thread in threads:
        thread.start()
    gate.wait()
    start = time.perf_counter()
    time.sleep(seconds)
    event.set()
    flag[0] = True
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    prepared = session(args.streams)
    calls = runners(prepared)
    loops = {
        "bare loop (Event)": lambda: hand_loop(calls, args.seconds, None),
        "list flag": lambda: hand_loop(calls, args.seconds, 0),
        "list flag + 1 timestamp": lambda: hand_loop(calls, args.seconds, 1),
        "list flag + 2 timestamps": lambda: hand_loop(calls, args.seconds, 2),
        "dbench keep_busy": lambda: (lambda b: b.inferences / b.wall_s)(
            keep_busy(calls, lambda busy, elapsed: elapsed >= args.seconds and busy.reached(2))),
    }
    results: dict[str, list[float]] = {name: [] for name in loops}
    for number in range(args.rounds):
        for name in (list(loops) if number % 2 else list(loops)[::-1]):
            results[name].append(loops[name]())
    print(f"gemm_m64_n1_k1216 on ort-cpu, {args.streams} streams x 1 thread, {args.rounds} interleaved rounds of {args.seconds:g} s")
    for name, values in results.items():
        print(f"  {name:26} median {statistics.median(values):9.0f}/s  (min {min(values):.0f}, max {max(values):.0f})")


if __name__ == "__main__":
    main()
