"""`dbench compare --quantized`: the fp32 model beside its quantized twin, speed and error side by side,
whole model first, then each unit twin, and the lines a reader needs to trust them."""

from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from dbench.render.numbers import format_time
from dbench.units.speedup import WHOLE


def _speedup(line) -> str:
    speed = line.speed
    if speed.speedup is None:
        return "-"
    return f"{speed.speedup:.2f}x"


def _interval(line) -> str:
    interval = line.speed.interval
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "-"


def _verdict(line) -> str:
    """compare's verdict, or why the time is shown but not trusted."""
    speed = line.speed
    if speed.unverified is not None:
        return f"time unverified ({speed.pair.verdict})"
    return speed.pair.verdict or "-"


def _error(line) -> str:
    worst = line.worst
    return f"{worst.relative_error:.2%}" if worst else "-"


def _agreement(line) -> str:
    found = [e for e in line.errors if e.agreement is not None]
    if not found:
        return "-"
    e = min(found, key=lambda e: e.agreement)
    return f"{e.agreement:.1%} [{e.agreement_low:.1%}, {e.agreement_high:.1%}] of {e.rows}"


def quantized_table(result) -> Table:
    """One line per twin: the sides' medians, the speedup with its interval and verdict, the error."""
    table = Table(
        title=f"fp32 = {escape(result.fp32)}\nquantized = {escape(result.quantized)}\non {escape(result.runtime)}",
        caption=(
            "speedup: fp32 time / quantized time, 95% interval; verdicts: "
            f"{result.comparison.method}, false-discovery rate {result.comparison.fdr:.0%}\n"
            f"error: ‖quantized - fp32‖ / ‖fp32‖ over {result.inputs} seeded inputs (seed {result.seed} on), the "
            "worst value that ends the line; top-1: agreement of a model output shaped \\[batch, classes], "
            "Wilson 95% interval"
        ),
        box=box.HEAVY_HEAD,
    )
    for column, justify in [
        ("line", "left"),
        ("fp32", "right"),
        ("quantized", "right"),
        ("speedup", "right"),
        ("95% interval", "right"),
        ("verdict", "left"),
        ("rel. error", "right"),
        ("top-1 agreement", "right"),
    ]:
        table.add_column(column, justify=justify)
    for line in result.lines:
        pair = line.speed.pair
        a = pair.a[0].get("median_us") if pair.a else None
        b = pair.b[0].get("median_us") if pair.b else None
        table.add_row(
            escape(line.label),
            format_time(a) if a else "-",
            format_time(b) if b else "-",
            _speedup(line),
            _interval(line),
            escape(_verdict(line)),
            _error(line),
            _agreement(line),
        )
    return table


def quantized_lines(result) -> list[str]:
    """What the table leaves out: each output's figures, the units without a twin, the notes."""
    lines = []
    whole = next((x for x in result.lines if x.label == WHOLE), None)
    for e in whole.errors if whole else ():
        text = f"output {e.name}: relative error {e.relative_error:.3%}, worst single input {e.worst:.3%}"
        if e.agreement is not None:
            text += (
                f"; top-1 agreement {e.agreement:.2%} of {e.rows} rows, 95% interval "
                f"[{e.agreement_low:.2%}, {e.agreement_high:.2%}]"
            )
        lines.append(text)
    untrusted = [x.label for x in result.lines if x.speed.unverified is not None]
    if untrusted:
        lines.append(
            "time unverified: a side of "
            + ", ".join(untrusted)
            + " did not pass its check, so its time may be of a computation that went wrong; its speedup is "
            "shown and given no verdict"
        )
    if result.fp32_alone:
        lines.append("fp32 units without a twin: " + "; ".join(result.fp32_alone))
    if result.quantized_alone:
        lines.append("quantized units without a twin: " + "; ".join(result.quantized_alone))
    return lines + list(result.notes)
