"""The benchmark's entry: launcher (`--np N`) or one rank of a running MPI job; user errors as one line."""

from __future__ import annotations

import sys
from pathlib import Path

from dbench.allreduce.options import Arguments
from dbench.allreduce.output import print_error
from dbench.errors import DbenchError


def run(ranks: int | None, args: Arguments, status_dir: Path | None = None) -> int:
    """With `ranks`, start that many ranks with mpiexec; without, be one rank of the current MPI job.
    Returns the exit code."""
    from dbench.allreduce.launch import launch
    from dbench.allreduce.rank import run_ranks

    try:
        if ranks is not None:
            return launch(ranks, args, sys.argv)
        return run_ranks(args, status_dir)
    except DbenchError as error:
        print_error(error)
        return error.exit_code
