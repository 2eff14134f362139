"""This machine's measured noise, as `dbench calibrate` stored it: `<out>/<machine key>/calibration.json`,
one entry per runtime configuration (runtime and thread count), each with its size classes and kernels.
Read by `run`'s plan (the rounds --resolve will need), `compare` and `report` (what this machine can
resolve), and written only by dbench.calibrate.

A class is a decade of call time centred on 10 µs, 100 µs, 1 ms, 10 ms... (from 10^(k-1/2) to 10^(k+1/2)).
Its figures: the SD of a paired round's log ratio (the noise an interleaved comparison and --resolve
meet), the SD of one side's round (a single run's rounds), the drift between runs (from the machine's
history), and what follows from them."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dbench.errors import InputError
from dbench.stats.differences import ALPHA, POWER
from dbench.stats.sequential import rounds_to_reach
from dbench.stats.student import t_quantile

FILE = "calibration.json"
FIXED_ROUNDS = (3, 10, 30)
"""Rounds of a fixed interleaved run whose resolvable change a calibration prints."""
TARGETS = (0.02, 0.05, 0.10)
"""--resolve targets whose rounds a calibration prints."""
MOST_ROUNDS = 1000
REACHABLE_ROUNDS = 60
"""What the one-line answer counts as within reach: --resolve's default most rounds a graph."""


def class_of(median_us: float) -> float:
    """The size class of a call time: the power of ten nearest on a log scale (1 ms for 0.32-3.2 ms)."""
    return 10.0 ** round(math.log10(max(median_us, 1e-3)))


def class_name(class_us: float) -> str:
    """`10 µs`, `100 µs`, `1 ms`, `10 ms`, `1 s`."""
    if class_us >= 1e6:
        return f"{class_us / 1e6:g} s"
    if class_us >= 1e3:
        return f"{class_us / 1e3:g} ms"
    return f"{class_us:g} µs"


def fixed_resolvable(sd: float, rounds: int) -> float:
    """The change a paired test over `rounds` rounds of SD `sd` (log ratio per pair) finds 80 % of the
    time at 5 %: compare's `resolves` for an interleaved run of that many rounds."""
    df = rounds - 1
    return math.expm1((t_quantile(1 - ALPHA / 2, df) + t_quantile(POWER, df)) * sd / math.sqrt(rounds))


@dataclass
class NoiseClass:
    """One size class of one configuration: its kernels, the pairs behind its figures, and the figures."""

    class_us: float
    kernels: list[str]
    pairs: int
    pair_sd: float
    """The median over the class's kernels of the SD of a pair's log ratio (b/a of one round)."""
    pair_sd_max: float
    round_sd: float
    """The median over its kernels of the SD of one side's round log medians."""
    drift_sd: float | None = None
    drift_graphs: int = 0
    round_s: float | None = None
    """Wall seconds one variant's round of one of its graphs took (inputs, preparing, warm-up, sampling)."""
    coverage_pairs: int = 0
    coverage_inside: int = 0
    widen: float | None = None
    """How earlier rows' re-run intervals of this class held later runs' medians on this machine (pairs,
    inside), and the factor dbench widens such intervals by (dbench.stats.coverage); 0, 0, None: no history."""

    def finds(self, rounds: int) -> float:
        return fixed_resolvable(self.pair_sd, rounds)

    def resolve_rounds(self, target: float, paired: bool = True) -> int | None:
        """Rounds `--resolve target` needs here (dbench.stats.sequential), None beyond MOST_ROUNDS."""
        sd = self.pair_sd if paired else self.round_sd
        return rounds_to_reach(sd, target, MOST_ROUNDS)


