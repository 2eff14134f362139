"""How long a run will take, before it starts: each graph's cost from the latest earlier row of the same
graph and runtime on this machine key (its phase times), else from its FLOPs and bytes against this
machine's ceilings (`dbench peak`), else from the timing settings and, on a CPU, its FLOPs at a rate
no CPU thread reaches (a lower bound). The same figures let `--budget` pick sampling times that fit,
and feed the progress bar's ETA."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbench.errors import UsageError
from dbench.worker.timing import TimingConfig

PROCESS_START_S = 0.8
"""A fresh worker process per variant and round: Python, numpy, onnx and the runtime imported."""
FIXED_ROUND_S = 0.05
"""A round's preparing and input drawing for a small graph when no earlier row says more."""
PACKING_BYTES_PER_S = 1e9
"""Weights copied and pre-packed per second when preparing (no earlier row): a rough rate."""
DRAWING_BYTES_PER_S = 2e8
"""Input bytes a fresh worker draws per second, every round (no earlier row): the seeded uniform draw of the
transformer suite's 1.05 GB LM-head and embedding weights took 5.3 to 6.9 s on the 2-core development VM
(docs/measurements/2026-12-02-transformer-suite.md), so a run of big decode GEMVs is costed by its inputs."""
MIN_SCALE = 0.01
"""--budget never cuts sampling below this fraction of the settings (--quick's 0.02 s of 2 s)."""
SOURCES = ("earlier row", "roofline", "settings only")


@dataclass(frozen=True)
class GraphCost:
    """One graph on one variant: a call's time, a round's fixed cost (inputs, prepare), and the one-off
    costs of verifying and of profiling in the first round; `source` says where the figures came from."""

    call_s: float
    round_s: float
    verify_s: float
    profile_s: float
    source: str


@dataclass(frozen=True)
class Estimate:
    """A run's estimated wall time, each job's share (graph, variant, round), and the sources used."""

    total_s: float
    jobs: dict[tuple[str, str, int], float]
    sources: dict[str, int]

    def describe(self) -> str:
        """`about 3 min 10 s (47 graphs from earlier rows of this machine)`, or `at least ...`."""
        counted = ", ".join(f"{n} from {self._phrase(s)}" for s, n in self.sources.items() if n)
        bound = "at least" if self.sources.get("settings only") else "about"
        return f"{bound} {duration(self.total_s)} ({counted})"

    @staticmethod
    def _phrase(source: str) -> str:
        return {
            "earlier row": "earlier rows of this machine",
            "roofline": "this machine's roofline (dbench peak)",
            "settings only": "the timing settings and a FLOP bound: no earlier row, no dbench peak",
        }[source]


