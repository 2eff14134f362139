"""The untimed per-node profiling pass of a graph: how many runs it warms up and profiles, which pass
is kept when the machine perturbed one, when a slow graph's profile is taken first in its timed session,
and when --quick leaves the profile out because it would cost more than the graph's sampling."""

from __future__ import annotations

import math
import time

from dbench.gen.graph import GraphSpec
from dbench.runtimes.base import Profile, Session
from dbench.worker.timing import Warmed

PROFILE_BUDGET_S = 0.05
"""A profiling pass times about this much kernel time: at least one run, at most --profile-runs."""
PROFILE_WARMUP_S = 0.05
"""A profiling pass first runs about this long, left out of the profile (1 to PROFILE_WARMUP_CALLS calls): a fresh
session's first calls are slow (ONNX Runtime's gemm_m35_n700_k2048: 3.4, 5.6, 2.9, 1.7 ms, then a
steady 1.2 ms), and profiling them made kernel times 2-5x the timed median on a quiet machine."""
PROFILE_WARMUP_CALLS = 50
PROFILE_ATTEMPTS = 3
"""Profiling passes at most: another is taken while a pass ran slower than the invariant allows against
the timed median (a load burst), and the pass with the fastest calls is kept."""
PROFILE_RETRY_S = 1.0
"""A pass is taken again only when it took less than this (seconds, its session build included): a
retry of a slow graph (a server GRU, a 2 GB weight to load again) would cost more than the profile."""
PROFILE_FIRST_MIN_S = 0.0005
"""A graph whose one call takes at least this long (by a FLOP bound) is profiled in its timed session,
before timing, where the runtime can turn its profiler off (`Runtime.prepare_profiling`): no second
session, and the profile's calls are the round's warm-up. ONNX Runtime's calls after its profiler ends
cost ~0.06 µs more (measured on a 2-thread GEMV,
docs/measurements/2026-11-21-suite-time-gemm-conv.md): at most 1.2e-4 of such a call, in
the first of its rounds only, a hundredth of the finest interval a row has here. The second session
it saves costs most where the weights are large: a 2 GB GEMV's copy and pre-packing again."""
CPU_FLOPS_PER_THREAD = {"fp32": 4e11}
"""FLOP/s above any CPU thread's in that precision (two 512-bit FMA units at 6 GHz make 384 G fp32), so
a call's time from it is a lower bound. Other precisions (AMX and VNNI rates) keep the separate pass."""


def least_cpu_call_s(spec: GraphSpec, threads: int) -> float | None:
    """The least time a call of the graph can take on a CPU: its FLOPs at CPU_FLOPS_PER_THREAD on every
    thread; None in a precision without such a bound."""
    rate = CPU_FLOPS_PER_THREAD.get(spec.precision)
    return None if rate is None else min(spec.flops, spec.flops_executed) / (rate * max(1, threads))


def profile_first(spec: GraphSpec, threads: int) -> bool:
    """Whether a graph's call is surely long enough (least_cpu_call_s) for its profile to be taken in its
    timed session, before the timed calls."""
    least = least_cpu_call_s(spec, threads)
    return least is not None and least >= PROFILE_FIRST_MIN_S


