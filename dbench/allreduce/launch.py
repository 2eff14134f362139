"""`dbench allreduce --np N`: start N ranks with the mpiexec of this environment (MPICH or Open MPI,
as root and with more ranks than cores), stream their output, and say which rank failed if one did."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import IO

from dbench.allreduce.options import Arguments, resolve
from dbench.allreduce.rank import (
    INTERRUPTED,
    LAUNCH_FILE,
    MPI_HELP,
    NEED_TWO,
    RankStatus,
    die_with_parent,
    read_statuses,
)
from dbench.errors import DbenchError, InputError, UsageError

MPIEXEC_ENV = "DBENCH_MPIEXEC"  # use this mpiexec instead of the one beside the Python interpreter
OUTPUT_KEEP = 400  # last lines of mpiexec's output kept to find the rank it names
PUMP_GRACE = 5  # seconds to wait for mpiexec's last output once it has ended
MAX_RANKS_PER_CORE = 4
"""--np above this many ranks per core of this host is refused: ranks busy-wait for messages, so such a job
measures the scheduler and may not finish at all (1000 ranks on 2 cores never did)."""
HYDRA_DEATH = re.compile(r"PID (\d+) RUNNING AT (\S+)\s*\n=\s*EXIT CODE: (\d+)")
OPENMPI_DEATH = re.compile(r"process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)")


def find_mpiexec() -> Path:
    """$DBENCH_MPIEXEC, else the mpiexec beside this Python (the `mpi` extra's wheel), else the one on PATH."""
    override = os.environ.get(MPIEXEC_ENV)
    if override:
        if not (Path(override).is_file() and os.access(override, os.X_OK)):
            raise InputError(
                f"mpiexec not found at {override} (from {MPIEXEC_ENV}): {MPI_HELP}, "
                f"or point {MPIEXEC_ENV} at your MPI's mpiexec"
            )
        return Path(override)
    beside = Path(sys.executable).parent / "mpiexec"
    found = beside if beside.is_file() else shutil.which("mpiexec")
    if not found:
        raise InputError(f"no mpiexec beside {sys.executable} or on PATH: {MPI_HELP}")
    return Path(found)


def flavour(mpiexec: Path) -> str:
    """`mpich` (Hydra, also Intel MPI), `openmpi`, or `unknown`, from `mpiexec --version`."""
    try:
        done = subprocess.run([str(mpiexec), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as error:
        raise DbenchError(f"cannot run {mpiexec} --version ({error}): {MPI_HELP}") from None
    text = done.stdout + done.stderr
    if "Open MPI" in text or "OpenRTE" in text or "open-mpi.org" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text:
        return "mpich"
    return "unknown"


def launcher_flags(kind: str, as_root: bool) -> list[str]:
    """Open MPI refuses root and more ranks than cores unless told; Hydra (MPICH) allows both by default."""
    if kind != "openmpi":
        return []
    return ["--oversubscribe"] + (["--allow-run-as-root"] if as_root else [])


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    if sys.stdout.isatty():  # rank 0's stdout is a pipe under mpiexec: keep the terminal's colours and width
        env.setdefault("FORCE_COLOR", "1")
        env.setdefault("COLUMNS", str(shutil.get_terminal_size().columns))
    return env


def _pump(source: IO[str], sink: IO[str], tail: deque[str]) -> None:
    for line in source:
        sink.write(line)
        sink.flush()
        tail.append(line)


class Interrupted(DbenchError):
    """Ctrl-C in the launcher: mpiexec and its ranks are stopped; exit code 130 like `dbench run`."""

    exit_code = INTERRUPTED


def _start(command: list[str]) -> subprocess.Popen:
    """mpiexec in a session of its own (so Ctrl-C reaches only the launcher, which ends the job itself),
    SIGKILLed by Linux if the launcher dies first (PR_SET_PDEATHSIG, set before exec); Hydra's proxy then
    kills the ranks, which also die with the proxy (see rank.die_with_parent)."""
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_child_env(),
        start_new_session=True,
        preexec_fn=functools.partial(die_with_parent, os.getpid()),
    )


def _end(job: subprocess.Popen, pumps: list[threading.Thread]) -> None:
    """Kill mpiexec's process group unless mpiexec has exited (checked before it is reaped, so the group id
    cannot belong to another process yet), reap it and let its last output through."""
    if job.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    for pump in pumps:
        pump.join(PUMP_GRACE)


def _run_job(command: list[str], out: Path) -> tuple[int, str]:
    """Run mpiexec, echoing its stdout and stderr live, and end it on every way out (Ctrl-C, an exception);
    return its exit code and the tail of both (Hydra reports a killed rank on stdout, Open MPI on stderr)."""
    tails: tuple[deque[str], deque[str]] = (deque(maxlen=OUTPUT_KEEP), deque(maxlen=OUTPUT_KEEP))
    job = _start(command)
    pumps = [
        threading.Thread(target=_pump, args=(job.stdout, sys.stdout, tails[0]), daemon=True),
        threading.Thread(target=_pump, args=(job.stderr, sys.stderr, tails[1]), daemon=True),
    ]
    try:
        for pump in pumps:
            pump.start()
        code = job.wait()
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted; mpiexec and its ranks were stopped (rows measured so far are in the run's log under {out})"
        ) from None
    finally:
        _end(job, pumps)
    return code, "".join(tails[0]) + "".join(tails[1])


def _named_deaths(statuses: dict[int, RankStatus], output: str) -> list[str]:
    """Ranks that mpiexec says died (Hydra names the pid, Open MPI the rank), as `rank R (pid P on H): how`."""
    by_pid = {s.pid: s.rank for s in statuses.values()}
    deaths = [
        f"rank {by_pid[int(pid)]} (pid {pid} on {host}) died with exit code {code}"
        for pid, host, code in HYDRA_DEATH.findall(output)
        if int(pid) in by_pid
    ]
    deaths += [
        f"rank {rank} (pid {pid} on {host}) was killed by signal {sig}"
        for rank, pid, host, sig in OPENMPI_DEATH.findall(output)
    ]
    return deaths


def verdict(statuses: dict[int, RankStatus], ranks: int, returncode: int, output: str) -> int:
    """The run's exit code from the ranks' status files, or an error naming the rank that failed."""
    failed = [s for s in statuses.values() if s.state == "failed"]
    if failed:
        named = "; ".join(f"rank {s.rank} (pid {s.pid} on {s.host}) failed: {s.error}" for s in failed)
        raise DbenchError(f"{named}; the whole job was aborted (traceback above)")
    unfinished = [r for r in range(ranks) if r not in statuses or statuses[r].state != "done"]
    if unfinished:
        deaths = _named_deaths(statuses, output)
        if deaths and len(unfinished) == 1:
            raise DbenchError(f"{deaths[0]}; mpiexec ended the job")
        if deaths:
            # When one rank is killed, mpiexec kills the others with the same signal and may report any
            # of them first: name what it reported and every rank that did not finish, claim no cause.
            raise DbenchError(
                f"mpiexec reported: {'; '.join(deaths)}; ranks {', '.join(map(str, unfinished))} did not finish "
                "(the first rank mpiexec reports is not necessarily the one that died first)"
            )
        raise DbenchError(
            f"ranks {', '.join(map(str, unfinished))} did not finish (mpiexec exit code {returncode}); "
            "see the messages above"
        )
    if returncode != 0:
        raise DbenchError(f"mpiexec exited with code {returncode} although every rank finished; see its messages above")
    return max(s.code for s in statuses.values())


def check_rank_count(ranks: int) -> None:
    """Refuse more ranks than MAX_RANKS_PER_CORE per core this process may use: --np starts every rank here."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if ranks > MAX_RANKS_PER_CORE * cores:
        raise UsageError(
            f"--np {ranks} puts more than {MAX_RANKS_PER_CORE} ranks on each of this host's {cores} cores, "
            f"where busy-waiting ranks measure the scheduler and may never finish; use --np "
            f"{MAX_RANKS_PER_CORE * cores} or fewer, or start ranks across hosts with mpiexec or srun"
        )


def launch(ranks: int, args: Arguments, command: list[str]) -> int:
    """Validate, then run `mpiexec -n ranks python -m mpi4py -m dbench.allreduce ...` and judge the outcome."""
    if ranks < 2:
        raise UsageError(NEED_TWO)
    check_rank_count(ranks)
    resolve(args)
    if importlib.util.find_spec("mpi4py") is None:
        raise InputError(f"mpi4py is not installed in this environment: {MPI_HELP}")
    mpiexec = find_mpiexec()
    flags = launcher_flags(flavour(mpiexec), os.geteuid() == 0)
    with tempfile.TemporaryDirectory(prefix="dbench-allreduce-") as folder:
        job = [
            str(mpiexec),
            *flags,
            "-n",
            str(ranks),
            sys.executable,
            "-m",
            "mpi4py",
            "-m",
            "dbench.allreduce",
            *args.to_argv(),
            "--status-dir",
            folder,
        ]
        (Path(folder) / LAUNCH_FILE).write_text(json.dumps({"command": command, "mpiexec": job}))
        returncode, output = _run_job(job, args.out)
        return verdict(read_statuses(Path(folder)), ranks, returncode, output)
