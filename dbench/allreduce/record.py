"""The run's log in the shared results store: header (host, MPI library, hostnames, options, command)
and one row per result, appended on rank 0 as each is measured."""

from __future__ import annotations

import sys
from typing import Any

from dbench.allreduce.options import Options
from dbench.store.log import RunLog, new_run_id
from dbench.store.metadata import host_metadata, machine_name


def mpi_info() -> dict[str, Any]:
    """The MPI library (vendor, version, full version text), the MPI standard and mpi4py's version."""
    import mpi4py
    from mpi4py import MPI

    vendor, numbers = MPI.get_vendor()
    version = ".".join(map(str, numbers))
    return {"library": f"{vendor} {version}", "vendor": vendor, "vendor_version": version,
            "library_version": MPI.Get_library_version().strip(), "standard": "{}.{}".format(*MPI.Get_version()),
            "mpi4py": mpi4py.__version__}


def open_log(options: Options, mpi: dict[str, Any], hostnames: list[str], launch: dict[str, Any]) -> RunLog:
    """Create `<out>/<machine>/allreduce-<time>-<id>.jsonl` with the run header."""
    header = {"kind": "allreduce", "host": host_metadata(), "mpi": mpi, "ranks": len(hostnames),
              "hostnames": hostnames, "options": options.record(), "command": launch.get("command", sys.argv),
              "mpiexec": launch.get("mpiexec")}
    return RunLog.create(folder=options.out / machine_name(), run_id=new_run_id("allreduce"), header=header)