def duration(seconds: float) -> str:
    """`45 s`, `3 min 10 s`, `1 h 5 min`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def parse_duration(text: str) -> float:
    """`600`, `90s`, `10m`, `1.5h` as seconds; one line naming the fix when it is none of those."""
    value = text.strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(value[-1:], None)
    number = value[:-1] if scale else value
    try:
        seconds = float(number) * (scale or 1)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"--budget {text!r} is not a positive duration; write e.g. 600, 90s, 10m or 1.5h")
    return seconds


GRAPH_ID = re.compile(r'"graph_id": "([^"]+)"')
RUNTIME = re.compile(r'"runtime": "([^"]+)"')


def earlier_rows(folder: Path, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(graph id, runtime) -> the latest latency row among `wanted` in the run logs of `folder` (a
    machine's results): newest log first, and a line is parsed only when it names a wanted graph that
    has no row yet, so a folder of many large runs costs little."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(folder.glob("*.jsonl"), reverse=True):  # run ids sort by time
        if len(found) == len(wanted):
            break
        try:
            lines = path.read_text().splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            if (
                '"type": "result"' not in line
                or not (graph := GRAPH_ID.search(line))
                or not (runtime := RUNTIME.search(line))
            ):
                continue
            key = (graph.group(1), runtime.group(1))
            if key not in wanted or key in found:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line: the estimate does without it
            if row.get("mode", "latency") == "latency" and row.get("median_us"):
                found[key] = row
    return found


def _from_row(row: dict[str, Any]) -> GraphCost:
    rounds = row.get("rounds") or 1
    return GraphCost(
        row["median_us"] / 1e6,
        ((row.get("inputs_s") or 0) + (row.get("prepare_s") or 0)) / rounds,
        row.get("verify_s") or 0.0,
        row.get("profile_s") or 0.0,
        "earlier row",
    )


def least_call_s(spec, runtime: str, threads: int) -> float:
    """A call's least time on a CPU runtime (dbench.worker.profiling.least_cpu_call_s); 0 on a GPU, or in
    a precision without such a bound."""
    from dbench.peak.ceilings import device_kind
    from dbench.worker.profiling import least_cpu_call_s

    least = least_cpu_call_s(spec, threads) if device_kind(runtime) == "cpu" else None
    return least or 0.0


def _from_roofline(spec, runtime: str, peaks: dict[str, Any] | None, threads: int) -> GraphCost:
    from dbench.peak.ceilings import ceilings

    tflops, gbps = ceilings(peaks, spec.precision, runtime)
    weights = sum(t.nbytes for t in spec.weights)
    drawn = sum(t.nbytes for t in spec.inputs)
    fixed = FIXED_ROUND_S + weights / PACKING_BYTES_PER_S + drawn / DRAWING_BYTES_PER_S
    if tflops and gbps:
        call, source = max(spec.flops / (tflops * 1e12), spec.min_bytes / (gbps * 1e9)), "roofline"
    else:
        call, source = least_call_s(spec, runtime, threads), "settings only"
    # Verifying reads the outputs once more; profiling builds a second session and makes two calls.
    return GraphCost(call, fixed, call, fixed + 2 * call, source)


@dataclass(frozen=True)
class Earlier:
    """What a machine's results folder tells the estimate: the latest latency row of each wanted (graph id,
    runtime) and its `dbench peak` ceilings. Read where the folder is (the fleet's caller reads it for a
    machine that has none of its own)."""

    rows: dict[tuple[str, str], dict[str, Any]]
    peaks: dict[str, Any] | None

    @classmethod
    def read(cls, folder: Path, wanted: set[tuple[str, str]]) -> Earlier:
        from dbench.peak.ceilings import read_peak_file

        if not folder.is_dir():
            return cls({}, None)
        return cls(earlier_rows(folder, wanted), read_peak_file(folder))


def graph_costs(
    items: Iterable, runtimes: dict[str, int], folder: Path, earlier: Earlier | None = None
) -> dict[tuple[str, str], GraphCost]:
    """(graph id, runtime) -> its cost on this machine (`folder`: its results/<machine key>/, or what
    `earlier` already read of it); `runtimes` maps each runtime to the most threads a variant gives it
    (the fastest it can run)."""
    items = list(items)
    if earlier is None:
        earlier = Earlier.read(folder, {(i.spec.id, r) for i in items for r in runtimes})
    costs = {}
    for item in items:
        for runtime in runtimes:
            row = earlier.rows.get((item.spec.id, runtime))
            costs[(item.spec.id, runtime)] = (
                _from_row(row) if row else _from_roofline(item.spec, runtime, earlier.peaks, runtimes[runtime])
            )
    return costs


def round_seconds(call_s: float, timing: TimingConfig, fixed_s: float = 0.0) -> tuple[int, float, float]:
    """(rounds a graph gets, the first round's warm-up and sampling in seconds, a later round's) under
    `timing`, as the run loop and the timing loop decide them (a later round pays its own work out of
    its share: TimingConfig.paid); `fixed_s`: a round's inputs and preparing."""
    share = timing.per_round()
    warm = max(share.warmup_time, share.warmup_calls * call_s)
    warm_calls = max(share.warmup_calls, math.ceil(share.warmup_time / call_s)) if call_s > 0 else share.warmup_calls

    def sampling(config: TimingConfig) -> float:
        return min(max(config.min_time, config.min_samples * call_s), max(config.max_time, call_s))

    first, later = warm + sampling(share), warm + sampling(share.paid(fixed_s + warm, warm_calls))
    if timing.round_too_costly(fixed_s + warm):
        return 1, first, later
    if timing.share_rounds is not None:  # --resolve: the rounds are decided as they go; at most this many
        return timing.rounds, first, later
    if share.iterations is not None:
        each = warm + share.iterations * call_s
        return timing.rounds, each, each
    rounds, sampled = 1, first - warm
    while rounds < timing.rounds and sampled + max(share.min_time, call_s) <= timing.max_time * (1 + 1e-9):
        rounds += 1
        sampled += later - warm
    return rounds, first, later


