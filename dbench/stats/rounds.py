"""A row's intervals from its rounds. Each round is timed in its own worker process and session, at
its own moment of the run, so the spread of the rounds' medians holds the between-process, between-
session and drift variance that a re-run meets; samples inside one round see only the first. The
rounds' log medians are taken as independent normal draws (Student's t, df = rounds - 1). A machine
state that outlasts the run is not in the rounds: where earlier runs measured it (dbench.stats.drift),
its variance is added and the degrees of freedom are Welch-Satterthwaite's."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dbench.stats.drift import Drift
from dbench.stats.student import t_quantile

CONFIDENCE = 0.95


@dataclass(frozen=True)
class RoundSpread:
    """What a row's rounds say: their count, the SD of their log medians (the row's measured noise),
    the 95 % interval of the run's median, and the 95 % interval a re-run's median should fall in
    (wider by sqrt 2: the re-run has its own noise), both with the between-run `drift` they carry
    (None: none measured). Intervals are None with a `reason` when the rounds cannot give one."""

    rounds: int
    log_sd: float | None
    ci: tuple[float, float] | None
    rerun: tuple[float, float] | None
    reason: str = ""
    drift: Drift | None = None


def log_sd(round_medians_us: list[float]) -> float | None:
    """The SD (ddof 1) of the rounds' log medians, None below two rounds."""
    if len(round_medians_us) < 2:
        return None
    return float(np.std(np.log(np.asarray(round_medians_us, dtype=np.float64)), ddof=1))


def round_spread(
    center_us: float,
    round_medians_us: list[float],
    confidence: float = CONFIDENCE,
    drift: Drift | None = None,
    scale: float = 1.0,
) -> RoundSpread:
    """Intervals around `center_us` (the row's median) from the rounds' medians: half-widths t·se for
    the run's median and t·se·sqrt(2) for a re-run of as many rounds, on log times, where se² = s²/R,
    plus the between-run drift's variance when earlier runs measured one; both times `scale`, the factor
    this machine's history showed such intervals to need (dbench.stats.coverage)."""
    rounds = len(round_medians_us)
    if rounds < 2:
        return RoundSpread(
            rounds, None, None, None, f"{rounds} round: no interval (2 rounds at least; 3 for a verdict)"
        )
    sd = log_sd(round_medians_us)
    between = drift.sd**2 if drift and drift.df > 0 else 0.0
    if sd == 0.0 and between == 0.0:
        return RoundSpread(
            rounds,
            0.0,
            None,
            None,
            f"the {rounds} round medians are identical: the clock or the "
            "scheduler's tick quantises these times, so no interval is measurable",
            drift,
        )
    within = sd**2 / rounds
    variance = within + between
    df = variance**2 / (within**2 / (rounds - 1) + (between**2 / drift.df if between else 0.0))
    t = t_quantile(1 - (1 - confidence) / 2, df)
    half = t * math.sqrt(variance) * scale
    rerun = half * math.sqrt(2.0)
    return RoundSpread(
        rounds,
        sd,
        (center_us * math.exp(-half), center_us * math.exp(half)),
        (center_us * math.exp(-rerun), center_us * math.exp(rerun)),
        drift=drift,
    )
