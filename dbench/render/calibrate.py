"""`dbench calibrate` in the terminal: one row per size class (the noise and what it lets this machine
resolve), then the one-line answer; and the short quote of a calibration that `run`'s plan and `compare`
print."""

from __future__ import annotations

from rich import box
from rich.table import Table

from dbench.orchestrator.estimate import duration
from dbench.store.calibration import FIXED_ROUNDS, TARGETS, Entry, class_name


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:.1%}"


def _rounds(value: int | None) -> str:
    return ">1000" if value is None else str(value)


def calibration_table(entry: Entry) -> Table:
    """Per size class: kernels, paired rounds, the SD of a paired round's log ratio (median kernel, and the
    noisiest), of one copy's round, the drift between runs, the change a fixed interleaved run finds at 3,
    10 and 30 rounds, the rounds --resolve needs for ±2, 5 and 10 %, and how earlier rows' intervals held."""
    table = Table(
        title=f"{entry.runtime} {entry.version}, {entry.threads} threads · {entry.rounds} paired rounds of "
        f"{entry.round_sampling_s * 1e3:.0f} ms sampling a graph · {entry.run_id}",
        caption="pair: SD of one round's log ratio between two copies timed back to back (what an interleaved "
        "compare and --resolve meet); round: SD of one copy's round; drift: SD of a run's time beyond its "
        "rounds, from this machine's earlier runs; finds: the change a fixed interleaved run of N rounds "
        "finds 80% of the time; --resolve: rounds until the anytime-valid 95% interval is within ±X; "
        "held: earlier rows' re-run intervals, made as now, that held a later run's median (×: the factor dbench "
        "scales them by)",
        box=box.SIMPLE_HEAD,
    )
    for column in (
        "class",
        "kernels",
        "pairs",
        "pair SD",
        "(noisiest)",
        "round SD",
        "drift",
        *(f"finds @{n}" for n in FIXED_ROUNDS),
        *(f"±{t:.0%}" for t in TARGETS),
        "held",
    ):
        table.add_column(column, justify="left" if column == "class" else "right")
    for c in sorted(entry.classes, key=lambda c: c.class_us):
        held = (
            f"{c.coverage_inside}/{c.coverage_pairs}"
            + (f" ×{c.widen:.2f}" if c.widen and abs(c.widen - 1) >= 0.005 else "")
            if c.coverage_pairs
            else ""
        )
        table.add_row(
            class_name(c.class_us),
            str(len(c.kernels)),
            str(c.pairs),
            _percent(c.pair_sd),
            _percent(c.pair_sd_max),
            _percent(c.round_sd),
            _percent(c.drift_sd),
            *(f"{c.finds(n):.1%}" for n in FIXED_ROUNDS),
            *(_rounds(c.resolve_rounds(t)) for t in TARGETS),
            held,
        )
    return table


def calibration_quote(entry: Entry) -> str:
    """One line for a plan or a comparison: when, and the answer."""
    return f"{entry.runtime} at {entry.threads} threads, {entry.taken_at}: {entry.answer()}"


def calibration_lines(entry: Entry, path, wall_s: float, host: dict | None = None) -> list[str]:
    """Under the table: the answer, the round length the figures hold for, where it is stored, and a warning
    when the machine was busy (the calibration then measured other work's noise too)."""
    from dbench.store.metadata import is_busy

    lines = [
        entry.answer(),
        f"measured in {duration(wall_s)}; its figures hold for rounds as long as these (a default interleaved run's: "
        f"--min-time divided among 5 rounds); stored in {path}, where run --resolve, compare and report read it",
    ]
    cores = (host or {}).get("cpu_affinity") or (host or {}).get("cpu_count")
    start = entry.load[0] if entry.load else None
    if start is not None and is_busy([start], cores):
        lines.append(
            f"warning: the machine was busy when the calibration began (1-minute load {start} on {cores} cores): "
            "it measured other work's noise too; calibrate again on a quiet machine"
        )
    return lines
