"""Runs side by side, kernel by kernel, with verdicts that know the noise a re-run meets.

A side is one run, several runs, or one variant of an interleaved run. Per graph verified on both
sides, the test works on log round medians (dbench.stats.differences): the paired t over an
interleaved run's rounds (a and b ran back to back in each round, so drift cancels), Welch's t over
two runs' rounds, or the pooled t over several runs a side (their spread is the between-run
variance). A table's verdicts control the false-discovery rate (Benjamini-Hochberg at FDR): `slower`
or `faster` only where the adjusted p-value is within it, `same` otherwise, and `too few rounds`
where the test has fewer degrees of freedom than it needs. Beside each verdict stands the smallest
change that kernel's data resolves.

Rows of one mode only are compared: a latency row's figure is its per-call median (rounds: the round
medians), a throughput row's its time per inference (rounds: each round's wall time / inferences, so
lower is higher throughput and `faster` means more inferences per second), a server row's its p99
latency at one arrival rate (rounds: each round's p99). A throughput row is never set against a
latency row."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dbench.errors import InputError, UsageError
from dbench.stats import sequential
from dbench.stats.differences import (
    MIN_DF,
    Difference,
    paired,
    paired_rounds_to_resolve,
    paired_variance,
    pooled,
    welch,
)
from dbench.stats.fdr import FDR, bh_adjusted
from dbench.stats.moderation import Prior, fit_prior
from dbench.stats.student import t_quantile
from dbench.store.calibration import entry_for, read_calibration
from dbench.store.log import RunLog, find_run
from dbench.store.metadata import is_busy, own_load
from dbench.store.shards import LogicalRun, find_parts, merge

MIN_ROUNDS = 3
"""Rounds a side that a rounds-based verdict needs (df >= 2 per side)."""
RESOLUTION = 0.10
"""A `same` verdict whose data cannot resolve a change this large is counted as too noisy to say."""
MAX_ROUNDS_TO_RESOLVE = 1000
"""The most rounds a too noisy kernel's estimate of the rounds it would need goes up to."""
CHANGED = ("faster", "slower")


FIGURES = {
    "latency": ("median_us", "round_medians_us"),
    "throughput": ("time_per_inference_us", "round_per_inference_us"),
    "server": ("latency_p99_us", "round_p99_us"),
}
"""Per mode: the row's figure a verdict is about (a time in µs: lower is faster) and its per-round values."""


def mode_of(row: dict) -> str:
    """latency, throughput or server; rows written before modes are latency rows."""
    return row.get("mode") or "latency"


def figure(row: dict) -> float | None:
    """The time a row's verdicts are about (see the module): median, time per inference, or p99."""
    return row.get(FIGURES.get(mode_of(row), FIGURES["latency"])[0])


def verified(row: dict | None) -> bool:
    """A row whose time counts: it ran, and its output matched the reference, or two independent
    runtimes agreed with each other against the reference (`disputed`: docs/method.md)."""
    return bool(
        row and ((row.get("status") == "ok" and row.get("verified")) or row.get("status") == "disputed") and figure(row)
    )


