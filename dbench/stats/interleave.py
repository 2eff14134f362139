"""The order in which variants run inside one round of an interleaved measurement: rotated round by
round, so that no variant always runs first (after the others' caches are warm, or before a frequency
step) and any slow drift of the machine falls on every variant alike. The runner and the benchmarks
that interleave their sides take their order from here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def rotated(variants: Sequence[T], turn: int) -> list[T]:
    """`variants` rotated left by `turn`: turn 0 keeps their order, each next turn moves the first one
    to the end, so over any len(variants) consecutive turns each variant runs first exactly once (with
    two variants, the order flips every turn). Any integer turn works; an empty sequence stays empty."""
    if not variants:
        return []
    start = turn % len(variants)
    return list(variants[start:]) + list(variants[:start])
