"""`dbench report --baseline torch`: every runtime as a fraction of the vendor library per kernel,
from real quick runs of the same GEMMs on torch and ort-cpu."""

from __future__ import annotations

import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.report.build import build_report
from dbench.report.markdown import to_markdown
from dbench.report.results import load
from dbench.report.vendor import ratio_sentence, ratio_title
from tests.helpers import write_csv
from tests.report_fixtures import KERNELS

pytest.importorskip("torch", reason="torch is not installed: pip install -e '.[test]' installs the CPU build")


@pytest.fixture(scope="module")
def torch_and_ort(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vendor")
    kernels = write_csv(folder / "k.csv", *KERNELS)
    for runtime in ("ort-cpu", "torch"):
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--runtime",
                runtime,
                "--kernels",
                str(kernels),
                "--quick",
                "--min-time",
                "0.05",
                "--profile-runs",
                "2",
                "--threads",
                "1",
                "--out",
                str(folder / "res"),
            ],
        )
        assert result.exit_code == 0, result.output
    return folder / "res"


def test_baseline_torch_reads_as_the_fraction_of_the_vendor_library(torch_and_ort, tmp_path):
    results = load([torch_and_ort])
    report = build_report(results, "torch")
    assert report.baseline.runtime == "torch"
    table = report.families["gemm"]
    labels = {g.runtime: g.label for g in report.groups}
    frame = results.kernels
    rounds = {(k, r): list(m) for k, r, m in zip(frame.kernel, frame.runtime, frame.round_medians_us)}
    for kernel in table.index:
        # the test's own estimate, as compare's: the ratio of the geometric-mean round medians
        torch_us, ort_us = (math.exp(np.mean(np.log(rounds[(kernel, runtime)]))) for runtime in ("torch", "ort-cpu"))
        assert table.at[kernel, (labels["ort-cpu"], "speedup")] == pytest.approx(torch_us / ort_us)
        assert table.at[kernel, (labels["torch"], "speedup")] == pytest.approx(1.0)
    text = to_markdown(report, [])
    assert (
        ratio_sentence("torch", labels["torch"]) in text
        and "fraction of the vendor library's speed (oneDNN/MKL" in text
    )
    assert f"geomean fraction of oneDNN/MKL ({labels['torch']})" in text
    result = CliRunner().invoke(
        app, ["report", str(torch_and_ort), "--baseline", "torch", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    assert "fraction of oneDNN/MKL" in (tmp_path / "r" / "report.md").read_text()


def test_other_baselines_keep_the_speedup_wording():
    assert ratio_title("ort-cpu", "ort-cpu") == "speedup vs ort-cpu"
    assert ratio_sentence("openvino", "openvino") == "Speedup = openvino time / time"
    assert ratio_title("torch-cuda", "torch-cuda") == "fraction of cuBLAS/cuDNN (torch-cuda)"
