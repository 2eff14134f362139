"""`dbench run --fleet` in the terminal: one progress bar per machine (graphs done, the graph it times,
ETA from its own estimate scaled by its pace), a plain line per row and per change of state when the
output is not a terminal, and at the end one table row per machine."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table

from dbench.fleet.driver import FleetPlan, FleetResult, Machine
from dbench.render.numbers import format_time

STATE_STYLE = {
    "finished": "green",
    "running": "cyan",
    "waiting": "",
    "dropped": "yellow",
    "lost": "red",
    "failed": "red",
    "refused": "red",
    "stopped": "yellow",
}


def plan_lines(plan: FleetPlan) -> list[str]:
    """What the fleet will do: its id, cluster, machines and the request's source."""
    serving = [m for m in plan.machines.values() if m.status in ("waiting", "running", "dropped")]
    source = f"bundle {plan.bundle_path}" if plan.bundle_path else "the catalog's selection, generated on each machine"
    lines = [
        f"fleet {plan.fleet_id} on {plan.address}: {len(serving)} machine{'s' if len(serving) != 1 else ''}, "
        f"one timing job each, runtime {plan.request.runtime}, {source}",
        f"rows go to {plan.out_dir}/<machine key>/<run id>.jsonl as each graph finishes; record: {plan.record_path}",
    ]
    lines += [f"refused {m.key}: {m.message}" for m in plan.machines.values() if m.status == "refused"]
    return lines + [f"note: {note}" for note in plan.notes]


def row_line(machine: Machine, row: dict[str, Any]) -> str:
    """`node-a [3/10] gemm_m35_n700_k2048_nn.fwd.gemm.fp32 ok 721 µs` (or the status and message)."""
    head = f"{machine.key} [{machine.rows_done}/{machine.rows_total or '?'}] {row['graph_id']}" + (
        f" [{row['variant']}]" if row.get("variant") and row.get("variant") != row.get("runtime") else ""
    )
    if row["status"] != "ok":
        return f"{head} {row['status']}: {row.get('message') or ''}"[:300]
    return f"{head} ok {format_time(row['median_us'])}" if row.get("median_us") else f"{head} ok"


class FleetProgress:
    """The FleetObserver of the terminal: a bar per machine, advanced by the estimated seconds of each job
    it finished (so its ETA is its estimate scaled by its pace), or lines where the output is no terminal."""

    def __init__(self, console: Console, plan: FleetPlan) -> None:
        self.console = console
        for line in plan_lines(plan):
            console.print(escape(line), highlight=False, soft_wrap=True)
        self.progress: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self.said: dict[str, tuple[str, int]] = {}
        if console.is_terminal:
            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[rows]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[graph]}", style="dim"),
            )
            self.progress = Progress(*columns, console=console, transient=True)
            for machine in plan.machines.values():
                self.tasks[machine.key] = self.progress.add_task(machine.key, total=None, rows="", graph="")

    def __enter__(self) -> FleetProgress:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self.progress is not None:
            self.progress.stop()

    def _update(self, machine: Machine) -> None:
        if self.progress is None:
            return
        style = STATE_STYLE.get(machine.status, "")
        self.progress.update(
            self.tasks[machine.key],
            description=f"[{style}]{escape(machine.key)} {machine.status}[/]",
            total=max(machine.jobs_s, 1e-9) if machine.jobs_s else None,
            completed=min(machine.spent_s, machine.jobs_s or machine.spent_s),
            rows=f"{machine.rows_done}/{machine.rows_total or '?'} graphs",
            graph=escape(machine.graph[:48]),
        )

    def on_machine(self, machine: Machine) -> None:
        self._update(machine)
        said = (machine.status, machine.attempt)
        if self.said.get(machine.key) == said:
            return  # a new plan or estimate, not a new state
        self.said[machine.key] = said
        if self.progress is None or machine.status not in ("waiting", "running"):
            text = f"{machine.key}: {machine.status}" + (f" ({machine.message})" if machine.message else "")
            (self.progress.console if self.progress else self.console).print(
                escape(text), highlight=False, soft_wrap=True
            )

    def on_progress(self, machine: Machine) -> None:
        self._update(machine)

    def on_row(self, machine: Machine, row: dict[str, Any]) -> None:
        self._update(machine)
        if self.progress is None:
            self.console.print(escape(row_line(machine, row)), highlight=False, soft_wrap=True)


def machines_table(result: FleetResult) -> Table:
    """One row per machine: state, graphs done of all, ok and other statuses, times it left, wall, log."""
    table = Table(title=f"fleet {result.fleet_id}", title_justify="left")
    for name, justify in (
        ("machine", "left"),
        ("state", "left"),
        ("graphs", "right"),
        ("ok", "right"),
        ("not ok", "left"),
        ("left", "right"),
        ("wall", "right"),
        ("log", "left"),
    ):
        table.add_column(name, justify=justify, overflow="fold")
    for machine in result.machines:
        problems = ", ".join(f"{n} {s}" for s, n in sorted(machine.statuses.items()) if s != "ok")
        state = machine.status + (f": {machine.message}" if machine.message else "")
        table.add_row(
            escape(machine.key),
            f"[{STATE_STYLE.get(machine.status, '')}]{escape(state)}[/]",
            f"{machine.rows_done}/{machine.rows_total or '?'}",
            str(machine.statuses.get("ok", 0)),
            escape(problems),
            str(machine.drops or ""),
            f"{machine.wall_s:.0f} s" if machine.wall_s else "",
            escape(str(machine.path)) if machine.path.exists() else "",
        )
    return table


def result_lines(result: FleetResult) -> list[str]:
    """What to do next: the machines that never came back (or did not finish) and the resume command."""
    lines = []
    unfinished = [m for m in result.machines if m.status != "finished"]
    lost = [m.key for m in unfinished if m.status == "lost"]
    if lost:
        lines.append(f"never came back: {', '.join(lost)}; their rows so far are kept")
    if any(m.status in ("lost", "stopped", "dropped") for m in unfinished):
        lines.append(f"finish with: {result.resume_command}")
    doubled = sum(m.duplicates for m in result.machines)
    if doubled:
        lines.append(f"{doubled} row(s) sent twice by a machine that came back were kept once")
    lines += [f"{m.key}: {m.exports_note}" for m in result.machines if m.exports_note]
    return lines


def members_table(found: dict, chosen: dict, refusals: dict[str, str]) -> Table:
    """`dbench fleet ADDRESS`: one row per machine key: host, workers, dbench, Python, the worker a fleet
    would use, and whether it can serve this caller."""
    table = Table(title=f"{len(chosen)} machine{'s' if len(chosen) != 1 else ''}", title_justify="left")
    for name in ("machine", "host", "workers", "dbench", "python", "times on", "serves"):
        table.add_column(name, overflow="fold")
    for key, member in sorted(chosen.items()):
        workers = sum(1 for m in found.values() if m.key == key)
        why = refusals.get(key, "")
        table.add_row(
            escape(key),
            escape(member.hostname),
            str(workers),
            member.dbench,
            member.python,
            escape(member.address),
            f"[red]no: {escape(why)}[/]" if why else "[green]yes[/]",
        )
    for member in found.values():
        if not member.key or member.problem:
            table.add_row(
                "?",
                escape(member.hostname),
                "1",
                member.dbench,
                member.python,
                escape(member.address),
                f"[red]no: {escape(member.problem)}[/]",
            )
    return table
