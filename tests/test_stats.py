"""A row's statistics: each round keeps its exact median and its samples; the row pools the samples
for its per-call figures (one-sample rows have no spread: None, never 0.0) and builds its intervals
from the rounds' medians, whose coverage is checked here on simulated rounds with a known answer.
The cold first call and the runtime's own clock are recorded outside the timed interval."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from dbench.stats.rounds import round_spread
from dbench.stats.samples import KEPT_SAMPLES, kept
from dbench.stats.summary import summarize_rounds
from dbench.worker.stats import summarize
from dbench.worker.timing import DEFAULT_PERCENTILES, QUICK, TimingConfig, measure


def rows_of_rounds(rounds: list[list[float]]) -> dict:
    """A row's statistics from per-round sample lists in µs."""
    return summarize_rounds([summarize([1000.0 * v for v in r], 1) for r in rounds], DEFAULT_PERCENTILES, 0.05)


def test_one_sample_has_no_spread_and_no_interval():
    row = rows_of_rounds([[5.0]])
    assert row["samples"] == 1 and row["median_us"] == 5.0 and row["rounds"] == 1
    for field in (
        "std_us",
        "cv",
        "spread",
        "mad_us",
        "ci_low_us",
        "ci_high_us",
        "ci_rel",
        "rerun_rel",
        "unstable",
        "round_sd",
    ):
        assert row[field] is None, field
    assert row["interval_note"].startswith("1 round: no interval")


def test_quick_rounds_with_one_sample_each_still_give_an_interval_from_the_rounds():
    """--quick on a slow call: one sample a round; the row's interval comes from the three rounds."""
    stats = measure(lambda: time.sleep(0.03), TimingConfig(**{**QUICK.to_dict(), "min_samples": 1}).per_round())
    assert stats.samples >= 1
    row = rows_of_rounds([[30_000.0], [31_000.0], [29_500.0]])
    assert row["rounds"] == 3 and row["rerun_rel"] is not None and row["cv"] is not None


def test_identical_round_medians_are_said_to_be_quantised_not_shown_as_zero_width():
    """Samples on the scheduler's 4 ms tick: every round's median is the same number."""
    row = rows_of_rounds([[4000.0, 4000.0, 8000.0]] * 3)
    assert row["round_sd"] == 0.0 and row["rerun_rel"] is None and row["ci_rel"] is None and row["unstable"] is None
    assert "identical" in row["interval_note"] and "quantises" in row["interval_note"]


def test_pooled_figures_and_round_bookkeeping():
    rounds = [list(range(1, 51)), list(range(51, 101))]
    row = rows_of_rounds(rounds)
    assert row["samples"] == 100 and row["min_us"] == 1.0 and row["round_sizes"] == [50, 50]
    assert (
        row["median_us"] == pytest.approx(50.5)
        and row["p10_us"] == pytest.approx(10.9)
        and row["p99_us"] == pytest.approx(99.01)
    )
    assert row["round_medians_us"] == [25.5, 75.5] and row["percentiles_us"]["99"] == pytest.approx(99.01)
    assert row["round_sd"] == pytest.approx(np.std(np.log([25.5, 75.5]), ddof=1))


def test_the_row_keeps_at_most_kept_samples_whatever_the_rounds():
    rounds = [list(np.arange(1.0, 3001.0))] * 4
    row = rows_of_rounds(rounds)
    assert len(row["samples_us"]) <= KEPT_SAMPLES and sum(row["round_sizes"]) == len(row["samples_us"])
    assert (
        row["samples"] == 4 * 3000 and row["round_sizes"] == [250] * 4
    )  # the row keeps a quarter of KEPT_SAMPLES a round
    uneven = rows_of_rounds([list(np.arange(1.0, 6.0)), list(np.arange(1.0, 3001.0)), list(np.arange(1.0, 3001.0))])
    assert (
        uneven["round_sizes"] == [5, 497, 498] and len(uneven["samples_us"]) == KEPT_SAMPLES
    )  # a short round's share goes to the others


def test_the_interval_is_where_the_rounds_put_it():
    row = rows_of_rounds([[100.0], [104.0], [98.0]])
    logs = np.log([100.0, 104.0, 98.0])
    t2 = 4.302652729911275  # Student's t, 97.5 %, df 2
    half = t2 * logs.std(ddof=1) / math.sqrt(3)
    assert row["ci_rel"] == pytest.approx(math.sinh(half), rel=1e-6)
    assert row["rerun_rel"] == pytest.approx(math.sinh(half * math.sqrt(2)), rel=1e-6)
    assert row["ci_low_us"] < row["median_us"] < row["ci_high_us"] and row["rerun_low_us"] < row["ci_low_us"]
    assert row["unstable"] is True  # ±9 %: a re-run can land farther than ±5 %


