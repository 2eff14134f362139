"""Throughput and server rows in the terminal: their own tables (never the latency table's columns),
one line per finished row, and where each stream sweep saturates with the latency paid for it."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from dbench.render.numbers import format_spread, format_time, load_text, significant, time_interval
from dbench.render.tables import NARROW, STATUS_STYLE
from dbench.stats.knee import NO_INTERVAL_TOLERANCE
from dbench.stats.quantile import P99_ABOVE
from dbench.store.sweeps import find_sweeps


def rate(value: float | None) -> str:
    """Per second with three significant digits: `1234/s`, `0.512/s`."""
    return f"{significant(value)}/s" if value else ""


def _interval(row: dict[str, Any]) -> str:
    """The re-run half-width of the row's figure (throughput, or a server row's p99), as the latency
    table's ± column shows a median's."""
    if row.get("rerun_rel") is not None:
        return format_spread(row["rerun_rel"]) + ("!" if row.get("unstable") else "")
    return f"{row['rounds']} rd" if row.get("rounds") else ""


def _graph(row: dict[str, Any], variants: bool) -> str:
    return row["graph_id"] + (escape(f" [{row.get('variant') or row.get('runtime')}]") if variants else "")


def _status(row: dict[str, Any]) -> str:
    return f"[{STATUS_STYLE.get(row['status'], 'white')}]{row['status']}[/]" + (
        " [yellow]unverified[/]" if row["status"] == "ok" and row.get("verified") is None else ""
    )


def _table(title: str, caption: str, columns: list[str], width: int) -> Table:
    narrow = width < NARROW
    table = Table(
        title=title,
        caption=caption,
        box=None if narrow else box.HEAVY_HEAD,
        padding=(0, 1, 0, 0) if narrow else (0, 1),
        pad_edge=not narrow,
        header_style="bold underline",
    )
    for column in columns:
        if column == "graph":
            table.add_column(column, overflow="fold", min_width=10, ratio=1)
        else:
            table.add_column(
                column, justify="left" if column == "status" else "right", no_wrap=True, overflow="ellipsis"
            )
    return table


def streams_text(row: dict[str, Any], narrow: bool = False) -> str:
    """`2x1`: requests in flight x threads each, with the runtime's own stream count where it differs
    (left to the warnings when the table is narrow)."""
    text = f"{row.get('streams')}x{row.get('threads_per_stream') or '?'}"
    executed = row.get("streams_executed")
    return text + (
        f" ({executed} ran)" if executed is not None and executed != row.get("streams") and not narrow else ""
    )


def throughput_table(rows: list[dict[str, Any]], title: str, width: int = 200) -> Table:
    """Throughput rows: requests in flight x threads, inferences/s and where a re-run's should fall,
    the kernel's FLOP rate with every request busy, and latency under load."""
    caption = (
        "streams: requests in flight x threads each; p50, p99: latency under load;\n"
        "±: where 95% of re-runs' throughput should fall (from the rounds)"
    )
    table = _table(
        title,
        caption,
        ["graph", "status", "streams", "inf/s", "±", "TF/s" if width < NARROW else "TFLOP/s", "p50", "p99"],
        width,
    )
    variants = len({r.get("variant") or r.get("runtime") for r in rows}) > 1
    for r in rows:
        table.add_row(
            _graph(r, variants),
            _status(r),
            streams_text(r, width < NARROW),
            significant(r.get("inferences_per_s")),
            _interval(r),
            significant(r.get("throughput_tflops")),
            format_time(r.get("latency_p50_us")),
            format_time(r.get("latency_p99_us")),
        )
    return table


def max_rate_text(search: dict[str, Any] | None) -> str:
    """The search's bracket: `410-430/s`, `<52/s` when no rate passed."""
    if not search:
        return ""
    if not search.get("max_rate"):
        return f"<{significant(search['max_rate_failed'])}/s"
    return f"{significant(search['max_rate'])}-{significant(search['max_rate_failed'])}/s"


