"""`dbench run` in the terminal: the plan line, a progress bar fed by the run's callbacks (one plain
line per finished graph when the output is not a terminal, e.g. CI logs), and at the end the results
table, status counts, the fraction of this machine's peak and warnings that say what to do."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from dbench.orchestrator.estimate import duration
from dbench.orchestrator.run import PlannedRun, RunResult
from dbench.peak.ceilings import read_peak_file
from dbench.render.numbers import format_spread, format_time, significant
from dbench.render.tables import results_table, speedup_table
from dbench.render.throughput import knee_lines, load_line, load_warnings, server_table, throughput_table
from dbench.render.warnings import disputed_note, peak_line, run_warnings
from dbench.sources.item import Item
from dbench.store.derived import sparse_speedups
from dbench.store.schema import Row


def graph_line(done: int, total: int, row: Row, variants: int = 1) -> str:
    """`[3/13] gemm_m35_n700_k2048_nn.fwd.gemm.fp32 ok 721 µs ±0.4% 0.07 TFLOP/s` (or the status and
    message); the variant is named when the run has several."""
    head = f"[{done}/{total}] {row.graph_id}" + (f" [{row.variant}]" if variants > 1 else "") + f" {row.status}"
    if row.status == "disputed":  # timed and valid: the time, and who agreed against the reference
        head += f" ({disputed_note(row.to_dict())})"
    elif row.status != "ok":
        return f"{head}: {row.message}"[:300]
    if row.mode != "latency":
        return f"{head} {load_line(row)}"
    parts = [format_time(row.median_us)]
    if row.rerun_rel is not None:
        parts.append(f"{format_spread(row.rerun_rel)} re-run" + (" unstable" if row.unstable else ""))
    elif row.rounds:
        parts.append(f"({row.rounds} round{'s' if row.rounds > 1 else ''}: no interval)")
    if row.tflops:
        parts.append(f"{significant(row.tflops)} TFLOP/s")
    return f"{head} {' '.join(parts)}"


def intervals_line(planned: PlannedRun) -> str:
    """What the rows' intervals will hold: the rounds alone, or also the drift between runs that this
    machine's earlier runs measured."""
    history = planned.history
    if history is None:
        return (
            "from the rounds alone (--history 0, or a run begun before dbench read earlier runs): a re-run may "
            "move further"
        )
    if not history.graphs_with_runs():
        return (
            "from the rounds alone: no graph here ran twice before with these settings, so the drift between "
            "runs is unmeasured"
        )
    return (
        f"the rounds and the drift between runs, from up to {history.per_graph} earlier runs a graph "
        f"({history.logs} logs here)"
    )


def shard_line(part: dict) -> str:
    """`shard: part 1/2 of run sel-3f9a... (6 of 13 graphs; the split's estimates 13 s, 15 s)`."""
    estimates = ", ".join(duration(s) for s in part["estimates_s"])
    return (
        f"shard: part {part['index']}/{part['count']} of run {part['label']} ({part['graphs'][part['index'] - 1]} of "
        f"{part['selection_graphs']} graphs; the split's estimates, from the settings alone: {estimates})"
    )


def noise_plan_lines(planned: PlannedRun) -> list[str]:
    """What the plan says of noise: --resolve's target and limits, this machine's calibration (quoted, or
    how to get one), how the timing lock was taken, and a benchmark's injected slowdown."""
    config = planned.config
    lines = []
    if config.resolve is not None:
        limit = f", --budget {duration(config.budget_s)} in all" if config.budget_s else ""
        lines.append(
            f"resolve: rounds per graph until its anytime-valid 95% interval is within ±{config.resolve:.0%}, at most "
            f"{config.timing.rounds} a graph{limit}"
        )
    if planned.calibration is not None:
        lines.append(
            f"calibration: {planned.calibration.runtime} at {planned.calibration.threads} threads, "
            f"{planned.calibration.taken_at}: {planned.calibration.answer(config.resolve or 0.05)}"
        )
    elif config.resolve is not None:
        lines.append(
            "calibration: none for this runtime and thread count here, so no rounds are predicted and the plan counts "
            "the most a graph may get: dbench calibrate measures them in about 3 minutes"
        )
    lock = planned.header.get("timing_lock") or {}
    if lock.get("held") is False:
        lines.append(
            f"warning: timing beside another dbench (--overlap): {'; '.join(lock.get('beside') or [])}; every row "
            "timed meanwhile says so"
        )
    elif lock.get("waited_s"):
        lines.append(
            f"waited {duration(lock['waited_s'])} for another dbench to finish timing on this machine (--wait)"
        )
    for label, fraction in (planned.header.get("injected_slowdown") or {}).items():
        lines.append(
            f"warning: {label} is slowed by {fraction:.0%} on purpose (DBENCH_BENCHMARK_SLOWDOWN): for benchmarks "
            "of dbench only"
        )
    return lines


