"""Figures derived across rows of one run: DeepBench's sparse speedup (dense time / sparse time), with
the interval its two graphs' rounds give it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbench.stats.differences import welch
from dbench.store.compare import MIN_ROUNDS


@dataclass(frozen=True)
class SparseSpeedup:
    """Dense median / sparse median of one kernel, and its 95 % interval from the two graphs' rounds
    (Welch's t on their log round medians; None with fewer rounds a graph than compare's verdicts need,
    or no spread)."""

    value: float
    low: float | None = None
    high: float | None = None

    @property
    def verdict(self) -> str:
        """`faster` (the sparse form is), `slower`, `same within noise`, or `no interval`."""
        if self.low is None or self.high is None:
            return "no interval"
        return "faster" if self.low > 1 else "slower" if self.high < 1 else "same within noise"


def _speedup(dense: dict[str, Any], sparse: dict[str, Any]) -> SparseSpeedup:
    value = dense["median_us"] / sparse["median_us"]
    rounds_dense, rounds_sparse = dense.get("round_medians_us") or [], sparse.get("round_medians_us") or []
    if min(len(rounds_dense), len(rounds_sparse)) < MIN_ROUNDS:
        return SparseSpeedup(value)
    ratio = welch(rounds_dense, rounds_sparse)  # sparse / dense, over the rounds
    return SparseSpeedup(value, 1 / ratio.high, 1 / ratio.low) if ratio else SparseSpeedup(value)


def sparse_speedups(rows: list[dict[str, Any]]) -> dict[tuple[str, str], SparseSpeedup]:
    """(variant, kernel id) -> its SparseSpeedup, for sparse kernels whose two forms both ran ok in the same
    precision and variant (DeepBench's `speedup` column; an interleaved run has one per variant)."""
    found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for row in rows:
        if row.get("family") == "sparse" and row.get("status") == "ok" and row.get("median_us"):
            found[(row.get("variant") or "", row["kernel_id"], row["precision"], row["form"])] = row
    return {
        (variant, kernel): _speedup(found[(variant, kernel, precision, "dense")], sparse)
        for (variant, kernel, precision, form), sparse in found.items()
        if form == "sparse" and (variant, kernel, precision, "dense") in found
    }


def with_derived(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with `sparse_speedup` and its interval (`sparse_speedup_low`, `_high`) filled on sparse-form
    rows (None elsewhere)."""
    speedups = sparse_speedups(rows)
    derived = []
    for row in rows:
        speedup = speedups.get((row.get("variant") or "", row["kernel_id"])) if row.get("form") == "sparse" else None
        derived.append(
            {
                **row,
                "sparse_speedup": speedup.value if speedup else None,
                "sparse_speedup_low": speedup.low if speedup else None,
                "sparse_speedup_high": speedup.high if speedup else None,
            }
        )
    return derived
