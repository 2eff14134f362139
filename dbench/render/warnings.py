"""Warnings after a run that say what to do: unstable rows, a busy machine, precision fallback."""

from __future__ import annotations

from typing import Any

from dbench.render.numbers import format_spread
from dbench.store.metadata import BUSY_LOAD_PER_CORE, is_busy, own_load
from dbench.store.schema import executed_statement
from dbench.worker.timing import TimingConfig


def run_warnings(rows: list[dict[str, Any]], host: dict[str, Any], timing: dict[str, Any] | None = None) -> list[str]:
    """One line per problem, each naming its fix; `timing` is the run header's timing settings."""
    lines = []
    threshold = (timing or {}).get("unstable_above", TimingConfig().unstable_above)
    unstable = [r for r in rows if r.get("unstable")]
    if unstable:
        width = {
            id(r): r.get("rerun_rel") or r.get("ci_rel") or 0.0 for r in unstable
        }  # ci_rel: rows from before rounds
        worst = max(unstable, key=lambda r: width[id(r)])
        figure = {"throughput": "throughput", "server": "p99"}.get(worst.get("mode") or "latency", "median")
        lines.append(
            f"{len(unstable)} rows unstable (a re-run's {figure} could land more than ±{threshold:.0%} away), worst "
            f"{worst['graph_id']} at {format_spread(width[id(worst)])}: its rounds disagree; re-run them on a "
            "quiet machine "
            "with more rounds (e.g. --rounds 10 --id '<pattern>') before publishing"
        )
    few = [r for r in rows if r.get("status") in ("ok", "disputed") and r.get("rounds") and r.get("rerun_rel") is None]
    if few:
        lines.append(
            f"{len(few)} rows have no interval (e.g. {few[0]['graph_id']}: "
            f"{few[0].get('interval_note') or 'too few rounds'}); "
            "a verdict needs 3 rounds: raise --max-time for slow graphs, or --rounds"
        )
    cores = host.get("cpu_affinity") or host.get("cpu_count")
    end = [rows[-1]["load_1m"]] if rows and rows[-1].get("load_1m") is not None else None
    own = own_load(rows, cores, host.get("taken_at"))
    for moment, load, mine in (("start", host.get("load_start"), 0.0), ("end", end, own)):
        if is_busy(load, cores, mine):
            lines.append(
                f"machine busy at the {moment} of the run: 1-minute load {load[0]} on {cores} cores"
                + (f", at most {mine:.1f} of it this run's own threads" if mine else "")
                + f" (flagged above {BUSY_LOAD_PER_CORE} per core of other work): stop other work and re-run for "
                "numbers to publish"
            )
    resolving = [r for r in rows if r.get("resolve_target") is not None and r.get("status") == "ok"]
    unresolved = [r for r in resolving if not r.get("resolved")]
    if unresolved:
        graphs = list(dict.fromkeys(r["graph_id"] for r in unresolved))
        lines.append(
            f"--resolve {unresolved[0]['resolve_target']:.0%}: {len(graphs)} of "
            f"{len({r['graph_id'] for r in resolving})} "
            f"graphs did not get there; e.g. {graphs[0]}: {unresolved[0].get('resolve_note')}"
        )
    overlapped = [r for r in rows if r.get("overlapped")]
    if overlapped:
        others = sorted({o for r in overlapped for o in r["overlapped"]})
        lines.append(
            f"{len(overlapped)} rows were timed while another dbench was timing on this machine ({', '.join(others)}): "
            "each carries the other's load (overlapped); time them again alone"
        )
    slowed = sorted({(r.get("variant"), r["injected_slowdown"]) for r in rows if r.get("injected_slowdown")})
    for label, fraction in slowed:
        lines.append(
            f"{label} carries an injected slowdown of {fraction:.0%} (DBENCH_BENCHMARK_SLOWDOWN): a benchmark of "
            "dbench itself, not the runtime's times"
        )
    disputed = [r for r in rows if r.get("status") == "disputed"]
    if disputed:
        lines.append(
            f"{len(disputed)} rows disputed (e.g. {disputed[0]['graph_id']}: {disputed_note(disputed[0])}): two "
            "independent runtimes agree with each other against onnx.reference, so their times count and the "
            "reference is taken to be wrong; each row names the implementations and the node (cross_check, "
            "first_difference): report the op to dbench"
        )
    unchecked = [r for r in rows if r.get("status") == "mismatch" and (r.get("cross_check") or {}).get("why")]
    if unchecked:
        lines.append(
            f"{len(unchecked)} mismatch rows rest on onnx.reference alone (e.g. {unchecked[0]['graph_id']}: "
            f"{unchecked[0]['cross_check']['why']}): install the other CPU runtime (pip install "
            "'dbench[cpu,openvino]') "
            "so that a second implementation can confirm or overrule it"
        )
    fallback = [r for r in rows if r.get("precision_fallback")]
    if fallback:
        r = fallback[0]
        lines.append(
            f"{len(fallback)} rows ran in another precision than asked (e.g. {r['graph_id']}: "
            f"{r['precision']} -> {executed_statement(r)}): their times are not {r['precision']} times; "
            "check the runtime's precision options (--option) before comparing"
        )
    return lines


def disputed_note(row: dict[str, Any]) -> str:
    """`openvino agrees; onnx.reference differs from BatchNormalization opset 9 on`: who overruled the
    reference of a disputed row, and where the reference parted from them."""
    second = (row.get("cross_check") or {}).get("runtime") or "a second runtime"
    first = row.get("first_difference") or {}
    where = f" from {first['op']} opset {first['opset']} on" if first.get("op") else ""
    return f"{second} agrees; onnx.reference differs{where}"


def peak_line(rows: list[dict[str, Any]], peaks: dict[str, Any] | None) -> str:
    """Where the verified rows sit against their own device's roofline on this machine (`dbench peak`: a
    GPU runtime's rows against the GPU's ceilings, a CPU runtime's against the host's), or how to get one."""
    from dbench.peak.ceilings import roof_fraction

    if not peaks:
        return "no ceilings measured for this machine: run dbench peak to see rows as a fraction of peak"
    measured = [(f, r["graph_id"]) for r in rows if (f := roof_fraction(r, peaks)) is not None]
    if not measured:
        return (
            "no verified row has its device's ceilings in peak.json (a GEMM rate in its precision and its device's "
            "bandwidth): no fraction of peak; run dbench peak --runtime <its runtime> --precision <its precision>"
        )
    fractions = [(f, graph) for f, graph in measured if f <= 1.0]
    above = sorted(((f, graph) for f, graph in measured if f > 1.0), reverse=True)
    line = f"against each row's own device's roofline (peak.json, {peaks.get('taken_at', '')}): "
    if fractions:
        values = sorted(f for f, _ in fractions)
        best = max(fractions)
        line += (
            f"median {values[len(values) // 2]:.0%} of the roof over {len(values)} rows, best {best[0]:.0%} ({best[1]})"
        )
    if above:
        line += (
            f"{'; ' if fractions else ''}{len(above)} rows ran above the measured ceiling (e.g. {above[0][1]} at "
            f"{above[0][0]:.0%}): the ceiling is low, so no fraction is given for them; re-run dbench peak on a "
            "quiet machine"
        )
    return line
