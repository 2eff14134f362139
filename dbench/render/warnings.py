"""Warnings after a run that say what to do: unstable rows, a busy machine, precision fallback."""

from __future__ import annotations

from typing import Any

from dbench.worker.stats import CI_THRESHOLD
from dbench.store.metadata import BUSY_LOAD_PER_CORE, is_busy


def run_warnings(rows: list[dict[str, Any]], host: dict[str, Any]) -> list[str]:
    """One line per problem, each naming its fix."""
    lines = []
    unstable = [r["graph_id"] for r in rows if r.get("unstable")]
    if unstable:
        lines.append(f"{len(unstable)} rows unstable (median's 95% interval wider than ±{CI_THRESHOLD:.0%}), e.g. "
                     f"{unstable[0]}: re-run them with a longer --min-time (e.g. --min-time 10 --id '<pattern>') on a quiet machine")
    few = [r["graph_id"] for r in rows if r.get("status") == "ok" and r.get("ci_rel") is None and "ci_rel" in r]
    if few:
        lines.append(f"{len(few)} rows have under 6 samples, so no interval (--quick?): raise --min-time for figures to publish")
    cores = host.get("cpu_affinity") or host.get("cpu_count")
    end = [rows[-1]["load_1m"]] if rows and rows[-1].get("load_1m") is not None else None
    for moment, load in (("start", host.get("load_start")), ("end", end)):
        if is_busy(load, cores):
            lines.append(f"machine busy at the {moment} of the run: 1-minute load {load[0]} on {cores} cores (flagged above "
                         f"{BUSY_LOAD_PER_CORE} per core): stop other work and re-run for numbers to publish")
    fallback = [r for r in rows if r.get("precision_fallback")]
    if fallback:
        r = fallback[0]
        lines.append(f"{len(fallback)} rows ran in another precision than asked (e.g. {r['graph_id']}: "
                     f"{r['precision']} -> {r['precision_executed']}): their times are not {r['precision']} times; "
                     "check the runtime's precision options (--option) before comparing")
    return lines


def peak_line(rows: list[dict[str, Any]], peaks: dict[str, Any] | None) -> str:
    """Where the verified rows sit against this machine's roofline (`dbench peak`), or how to get one."""
    from dbench.report.peak import roof_fraction

    if not peaks:
        return "no ceilings measured for this machine: run dbench peak to see rows as a fraction of peak"
    fractions = [(f, r["graph_id"]) for r in rows if (f := roof_fraction(r, peaks)) is not None]
    if not fractions:
        return "no verified row in a precision dbench peak measured: no fraction of peak"
    values = sorted(f for f, _ in fractions)
    best = max(fractions)
    return (f"against this machine's roofline (peak.json, {peaks.get('taken_at', '')}): median {values[len(values) // 2]:.0%}"
            f" of the roof over {len(values)} rows, best {best[0]:.0%} ({best[1]})")
