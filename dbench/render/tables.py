"""Rich tables for the terminal: kernel listings and run summaries."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from dbench.render.numbers import format_spread, format_time, significant


def kernels_table(rows: list[dict[str, Any]], selection) -> Table:
    """The `dbench list` table, with a caption that reconciles kernels and upstream rows."""
    copies = sum(r["copies"] for r in rows)
    caption = f"{len(rows)} kernels ({copies} upstream rows; identical rows are one kernel, see 'copies')"
    table = Table(title=f"suite {selection.suite}", caption=caption)
    for column, justify in [
        ("id", "left"),
        ("suites", "left"),
        ("copies", "right"),
        ("app", "left"),
        ("GFLOP", "right"),
    ]:
        table.add_column(column, justify=justify, no_wrap=column == "id")
    for r in rows:
        table.add_row(r["id"], r["suites"], str(r["copies"]), r["app"], f"{r['flops'] / 1e9:.3f}")
    return table


def suite_counts_table(counts: list[dict[str, Any]]) -> Table:
    """Kernels (and rows) per model, phase and family: the transformer suite's summary under `dbench list`."""
    families = list(dict.fromkeys(c["family"] for c in counts))
    table = Table(
        title="kernels per model and phase (rows in parentheses)", caption="--format csv names each row's source"
    )
    table.add_column("model")
    table.add_column("phase")
    for family in families:
        table.add_column(family, justify="right")
    by_key: dict[tuple[str, str], dict[str, str]] = {}
    for c in counts:
        by_key.setdefault((c["app"], c["suite"]), {})[c["family"]] = f"{c['kernels']} ({c['rows']})"
    for (app, suite), cells in by_key.items():
        table.add_row(app, suite.removeprefix("transformer_"), *(cells.get(f, "") for f in families))
    return table


STATUS_STYLE = {
    "ok": "green",
    "disputed": "yellow",
    "mismatch": "bold red",
    "unsupported": "yellow",
    "failed": "red",
    "crashed": "bold red",
    "timeout": "red",
    "oom": "magenta",
}


def _interval(row: dict[str, Any]) -> str:
    """The half-width of the interval a re-run's median should fall in, in percent, `!` when the row is
    unstable; `1 rd` or `=` where the rounds give no interval (one round; identical round medians);
    a row from before rounds shows its old interval of the median in parentheses."""
    if row.get("rerun_rel") is not None:
        return format_spread(row["rerun_rel"]) + _scaled(row) + ("!" if row.get("unstable") else "")
    if row.get("rounds"):
        return "=" if row.get("round_sd") == 0 else f"{row['rounds']} rd"
    return f"(±{row['ci_rel'] * 100:.1f}%)" if row.get("ci_rel") is not None else ""


def _scaled(row: dict[str, Any]) -> str:
    """`w` when the machine's history widened the row's interval, `n` when it narrowed it, else ''."""
    factor = row.get("history_factor")
    return "" if factor is None or abs(factor - 1.0) < 0.005 else ("w" if factor > 1 else "n")


NARROW = 100
"""Below this many columns the run summary drops its box lines (one space between columns) and the GB/s
column (kept in the files), so that the widest statuses and precisions still leave every number whole."""


def results_table(rows: list[dict[str, Any]], title: str, width: int = 200, unstable_above: float = 0.05) -> Table:
    """The end-of-run summary, readable at 80 columns: one line per graph (and variant, when a run has
    several) with status (! when it breaks an invariant), precision asked -> executed, median (adaptive
    units) and where a re-run's median should fall, p90, p99, the cold first call, TFLOP/s and GB/s; below
    an attention graph's id, whether its runtime ran it fused (its layers are in the log). Numbers never
    wrap; only the graph id folds."""
    broken = sum(1 for r in rows if r.get("invariant_violations"))
    caption = (
        "±: where 95% of re-runs' medians should fall (from the rounds); !: unstable (wider than "
        f"±{unstable_above:.0%}); "
        "N rd: N rounds, no interval; =: round medians identical (quantised clock)"
    )
    scaled = [r["history_factor"] for r in rows if _scaled(r)]
    if scaled:
        caption += (
            f"\nw/n: widened or narrowed (×{min(scaled):.2f}–{max(scaled):.2f}) to what this machine's earlier runs of "
            "these graphs showed a re-run to need, 95% of them held (history_factor, coverage_pairs, coverage_inside)"
        )
    if broken:
        caption += f"\n[bold red]{broken} rows marked ! break an invariant: see their invariant_violations[/]"
    narrow = width < NARROW
    table = Table(
        title=title,
        caption=caption,
        box=None if narrow else box.HEAVY_HEAD,
        padding=(0, 1, 0, 0) if narrow else (0, 1),
        pad_edge=not narrow,
        header_style="bold underline",
    )
    columns = ["graph", "status", "prec", "median", "±", "p90", "p99", "cold", "TF/s" if narrow else "TFLOP/s"]
    columns += [] if narrow else ["GB/s"]
    placed = any(r.get("placement") for r in rows)
    columns += ["placed"] if placed else []
    for column in columns:
        if column == "graph":
            table.add_column(column, overflow="fold", min_width=10, ratio=1)
        else:
            table.add_column(
                column, justify="left" if column in ("status", "prec") else "right", no_wrap=True, overflow="ellipsis"
            )
    variants = len({r.get("variant") or r.get("runtime") for r in rows}) > 1
    for r in rows:
        executed = r.get("precision_executed") or ""
        prec = r["precision"] if executed in ("", r["precision"]) else f"{r['precision']}→{executed}"
        if r.get("weights_executed"):  # weight-only: the weights the kernel read and its compute apart
            prec = f"{r['weights_executed']}w/{executed}"
        if r.get("precision_fallback"):
            prec = f"[yellow]{prec}[/]"
        cells = [
            r["graph_id"]
            + (escape(f" [{r.get('variant') or r.get('runtime')}]") if variants else "")
            + (f"\n[dim]attention {r['executed_form'].split(': ', 1)[0]}[/]" if r.get("executed_form") else ""),
            f"[{STATUS_STYLE.get(r['status'], 'white')}]{r['status']}[/]"
            + (" [yellow]unverified[/]" if r["status"] == "ok" and r.get("verified") is None else "")
            + ("[bold red]![/]" if r.get("invariant_violations") else ""),
            prec,
            format_time(r.get("median_us")),
            _interval(r),
            format_time(r.get("p90_us")),
            format_time(r.get("p99_us")),
            format_time(r.get("first_call_us")),
            significant(r.get("tflops")),
            significant(r.get("gbps")),
        ][: len(columns) - placed]
        table.add_row(*cells, *([placed_cell(r.get("placement"))] if placed else []))
    return table


