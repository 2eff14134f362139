"""`dbench run --json`: the finished run as one JSON object on standard output, so a script reads the
result without finding the log (as benchmark_app's -json_stats or trtexec's --exportTimes): the run's
identity and files, status counts, the warnings the terminal prints, and every row without its bulky
per-sample times and per-node profile (both stay in the log)."""

from __future__ import annotations

import math
from typing import Any

from dbench.orchestrator.run import RunResult
from dbench.render.warnings import run_warnings

LEFT_OUT = ("type", "samples_us", "nodes")
"""Row keys the summary leaves to the log: the record type, the per-sample times, the per-node profile."""


def _finite(value: Any) -> Any:
    """NaN and infinities as null: strict JSON readers (jq, JSON.parse) refuse them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def run_summary(result: RunResult) -> dict[str, Any]:
    """The run as JSON-ready data."""
    header, host = result.header, result.header.get("host", {})
    counts: dict[str, int] = {}
    for row in result.rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    written, note = result.exports
    return _finite(
        {
            "run_id": result.run_id,
            "exit_code": result.exit_code,
            "log": str(result.log_path),
            "files": [str(path) for path in written],
            "note": note or None,
            "runtime": header.get("runtime", {}),
            "machine": host.get("machine_key"),
            "busy_start": host.get("busy_start"),
            "statuses": counts,
            "warnings": run_warnings(result.rows, host),
            "rows": [{k: v for k, v in row.items() if k not in LEFT_OUT} for row in result.rows],
        }
    )
