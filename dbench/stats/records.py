"""What one round of a job measured, typed by how it was measured: a latency round's per-call samples, a
throughput round's closed loop, a server round's Poisson arrivals. The worker returns one in its Outcome; a
round line of the run log keeps it as a dict with its `kind` (`to_dict`), read back by `round_from_dict`;
the parent combines a graph's rounds into its row (dbench.stats.summary, dbench.stats.throughput) by their
type, never by which keys a dict happens to hold."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class LatencyRound:
    """One round's per-call latency in microseconds, one request at a time."""

    KIND: ClassVar[str] = "latency"
    median_us: float
    """The exact median of the round's samples (all of them, not only the kept ones)."""
    min_us: float
    samples: int
    calls_per_sample: int
    timed_s: float
    """Wall time spent inside the sampled calls (for the tool's own overhead accounting)."""
    samples_us: list[float]
    """The per-sample times (each the mean of calls_per_sample calls), at most KEPT_SAMPLES of them
    (dbench.stats.samples)."""
    warmup_s: float = 0.0
    """Wall time of the round's warm-up before sampling (same purpose)."""
    first_call_us: float | None = None
    """The cold first call right after preparing (the warm-up's first call)."""
    runtime_median_us: float | None = None
    """The runtime's own per-call clock (e.g. OpenVINO's InferRequest.latency), median over samples."""

    @property
    def call_us(self) -> float:
        """The round's typical call."""
        return self.median_us

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class ThroughputRound:
    """One closed-loop round: every one of `streams` requests kept busy for the round's time."""

    KIND: ClassVar[str] = "throughput"
    streams: int
    streams_executed: int | None
    """The streams the runtime says it ran (None where it does not say)."""
    inferences: int
    wall_s: float
    per_stream: list[int]
    """Inferences each request finished."""
    latency_us: list[float]
    """Kept per-request latencies (dbench.stats.samples)."""
    latency_p50_us: float
    latency_p90_us: float
    latency_p99_us: float
    """Exact percentiles of all the round's latencies."""
    warmup_s: float = 0.0

    @property
    def timed_s(self) -> float:
        return self.wall_s

    @property
    def call_us(self) -> float:
        """The round's typical request."""
        return self.latency_p50_us

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class ServerRound:
    """One server round: `requests` Poisson arrivals at `rate` per second, queued for whichever of the
    `streams` requests is free; latency counts from each request's scheduled arrival."""

    KIND: ClassVar[str] = "server"
    streams: int
    streams_executed: int | None
    rate: float
    requests: int
    inferences: int
    """Requests served (the rest were abandoned with an overloaded queue: `unserved`)."""
    unserved: int
    wall_s: float
    per_stream: list[int]
    latency_us: list[float]
    latency_p50_us: float
    latency_p90_us: float
    latency_p99_us: float
    latency_bound_us: float | None
    over_bound: int
    arrival_span_s: float
    arrival_rate: float | None
    queue_p99_us: float
    dispatch_lag_p99_us: float
    latency_tail_us: list[float] | None = None
    """The round's slowest latencies, enough for the row's pooled p99 (dbench.stats.quantile; None in rounds of
    a dbench that did not keep them)."""
    service_mean_us: float | None = None
    """The served requests' mean time in a run (None in rounds of a dbench that did not record it)."""
    warmup_s: float = 0.0
    search: dict[str, Any] | None = None
    """The max-rate search under the latency bound (first round only; dbench.stats.ratesearch)."""

    @property
    def timed_s(self) -> float:
        return self.wall_s

    @property
    def call_us(self) -> float:
        """The round's typical request."""
        return self.latency_p50_us

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, **dataclasses.asdict(self)}


RoundStats = LatencyRound | ThroughputRound | ServerRound
LOAD_ROUNDS = (ThroughputRound, ServerRound)
"""Rounds with requests in flight: their rows have their own figures (dbench.stats.throughput)."""
_BY_KIND = {cls.KIND: cls for cls in (LatencyRound, ThroughputRound, ServerRound)}


def round_from_dict(data: dict[str, Any]) -> RoundStats:
    """A round as a log line keeps it. Its `kind` names its type; a round line written before rounds were
    typed has none, and then named its load round's kind in `mode` (a latency round had no `mode`)."""
    kind = data.get("kind") or data.get("mode") or LatencyRound.KIND
    cls = _BY_KIND[kind]
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})
