"""Which per-sample times are kept: at most KEPT_SAMPLES, evenly strided, so that a row stays small
while its samples still show the run's whole course."""

from __future__ import annotations

import numpy as np

KEPT_SAMPLES = 1000
"""At most this many per-sample times are kept per round, and per row."""


def kept(values: np.ndarray, limit: int = KEPT_SAMPLES) -> list[float]:
    """At most `limit` values in sampling order, evenly strided over the whole, rounded to ns."""
    if values.size > limit:
        values = values[np.linspace(0, values.size - 1, limit).round().astype(int)]
    return [round(float(v), 3) for v in values]
