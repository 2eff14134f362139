"""Results on rank 0: one row per (size, implementation, placement) built from every rank's outcome, the
run's log in the shared results store, and what is printed: the tables, a note, errors as one red line."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dbench.allreduce.data import Verdict
from dbench.allreduce.options import Options
from dbench.store.log import RunLog, new_run_id
from dbench.store.metadata import host_metadata, machine_name
from dbench.terminal import console

ROWS_NOT_OK = 3  # exit status when any row is not ok (a mismatch), the rule `dbench run` follows too
CAPTION = (
    "time: per-rank mean per call, mean over ranks (min and max over ranks are in the CSV).  GB/s: algbw = "
    "bytes/time; busbw = algbw*2(n-1)/n (nccl-tests); DeepBench GB/s = bytes*ranks/time (its result sheets, "
    "in the table below)"
)


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


def summarize(
    outcomes: list[Outcome],
    *,
    elements: int,
    itemsize: int,
    dtype: str,
    implementation: str,
    device: str,
    in_place: bool,
    iters: int,
    warmup: int,
) -> Result:
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
        elements=elements,
        bytes=nbytes,
        dtype=dtype,
        ranks=ranks,
        implementation=implementation,
        device=device,
        in_place=in_place,
        iters=iters,
        warmup=warmup,
        time_min_us=min(times) * 1e6,
        time_mean_us=mean * 1e6,
        time_max_us=max(times) * 1e6,
        algbw_gbps=algbw,
        busbw_gbps=algbw * 2 * (ranks - 1) / ranks,
        deepbench_gbps=nbytes * ranks / mean / 1e9,
        wrong=wrong,
        hash=outcomes[0].verdict.digest,
        hash_agree=len(digests) == 1,
        repeat_identical=repeat_identical,
        status="ok" if ok else "mismatch",
    )


def mpi_info() -> dict[str, Any]:
    """The MPI library (vendor, version, full version text), the MPI standard and mpi4py's version."""
    import mpi4py
    from mpi4py import MPI

    vendor, numbers = MPI.get_vendor()
    version = ".".join(map(str, numbers))
    return {
        "library": f"{vendor} {version}",
        "vendor": vendor,
        "vendor_version": version,
        "library_version": MPI.Get_library_version().strip(),
        "standard": "{}.{}".format(*MPI.Get_version()),
        "mpi4py": mpi4py.__version__,
    }


def open_log(options: Options, mpi: dict[str, Any], hostnames: list[str], launch: dict[str, Any]) -> RunLog:
    """Create `<out>/<machine>/allreduce-<time>-<id>.jsonl` with the run header."""
    header = {
        "kind": "allreduce",
        "host": host_metadata(),
        "mpi": mpi,
        "ranks": len(hostnames),
        "hostnames": hostnames,
        "options": options.record(),
        "command": launch.get("command", sys.argv),
        "mpiexec": launch.get("mpiexec"),
    }
    return RunLog.create(folder=options.out / machine_name(), run_id=new_run_id("allreduce"), header=header)


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _problems(r: Result) -> list[str]:
    problems = ["WRONG"] if r.wrong else []
    problems += [] if r.hash_agree else ["ranks differ"]
    return problems + (["not repeatable"] if r.repeat_identical is False else [])


def _check(placements: dict[bool, Result]) -> str:
    """`exact`, or what failed, by placement."""
    bad = [(in_place, r) for in_place, r in placements.items() if r.status != "ok"]
    if not bad:
        return "[green]exact[/]"
    return (
        "[bold red]"
        + "; ".join(f"{'in' if in_place else 'out of'} place: {', '.join(_problems(r))}" for in_place, r in bad)
        + "[/]"
    )


def _side(r: Result | None) -> list[str]:
    """One placement's cells: mean time, algbw, busbw, #wrong (blank when it did not run)."""
    if r is None:
        return ["", "", "", ""]
    return [f"{r.time_mean_us:.1f}", f"{r.algbw_gbps:.3g}", f"{r.busbw_gbps:.3g}", str(r.wrong)]


def by_size(results: list[Result]) -> dict[tuple[int, str, str], dict[bool, Result]]:
    """(elements, implementation, device) -> {in_place: row}, in the order measured."""
    grouped: dict[tuple[int, str, str], dict[bool, Result]] = {}
    for r in results:
        grouped.setdefault((r.elements, r.implementation, r.device), {})[r.in_place] = r
    return grouped


def results_table(results: list[Result], library: str) -> Table:
    """One line per (size, implementation): out of place and in place side by side, as nccl-tests prints
    them; the buffers' device in the title when every row shares it."""
    first = results[0]
    devices = {r.device for r in results}
    where = f", {first.device} buffers" if len(devices) == 1 else ""
    table = Table(
        title=f"all-reduce sum, {first.dtype}, {first.ranks} ranks, {library}{where}",
        caption=CAPTION,
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        pad_edge=False,
        show_edge=False,
    )
    for name in ("elements", "bytes", "impl", "iters"):
        table.add_column(f"\n{name}", justify="left" if name == "impl" else "right", no_wrap=True)
    for place in ("out of place", "in place"):
        for i, name in enumerate(("time µs", "algbw", "busbw", "#wrong")):
            table.add_column(f"{place if i == 0 else ''}\n{name}", justify="right", no_wrap=True)
    table.add_column("\ncheck", no_wrap=True)
    for (elements, implementation, device), placements in by_size(results).items():
        any_row = next(iter(placements.values()))
        impl = implementation if len(devices) == 1 else f"{implementation} ({device})"
        table.add_row(
            str(elements),
            _bytes(any_row.bytes),
            impl,
            str(any_row.iters),
            *_side(placements.get(False)),
            *_side(placements.get(True)),
            _check(placements),
        )
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
        table.add_row(
            str(r.elements),
            f"{r.implementation} ({r.device}, {place})",
            f"{r.time_mean_us:.1f}",
            f"{r.algbw_gbps:.4g}",
            f"{r.busbw_gbps:.4g}",
            f"{r.deepbench_gbps:.4g}",
        )
    return table


def report(log: Any, results: list[Result], library: str, crowded: bool = False) -> str | None:
    """Rank 0: export the run, print the tables, and say what failed the checks (None when all exact).
    `crowded`: more ranks than cores on this host, which inflates times (ranks busy-wait)."""
    from dbench.store.export import export_run

    written, note = export_run(log)
    log.close()  # release the run log's lock: nothing more is appended
    out = console()  # COLUMNS, else the terminal's width, else dbench.terminal.PIPE_WIDTH
    out.print(results_table(results, library))
    out.print(best_table(results))
    if crowded:
        out.print(
            "[yellow]note:[/] more ranks than cores on this host: ranks busy-wait for messages, so times "
            "include waiting for the OS scheduler",
            highlight=False,
        )
    out.print(f"results: {log.path} (+ {', '.join(p.suffix for p in written)})", highlight=False)
    if note:
        out.print(f"note: {note}", highlight=False, markup=False)
    bad = [r for r in results if r.status != "ok"]
    if not bad:
        return None
    return (
        f"{len(bad)} of {len(results)} results are not exact (see the check column), e.g. "
        f"{bad[0].implementation} at {bad[0].elements} elements: {bad[0].wrong} wrong"
    )


def print_error(message: object) -> None:
    """`error: <message>` on stderr, on one line, no traceback."""
    Console(stderr=True).print(f"[bold red]error:[/] {escape(str(message))}", highlight=False, soft_wrap=True)