def _disputed(a: list[dict], b: list[dict]) -> str:
    """Which sides' rows are disputed (their time counts, their reference was overruled), or ''."""
    sides = [side for side, rows in (("a", a), ("b", b)) if any(r.get("status") == "disputed" for r in rows)]
    return f"{' and '.join(sides)}: disputed, two runtimes agree against onnx.reference" if sides else ""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: the rows of one or more runs (one dict graph id -> row per run), or
    one variant of an interleaved run; `warnings` says what the reader must know of its runs."""

    label: str
    runs: list[dict[str, dict]]
    run_ids: list[str]
    machines: list[str]
    warnings: list[str] = field(default_factory=list)
    calibration: str = ""
    """This machine's calibration of the side's runtime and threads, in one line (`dbench calibrate`), or ''."""


@dataclass(frozen=True)
class Pair:
    """One graph on both sides and the comparison's outcome (b against a)."""

    graph_id: str
    a: list[dict]
    b: list[dict]
    difference: Difference | None = None
    verdict: str = ""
    """faster | slower | same | too few rounds | no rounds | no spread | only in a | a: mismatch ..."""
    detail: str = ""
    q: float | None = None
    """The Benjamini-Hochberg adjusted p-value over the table."""
    noise: float | None = None
    """The SD of a round's (or run's) log time this test measured: the kernel's noise level."""
    rounds_to_resolve: int | None = None
    """An interleaved `same` that cannot resolve the table's resolution: the paired rounds that would,
    from the noise measured (dbench.stats.differences.paired_rounds_to_resolve)."""

    @property
    def ratio(self) -> float | None:
        """b/a: from the test where there is one, else the ratio of the sides' geometric-mean medians."""
        if self.difference:
            return self.difference.ratio
        if self.a and self.b and all(verified(r) for r in self.a + self.b):
            return _geomean([figure(r) for r in self.b]) / _geomean([figure(r) for r in self.a])
        return None

    @property
    def rounds(self) -> int:
        """The fewest rounds a row of either side has (an interleaved run: its paired rounds)."""
        return min((len(_rounds(r)) for r in self.a + self.b), default=0)

    def to_dict(self) -> dict[str, Any]:
        """One kernel's figures for --format csv/json."""
        d = self.difference
        name = FIGURES.get(mode_of((self.a or self.b)[0]), FIGURES["latency"])[
            0
        ]  # median_us, time_per_inference_us, ...
        return {
            "graph_id": self.graph_id,
            "verdict": self.verdict,
            "detail": self.detail,
            "ratio": self.ratio,
            "low": d.low if d else None,
            "high": d.high if d else None,
            "p": d.p if d else None,
            "q": self.q,
            "df": d.df if d else None,
            "method": d.method if d else None,
            "resolvable": d.resolvable if d else None,
            "noise": self.noise,
            "rounds_to_resolve": self.rounds_to_resolve,
            f"a_{name}": _geomean([figure(r) for r in self.a if figure(r)]),
            f"b_{name}": _geomean([figure(r) for r in self.b if figure(r)]),
            "a_runs": len(self.a),
            "b_runs": len(self.b),
            "a_rounds": sum(len(_rounds(r)) for r in self.a),
            "b_rounds": sum(len(_rounds(r)) for r in self.b),
            "a_samples": sum(r.get("samples") or 0 for r in self.a),
            "b_samples": sum(r.get("samples") or 0 for r in self.b),
        }


def _geomean(values: list[float]) -> float | None:
    return float(math.exp(np.mean(np.log(values)))) if values else None


def _unusable(a: list[dict], b: list[dict]) -> str:
    """Why a graph's rows cannot be compared, or ''."""
    if not a or not b:
        return "only in " + ("b" if not a else "a")
    for side, rows in (("a", a), ("b", b)):
        for row in rows:
            if not verified(row):
                return f"{side}: {row['status'] if row['status'] != 'ok' else 'unverified'}"
    return ""


def _rounds(row: dict) -> list[float]:
    return list(row.get(FIGURES.get(mode_of(row), FIGURES["latency"])[1]) or [])


def _log_mean(row: dict) -> float:
    return float(np.mean(np.log(_rounds(row))))


def _drift(rows: list[dict]) -> tuple[float, float]:
    """The between-run drift variance the rows' earlier runs measured (the mean over the rows that
    carry one) and its degrees of freedom (the fewest); no drift (0, inf) when none does."""
    found = [(r["drift_sd"] ** 2, r.get("drift_df") or 1) for r in rows if r.get("drift_sd") is not None]
    if not found:
        return 0.0, math.inf
    return float(np.mean([v for v, _ in found])), float(min(df for _, df in found))


def sequential_rows(rows: list[dict]) -> bool:
    """Rows whose rounds --resolve decided as they went: their test must be the anytime-valid one."""
    return any(r.get("resolve_target") is not None for r in rows)


def paired_prior(row_pairs: list[tuple[dict, dict]]) -> Prior | None:
    """The prior of an interleaved table's paired variances (dbench.stats.moderation) from its kernels
    with enough paired rounds for a test (rounds --resolve decided as they went take no part: their
    test is not moderated); None with too few kernels."""
    found = []
    for a, b in row_pairs:
        if sequential_rows([a, b]):
            continue
        ra, rb = _rounds(a), _rounds(b)
        n = min(len(ra), len(rb))
        if n >= MIN_ROUNDS:
            found.append(paired_variance(ra[:n], rb[:n]))
    return fit_prior([v for v, _ in found], [d for _, d in found])


