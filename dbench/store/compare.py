"""Two runs side by side (e.g. two runtimes, or a server and an ARM board), kernel by kernel, with a
verdict that knows the noise.

The test, per graph verified in both runs: the ratio b/a is the Hodges-Lehmann estimate on log
times (the median of all pairwise log differences between the two runs' stored samples) and its 95%
interval is Moses' distribution-free interval, the one a two-sided Mann-Whitney U test at 5% inverts:
the interval excludes 1 exactly when the test rejects "same distribution". The verdict is `slower`
when the whole interval lies above 1 and the estimate above 1 + NOISE_FLOOR, `faster` when it
lies below 1 and the estimate below 1 - NOISE_FLOOR, else `same within noise`. Samples are assumed
independent; autocorrelated samples make the interval too narrow, which the noise floor absorbs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dbench.worker.stats import normal_quantile
from dbench.errors import InputError
from dbench.store.log import RunLog, find_run

NOISE_FLOOR = 0.02
"""Differences smaller than this fraction are reported as the same, whatever the test says."""
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Shift:
    """b / a as a ratio with its interval, from the stored samples."""

    ratio: float
    low: float
    high: float


def hodges_lehmann(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> Shift:
    """The Hodges-Lehmann ratio b/a on log times with Moses' interval (normal approximation to the
    Mann-Whitney U distribution, fine from about 5 samples a side)."""
    la, lb = np.log(np.asarray(a, dtype=np.float64)), np.log(np.asarray(b, dtype=np.float64))
    diffs = np.sort((lb[None, :] - la[:, None]).ravel())
    n, m = la.size, lb.size
    z = normal_quantile(1 - (1 - confidence) / 2)
    k = int(math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12)))
    k = min(max(k, 0), diffs.size - 1)
    return Shift(float(math.exp(np.median(diffs))), float(math.exp(diffs[k])), float(math.exp(diffs[diffs.size - 1 - k])))


def verdict(shift: Shift, noise_floor: float = NOISE_FLOOR) -> str:
    """`slower`, `faster` or `same` (b relative to a) by the rule in the module docstring."""
    if shift.low > 1 and shift.ratio > 1 + noise_floor:
        return "slower"
    if shift.high < 1 and shift.ratio < 1 - noise_floor:
        return "faster"
    return "same"


def verified(row: dict | None) -> bool:
    """A row whose time counts: it ran, and its output matched the reference."""
    return bool(row and row.get("status") == "ok" and row.get("verified") and row.get("median_us"))


@dataclass(frozen=True)
class Pair:
    """One graph in both runs (either side may be missing), with the comparison's outcome."""

    graph_id: str
    a: dict | None
    b: dict | None
    shift: Shift | None = None
    verdict: str = ""
    """slower | faster | same (b against a), `no samples` (a version-1 run), `one sample`, or why it was not compared."""

    @property
    def ratio(self) -> float | None:
        """b/a: the Hodges-Lehmann ratio where samples exist, else the ratio of medians."""
        if self.shift:
            return self.shift.ratio
        if verified(self.a) and verified(self.b):
            return self.b["median_us"] / self.a["median_us"]
        return None


def compare_pair(graph_id: str, a: dict | None, b: dict | None) -> Pair:
    """Compare one graph's rows: a verdict only when both are verified and both have samples."""
    if a is None or b is None:
        return Pair(graph_id, a, b, verdict="only in " + ("b" if a is None else "a"))
    if not (verified(a) and verified(b)):
        why = [f"{side}: {row['status'] if row['status'] != 'ok' else 'unverified'}"
               for side, row in (("a", a), ("b", b)) if not verified(row)]
        return Pair(graph_id, a, b, verdict=", ".join(why))
    if not a.get("samples_us") or not b.get("samples_us"):
        return Pair(graph_id, a, b, verdict="no samples")
    if len(a["samples_us"]) < 2 or len(b["samples_us"]) < 2:
        return Pair(graph_id, a, b, verdict="one sample")
    shift = hodges_lehmann(np.array(a["samples_us"]), np.array(b["samples_us"]))
    return Pair(graph_id, a, b, shift, verdict(shift))


def open_run(results: Path, name: str) -> RunLog:
    """A run by id (looked up under `results/`) or by the path of its .jsonl log."""
    path = Path(name)
    if path.suffix == ".jsonl":
        if not path.is_file():
            raise InputError(f"no run log at {path}")
        return RunLog.read(path)
    return RunLog.read(find_run(results, name))


def check_distinct(a: RunLog, b: RunLog) -> None:
    """A run against itself compares nothing (every verdict `same` by construction): refuse it."""
    if a.path.resolve() == b.path.resolve():
        raise InputError(f"RUN-A and RUN-B are the same run ({a.path}); compare two different runs")


def check_compared(pairs: list[Pair]) -> None:
    """Two runs with no graph verified in both have no ratio to give: one line, after the table that says why."""
    if not any(pair.ratio for pair in pairs):
        raise InputError(f"no graph is verified in both runs ({len(pairs)} graphs, see the table): nothing was compared; "
                         "compare runs of the same graphs that ran and verified")


def pair_rows(a: list[dict], b: list[dict]) -> list[Pair]:
    """Rows of two runs joined on graph id and compared, in the first run's order, then the second's extras."""
    by_a = {r["graph_id"]: r for r in a}
    by_b = {r["graph_id"]: r for r in b}
    order = list(by_a) + [g for g in by_b if g not in by_a]
    return [compare_pair(g, by_a.get(g), by_b.get(g)) for g in order]


def geomean_ratio(pairs: list[Pair]) -> float | None:
    """Geometric mean of b/a over the graphs verified in both runs."""
    ratios = [p.ratio for p in pairs if p.ratio]
    return float(math.exp(np.mean(np.log(ratios)))) if ratios else None


def machine_of(header: dict) -> str:
    """A run's machine key (version-1 runs have only the host name)."""
    host = header.get("host", {})
    return host.get("machine_key") or f"{host.get('machine', '?')} (host name only)"


def summary_line(pairs: list[Pair]) -> str:
    """`b vs a: 3 faster, 1 slower, 8 same within noise, ...; geometric-mean ratio b/a 0.93 over 12 verified`."""
    counts: dict[str, int] = {}
    for pair in pairs:
        key = pair.verdict if pair.verdict in ("faster", "slower", "same", "no samples", "one sample") else "not compared"
        counts[key] = counts.get(key, 0) + 1
    labels = {"same": "same within noise"}
    parts = [f"{counts[k]} {labels.get(k, k)}" for k in ("faster", "slower", "same", "no samples", "one sample", "not compared") if counts.get(k)]
    mean = geomean_ratio(pairs)
    verified_both = sum(1 for p in pairs if p.ratio)
    tail = f"geometric-mean time ratio b/a {mean:.3f} over {verified_both} verified graphs" if mean else "no graph verified in both runs"
    return f"b against a: {', '.join(parts) or 'nothing to compare'}; {tail}"
