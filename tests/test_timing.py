"""The measurement method and statistics, on real calls of known cost (sleep / a busy loop)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from dbench.check.verdict import compare
from dbench.gen.tolerance import Tolerance
from dbench.worker.timing import TimingConfig, measure


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
