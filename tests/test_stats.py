"""Robust stability: the median's order-statistic interval decides `unstable`, one outlier does not;
one-sample rows have no spread (None, never 0.0); samples are kept for later comparisons; the cold
first call and the runtime's own clock are recorded outside the timed interval."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from dbench.worker.stats import CI_THRESHOLD, KEPT_SAMPLES, kept, median_interval, summarize
from dbench.worker.timing import QUICK, TimingConfig, measure


def test_one_sample_has_no_spread_and_no_verdict():
    stats = summarize([5000.0], calls_per_sample=1)
    assert stats.samples == 1 and stats.median_us == 5.0
    for field in ("std_us", "cv", "spread", "mad_us", "ci_low_us", "ci_high_us", "ci_rel", "unstable"):
        assert getattr(stats, field) is None, field


def test_quick_rows_with_few_samples_report_no_cv_of_zero():
    """Issue 12 item 4: a --quick row of a slow call has one or few samples; cv must not read 0.0."""
    stats = measure(lambda: time.sleep(0.03), TimingConfig(**{**QUICK.to_dict(), "min_samples": 1}))
    assert stats.samples < 6
    assert stats.ci_rel is None and stats.unstable is None
    if stats.samples == 1:
        assert stats.cv is None


def test_exact_order_statistic_interval():
    values = np.arange(1.0, 11.0)  # n=10: 2*P(B<=1) = 0.021 <= 0.05 < 2*P(B<=2) = 0.109 -> ranks 2 and 9
    assert median_interval(values) == (2.0, 9.0)
    assert median_interval(np.arange(1.0, 7.0)) == (1.0, 6.0)  # n=6: 2/64 = 0.031
    assert median_interval(np.arange(1.0, 6.0)) is None  # n=5: 2/32 = 0.0625 > 0.05


def test_normal_approximation_continues_the_exact_interval():
    for n in (301, 1000, 100_000):
        values = np.arange(float(n))
        low, high = median_interval(values)
        z = 1.959964
        assert abs(low - (n / 2 - z * math.sqrt(n) / 2)) <= 2 and low + high == pytest.approx(n - 1, abs=1)


def test_interval_covers_the_true_median_about_95_percent(seed):
    rng = np.random.default_rng(seed)
    hits = sum(lo <= 0.0 <= hi for lo, hi in (median_interval(np.sort(rng.standard_normal(41))) for _ in range(2000)))
    assert 0.93 <= hits / 2000 <= 0.985


def test_one_outlier_does_not_make_a_row_unstable(seed):
    rng = np.random.default_rng(seed)
    samples = list(1e6 * (1 + 0.002 * rng.standard_normal(200))) + [50e6]
    stats = summarize(samples, 1)
    assert stats.cv > 0.1  # the old CV flag would have fired
    assert stats.unstable is False and stats.ci_rel < CI_THRESHOLD
    assert stats.spread == pytest.approx((stats.p90_us - stats.p10_us) / stats.median_us)


def test_a_wide_distribution_is_unstable(seed):
    rng = np.random.default_rng(seed)
    stats = summarize(list(1e6 * rng.uniform(0.5, 1.5, 30)), 1)
    assert stats.unstable is True and stats.ci_rel > CI_THRESHOLD
    assert stats.ci_low_us <= stats.median_us <= stats.ci_high_us


def test_samples_are_kept_evenly_strided():
    values = np.arange(5000.0)
    stored = kept(values)
    assert len(stored) == KEPT_SAMPLES and stored[0] == 0.0 and stored[-1] == 4999.0
    assert np.all(np.diff(stored) > 0)
    stats = summarize(list(np.arange(1, 21) * 1000.0), 1)
    assert stats.samples_us == [float(v) for v in range(1, 21)]


def test_first_call_and_runtime_clock_are_recorded():
    calls = []

    def call() -> None:
        time.sleep(0.004 if not calls else 0.001)
        calls.append(1)

    readings = iter(range(1, 10_000))
    config = TimingConfig(warmup_calls=2, warmup_time=0.0, min_time=0.02, min_samples=5, max_time=1.0)
    stats = measure(call, config, runtime_clock=lambda: float(next(readings)))
    assert stats.first_call_us >= 4000 > stats.median_us
    # one reading per sample, taken after it: readings 1..samples, their median
    assert stats.runtime_median_us == pytest.approx(np.median(np.arange(1, stats.samples + 1)))
    assert measure(lambda: None, config).runtime_median_us is None