@dataclass
class Entry:
    """One configuration's calibration."""

    runtime: str
    version: str
    threads: int | None
    taken_at: str
    run_id: str
    round_sampling_s: float
    """Seconds each round sampled per graph: the round length its figures hold for."""
    wall_s: float
    rounds: int
    load: list[float | None]
    classes: list[NoiseClass]
    kernels: list[dict[str, Any]] = field(default_factory=list)

    def key(self) -> tuple[str, int | None]:
        return self.runtime, self.threads

    def nearest(self, median_us: float) -> NoiseClass | None:
        """The class of a call of `median_us`, else the nearest measured one (None without classes)."""
        if not self.classes:
            return None
        want = math.log10(class_of(median_us))
        return min(self.classes, key=lambda c: abs(math.log10(c.class_us) - want))

    def kernel(self, graph_id: str) -> dict[str, Any] | None:
        return next((k for k in self.kernels if k["graph_id"] == graph_id), None)

    def predict_rounds(
        self, median_us: float, target: float, paired: bool = True, graph_id: str | None = None
    ) -> int | None:
        """Rounds `--resolve target` needs for a graph of this time: from the graph's own calibration where
        it was a calibration kernel, else from its size class's."""
        own = self.kernel(graph_id) if graph_id else None
        if own is not None:
            return rounds_to_reach(own["pair_sd"] if paired else own["round_sd"], target, MOST_ROUNDS)
        found = self.nearest(median_us)
        return found.resolve_rounds(target, paired) if found else None

    def answer(self, target: float = 0.05) -> str:
        """The calibration in one line: on which size classes `--resolve target` is reached within its
        default most rounds, in how many, and what the other classes need (or cannot reach in an hour)."""
        ordered = sorted(self.classes, key=lambda c: c.class_us)
        if not ordered:
            return "no kernel was measured"
        rounds = {c.class_us: c.resolve_rounds(target) for c in ordered}
        within = [c for c in ordered if rounds[c.class_us] is not None and rounds[c.class_us] <= REACHABLE_ROUNDS]
        outside = [c for c in ordered if c not in within]
        parts = []
        if within:
            parts.append(
                f"this machine resolves ±{target:.0%} on kernels of {_span(within, ordered)} in about "
                f"{max(rounds[c.class_us] for c in within)} interleaved rounds (--resolve {target:.0%})"
            )
        else:
            parts.append(
                f"this machine cannot resolve ±{target:.0%} within {REACHABLE_ROUNDS} interleaved rounds on any "
                "size class measured"
            )
        for c in outside:
            needed = rounds[c.class_us]
            if needed is not None and _minutes(c, needed) <= 60:
                parts.append(
                    f"at {_span([c], ordered)} ±{target:.0%} needs about {needed} rounds "
                    f"({_duration(_minutes(c, needed) * 60)} a graph)"
                )
                continue
            wider = c.resolve_rounds(0.10)
            parts.append(
                f"at {_span([c], ordered)} "
                + (
                    f"±10% takes about {wider} rounds ({_duration(_minutes(c, wider) * 60)} a graph)"
                    if wider is not None and _minutes(c, wider) <= 60
                    else "it cannot resolve ±10% in under an hour a graph"
                )
            )
        return "; ".join(parts)


def _span(chosen: list[NoiseClass], ordered: list[NoiseClass]) -> str:
    """`about 1 ms or more`, `about 10 µs or less`, `about 100 µs`, or the classes named one by one."""
    names = [class_name(c.class_us) for c in chosen]
    indices = [ordered.index(c) for c in chosen]
    consecutive = indices == list(range(indices[0], indices[0] + len(indices)))
    if len(chosen) > 1 and consecutive and indices[-1] == len(ordered) - 1:
        return f"about {names[0]} or more"
    if len(chosen) > 1 and consecutive and indices[0] == 0:
        return f"about {names[-1]} or less"
    return "about " + (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1])


def _minutes(noise: NoiseClass, rounds: int) -> float:
    """Minutes an interleaved A/B of one graph of this class takes for `rounds` rounds (two variants)."""
    return rounds * 2 * (noise.round_s or 1.0) / 60


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def read_calibration(folder: Path) -> list[Entry]:
    """The entries of a machine folder's calibration.json (empty when there is none); one line when the
    file is not one dbench wrote."""
    path = folder / FILE
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
        return [Entry(**{**e, "classes": [NoiseClass(**c) for c in e["classes"]]}) for e in data["entries"]]
    except (ValueError, KeyError, TypeError) as err:
        raise InputError(
            f"{path} is not a calibration dbench wrote ({err}); delete it and run dbench calibrate again"
        ) from None


def write_calibration(folder: Path, machine_key: str, entry: Entry) -> Path:
    """Store `entry`, replacing any earlier one of the same configuration."""
    kept = [e for e in read_calibration(folder) if e.key() != entry.key()]
    path = folder / FILE
    partial = path.with_suffix(".tmp")
    partial.write_text(
        json.dumps({"machine_key": machine_key, "entries": [asdict(e) for e in [*kept, entry]]}, indent=1)
    )
    partial.replace(path)
    return path


def entry_for(entries: list[Entry], runtime: str, threads: int | None) -> Entry | None:
    """The calibration of a runtime at a thread count (None: none measured)."""
    return next((e for e in entries if e.key() == (runtime, threads)), None)
