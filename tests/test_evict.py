"""The evicted timing of dbench predict's twin rows (dbench.worker.evict): every timed call comes after
the eviction buffer is read and the inputs are brought back, both outside the timed interval, one call
per sample; it stops as an ordinary round does."""

from __future__ import annotations

import numpy as np

from dbench.worker.evict import WARMUP_CALLS, eviction_buffer, measure_evicted
from dbench.worker.timing import TimingConfig


class Recorder:
    """Records the order of the calls, evictions and refreshes (a buffer whose sum() says it was read)."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def call(self) -> None:
        self.events.append("call")

    def refresh(self) -> None:
        self.events.append("refresh")


class ReadBuffer:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def sum(self) -> float:
        self.recorder.events.append("evict")
        return 0.0


def test_every_call_follows_an_eviction_and_its_inputs_coming_back():
    recorder = Recorder()
    stats = measure_evicted(recorder.call, TimingConfig(iterations=7, rounds=1), ReadBuffer(recorder), recorder.refresh)
    assert stats.samples == 7 and stats.calls_per_sample == 1
    assert recorder.events == ["evict", "refresh", "call"] * (WARMUP_CALLS + 7)


def test_it_stops_at_the_rounds_share_of_time_and_samples():
    recorder = Recorder()
    stats = measure_evicted(
        recorder.call,
        TimingConfig(min_time=0.0, min_samples=5, max_time=1.0, rounds=1),
        ReadBuffer(recorder),
        recorder.refresh,
    )
    assert stats.samples == 5 and recorder.events.count("call") == WARMUP_CALLS + 5


def test_the_buffer_holds_the_bytes_asked_for():
    buffer = eviction_buffer(3 * 2**20)
    assert buffer.nbytes == 3 * 2**20 and float(buffer.sum()) == buffer.size and eviction_buffer(0).size == 1
    assert isinstance(buffer, np.ndarray)


def test_the_worker_times_a_graph_with_evict_bytes_one_call_at_a_time_and_others_as_ever():
    """The same empty graph in the worker: batched (calls of µs) without `evict_bytes`, one call per sample with it."""
    from dbench.runtimes.base import RuntimeOptions
    from dbench.sources.units import Identity, empty_item
    from dbench.worker.job import Job
    from dbench.worker.main import execute

    identity = Identity("m", "0" * 64, {}, "ort-cpu", {})
    stats = {}
    for item in (empty_item(identity), empty_item(identity, 2**20)):
        data, _ = item.load()
        job = Job(
            spec=item.spec,
            model=data,
            sha256=None,
            runtime="ort-cpu",
            options=RuntimeOptions(threads=1),
            timing=TimingConfig(iterations=40, rounds=1),
            verify=False,
            profile_runs=0,
            contract=item.contract,
        )
        outcome = execute(job)
        assert outcome.status.value == "ok", outcome.message
        stats[item.spec.id] = outcome.stats
    assert stats["empty"].calls_per_sample > 1
    assert stats["empty.evicted"].calls_per_sample == 1 and stats["empty.evicted"].samples == 40
