"""A row's per-node profile on the terminal (`dbench run --show-profile`, as benchmark_app -pc or
trtexec --dumpProfile): every layer the runtime reported, in its order, with op, kernel, precision,
time per call and share of the profiled total, under the row's median and profiled pass."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from dbench.render.numbers import format_time


def profile_table(row: dict[str, Any]) -> Table | None:
    """The row's layers, or None when it has no profile (not ok, or --profile-runs 0)."""
    nodes = row.get("nodes") or []
    if not nodes:
        return None
    total = sum(n["time_us"] for n in nodes if not n.get("container"))
    caption = (
        f"layers sum to {format_time(total)} per call in the profiling pass "
        f"({format_time(row.get('profile_call_us'))} per profiled call); timed median "
        f"{format_time(row.get('median_us'))}"
    )
    table = Table(title=f"profile · {row['graph_id']} · {row.get('variant') or row['runtime']}", caption=caption)
    for column in ("layer", "op", "kernel", "precision", "time", "share"):
        table.add_column(column, justify="right" if column in ("time", "share") else "left", overflow="fold")
    for n in nodes:
        calls = f" ({n['calls']} calls)" if n.get("calls", 1) > 1 else ""
        share = "(contains others)" if n.get("container") else (f"{n['time_us'] / total:.1%}" if total else "")
        table.add_row(
            escape(n["name"]),
            escape(n.get("op_type", "")),
            escape(n.get("kernel", "")),
            n.get("precision", ""),
            format_time(n["time_us"]) + calls,
            share,
        )
    return table
