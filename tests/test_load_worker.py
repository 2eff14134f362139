"""Throughput and server jobs in the worker, on ONNX Runtime CPU and OpenVINO CPU with a tiny GEMM:
every request's outputs verified (a wrong one in the last request is caught), a runtime without
concurrent execution gives an unsupported row with its reason, the closed loop and the server's
dispatcher on a synthetic server of known service time (queueing counted, the search bounded)."""

from __future__ import annotations

import functools
import threading
import time
from typing import ClassVar

import numpy as np
import pytest

from dbench.catalog import GemmKernel
from dbench.gen import gemm
from dbench.outcome import Status
from dbench.runtimes.base import ConcurrentSession, RuntimeOptions
from dbench.runtimes.onnxruntime import OrtConcurrentSession, OrtRuntime
from dbench.runtimes.openvino import OpenVinoConcurrentSession, _fill
from dbench.scenario import Load
from dbench.stats.records import ThroughputRound
from dbench.stats.throughput import offered_load
from dbench.worker.job import Job
from dbench.worker.main import execute
from dbench.worker.server import serve
from dbench.worker.streams import keep_busy
from dbench.worker.timing import QUICK, TimingConfig

GRAPH = gemm.build(GemmKernel(m=48, n=16, k=64, a_t=False, b_t=False), "fp32", "fwd")
RUNTIMES = ["ort-cpu", "openvino"]


def job(runtime: str, load: Load, timing: TimingConfig = QUICK, **kw) -> Job:
    return Job(
        spec=GRAPH.spec,
        model=GRAPH.model.SerializeToString(),
        sha256=None,
        runtime=runtime,
        options=RuntimeOptions(threads=1),
        timing=timing.per_round(),
        load=load,
        profile_runs=2,
        **kw,
    )


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_throughput_job_keeps_every_request_busy_and_verifies_each(runtime):
    outcome = execute(job(runtime, Load("throughput", 2)))
    assert outcome.status == Status.OK, outcome.message
    stats = outcome.stats
    assert isinstance(stats, ThroughputRound) and stats.streams == 2 and stats.streams_executed == 2
    assert len(stats.per_stream) == 2 and min(stats.per_stream) >= 1 and sum(stats.per_stream) == stats.inferences
    assert stats.inferences >= 2 * QUICK.per_round().min_samples and stats.wall_s > 0
    assert 0 < stats.latency_p50_us <= stats.latency_p99_us
    assert outcome.verification["ok"] and outcome.verification["requests_checked"] == 2
    assert outcome.nodes and {n["precision"] for n in outcome.nodes if n["precision"]} == {"fp32"}, "profiled alone"
    described = outcome.runtime_options
    if runtime == "ort-cpu":
        assert described["concurrency"]["requests"] == 2 and described["intra_op_num_threads"] == 1
    else:
        assert described["config"]["NUM_STREAMS"] == "2" and described["compiled"]["NUM_STREAMS"] == "2"


def test_threads_per_stream_add_up_in_one_ort_session():
    """Two requests of two threads each: the shared pool gets 2 x (2 - 1) workers beside the two callers."""
    outcome = execute(
        Job(
            spec=GRAPH.spec,
            model=GRAPH.model.SerializeToString(),
            sha256=None,
            runtime="ort-cpu",
            options=RuntimeOptions(threads=2),
            timing=QUICK.per_round(),
            load=Load("throughput", 2),
            profile_runs=0,
        )
    )
    assert outcome.status == Status.OK and outcome.runtime_options["intra_op_num_threads"] == 3


def corrupt_last_request(monkeypatch, runtime: str) -> None:
    """After binding, zero the activation of the last request only, so its run computes a wrong answer."""
    name = next(t.name for t in GRAPH.spec.inputs if t.role == "activation")
    if runtime == "ort-cpu":
        original = OrtConcurrentSession.bind

        def bind(self, feeds):
            original(self, feeds)
            self.feeds[-1][name][...] = 0  # the OrtValue shares this array's memory

        monkeypatch.setattr(OrtConcurrentSession, "bind", bind)
    else:
        original = OpenVinoConcurrentSession.bind

        def bind(self, feeds):
            original(self, feeds)
            _fill(self.infer_requests[-1].get_tensor(name), np.zeros_like(feeds[name]))

        monkeypatch.setattr(OpenVinoConcurrentSession, "bind", bind)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_wrong_answer_from_any_request_is_a_mismatch(runtime, monkeypatch):
    corrupt_last_request(monkeypatch, runtime)
    outcome = execute(job(runtime, Load("throughput", 3)))
    assert outcome.status == Status.MISMATCH
    assert outcome.message.startswith("request 3 of 3:"), outcome.message
    assert outcome.verification["ok"] is False and outcome.verification["requests_checked"] == 3


class SequentialOrt(OrtRuntime):
    """ONNX Runtime without the concurrent interface: a real runtime that runs one request at a time."""

    name: ClassVar[str] = "ort-sequential"


def test_a_runtime_without_concurrent_execution_is_unsupported_with_the_reason(monkeypatch):
    monkeypatch.setitem(
        __import__("dbench.runtimes.registry", fromlist=["RUNTIMES"]).RUNTIMES,
        "ort-sequential",
        f"{__name__}:SequentialOrt",
    )
    outcome = execute(job("ort-sequential", Load("throughput", 2)))
    assert outcome.status == Status.UNSUPPORTED and outcome.stats is None
    assert "ort-sequential has no concurrent execution in dbench" in outcome.message


