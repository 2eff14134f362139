"""Progress of a run: a bar with the current graph on a terminal, one plain line per finished graph
otherwise (CI logs), so a long run always shows what it is doing."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from dbench.report.units import format_time, significant


def graph_line(done: int, total: int, row: dict[str, Any]) -> str:
    """`[3/13] gemm_m35_n700_k2048_nn.fwd.gemm.fp32 ok 721 µs ±0.4% 0.07 TFLOP/s` (or the status and message)."""
    head = f"[{done}/{total}] {row['graph_id']} {row['status']}"
    if row["status"] != "ok":
        return f"{head}: {row.get('message', '')}"[:300]
    parts = [format_time(row.get("median_us"))]
    if row.get("ci_rel") is not None:
        parts.append(f"±{row['ci_rel'] * 100:.1f}%" + (" unstable" if row.get("unstable") else ""))
    if row.get("tflops"):
        parts.append(f"{significant(row['tflops'])} TFLOP/s")
    return f"{head} {' '.join(parts)}"


class RunProgress:
    """Context manager fed by the runner's on_row callback (row None: the graph has started)."""

    def __init__(self, console: Console, total: int) -> None:
        self.console, self.total, self.done = console, total, 0
        self.progress: Progress | None = None

    def __enter__(self) -> "RunProgress":
        if self.console.is_terminal:
            columns = (TextColumn("{task.description}", style="cyan"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
            self.progress = Progress(*columns, console=self.console, transient=True)
            self.progress.__enter__()
            self.task = self.progress.add_task("starting", total=self.total)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None) -> None:
        if self.progress is not None:
            self.progress.__exit__(kind, value, trace)

    def __call__(self, item: Any, row: dict | None) -> None:
        if row is None:
            if self.progress is not None:
                self.progress.update(self.task, description=f"{item.spec.id[:50]} · in the worker")
            return
        self.done += 1
        if self.progress is not None:
            self.progress.advance(self.task)
        else:
            self.console.print(escape(graph_line(self.done, self.total, row)), highlight=False, soft_wrap=True)
