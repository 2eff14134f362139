"""Checks every result row must pass before it is written: a violation is a measuring or bookkeeping
defect in dbench or an adapter, and the row says so (`invariant_violations`) rather than carrying a
figure that cannot be true."""

from __future__ import annotations

from typing import Any

KERNEL_TIME_TOLERANCE = 2.0
"""How far the profiled kernel time may exceed the end-to-end median. The profile is taken seconds after
the timed calls, in a second, freshly compiled session, and on a shared 2-core VM a kernel's time moves
that much between such moments: OpenVINO gemm_m35_n700_k2048 1111 us timed vs 1754 us profiled on a
quiet machine (PERF_COUNT itself costs nothing measurable: 1523 vs 1579 us per call on and off); ORT
rnn_lstm_h256_n1_t150 2954 us vs 6369 us during a test run, and its median anywhere from 2.9 to 12 ms
over a few minutes at load 3. So only a kernel time above three times the median is taken as a
defect; the defects this check exists for were 4.6x to 79x."""

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
        load = row.get("load_1m")
        context = f" (1-minute load {load:.2f}: a busy machine distorts the separate profiling pass)" if load else ""
        found.append(f"kernel time {kernel:.1f} us exceeds the end-to-end median {median:.1f} us "
                     f"by more than {KERNEL_TIME_TOLERANCE:.0%}{context}")
    executed = row.get("precision_executed") or ""
    allowed = COMPUTE_PRECISIONS.get(row.get("precision", ""), set())
    if executed not in NOT_PROFILED and executed not in allowed:
        found.append(f"executed precision {executed} is not a compute precision a {row.get('precision')} graph "
                     f"can run in ({', '.join(sorted(allowed))})")
    return found
