"""Results on rank 0: one row per (size, implementation, placement) built from every rank's outcome, the
run's log in the shared results store, and what is printed: the tables, a note, errors as one red line."""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dbench.allreduce.data import Verdict
from dbench.allreduce.options import Options
from dbench.store.log import RunLog, new_run_id
from dbench.store.metadata import host_metadata, machine_name

ROWS_NOT_OK = 3  # exit status when any row is not ok (a mismatch), the rule `dbench run` follows too
PIPE_WIDTH = 160  # rich's default 80 columns would wrap the table when stdout is a pipe (as under mpiexec)
CAPTION = ("time: per-rank mean per call, min/mean/max over ranks.  algbw = bytes/time;  busbw = algbw*2(n-1)/n "
           "(nccl-tests);  DeepBench GB/s = bytes*ranks/time (its result sheets).  Bandwidths use the mean time.")


@dataclass(frozen=True)
class Outcome:
    """What one rank measured and checked: its mean seconds per call and its check verdict."""

    seconds: float
    verdict: Verdict


@dataclass(frozen=True)
class Result:
    """A stored row. Times are per-rank means, then min/mean/max over ranks; bandwidths use the mean."""

    elements: int
    bytes: int
    dtype: str
    ranks: int
    implementation: str
    device: str
    in_place: bool
    iters: int
    warmup: int
    time_min_us: float
    time_mean_us: float
    time_max_us: float
    algbw_gbps: float
    busbw_gbps: float
    deepbench_gbps: float
    wrong: int
    hash: str
    hash_agree: bool
    repeat_identical: bool | None
    status: str

    def row(self) -> dict[str, Any]:
        return asdict(self)


def summarize(outcomes: list[Outcome], *, elements: int, itemsize: int, dtype: str, implementation: str,
              device: str, in_place: bool, iters: int, warmup: int) -> Result:
    """Combine the ranks' outcomes: algbw = bytes/time, busbw = algbw*2(n-1)/n (nccl-tests),
    DeepBench's GB/s = bytes*ranks/time (its result sheets); #wrong summed over ranks."""
    ranks, nbytes = len(outcomes), elements * itemsize
    times = [o.seconds for o in outcomes]
    mean = sum(times) / ranks
    digests = {o.verdict.digest for o in outcomes}
    repeats = [o.verdict.repeatable for o in outcomes]
    repeat_identical = None if repeats[0] is None else all(repeats)
    wrong = sum(o.verdict.wrong for o in outcomes)
    ok = wrong == 0 and len(digests) == 1 and repeat_identical is not False
    algbw = nbytes / mean / 1e9
    return Result(
        elements=elements, bytes=nbytes, dtype=dtype, ranks=ranks, implementation=implementation, device=device,
        in_place=in_place, iters=iters, warmup=warmup,
        time_min_us=min(times) * 1e6, time_mean_us=mean * 1e6, time_max_us=max(times) * 1e6,
        algbw_gbps=algbw, busbw_gbps=algbw * 2 * (ranks - 1) / ranks, deepbench_gbps=nbytes * ranks / mean / 1e9,
        wrong=wrong, hash=outcomes[0].verdict.digest, hash_agree=len(digests) == 1,
        repeat_identical=repeat_identical, status="ok" if ok else "mismatch",
    )

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

def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _check(r: Result) -> str:
    if r.status == "ok":
        return "[green]exact[/]"
    problems = ["WRONG"] if r.wrong else []
    problems += [] if r.hash_agree else ["ranks differ"]
    problems += ["not repeatable"] if r.repeat_identical is False else []
    return f"[bold red]{', '.join(problems)}[/]"


def results_table(results: list[Result], library: str) -> Table:
    """One line per (size, implementation, placement)."""
    first = results[0]
    table = Table(title=f"all-reduce sum, {first.dtype}, {first.ranks} ranks, {library}", caption=CAPTION)
    for name in ("elements", "bytes", "impl", "in place", "iters", "min µs", "mean µs", "max µs",
                 "algbw GB/s", "busbw GB/s", "DeepBench GB/s", "#wrong", "check"):
        table.add_column(name, justify="left" if name in ("impl", "check") else "right")
    for r in results:
        table.add_row(str(r.elements), _bytes(r.bytes), f"{r.implementation} ({r.device})",
                      "yes" if r.in_place else "no", str(r.iters),
                      f"{r.time_min_us:.1f}", f"{r.time_mean_us:.1f}", f"{r.time_max_us:.1f}",
                      f"{r.algbw_gbps:.4g}", f"{r.busbw_gbps:.4g}", f"{r.deepbench_gbps:.4g}", str(r.wrong), _check(r))
    return table


def best_table(results: list[Result]) -> Table:
    """Per size, the fastest exact implementation and placement (DeepBench's "best of all implementations")."""
    best: dict[int, Result | None] = {}
    for r in results:
        current = best.setdefault(r.elements, None)
        if r.status == "ok" and (current is None or r.time_mean_us < current.time_mean_us):
            best[r.elements] = r
    table = Table(title="best of all implementations (fastest exact result, by mean time)")
    for name in ("elements", "best", "mean µs", "algbw GB/s", "busbw GB/s", "DeepBench GB/s"):
        table.add_column(name, justify="left" if name == "best" else "right")
    for elements, r in best.items():
        if r is None:
            table.add_row(str(elements), "[bold red]no exact result[/]", "", "", "", "")
            continue
        place = "in place" if r.in_place else "out of place"
        table.add_row(str(r.elements), f"{r.implementation} ({r.device}, {place})", f"{r.time_mean_us:.1f}",
                      f"{r.algbw_gbps:.4g}", f"{r.busbw_gbps:.4g}", f"{r.deepbench_gbps:.4g}")
    return table

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


def console() -> Console:
    """The stdout console, 160 columns wide when stdout is not a terminal and COLUMNS is unset."""
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(width=PIPE_WIDTH if wide else None)


def print_error(message: object) -> None:
    """`error: <message>` on stderr, on one line, no traceback."""
    Console(stderr=True).print(f"[bold red]error:[/] {escape(str(message))}", highlight=False, soft_wrap=True)
