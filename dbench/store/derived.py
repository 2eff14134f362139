"""Figures derived across rows of one run: DeepBench's sparse speedup (dense time / sparse time)."""

from __future__ import annotations

from typing import Any


def sparse_speedups(rows: list[dict[str, Any]]) -> dict[str, float]:
    """kernel id -> median dense time / median sparse time, for sparse kernels whose two forms both
    ran ok in the same precision (DeepBench's `speedup` column)."""
    medians: dict[tuple[str, str, str], float] = {}
    for row in rows:
        if row.get("family") == "sparse" and row.get("status") == "ok" and row.get("median_us"):
            medians[(row["kernel_id"], row["precision"], row["form"])] = row["median_us"]
    return {
        kernel: medians[(kernel, precision, "dense")] / sparse
        for (kernel, precision, form), sparse in medians.items()
        if form == "sparse" and (kernel, precision, "dense") in medians
    }


def with_derived(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with `sparse_speedup` filled on sparse-form rows (None elsewhere)."""
    speedups = sparse_speedups(rows)
    return [{**row, "sparse_speedup": speedups.get(row["kernel_id"]) if row.get("form") == "sparse" else None}
            for row in rows]
