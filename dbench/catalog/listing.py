"""Kernels as flat rows for `dbench list` (table, CSV or JSON)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from dbench.catalog.kernels import Kernel


def kernel_rows(kernels: Iterable[Kernel], suite_tags: Iterable[str]) -> list[dict[str, Any]]:
    """One row per kernel: id, family, op, suites, copies (upstream rows in the selected suites), apps,
    params as a compact string, GFLOP by DeepBench's formula and fp32 minimum MB."""
    tags = tuple(suite_tags)
    rows = []
    for k in kernels:
        rows.append(
            {
                "id": k.id,
                "family": k.family,
                "op": k.op,
                "suites": ";".join(s for s in k.suites if s in tags),
                "copies": sum(k.copies(s) for s in tags),
                "app": ";".join(k.apps),
                "params": " ".join(f"{name}={int(v) if isinstance(v, bool) else v}" for name, v in k.params().items()),
                "flops": k.flops(),
                "min_bytes_fp32": k.min_bytes(4),
                "upstream_lines": ";".join(str(o.line) for o in k.origins if o.suite in tags),
            }
        )
    return rows


def to_csv(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