def placed_cell(placement: dict[str, list[str]] | None) -> str:
    """Where ONNX Runtime ran a row's nodes, providers by short name with their node counts
    (`OpenVINO 1 · CPU 2`), the CPU provider's in yellow beside another provider (a fallback)."""
    if not placement:
        return ""
    parts = []
    for provider, names in placement.items():
        short = provider.removesuffix("ExecutionProvider")
        part = f"{short} {len(names)}"
        parts.append(f"[yellow]{part}[/]" if short == "CPU" and len(placement) > 1 else part)
    return " · ".join(parts)


def runtimes_table(statuses) -> Table:
    """`dbench runtimes`: every known runtime, usable or not, its version and why not."""
    table = Table(title="runtimes")
    for column in ("runtime", "usable", "version", "extra", "reason"):
        table.add_column(column, overflow="fold")
    for s in statuses:
        table.add_row(s.name, "[green]yes[/]" if s.available else "[red]no[/]", s.version, s.extra, escape(s.reason))
    return table


def speedup_table(speedups) -> Table:
    """DeepBench's sparse summary: dense time / sparse time per kernel (and variant, in an interleaved
    run), with the 95 % interval from the two graphs' rounds and whether it can tell them apart."""
    variants = len({variant for variant, _ in speedups}) > 1
    table = Table(
        title="sparse GEMM: dense / sparse time",
        caption="interval: 95 %, Welch's t over the two graphs' rounds; sparse faster, slower, or the same within "
        "noise",
    )
    if variants:
        table.add_column("variant", no_wrap=True)
    table.add_column("kernel", no_wrap=True)
    for column in ("speedup", "95% interval", "sparse form"):
        table.add_column(column, justify="right" if column != "sparse form" else "left")
    for (variant, kernel), speedup in speedups.items():
        interval = f"{speedup.low:.2f}–{speedup.high:.2f}" if speedup.low is not None else ""
        cells = [kernel, f"{speedup.value:.2f}", interval, speedup.verdict]
        table.add_row(*([variant] if variants else []), *cells)
    return table


def _percent(value: float | None) -> str:
    return "" if value is None or value != value else f"{value:.1%}"


