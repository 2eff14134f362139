"""What a torch profiling pass costs with its warm-up calls inside torch.profiler (recorded, then dropped:
dbench before 5d7cbef) against before it starts (one call kept inside: dbench now), on one torch CPU
session, interleaved round by round with the order flipped each round. Prints each way's pass time per
round, their medians and ranges, and the per-round ratio: the events the profiler records are the cost
the change removes (on a GPU, a cuDNN RNN's thousands of kernel launches a call).

    python benchmarks/torch_profile_warmup.py [--rounds 10] [--warmup 50] [--runs 10] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from dbench.catalog.kernels import RnnKernel
from dbench.gen import rnn
from dbench.gen.feeds import make_feeds
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.runtimes.torch_profile import CALL_RANGE, dtypes_by_start, parse_events


def inside(session, torch, warmup: int, runs: int) -> None:
    """The earlier pass: every warm-up call recorded by the profiler, then parsed as dbench parses a pass."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as profiler:
        for _ in range(warmup + runs):
            with torch.profiler.record_function(CALL_RANGE):
                session.run()
    parse_events(profiler.events(), warmup, device=False, by_start=dtypes_by_start(profiler))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    graph = rnn.build(RnnKernel(cell="lstm", hidden=256, batch=2, timesteps=25), "fp32", "fwd", "op")
    constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec), "const")
    runtime = require("torch")(RuntimeOptions(threads=args.threads))
    session = runtime.prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    torch = runtime.torch
    inside(session, torch, 1, 1)  # the profiler's first start in a process (seconds) is neither way's
    ways = {"warm-up inside the profiler": lambda: inside(session, torch, args.warmup, args.runs),
            "warm-up before it (dbench now)": lambda: session.profile(args.runs, args.warmup)}
    times: dict[str, list[float]] = {name: [] for name in ways}
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} lstm h256 n2 t25, {args.warmup} warm-up + {args.runs} profiled calls, "
          f"{args.threads} threads, load {os.getloadavg()[0]:.2f}")
    for number in range(args.rounds):
        order = list(ways) if number % 2 == 0 else list(reversed(ways))
        for name in order:
            t0 = time.perf_counter()
            ways[name]()
            times[name].append(time.perf_counter() - t0)
    for name, values in times.items():
        print(f"  {name:32s} median {statistics.median(values):.3f} s, range {min(values):.3f}-{max(values):.3f} s")
    ratios = [b / a for a, b in zip(*times.values())]
    print(f"  now / before, per round: median {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}; "
          f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
