"""Throughput and server statistics on synthetic data: the Poisson schedule's rate and shape, the
knee of a stream sweep, the bounded search for the highest rate under a latency bound, and a load
row's figures and intervals from its rounds (the same interval rule as latency rows)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dbench.stats.arrivals import arrival_rate, poisson_schedule
from dbench.stats.knee import SweepPoint, find_knee
from dbench.stats.quantile import slowest
from dbench.stats.ratesearch import RateSearch, Trial
from dbench.stats.records import ServerRound, ThroughputRound, round_from_dict
from dbench.stats.rounds import round_spread
from dbench.stats.throughput import summarize_load


def test_schedule_has_exactly_the_asked_rate_and_poisson_shape(seed):
    rate, count = 250.0, 20_000
    times = poisson_schedule(rate, count, seed)
    assert times[0] == 0.0 and np.all(np.diff(times) >= 0) and times.size == count
    assert arrival_rate(times) == pytest.approx(rate, rel=1e-9)
    gaps = np.diff(times)
    assert gaps.mean() == pytest.approx(1 / rate, rel=1e-9)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05), "exponential gaps have a CV of 1"
    counts = np.histogram(times, bins=np.arange(0, times[-1], 10 / rate))[0]  # 10 arrivals expected per window
    assert counts.var() / counts.mean() == pytest.approx(1.0, abs=0.1), "Poisson counts: variance = mean"


def test_schedule_is_seeded():
    assert np.array_equal(poisson_schedule(10.0, 100, 7), poisson_schedule(10.0, 100, 7))
    assert not np.array_equal(poisson_schedule(10.0, 100, 7), poisson_schedule(10.0, 100, 8))


def test_schedule_refuses_nonsense():
    with pytest.raises(ValueError):
        poisson_schedule(0.0, 10, 1)
    assert arrival_rate(np.array([1.0])) is None


def sweep(*points: tuple[int, float, float | None, float]) -> list[SweepPoint]:
    return [SweepPoint(s, x, low, p50, p50 * 2) for s, x, low, p50 in points]


def test_knee_is_the_smallest_count_within_the_best_interval():
    points = sweep((1, 100.0, 95.0, 10.0), (2, 190.0, 180.0, 10.5), (4, 200.0, 192.0, 20.0), (8, 198.0, 190.0, 40.0))
    knee = find_knee(points)
    assert (knee.streams, knee.best_streams) == (4, 4)
    assert knee.gain == pytest.approx(2.0) and knee.p50_ratio == pytest.approx(2.0)
    wider = sweep((1, 100.0, 95.0, 10.0), (2, 190.0, 180.0, 10.5), (4, 200.0, 185.0, 20.0), (8, 198.0, 190.0, 40.0))
    knee = find_knee(list(reversed(wider)))  # order of the points does not matter
    assert knee.streams == 2 and knee.p50_ratio == pytest.approx(1.05) and knee.p99_ratio == pytest.approx(1.05)


def test_knee_without_interval_uses_a_tolerance_and_says_so():
    knee = find_knee(sweep((1, 100.0, None, 1.0), (2, 196.0, None, 1.0), (4, 200.0, None, 2.0)))
    assert knee.streams == 2 and "no interval" in knee.rule
    assert find_knee(sweep((2, 100.0, None, 1.0))) is None


def threshold_search(limit: float, ceiling: float = 100.0, **kw) -> RateSearch:
    """A search against a server whose p99 keeps the bound exactly below `limit` per second."""
    search = RateSearch(ceiling, **kw)
    while (rate := search.next_rate()) is not None:
        search.record(Trial(rate, 1.0 if rate < limit else 9.0, rate < limit))
    return search


@pytest.mark.parametrize("limit", [3.1, 37.3, 61.0, 96.0])
def test_search_brackets_the_limit_within_its_tolerance(limit):
    search = threshold_search(limit)
    result = search.to_dict()
    assert result["max_rate"] < limit <= result["max_rate_failed"]
    assert result["max_rate_failed"] - result["max_rate"] <= 0.05 * result["max_rate_failed"]
    assert len(result["trials"]) <= 10 and result["stop"] == "bracket within 5%"


def test_search_stops_by_itself_at_its_trial_limit():
    search = threshold_search(0.001, max_trials=5)
    result = search.to_dict()
    assert len(result["trials"]) == 5 and result["stop"] == "trial limit (5)" and result["max_rate"] is None
    rng = np.random.default_rng(3)
    noisy = RateSearch(50.0)
    for _ in range(100):  # a server that passes or fails at random still ends the search
        rate = noisy.next_rate()
        if rate is None:
            break
        noisy.record(Trial(rate, 1.0, bool(rng.random() < 0.5)))
    assert len(noisy.trials) <= 10


def test_search_uses_a_known_result():
    search = RateSearch(100.0)
    search.record(Trial(30.0, 5.0, True))
    assert search.next_rate() == pytest.approx(65.0)


def throughput_round(inferences: int, wall_s: float, streams: int = 2) -> ThroughputRound:
    latencies = list(np.random.default_rng(inferences).uniform(90, 110, inferences))
    p50, p90, p99 = np.percentile(latencies, [50, 90, 99])
    return ThroughputRound(
        streams=streams,
        streams_executed=streams,
        inferences=inferences,
        wall_s=wall_s,
        per_stream=[inferences // streams] * streams,
        latency_us=latencies,
        latency_p50_us=p50,
        latency_p90_us=p90,
        latency_p99_us=p99,
        warmup_s=0.01,
    )


def test_throughput_row_pools_rounds_and_takes_its_interval_from_them():
    rounds = [throughput_round(1000, 0.50), throughput_round(1000, 0.55), throughput_round(1000, 0.52)]
    row = summarize_load(rounds, (50.0, 99.0), 0.05)
    assert row["inferences"] == 3000 and row["inferences_per_s"] == pytest.approx(3000 / 1.57)
    assert row["time_per_inference_us"] == pytest.approx(1.57e6 / 3000)
    assert row["round_per_inference_us"] == pytest.approx([500.0, 550.0, 520.0])
    expected = round_spread(row["time_per_inference_us"], [500.0, 550.0, 520.0])  # the latency rows' rule
    assert row["inferences_per_s_low"] == pytest.approx(1e6 / expected.rerun[1])
    assert row["inferences_per_s_high"] == pytest.approx(1e6 / expected.rerun[0])
    assert row["inferences_per_s_low"] < row["inferences_per_s"] < row["inferences_per_s_high"]
    assert row["round_sd"] == pytest.approx(expected.log_sd) and row["rounds"] == 3
    assert 90 <= row["latency_p50_us"] <= row["latency_p99_us"] <= 110
    assert set(row["latency_percentiles_us"]) == {"50", "99"} and row["stream_inferences"] == [1500, 1500]
    assert "median_us" not in row and "round_medians_us" not in row, "no latency-row field in a throughput row"


def test_one_round_has_no_throughput_interval():
    row = summarize_load([throughput_round(10, 0.1)], (50.0,), 0.05)
    assert row["inferences_per_s_low"] is None and row["rerun_rel"] is None and "1 round" in row["interval_note"]


def server_round(
    p99: float, over: int, span: float = 1.0, search: dict | None = None, service_us: float = 5000.0
) -> ServerRound:
    latencies = np.linspace(10, p99, 101)
    return ServerRound(
        streams=1,
        streams_executed=1,
        rate=100.0,
        requests=101,
        inferences=101,
        unserved=0,
        service_mean_us=service_us,
        wall_s=1.05,
        per_stream=[101],
        latency_tail_us=slowest(latencies, 3 * 101),
        latency_us=list(latencies),
        latency_p50_us=float(np.median(latencies)),
        latency_p90_us=float(np.percentile(latencies, 90)),
        latency_p99_us=p99,
        over_bound=over,
        latency_bound_us=50.0,
        arrival_span_s=span,
        arrival_rate=100.0,
        queue_p99_us=3.0,
        dispatch_lag_p99_us=2.0,
        search=search,
    )


def test_server_row_gives_shares_rates_and_the_p99_interval():
    search = {"max_rate": 80.0, "max_rate_failed": 84.0}
    row = summarize_load(
        [server_round(60.0, 5), server_round(66.0, 7, span=1.01, search=search), server_round(63.0, 6)],
        (50.0, 99.0),
        0.05,
    )
    assert row["over_bound"] == pytest.approx(18 / 303)
    assert row["arrival_rate"] == pytest.approx(300 / 3.01)
    assert row["round_p99_us"] == [60.0, 66.0, 63.0] and row["search"] == search
    assert row["latency_p99_low_us"] < row["latency_p99_us"] < row["latency_p99_high_us"]
    assert math.isclose(
        row["rerun_rel"], (row["latency_p99_high_us"] - row["latency_p99_low_us"]) / 2 / row["latency_p99_us"]
    )


def test_server_row_gives_the_load_its_rate_was_at_its_runs_own_time():
    """100/s on one request whose runs took 5, 6 and 7 ms in three rounds: 50, 60 and 70 % load, 60 % in all
    (the mean run time over every served request); rounds logged without it give none."""
    rounds = [server_round(60.0, 0, service_us=us) for us in (5000.0, 6000.0, 7000.0)]
    row = summarize_load(rounds, (50.0, 99.0), 0.05)
    assert row["round_utilization"] == pytest.approx([0.5, 0.6, 0.7]) and row["utilization"] == pytest.approx(0.6)
    uneven = summarize_load([dataclasses.replace(rounds[0], inferences=303), rounds[2]], (50.0, 99.0), 0.05)
    assert uneven["utilization"] == pytest.approx(100.0 * (5000.0 * 3 + 7000.0) / 4 / 1e6), "weighted by runs served"
    old = [round_from_dict({k: v for k, v in r.to_dict().items() if k != "service_mean_us"}) for r in rounds]
    assert summarize_load(old, (50.0, 99.0), 0.05)["utilization"] is None