def server_table(rows: list[dict[str, Any]], title: str, width: int = 200) -> Table:
    """Server rows: the rate achieved (the asked one in the title when the run has one), latency from
    arrival (queueing included), the p99's re-run interval and its order-statistic interval, the share
    over the bound and the highest rate found under it."""
    rates = {r.get("rate") for r in rows}
    if len(rates) == 1 and None not in rates:
        title = f"{title} · arrivals at {rate(rates.pop())}"
    caption = (
        "latency from the scheduled arrival, queueing included;\n±: where 95% of re-runs' p99 should fall; "
        "CI: the true p99's 95% interval from the requests' order statistics;\n"
        ">bound: share over --latency-bound; max rate: the highest rate whose p99 kept the bound - the lowest "
        "that did not"
    )
    narrow = width < NARROW  # the measured rate moves to the warnings (named there when it falls short)
    columns = ["graph", "status", "streams"] + ([] if narrow else ["measured"]) + ["p50", "p99", ">bound", "max rate"]
    table = _table(title, caption, columns, width)
    variants = len({r.get("variant") or r.get("runtime") for r in rows}) > 1
    for r in rows:
        share = r.get("over_bound")
        p99 = format_time(r.get("latency_p99_us"))
        if p99 and (r.get("unserved") or 0) > UNSERVED_SHARE * (r.get("requests") or 0):
            p99 = ">=" + p99
        cells = [_graph(r, variants), _status(r), streams_text(r, narrow)] + (
            [] if narrow else [rate(r.get("arrival_rate"))]
        )
        ci = time_interval(r.get("latency_p99_ci_low_us"), r.get("latency_p99_ci_high_us"))
        p99_cell = f"{p99} {_interval(r)}".strip() + (f"\nCI {ci}" if ci else "") if p99 else ""  # the CI under the p99
        table.add_row(
            *cells,
            format_time(r.get("latency_p50_us")),
            p99_cell,
            "" if share is None else f"{share:.1%}",
            max_rate_text(r.get("search")),
        )
    return table


def knee_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per graph and configuration swept over stream counts: where throughput saturates and the latency
    paid for it against the smallest count."""
    lines = []
    for sweep in find_sweeps(rows):
        knee = sweep.knee
        if knee is None:
            continue
        p50 = f"p50 latency {format_time(knee.latency_p50_us)}" + (
            f" (x{knee.p50_ratio:.2f})" if knee.p50_ratio else ""
        )
        p99 = f"p99 {format_time(knee.latency_p99_us)}" + (f" (x{knee.p99_ratio:.2f})" if knee.p99_ratio else "")
        best = (
            ""
            if knee.best_streams == knee.streams
            else f"; best {knee.best_streams} streams at {significant(knee.best_throughput)}/s"
        )
        lines.append(
            f"{sweep.graph_id} [{sweep.configuration}]: saturates at {knee.streams} "
            f"stream{'s' if knee.streams > 1 else ''}, "
            f"{significant(knee.throughput)}/s = x{knee.gain:.2f} of {knee.first_streams} stream"
            f"{'s' if knee.first_streams > 1 else ''}{best}; {p50}, {p99} against {knee.first_streams}"
            + (
                f" (the best count's re-run interval reaches {knee.best_margin:.0%} below it: too wide to place "
                "the knee; more rounds or a quieter machine)"
                if knee.best_margin > NO_INTERVAL_TOLERANCE
                else ""
            )
        )
    return lines


ARRIVAL_TOLERANCE = 0.02
"""A server row whose measured arrival rate is further than this below the asked one is flagged."""
UNSERVED_SHARE = 0.01
"""Beyond this share of abandoned requests a server row's p99 is a lower bound."""
LOAD_MOVED = 0.10
"""An unstable server row whose rounds' loads lie further apart than this (10 points) is named as having met
a machine whose speed moved (on the 2-core VM: 56-92 % at one fixed rate, docs/throughput.md)."""


