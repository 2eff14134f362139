"""A finished run as Parquet and CSV beside its JSONL log (nested fields flattened to columns)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dbench.store.derived import with_derived
from dbench.errors import DbenchError
from dbench.store.log import RunLog, resume_command

INT64_LIMIT = 2**63


LIST_COLUMNS = ("samples_us",)
"""Kept as list columns in Parquet (JSON strings in CSV)."""


def rows_frame(rows: list[dict], keep_lists: bool = False) -> pd.DataFrame:
    """Rows as a flat table: nested dicts become dotted columns, lists become JSON strings (except
    LIST_COLUMNS when `keep_lists`, for Parquet)."""
    frame = pd.json_normalize(rows, sep=".")
    for column in frame.columns:  # FLOP counts of huge user kernels pass int64: Parquet takes them as floats
        if frame[column].map(lambda v: isinstance(v, int) and not -INT64_LIMIT <= v < INT64_LIMIT).any():
            frame[column] = frame[column].astype(float)
    for column in frame.columns:
        if keep_lists and column in LIST_COLUMNS:
            continue
        if frame[column].map(lambda v: isinstance(v, (list, dict))).any():
            frame[column] = frame[column].map(lambda v: json.dumps(v, default=str) if isinstance(v, (list, dict)) else v)
    return frame


def export_run(log: RunLog) -> tuple[Path, Path]:
    """Write `<run>.parquet` and `<run>.csv` (with derived columns); returns their paths."""
    rows = with_derived(log.rows())
    csv, parquet = log.path.with_suffix(".csv"), log.path.with_suffix(".parquet")
    try:
        rows_frame(rows).to_csv(csv, index=False)
        rows_frame(rows, keep_lists=True).to_parquet(parquet, index=False)
    except OSError as err:
        raise DbenchError(f"cannot write {err.filename or log.path.parent}: {err.strerror}; every row is in {log.path}, "
                          f"export it again with: {resume_command(log.path)}") from None
    return parquet, csv
