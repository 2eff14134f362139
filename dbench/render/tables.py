"""Rich tables for the terminal: kernel listings and run summaries."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table


def kernels_table(rows: list[dict[str, Any]], selection) -> Table:
    """The `dbench list` table, with a caption that reconciles kernels and upstream rows."""
    copies = sum(r["copies"] for r in rows)
    caption = f"{len(rows)} kernels ({copies} upstream rows; identical rows are one kernel, see 'copies')"
    table = Table(title=f"suite {selection.suite}", caption=caption)
    for column, justify in [("id", "left"), ("suites", "left"), ("copies", "right"), ("app", "left"), ("GFLOP", "right")]:
        table.add_column(column, justify=justify, no_wrap=column == "id")
    for r in rows:
        table.add_row(r["id"], r["suites"], str(r["copies"]), r["app"], f"{r['flops'] / 1e9:.3f}")
    return table


STATUS_STYLE = {"ok": "green", "mismatch": "bold red", "unsupported": "yellow", "failed": "red", "crashed": "bold red",
                "timeout": "red", "oom": "magenta"}


def _num(value, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def results_table(rows: list[dict[str, Any]], title: str) -> Table:
    """The end-of-run summary: one line per graph with status, precision asked -> executed, median
    latency, spread, kernel time, TFLOP/s, GB/s, verification error and memory."""
    broken = sum(1 for r in rows if r.get("invariant_violations"))
    caption = f"[bold red]{broken} rows marked ! break an invariant: see their invariant_violations[/]" if broken else None
    table = Table(title=title, caption=caption)
    for column, justify in [("graph", "left"), ("status", "left"), ("prec", "left"), ("median µs", "right"),
                            ("cv", "right"), ("kernel µs", "right"), ("TFLOP/s", "right"), ("GB/s", "right"),
                            ("error", "right"), ("mem MB", "right")]:
        table.add_column(column, justify=justify, overflow="fold", no_wrap=column == "graph")
    for r in rows:
        executed = r.get("precision_executed") or ""
        prec = r["precision"] if executed in ("", r["precision"]) else f"{r['precision']}→{executed}"
        if r.get("precision_fallback"):
            prec = f"[yellow]{prec}[/]"
        cv = _num(r.get("cv"), ".2f") + ("!" if r.get("unstable") else "")
        table.add_row(
            r["graph_id"], f"[{STATUS_STYLE.get(r['status'], 'white')}]{r['status']}[/]"
            + (" [yellow]unverified[/]" if r["status"] == "ok" and r.get("verified") is None else "")
            + ("[bold red]![/]" if r.get("invariant_violations") else ""), prec,
            _num(r.get("median_us"), ".1f"), cv, _num(r.get("kernel_time_us"), ".1f"), _num(r.get("tflops"), ".3f"),
            _num(r.get("gbps"), ".1f"), _num(r.get("error"), ".1e"),
            _num(r["memory_bytes"] / 1e6 if r.get("memory_bytes") is not None else None, ".1f"),
        )
    return table


def runtimes_table(statuses) -> Table:
    """`dbench runtimes`: every known runtime, usable or not, its version and why not."""
    table = Table(title="runtimes")
    for column in ("runtime", "usable", "version", "extra", "reason"):
        table.add_column(column, overflow="fold")
    for s in statuses:
        table.add_row(s.name, "[green]yes[/]" if s.available else "[red]no[/]", s.version, s.extra, escape(s.reason))
    return table


def speedup_table(speedups: dict[str, float]) -> Table:
    """DeepBench's sparse summary: dense time / sparse time per kernel."""
    table = Table(title="sparse GEMM: dense / sparse time")
    table.add_column("kernel", no_wrap=True)
    table.add_column("speedup", justify="right")
    for kernel, speedup in speedups.items():
        table.add_row(kernel, f"{speedup:.2f}")
    return table


def compare_table(pairs, name_a: str, name_b: str) -> Table:
    """`dbench compare`: status, executed precision and median of each run, and median(b)/median(a)."""
    table = Table(title=f"a = {name_a}   b = {name_b}", caption="ratio = median b / median a (above 1: b is slower)")
    for column, justify in [("graph", "left"), ("a", "left"), ("b", "left"), ("a µs", "right"), ("b µs", "right"), ("ratio", "right")]:
        table.add_column(column, justify=justify, no_wrap=column == "graph")

    def side(row):
        if row is None:
            return "—"
        return row["status"] if row["status"] != "ok" else f"ok {row.get('precision_executed', '')}"

    for pair in pairs:
        table.add_row(pair.graph_id, side(pair.a), side(pair.b),
                      _num(pair.a.get("median_us") if pair.a else None, ".1f"),
                      _num(pair.b.get("median_us") if pair.b else None, ".1f"),
                      _num(pair.ratio, ".3f"))
    return table
