"""How a graph's outputs are checked against its reference: shared by generation (which picks the
rule per graph) and verification (which applies it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    """How outputs are checked against the reference.

    metric `rel`: max|out - ref| / max|ref| <= bound (floating point; robust to near-zero elements).
    metric `abs`: max|out - ref| <= bound (integer outputs: 0 = exact; one quantisation step for Q/DQ)."""

    metric: str
    bound: float