@pytest.mark.parametrize("rounds", [3, 5, 10])
def test_intervals_cover_as_promised_when_rounds_vary_between_processes(rounds, seed):
    """Rounds whose medians carry a process term (lognormal, 8 %) and in-round noise: the interval of
    the median covers the true median, and the re-run interval holds a fresh run's centre, about 95 %
    of the time (binomial SD over 3000 runs: 0.4 %)."""
    rng = np.random.default_rng(seed)
    runs = 3000
    medians = 100.0 * np.exp(0.08 * rng.standard_normal((runs, rounds)) + 0.01 * rng.standard_normal((runs, rounds)))
    again = 100.0 * np.exp(0.08 * rng.standard_normal((runs, rounds)) + 0.01 * rng.standard_normal((runs, rounds)))
    covered = held = 0
    for first, second in zip(medians, again):
        center = float(np.exp(np.log(first).mean()))
        spread = round_spread(center, list(first))
        covered += spread.ci[0] <= 100.0 <= spread.ci[1]
        held += spread.rerun[0] <= float(np.exp(np.log(second).mean())) <= spread.rerun[1]
    assert 0.935 <= covered / runs <= 0.965, covered / runs
    assert 0.935 <= held / runs <= 0.965, held / runs


def test_a_round_keeps_its_exact_median_and_strided_samples():
    values = np.arange(5000.0)
    stored = kept(values)
    assert len(stored) == KEPT_SAMPLES and stored[0] == 0.0 and stored[-1] == 4999.0
    assert np.all(np.diff(stored) > 0)
    stats = summarize(list(np.arange(1.0, 5002.0) * 1000.0), 1)
    assert stats.median_us == 2501.0 and stats.samples == 5001 and len(stats.samples_us) == KEPT_SAMPLES


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


def test_a_round_takes_its_share_of_the_time_count_and_iterations():
    config = TimingConfig(min_time=2.0, max_time=10.0, min_samples=10, rounds=4, iterations=101)
    share = config.per_round()
    assert (share.rounds, share.min_time, share.max_time, share.min_samples, share.iterations) == (1, 0.5, 2.5, 3, 26)
    assert (
        TimingConfig(rounds=3).per_round().min_samples == 3
        and TimingConfig(min_samples=10).per_round().min_samples == 4
    )


def test_a_later_round_pays_its_own_work_out_of_its_share():
    """Rounds divide a graph's time: a later round's inputs, preparing and warm-up come off its share of
    --min-time, its warm-up calls off its share of samples (1 stays); --iterations keeps its count."""
    share = TimingConfig().per_round()  # 0.67 s and 3 samples
    paid = share.paid(0.25, 1)
    assert paid.min_time == pytest.approx(2.0 / 3 - 0.25) and paid.min_samples == 2
    assert share.paid(5.0, 400).min_time == 0.0 and share.paid(5.0, 400).min_samples == 1
    assert TimingConfig(rounds=5).per_round().paid(0.1, 1).min_samples == 1  # 2 a round at 5 rounds, the cold call paid
    assert TimingConfig(iterations=30).per_round().paid(1.0, 1).iterations == 10
    assert TimingConfig(iterations=30).per_round().paid(1.0, 1).min_time == share.min_time

    slow = TimingConfig(
        warmup_calls=1, warmup_time=0.0, min_time=0.03, min_samples=9, max_time=10.0, min_sample_ns=1
    ).per_round()
    calls = []

    def call():
        calls.append(1)
        time.sleep(0.02)

    first = measure(call, slow)
    assert len(calls) == 1 + 3 and first.samples == 3  # the first round: its whole share of samples
    calls.clear()
    later = measure(call, slow, paying_s=0.0)
    assert len(calls) == 1 + 2 and later.samples == 2  # the cold call paid from the share

    fast = TimingConfig(warmup_calls=1, warmup_time=0.0, min_time=0.6, min_samples=3, max_time=10.0).per_round()
    whole = measure(lambda: time.sleep(0.001), fast)
    paying = measure(lambda: time.sleep(0.001), fast, paying_s=0.15)  # 0.2 s share less 0.15 s already spent
    # the loop stops on wall time; timed_s sums the samples only, so it may fall short of 0.2 s by the clock reads
    assert whole.timed_s >= 0.2 * 0.9 and paying.timed_s < 0.2 - 0.1


def test_iterations_time_exactly_that_many_calls():
    calls = []
    config = TimingConfig(warmup_calls=3, warmup_time=0.0, min_time=10.0, max_time=20.0, iterations=7, min_sample_ns=1)
    stats = measure(lambda: calls.append(1), config)
    assert len(calls) == 3 + 7 and stats.samples * stats.calls_per_sample == 7
