"""A slow graph's profile taken in its timed session before the timed calls (ONNX Runtime can end its
profiler for good): which graphs qualify, that the profiler is off for the timed calls, that the
profile's calls count as the round's warm-up, and that OpenVINO (whose counters cannot be turned off)
keeps its separate pass."""

from __future__ import annotations

import dataclasses

import pytest

from dbench.catalog.kernels import GemmKernel
from dbench.errors import DbenchError, UnsupportedError
from dbench.gen.feeds import make_feeds
from dbench.gen.plan import GraphRequest, build
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.worker.job import Job
from dbench.worker.main import execute
from dbench.worker.profiling import CPU_FLOPS_PER_THREAD, PROFILE_FIRST_MIN_S, profile_before_timing, profile_first
from dbench.worker.timing import QUICK, TimingConfig, Warmed, measure


def _gemm(m: int, n: int, k: int, precision: str = "fp32"):
    return build(GraphRequest(GemmKernel(m=m, n=n, k=k, a_t=False, b_t=False), precision, "fwd", "gemm"))


# 2 * 256 * 256 * 2048 FLOPs: 0.67 ms at 4e11 FLOP/s on one thread, the bound's just-qualifying side
SLOW = _gemm(256, 256, 2048)
FAST = _gemm(64, 64, 64)


def test_only_graphs_surely_slower_than_the_bound_qualify():
    assert SLOW.spec.flops / CPU_FLOPS_PER_THREAD["fp32"] >= PROFILE_FIRST_MIN_S
    assert profile_first(SLOW.spec, threads=1)
    assert not profile_first(SLOW.spec, threads=2)  # twice the threads: the bound halves below the line
    assert not profile_first(FAST.spec, threads=1)
    int8_spec = dataclasses.replace(SLOW.spec, precision="int8")  # VNNI/AMX rates: no sure bound, separate pass
    assert not profile_first(int8_spec, threads=1)


def _ort_session(graph, profiling: bool):
    runtime = require("ort-cpu")(RuntimeOptions(threads=1))
    constants, per_call = split_feeds(graph.spec, make_feeds(graph.spec), "const")
    session = (
        runtime.prepare_profiling(graph.model, graph.spec, constants)
        if profiling
        else runtime.prepare(graph.model, graph.spec, constants)
    )
    session.bind(per_call)
    return session


def test_ort_profiles_first_then_times_unprofiled_in_the_same_session():
    session = _ort_session(FAST, profiling=True)
    try:
        profile, warmed = profile_before_timing(session, limit=3)
        assert [n.op_type for n in profile.nodes] == ["Gemm"] and profile.call_us > 0
        assert warmed.calls >= 2 and warmed.first_ns >= warmed.best_ns > 0  # warm-up runs and 1 to 3 profiled runs
        session.run()
        with pytest.raises(DbenchError, match="wrote no profile"):  # the profiler is off for good
            session.end_profiling(1)
    finally:
        session.close()


def test_a_session_made_without_its_profiler_cannot_end_it():
    session = _ort_session(FAST, profiling=False)
    try:
        with pytest.raises(DbenchError, match="wrote no profile"):
            session.end_profiling(1)
    finally:
        session.close()


def test_openvino_keeps_the_separate_pass():
    runtime = require("openvino")(RuntimeOptions(threads=1))
    constants, _ = split_feeds(SLOW.spec, make_feeds(SLOW.spec), "const")
    assert runtime.prepare_profiling(SLOW.model, SLOW.spec, constants) is None


def test_the_base_session_refuses_to_end_a_profiler_it_never_had():
    from dbench.runtimes.base import Session

    with pytest.raises(UnsupportedError, match="prepare_profiling"):
        Session.end_profiling(object(), 1)  # type: ignore[arg-type]


def test_calls_before_the_round_count_as_its_warm_up():
    calls = []
    config = TimingConfig(warmup_calls=2, warmup_time=0.0, min_time=0.0, min_samples=3, max_time=1.0)
    stats = measure(lambda: calls.append(1), config, before=Warmed(calls=2, seconds=0.001, first_ns=5e6, best_ns=1e6))
    assert len(calls) == stats.samples * stats.calls_per_sample  # no warm-up call: the two before sufficed
    assert stats.first_call_us == 5000.0  # the cold call was the first of those before
    calls.clear()
    more = measure(
        lambda: calls.append(1),
        dataclasses.replace(config, warmup_calls=3),
        before=Warmed(calls=2, seconds=0.001, first_ns=5e6, best_ns=1e6),
    )
    assert len(calls) == 1 + more.samples * more.calls_per_sample  # one more to reach three


@pytest.mark.parametrize("graph, first", [(SLOW, True), (FAST, False)])
def test_the_worker_profiles_a_slow_graph_before_timing_and_a_fast_one_after(graph, first):
    job = Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime="ort-cpu",
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        weights="const",
        verify=True,
        profile_runs=2,
    )
    outcome = execute(job)
    assert outcome.status.value == "ok" and outcome.verification["ok"], outcome.message
    assert [n["op_type"] for n in outcome.nodes] == ["Gemm"] and outcome.profile_s > 0
    median_s = outcome.stats.median_us / 1e6
    if first:  # the profile's calls warmed the session: the round's own warm-up made no call
        assert outcome.stats.warmup_s < median_s / 2
    else:  # the round warmed up itself (QUICK: one call at least)
        assert outcome.stats.warmup_s > 0


def _job(graph, cap_s: float | None) -> Job:
    return Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime="ort-cpu",
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        weights="const",
        verify=True,
        profile_runs=2,
        profile_cap_s=cap_s,
    )


@pytest.mark.parametrize("graph", [SLOW, FAST])
def test_a_profile_over_the_quick_cap_is_left_out_and_the_row_says_why(graph):
    outcome = execute(_job(graph, 1e-9))
    assert outcome.status.value == "ok" and outcome.verification["ok"]
    assert not outcome.nodes and outcome.profile_call_us is None
    assert (
        outcome.message.startswith("no per-node profile: it would cost about") and "without --quick" in outcome.message
    )


def test_quick_caps_the_profile_at_the_graphs_sampling_time():
    assert QUICK.profile_cap_s() == QUICK.round_cost_cap * QUICK.max_time
    assert TimingConfig().profile_cap_s() is None
    assert execute(_job(FAST, QUICK.profile_cap_s())).nodes  # a cheap graph keeps its profile under --quick
