"""The report's throughput and server sections as display tables: every throughput row (requests in
flight x threads, inferences/s with the re-run interval from its rounds, FLOP rate, latency under
load), where each stream sweep saturates and the latency paid for it, and every server row. They never
share a table with latency rows."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from dbench.render.numbers import format_time, load_text, significant, time_interval
from dbench.store.sweeps import configuration, find_sweeps


@dataclass
class LoadTables:
    """The display tables (empty frames where a report has no such rows)."""

    throughput: pd.DataFrame = field(default_factory=pd.DataFrame)
    knees: pd.DataFrame = field(default_factory=pd.DataFrame)
    server: pd.DataFrame = field(default_factory=pd.DataFrame)


def _rate(value) -> str:
    return "" if value is None or pd.isna(value) else f"{significant(value)}/s"


def _time(value) -> str:
    return "" if value is None or pd.isna(value) else format_time(value)


def _streams(row: pd.Series) -> str:
    text = f"{int(row.streams)}x{int(row.threads_per_stream) if pd.notna(row.threads_per_stream) else '?'}"
    executed = row.streams_executed
    return text + (f" ({int(executed)} ran)" if pd.notna(executed) and executed != row.streams else "")


def _status(row: pd.Series) -> str:
    return "unverified" if row.status == "ok" and not row.counts else row.status


def _configurations(frame: pd.DataFrame) -> list[str]:
    """Each row's configuration (variant without its stream count, precision; machine when several)."""
    several = frame.machine.nunique() > 1
    return [
        configuration({"variant": v, "runtime": r, **({"machine": m} if several else {})}) + f" · {p}"
        for v, r, m, p in zip(frame.variant, frame.runtime, frame.machine, frame.precision)
    ]


def throughput_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per throughput row: kernel, configuration, streams, inferences/s [re-run interval],
    TFLOP/s with every request busy, latency p50 and p99 under load; the status where it did not count."""
    records = []
    for config, (_, row) in zip(_configurations(frame), frame.iterrows()):
        counted = bool(row.counts)
        interval = (
            f" [{significant(row.inferences_per_s_low)}–{significant(row.inferences_per_s_high)}]"
            if counted and pd.notna(row.inferences_per_s_low)
            else ""
        )
        records.append(
            {
                "kernel": row.kernel,
                "configuration": config,
                "streams": _streams(row),
                "inferences/s": (significant(row.inferences_per_s) + interval) if counted else _status(row),
                "TFLOP/s": significant(row.throughput_tflops) if counted else "",
                "p50": _time(row.latency_p50_us) if counted else "",
                "p99": _time(row.latency_p99_us) if counted else "",
            }
        )
    return pd.DataFrame(records).set_index("kernel")


def knee_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per kernel and configuration swept over stream counts: the knee (the smallest count within the
    best count's re-run interval), its throughput and gain over the smallest count, the latency paid."""
    rows = [{**r, "streams": int(r["streams"])} for r in frame[frame.counts].to_dict("records")]
    if frame.machine.nunique() <= 1:
        rows = [{k: v for k, v in r.items() if k != "machine"} for r in rows]
    records = []
    for sweep in find_sweeps(rows):
        knee = sweep.knee
        records.append(
            {
                "kernel": sweep.graph_id,
                "configuration": f"{sweep.configuration} · {sweep.rows[0]['precision']}",
                "streams swept": ",".join(str(r["streams"]) for r in sweep.rows),
                "knee": knee.streams,
                "inferences/s": significant(knee.throughput),
                "gain": f"×{knee.gain:.2f} of {knee.first_streams}",
                "p50 paid": f"{_time(knee.latency_p50_us)}" + (f" (×{knee.p50_ratio:.2f})" if knee.p50_ratio else ""),
                "p99 paid": f"{_time(knee.latency_p99_us)}" + (f" (×{knee.p99_ratio:.2f})" if knee.p99_ratio else ""),
                "best": f"{knee.best_streams}: {significant(knee.best_throughput)}/s, interval to "
                f"-{knee.best_margin:.0%}",
            }
        )
    return pd.DataFrame(records).set_index("kernel") if records else pd.DataFrame()


def max_rate(search) -> str:
    """`410–430/s` (highest rate that kept the bound – lowest that did not), `<52/s` when none did."""
    if not isinstance(search, dict):
        return ""
    if not search.get("max_rate"):
        return f"<{significant(search['max_rate_failed'])}/s"
    return f"{significant(search['max_rate'])}–{significant(search['max_rate_failed'])}/s"


def _order_interval(row: pd.Series) -> str:
    """The p99's order-statistic interval and how many requests lie above the p99: `17.1 ms–23.4 ms (25)`."""
    if pd.isna(row.latency_p99_above):
        return ""
    low, high = (None if pd.isna(v) else v for v in (row.latency_p99_ci_low_us, row.latency_p99_ci_high_us))
    return f"{time_interval(low, high)} ({int(row.latency_p99_above)})"


def _load(row: pd.Series) -> str:
    """The share of the requests' capacity the rate was at the run time the runs took, with the rounds'
    range: `62% load (rounds 56-92%)`; empty for a row logged before dbench recorded it."""
    if pd.isna(row.utilization):
        return ""
    per_round = row.round_utilization
    return load_text(float(row.utilization), [float(v) for v in per_round] if hasattr(per_round, "__len__") else None)


def server_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per server row: rate asked and achieved, the load that was at the runs' own time, latency
    from arrival (p50; p99 with its re-run interval; the p99's order-statistic interval and the requests
    above it), the share over the bound, and the highest rate found under it."""
    records = []
    for config, (_, row) in zip(_configurations(frame), frame.iterrows()):
        counted = bool(row.counts)
        interval = (
            f" [{_time(row.latency_p99_low_us)}–{_time(row.latency_p99_high_us)}]"
            if counted and pd.notna(row.latency_p99_low_us)
            else ""
        )
        bound = f" (bound {_time(row.latency_bound_us)})" if pd.notna(row.latency_bound_us) else ""
        records.append(
            {
                "kernel": row.kernel,
                "configuration": config,
                "streams": _streams(row),
                "rate": _rate(row.rate),
                "measured": _rate(row.arrival_rate) if counted else _status(row),
                "load": _load(row) if counted else "",
                "p50": _time(row.latency_p50_us) if counted else "",
                "p99": (_time(row.latency_p99_us) + interval) if counted else "",
                "p99 95% CI (requests above)": _order_interval(row) if counted else "",
                "over bound": (f"{row.over_bound:.1%}" + bound) if counted and pd.notna(row.over_bound) else "",
                "max rate": max_rate(row.search) if counted else "",
            }
        )
    return pd.DataFrame(records).set_index("kernel")


def load_sections(report) -> list[tuple[str, pd.DataFrame]]:
    """The report's throughput sections that have rows, titled, in reading order."""
    tables = report.load
    return [
        (title, table)
        for title, table in (
            ("Throughput", tables.throughput),
            ("Stream sweeps: where throughput saturates", tables.knees),
            ("Server scenario", tables.server),
        )
        if not table.empty
    ]


def load_tables(throughput: pd.DataFrame, server: pd.DataFrame) -> LoadTables:
    """The display tables of a report's throughput and server frames."""
    tables = LoadTables()
    if not throughput.empty:
        tables.throughput = throughput_table(throughput)
        tables.knees = knee_table(throughput)
    if not server.empty:
        tables.server = server_table(server)
    return tables