def test_the_closed_loop_runs_exactly_its_budget_and_ends_its_threads():
    calls = []
    before = threading.active_count()

    def run(request: int) -> None:
        time.sleep(0.0005)  # releases the GIL, as a runtime's run does
        calls.append(request)

    busy = keep_busy([functools.partial(run, k) for k in range(3)], lambda b, elapsed: False, budget=57)
    assert busy.inferences == 57 == len(calls) and sorted(set(calls)) == [0, 1, 2]
    assert threading.active_count() == before


def test_the_closed_loop_records_every_run_across_its_buffers():
    """More runs than one buffer holds (CHUNK): every run's start and end, in order, none lost or doubled."""
    from dbench.worker.streams import CHUNK

    budget = 2 * CHUNK + 7
    busy = keep_busy([lambda: None, lambda: None], lambda b, elapsed: False, budget=budget)  # holding the GIL: uneven
    assert busy.inferences == budget == sum(busy.counts) and not busy.reached(budget)
    latencies = busy.latencies_us()
    assert latencies.size == budget and (latencies >= 0).all() and busy.wall_s > 0
    timed = keep_busy([lambda: time.sleep(0.0002)] * 2, lambda b, elapsed: elapsed > 0.05 and b.reached(3))
    assert min(timed.counts) >= 3 and timed.latencies_us().min() >= 200, "each latency is the run's own time"


def test_an_error_in_one_request_stops_every_thread_and_is_raised():
    before = threading.active_count()

    def run(request: int) -> None:
        time.sleep(0.001)
        if request == 1:
            raise RuntimeError("request 1 broke")

    with pytest.raises(RuntimeError, match="request 1 broke"):
        keep_busy([functools.partial(run, k) for k in range(3)], lambda b, elapsed: elapsed > 5)
    assert threading.active_count() == before


class ServiceTime(ConcurrentSession):
    """A synthetic server: each run takes `service_s` (sleeping, so requests overlap as real ones do)."""

    def __init__(self, requests: int, service_s: float) -> None:
        self.requests, self.service_s = requests, service_s

    def bind(self, feeds) -> None:
        pass

    def run(self, request: int) -> None:
        time.sleep(self.service_s)

    def outputs(self, request: int) -> dict:
        return {}


def test_server_latency_counts_from_arrival_and_grows_with_queueing(seed):
    light = serve(ServiceTime(1, 0.002), 50.0, 60, seed, 20_000.0)
    heavy = serve(ServiceTime(1, 0.002), 450.0, 200, seed, 20_000.0)
    for result in (light, heavy):
        assert result.inferences == sum(result.per_stream) and result.latency_p50_us >= 2000
    assert light.arrival_rate == pytest.approx(50.0, rel=0.25) and heavy.arrival_rate == pytest.approx(450.0, rel=0.25)
    assert heavy.queue_p99_us > light.queue_p99_us and heavy.latency_p99_us > light.latency_p99_us
    assert 0 <= heavy.over_bound <= heavy.inferences
    two = serve(ServiceTime(2, 0.002), 450.0, 200, seed, 20_000.0)  # a second stream drains the queue
    assert min(two.per_stream) > 0 and two.queue_p99_us < heavy.queue_p99_us
    for result, rate, requests in ((light, 50.0, 1), (heavy, 450.0, 1), (two, 450.0, 2)):
        assert 2000 <= result.service_mean_us < 4000, "the runs' own time: a 2 ms sleep and its wake-up"
        assert offered_load(rate, result.service_mean_us, requests) == pytest.approx(
            rate * result.service_mean_us / 1e6 / requests
        )
    load = {
        name: offered_load(rate, r.service_mean_us, n)
        for name, r, rate, n in (("light", light, 50.0, 1), ("heavy", heavy, 450.0, 1), ("two", two, 450.0, 2))
    }
    assert load["light"] < 0.2 and load["heavy"] > 0.9 and 0.45 < load["two"] < 0.9


def test_an_overloaded_server_abandons_what_it_cannot_serve_and_ends_by_itself(seed):
    """Ten times its capacity: the queue is abandoned at twice the schedule's span, and those requests
    count with latencies of at least that long."""
    started = time.perf_counter()
    result = serve(ServiceTime(1, 0.01), 1000.0, 100, seed, 5_000.0)
    assert time.perf_counter() - started < 1.0, "not the 1 s that serving every request would take"
    assert result.requests == 100 and 0 < result.inferences < 50 and result.unserved == 100 - result.inferences
    span_us = (
        99 / 1000.0 * 1e6
    )  # the schedule's span; the deadline is twice it, so the last arrival waits at least one span
    assert result.latency_p99_us >= span_us, "an abandoned request counts as waiting until the deadline"
    assert result.over_bound >= result.unserved


def test_server_round_searches_within_its_budget_and_only_in_round_one():
    timing = TimingConfig(warmup_calls=1, warmup_time=0.0, min_time=0.2, max_time=1.0, rounds=1)
    load = Load("server", 1, rate=100.0, latency_bound_us=10_000.0, search_s=2.0)
    session = ServiceTime(1, 0.002)
    from dbench.worker.server import measure_server

    started = time.perf_counter()
    first = measure_server(session, timing, load.rate, load.latency_bound_us, load.search_s, 5)
    elapsed = time.perf_counter() - started
    search = first.search
    assert search and 1 <= len(search["trials"]) <= 10 and search["stop"]
    assert all(t["rate"] < search["ceiling"] for t in search["trials"])
    assert elapsed < 0.2 + 1.0 + load.search_s + 1.0, "the search stops by itself within its budget"
    later = measure_server(session, timing, load.rate, load.latency_bound_us, 0.0, 6)
    assert later.search is None
