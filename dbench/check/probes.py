"""Random probe vectors for the projection checks, drawn from the graph's own seed in a stream apart
from its inputs: fixed per graph like the inputs, and independent of any runtime's output."""

from __future__ import annotations

import math

import numpy as np

SIGN_PROBES = 20
"""Random ±1 probes per float projection check: an element beyond tolerance escapes one probe with
probability at most 1/2, so all of them with probability at most 2^-20 (docs/method.md)."""
INTEGER_POWER_BITS = 20
"""Exact integer checks take enough probes that a wrong output escapes with probability at most 2^-20."""
PROBE_STREAM = 0xDBC4EC
"""Second word of the probes' seed: keeps them apart from the inputs' stream (seeded by the graph's seed alone)."""


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, PROBE_STREAM])


def signs(seed: int, width: int, count: int = SIGN_PROBES) -> np.ndarray:
    """`count` probes of `width` independent random signs, as float64 columns [width, count]."""
    return _rng(seed).choice(np.array([-1.0, 1.0]), size=(width, count))


def integers(seed: int, width: int, bits: int) -> np.ndarray:
    """Enough probes of uniform integers in [0, 2^bits) that a nonzero error row escapes them all with
    probability at most 2^-INTEGER_POWER_BITS (1/2^bits each: only one value of a coordinate cancels
    the rest), as float64 columns [width, count] (exact: below 2^53)."""
    count = math.ceil(INTEGER_POWER_BITS / bits)
    return _rng(seed).integers(0, 2**bits, size=(width, count)).astype(np.float64)
