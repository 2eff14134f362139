"""Terminal tables for a model's kernels and the nodes that are not kernels (used by the CLI only)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from dbench.frommodel.walk import Extraction


def kernels_table(extraction: Extraction) -> Table:
    """One line per kernel: id, precision, pass, form, copies, GFLOP per copy, nodes."""
    copies = sum(k.copies for k in extraction.kernels)
    table = Table(
        title=f"model {extraction.model}",
        caption=f"{len(extraction.kernels)} kernels for {copies} nodes (identical nodes are one kernel, see 'copies')",
    )
    for column, justify in [
        ("kernel", "left"),
        ("prec", "left"),
        ("pass", "left"),
        ("form", "left"),
        ("copies", "right"),
        ("GFLOP", "right"),
        ("nodes", "left"),
    ]:
        table.add_column(column, justify=justify, no_wrap=column == "kernel", overflow="fold")
    for k in extraction.kernels:
        nodes = list(dict.fromkeys(k.nodes))
        shown = ", ".join(nodes[:3]) + (f" (+{len(nodes) - 3})" if len(nodes) > 3 else "")
        table.add_row(
            k.kernel.id, k.precision, k.pass_name, k.form, str(k.copies), f"{k.kernel.flops() / 1e9:.4f}", escape(shown)
        )
    return table


def not_expressed_table(extraction: Extraction, caption: str = "") -> Table:
    """The nodes that are not kernels, grouped by op and reason, with a count and an example node."""
    groups: dict[tuple[str, str], list[str]] = {}
    for s in extraction.skipped:
        reason = "folded into an int8 kernel (Q/DQ)" if s.folded_into else s.reason
        groups.setdefault((s.op, reason), []).append(s.node)
    table = Table(title="nodes that are not kernels", caption=caption or None)
    for column in ("op", "nodes", "reason", "example"):
        table.add_column(column, overflow="fold", justify="right" if column == "nodes" else "left")
    for (op, reason), nodes in groups.items():
        table.add_row(op, str(len(nodes)), escape(reason), escape(nodes[0]))
    return table


def prediction_table(rows: list[dict]) -> Table:
    """`model_vs_kernels` rows: measured model median beside the sum of its kernels and the share explained."""
    table = Table(
        title="whole model vs the sum of its kernels",
        caption="kernels µs = Σ kernel median x copies; share = kernels µs / model µs; share of min: the same "
        "over minimum times",
    )
    for column in (
        "model",
        "runtime",
        "model µs",
        "kernels µs",
        "share",
        "share of min",
        "kernels ok",
        "nodes covered",
        "model check",
    ):
        table.add_column(column, justify="left" if column in ("model", "runtime", "model check") else "right")
    for r in rows:
        fmt = lambda v, f: "" if v is None else format(v, f)
        table.add_row(
            r["model"],
            r["runtime"],
            fmt(r["model_us"], ".1f"),
            fmt(r["kernels_us"], ".1f"),
            fmt(r["share"], ".0%"),
            fmt(r["share_of_min"], ".0%"),
            f"{r['kernels_timed']}/{r['kernels']}",
            f"{r['kernel_nodes_timed']}/{r['model_nodes']}",
            r["model_verified_by"] if r["model_status"] == "ok" else r["model_status"],
        )
    return table
