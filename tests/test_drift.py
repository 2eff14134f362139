"""The drift between runs, on simulated runs with a known answer and on real runs: the estimate
recovers a known between-run SD, intervals that carry it hold a later run's median as often as they
promise where the rounds alone do not, Welch's test with it keeps its level on identical machines, and
a run reads its machine's earlier runs (and only them, and only when asked)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from dbench.stats.differences import ALPHA, welch
from dbench.stats.drift import MIN_OWN_RUNS, Drift, between_runs, decade, own_spread, pooled_drift, row_drift
from dbench.stats.rounds import round_spread
from dbench.store.history import History, read_history, row_config
from tests.helpers import write_csv

BETWEEN, WITHIN = 0.05, 0.01
"""A machine like the development VM's worst case: runs move 5 % as a whole, their rounds 1 %."""


def run_rounds(rng, median: float, rounds: int = 3) -> list[float]:
    """One run of a graph: a run-wide offset its rounds share, and each round's own noise."""
    offset = BETWEEN * rng.standard_normal()
    return list(median * np.exp(offset + WITHIN * rng.standard_normal(rounds)))


def history_of(rng, graphs: int, runs: int) -> dict[str, list[list[float]]]:
    return {f"g{i}": [run_rounds(rng, 300.0 + i) for _ in range(runs)] for i in range(graphs)}


def test_the_pooled_estimate_recovers_a_known_between_run_sd(seed):
    drift = pooled_drift(history_of(np.random.default_rng(seed), graphs=40, runs=5))
    (only,) = drift.values()
    assert only.sd == pytest.approx(BETWEEN, rel=0.2) and only.df == 40 * 4 and only.runs == 5 and only.graphs == 40


def test_the_rounds_own_noise_is_not_taken_for_drift(seed):
    """Runs with no offset at all: what their means spread is their rounds' noise, subtracted."""
    rng = np.random.default_rng(seed)
    graphs = {f"g{i}": [list(300.0 * np.exp(0.05 * rng.standard_normal(3))) for _ in range(5)] for i in range(40)}
    (only,) = pooled_drift(graphs).values()
    assert (
        only.sd < 0.025
    )  # against the 5 % a run-wide offset of this size would give; 99.9 % of draws stay under 0.018


def test_graphs_are_pooled_by_the_decade_of_their_time():
    assert [decade(v) for v in (3.0, 10.0, 99.0, 5e4)] == [0, 1, 1, 4]
    graphs = {"fast": [[10.0, 11.0], [12.0, 12.5]], "slow": [[5e4, 5.1e4], [5e4, 5.05e4]], "once": [[7e3, 7.1e3]]}
    assert set(pooled_drift(graphs)) == {1, 4}
    assert between_runs([[1.0, 1.1]]) is None and between_runs([[1.0], [2.0]]) is None  # two usable runs at least


def test_a_graph_that_switches_state_between_runs_gets_its_own_spread_as_a_floor(seed):
    """A convolution that runs at 410 or 780 µs for minutes at a time: each earlier run's rounds agree,
    the runs do not. Its decade's pooled drift (other graphs, steady) is small; the row's drift is its
    own runs' spread beyond its rounds, so a tight row in one state still reaches the other."""
    rng = np.random.default_rng(seed)
    steady = {f"g{i}": [run_rounds(rng, 300.0 + i) for _ in range(5)] for i in range(20)}
    switching = [list(state * np.exp(0.01 * rng.standard_normal(3))) for state in (410, 780, 410, 780, 410)]
    pooled = pooled_drift(steady)[2]
    own = own_spread(switching)
    row = list(780 * np.exp(0.01 * rng.standard_normal(3)))
    drift = row_drift(pooled, own, row)
    assert drift.sd > 0.3 > pooled.sd and drift.df == 4 and drift.graphs == 1
    low, high = round_spread(float(np.median(row)), row, drift=drift).rerun
    assert low < 410 < high
    assert row_drift(pooled, None, row) is pooled and own_spread(switching[: MIN_OWN_RUNS - 1]) is None
    still = [list(300 * np.exp(0.001 * rng.standard_normal(3))) for _ in range(5)]  # its own runs agree: the pool rules
    assert row_drift(pooled, own_spread(still), list(300 * np.exp(0.01 * rng.standard_normal(3)))) is pooled


def test_intervals_with_the_drift_hold_a_later_run_where_the_rounds_alone_do_not(seed):
    """The row's re-run interval from its 3 rounds, with and without the drift five earlier runs of
    20 graphs measured, against a later run of the same graph: promised 95 %."""
    rng = np.random.default_rng(seed)
    with_drift = rounds_alone = trials = 0
    for _ in range(150):
        drift = pooled_drift(history_of(rng, graphs=20, runs=5))[2]
        row, later = run_rounds(rng, 300.0), run_rounds(rng, 300.0)
        center, rerun_median = float(np.median(row)), float(np.median(later))
        for spread, counter in ((round_spread(center, row, drift=drift), "with"), (round_spread(center, row), "alone")):
            inside = spread.rerun[0] <= rerun_median <= spread.rerun[1]
            with_drift += inside and counter == "with"
            rounds_alone += inside and counter == "alone"
        trials += 1
    assert with_drift / trials >= 0.9 and rounds_alone / trials <= 0.6, (with_drift / trials, rounds_alone / trials)


