"""A finished run as Parquet and CSV beside its JSONL log (nested fields flattened to columns)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dbench.store.derived import with_derived
from dbench.errors import DbenchError
from dbench.store.log import RunLog, resume_command

INT64_LIMIT = 2**63


def rows_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows as a flat table: nested dicts become dotted columns, lists become JSON strings."""
    frame = pd.json_normalize(rows, sep=".")
    for column in frame.columns:  # FLOP counts of huge user kernels pass int64: Parquet takes them as floats
        if frame[column].map(lambda v: isinstance(v, int) and not -INT64_LIMIT <= v < INT64_LIMIT).any():
            frame[column] = frame[column].astype(float)
    for column in frame.columns:
        if frame[column].map(lambda v: isinstance(v, (list, dict))).any():
            frame[column] = frame[column].map(lambda v: json.dumps(v, default=str) if isinstance(v, (list, dict)) else v)
    return frame


def export_run(log: RunLog) -> tuple[Path, Path]:
    """Write `<run>.parquet` and `<run>.csv` (with derived columns); returns their paths."""
    frame = rows_frame(with_derived(log.rows()))
    csv, parquet = log.path.with_suffix(".csv"), log.path.with_suffix(".parquet")
    try:
        frame.to_csv(csv, index=False)
        frame.to_parquet(parquet, index=False)
    except OSError as err:
        raise DbenchError(f"cannot write {err.filename or log.path.parent}: {err.strerror}; every row is in {log.path}, "
                          f"export it again with: {resume_command(log.path)}") from None
    return parquet, csv
