"""One rank of the benchmark, under any MPI launcher: set up together, time and check every (size,
implementation, placement), report its state to the launcher in a status file, and on rank 0 store the
rows and print the tables. mpi4py is imported only when a rank runs."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from dbench.allreduce.data import Verdict, check, expected_pattern, fill, rank_pattern
from dbench.allreduce.devices import Device, Gpu, Host
from dbench.allreduce.fits import check_fits
from dbench.allreduce.implementations import Implementation, implementation, require
from dbench.allreduce.options import Arguments, Options, Size, resolve
from dbench.allreduce.results import ROWS_NOT_OK, Outcome, Result, mpi_info, open_log, print_error, report, summarize
from dbench.errors import DbenchError, InputError, UsageError

T = TypeVar("T")
LAUNCH_FILE = "launch.json"
MPI_HELP = "pip install 'dbench[mpi]'"
NEED_TWO = "all-reduce needs at least two ranks: use --np 2 (or more), or start it with mpiexec -n 2 (or more)"
SINGLETONS = (
    "mpiexec started ranks that each see a world of one: mpi4py's MPI library is not the one of this "
    "mpiexec; set DBENCH_MPIEXEC to the mpiexec of mpi4py's MPI"
)
FAIL_ENV = "DBENCH_ALLREDUCE_FAIL_RANK"  # testing: "R" makes rank R raise, "R:kill" SIGKILL itself, "R:wrong" miscount
INTERRUPTED = 130  # exit code after Ctrl-C, as `dbench run`
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int) -> None:
    """Have Linux SIGKILL this process when its parent dies (PR_SET_PDEATHSIG, kept across exec), and exit
    now if `parent` is already gone; nothing elsewhere than Linux. The launcher sets it in mpiexec before
    exec, each rank for the MPI process that started it (Hydra's proxy), so no rank outlives its job."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def import_mpi() -> Any:
    """mpi4py's MPI module (initialises MPI), or a one-line error saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise InputError(f"mpi4py is not installed: {MPI_HELP}") from None
    return MPI


def _asked(rank: int) -> str | None:
    """What FAIL_ENV asks of this rank ("" to raise, "kill", "wrong"), None when it does not name it."""
    target, _, how = os.environ.get(FAIL_ENV, "").partition(":")
    return how if target == str(rank) else None


def fail_if_asked(rank: int) -> None:
    """Die on purpose when FAIL_ENV names this rank, so tests can check that the job ends and who is named."""
    how = _asked(rank)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "":
        raise RuntimeError(f"rank {rank} failed on purpose ({FAIL_ENV}={os.environ[FAIL_ENV]})")


def miscount_if_asked(rank: int, verdict: Verdict) -> Verdict:
    """One more wrong element under FAIL_ENV "R:wrong" on rank R, so tests reach a mismatch row and its exit."""
    return replace(verdict, wrong=verdict.wrong + 1) if _asked(rank) == "wrong" else verdict


def run_ranks(args: Arguments, status_dir: Path | None) -> int:
    """This rank's part of the run; returns the exit code (0 when the launcher reads it from `status_dir`).
    An unexpected exception aborts the whole job (MPI_Abort) instead of leaving the other ranks waiting;
    Ctrl-C (a plain mpiexec forwards it to every rank) ends this rank quietly with exit code 130."""
    die_with_parent(os.getppid())
    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    write_status(status_dir, comm.rank, "running")
    try:
        code = _run(MPI, comm, args, status_dir)
    except AgreedError as error:
        if comm.rank == 0:
            print_error(error)
        code = error.exit_code
    except KeyboardInterrupt:  # quietly: mpiexec says it forwarded Ctrl-C, and kills the ranks that end later
        write_status(status_dir, comm.rank, "interrupted", INTERRUPTED)
        os._exit(INTERRUPTED)  # not MPI_Finalize: the other ranks may be gone already
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
    together(comm, lambda: [require(name, device, local.size) for name, device in chosen])
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
        raise AgreedError(message, ROWS_NOT_OK)
    return 0


def _measure_size(
    comm: Any, impl: Implementation, size: Size, options: Options, values: Any, expected: Any
) -> list[Result]:
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
        verdict = miscount_if_asked(comm.rank, verdict)
        outcomes = comm.gather(Outcome(seconds, verdict), root=0)
        if comm.rank == 0:
            rows.append(
                summarize(
                    outcomes,
                    elements=n,
                    itemsize=options.itemsize,
                    dtype=dtype,
                    implementation=impl.name,
                    device=impl.device.name,
                    in_place=in_place,
                    iters=iters,
                    warmup=warmup,
                )
            )
    return rows


class AgreedError(DbenchError):
    """A user-facing error every rank raises together; rank 0 prints it once."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def together(comm: Any, action: Callable[[], T]) -> T:
    """Run `action` on every rank; if it raised a DbenchError on any rank, raise the first one everywhere."""
    try:
        result, problem = action(), None
    except DbenchError as error:
        result, problem = None, (str(error), error.exit_code)
    problems = [p for p in comm.allgather(problem) if p is not None]
    if problems:
        raise AgreedError(*problems[0])
    return result  # type: ignore[return-value]


def time_calls(comm: Any, impl: Implementation, send: Any | None, recv: Any, warmup: int, iters: int) -> float:
    """This rank's mean seconds per call over `iters` back-to-back calls (MPI_Wtime), after `warmup` calls
    and a barrier so every rank starts the block together."""
    from mpi4py import MPI

    for _ in range(warmup):
        impl.run(send, recv)
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iters):
        impl.run(send, recv)
    return (MPI.Wtime() - start) / iters


@dataclass(frozen=True)
class RankStatus:
    """One rank's state: running (started, not finished), done (with its exit code) or failed (crashed)."""

    rank: int
    pid: int
    host: str
    state: str
    code: int = 0
    error: str = ""


def write_status(folder: Path | None, rank: int, state: str, code: int = 0, error: str = "") -> None:
    """Atomically (re)write rank `rank`'s status file in `folder`; no-op when not started by the launcher."""
    if folder is None:
        return
    status = RankStatus(rank, os.getpid(), socket.gethostname(), state, code, error)
    path = folder / f"rank-{rank}.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(asdict(status)))
    os.replace(temporary, path)


def read_statuses(folder: Path) -> dict[int, RankStatus]:
    """Every status file in `folder`, by rank."""
    statuses = [RankStatus(**json.loads(p.read_text())) for p in folder.glob("rank-*.json")]
    return {s.rank: s for s in statuses}


def read_launch(folder: Path | None) -> dict:
    """What the launcher recorded about itself (its command line, the mpiexec command), if anything."""
    if folder is None or not (folder / LAUNCH_FILE).exists():
        return {}
    return json.loads((folder / LAUNCH_FILE).read_text())
