"""Throughput and server rows in the run summary's lines and warnings and in `dbench report`: sweeps
found per graph and configuration, each with its knee; their own report sections, CSVs, sheets and
plots (throughput against streams, latency against throughput), never in the latency tables."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.render.throughput import knee_lines, load_line, load_warnings
from dbench.store.sweeps import find_sweeps
from tests.helpers import write_csv

runner = CliRunner()


def row(graph: str, variant: str, streams: int, ips: float, low: float | None = None, **extra) -> dict:
    return {
        "graph_id": graph,
        "variant": variant,
        "runtime": variant.split()[0],
        "mode": "throughput",
        "status": "ok",
        "streams": streams,
        "inferences_per_s": ips,
        "inferences_per_s_low": low,
        "latency_p50_us": 100.0 * streams,
        "latency_p99_us": 300.0 * streams,
        **extra,
    }


def test_sweeps_are_found_per_graph_and_configuration():
    rows = [
        row("g1", "ort-cpu streams=1", 1, 100, 95),
        row("g1", "ort-cpu streams=2", 2, 190, 185),
        row("g1", "openvino streams=1", 1, 120, 110),
        row("g1", "openvino streams=2", 2, 121, 118),
        row("g2", "ort-cpu streams=1", 1, 50),
        row("g2", "ort-cpu streams=2", 2, 0, status="failed"),
        {**row("g3", "ort-cpu", 1, 10), "mode": "latency"},
    ]
    sweeps = {(s.graph_id, s.configuration): s for s in find_sweeps(rows)}
    assert set(sweeps) == {("g1", "ort-cpu"), ("g1", "openvino")}, "a failed count or a latency row makes no sweep"
    assert sweeps[("g1", "ort-cpu")].knee.streams == 2 and sweeps[("g1", "openvino")].knee.streams == 1
    lines = knee_lines(rows)
    assert "g1 [ort-cpu]: saturates at 2 streams, 190/s = x1.90 of 1 stream; p50 latency 200 µs (x2.00)" in lines[0]
    assert "g1 [openvino]: saturates at 1 stream," in lines[1] and "best 2 streams at 121/s" in lines[1]
    assert "too wide" not in lines[0] and "too wide to place the knee" not in lines[1]
    noisy = knee_lines([row("g", "ort-cpu streams=1", 1, 100, 90), row("g", "ort-cpu streams=2", 2, 200, 50)])
    assert "saturates at 1 stream," in noisy[0] and "reaches 75% below it: too wide to place the knee" in noisy[0]


def test_load_warnings_name_what_went_wrong_and_stay_quiet_otherwise():
    server = {
        "graph_id": "g",
        "mode": "server",
        "status": "ok",
        "rate": 100.0,
        "arrival_rate": 90.0,
        "rounds": 3,
        "inferences": 1500,
        "requests": 1500,
        "latency_p99_above": 14,
        "dispatch_lag_p99_us": 5000.0,
    }
    fewer = row("g", "openvino", 4, 10, streams_executed=2)
    starved = row("g", "ort-cpu", 2, 10, stream_inferences=[100, 20])
    lines = load_warnings([server, fewer, starved])
    text = " ".join(lines)
    assert "arrivals slower than asked (e.g. g: 90.0/s of 100/s" in text
    assert "p99 rests on fewer than 25 slower requests (e.g. g: 14 of 1500 requests above it)" in text
    assert "compiled 2 streams for 4" in text and "[100, 20]" in text
    clean = [
        {**server, "arrival_rate": 99.5, "latency_p99_above": 25},
        row("g", "ort-cpu", 2, 10, streams_executed=2, stream_inferences=[100, 90]),
    ]
    assert load_warnings(clean) == []
    moved = {
        **clean[0],
        "unstable": True,
        "utilization": 0.7,
        "round_utilization": [0.56, 0.92, 0.6],
        "round_p99_us": [25_000.0, 236_000.0, 33_000.0],
    }
    (line,) = load_warnings([moved])
    assert (
        "1 unstable server rows ran their rounds at different loads" in line and "g: 70% load (rounds 56%-92%)" in line
    )
    assert "p99 25.0 ms, 236 ms, 33.0 ms" in line and "lower --rate" in line
    assert load_warnings([{**moved, "unstable": False}]) == [], "a stable row needs no explanation"
    assert load_warnings([{**moved, "round_utilization": [0.6, 0.65, 0.62]}]) == [], "rounds within 10 points"


def test_a_server_rows_line_gives_its_p99s_re_run_interval_before_the_order_statistic_ci():
    """The CI only knows this run's requests; the rounds' spread says where a re-run's p99 lands."""
    server = SimpleNamespace(
        mode="server",
        streams=2,
        streams_executed=2,
        threads=1,
        rate=165.0,
        arrival_rate=165.0,
        latency_p50_us=10_900.0,
        latency_p99_us=56_300.0,
        latency_p99_ci_low_us=53_200.0,
        latency_p99_ci_high_us=60_400.0,
        latency_p99_above=26,
        over_bound=None,
        search=None,
        rerun_rel=0.592,
        unstable=True,
        utilization=0.62,
        round_utilization=[0.56, 0.92, 0.60],
    )
    line = load_line(server)
    assert "p99 56.3 ms ±59.2% re-run unstable (95% CI 53.2–60.4 ms, 26 requests above)" in line, line
    assert "rate 165/s (measured 165/s) at 62% load (rounds 56%-92%)" in line, line
    assert "at 62% load p50" in load_line(SimpleNamespace(**{**vars(server), "round_utilization": [0.62, 0.62, 0.62]}))
    assert " load" not in load_line(SimpleNamespace(**{**vars(server), "utilization": None, "round_utilization": None}))
    steady = load_line(SimpleNamespace(**{**vars(server), "rerun_rel": 0.031, "unstable": False}))
    assert "p99 56.3 ms ±3.1% re-run (95% CI" in steady and "unstable" not in steady
    one_round = load_line(SimpleNamespace(**{**vars(server), "rerun_rel": None, "unstable": None}))
    assert "p99 56.3 ms (95% CI" in one_round


