"""Kernels as flat rows for `dbench list` (table, CSV or JSON)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from dbench.catalog.kernels import Kernel


def kernel_rows(kernels: Iterable[Kernel], suite_tags: Iterable[str]) -> list[dict[str, Any]]:
    """One row per kernel: id, family, op, suites, copies (upstream rows in the selected suites), apps,
    params as a compact string, GFLOP by DeepBench's formula and fp32 minimum MB; where the selected rows
    come from a model (the transformer suite), `source`: each model and role with the configuration
    fields its sizes come from."""
    tags = tuple(suite_tags)
    rows = []
    for k in kernels:
        origins = [o for o in k.origins if o.suite in tags]
        row = {
            "id": k.id,
            "family": k.family,
            "op": k.op,
            "suites": ";".join(s for s in k.suites if s in tags),
            "copies": sum(k.copies(s) for s in tags),
            "app": ";".join(dict.fromkeys(o.app for o in origins)) or ";".join(k.apps),
            "params": " ".join(f"{name}={int(v) if isinstance(v, bool) else v}" for name, v in k.params().items()),
            "flops": k.flops(),
            "min_bytes_fp32": k.min_bytes(4),
            "upstream_lines": ";".join(str(o.line) for o in origins),
        }
        if any(o.role for o in origins):
            row["source"] = "; ".join(dict.fromkeys(f"{o.app} {o.role} [{o.config}]" for o in origins if o.role))
        rows.append(row)
    return rows


def suite_counts(kernels: Iterable[Kernel], suite_tags: Iterable[str]) -> list[dict[str, Any]]:
    """Kernels and upstream rows per (model, phase, family) of the selected suites, in the order of their
    first row: a kernel that two models (or phases) share counts under each."""
    tags = tuple(suite_tags)
    counts: dict[tuple[str, str, str], dict[str, Any]] = {}
    for k in kernels:
        seen: set[tuple[str, str, str]] = set()
        for o in k.origins:
            if o.suite not in tags:
                continue
            key = (o.app, o.suite, k.family)
            entry = counts.setdefault(
                key, {"app": o.app, "suite": o.suite, "family": k.family, "kernels": 0, "rows": 0, "line": o.line}
            )
            entry["rows"] += 1
            entry["line"] = min(entry["line"], o.line)
            if key not in seen:
                entry["kernels"] += 1
                seen.add(key)
    return sorted(counts.values(), key=lambda entry: entry["line"])


def to_csv(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
