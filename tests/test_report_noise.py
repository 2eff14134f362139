"""The report shows the noise it knows: where a folder holds several runs of one configuration it says
which run each figure is from and how far apart the runs were, its tables put the re-run interval beside
each median, and its latency plot carries them as error bars."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.report.build import build_report
from dbench.report.results import load
from tests.helpers import write_csv

runner = CliRunner()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    """Two runs of one configuration and one of another in one results folder."""
    root = tmp_path_factory.mktemp("noise-report")
    kernels = write_csv(root / "k.csv", "m,n,k,a_t,b_t", "32,32,32,0,0", "8,8,8,0,0")
    for args in (["--weights", "input"], [], []):
        result = runner.invoke(
            app,
            ["run", "--kernels", str(kernels), "--min-time", "0.06", "--no-profile", *args, "--out", str(root / "res")],
        )
        assert result.exit_code == 0, result.output
    return root / "res"


def test_each_figure_says_how_many_runs_measured_it_and_their_range(two_runs):
    results = load([two_runs])
    frame = results.kernels
    two = frame[frame.variant == "ort-cpu"]
    assert len(two) == 2 and set(two.runs) == {2}
    assert all(lo <= m <= hi for lo, m, hi in zip(two.runs_low_us, two.median_us, two.runs_high_us))
    report = build_report(results)
    (note,) = [n for n in report.notes if "runs of one configuration" in n]
    assert "each figure is the latest run's" in note and "spread by SD" in note
    (mixed,) = [
        n for n in report.notes if "holds rows of 2 configurations" in n
    ]  # the first, --weights input run: same label
    assert "weights input" in mixed and "weights const" in mixed


def test_the_tables_put_the_rerun_interval_and_the_runs_beside_each_median(two_runs, tmp_path):
    result = runner.invoke(app, ["report", str(two_runs), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "(2 runs " in markdown and " ±" in markdown
    assert "where 95% of re-runs' medians should fall" in markdown
    rows = pd.read_csv(tmp_path / "r" / "rows.csv")
    assert {"runs", "runs_low_us", "runs_high_us", "runs_sd", "rerun_low_us", "rerun_high_us"} <= set(rows.columns)
    assert (tmp_path / "r" / "latency-gemm.png").stat().st_size > 0


def test_the_latency_plot_draws_the_rows_intervals_as_error_bars(two_runs):
    from dbench.report.plots import latency_bars

    report = build_report(load([two_runs]))
    figure = latency_bars(report.results.kernels, "gemm", report.groups)
    (axes,) = figure.axes
    bars = [c for c in axes.containers if getattr(c, "has_xerr", False)]
    assert len(bars) == len(report.groups)
    assert "re-run interval" in axes.get_xlabel()