@pytest.mark.slow
def test_report_gives_throughput_and_server_rows_their_own_sections_and_plots(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "32,8,32,0,0")
    out = tmp_path / "res"
    for args in (
        ("--streams", "1,2"),
        ("--scenario", "server", "--rate", "200", "--latency-bound", "20", "--search-time", "0.5"),
        (),
    ):
        result = runner.invoke(
            app, ["run", "--kernels", str(kernels), *args, "--quick", "--profile-runs", "2", "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
    folder = tmp_path / "report"
    result = runner.invoke(app, ["report", str(out), "--out", str(folder)])
    assert result.exit_code == 0, result.output
    markdown = (folder / "report.md").read_text()
    for section in ("## Throughput", "## Stream sweeps: where throughput saturates", "## Server scenario", "## gemm"):
        assert section in markdown
    images = {p.name for p in folder.glob("*.png")}
    assert {
        "throughput-vs-streams-ort-cpu-fp32.png",
        "latency-vs-throughput-ort-cpu-fp32.png",
        "server-search-ort-cpu-fp32.png",
    } <= images
    assert all((folder / name).stat().st_size > 5000 for name in images)
    import pandas as pd

    assert len(pd.read_csv(folder / "rows.csv")) == 2, "the latency tables hold only the latency run's two rows"
    assert len(pd.read_csv(folder / "throughput.csv")) == 4 and len(pd.read_csv(folder / "server.csv")) == 2
    server_section = markdown.split("## Server scenario")[1].split("\n## ")[0]
    assert re.search(r"\| \d+% load( \(rounds \d+%-\d+%\))? \|", server_section), server_section[:1500]
    sheets = pd.ExcelFile(folder / "report.xlsx").sheet_names
    assert {"Throughput", "Server", "gemm"} <= set(sheets)
    only_load = runner.invoke(
        app, ["report", *map(str, sorted(Path(out).glob("*/*.jsonl"))[:2]), "--out", str(tmp_path / "r2")]
    )
    assert only_load.exit_code == 0 and "the result files hold no rows" not in only_load.output


@pytest.mark.parametrize("width", [80, 120])
def test_load_tables_keep_every_number_whole(width):
    """At 80 columns only graph ids fold; no figure is cut short."""
    from rich.console import Console

    from dbench.render.throughput import server_table, throughput_table

    long_id = "conv_w112_h112_c64_n1_k64_s1_r1_pw0_ph0_sw1_sh1.fwd.conv.fp32"
    throughput = [
        row(
            long_id,
            "openvino streams=16 threads=1",
            16,
            123456.7,
            120000.0,
            status="unsupported",
            threads_per_stream=1,
            streams_executed=8,
            throughput_tflops=0.01234,
            rerun_rel=0.123,
            unstable=True,
            verified=None,
        )
    ]
    server = [
        {
            **throughput[0],
            "mode": "server",
            "status": "ok",
            "rate": 12345.6,
            "arrival_rate": 12001.2,
            "latency_p50_us": 123456.0,
            "latency_p99_us": 1234567.0,
            "rerun_rel": 123.4,
            "over_bound": 0.123,
            "latency_p99_ci_low_us": 1100000.0,
            "latency_p99_ci_high_us": 1400000.0,
            "search": {"max_rate": 10234.5, "max_rate_failed": 11234.5},
        }
    ]
    console = Console(width=width, record=True)
    console.print(throughput_table(throughput, "throughput", width))
    console.print(server_table(server, "server", width))
    text = console.export_text()
    assert "…" not in text
    for figure in ("123457", "16x1", "±12.3%!", "1.23 s ±>1000%!", "CI 1.10–1.40 s", "12.3%", "10234-11234/s"):
        assert figure in text, figure
    wide = width >= 100
    assert ("12001/s" in text) == wide and ("(8 ran)" in text) == wide, (
        "where there is room: the measured rate, the streams that ran"
    )