def profile_before_timing(session: Session, limit: int, cap_s: float | None = None) -> tuple[Profile | None, Warmed]:
    """The profile of a session prepared with its profiler on (`Runtime.prepare_profiling`): warm-up runs
    for PROFILE_WARMUP_S (1 to PROFILE_WARMUP_CALLS), then the profiled runs a separate pass would make
    for the fastest of them, all timed here to count as the round's warm-up; then the profiler ends and
    the timed calls follow unprofiled. None instead of the profile when the profiled runs would cost
    more than `cap_s` (the profiler is still ended; the warm-up runs still count)."""
    clock = time.perf_counter_ns
    start = clock()
    calls: list[int] = []

    def call() -> None:
        t0 = clock()
        session.run()
        calls.append(clock() - t0)

    while not calls or (len(calls) < PROFILE_WARMUP_CALLS and clock() - start < PROFILE_WARMUP_S * 1e9):
        call()
    warmup = len(calls)
    runs = profile_runs(limit, min(calls) / 1e3)
    if cap_s is not None and runs * min(calls) / 1e9 > cap_s:
        session.end_profiling(warmup)  # only the warm-up was profiled: the profile is dropped
        return None, Warmed(len(calls), (clock() - start) / 1e9, calls[0], min(calls))
    for _ in range(runs):
        call()
    took = (clock() - start) / 1e9
    return session.end_profiling(warmup), Warmed(len(calls), took, calls[0], min(calls))


def separate_pass_s(prepare_s: float, limit: int, median_us: float) -> float:
    """What a separate profiling pass after timing costs, about: a second session and its calls."""
    return prepare_s + (profile_warmup(median_us) + profile_runs(limit, median_us)) * median_us / 1e6


def over_cap(cost_s: float, cap_s: float) -> str:
    """The row's words for a profile left out because it would cost more than --quick allows."""
    return (
        f"no per-node profile: it would cost about {cost_s:.2g} s, more than --quick allows ({cap_s:.2g} s, its "
        "sampling time); run without --quick for per-node times, kernel names and executed precision"
    )


def profile_runs(limit: int, median_us: float) -> int:
    """About PROFILE_BUDGET_S of work, at least one run (the warm-up took the cold calls), at most `limit`."""
    return max(1, min(limit, math.ceil(PROFILE_BUDGET_S * 1e6 / max(median_us, 1.0))))


def profile_warmup(median_us: float) -> int:
    """Warm-up runs of a profiling pass: about PROFILE_WARMUP_S of work, 1 to PROFILE_WARMUP_CALLS (even a
    call of seconds: a fresh session's first call of a 2.5 s GRU took 1.6 times the median)."""
    return max(1, min(PROFILE_WARMUP_CALLS, math.ceil(PROFILE_WARMUP_S * 1e6 / max(median_us, 1.0))))


def taken_well(profile: Profile | None, median_us: float) -> bool:
    """Whether a profile taken before timing may stand: its calls no slower than the timed median allows
    (see dbench.store.invariants); else a separate pass after timing replaces it (`best_profile`)."""
    from dbench.store.invariants import KERNEL_TIME_TOLERANCE

    return profile is not None and (
        profile.call_us is None or profile.call_us <= median_us * (1 + KERNEL_TIME_TOLERANCE)
    )


def best_profile(session: Session, runs: int, median_us: float, cap_s: float | None = None) -> Profile:
    """The profiling pass to report: a new pass while the last ran slower than the timed calls allow
    (see dbench.store.invariants) and took less than PROFILE_RETRY_S, up to PROFILE_ATTEMPTS, keeping
    the one with the fastest calls. With --quick's cap (`cap_s`) a retry is taken only while all passes
    together stay within it: a pass's own cost can far exceed its calls' (torch.profiler turning a
    cuDNN GRU's 3,000 kernel launches into events took 0.5-1 s a pass on a GPU machine)."""
    from dbench.store.invariants import KERNEL_TIME_TOLERANCE

    warmup = profile_warmup(median_us)
    first = start = time.perf_counter()
    best = session.profile(runs, warmup)
    for _ in range(PROFILE_ATTEMPTS - 1):
        if best.call_us is None or best.call_us <= median_us * (1 + KERNEL_TIME_TOLERANCE):
            break
        now = time.perf_counter()
        if now - start > PROFILE_RETRY_S:
            break
        if cap_s is not None and (now - first) + (now - start) > cap_s:
            break
        start = time.perf_counter()
        again = session.profile(runs, warmup)
        if again.call_us is not None and again.call_us < best.call_us:
            best = again
    return best