def estimate(
    costs: dict[tuple[str, str], GraphCost],
    keys: list[tuple[str, str, str]],
    timing: TimingConfig,
    verify: bool,
    profile: bool,
    variants: int,
    measured: dict[tuple[str, str], int] | None = None,
    rounds_for: dict[str, int] | None = None,
) -> Estimate:
    """The run's estimate over `keys` (graph id, variant label, runtime) still to run; `measured` holds
    the rounds a resumed run already has per (graph id, variant label); `rounds_for` the rounds expected
    of a graph where they are not fixed (--resolve: from the machine's calibration)."""
    jobs: dict[tuple[str, str, int], float] = {}
    sources = dict.fromkeys(SOURCES, 0)
    for graph, label, runtime in keys:
        cost = costs[(graph, runtime)]
        sources[cost.source] += 1
        rounds, first, later = round_seconds(cost.call_s, timing, cost.round_s)
        rounds = min(rounds, (rounds_for or {}).get(graph, rounds))
        profiled = profile and (timing.profile_cap_s() is None or cost.profile_s <= timing.profile_cap_s())
        once = (cost.verify_s if verify else 0.0) + (cost.profile_s if profiled else 0.0)
        for number in range((measured or {}).get((graph, label), 0), rounds):
            jobs[(graph, label, number)] = cost.round_s + (first + once if number == 0 else later)
    most = timing.rounds if timing.share_rounds is None else max((n + 1 for (_, _, n) in jobs), default=0)
    processes = PROCESS_START_S * most * variants if keys else 0.0
    return Estimate(sum(jobs.values()) + processes, jobs, sources)


def fit_budget(
    budget_s: float,
    costs: dict[tuple[str, str], GraphCost],
    keys: list[tuple[str, str, str]],
    timing: TimingConfig,
    verify: bool,
    profile: bool,
    variants: int,
) -> tuple[TimingConfig, bool, list[str]]:
    """The timing (sampling scaled down, at most to MIN_SCALE) and whether to profile, that fit the run
    within `budget_s`, and what was given up, in words; UsageError when nothing fits."""

    def total(scale: float, with_profile: bool) -> float:
        scaled = dataclasses.replace(timing, min_time=timing.min_time * scale, max_time=timing.max_time * scale)
        return estimate(costs, keys, scaled, verify, with_profile, variants).total_s

    if total(1.0, profile) <= budget_s:
        return timing, profile, []
    for with_profile in (True, False) if profile else (False,):
        if total(MIN_SCALE, with_profile) <= budget_s:
            low, high = MIN_SCALE, 1.0
            for _ in range(30):
                mid = (low + high) / 2
                low, high = (mid, high) if total(mid, with_profile) <= budget_s else (low, mid)
            fitted = dataclasses.replace(
                timing, min_time=round(timing.min_time * low, 3), max_time=round(timing.max_time * low, 3)
            )
            gave_up = [
                f"sampling cut to {fitted.min_time:g} s per graph (from {timing.min_time:g} s; at most "
                f"{fitted.max_time:g} s): "
                "fewer samples a round, so wider intervals"
            ]
            if profile and not with_profile:
                gave_up.append("no per-node profile (no kernel names, kernel time or executed precision)")
            return fitted, with_profile, gave_up
    floor = total(MIN_SCALE, False)
    raise UsageError(
        f"--budget {duration(budget_s)} cannot hold this run: it needs at least {duration(floor)} even with "
        f"sampling cut to {MIN_SCALE:.0%} and no profile; select fewer graphs (--ops, --id) or raise --budget"
    )