def resolve_line(rows: list[dict]) -> str | None:
    """--resolve's outcome in one line: graphs resolved, and the rounds they took."""
    graphs: dict[str, dict] = {}
    for row in rows:
        if row.get("resolve_target") is not None and row.get("status") == "ok":
            graphs.setdefault(row["graph_id"], row)
    if not graphs:
        return None
    done = [r for r in graphs.values() if r.get("resolved")]
    rounds = sorted(r["rounds"] for r in done)
    target = next(iter(graphs.values()))["resolve_target"]
    return f"--resolve {target:.0%}: {len(done)} of {len(graphs)} graphs resolved" + (
        f", in {rounds[0]}-{rounds[-1]} rounds (median {rounds[len(rounds) // 2]})" if rounds else ""
    )


class RunProgress:
    """A transient progress bar over a planned run's jobs (graph x variant x round) on a terminal, naming
    the round, the graph and the worker's phase; a line per round and per finished row elsewhere. It
    is the RunObserver `execute_run` takes."""

    def __init__(self, console: Console, planned: PlannedRun) -> None:
        pending = planned.pending
        self.variants = len(planned.config.variants)
        self.console, self.total, self.done, self.started = console, len(pending), 0, 0
        self.round, self.round_index = "", 0
        graphs = len({item.spec.id for item, _ in pending})
        on = planned.request.runtime if self.variants == 1 else " vs ".join(v.label for v in planned.config.variants)
        load = planned.config.variants[0].load
        if load is not None:  # throughput or server: say so, and the requests in flight when all variants share them
            on += (
                f" · {load.scenario}"
                + (f" at {load.rate:g}/s" if load.rate else "")
                + (
                    f", {load.streams} streams x {planned.config.variants[0].options.threads} threads"
                    if self.variants == 1
                    else ""
                )
            )
        already = len(planned.state.finished)
        timing = planned.config.timing
        rounds = (
            f"up to {timing.rounds} rounds each" if timing.share_rounds is not None else f"{timing.rounds} rounds each"
        )
        console.print(
            f"run {planned.run_id}: {graphs} graphs on {on}, {rounds}"
            + (f" ({already} rows already done)" if already else "")
            + f" -> {planned.log.path}",
            highlight=False,
        )
        console.print(f"plan: {planned.estimate.describe()}", highlight=False)
        if part := planned.header.get("shard"):
            console.print(shard_line(part), highlight=False)
        console.print(f"intervals: {intervals_line(planned)}", highlight=False)
        for note in planned.budget_notes:
            console.print(f"--budget gave up: {note}", highlight=False)
        for line in noise_plan_lines(planned):
            console.print(line, highlight=False, soft_wrap=True)
        self.jobs = planned.estimate.jobs
        self.spent, self.current = 0.0, None
        self.progress: Progress | None = None
        if console.is_terminal:
            columns = (
                TextColumn("{task.description}", style="cyan"),
                BarColumn(),
                TextColumn("{task.fields[count]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
            )
            # No refresh thread: the bar is drawn when the run tells it something (a round, a job, a phase),
            # so the parent sleeps while a worker times instead of waking 10 times a second to draw.
            self.progress = Progress(*columns, console=console, transient=True, auto_refresh=False)
            # The bar advances by each job's estimated seconds, so its ETA is the estimate scaled by the pace so far.
            self.task = self.progress.add_task("starting", total=max(planned.estimate.total_s, 1e-9), count="")

    def __enter__(self) -> RunProgress:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self.progress is not None:
            self.progress.stop()

    def on_round(self, number: int, rounds: int, jobs: int) -> None:
        self.round, self.round_index = f"round {number}/{rounds}", number - 1
        self._finish_job()
        left = sum(s for (_, _, r), s in self.jobs.items() if r >= number - 1)
        if self.progress is not None:
            # Graphs whose rounds ended early leave the plan: the total is what is left, as now known.
            self.progress.update(self.task, refresh=True, completed=self.spent, total=max(self.spent + left, 1e-9))
        else:
            self.console.print(f"{self.round}: {jobs} jobs, about {duration(left)} left by the plan", highlight=False)

    def on_start(self, item: Item, variant: str) -> None:
        """A job starts: the one before it is done."""
        self._finish_job()
        self.started += 1
        self.current = (item.spec.id, variant, self.round_index)
        if self.progress is not None:
            self.progress.update(self.task, refresh=True, completed=self.spent, count=f"job {self.started}")
        self._describe(item, "starting")

    def _finish_job(self) -> None:
        if self.current is not None:
            self.spent += self.jobs.get(self.current, 0.0)
            self.current = None

    def _describe(self, item: Item, phase: str) -> None:
        if self.progress is not None:
            self.progress.update(self.task, refresh=True, description=f"{self.round} · {item.spec.id[:50]} · {phase}")

    def on_phase(self, item: Item, phase: str) -> None:
        self._describe(item, phase)

    def on_row(self, row: Row) -> None:
        self.done += 1
        if self.progress is None:
            self.console.print(
                escape(graph_line(self.done, self.total, row, self.variants)), highlight=False, soft_wrap=True
            )


def interleaved_verdicts(result: RunResult) -> list[str]:
    """An interleaved run's verdicts in brief, each variant against the first (compare's summary, the
    same test and false-discovery control), and the command that prints them kernel by kernel."""
    from dbench.render.tables import compare_summary
    from dbench.store.compare import compare_sides, variant_sides
    from dbench.store.log import RunLog

    if len(result.header.get("variants", [])) < 2 or any(
        (r.get("mode") or "latency") != "latency" for r in result.rows
    ):
        return []  # throughput and server sweeps: `dbench compare` and the report set their rows side by side
    sides = variant_sides(RunLog.read(result.log_path))
    lines = []
    for side in sides[1:]:
        comparison = compare_sides(sides[0], side, interleaved=True)
        if any(p.difference for p in comparison.pairs):
            first, *rest = compare_summary(comparison, (sides[0].label, side.label))
            lines.append(first)
            lines += [line for line in rest if line.startswith("to resolve")]
            if (mean := comparison.geomean()) is not None:
                lines.append(
                    f"  geometric-mean time ratio {mean.ratio:.3f} (95% interval {mean.low:.3f}–{mean.high:.3f})"
                )
    return lines + ([f"kernel by kernel: dbench compare {result.log_path}"] if lines else [])


def print_run(console: Console, result: RunResult) -> None:
    """The run's results table, sparse speedups if any, and one line of status counts and files."""
    rows = result.rows
    runtimes = " vs ".join(v["label"] for v in result.header.get("variants", [])) or result.header["runtime"]["name"]
    unstable_above = result.header.get("timing", {}).get("unstable_above", 0.05)
    title = f"{result.run_id} · {runtimes} · {result.header['host']['cpu_model']}"
    by_mode = {
        mode: [r for r in rows if (r.get("mode") or "latency") == mode] for mode in ("latency", "throughput", "server")
    }
    if by_mode["latency"]:
        console.print(results_table(by_mode["latency"], title, console.width, unstable_above))
    if by_mode["throughput"]:
        console.print(throughput_table(by_mode["throughput"], f"throughput · {title}", console.width))
        for line in knee_lines(by_mode["throughput"]):
            console.print(escape(line), highlight=False, soft_wrap=True)
    if by_mode["server"]:
        console.print(server_table(by_mode["server"], f"server · {title}", console.width))
    speedups = sparse_speedups(rows)
    if speedups:
        console.print(speedup_table(speedups))
    for line in interleaved_verdicts(result):
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    if (line := resolve_line(rows)) is not None:
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    written, note = result.exports
    console.print(
        ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        + f" · log {result.log_path} · {', '.join(p.name for p in written)}",
        highlight=False,
    )
    if note:
        console.print(f"note: {note}", highlight=False, markup=False)
    console.print(peak_line(rows, read_peak_file(result.log_path.parent)), highlight=False)
    for line in run_warnings(rows, result.header["host"], result.header.get("timing")) + load_warnings(rows):
        console.print(f"[yellow]warning:[/] {line}", highlight=False, soft_wrap=True)
