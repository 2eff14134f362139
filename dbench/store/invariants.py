"""Checks every result row must pass before it is written: a violation is a measuring or bookkeeping
defect in dbench or an adapter, and the row says so (`invariant_violations`) rather than carrying a
figure that cannot be true."""

from __future__ import annotations

from typing import Any

KERNEL_TIME_TOLERANCE = 0.5
"""How far the profiled kernel time may exceed the end-to-end median: the profile comes from a second,
freshly compiled session over a few runs, so it is noisier than the calibrated median, but a kernel
time 1.5x the whole call's is no kernel time (the bugs this caught were 4.6x to 79x)."""

COMPUTE_PRECISIONS = {
    "fp32": {"fp32", "fp16", "bf16"},
    "fp16": {"fp16", "fp32"},
    "bf16": {"bf16", "fp32"},
    "int8": {"int8", "fp32", "fp16", "bf16"},
}
"""The precisions a graph's compute can have run in: its own, a float fallback, or (fp32 graphs with
--allow-runtime-precision) a narrower float. Never an index or trip-count type (int64, bool)."""

NOT_PROFILED = ("unknown", "")
"""Executed precision of a row without a profile (`unknown`) or without a measurement (`""`)."""


def violations(row: dict[str, Any]) -> list[str]:
    """The invariants a row breaks, each as a sentence; empty when it is sound."""
    found = []
    kernel, median = row.get("kernel_time_us"), row.get("median_us")
    if kernel is not None and median and kernel > median * (1 + KERNEL_TIME_TOLERANCE):
        found.append(f"kernel time {kernel:.1f} us exceeds the end-to-end median {median:.1f} us "
                     f"by more than {KERNEL_TIME_TOLERANCE:.0%}")
    executed = row.get("precision_executed") or ""
    allowed = COMPUTE_PRECISIONS.get(row.get("precision", ""), set())
    if executed not in NOT_PROFILED and executed not in allowed:
        found.append(f"executed precision {executed} is not a compute precision a {row.get('precision')} graph "
                     f"can run in ({', '.join(sorted(allowed))})")
    return found
