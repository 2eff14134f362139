"""Intervals and tests that stay valid however many times they are looked at: the confidence sequence
behind `dbench run --resolve`, which gives each graph rounds until its interval is narrow enough.

A fixed-round t interval promises 95 % at the one round count chosen in advance. A run that looks after
every round and stops once the interval is narrow would break that promise: stopping where the rounds
happen to agree selects an underestimated spread. This module uses Lai's t confidence sequence (1976;
Wang and Ramdas 2023): for normal log times of unknown variance, the Bayes factor of a mean shift
δ ~ N(0, g) in units of the SD, with the scale prior 1/σ, is

    BF_n = (1 + n g)^(-1/2) · [(1 + t²/ν) / (1 + t²/(ν (1 + n g)))]^((ν + 1) / 2),   ν = n − 1,

a nonnegative martingale under "no change" (the likelihood ratio of the scale-invariant statistics; it
is 1 at the first round). By Ville's inequality it ever reaches 1/α with probability at most α, at any
round, under any stopping rule. So 1/BF is a p-value valid at whatever round the run stopped, and the
set of changes with BF < 1/α (|t| below `critical(n)`) is a 95 % interval valid at every round at once.

The price is width: at 10, 20 and 50 rounds the critical |t| is 4.1, 3.4 and 3.2 against Student's
2.26, 2.09 and 2.01 for a single look, so a sequential run needs about 2.5 times the rounds a fixed
run of the same precision would; `dbench calibrate` predicts rounds with the same boundary. G = 0.5 is
within 5 % of the narrowest boundary at every round count from 8 to 100."""

from __future__ import annotations

import math

import numpy as np

from dbench.stats.differences import ALPHA, POWER, Difference
from dbench.stats.student import t_quantile

G = 0.5
"""The prior variance of the standardised change in the mixture (fixed: changing it per graph would
need the same value again wherever the test is recomputed)."""
MOST_ROUNDS = 1000


def bayes_factor(t: float, n: int, g: float = G) -> float:
    """BF_n of a change against none for a t statistic over n values (n >= 2)."""
    nu = n - 1
    k = 1.0 + n * g
    log_bf = -0.5 * math.log(k) + (nu + 1) / 2 * (math.log1p(t * t / nu) - math.log1p(t * t / (nu * k)))
    return math.exp(min(log_bf, 700.0))


def critical(n: int, alpha: float = ALPHA, g: float = G) -> float:
    """The |t| over n values at which BF_n reaches 1/alpha: the confidence sequence's half-width in
    standard errors; infinite where no |t| reaches it (too few rounds: about 6 at the defaults)."""
    if n < 2:
        return math.inf
    k = 1.0 + n * g
    a = (k / alpha**2) ** (1.0 / n)
    if a >= k:
        return math.inf
    return math.sqrt((n - 1) * (a - 1.0) / (1.0 - a / k))


def anytime_p(t: float, n: int, g: float = G) -> float:
    """1/BF_n, at most 1: P(it ever falls to p or below | no change) <= p, at any stopping round."""
    return min(1.0, 1.0 / bayes_factor(t, n, g))


def half_width(sd: float, n: int, alpha: float = ALPHA) -> float:
    """The sequence's half-width on log times after n rounds of SD `sd`."""
    return critical(n, alpha) * sd / math.sqrt(n)


def rounds_to_reach(sd: float, target: float, most: int = MOST_ROUNDS, start: int = 2) -> int | None:
    """The first round count from `start` at which rounds of SD `sd` (log) give a half-width of at most
    log(1 + target): the rounds `--resolve target` needs at that noise; None beyond `most`."""
    if sd <= 0:
        return start
    goal = math.log1p(target)
    for n in range(start, most + 1):
        if half_width(sd, n) <= goal:
            return n
    return None


def _difference(d: float, se: float, n: int, method: str) -> Difference | None:
    if not se > 0:
        return None
    c = critical(n)
    resolvable = math.exp((c + t_quantile(POWER, n - 1)) * se) - 1 if math.isfinite(c) else math.inf
    low, high = (math.exp(d - c * se), math.exp(d + c * se)) if math.isfinite(c) else (0.0, math.inf)
    return Difference(math.exp(d), low, high, anytime_p(d / se, n), n - 1, se, method, resolvable)


def paired(a_us, b_us) -> Difference | None:
    """b against a over rounds timed in pairs, valid at any stopping round: the ratio, its anytime 95 %
    interval, the anytime p-value, and the change this look would find 80 % of the time."""
    d = np.log(np.asarray(b_us, dtype=np.float64)) - np.log(np.asarray(a_us, dtype=np.float64))
    if d.size < 2:
        return None
    return _difference(
        float(d.mean()),
        float(d.std(ddof=1)) / math.sqrt(d.size),
        d.size,
        "paired over rounds, anytime-valid (stopped by --resolve)",
    )


def mean_half_width(values_us) -> float | None:
    """One graph's rounds alone (a single run): the sequence's half-width of their mean log median;
    None below two rounds, 0 when they all agree."""
    logs = np.log(np.asarray(values_us, dtype=np.float64))
    if logs.size < 2:
        return None
    return half_width(float(logs.std(ddof=1)), logs.size)


def paired_half_width(a_us, b_us) -> float | None:
    """The sequence's half-width of b/a's log over paired rounds; None below two pairs."""
    n = min(len(a_us), len(b_us))
    if n < 2:
        return None
    d = np.log(np.asarray(b_us[:n], dtype=np.float64)) - np.log(np.asarray(a_us[:n], dtype=np.float64))
    return half_width(float(d.std(ddof=1)), n)