def compare_table(comparison, width: int = 200) -> Table:
    """`dbench compare`: each side's median, the ratio b/a with its 95% interval, the smallest change
    the kernel's data resolves, and the verdict (false-discovery rate controlled over the table)."""
    from dbench.store.compare import CHANGED

    caption = (
        f"b/a: ratio of geometric-mean round medians, 95% interval; resolves: the change detected 80% of the time; "
        f"verdicts: {comparison.method}, false-discovery rate {comparison.fdr:.0%}"
    )
    throughput = comparison.mode == "throughput"
    if throughput:
        caption += (
            "\nthroughput rows: a and b in inferences/s; b/a is the ratio of times per inference (0.50: "
            "twice the throughput)"
        )
    elif comparison.mode == "server":
        caption += "\nserver rows: a and b are p99 latencies from arrival, queueing included; b/a their ratio"
    table = Table(
        title=f"a = {escape(comparison.a.label)}\nb = {escape(comparison.b.label)}",
        caption=caption,
        box=None if width < NARROW else box.HEAVY_HEAD,
    )
    for column, justify in [
        ("graph", "left"),
        ("a", "right"),
        ("b", "right"),
        ("b/a", "right"),
        ("95% interval", "right"),
        ("resolves", "right"),
        ("verdict", "left"),
    ]:
        table.add_column(column, justify=justify, overflow="fold", no_wrap=column not in ("graph", "verdict"))
    styles = {"faster": "green", "slower": "red", "same": "dim"}

    def side(rows) -> str:
        if not rows:
            return "—"
        bad = [r["status"] for r in rows if r["status"] not in ("ok", "disputed")]  # a disputed time counts
        if bad:
            return bad[0]
        from dbench.store.compare import figure

        figures = [figure(r) for r in rows if figure(r)]
        if not figures:
            return ""
        mean = float(sum(figures) / len(figures))
        return f"{significant(1e6 / mean)}/s" if throughput else format_time(mean)

    for pair in comparison.pairs:
        d = pair.difference
        interval = f"{d.low:.3f}–{d.high:.3f}" if d and pair.verdict in (*CHANGED, "same") else ""
        ratio = f"{pair.ratio:.3f}" if pair.ratio else ""
        resolves = f"±{_percent(d.resolvable)}" if d and pair.verdict in (*CHANGED, "same") else ""
        verdict = pair.verdict + (f" ({pair.detail})" if pair.detail else "")
        if (
            pair.verdict == "same" and d and (d.low > 1 or d.high < 1)
        ):  # its own interval excludes 1, the table's FDR does not
            verdict += f" (q {pair.q:.2f} over the table, above its {comparison.fdr:.0%} false-discovery rate)"
        table.add_row(
            pair.graph_id,
            side(pair.a),
            side(pair.b),
            ratio,
            interval,
            resolves,
            f"[{styles.get(pair.verdict, 'yellow')}]{escape(verdict)}[/]",
        )
    return table


def compare_summary(comparison, names: tuple[str, str] = ("a", "b")) -> list[str]:
    """The lines under a compare table: what changed, what the data could not say, the noise it
    measured, and the geometric-mean ratio with its interval; the sides called by `names` (a, b)."""
    from dbench.store.compare import CHANGED, MAX_ROUNDS_TO_RESOLVE

    counts = comparison.counts()
    changed = counts.get("faster", 0) + counts.get("slower", 0)
    noisy = counts.get("too noisy", 0)
    parts = [
        f"{changed} changed ({counts.get('faster', 0)} faster, {counts.get('slower', 0)} slower) at a "
        f"{comparison.fdr:.0%} false-discovery rate"
    ]
    if counts.get("same"):
        parts.append(
            f"{counts['same']} same within noise"
            + (f" ({noisy} of them too noisy to resolve a {comparison.resolution:.0%} change)" if noisy else "")
        )
    for key in ("too few rounds", "too few runs", "no rounds", "no spread", "not compared"):
        if counts.get(key):
            parts.append(f"{counts[key]} {key}")
    lines = [f"{names[1]} against {names[0]}: {', '.join(parts)}"]
    if not comparison.interleaved and noisy and 2 * noisy >= counts.get("same", 0):
        lines.append(
            "to see smaller changes, time both sides in one interleaved run (dbench run --runtime a,b, or "
            "--threads 1,2): its rounds pair up and the machine's drift between runs cancels"
        )
    noisy_pairs = comparison.too_noisy() if comparison.interleaved else []
    if noisy_pairs:
        needed = sorted((p.rounds_to_resolve for p in noisy_pairs), key=lambda n: n or math.inf)
        median, most = needed[len(needed) // 2], needed[-1]
        measured = sorted(p.rounds for p in noisy_pairs)[len(noisy_pairs) // 2]

        def about(n: int | None) -> str:
            return f"about {n}" if n else f"more than {MAX_ROUNDS_TO_RESOLVE}"

        advice = (
            f"--rounds {median} with --min-time raised {median}/{measured}-fold (the noise was measured on rounds "
            "this long) on them"
            if median
            else "more rounds will not do it here"
        )
        lines.append(
            f"to resolve a {comparison.resolution:.0%} change on the {len(noisy_pairs)} too noisy, an interleaved run "
            f"needs {about(median)} rounds as long as these (median over them; {about(most)} for the noisiest), from "
            f"the noise its {measured} rounds measured: {advice}, or a quieter machine"
        )
    noise = comparison.noise()
    if noise:
        lines.append(
            f"noise measured: SD of a round's log time {_percent(noise[len(noise) // 2])} at the median kernel "
            f"({_percent(noise[0])} to {_percent(noise[-1])})"
        )
    if comparison.a.calibration:
        lines.append(f"this machine's calibration ({comparison.a.calibration})")
    mean = comparison.geomean()
    tested = sum(1 for p in comparison.pairs if p.difference and p.verdict in (*CHANGED, "same"))
    lines.append(
        f"geometric-mean time ratio b/a {mean.ratio:.3f} (95% interval {mean.low:.3f}–{mean.high:.3f}) over "
        f"{tested} graphs"
        if mean
        else "no graph could be tested on both sides"
    )
    return lines