def test_rows(
    a: list[dict], b: list[dict], interleaved: bool, prior: Prior | None = None
) -> tuple[Difference | None, str, str, float | None]:
    """(difference, verdict if no verdict can be given else '', detail, noise) for verified rows of
    one graph: `a` and `b` hold one row per run of each side (`interleaved`: the same run's two variants,
    whose paired variance the table's `prior` moderates)."""
    if any(not _rounds(r) for r in a + b):
        return None, "no rounds", "a run made before rounds (schema < 3): only the ratio of medians", None
    if len(a) == 1 and len(b) == 1:
        ra, rb = _rounds(a[0]), _rounds(b[0])
        if interleaved:
            n = min(len(ra), len(rb))
            if n < MIN_ROUNDS:
                return None, "too few rounds", f"{n} paired rounds; {MIN_ROUNDS} needed", None
            # Rounds --resolve gave until the interval was narrow enough: the anytime-valid test, whose level
            # holds at the round the run stopped (a fixed-round t over them would not).
            difference = sequential.paired(ra[:n], rb[:n]) if sequential_rows(a + b) else paired(ra[:n], rb[:n], prior)
            noise = float(np.std(np.log(rb[:n]) - np.log(ra[:n]), ddof=1) / math.sqrt(2))
        else:
            if min(len(ra), len(rb)) < MIN_ROUNDS:
                return None, "too few rounds", f"a {len(ra)}, b {len(rb)} rounds; {MIN_ROUNDS} a side needed", None
            difference = welch(ra, rb, *_drift(a + b))
            noise = float(math.sqrt((np.var(np.log(ra), ddof=1) + np.var(np.log(rb), ddof=1)) / 2))
    else:
        xa, xb = [_log_mean(r) for r in a], [_log_mean(r) for r in b]
        if len(xa) + len(xb) - 2 < MIN_DF:
            return None, "too few runs", f"a {len(xa)}, b {len(xb)} runs; 4 in all needed for a between-run test", None
        difference = pooled(xa, xb)
        squares = sum(((np.array(x) - np.mean(x)) ** 2).sum() for x in (xa, xb))
        noise = float(math.sqrt(squares / (len(xa) + len(xb) - 2)))
    if difference is None:
        return (
            None,
            "no spread",
            "every round took the same time: the clock or the scheduler's tick quantises it",
            noise,
        )
    if difference.df < MIN_DF:
        return (
            difference,
            "too few rounds",
            f"the test has {difference.df:.1f} degrees of freedom; {MIN_DF:g} needed",
            noise,
        )
    return difference, "", "", noise


