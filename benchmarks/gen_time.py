"""How long `dbench gen` takes for the `all` suite's GEMM and convolution graphs, per precision.

As a user runs it: a fresh process per precision, graphs written to disk. Prints graph counts, seconds
and the size on disk.

    .venv/bin/python benchmarks/gen_time.py

Its figures go to a dated page under docs/measurements/ (the last: 2026-11-21-generation-time.md);
docs/benchmarks.md lists every benchmark."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    print(f"{'precision':<10}{'graphs':>8}{'seconds':>10}{'MB on disk':>12}")
    for precision in ("fp32", "fp16", "bf16"):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "dbench",
                    "gen",
                    "--suite",
                    "all",
                    "--ops",
                    "gemm,conv",
                    "--precision",
                    precision,
                    "--out",
                    out,
                ],
                check=True,
                capture_output=True,
            )
            seconds = time.perf_counter() - start
            files = list(Path(out, "all").glob("*.onnx"))
            size = sum(f.stat().st_size for f in Path(out, "all").iterdir()) / 1e6
            print(f"{precision:<10}{len(files):>8}{seconds:>10.2f}{size:>12.2f}")


if __name__ == "__main__":
    main()