def test_welch_with_the_drift_keeps_its_level_on_an_unchanged_machine(seed):
    """Two runs of an unchanged graph: Welch over rounds alone calls them different most of the time;
    with the drift measured from a machine's history (a new history every 5 pairs: the level holds over
    histories, not for one estimate), at about its 5 % level."""
    rng = np.random.default_rng(seed)
    alone = sum(welch(run_rounds(rng, 300.0), run_rounds(rng, 300.0)).p <= ALPHA for _ in range(1000)) / 1000
    rejected = 0
    for _ in range(400):
        drift = pooled_drift(history_of(rng, graphs=20, runs=5))[2]
        rejected += sum(
            welch(run_rounds(rng, 300.0), run_rounds(rng, 300.0), drift.sd**2, drift.df).p <= ALPHA for _ in range(5)
        )
    assert alone > 0.5 and 0.025 <= rejected / 2000 <= 0.08, (alone, rejected / 2000)


def test_identical_round_medians_get_an_interval_from_the_drift_alone():
    quantised = round_spread(10.0, [10.0, 10.0, 10.0])
    assert quantised.rerun is None and quantised.reason
    spread = round_spread(10.0, [10.0, 10.0, 10.0], drift=Drift(0.04, 30, 5, 6))
    low, high = spread.rerun
    assert spread.drift.sd == 0.04 and math.log(high / 10.0) == pytest.approx(2.042 * 0.04 * math.sqrt(2), rel=1e-3)
    assert low < 10.0 < high


def row(graph: str, medians: list[float], **changes) -> dict:
    base = {
        "graph_id": graph,
        "status": "ok",
        "mode": "latency",
        "round_medians_us": medians,
        "runtime": "ort-cpu",
        "runtime_version": "1",
        "device": "default",
        "runtime_options": {"threads": 2},
        "weights": "const",
    }
    return {**base, **changes}


def test_history_keeps_only_measured_latency_rows_of_one_configuration_newest_first():
    history = History(per_graph=2)
    for medians in ([10.0, 11.0], [12.0, 12.5], [13.0, 13.5]):
        history.add(row("g", medians))
    history.add(row("g", [1.0]))  # one round: nothing says how much of its place is noise
    history.add(row("g", [10.0, 10.5], status="mismatch"))
    history.add(row("g", [10.0, 10.5], mode="throughput"))
    history.add(row("g", [10.0, 10.5], runtime_options={"threads": 1}))
    config = row_config(row("g", []))
    assert history.runs[config]["g"] == [[10.0, 11.0], [12.0, 12.5]] and len(history.runs) == 2
    assert history.drift(config, "g", [10.5, 11.0]) is not None and history.drift(config, "h", [5e3, 5.1e3]) is None


def quick_run(tmp_path, *extra: str) -> tuple[dict, str]:
    """One real run of a tiny GEMM into tmp_path/res: what `dbench run --json` reports, and its terminal
    text (stderr)."""
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dbench",
            "run",
            "--kernels",
            str(kernels),
            "--quick",
            "--min-time",
            "0.02",
            "--profile-runs",
            "1",
            "--threads",
            "1",
            "--out",
            str(tmp_path / "res"),
            "--json",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), " ".join(done.stderr.split())


def test_a_run_carries_the_drift_its_machine_s_earlier_runs_measured(tmp_path):
    """Real runs into one results folder: the first two have no drift to carry, the third does (from
    two earlier runs), `--history 0` turns it off, and an unreadable log in the folder is skipped."""
    first, first_text = quick_run(tmp_path)
    (folder,) = (tmp_path / "res").iterdir()
    (folder / "run-29991231-235959-dead.jsonl").write_text("{not json\n")
    second, _ = quick_run(tmp_path)
    third, third_text = quick_run(tmp_path)
    off, off_text = quick_run(tmp_path, "--history", "0")
    assert "intervals: from the rounds alone: no graph here ran twice before" in first_text
    assert (
        "intervals: the rounds and the drift between runs" in third_text and "(2 logs here)" in third_text
    )  # first and second; the corrupt one skipped
    assert "intervals: from the rounds alone (--history 0" in off_text
    assert [r["drift_sd"] for run in (first, second, off) for r in run["rows"]] == [None, None, None]
    (carried,) = third["rows"]
    assert carried["drift_runs"] == 2 and carried["drift_df"] >= 1 and carried["drift_sd"] >= 0.0
    history = read_history(folder, third["run_id"])
    assert history.logs == 3 and history.graphs_with_runs() == 1  # first, second and off; the corrupt log skipped


def test_compare_of_two_runs_carries_the_drift_their_rows_measured():
    """The same two runs' rows, with and without the drift: a 6 % move that the rounds alone call a
    change is, with a measured 5 % drift between runs, within it; the method says which it used."""
    from dbench.store.compare import Side, compare_sides

    def side(label: str, medians: list[float], drift: float | None) -> Side:
        one = row(
            "g",
            medians,
            verified=True,
            median_us=float(np.median(medians)),
            drift_sd=drift,
            drift_df=None if drift is None else 40,
        )
        return Side(label, [{"g": one}], [label], ["here"])

    a, b = [100.0, 100.5, 99.8], [106.0, 106.3, 105.9]
    alone = compare_sides(side("a", a, None), side("b", b, None))
    carried = compare_sides(side("a", a, 0.05), side("b", b, 0.05))
    assert alone.pairs[0].verdict == "slower" and "alone" in alone.method
    assert carried.pairs[0].verdict == "same" and "drift between runs" in carried.method
    assert carried.pairs[0].difference.resolvable > 0.1 > alone.pairs[0].difference.resolvable
