"""Shared fixtures of the report tests: real quick runs on ORT CPU and OpenVINO, and hand-written
logs for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.store.log import SCHEMA_VERSION, RunLog
from tests.helpers import write_csv

KERNELS = ("m,n,k,a_t,b_t", "64,1,128,0,0", "96,16,64,0,0", "128,32,128,1,0")
QUICK_UNCAPPED = ("--min-time", "0.05", "--max-time", "0.5", "--warmup", "0")
"""--quick's sampling without its round cost cap, which a slow first OpenVINO compile on a busy machine
can hit, leaving a tiny graph fewer rounds than the tests below read."""


def run_both(folder: Path) -> Path:
    """Quick runs of three tiny GEMMs on ort-cpu and on openvino into `folder`/res."""
    kernels = write_csv(folder / "k.csv", *KERNELS)
    out = folder / "res"
    for runtime in ("ort-cpu", "openvino"):
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--runtime",
                runtime,
                "--kernels",
                str(kernels),
                *QUICK_UNCAPPED,
                "--profile-runs",
                "2",
                "--threads",
                "1",
                "--out",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def two_runtimes(tmp_path_factory) -> Path:
    return run_both(tmp_path_factory.mktemp("runs"))


def fake_log(folder: Path, run_id: str, host: dict, rows: list[dict], schema: int | None = None) -> Path:
    """A log written through RunLog (optionally with another schema version in its header)."""
    with RunLog.create(
        folder,
        run_id,
        {"kind": "kernels", "runtime": {"name": rows[0]["runtime"] if rows else "ort-cpu"}, "host": host},
    ) as log:
        for row in rows:
            log.append(row)
    if schema is not None:
        text = log.path.read_text().replace(f'"schema_version": {SCHEMA_VERSION}', f'"schema_version": {schema}', 1)
        log.path.write_text(text)
    return log.path
