"""A throughput or server row's figures from its rounds, as dbench.stats.summary makes a latency row's.

Throughput (closed loop, every stream busy): each round gives its inferences and wall time; the row's
throughput pools them (all inferences / all wall time), and its interval comes from the rounds' own
time per inference (wall time / inferences), on logs, exactly as a latency row's comes from its round
medians: lower time per inference is higher throughput, so `compare` tests these like latency rounds.

Server (Poisson arrivals at a rate): each round gives every request's latency from its scheduled
arrival (queueing included; a request abandoned when its round ran out of time counts as at least that
long); the row pools the kept latencies for its percentiles, except the p99: that is exact over every
request of every round, from the rounds' slowest latencies (dbench.stats.quantile), with two intervals:
where a re-run's p99 should fall, from the rounds' own p99s (as a latency row's from its round medians),
and the order-statistic interval of the true p99 from the pooled requests, with how many requests lie
above the p99 (what it rests on)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dbench.stats.quantile import P99, pooled_tail, requests_above, tail_interval, tail_percentile
from dbench.stats.records import ServerRound, ThroughputRound
from dbench.stats.rounds import round_spread
from dbench.stats.samples import KEPT_SAMPLES, kept


def _pooled_latencies(rounds: list[ThroughputRound | ServerRound]) -> np.ndarray:
    """Every round's kept latencies, each round an equal share of KEPT_SAMPLES at most."""
    share = max(1, KEPT_SAMPLES // len(rounds))
    return np.concatenate(
        [
            np.asarray(kept(np.asarray(r.latency_us, dtype=np.float64), share), dtype=np.float64)
            for r in rounds
            if r.latency_us
        ]
        or [np.zeros(0)]
    )


def _latency_fields(rounds: list[ThroughputRound | ServerRound], percentiles: tuple[float, ...]) -> dict[str, Any]:
    """Latency under load, pooled over the rounds: p50, p90, p99 and the percentiles asked for."""
    us = _pooled_latencies(rounds)
    if not us.size:
        return {"latency_p50_us": None, "latency_p90_us": None, "latency_p99_us": None, "latency_percentiles_us": None}
    p50, p90, p99 = (float(v) for v in np.percentile(us, [50, 90, 99]))
    return {
        "latency_p50_us": p50,
        "latency_p90_us": p90,
        "latency_p99_us": p99,
        "latency_percentiles_us": {f"{p:g}": float(np.percentile(us, p)) for p in percentiles},
    }


def _interval_fields(
    center: float, per_round: list[float], unstable_above: float
) -> tuple[dict[str, Any], tuple | None]:
    """The generic interval fields of a row (rounds, SD, re-run half-width, unstable, note) for a figure
    whose per-round values are `per_round`, and the re-run interval itself."""
    spread = round_spread(center, per_round)
    rerun = spread.rerun
    rel = (rerun[1] - rerun[0]) / 2 / center if rerun else None
    return {
        "rounds": len(per_round),
        "round_sd": spread.log_sd,
        "rerun_rel": rel,
        "unstable": None if rel is None else rel > unstable_above,
        "interval_note": spread.reason,
    }, rerun


def _common(rounds: list[ThroughputRound | ServerRound]) -> dict[str, Any]:
    return {
        "mode": rounds[0].KIND,
        "streams": rounds[0].streams,
        "streams_executed": rounds[0].streams_executed,
        "inferences": int(sum(r.inferences for r in rounds)),
        "inferences_per_s": sum(r.inferences for r in rounds) / sum(r.wall_s for r in rounds),
        "stream_inferences": [int(v) for v in np.sum([r.per_stream for r in rounds], axis=0)],
        "timed_s": float(sum(r.wall_s for r in rounds)),
        "warmup_s": float(sum(r.warmup_s or 0.0 for r in rounds)),
    }


def summarize_throughput(
    rounds: list[ThroughputRound], percentiles: tuple[float, ...], unstable_above: float
) -> dict[str, Any]:
    """A throughput row's fields from its rounds (dbench.worker.streams)."""
    common = _common(rounds)
    per_inference = [r.wall_s / r.inferences * 1e6 for r in rounds]
    center = 1e6 / common["inferences_per_s"]
    intervals, rerun = _interval_fields(center, per_inference, unstable_above)
    return {
        **common,
        **intervals,
        **_latency_fields(rounds, percentiles),
        "time_per_inference_us": center,
        "round_per_inference_us": per_inference,
        "inferences_per_s_low": 1e6 / rerun[1] if rerun else None,
        "inferences_per_s_high": 1e6 / rerun[0] if rerun else None,
    }


def _pooled_p99(rounds: list[ServerRound], requests: int) -> dict[str, Any]:
    """The exact p99 over every request of every round, its order-statistic interval, and how many
    requests lie above it; nothing where a round kept no tail (logged by an older dbench and resumed:
    the p99 then stays the one pooled from the kept latencies)."""
    if any(r.latency_tail_us is None for r in rounds):
        return {}
    tail = pooled_tail((r.latency_tail_us for r in rounds), requests, P99)
    low, high = tail_interval(tail, requests, P99)
    return {
        "latency_p99_us": tail_percentile(tail, requests, P99),
        "latency_p99_ci_low_us": low,
        "latency_p99_ci_high_us": high,
        "latency_p99_above": requests_above(requests, P99),
    }


def offered_load(rate: float, service_us: float | None, requests: int) -> float | None:
    """The share of the requests' capacity the arrivals asked for, at the service time the runs really
    took: rate x mean run time / requests in flight. A fixed rate is a different load on a machine whose
    speed moved, and a p99 near saturation follows it."""
    return rate * service_us / 1e6 / requests if service_us else None


def _utilization(rounds: list[ServerRound]) -> dict[str, Any]:
    """The row's offered load at the service time its runs took (their mean over every served request
    of every round) and each round's; None where the rounds did not record it (an older dbench)."""
    if any(r.service_mean_us is None for r in rounds):
        return {"utilization": None, "round_utilization": None}
    served = [r.inferences for r in rounds]
    service_us = sum(r.service_mean_us * n for r, n in zip(rounds, served)) / sum(served)
    return {
        "utilization": offered_load(rounds[0].rate, service_us, rounds[0].streams),
        "round_utilization": [offered_load(r.rate, r.service_mean_us, r.streams) for r in rounds],
    }


def summarize_server(
    rounds: list[ServerRound], percentiles: tuple[float, ...], unstable_above: float
) -> dict[str, Any]:
    """A server row's fields from its rounds (dbench.worker.server): latency from the scheduled
    arrival, the share over the bound, the measured arrival rate, the p99's intervals, the search."""
    common = _common(rounds)
    requests = sum(r.requests for r in rounds)
    p99 = _pooled_p99(rounds, requests)
    latency = _latency_fields(rounds, percentiles)
    if p99:
        latency["latency_p99_us"] = p99["latency_p99_us"]
        if latency["latency_percentiles_us"] and f"{P99:g}" in latency["latency_percentiles_us"]:
            latency["latency_percentiles_us"][f"{P99:g}"] = p99["latency_p99_us"]  # the exact one, as in latency_p99_us
    per_round_p99 = [r.latency_p99_us for r in rounds]
    intervals, rerun = (
        {
            "rounds": len(rounds),
            "round_sd": None,
            "rerun_rel": None,
            "unstable": None,
            "interval_note": "no latency measured",
        },
        None,
    )
    if latency["latency_p99_us"]:
        intervals, rerun = _interval_fields(latency["latency_p99_us"], per_round_p99, unstable_above)
    spans = sum(r.arrival_span_s for r in rounds)
    bound = rounds[0].latency_bound_us
    search = next((r.search for r in rounds if r.search), None)
    return {
        **common,
        **intervals,
        **latency,
        **p99,
        "rate": rounds[0].rate,
        "arrival_rate": sum(r.requests - 1 for r in rounds) / spans if spans > 0 else None,
        "requests": requests,
        "unserved": sum(r.unserved for r in rounds),
        "round_p99_us": per_round_p99,
        "latency_p99_low_us": rerun[0] if rerun else None,
        "latency_p99_high_us": rerun[1] if rerun else None,
        "latency_bound_us": bound,
        "over_bound": sum(r.over_bound for r in rounds) / requests if bound else None,
        **_utilization(rounds),
        "queue_p99_us": float(np.median([r.queue_p99_us for r in rounds])),
        "dispatch_lag_p99_us": float(max(r.dispatch_lag_p99_us for r in rounds)),
        "search": search,
    }


def summarize_load(
    rounds: list[ThroughputRound | ServerRound], percentiles: tuple[float, ...], unstable_above: float
) -> dict[str, Any]:
    """The row's fields from its rounds, by the rounds' mode (`throughput` or `server`)."""
    summarize = summarize_server if isinstance(rounds[0], ServerRound) else summarize_throughput
    return summarize(rounds, percentiles, unstable_above)
