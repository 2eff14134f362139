"""`dbench predict` in the terminal: one row per model (predicted, measured, error and its paired
interval, units timed), the units table (each unit's nodes, count, isolated time net of the empty
graph, its time inside the model from the runtime's profile, its share), and where isolation and the
model disagree."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from dbench.render.numbers import format_time
from dbench.units.prediction import Prediction, UnitLine

NODES_SHOWN = 3


def error_text(p: Prediction) -> str:
    """`+4.2% [+1.0, +7.5]` (the paired 95% interval), or the error alone."""
    if p.error is None:
        return ""
    text = f"{p.error * 100:+.1f}%"
    if p.error_low is not None:
        text += f" [{p.error_low * 100:+.1f}, {p.error_high * 100:+.1f}]"
    return text


def predictions_table(predictions: list[Prediction]) -> Table:
    table = Table(
        title="predicted from the units vs measured",
        caption="predicted = empty + Σ count x (unit median - empty) x kept (kept: the unit's profile less the layout "
        "reorders at its boundaries; unit median, model-state: warm + its weight share of the evicted excess); "
        "error = predicted / measured - 1, [its 95% interval from the paired rounds]; "
        "reorders left out: those boundary reorders; inserted layers: the layers the runtime inserts between the "
        "model's, their time inside it (timed as units where a graph expresses them; the rest untimed); "
        "left out: units that did not run ok, their share of the model's profile",
    )
    for column in (
        "model",
        "runtime",
        "method",
        "predicted",
        "measured",
        "error",
        "units timed",
        "nodes",
        "empty graph",
        "reorders left out",
        "inserted layers",
        "left out",
    ):
        table.add_column(column, justify="left" if column in ("model", "runtime", "method") else "right")
    for p in predictions:
        table.add_row(
            escape(p.model),
            p.runtime,
            p.method,
            format_time(p.predicted_us),
            format_time(p.measured_us) or "not run",
            error_text(p),
            f"{p.units_timed}/{p.units_total}",
            f"{p.nodes_timed}/{p.nodes_total}",
            format_time(p.empty_us),
            format_time(p.reorders_us),
            inserted_text(p),
            left_out_text(p),
        )
    return table


def inserted_text(p: Prediction) -> str:
    """The inserted layers' time inside the model, and how much of it no unit times (`480 µs (12 µs untimed)`)."""
    text = format_time(p.inserted_us)
    if p.untimed_inserted_us and p.inserted_us and p.untimed_inserted_us < p.inserted_us:
        text += f" ({format_time(p.untimed_inserted_us)} untimed)"
    elif p.untimed_inserted_us:
        text += " (untimed)"
    return text


def left_out_text(p: Prediction) -> str:
    """`3 (78.0%)`: the units left out and their share of the model's profile ("" when none)."""
    if not p.left_out:
        return ""
    share = p.left_out_share
    return f"{len(p.left_out)}" + (f" ({share:.1%})" if share is not None else " (share unknown)")


def _nodes(line: UnitLine) -> str:
    shown = ", ".join(line.nodes[:NODES_SHOWN]) + (
        f" (+{len(line.nodes) - NODES_SHOWN})" if len(line.nodes) > NODES_SHOWN else ""
    )
    return shown or "—"


def _ratio(line: UnitLine) -> str:
    ratio = line.ratio
    return "" if ratio is None else f"×{ratio:.2f}" + (" ≠" if line.disagrees else "")


def units_table(p: Prediction, top: int | None = None) -> Table:
    """The units by their time inside the model (isolated time where there is no profile), largest first."""
    lines = sorted(p.units, key=lambda u: -(u.in_model_us if u.in_model_us is not None else (u.isolated_us or 0.0)))
    shown = lines[:top] if top else lines
    caption = (
        "isolated = count x (median - empty) x kept, reorders: the rest (the layout reorders at the unit's boundaries, "
        "left out); in model: the unit's layers in the runtime's profile of the whole model (an inserted layer "
        "timed as a "
        "unit: only their sum, in the row above); ≠: isolation and the model disagree (beyond ×1.25 and 2% of the "
        "model)"
    )
    if top and len(lines) > top:
        caption += f"; {len(lines) - top} more units not shown (--top)"
    table = Table(title=f"units of {p.model} on {p.runtime}", caption=caption)
    for column in (
        "unit",
        "nodes",
        "count",
        "median",
        "isolated",
        "reorders",
        "in model",
        "share",
        "isolated/in model",
        "kernel",
    ):
        table.add_column(column, justify="left" if column in ("unit", "nodes", "kernel") else "right", overflow="fold")
    for line in shown:
        name = line.graph if line.kind in ("executed", "unmatched") else f"{line.graph} ({line.kind})"
        median = format_time(line.median_us) if line.status == "ok" or not line.status else line.status
        if line.flag:
            median = f"{format_time(line.median_us)} ({line.flag})"
        table.add_row(
            escape(name),
            escape(_nodes(line)),
            str(line.count) if line.median_us is not None or line.status else "",
            median,
            format_time(line.isolated_us),
            format_time(line.reorders_us),
            format_time(line.in_model_us),
            "" if line.share is None else f"{line.share:.1%}",
            _ratio(line),
            escape(", ".join(dict.fromkeys(line.kernels))),
        )
    return table


def disagreements(p: Prediction, limit: int = 5) -> list[str]:
    """Sentences naming the units whose isolated time and time inside the model differ most."""
    lines = sorted((u for u in p.units if u.disagrees), key=lambda u: -abs((u.isolated_us or 0) - (u.in_model_us or 0)))
    said = [
        f"{u.graph}: {format_time(u.isolated_us)} in isolation (x{u.count}) against {format_time(u.in_model_us)} "
        "inside "
        f"the model"
        for u in lines[:limit]
    ]
    untimed = [u for u in p.units if u.kind == "inserted" and u.in_model_us and not u.status]
    if untimed:
        said.append(
            f"{len(untimed)} layers the runtime inserted (reorders, conversions) take "
            f"{format_time(sum(u.in_model_us for u in untimed))} inside the model and are timed in no unit"
        )
    return said


def gap_lines(p: Prediction) -> list[str]:
    """The gap between the units alone and the model, by cause, as one line: what each cause adds."""
    if not p.gap:
        return []
    gap = p.gap
    parts = [f"units alone (each call its own) {format_time(gap['units alone'])}"]
    if gap.get("inserted layers alone"):
        parts.append(f"inserted layers timed as units {_signed(gap['inserted layers alone'])}")
    parts += [
        f"per-call overhead {_signed(gap['per-call overhead'])}",
        "their boundary reorders " + _signed(gap["units' boundary reorders"]),
        f"cache (the model's state) {_signed(gap['cache'])}",
        f"= predicted {format_time(gap['predicted'])}",
    ]
    if "measured" in gap:
        if gap.get("inserted layers not timed"):
            parts.append(f"inserted layers no unit times (in the model) {_signed(gap['inserted layers not timed'])}")
        parts.append(f"unexplained {_signed(gap['unexplained'])} = measured {format_time(gap['measured'])}")
    return ["; ".join(parts)]


def _signed(us: float) -> str:
    return ("+" if us >= 0 else "-") + format_time(abs(us))
