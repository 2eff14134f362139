"""Rich tables for the terminal: kernel listings and run summaries."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich import box
from rich.table import Table

from dbench.report.units import format_time, significant


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


def _ci(row: dict[str, Any]) -> str:
    """The median's 95% interval half-width in percent, `!` when the row is unstable."""
    if row.get("ci_rel") is None:
        return ""
    return f"±{row['ci_rel'] * 100:.1f}%" + ("!" if row.get("unstable") else "")


NARROW = 100
"""Below this many columns the run summary drops its box lines (one space between columns) and the GB/s
column (kept in the files), so that the widest statuses and precisions still leave every number whole."""


def results_table(rows: list[dict[str, Any]], title: str, width: int = 200) -> Table:
    """The end-of-run summary, readable at 80 columns: one line per graph with status (! when it
    breaks an invariant), precision asked -> executed, median (adaptive units) and its 95% interval,
    p90, p99, the cold first call, TFLOP/s and GB/s. Numbers never wrap; only the graph id folds."""
    broken = sum(1 for r in rows if r.get("invariant_violations"))
    caption = "±: 95% interval of the median; !: unstable (wider than ±2%)"
    if broken:
        caption += f"\n[bold red]{broken} rows marked ! break an invariant: see their invariant_violations[/]"
    narrow = width < NARROW
    table = Table(title=title, caption=caption, box=None if narrow else box.HEAVY_HEAD,
                  padding=(0, 1, 0, 0) if narrow else (0, 1), pad_edge=not narrow, header_style="bold underline")
    columns = ["graph", "status", "prec", "median", "±", "p90", "p99", "cold", "TF/s" if narrow else "TFLOP/s"]
    columns += [] if narrow else ["GB/s"]
    for column in columns:
        if column == "graph":
            table.add_column(column, overflow="fold", min_width=10, ratio=1)
        else:
            table.add_column(column, justify="left" if column in ("status", "prec") else "right", no_wrap=True,
                             overflow="ellipsis")
    for r in rows:
        executed = r.get("precision_executed") or ""
        prec = r["precision"] if executed in ("", r["precision"]) else f"{r['precision']}→{executed}"
        if r.get("precision_fallback"):
            prec = f"[yellow]{prec}[/]"
        cells = [
            r["graph_id"], f"[{STATUS_STYLE.get(r['status'], 'white')}]{r['status']}[/]"
            + (" [yellow]unverified[/]" if r["status"] == "ok" and r.get("verified") is None else "")
            + ("[bold red]![/]" if r.get("invariant_violations") else ""), prec,
            format_time(r.get("median_us")), _ci(r), format_time(r.get("p90_us")), format_time(r.get("p99_us")),
            format_time(r.get("first_call_us")), significant(r.get("tflops")), significant(r.get("gbps")),
        ]
        table.add_row(*cells[:len(columns)])
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
    """`dbench compare`: each run's status or median, the ratio b/a with its 95% interval, the verdict."""
    table = Table(title=f"a = {name_a}\nb = {name_b}",
                  caption="ratio = time b / time a (Hodges-Lehmann, 95% interval); verdict beyond a 2% noise floor")
    for column, justify in [("graph", "left"), ("a", "right"), ("b", "right"), ("b/a", "right"), ("95% CI", "right"), ("verdict", "left")]:
        table.add_column(column, justify=justify, overflow="fold")
    styles = {"faster": "green", "slower": "red", "same": "dim"}

    def side(row) -> str:
        if row is None:
            return "—"
        return format_time(row.get("median_us")) if row["status"] == "ok" else row["status"]

    for pair in pairs:
        interval = f"{pair.shift.low:.3f}–{pair.shift.high:.3f}" if pair.shift else ""
        ratio = f"{pair.ratio:.3f}" if pair.ratio else ""
        style = styles.get(pair.verdict, "yellow")
        table.add_row(pair.graph_id, side(pair.a), side(pair.b), ratio, interval, f"[{style}]{pair.verdict}[/]")
    return table
