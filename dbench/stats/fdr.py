"""False-discovery control over a table of verdicts (Benjamini-Hochberg): with hundreds of kernels
a per-kernel 5 % test alone would call about one in twenty identical kernels changed."""

from __future__ import annotations

FDR = 0.05
"""The false-discovery rate a compare controls: the expected share of wrong verdicts among the changes it reports."""


def bh_adjusted(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the input order: a kernel is a discovery at
    rate q exactly when its adjusted value is <= q."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        adjusted[i] = running
    return adjusted
