"""A finished run as CSV (always) and Parquet (where pyarrow is installed) beside its JSONL log, nested
fields flattened to dotted columns. Neither pandas nor pyarrow is needed on a board: CSV is written
with the standard library, and Parquet is skipped there with a one-line note."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from dbench.errors import DbenchError
from dbench.store.derived import with_derived
from dbench.store.log import RunLog, resume_command

INT64_LIMIT = 2**63
LIST_COLUMNS = ("samples_us",)
"""Kept as list columns in Parquet (JSON strings in CSV)."""
PARQUET_SKIPPED = (
    "Parquet not written: pyarrow is not installed (pip install 'dbench[parquet]'); the .jsonl and .csv hold every row"
)


def flat_row(row: dict[str, Any], keep_lists: bool = False, prefix: str = "") -> dict[str, Any]:
    """Nested dicts become dotted columns (`runtime_options.threads`; an empty one, none), lists
    become JSON strings (except LIST_COLUMNS when `keep_lists`, for Parquet): the columns
    pandas.json_normalize made before."""
    flat: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flat_row(value, keep_lists, name + "."))
        elif isinstance(value, list) and not (keep_lists and name in LIST_COLUMNS):
            flat[name] = json.dumps(value, default=str)
        else:
            flat[name] = value
    return flat


def columns_of(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Flat rows as columns: every column any row has, in order of first appearance (None where
    absent). A column holding an integer beyond int64 (FLOP counts of huge user kernels) becomes
    floats, which Parquet can store."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    columns = {name: [row.get(name) for row in rows] for name in names}
    for name, values in columns.items():
        if any(isinstance(v, int) and not isinstance(v, bool) and not -INT64_LIMIT <= v < INT64_LIMIT for v in values):
            columns[name] = [float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values]
    return columns


def write_csv(columns: dict[str, list[Any]], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(zip(*columns.values()))


def write_parquet(columns: dict[str, list[Any]], path: Path) -> bool:
    """Write the columns as Parquet; False (nothing written) where pyarrow is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    pq.write_table(pa.table(columns), path)
    return True


def export_run(log: RunLog) -> tuple[list[Path], str]:
    """Write `<run>.csv` and, with pyarrow, `<run>.parquet` (derived columns included); returns the
    files written and a note ("" or why Parquet was skipped). A write failure is one line naming
    the file and the command that exports the run again."""
    rows = with_derived(log.rows())
    csv_path, parquet = log.path.with_suffix(".csv"), log.path.with_suffix(".parquet")
    try:
        write_csv(columns_of([flat_row(row) for row in rows]), csv_path)
        if not write_parquet(columns_of([flat_row(row, keep_lists=True) for row in rows]), parquet):
            return [csv_path], PARQUET_SKIPPED
    except OSError as err:
        raise DbenchError(
            f"cannot write {err.filename or log.path.parent}: {err.strerror}; every row is in {log.path}, "
            f"export it again with: {resume_command(log.path)}"
        ) from None
    return [parquet, csv_path], ""