@dataclass
class Comparison:
    """A whole table: sides, method, the pairs with their verdicts, and the rates it was judged at."""

    a: Side
    b: Side
    interleaved: bool
    pairs: list[Pair]
    fdr: float = FDR
    resolution: float = RESOLUTION
    mode: str = "latency"
    """The rows' mode: latency, throughput (figures are times per inference) or server (p99s)."""

    @property
    def method(self) -> str:
        if self.interleaved:
            if any(p.difference and "anytime" in p.difference.method for p in self.pairs):
                return (
                    "paired over the rounds of an interleaved run (drift cancels), anytime-valid: --resolve "
                    "stopped each "
                    "graph as its interval narrowed, so a confidence sequence keeps the level"
                )
            moderated = any(p.difference and "moderated" in p.difference.method for p in self.pairs)
            return "paired t over the rounds of an interleaved run (drift cancels)" + (
                ", variances moderated over the table's kernels" if moderated else ""
            )
        if len(self.a.runs) == 1 and len(self.b.runs) == 1:
            if any(p.difference and "drift" in p.difference.method for p in self.pairs):
                return "Welch's t over each run's rounds and the drift between runs that earlier runs measured"
            return (
                "Welch's t over each run's rounds alone (no drift between runs measured on these rows: a machine "
                "state that outlasts a run is taken for a change)"
            )
        return "pooled t over runs (their spread is the between-run variance)"

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pair in self.pairs:
            key = (
                pair.verdict
                if pair.verdict in (*CHANGED, "same", "too few rounds", "too few runs", "no rounds", "no spread")
                else "not compared"
            )
            counts[key] = counts.get(key, 0) + 1
        counts["too noisy"] = len(self.too_noisy())
        return counts

    def too_noisy(self) -> list[Pair]:
        """The `same` kernels whose data cannot resolve the table's resolution."""
        return [
            p for p in self.pairs if p.verdict == "same" and p.difference and p.difference.resolvable > self.resolution
        ]

    def noise(self) -> list[float]:
        return sorted(p.noise for p in self.pairs if p.noise is not None and p.verdict in (*CHANGED, "same"))

    def geomean(self) -> Difference | None:
        """The geometric-mean ratio b/a over the tested graphs, with its 95 % interval from their
        standard errors (Welch-Satterthwaite degrees of freedom)."""
        tested = [p.difference for p in self.pairs if p.difference and p.verdict in (*CHANGED, "same")]
        if not tested:
            return None
        n = len(tested)
        d = float(np.mean([math.log(t.ratio) for t in tested]))
        var = sum(t.se**2 for t in tested) / n**2
        df = sum(t.se**2 for t in tested) ** 2 / sum(t.se**4 / t.df for t in tested)
        half = t_quantile(0.975, df) * math.sqrt(var)
        return Difference(
            math.exp(d),
            math.exp(d - half),
            math.exp(d + half),
            float("nan"),
            df,
            math.sqrt(var),
            "geometric mean",
            float("nan"),
        )

    def summary(self) -> dict[str, Any]:
        """The table in numbers: counts of each verdict, noise level, geometric mean (for --format json)."""
        noise = self.noise()
        mean = self.geomean()
        return {
            "a": self.a.label,
            "b": self.b.label,
            "a_runs": self.a.run_ids,
            "b_runs": self.b.run_ids,
            "mode": self.mode,
            "figure": FIGURES[self.mode][0],
            "method": self.method,
            "fdr": self.fdr,
            "resolution": self.resolution,
            "counts": self.counts(),
            "noise_median": noise[len(noise) // 2] if noise else None,
            "noise_range": [noise[0], noise[-1]] if noise else None,
            "geomean": mean.to_dict() if mean else None,
            "warnings": self.a.warnings + self.b.warnings,
        }


def side_mode(side: Side) -> tuple[str, set]:
    """The mode of a side's rows, and the arrival rates of its server rows; one line when its runs mix modes."""
    modes = {mode_of(row) for run in side.runs for row in run.values()}
    if len(modes) > 1:
        raise UsageError(f"{side.label} mixes {' and '.join(sorted(modes))} rows; compare runs of one mode")
    mode = modes.pop() if modes else "latency"
    return mode, {row.get("rate") for run in side.runs for row in run.values() if mode == "server"}


def check_modes(a: Side, b: Side) -> str:
    """The mode both sides share; one line when they differ (a throughput row is never compared with a
    latency row) or when server rows ran at different arrival rates."""
    (mode_a, rates_a), (mode_b, rates_b) = side_mode(a), side_mode(b)
    if mode_a != mode_b:
        raise UsageError(
            f"{a.label} holds {mode_a} rows and {b.label} {mode_b} rows: a {mode_a} row is not comparable "
            f"with a {mode_b} row; compare runs of the same mode"
        )
    rates = rates_a | rates_b
    if len(rates) > 1:
        raise UsageError(
            f"server rows at different arrival rates ({', '.join(f'{r:g}/s' for r in sorted(rates))}): "
            "their p99s answer different questions; compare server runs made with the same --rate"
        )
    return mode_a


def compare_sides(
    a: Side, b: Side, interleaved: bool = False, fdr: float = FDR, resolution: float = RESOLUTION
) -> Comparison:
    """Every graph of either side, in a's order then b's extras, judged as the module docstring says;
    refused when the sides' modes differ (`check_modes`)."""
    mode = check_modes(a, b)
    order = list(dict.fromkeys([g for run in a.runs for g in run] + [g for run in b.runs for g in run]))
    rows = [
        (graph, [run[graph] for run in a.runs if graph in run], [run[graph] for run in b.runs if graph in run])
        for graph in order
    ]
    prior = paired_prior([(ra[0], rb[0]) for _, ra, rb in rows if not _unusable(ra, rb)]) if interleaved else None
    pairs = []
    for graph, rows_a, rows_b in rows:
        why = _unusable(rows_a, rows_b)
        if why:
            pairs.append(Pair(graph, rows_a, rows_b, verdict=why))
            continue
        difference, verdict, detail, noise = test_rows(rows_a, rows_b, interleaved, prior)
        detail = "; ".join(d for d in (detail, _disputed(rows_a, rows_b)) if d)
        pairs.append(Pair(graph, rows_a, rows_b, difference, verdict, detail, noise=noise))
    tested = [i for i, p in enumerate(pairs) if p.difference is not None and not p.verdict]
    adjusted = bh_adjusted([pairs[i].difference.p for i in tested])
    for i, q in zip(tested, adjusted):
        pair = pairs[i]
        verdict = ("slower" if pair.difference.ratio > 1 else "faster") if q <= fdr else "same"
        needed = None
        if (
            interleaved
            and verdict == "same"
            and pair.difference.resolvable > resolution
            and "anytime" not in pair.difference.method
        ):
            needed = paired_rounds_to_resolve(pair.difference, pair.rounds, resolution, MAX_ROUNDS_TO_RESOLVE)
            needed = max(MIN_ROUNDS, needed) if needed else None
        pairs[i] = Pair(pair.graph_id, pair.a, pair.b, pair.difference, verdict, pair.detail, q, pair.noise, needed)
    return Comparison(a, b, interleaved, pairs, fdr, resolution, mode)


def open_run(results: Path, name: str) -> RunLog:
    """A run by id (looked up under `results/`) or by the path of its .jsonl log."""
    path = Path(name)
    if path.suffix == ".jsonl":
        if not path.is_file():
            raise InputError(f"no run log at {path}")
        return RunLog.read(path)
    return RunLog.read(find_run(results, name))


def variant_of(row: dict, header: dict) -> str:
    """The variant a row was timed under (rows before variants: the run's runtime)."""
    return row.get("variant") or header.get("runtime", {}).get("name", "")


def warnings_of(log: RunLog) -> list[str]:
    """What a reader of verdicts must know of a run: a busy machine at its start or end, --quick, a torn
    last line (a kill mid-write: that row is left out)."""
    header = log.header()
    rows = log.rows()
    host = header.get("host", {})
    cores = host.get("cpu_affinity") or host.get("cpu_count")
    warnings = [note for note in [log.torn_note()] if note]
    end = rows[-1].get("load_1m") if rows else None
    own = own_load(rows, cores, host.get("taken_at"))
    for moment, load, mine in (("start", (host.get("load_start") or [None])[0], 0.0), ("end", end, own)):
        if load is not None and is_busy([load], cores, mine):
            warnings.append(
                f"{header['run_id']} ran on a busy machine (1-minute load {load} at its {moment}, {cores} cores"
                + (f", at most {mine:.1f} of it its own threads" if mine else "")
                + "): its times carry other work's noise"
            )
    if header.get("request", {}).get("quick"):
        warnings.append(f"{header['run_id']} is a --quick run: few samples a round, so wide intervals and few verdicts")
    return warnings + noise_warnings(header, rows)


def noise_warnings(header: dict, rows: list[dict]) -> list[str]:
    """What a run's header and rows say of noise it did not choose: rows timed while another dbench was
    timing on this machine, a run started beside one (--overlap), and a benchmark's injected slowdown."""
    found = []
    run = header.get("run_id", "?")
    lock = header.get("timing_lock") or {}
    if lock.get("held") is False:
        found.append(
            f"{run} was started beside another dbench timing on this machine (--overlap: "
            f"{'; '.join(lock.get('beside') or ['unknown'])})"
        )
    overlapped = [r for r in rows if r.get("overlapped")]
    if overlapped:
        others = sorted({o for r in overlapped for o in r["overlapped"]})
        found.append(
            f"{run}: {len(overlapped)} of its {len(rows)} rows were timed while another dbench was timing on this "
            f"machine ({', '.join(others)}): their times carry its load; time them again alone"
        )
    for label, fraction in (header.get("injected_slowdown") or {}).items():
        found.append(
            f"{run}: {label} carries an injected slowdown of {fraction:.0%} (DBENCH_BENCHMARK_SLOWDOWN, a benchmark "
            "of dbench itself): its times are not the runtime's"
        )
    return found


def calibration_quote(log: RunLog, rows: list[dict]) -> str:
    """This machine's calibration of the run's runtime and thread count, in one line, from the
    calibration.json beside the log (`dbench calibrate`); '' where there is none."""
    first = next((r for r in rows if r.get("runtime")), None)
    if first is None:
        return ""
    try:
        entry = entry_for(
            read_calibration(log.path.parent), first["runtime"], (first.get("runtime_options") or {}).get("threads")
        )
    except InputError:
        return ""
    return f"{entry.runtime} at {entry.threads} threads, {entry.taken_at}: {entry.answer()}" if entry else ""


def _warnings(run: LogicalRun) -> list[str]:
    """What a reader must know of a run: each log's warnings and how its parts were merged."""
    return [line for log in run.logs for line in warnings_of(log)] + run.notes


def run_side(runs: list[LogicalRun]) -> Side:
    """A side made of whole runs (the parts of a sharded run as one), each with one variant."""
    graphs, ids, machines, warnings = [], [], [], []
    for run in runs:
        header = run.header()
        rows = run.rows()
        variants = list(dict.fromkeys(variant_of(r, header) for r in rows))
        if len(variants) > 1:
            raise UsageError(
                f"run {run.run_id} interleaves {len(variants)} variants ({', '.join(variants)}); "
                f"compare them with: dbench compare {run.run_id}"
            )
        graphs.append({r["graph_id"]: r for r in rows})
        ids.append(run.run_id)
        machines += run.machines()
        warnings += _warnings(run)
    runtimes = sorted({run.header().get("runtime", {}).get("name", "?") for run in runs})
    label = (ids[0] if len(ids) == 1 else f"{len(ids)} runs") + f" ({', '.join(runtimes)})"
    return Side(label, graphs, ids, machines, warnings, calibration_quote(runs[0].logs[0], runs[0].rows()))


def variant_sides(run: RunLog | LogicalRun) -> list[Side]:
    """The sides of an interleaved run (a log, or the parts of a sharded run), one per variant, in the run's order."""
    if isinstance(run, RunLog):
        run = LogicalRun(run.header()["run_id"], [run])
    header = run.header()
    by_variant: dict[str, dict[str, dict]] = {v["label"]: {} for v in header.get("variants", [])}
    for row in run.rows():
        by_variant.setdefault(variant_of(row, header), {})[row["graph_id"]] = row
    warnings = _warnings(run)
    quote = calibration_quote(run.logs[0], run.rows())
    return [
        Side(label, [graphs], [run.run_id], run.machines(), warnings, quote)
        for label, graphs in by_variant.items()
        if graphs
    ]


def plan_comparisons(results: Path, runs: list[str], versus: list[str]) -> list[tuple[Side, Side, bool]]:
    """The comparisons a command line asks for: one interleaved run (each variant against the first),
    two runs, or several runs a side (`--vs`). Each run id may be a glob (`run-20261125-*`) or a sharded
    run's label; the parts of a sharded run count as one run."""
    a_logs = [open_run(results, name) for name in expand(results, runs)]
    b_logs = [open_run(results, name) for name in expand(results, versus)]
    paths = [log.path.resolve() for log in a_logs + b_logs]
    if len(set(paths)) < len(paths):
        raise UsageError(
            "a run is named twice (or on both sides): a run compared with itself says nothing; give each run once"
        )
    _refuse_copies(a_logs + b_logs)
    a_runs, b_runs = merge(a_logs), merge(b_logs)
    if not b_runs:
        if len(a_runs) == 1:
            sides = variant_sides(a_runs[0])
            if len(sides) < 2:
                raise UsageError(
                    f"run {a_runs[0].run_id} has one variant: give a second run to compare "
                    "it with, or make an interleaved run (--runtime a,b or --threads 1,2)"
                )
            return [(sides[0], side, True) for side in sides[1:]]
        if len(a_runs) == 2:
            b_runs = a_runs[1:]
            a_runs = a_runs[:1]
        else:
            raise UsageError(
                f"{len(a_runs)} runs given: say which are compared with which, e.g. dbench compare A1 A2 A3 --vs B1 B2"
            )
    return [(run_side(a_runs), run_side(b_runs), False)]


def _refuse_copies(logs: list[RunLog]) -> None:
    """Two logs that hold one run (a copied file: the same run id in its header) are that run named twice."""
    seen: dict[str, Path] = {}
    for log in logs:
        run_id = log.header().get("run_id")
        if run_id in seen:
            raise UsageError(
                f"run {run_id} is named twice: {seen[run_id]} and {log.path} hold the same run (one is a copy of "
                "the other); a run compared with itself says nothing; give each run once"
            )
        seen[run_id] = log.path


def expand(results: Path, names: list[str]) -> list[str]:
    """Run ids or log paths, with glob patterns (`run-2026*`) matched against the logs under `results/`."""
    expanded = []
    for name in names:
        if any(c in name for c in "*?[") and not name.endswith(".jsonl"):
            found = sorted(p.stem for p in results.glob(f"*/{name}.jsonl"))
            if not found:
                raise InputError(f"no run matches {name!r} under {results}; see the file names in {results}/<machine>/")
            expanded += found
        elif (
            not name.endswith(".jsonl")
            and not list(results.glob(f"*/{name}.jsonl"))
            and (parts := find_parts(results, name))
        ):
            expanded += [str(path) for path in parts]  # a sharded run's label: its parts
        else:
            expanded.append(name)
    return expanded