def load_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per problem of throughput and server rows, each naming what to do."""
    lines = []
    behind = [
        r
        for r in rows
        if r.get("mode") == "server"
        and r.get("arrival_rate")
        and r.get("rate")
        and r["arrival_rate"] < r["rate"] * (1 - ARRIVAL_TOLERANCE)
    ]
    if behind:
        r = min(behind, key=lambda r: r["arrival_rate"] / r["rate"])
        lines.append(
            f"{len(behind)} server rows sent arrivals slower than asked (e.g. {r['graph_id']}: "
            f"{rate(r['arrival_rate'])} "
            f"of {rate(r['rate'])}, dispatch lag p99 {format_time(r.get('dispatch_lag_p99_us'))}): the dispatcher "
            "could not keep up, so their latencies are of a lower rate; lower --rate or free the machine"
        )
    dropped = [r for r in rows if r.get("unserved") and r["unserved"] > UNSERVED_SHARE * r["requests"]]
    if dropped:
        r = dropped[0]
        lines.append(
            f"{len(dropped)} server rows could not serve their arrivals in time (e.g. {r['graph_id']}: {r['unserved']} "
            f"of {r['requests']} requests still queued when the round ran out): the rate is beyond what the "
            "streams sustain and their p99 (marked >=) is a lower bound; lower --rate"
        )
    few = [
        r
        for r in rows
        if r.get("mode") == "server"
        and r.get("status") == "ok"
        and r.get("latency_p99_above") is not None
        and r["latency_p99_above"] < P99_ABOVE
    ]
    if few:
        r = min(few, key=lambda r: r["latency_p99_above"])
        lines.append(
            f"{len(few)} server rows' p99 rests on fewer than {P99_ABOVE} slower requests (e.g. {r['graph_id']}: "
            f"{r['latency_p99_above']} of {r['requests']} requests above it): --max-time or --iterations cut "
            "their arrivals, so a re-run's p99 may differ more; raise --max-time (or --iterations)"
        )
    moved = [
        r
        for r in rows
        if r.get("mode") == "server"
        and r.get("unstable")
        and r.get("round_utilization")
        and max(r["round_utilization"]) - min(r["round_utilization"]) > LOAD_MOVED
    ]
    if moved:
        r = max(moved, key=lambda r: max(r["round_utilization"]) - min(r["round_utilization"]))
        lines.append(
            f"{len(moved)} unstable server rows ran their rounds at different loads although the rate was the same "
            f"(e.g. {r['graph_id']}: {load_text(r['utilization'], r['round_utilization'])}, p99 "
            f"{', '.join(format_time(v) for v in r['round_p99_us'])}): the machine's speed moved between "
            "rounds, and a p99 near saturation follows it; compare at a lower --rate, or interleaved with "
            "more --rounds"
        )
    fewer = [
        r
        for r in rows
        if r.get("streams_executed") is not None
        and r.get("streams") is not None
        and r["streams_executed"] != r["streams"]
    ]
    if fewer:
        r = fewer[0]
        lines.append(
            f"{len(fewer)} rows ran fewer streams than requests in flight (e.g. {r['graph_id']}: {r['runtime']} "
            f"compiled {r['streams_executed']} streams for {r['streams']}): the extra requests waited for a stream; "
            "see the row's runtime_options"
        )
    starved = [
        r
        for r in rows
        if r.get("mode") == "throughput"
        and r.get("stream_inferences")
        and min(r["stream_inferences"]) < 0.5 * max(r["stream_inferences"])
    ]
    if starved:
        r = starved[0]
        lines.append(
            f"{len(starved)} throughput rows had a stream doing under half the work of another (e.g. {r['graph_id']}: "
            f"{r['stream_inferences']}): the streams did not share the machine evenly (other load, or more "
            "threads than cores)"
        )
    return lines


def load_line(row: Any) -> str:
    """The figures of a finished throughput or server row, for the one-line-per-row progress output."""
    parts = [f"{streams_text(vars(row))} streams"]
    rerun = (
        (f" {format_spread(row.rerun_rel)} re-run" + (" unstable" if row.unstable else ""))
        if row.rerun_rel is not None
        else ""
    )
    if row.mode == "server":  # the p99's re-run interval (from the rounds) first: the CI only knows this run's requests
        ci = time_interval(row.latency_p99_ci_low_us, row.latency_p99_ci_high_us)
        load = load_text(row.utilization, row.round_utilization)
        parts += [
            f"rate {rate(row.rate)} (measured {rate(row.arrival_rate)})" + (f" at {load}" if load else ""),
            f"p50 {format_time(row.latency_p50_us)}",
            f"p99 {format_time(row.latency_p99_us)}{rerun}"
            + (f" (95% CI {ci}, {row.latency_p99_above} requests above)" if row.latency_p99_above is not None else ""),
        ]
        if row.over_bound is not None:
            parts.append(f"{row.over_bound:.1%} over the bound")
        if row.search:
            parts.append(f"max rate {max_rate_text(row.search)}")
    else:
        parts += [
            f"{significant(row.inferences_per_s)} inf/s{rerun}",
            f"p50 {format_time(row.latency_p50_us)}",
            f"p99 {format_time(row.latency_p99_us)}",
        ]
    return " ".join(parts)
