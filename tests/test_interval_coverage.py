"""Intervals that keep their promise (dbench.stats.coverage, dbench.store.history): a row's re-run interval
is checked against this machine's own earlier rows of the graph and configuration, their intervals made
again as dbench makes them now, and scaled by the factor that would have made 95 % of them hold: widened
where the history proves the model too optimistic, narrowed (at most to half) where too cautious."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dbench.stats.coverage import MIN_FACTOR, MIN_PAIRS, coverage, ratios
from dbench.stats.records import LatencyRound
from dbench.stats.rounds import round_spread
from dbench.stats.summary import summarize_rounds
from dbench.store.history import History, config_key, read_history

CONFIG = {
    "runtime": "ort-cpu",
    "runtime_version": "1.0",
    "device": "default",
    "runtime_options": {"threads": 2},
    "weights": "const",
    "mode": "latency",
    "status": "ok",
}
KEY = config_key("ort-cpu", "1.0", "default", {"threads": 2}, "const", "latency")


def _history(runs: list[list[list[float]]]) -> History:
    """A History of earlier runs (oldest first; each run a list of graphs' round medians), added newest
    first as read_history adds them; each row's median is its rounds' median."""
    history = History()
    for graphs in reversed(runs):
        for g, medians in enumerate(graphs):
            history.add(
                {**CONFIG, "graph_id": f"g{g}", "median_us": float(np.median(medians)), "round_medians_us": medians}
            )
    return history


def _runs(rng, runs: int, graphs: int, shift, rounds=lambda rng: rng.normal(0, 0.01, 3)) -> list[list[list[float]]]:
    """Runs of graphs of 2-5 ms (one decade), each run moved as a whole by `shift(rng)`."""
    made = []
    for _ in range(runs):
        moved = shift(rng)
        made.append([list((2000.0 + 400.0 * g) * np.exp(moved + rounds(rng))) for g in range(graphs)])
    return made


def test_ratios_are_the_factor_each_earlier_interval_needed_to_hold_each_later_median():
    runs = [(100.0, math.log(1.1)), (105.0, None), (121.0, math.log(1.05))]
    found = ratios(runs)
    assert found == pytest.approx([math.log(1.05) / math.log(1.1), math.log(1.21) / math.log(1.1)])


def test_the_factor_is_the_95th_percentile_within_its_bounds():
    narrow = coverage([2.0] * 10 + [0.5] * 30)
    assert narrow.pairs == 40 and narrow.inside == 30 and narrow.factor == 2.0
    assert coverage([0.7] * 40).factor == 0.7
    assert coverage([0.1] * 40).factor == MIN_FACTOR  # never narrowed below half the model's width
    too_few = coverage([3.0] * (MIN_PAIRS - 1))
    assert too_few.factor == 1.0 and too_few.inside == 0 and too_few.to_dict()["history_factor"] is None


def test_a_machine_whose_runs_move_as_the_model_says_keeps_its_intervals_about_as_they_are():
    rng = np.random.default_rng(11)
    history = _history(_runs(rng, 8, 8, lambda rng: rng.normal(0, 0.05)))
    found = history.coverage(KEY, 3000.0)
    assert found.pairs == 28 * 8 and 0.85 <= found.rate and 0.6 <= found.factor <= 1.3


def test_heavy_tailed_shifts_widen_and_outlier_rounds_with_steady_medians_narrow():
    rng = np.random.default_rng(12)
    shifts = iter([0.0, 0.01, -0.01, 0.25, 0.0, 0.005, -0.005, 0.01, 0.0, -0.01])  # one run in ten a quarter out
    heavy = _history(_runs(rng, 10, 8, lambda rng: next(shifts)))
    found = heavy.coverage(KEY, 3000.0)
    assert found.rate < 0.9 and found.factor > 1.5
    # One slow round in three each run: the rounds' spread is wide, while the median of the samples (here the
    # middle round) hardly moves between runs: the model is too cautious, and the history says by how much.
    steady = _history(
        _runs(
            rng, 8, 8, lambda rng: rng.normal(0, 0.005), rounds=lambda rng: np.array([0.0, 0.002, 0.4 * rng.random()])
        )
    )
    found = steady.coverage(KEY, 3000.0)
    assert found.rate == 1.0 and found.factor == MIN_FACTOR


def test_summarize_rounds_scales_both_intervals_and_says_so():
    rounds = [
        LatencyRound(median_us=m, min_us=m, samples_us=[m], samples=1, calls_per_sample=1, timed_s=0.1)
        for m in (100.0, 103.0, 98.0)
    ]
    plain = summarize_rounds(rounds, (50.0,), 0.05)
    widened = summarize_rounds(rounds, (50.0,), 0.05, coverage=coverage([2.5] * 30 + [0.1] * 10))
    assert plain["history_factor"] is None and widened["history_factor"] == 2.5
    assert widened["coverage_pairs"] == 40 and widened["coverage_inside"] == 10
    assert widened["rerun_rel"] > plain["rerun_rel"]
    spread = round_spread(100.0, [100.0, 103.0, 98.0], scale=2.5)
    assert math.log(spread.rerun[1] / 100.0) == pytest.approx(
        2.5 * math.log(round_spread(100.0, [100.0, 103.0, 98.0]).rerun[1] / 100.0)
    )


def test_scaling_brings_the_promise_closer_on_simulated_runs_of_heavy_tailed_shifts():
    """Whole runs mostly within 2 %, one in six 15 % out, their rounds within 1 %: a later run's median
    against the row's re-run interval as the drift makes it, and scaled by its history's factor (ten runs of
    history cannot learn a one-in-six event exactly: the scaled interval holds more, if not 95 %)."""
    rng = np.random.default_rng(20261128)
    inside = {False: 0, True: 0}
    trials, graphs = 120, 6
    for _ in range(trials):
        runs = _runs(rng, 12, graphs, lambda rng: rng.normal(0, 0.15 if rng.random() < 1 / 6 else 0.02))
        history = _history(runs[:10])
        for g in range(graphs):
            medians, later = runs[10][g], float(np.median(runs[11][g]))
            center = float(np.median(medians))
            half = math.log(round_spread(center, medians, drift=history.drift(KEY, f"g{g}", medians)).rerun[1] / center)
            factor = history.coverage(KEY, center).factor
            inside[False] += abs(math.log(later / center)) <= half
            inside[True] += abs(math.log(later / center)) <= half * factor
    assert inside[True] / (trials * graphs) >= 0.85
    assert inside[True] > inside[False]


def test_read_history_keeps_each_rows_median_beside_its_rounds(tmp_path):
    folder = tmp_path / "machine"
    folder.mkdir()
    for i, median in enumerate((100.0, 110.0)):
        header = {"type": "run", "schema_version": 3, "run_id": f"run-2026112{i}-000000-0000"}
        row = {
            "type": "result",
            **CONFIG,
            "graph_id": "g",
            "median_us": median,
            "round_medians_us": [median, median * 1.01],
        }
        (folder / f"run-2026112{i}-000000-0000.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(row) + "\n")
    history = read_history(folder, "none")
    assert history.medians[KEY]["g"] == [110.0, 100.0]  # newest first, as the rounds
