"""`dbench report` over a real ORT CPU run and a real OpenVINO run: terminal at 80 columns, Markdown,
CSV, xlsx read back, PNGs checked; `dbench compare` on the same runs; bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from dbench.cli import app
from dbench.report.build import build_report
from dbench.report.results import load
from dbench.report.terminal import terminal_report
from tests.helpers import rerun_of
from tests.report_fixtures import fake_log, two_runtimes  # noqa: F401 (fixture)

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def rows_of(folder: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in folder.rglob("run-*.jsonl")
        for line in path.read_text().splitlines()
        if json.loads(line)["type"] == "result"
    ]


def test_rows_keep_samples_and_the_runtime_clock(two_runtimes):
    rows = rows_of(two_runtimes)
    assert {r["runtime"] for r in rows} == {"ort-cpu", "openvino"} and len(rows) == 6
    for row in rows:
        assert row["status"] == "ok" and row["verified"] is True
        assert (
            len(row["samples_us"]) == sum(row["round_sizes"]) <= min(row["samples"], 1000) and row["first_call_us"] > 0
        )
        assert row["rounds"] == len(row["round_medians_us"]) == len(row["round_sizes"]) == 3
        if len(set(row["round_medians_us"])) > 1:
            assert row["ci_low_us"] <= row["median_us"] <= row["ci_high_us"]
        else:  # a tiny graph's rounds can land on the same clock tick: no interval, and the row says why
            assert row["ci_low_us"] is None and "identical" in row["interval_note"]
        # OpenVINO's own clock is read after every sample; ORT has none
        assert (row["runtime_median_us"] is not None and row["runtime_median_us"] > 0) == (row["runtime"] == "openvino")
    header = json.loads(next(two_runtimes.rglob("run-*.jsonl")).read_text().splitlines()[0])
    assert header["schema_version"] == 3 and header["host"]["machine_key"] in str(
        next(two_runtimes.rglob("run-*.jsonl"))
    )
    assert all(row["load_1m"] >= 0 for row in rows)


def test_parquet_keeps_samples_as_a_list_column(two_runtimes):
    import pandas as pd

    parquet = next(two_runtimes.rglob("run-*.parquet"))
    frame = pd.read_parquet(parquet)
    assert isinstance(frame.samples_us[0], np.ndarray) and frame.samples_us[0].size == min(frame.samples[0], 1000)
    csv = pd.read_csv(parquet.with_suffix(".csv"))
    assert json.loads(csv.samples_us[0]) == pytest.approx(list(frame.samples_us[0]))


def test_report_writes_every_output(two_runtimes, tmp_path):
    out = tmp_path / "rep"
    result = CliRunner().invoke(app, ["report", str(two_runtimes), "--out", str(out), "--baseline", "ort-cpu"])
    assert result.exit_code == 0, result.output
    markdown = (out / "report.md").read_text()
    assert "## gemm" in markdown and "ort-cpu median" in markdown and "openvino speedup" in markdown
    assert (
        "no ceilings measured: run dbench peak" in result.output
        or (out / "report.html").read_text().count("data:image/png") >= 4
    )
    summary = (out / "summary.csv").read_text()
    assert "geomean_speedup" in summary and "openvino" in summary
    for name in ("rows.csv", "report.html", "report.xlsx"):
        assert (out / name).stat().st_size > 0


def test_terminal_report_fits_80_columns(two_runtimes):
    report = build_report(load([two_runtimes]))
    console = Console(width=80, record=True, file=open("/dev/null", "w"))
    console.print(terminal_report(report))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "µs" in text and "support matrix" in text and "★" in text


def test_xlsx_reads_back(two_runtimes, tmp_path):
    import openpyxl

    from dbench.report.write import write_report

    report = build_report(load([two_runtimes]), baseline="openvino")
    written = write_report(report, tmp_path)
    book = openpyxl.load_workbook(written.xlsx)
    assert {"Summary", "Support", "gemm", "Specs", "Notes"} <= set(book.sheetnames)
    sheet = book["gemm"]
    header = [c.value for c in sheet[1]]
    column = header.index("ort-cpu median µs")
    medians = {r["kernel_id"]: r["median_us"] for r in rows_of(two_runtimes) if r["runtime"] == "ort-cpu"}
    for line in sheet.iter_rows(min_row=2, values_only=True):
        assert line[column] == pytest.approx(medians[line[0].split(".")[0]])
    specs = [c.value for c in book["Specs"][1]]
    assert "machine" in specs and "runtime version" in specs
    assert book["Specs"].max_row == 3  # two runs


def test_xlsx_freezes_headers_and_formats_numbers(two_runtimes, tmp_path):
    import openpyxl

    from dbench.report.write import write_report

    written = write_report(build_report(load([two_runtimes]), baseline="openvino"), tmp_path)
    book = openpyxl.load_workbook(written.xlsx)
    assert all(book[name].freeze_panes == "B2" for name in book.sheetnames)
    sheet = book["gemm"]
    header = [c.value for c in sheet[1]]
    formats = {
        name: sheet.cell(row=2, column=header.index(name) + 1).number_format
        for name in ("ort-cpu median µs", "ort-cpu TFLOP/s", "ort-cpu speedup")
    }
    assert formats == {"ort-cpu median µs": "#,##0.0", "ort-cpu TFLOP/s": "0.0000", "ort-cpu speedup": '0.00"×"'}
    assert sheet.column_dimensions["B"].width >= len("ort-cpu median µs")


def test_html_headers_name_machines_shortly_with_a_legend(tmp_path):
    """Machine keys are 40-odd characters: as column headers they wrapped to five lines. The page names the
    machines M1, M2 in a legend, and each group heads its three columns once."""
    from dbench.report.html import to_html

    keys = ["board-zen4-8c-32g-avx512-111111", "board-neoverse_n1-4c-8g-neon-222222"]
    for key, folder, median in zip(keys, "ab", (10.0, 20.0)):
        fake_log(
            tmp_path / folder,
            f"run-{folder}",
            {"hostname": "board", "machine_key": key, "cpu_model": "CPU " + folder},
            [_row("gemm_a", "ok", median)],
        )
    page = to_html(build_report(load([tmp_path])), {})
    heads = " ".join(re.findall(r"<thead>.*?</thead>", page, re.S))
    assert not any(key in heads for key in keys) and "M1" in heads and "M2" in heads
    legend = page.split('data-caption="machines"')[1].split("</table>")[0]
    assert all(key in legend for key in keys) and "M1" in legend and "CPU a" in legend
    gemm = page.split('data-caption="gemm"')[1].split("</table>")[0]
    assert gemm.count('colspan="3"') == 2 and gemm.count("<th>median</th>") == 2


def test_pngs_have_content(two_runtimes, tmp_path):
    from matplotlib.image import imread

    from dbench.report.write import write_report

    written = write_report(build_report(load([two_runtimes])), tmp_path)
    names = {p.name.split("-")[0] for p in written.images}
    assert {"roofline", "latency", "tflops", "speedup"} <= names
    for path in written.images:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
        pixels = imread(path)
        assert pixels.shape[0] >= 250 and pixels.shape[1] >= 500
        assert pixels[..., :3].std() > 0.05  # not a blank canvas


def test_roofline_draws_ceilings_from_dbench_peak(two_runtimes, tmp_path):
    from dbench.peak.measure import gemm_rates, measure_bandwidth
    from dbench.report import plots

    frame = load([two_runtimes]).kernels
    machine = frame.machine[0]
    bandwidth = measure_bandwidth(1 << 20, repeats=2)
    assert bandwidth.triad_gbps > 0 and bandwidth.copy_gbps > 0
    rate = gemm_rates("ort-cpu", "fp32", (128, 128, 128))["best_tflops"]
    assert rate > 0
    peaks = {"machine_key": machine, "triad_gbps": bandwidth.triad_gbps, "gemm_tflops": {"ort-cpu": {"fp32": rate}}}
    _, notes = plots.roofline(frame, machine, "fp32", peaks, {"L3": 1 << 25})
    assert not any("no ceilings" in n for n in notes)
    _, notes = plots.roofline(frame, machine, "fp32", None, {})
    assert notes == ["no ceilings measured: run dbench peak on this machine"]


def test_compare_real_runs(two_runtimes):
    logs = sorted(two_runtimes.rglob("run-*.jsonl"))
    result = CliRunner().invoke(app, ["compare", str(logs[0]), str(logs[1])])
    assert result.exit_code == 0, result.output
    verdicts = [w for w in ("faster", "slower", "same") if w in result.output]
    assert verdicts and "geometric-mean time ratio" in result.output and "different machines" not in result.output


def test_unknown_schema_is_one_line(tmp_path):
    path = fake_log(tmp_path, "run-x", {"machine": "m"}, [], schema=99)
    result = CliRunner().invoke(app, ["report", str(path), "--out", str(tmp_path / "rep")])
    assert result.exit_code != 0 and "schema version 99" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def _row(kernel: str, status: str, median: float | None, runtime: str = "ort-cpu") -> dict:
    return {
        "graph_id": f"{kernel}.fwd.gemm.fp32",
        "kernel_id": kernel,
        "family": "gemm",
        "op": "gemm",
        "pass": "fwd",
        "form": "gemm",
        "precision": "fp32",
        "precision_executed": "fp32" if median else "",
        "precision_fallback": False,
        "runtime": runtime,
        "status": status,
        "verified": status == "ok",
        "median_us": median,
        "tflops": 1e-3 if median else None,
        "samples_us": [median] * 8 if median else None,
        "flops": 1000,
        "min_bytes": 100,
        "intensity": 10.0,
        "gbps": 1.0,
    }


def test_no_verified_rows_says_so(tmp_path):
    fake_log(
        tmp_path / "m",
        "run-a",
        {"machine_key": "k1"},
        [_row("gemm_a", "unsupported", None), _row("gemm_b", "mismatch", None)],
    )
    out = tmp_path / "rep"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "m"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "no verified rows (1 unsupported, 1 mismatch)" in result.output.replace("\n", " ")
    assert not list(out.glob("*.png")) and "no verified rows" in (out / "report.md").read_text()


def test_two_machines_with_one_host_name_stay_apart(tmp_path):
    host = {"hostname": "board", "machine": "board"}
    fake_log(
        tmp_path / "a",
        "run-a",
        {**host, "machine_key": "board-zen4-8c-32g-avx512-111111"},
        [_row("gemm_a", "ok", 10.0)],
    )
    fake_log(
        tmp_path / "b",
        "run-b",
        {**host, "machine_key": "board-neoverse_n1-4c-8g-neon-222222"},
        [_row("gemm_a", "ok", 20.0)],
    )
    report = build_report(load([tmp_path]))
    assert [g.label for g in report.groups] == [
        "board-zen4-8c-32g-avx512-111111",
        "board-neoverse_n1-4c-8g-neon-222222",
    ]
    assert any("2 different machines" in n for n in report.notes)
    table = report.families["gemm"]
    assert table[("board-neoverse_n1-4c-8g-neon-222222", "speedup")].iloc[0] == pytest.approx(0.5)


def test_the_baseline_is_this_machines_runs_unless_asked(tmp_path):
    """Reference runs of another machine, older and named first, do not become the baseline of the user's report."""
    from dbench.store.metadata import machine_name

    here = machine_name()
    fake_log(
        tmp_path / "reference",
        "run-1",
        {"hostname": "ref", "machine_key": "ref-zen2-2c-24g-avx2-aaaaaa", "taken_at": "2020-01-01T00:00:00+00:00"},
        [_row("gemm_a", "ok", 10.0)],
    )
    fake_log(
        tmp_path / "mine",
        "run-2",
        {"hostname": "me", "machine_key": here, "taken_at": "2030-01-01T00:00:00+00:00"},
        [_row("gemm_a", "ok", 20.0)],
    )
    paths = [tmp_path / "reference", tmp_path / "mine"]
    assert build_report(load(paths)).baseline.machine == "ref-zen2-2c-24g-avx2-aaaaaa"  # no home: the first, as before
    assert build_report(load(paths), home=here).baseline.machine == here
    assert build_report(load(paths), "ref-zen2-2c-24g-avx2-aaaaaa", home=here).baseline.machine != here  # asked
    result = CliRunner().invoke(
        app, ["report", *map(str, paths), "--out", str(tmp_path / "rep")], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    assert f"speedup vs {here}" in " ".join(result.output.split())


def test_version_1_runs_still_open_without_samples(tmp_path):
    reference = Path(__file__).parent.parent / "docs" / "measurements" / "reference-results"
    results = load([reference])
    assert any("schema-1 run" in n for n in results.notes)
    log = next(reference.rglob("*.jsonl"))
    copy = rerun_of(log, tmp_path / "copy.jsonl")
    result = CliRunner().invoke(app, ["compare", str(log), str(copy)])
    assert result.exit_code == 0 and "no rounds" in result.output and "1.000" in result.output


def test_run_summary_shows_rows_as_a_fraction_of_peak(two_runtimes):
    from dbench.render.warnings import peak_line

    rows = rows_of(two_runtimes)
    assert "run dbench peak" in peak_line(rows, None)
    best = max(rows, key=lambda r: r["tflops"])
    peaks = {"taken_at": "t", "triad_gbps": 1e12, "gemm_tflops": {"ort-cpu": {"fp32": best["tflops"]}}}
    line = peak_line(rows, peaks)  # a GEMM ceiling equal to the best row's rate, bandwidth out of the way
    assert f"best 100% ({best['graph_id']})" in line and "over 6 rows" in line
    low = {**peaks, "gemm_tflops": {"ort-cpu": {"fp32": best["tflops"] / 2}}}  # a ceiling some rows outran
    line = peak_line(rows, low)
    above = sum(r["tflops"] > best["tflops"] / 2 for r in rows)
    assert f"{above} rows ran above the measured ceiling (e.g. {best['graph_id']} at 200%)" in line
    assert "no fraction is given for them" in line and "best 200%" not in line


def test_report_modules_do_not_import_matplotlib_until_plotting():
    import subprocess
    import sys

    code = (
        "import sys\nimport dbench.cli, dbench.report.write, dbench.report.plots, dbench.report.build\n"
        "sys.exit(1 if 'matplotlib' in sys.modules or 'openpyxl' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_peak_gemm_rate_is_a_verified_fp32_rate_in_rounds(runtime):
    """`dbench peak`'s GEMM ceiling goes through the adapter, verifies, checks the precision it ran,
    and takes its rounds in fresh sessions; the ceiling is the best sample, above every round's median."""
    from dbench.peak.measure import PEAK_ROUNDS, gemm_rates

    measured = gemm_rates(runtime, "fp32", (64, 48, 32))
    assert measured["shape"] == [64, 48, 32] and len(measured["round_tflops"]) == PEAK_ROUNDS
    assert measured["best_tflops"] >= max(measured["round_tflops"]) > 0


def test_peak_measures_the_suite_s_largest_gemm_beside_the_squares():
    from dbench.peak.measure import GEMM_SQUARES, gemm_shapes

    shapes = gemm_shapes()
    assert shapes[: len(GEMM_SQUARES)] == [(n, n, n) for n in GEMM_SQUARES] and shapes[-1] == (8448, 6000, 2816)


@pytest.mark.parametrize(
    "args,phrase",
    [
        (["--runtime", "ort-cpuu"], "unknown runtime 'ort-cpuu'"),
        (["--runtime", "nope"], "unknown runtime 'nope'"),
        (["--precision", "fp64"], "unknown precision 'fp64' for dbench peak; valid: fp32"),
        (["--runtime", ""], "'--runtime' / '-r': is empty"),
    ],
)
def test_peak_refuses_bad_input_and_keeps_the_measured_ceiling(args, phrase, tmp_path):
    """A typo after a good `dbench peak` must not rewrite peak.json with an empty GEMM ceiling."""
    from dbench.store.metadata import machine_name

    folder = tmp_path / machine_name()
    folder.mkdir()
    (folder / "peak.json").write_text('{"machine_key": "x", "gemm_tflops": {"ort-cpu": {"fp32": 0.2}}}')
    before = (folder / "peak.json").read_bytes()
    result = CliRunner().invoke(app, ["peak", *args, "--out", str(tmp_path)])
    assert result.exit_code == 2 and phrase in " ".join(result.output.split()), result.output
    assert (folder / "peak.json").read_bytes() == before and "Traceback" not in result.output


def test_a_new_peak_keeps_the_highest_ceiling_and_what_it_did_not_measure():
    from dbench.peak.ceilings import merge_peaks

    old = {
        "machine_key": "m",
        "taken_at": "t0",
        "copy_gbps": 20.0,
        "triad_gbps": 15.0,
        "skipped": {"openvino bf16": "no bf16"},
        "gemm_tflops": {"ort-cpu": {"fp32": 0.20}, "openvino": {"fp32": 0.30}},
        "gemm_shapes": {"ort-cpu": {"fp32": ["old"]}, "openvino": {"fp32": ["old"]}},
    }
    new = {
        "machine_key": "m",
        "taken_at": "t1",
        "copy_gbps": 18.0,
        "triad_gbps": 16.0,
        "skipped": {},
        "gemm_tflops": {"ort-cpu": {"fp32": 0.25}},
        "gemm_shapes": {"ort-cpu": {"fp32": ["new"]}},
    }
    merged = merge_peaks(old, new)
    assert merged["gemm_tflops"] == {"ort-cpu": {"fp32": 0.25}, "openvino": {"fp32": 0.30}}
    assert merged["gemm_shapes"]["ort-cpu"]["fp32"] == ["new"] and merged["gemm_taken_at"]["ort-cpu"]["fp32"] == "t1"
    assert merged["copy_gbps"] == 20.0 and merged["copy_gbps_taken_at"] == "t0" and merged["triad_gbps"] == 16.0
    assert merged["skipped"] == {"openvino bf16": "no bf16"}
    slower = merge_peaks(merged, {**new, "taken_at": "t2", "gemm_tflops": {"ort-cpu": {"fp32": 0.1}}})
    assert slower["gemm_tflops"]["ort-cpu"]["fp32"] == 0.25
    assert merge_peaks({**old, "machine_key": "other"}, new) == new


def test_report_sets_each_whole_model_beside_the_sum_of_its_kernels(tmp_path):
    """The committed from-model runs: ResNet-18, an encoder and an LSTM, each timed whole and as kernels."""
    from dbench.report.build import build_report, display_models
    from dbench.report.results import load
    from dbench.report.write import write_report

    report = build_report(load([REPO / "docs/measurements/reference-results/vm-epyc-2core/models"]))
    models = report.models.set_index(["model", "runtime"])
    assert set(models.index) == {(m, r) for m in ("resnet18", "encoder", "lstm") for r in ("ort-cpu", "openvino")}
    assert (models.share == models.kernels_us / models.model_us).all() and (
        models.kernels_timed == models.kernels
    ).all()
    assert "share" in display_models(report).columns
    write_report(report, tmp_path)
    assert "Whole model vs the sum of its kernels" in (tmp_path / "report.md").read_text()


def test_spreads_read_as_people_read_them_and_absurd_ones_are_capped():
    """±1 decimal below 100 %, whole percents above, and past ±1000 % (two rounds on t with one degree of
    freedom, one of them on a busy machine: a real row showed ±23185429 %) only that it is past it."""
    from dbench.render.numbers import format_spread
    from dbench.render.warnings import run_warnings

    assert [format_spread(r) for r in (0.0123, 0.999, 0.9996, 1.234, 10.0, 2318.5)] == [
        "±1.2%",
        "±99.9%",
        "±100%",
        "±123%",
        "±1000%",
        "±>1000%",
    ]
    row = {"graph_id": "g", "status": "ok", "unstable": True, "rerun_rel": 231854.3, "rounds": 2}
    (line,) = run_warnings([row], {})
    assert "worst g at ±>1000%: its rounds disagree" in line


@pytest.mark.parametrize("width", [80, 200])
def test_run_summary_keeps_every_number_whole_at_any_width(width):
    """The issue's complaint: at 80 columns numbers folded into stacks of digits."""
    from io import StringIO

    from rich.console import Console

    from dbench.render.tables import results_table

    row = {
        "graph_id": "conv_w700_h161_c1_n4_k32_s20_r5_pw0_ph0_sw2_sh2.fwd.conv.fp32",
        "status": "ok",
        "precision": "fp32",
        "precision_executed": "fp32",
        "verified": True,
        "median_us": 123456.7,
        "rerun_rel": 1.234,
        "rounds": 3,
        "unstable": True,
        "p90_us": 234567.8,
        "p99_us": 345678.9,
        "first_call_us": 456789.1,
        "tflops": 0.0226387,
        "gbps": 1.87,
    }
    console = Console(file=StringIO(), width=width, color_system=None)
    rows = [
        row,
        {**row, "status": "unsupported", "median_us": None},
        {**row, "precision": "fp16", "precision_executed": "fp32", "precision_fallback": True},
    ]
    console.print(results_table(rows, "t", width))
    text = console.file.getvalue()
    assert max(len(line) for line in text.splitlines()) <= width
    for number in ("123 ms", "±123%!", "235 ms", "346 ms", "457 ms", "0.0226"):
        assert number in text, (number, text)
