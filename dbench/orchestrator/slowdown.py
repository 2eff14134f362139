"""A known, real slowdown injected into chosen variants of a run, for benchmarks of dbench itself only:
whether `compare` or `run --resolve` finds a change needs a change that is really there, timed as any
other (a multiplied round median would skip the noise a slower call meets). Set by the environment,
never by an option, so that no user finds it in --help or turns it on by accident:

    DBENCH_BENCHMARK_SLOWDOWN='ort-cpu #3=0.10' dbench run --runtime ort-cpu,ort-cpu,ort-cpu ...

makes every timed call of the variant `ort-cpu #3` 10 % slower (dbench.worker.main.slowed: a busy wait
of a tenth of the call's own time after it). A name that is no variant of the run is refused; the run
header, every affected row (`injected_slowdown`) and the run's printout say so, and `dbench compare`
warns about it."""

from __future__ import annotations

import math
import os

from dbench.errors import UsageError

VARIABLE = "DBENCH_BENCHMARK_SLOWDOWN"
MAX_FRACTION = 10.0


def injected(labels: list[str]) -> dict[str, float]:
    """Variant label -> the slowdown the environment injects into it (empty without the variable);
    one line naming the fix when the variable is malformed or names no variant of the run."""
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return {}
    found: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        label, sep, value = part.rpartition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = math.nan
        if not sep or not (math.isfinite(fraction) and 0 < fraction <= MAX_FRACTION):
            raise UsageError(
                f"{VARIABLE}={text!r}: write LABEL=FRACTION[;LABEL=FRACTION] with a fraction above 0 up to "
                f"{MAX_FRACTION:g} (e.g. 'ort-cpu #2=0.10'), or unset it"
            )
        if label.strip() not in labels:
            raise UsageError(
                f"{VARIABLE} names {label.strip()!r}, which is no variant of this run "
                f"({', '.join(labels)}); name one of them, or unset it"
            )
        found[label.strip()] = fraction
    return found
