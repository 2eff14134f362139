"""The measurement method and statistics, on real calls of known cost (sleep / a busy loop)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from dbench.worker.stats import summarize
from dbench.worker.timing import TimingConfig, measure
from dbench.worker.verify import compare
from dbench.gen.tolerance import Tolerance


def test_summary_statistics():
    stats = summarize([1000.0 * v for v in range(1, 101)], calls_per_sample=1)
    assert stats.samples == 100 and stats.min_us == 1.0
    assert stats.median_us == pytest.approx(50.5) and stats.p10_us == pytest.approx(10.9) and stats.p99_us == pytest.approx(99.01)
    assert stats.mean_us == pytest.approx(50.5) and stats.std_us == pytest.approx(np.std(np.arange(1, 101), ddof=1))
    assert stats.unstable  # uniform 1..100: the median's interval is far wider than ±2%
    assert summarize([1000.0] * 10, 1).unstable is False


def test_short_calls_are_batched_long_calls_are_not():
    config = TimingConfig(warmup_calls=2, warmup_time=0.0, min_time=0.05, min_samples=5, max_time=1.0)
    fast = measure(lambda: None, config)
    assert fast.calls_per_sample > 1 and fast.median_us < 20
    slow = measure(lambda: time.sleep(0.002), config)
    assert slow.calls_per_sample == 1 and slow.median_us >= 2000 and slow.samples >= 5


def test_sampling_stops_at_max_time():
    config = TimingConfig(warmup_calls=1, warmup_time=0.0, min_time=5.0, min_samples=1000, max_time=0.2)
    start = time.perf_counter()
    stats = measure(lambda: time.sleep(0.01), config)
    assert time.perf_counter() - start < 1.0
    assert 3 <= stats.samples < 1000


def test_sampling_reaches_min_time_and_min_samples():
    config = TimingConfig(warmup_calls=1, warmup_time=0.0, min_time=0.1, min_samples=3, max_time=5.0)
    start = time.perf_counter()
    stats = measure(lambda: time.sleep(0.001), config)
    assert time.perf_counter() - start >= 0.1 and stats.samples >= 3


def test_compare_metrics():
    ref = {"Y": np.array([1.0, -2.0, 4.0])}
    assert compare({"Y": np.array([1.0, -2.0, 4.001])}, ref, Tolerance("rel", 1e-3)).ok
    bad = compare({"Y": np.array([1.0, -2.0, 4.1])}, ref, Tolerance("rel", 1e-3))
    assert not bad.ok and bad.error == pytest.approx(0.1 / 4)
    assert compare({"Y": np.array([1, -2, 4])}, ref, Tolerance("abs", 0)).ok
    assert not compare({"Y": np.array([1, -2, 5])}, ref, Tolerance("abs", 0)).ok
    assert not compare({"Y": np.zeros(4)}, ref, Tolerance("rel", 1)).ok
    assert not compare({"Y": np.array([np.nan, 0, 0])}, ref, Tolerance("rel", 1)).ok
