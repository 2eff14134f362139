"""Intervals that keep their promise (dbench.stats.coverage, dbench.store.history): a row's re-run interval
is checked against this machine's own earlier rows of the graph and configuration, and widened by the
factor they showed it to need, never narrowed."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dbench.stats.coverage import MIN_PAIRS, coverage, ratios
from dbench.stats.rounds import round_spread
from dbench.stats.summary import summarize_rounds
from dbench.store.history import History, config_key, read_history

CONFIG = {"runtime": "ort-cpu", "runtime_version": "1.0", "device": "default", "runtime_options": {"threads": 2},
          "weights": "const", "mode": "latency", "status": "ok"}


def _row(graph: str, median: float, half: float, drift: bool = True, widened: float | None = None) -> dict:
    """A stored row of `graph` whose re-run interval has log half-width `half` (times `widened` if widened)."""
    shown = half * (widened or 1.0)
    return {**CONFIG, "graph_id": graph, "median_us": median, "round_medians_us": [median * 0.99, median, median * 1.01],
            "rerun_low_us": median * math.exp(-shown), "rerun_high_us": median * math.exp(shown),
            "drift_sd": 0.01 if drift else None, "widened_by": widened}


def _history(rng, runs: int, graphs: int, drift_sd: float, half: float, **kwargs) -> History:
    """Earlier runs newest first (as read_history adds them), each run shifted as a whole by the drift."""
    history = History()
    shifts = rng.normal(0, drift_sd, runs)
    for run in reversed(range(runs)):  # newest first
        for g in range(graphs):
            history.add(_row(f"g{g}", (2000.0 + 500.0 * g) * math.exp(shifts[run] + rng.normal(0, 0.002)), half, **kwargs))
    return history


def test_ratios_are_the_factor_each_earlier_interval_needed_to_hold_each_later_median():
    runs = [(100.0, math.log(1.1)), (105.0, None), (121.0, math.log(1.05))]
    found = ratios(runs)
    assert found == pytest.approx([math.log(1.05) / math.log(1.1), math.log(1.21) / math.log(1.1)])


def test_the_factor_is_the_95th_percentile_and_never_below_one():
    narrow = coverage([2.0] * 10 + [0.5] * 30)
    assert narrow.pairs == 40 and narrow.inside == 30 and narrow.factor == 2.0
    assert coverage([0.3] * 40).factor == 1.0
    too_few = coverage([3.0] * (MIN_PAIRS - 1))
    assert too_few.factor == 1.0 and too_few.inside == 0


def test_history_too_narrow_for_its_drift_widens_and_right_width_does_not():
    rng = np.random.default_rng(11)
    drift = 0.05
    key = config_key("ort-cpu", "1.0", "default", {"threads": 2}, "const", "latency")
    too_narrow = _history(rng, 6, 8, drift, half=0.02)  # half-width 2 % against runs 5 % apart: 1.96*5*sqrt2 % needed
    found = too_narrow.coverage(key, 3000.0, with_drift=True)
    assert found.pairs == 15 * 8 and found.rate < 0.6 and 3.0 < found.factor < 12.0
    right = _history(rng, 6, 8, drift, half=1.96 * drift * math.sqrt(2))
    assert right.coverage(key, 3000.0, with_drift=True).factor == pytest.approx(1.0, abs=0.3)
    assert too_narrow.coverage(key, 3000.0, with_drift=False).pairs == 0  # rounds-alone rows never judge drift rows


def test_a_widened_rows_own_width_is_taken_back_out_before_it_is_judged():
    history = History()
    for median in (1000.0, 1000.0):
        history.add(_row("g", median, 0.02, widened=3.0))
    ((_, half, _), _) = history.intervals[next(iter(history.intervals))]["g"]
    assert half == pytest.approx(0.02)


def test_summarize_rounds_widens_both_intervals_and_says_so():
    rounds = [{"median_us": m, "samples_us": [m], "samples": 1, "calls_per_sample": 1, "timed_s": 0.1}
              for m in (100.0, 103.0, 98.0)]
    plain = summarize_rounds(rounds, (50.0,), 0.05)
    widened = summarize_rounds(rounds, (50.0,), 0.05, coverage=coverage([2.5] * 30 + [0.1] * 10))
    assert plain["widened_by"] is None and widened["widened_by"] == 2.5
    assert widened["coverage_pairs"] == 40 and widened["coverage_inside"] == 10
    assert widened["rerun_rel"] > plain["rerun_rel"]
    spread = round_spread(100.0, [100.0, 103.0, 98.0], widen=2.5)
    assert math.log(spread.rerun[1] / 100.0) == pytest.approx(2.5 * math.log(round_spread(100.0, [100.0, 103.0, 98.0]).rerun[1] / 100.0))


def test_widening_restores_the_promise_on_simulated_runs_of_a_drifting_machine():
    """Runs that move as a whole by 6 % while their rounds agree within 1 % (the drift estimate left out, as
    in a folder whose graphs never ran twice): rows from rounds alone cover a later run far less than 95 %;
    widened by their history's factor, at least 90 %."""
    rng = np.random.default_rng(20261128)
    inside = {False: 0, True: 0}
    trials = 400
    for _ in range(trials):
        history = History()
        shifts = rng.normal(0, 0.06, 12)
        rows = []
        for run in range(12):
            for g in range(6):
                medians = list(1000.0 * (g + 1) * np.exp(shifts[run] + rng.normal(0, 0.01, 3)))
                spread = round_spread(float(np.median(medians)), medians)
                rows.append((run, g, float(np.median(medians)), spread))
        for run, g, median, spread in reversed([r for r in rows if r[0] < 10]):
            history.add({**CONFIG, "graph_id": f"g{g}", "median_us": median, "round_medians_us": [median] * 2,
                         "rerun_high_us": spread.rerun[1], "drift_sd": None})
        key = config_key("ort-cpu", "1.0", "default", {"threads": 2}, "const", "latency")
        for run, g, median, spread in [r for r in rows if r[0] == 10]:
            later = next(m for r2, g2, m, _ in rows if r2 == 11 and g2 == g)
            half = math.log(spread.rerun[1] / median)
            factor = history.coverage(key, median, with_drift=False).factor
            inside[False] += abs(math.log(later / median)) <= half
            inside[True] += abs(math.log(later / median)) <= half * factor
    assert inside[False] / (trials * 6) < 0.6
    assert inside[True] / (trials * 6) >= 0.90


def test_read_history_keeps_each_rows_interval_beside_its_rounds(tmp_path):
    folder = tmp_path / "machine"
    folder.mkdir()
    for i, median in enumerate((100.0, 110.0)):
        header = {"type": "run", "schema_version": 3, "run_id": f"run-2026112{i}-000000-0000"}
        row = {"type": "result", **_row("g", median, 0.03)}
        (folder / f"run-2026112{i}-000000-0000.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(row) + "\n")
    history = read_history(folder, "none")
    (runs,) = history.intervals.values()
    assert [m for m, _, _ in runs["g"]] == [110.0, 100.0]  # newest first, as the rounds
