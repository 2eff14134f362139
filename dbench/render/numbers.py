"""Numbers as people read them: times in ns / µs / ms / s by size, rates with three significant digits."""

from __future__ import annotations

TIME_UNITS = ((1e6, "s"), (1e3, "ms"), (1.0, "µs"), (1e-3, "ns"))
"""(microseconds per unit, unit), largest first."""


def format_time(us: float | None) -> str:
    """A duration given in µs, in the largest unit that keeps it >= 1, three significant digits:
    0.0042 -> '4.20 ns', 23.4 -> '23.4 µs', 412000 -> '412 ms'."""
    if us is None or us != us:
        return ""
    for scale, unit in TIME_UNITS:
        if abs(us) >= scale or scale == TIME_UNITS[-1][0]:
            return f"{significant(us / scale)} {unit}"
    return ""


def time_interval(low_us: float | None, high_us: float | None) -> str:
    """An interval of durations in µs: `17.1–23.4 ms`, `980 µs–1.20 ms`, `>=17.1 ms` without an upper end,
    `` without either."""
    low, high = format_time(low_us), format_time(high_us)
    if low and high:
        value, unit = low.split(" ")
        return f"{value if high.endswith(' ' + unit) else low}–{high}"
    if low:
        return f">={low}"
    return f"<={high}" if high else ""


def significant(value: float | None, digits: int = 3) -> str:
    """`value` with `digits` significant digits and no exponent below 1e6 (1234 -> '1234', 0.01234 -> '0.0123')."""
    if value is None or value != value:
        return ""
    if value == 0:
        return "0"
    magnitude = len(str(int(abs(value)))) if abs(value) >= 1 else 0
    if abs(value) >= 1e6:
        return f"{value:.{digits - 1}e}"
    if abs(value) >= 1:
        return f"{value:.{max(digits - magnitude, 0)}f}"
    return f"{value:.{digits}g}" if abs(value) < 1e-4 else f"{value:#.{digits}g}".rstrip(".")


WIDEST_SPREAD = 10.0
"""A relative half-width beyond ±1000 % is printed as `±>1000%`: rounds that disagree by orders of
magnitude (one round on a busy machine, two rounds and t on one degree of freedom) make a number whose
digits say nothing more."""


def format_spread(rel: float) -> str:
    """A relative half-width as `±12.3%` (`±123%` from 100 %, `±>1000%` beyond WIDEST_SPREAD)."""
    if rel > WIDEST_SPREAD:
        return f"±>{WIDEST_SPREAD:.0%}"
    return f"±{rel * 100:.1f}%" if round(rel * 100, 1) < 100 else f"±{rel:.0%}"  # 0.9996: ±100%, not ±100.0%


def format_ratio(value: float | None) -> str:
    """A speedup or time ratio: '×1.23'."""
    return "" if value is None or value != value else f"×{value:.2f}"


def load_text(utilization: float | None, per_round: list[float] | None) -> str:
    """`62% load` or `62% load (rounds 56-92%)`: the share of the requests' capacity a server row's rate
    was at the run time its runs took; empty for a row without it."""
    if utilization is None:
        return ""
    spread = (
        f" (rounds {min(per_round):.0%}-{max(per_round):.0%})"
        if per_round and len(per_round) > 1 and round(min(per_round), 2) != round(max(per_round), 2)
        else ""
    )
    return f"{utilization:.0%} load{spread}"
