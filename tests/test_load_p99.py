"""A server row's p99 on synthetic data: how many arrivals a run sends for its p99 to rest on 25 slower
requests, the exact pooled p99 from the rounds' slowest latencies, and the order-statistic interval of
the true p99 (its ranks against the binomial, its coverage by simulation on a known distribution)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dbench.stats.quantile import (
    P99,
    P99_ABOVE,
    arrivals_for,
    binomial_cdf,
    order_ranks,
    pooled_tail,
    requests_above,
    slowest,
    tail_interval,
    tail_percentile,
    tail_size,
)
from dbench.stats.records import ServerRound, round_from_dict
from dbench.stats.throughput import summarize_load
from dbench.worker.server import MIN_REQUESTS, requests_for
from dbench.worker.timing import TimingConfig


def test_the_default_run_sends_enough_arrivals_for_25_above_its_p99():
    assert arrivals_for(P99, P99_ABOVE) == 2500 and requests_above(2500, P99) == 25 == P99_ABOVE
    assert requests_above(2400, P99) == 24 and requests_above(420, P99) == 5, "the last measured run's p99 rested on 5"
    share = TimingConfig().per_round()  # 3 rounds of 2 s min, 10 s max in all
    assert requests_for(500.0, share, 3) == 834, "2500 divided among 3 rounds"
    assert requests_above(3 * requests_for(500.0, share, 3), P99) >= P99_ABOVE
    assert requests_for(100.0, share, 3) == 333, "cut by the round's share of --max-time: 100/s x 10/3 s"
    assert requests_for(5000.0, share, 3) == 3334, "the round's share of --min-time at the rate, where that is more"
    assert requests_for(500.0, TimingConfig(rounds=30).per_round(), 30) == MIN_REQUESTS, "a round's own p99 needs 100"
    assert requests_for(500.0, TimingConfig(iterations=90).per_round(), 3) == 30, "--iterations decides alone"


def brute_cdf(k: int, n: int, p: float) -> float:
    return sum(
        math.exp(
            math.lgamma(n + 1)
            - math.lgamma(j + 1)
            - math.lgamma(n - j + 1)
            + j * math.log(p)
            + (n - j) * math.log1p(-p)
        )
        for j in range(k + 1)
    )


@pytest.mark.parametrize("n", [50, 300, 420, 2500])
def test_order_ranks_are_the_binomial_bracket(n):
    p = 0.99
    for k in (n - 40, n - 20, n - 8, n - 2):
        assert binomial_cdf(k, n, p) == pytest.approx(brute_cdf(k, n, p), rel=1e-9, abs=1e-15)
    low, high = order_ranks(n, P99)
    if low is None:
        assert brute_cdf(0, n, p) > 0.025
    else:
        assert brute_cdf(low - 1, n, p) <= 0.025 < brute_cdf(low, n, p), "the highest rank that keeps 2.5 % below"
    if high is None:
        assert brute_cdf(n - 1, n, p) < 0.975, "n draws cannot bound the p99 from above"
    else:
        assert brute_cdf(high - 1, n, p) >= 0.975 > brute_cdf(high - 2, n, p), "the lowest rank that keeps 2.5 % above"
    assert (high is None) == (n < 370), "0.99^n > 2.5 % below about 370 draws"


def test_pooled_rounds_give_the_exact_p99_of_every_request(seed):
    rng = np.random.default_rng(seed)
    rounds = [np.round(rng.lognormal(5.0, 0.6, size), 3) for size in (1500, 1500, 1400)]
    everything = np.concatenate(rounds)
    n = everything.size
    tails = [slowest(values, 3 * 1500) for values in rounds]  # each round sized for the whole row, or more
    assert all(len(t) == tail_size(3 * 1500, P99) for t in tails)
    tail = pooled_tail(tails, n, P99)
    assert tail_percentile(tail, n, P99) == pytest.approx(np.percentile(everything, 99), rel=1e-12)
    low, high = order_ranks(n, P99)
    ordered = np.sort(everything)
    assert tail_interval(tail, n, P99) == (ordered[low - 1], ordered[high - 1])
    with pytest.raises(ValueError):
        pooled_tail([t[:5] for t in tails], n, P99)


def test_the_order_statistic_interval_covers_a_known_p99_at_least_95_percent_of_the_time(seed):
    """Exponential draws (true p99 = ln 100, the shape of a queueing tail): 4000 samples of 2500 draws.
    The exact coverage of the ranks is P(l <= B <= u - 1); the simulated share may miss it by 5 SDs of
    a binomial share of 4000 (0.017) at most, so the test cannot flake and still catches a wrong rank."""
    n, trials, truth = 2500, 4000, math.log(100.0)
    low, high = order_ranks(n, P99)
    exact = binomial_cdf(high - 1, n, 0.99) - binomial_cdf(low - 1, n, 0.99)
    assert 0.95 <= exact < 0.97
    rng = np.random.default_rng(seed)
    covered = 0
    for _ in range(trials // 500):
        draws = np.sort(rng.exponential(1.0, (500, n)), axis=1)
        covered += int(((draws[:, low - 1] <= truth) & (truth <= draws[:, high - 1])).sum())
    share = covered / trials
    assert abs(share - exact) < 5 * math.sqrt(exact * (1 - exact) / trials)
    sample = rng.exponential(1.0, n)
    interval = tail_interval(slowest(sample, n), n, P99)
    assert interval == pytest.approx((np.sort(sample)[low - 1], np.sort(sample)[high - 1]), abs=5e-4)


def server_round(latencies: np.ndarray, pooled: int) -> ServerRound:
    count = latencies.size
    return ServerRound(
        streams=1,
        streams_executed=1,
        rate=100.0,
        requests=count,
        inferences=count,
        unserved=0,
        wall_s=count / 100.0,
        per_stream=[count],
        latency_us=list(latencies[:1000]),
        latency_tail_us=slowest(latencies, pooled),
        latency_p50_us=float(np.percentile(latencies, 50)),
        latency_p90_us=float(np.percentile(latencies, 90)),
        latency_p99_us=float(np.percentile(latencies, 99)),
        over_bound=0,
        latency_bound_us=None,
        arrival_span_s=(count - 1) / 100.0,
        arrival_rate=100.0,
        queue_p99_us=1.0,
        dispatch_lag_p99_us=1.0,
        search=None,
    )


def test_a_server_row_holds_the_exact_p99_its_interval_and_what_it_rests_on(seed):
    rng = np.random.default_rng(seed)
    rounds = [np.round(rng.exponential(100.0, 834), 3) for _ in range(3)]
    row = summarize_load([server_round(r, 3 * 834) for r in rounds], (50.0, 99.0), 0.05)
    everything = np.concatenate(rounds)
    assert row["latency_p99_us"] == pytest.approx(np.percentile(everything, 99), rel=1e-12), (
        "every request, not the kept 1000"
    )
    assert row["latency_percentiles_us"]["99"] == row["latency_p99_us"]
    assert row["latency_p99_ci_low_us"] < row["latency_p99_us"] < row["latency_p99_ci_high_us"]
    assert row["latency_p99_above"] == 26 and row["requests"] == 2502
    assert row["latency_p99_low_us"] is not None, "the rounds' re-run interval stays beside it"
    short = summarize_load([server_round(r[:100], 300) for r in rounds], (50.0, 99.0), 0.05)
    assert short["latency_p99_above"] == 3 and short["latency_p99_ci_high_us"] is None, "300 requests: no upper bound"


def test_rounds_logged_without_their_tail_resume_with_the_pooled_p99(seed):
    """Rounds logged by an older dbench keep no slowest latencies: a resumed row pools the kept ones as
    before and claims no order-statistic interval."""
    rng = np.random.default_rng(seed)
    logged = [server_round(np.round(rng.exponential(100.0, 200), 3), 600).to_dict() for _ in range(3)]
    for r in logged:
        del r["latency_tail_us"]
    rounds = [round_from_dict(r) for r in logged]
    row = summarize_load(rounds, (50.0, 99.0), 0.05)
    kept = np.concatenate([r.latency_us for r in rounds])
    assert row["latency_p99_us"] == pytest.approx(np.percentile(kept, 99))
    assert "latency_p99_ci_low_us" not in row or row["latency_p99_ci_low_us"] is None
