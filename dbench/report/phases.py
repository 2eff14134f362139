"""The transformer suite's phases in a report: a row of the suite is shown under its family and phase
(`gemm · decode`), so prefill and decode, which differ by orders of magnitude in work per call, are
compared apart."""

from __future__ import annotations

from collections.abc import Iterable

PHASES = {"transformer_prefill": "prefill", "transformer_decode": "decode"}
"""The suite tags of the transformer suite and the phase each names."""


def family_section(family: str, suites: Iterable[str] | None) -> str:
    """`family` for a row outside the transformer suite; `family · prefill`, `family · decode`, or
    `family · prefill+decode` (a kernel both run, e.g. an LM head GEMV at batch 1) for a row in it."""
    phases = [PHASES[s] for s in PHASES if s in (suites or ())]
    return f"{family} · {'+'.join(phases)}" if phases else family
