"""What quantization buys in time, whole model and unit twin by unit twin, through compare's own test.

Each side is one run (the fp32 model's, the quantized model's), or both are one run that timed both
models in the same rounds (then compare's paired test over the rounds applies). A twin's time on a side is the sum of
its unit occurrences' medians, round by round (every graph of a prediction run is timed in the same
rounds), so a twin of one fp32 unit and three quantized ones is judged as a whole. The pairs go through
dbench.store.compare.compare_sides (Welch's t over the two runs' rounds, false-discovery control over
the table); the speedup is fp32 time / quantized time, the inverse of compare's ratio b/a.

A side whose row is not verified (`mismatch`, `failed`, ...) gets no verdict from compare, rightly: its
time may be of a computation that went wrong. Its speedup is still shown, marked with the status,
from the same test over the rounds it has, so a reader sees the figure and why it is not trusted."""

from __future__ import annotations

from dataclasses import dataclass, replace

from dbench.stats.differences import Difference, paired, welch
from dbench.stats.fdr import FDR
from dbench.store.compare import RESOLUTION, Comparison, Pair, Side, compare_sides, verified

WHOLE = "whole model"


@dataclass(frozen=True)
class Speed:
    """One line's timing: compare's pair (ratio quantized / fp32) and, where a side is unverified, the
    test over its rounds anyway (`unverified`)."""

    label: str
    pair: Pair
    unverified: Difference | None = None

    @property
    def difference(self) -> Difference | None:
        return self.pair.difference or self.unverified

    @property
    def speedup(self) -> float | None:
        """fp32 time / quantized time."""
        if self.difference:
            return 1.0 / self.difference.ratio
        return 1.0 / self.pair.ratio if self.pair.ratio else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The speedup's 95 % interval."""
        d = self.difference
        return (1.0 / d.high, 1.0 / d.low) if d else None

    @property
    def trusted(self) -> bool:
        """Both sides' times are of verified computations (compare gave the pair its test)."""
        return self.unverified is None and self.pair.difference is not None


def summed_row(label: str, rows: list[dict]) -> dict:
    """One row standing for several graphs of one run: medians and round medians summed, verified only if
    every member is (else the first unverified member's status)."""
    rounds = [r.get("round_medians_us") or [] for r in rows]
    count = min(len(r) for r in rounds)
    row = {
        "graph_id": label,
        "status": "ok",
        "verified": True,
        "median_us": sum(r.get("median_us") or 0.0 for r in rows),
        "round_medians_us": [sum(r[k] for r in rounds) for k in range(count)],
    }
    unverified = [r for r in rows if not verified(r)]
    if unverified:
        row.update(status=unverified[0].get("status") or "failed", verified=False)
    elif any(r.get("status") == "disputed" for r in rows):
        row["status"] = "disputed"
    return row


def speeds(
    fp32: Side,
    quantized: Side,
    lines: dict[str, tuple[list[dict], list[dict]]],
    fdr: float = FDR,
    resolution: float = RESOLUTION,
    interleaved: bool = False,
) -> tuple[Comparison, list[Speed]]:
    """Compare each line (label -> fp32 rows, quantized rows, summed per side) across the two sides,
    verdicts at false-discovery rate `fdr`; `interleaved`: both sides' rows are of one run, timed in the
    same rounds, so the paired test over rounds applies."""
    a = replace(fp32, runs=[{label: summed_row(label, f) for label, (f, _) in lines.items()}])
    b = replace(quantized, runs=[{label: summed_row(label, q) for label, (_, q) in lines.items()}])
    comparison = compare_sides(a, b, interleaved, fdr, resolution)
    found = []
    for pair in comparison.pairs:
        unverified = None
        if pair.difference is None and pair.a and pair.b and not all(verified(r) for r in pair.a + pair.b):
            ra, rb = pair.a[0]["round_medians_us"], pair.b[0]["round_medians_us"]
            n = min(len(ra), len(rb))
            unverified = paired(ra[:n], rb[:n]) if interleaved else welch(ra, rb)
        found.append(Speed(pair.graph_id, pair, unverified))
    return comparison, found
