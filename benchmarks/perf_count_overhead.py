"""What OpenVINO's PERF_COUNT costs the timed calls: the same graph compiled with and without it,
timed in alternating rounds (the order flipped each round), the paired ratio of medians reported.
If it were nothing, dbench could read the per-node profile from the timed model and skip the second
compile (docs/runtimes/openvino.md); until measured on a quiet machine it keeps the separate one.

    python benchmarks/perf_count_overhead.py --rounds 20 --calls 500
    python benchmarks/perf_count_overhead.py --rounds 20 --calls 30 --graphs rnn_gru_h32_n1_t1500
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dbench.catalog import ConvKernel, GemmKernel
from dbench.catalog.kernels import RnnKernel
from dbench.gen import conv, gemm, rnn
from dbench.gen.feeds import make_feeds

GRAPHS = {
    "gemm_m64_n1_k1216": lambda: gemm.build(GemmKernel(m=64, n=1, k=1216, a_t=False, b_t=False), "fp32"),
    "gemm_m512_n1_k512": lambda: gemm.build(GemmKernel(m=512, n=1, k=512, a_t=False, b_t=False), "fp32"),
    "gemm_m35_n700_k2048": lambda: gemm.build(GemmKernel(m=35, n=700, k=2048, a_t=False, b_t=False), "fp32"),
    "conv_w7_h7_c512_n1_k512_1x1": lambda: conv.build(
        ConvKernel(w=7, h=7, c=512, n=1, k=512, s=1, r=1, pad_w=0, pad_h=0, wstride=1, hstride=1), "fp32"),
    "conv_w56_h56_c64_n1_k64_3x3": lambda: conv.build(
        ConvKernel(w=56, h=56, c=64, n=1, k=64, s=3, r=3, pad_w=1, pad_h=1, wstride=1, hstride=1), "fp32"),
    # a 1500-step GRU: the plugin runs the sequence as a loop, and PERF_COUNT times every layer of every step
    "rnn_gru_h32_n1_t1500": lambda: rnn.build(RnnKernel(cell="gru", hidden=32, batch=1, timesteps=1500), "fp32"),
}


def request(graph, perf_count: bool, threads: int):
    """A bound infer request of the graph compiled with PERF_COUNT on or off (f32 pinned, as dbench does)."""
    import openvino as ov

    core = ov.Core()
    model = core.read_model(graph.model.SerializeToString(), ov.Tensor(np.empty(0, dtype=np.uint8)))
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": str(threads),
                                                 "PERF_COUNT": "YES" if perf_count else "NO"})
    infer = compiled.create_infer_request()
    for name, value in make_feeds(graph.spec).items():
        infer.get_tensor(name).data[...] = value
    return infer


def median_us(infer, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        infer.infer(share_outputs=True)
        times.append(time.perf_counter_ns() - start)
    return float(np.median(times)) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=500, help="timed calls per side and round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--graphs", type=lambda t: t.split(","), default=list(GRAPHS), help=f"some of: {', '.join(GRAPHS)}")
    args = parser.parse_args()
    print(f"{'graph':<30}{'off µs':>10}{'on µs':>10}{'paired ratio':>14}  rounds on > off")
    for name in args.graphs:
        build = GRAPHS[name]
        graph = build()
        sides = {flag: request(graph, flag, args.threads) for flag in (False, True)}
        for infer in sides.values():
            median_us(infer, args.calls)  # warm-up
        ratios, medians = [], {False: [], True: []}
        for round_ in range(args.rounds):
            order = (False, True) if round_ % 2 else (True, False)
            measured = {flag: median_us(sides[flag], args.calls) for flag in order}
            for flag in order:
                medians[flag].append(measured[flag])
            ratios.append(measured[True] / measured[False])
        print(f"{name:<30}{np.median(medians[False]):10.2f}{np.median(medians[True]):10.2f}{np.median(ratios):14.4f}"
              f"  {sum(r > 1 for r in ratios)}/{len(ratios)}")


if __name__ == "__main__":
    main()
