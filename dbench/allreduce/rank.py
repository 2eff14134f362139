"""One rank of the benchmark, under any MPI launcher: set up together, measure and check every (size,
implementation, placement), and on rank 0 store the rows and print the tables."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from dbench.allreduce.check import check
from dbench.allreduce.collective import AgreedError, together
from dbench.allreduce.data import expected_pattern, fill, rank_pattern
from dbench.allreduce.devices import Device, Gpu, Host
from dbench.allreduce.implementations import Implementation, implementation, require
from dbench.allreduce.measure import time_calls
from dbench.allreduce.memory import check_fits
from dbench.allreduce.options import Arguments, Options, resolve
from dbench.allreduce.output import console, print_error
from dbench.allreduce.record import mpi_info, open_log
from dbench.allreduce.results import Outcome, Result, summarize
from dbench.allreduce.sizes import Size
from dbench.allreduce.status import read_launch, write_status
from dbench.allreduce.table import best_table, results_table
from dbench.errors import DbenchError, UsageError

MPI_HELP = "pip install 'dbench[mpi]'"
NEED_TWO = "all-reduce needs at least two ranks: use --np 2 (or more), or start it with mpiexec -n 2 (or more)"
SINGLETONS = ("mpiexec started ranks that each see a world of one: mpi4py's MPI library is not the one of this "
              "mpiexec; set DBENCH_MPIEXEC to the mpiexec of mpi4py's MPI")
FAIL_ENV = "DBENCH_ALLREDUCE_FAIL_RANK"  # testing: "R" makes rank R raise, "R:kill" makes it SIGKILL itself


def import_mpi() -> Any:
    """mpi4py's MPI module (initialises MPI), or a one-line error saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise DbenchError(f"mpi4py is not installed: {MPI_HELP}") from None
    return MPI


def fail_if_asked(rank: int) -> None:
    """Die on purpose when FAIL_ENV names this rank, so tests can check that the job ends and who is named."""
    target, _, how = os.environ.get(FAIL_ENV, "").partition(":")
    if target == str(rank):
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError(f"rank {rank} failed on purpose ({FAIL_ENV}={os.environ[FAIL_ENV]})")


def run_ranks(args: Arguments, status_dir: Path | None) -> int:
    """This rank's part of the run; returns the exit code (0 when the launcher reads it from `status_dir`).
    An unexpected exception aborts the whole job (MPI_Abort) instead of leaving the other ranks waiting."""
    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    write_status(status_dir, comm.rank, "running")
    try:
        code = _run(MPI, comm, args, status_dir)
    except AgreedError as error:
        if comm.rank == 0:
            print_error(error)
        code = error.exit_code
    except BaseException as error:
        first_line = (str(error).splitlines() or [""])[0]
        write_status(status_dir, comm.rank, "failed", 1, f"{type(error).__name__}: {first_line}")
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)
        os._exit(1)  # MPI_Abort may return while the job is already being torn down by another rank's abort
    write_status(status_dir, comm.rank, "done", code)
    return 0 if status_dir is not None else code


def _devices(options: Options, local_rank: int) -> dict[str, Device]:
    devices: dict[str, Device] = {"cpu": Host()}
    if options.device == "gpu" or "nccl" in options.implementations:
        devices["gpu"] = Gpu(local_rank, "--device gpu" if options.device == "gpu" else "nccl")
    return devices


def _run(MPI: Any, comm: Any, args: Arguments, status_dir: Path | None) -> int:
    options = together(comm, lambda: resolve(args))
    if comm.size < 2 and status_dir is not None:  # the launcher asked for 2 or more: each rank is alone
        raise AgreedError(SINGLETONS, 1)
    if comm.size < 2:
        raise AgreedError(NEED_TWO, UsageError.exit_code)
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    devices = together(comm, lambda: _devices(options, local.rank))
    chosen = [(name, devices["gpu" if name == "nccl" else options.device]) for name in options.implementations]
    together(comm, lambda: [require(name, device) for name, device in chosen])
    impls = [implementation(name, comm, device) for name, device in chosen]
    largest = max(s.elements for s in options.sizes)
    together(comm, lambda: check_fits(largest, options.itemsize, impls, devices, local.size))
    expected = together(comm, lambda: expected_pattern(comm.size, options.dtype))
    values = rank_pattern(comm.rank, options.dtype)
    hostnames = comm.gather(MPI.Get_processor_name(), root=0)
    mpi = mpi_info()
    log = together(comm, lambda: open_log(options, mpi, hostnames, read_launch(status_dir)) if comm.rank == 0 else None)
    fail_if_asked(comm.rank)
    results: list[Result] = []
    for size in options.sizes:
        for impl in impls:
            for result in _measure_size(comm, impl, size, options, values, expected):
                log.append(result.row())
                results.append(result)
    crowded = local.size > (os.cpu_count() or local.size)
    message = report(log, results, mpi["library"], crowded) if comm.rank == 0 else None
    message = comm.bcast(message, root=0)
    if message:
        raise AgreedError(message, 1)
    return 0


def _measure_size(comm: Any, impl: Implementation, size: Size, options: Options, values: Any,
                  expected: Any) -> list[Result]:
    """Time and check one size on one implementation, out of place then in place; rows on rank 0 only."""
    xp, n, dtype = impl.device.xp, size.elements, options.dtype
    values, expected = xp.asarray(values), xp.asarray(expected)
    send, recv = xp.empty(n, dtype=dtype), xp.empty(n, dtype=dtype)
    impl.prepare(n, dtype)
    iters, warmup = options.iterations(size), options.warmup_calls(size)
    rows = []
    fill(send, values)
    for in_place in (False, True):
        recv.fill(0)  # in place, the timed calls sum their own output again and again: zeros cannot overflow
        seconds = time_calls(comm, impl, None if in_place else send, recv, warmup, iters)
        verdict = check(impl, impl.device, send, recv, in_place, values, expected, options.check_repeat)
        outcomes = comm.gather(Outcome(seconds, verdict), root=0)
        if comm.rank == 0:
            rows.append(summarize(outcomes, elements=n, itemsize=options.itemsize, dtype=dtype,
                                  implementation=impl.name, device=impl.device.name, in_place=in_place,
                                  iters=iters, warmup=warmup))
    return rows


def report(log: Any, results: list[Result], library: str, crowded: bool = False) -> str | None:
    """Rank 0: export the run, print the tables, and say what failed the checks (None when all exact).
    `crowded`: more ranks than cores on this host, which inflates times (ranks busy-wait)."""
    from dbench.store.export import export_run

    parquet, csv = export_run(log)
    log.close()  # release the run log's lock: nothing more is appended
    out = console()
    out.print(results_table(results, library))
    out.print(best_table(results))
    if crowded:
        out.print("[yellow]note:[/] more ranks than cores on this host: ranks busy-wait for messages, so times "
                  "include waiting for the OS scheduler", highlight=False)
    out.print(f"results: {log.path} (+ {parquet.suffix}, {csv.suffix})", highlight=False)
    bad = [r for r in results if r.status != "ok"]
    if not bad:
        return None
    return (f"{len(bad)} of {len(results)} results are not exact (see the check column), e.g. "
            f"{bad[0].implementation} at {bad[0].elements} elements: {bad[0].wrong} wrong")
