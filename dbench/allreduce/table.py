"""The rich tables rank 0 prints: every result, and DeepBench's "best of all implementations" per size."""

from __future__ import annotations

from rich.table import Table

from dbench.allreduce.results import Result

CAPTION = ("time: per-rank mean per call, min/mean/max over ranks.  algbw = bytes/time;  busbw = algbw*2(n-1)/n "
           "(nccl-tests);  DeepBench GB/s = bytes*ranks/time (its result sheets).  Bandwidths use the mean time.")


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
