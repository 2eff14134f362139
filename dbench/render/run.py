"""`dbench run` in the terminal: the plan line, a progress bar fed by the run's callbacks, and the
results table and status counts at the end."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from dbench.orchestrator.items import Item
from dbench.orchestrator.run import PlannedRun, RunResult
from dbench.render.tables import results_table, speedup_table
from dbench.store.derived import sparse_speedups
from dbench.store.schema import Row


class RunProgress:
    """A transient progress bar over a planned run's pending graphs; `on_start` and `on_row` are the
    callbacks `execute_run` takes."""

    def __init__(self, console: Console, planned: PlannedRun) -> None:
        pending = len(planned.pending)
        console.print(f"run {planned.run_id}: {pending} graphs on {planned.request.runtime} "
                      f"({len(planned.done)} already done) -> {planned.log.path}", highlight=False)
        columns = (TextColumn("{task.description}", style="cyan"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn())
        self.progress = Progress(*columns, console=console, transient=True)
        self.task = self.progress.add_task("starting", total=pending)

    def __enter__(self) -> "RunProgress":
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.progress.stop()

    def on_start(self, item: Item) -> None:
        self.progress.update(self.task, description=item.spec.id[:60])

    def on_row(self, row: Row) -> None:
        self.progress.advance(self.task)


def print_run(console: Console, result: RunResult) -> None:
    """The run's results table, sparse speedups if any, and one line of status counts and files."""
    rows = result.rows
    console.print(results_table(rows, f"{result.run_id} · {result.header['runtime']['name']} · {result.header['host']['cpu_model']}"))
    speedups = sparse_speedups(rows)
    if speedups:
        console.print(speedup_table(speedups))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    parquet, csv = result.exports
    console.print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" · log {result.log_path} · {parquet.name}, {csv.name}",
                  highlight=False)
