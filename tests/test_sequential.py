"""The anytime-valid test behind --resolve (dbench.stats.sequential) and the rule that stops a graph
(dbench.orchestrator.resolve): checked on simulated rounds at a fixed seed, so the level the docs state is
the level the code keeps, and a broken boundary (Student's t looked at after every round) is caught."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dbench.orchestrator.resolve import Resolver
from dbench.outcome import Outcome, Status
from dbench.stats import sequential
from dbench.stats.records import LatencyRound
from dbench.stats.student import t_quantile

LOOKS = 40
SEQUENCES = 4000


def _paths(seed: int, shift: float = 0.0, sd: float = 0.05) -> np.ndarray:
    """Simulated paired log ratios: SEQUENCES runs of LOOKS rounds."""
    return np.random.default_rng(seed).normal(shift, sd, size=(SEQUENCES, LOOKS))


def _ever_rejects(paths: np.ndarray, boundary) -> float:
    """Share of runs whose test rejects 'no change' at some round from 3 to LOOKS (a run that stops at its
    first rejection is called changed exactly then)."""
    n = np.arange(1, LOOKS + 1)
    mean = np.cumsum(paths, axis=1) / n
    var = (np.cumsum(paths**2, axis=1) - n * mean**2) / np.maximum(n - 1, 1)
    t = np.abs(mean) / np.sqrt(np.maximum(var, 1e-300) / n)
    rejected = np.zeros(paths.shape[0], dtype=bool)
    for k in range(3, LOOKS + 1):
        rejected |= t[:, k - 1] > boundary(k)
    return float(rejected.mean())


def test_the_critical_value_is_where_the_bayes_factor_reaches_one_over_alpha():
    for n in (8, 12, 30, 100):
        c = sequential.critical(n)
        assert math.isfinite(c) and sequential.bayes_factor(c, n) == pytest.approx(1 / 0.05, rel=1e-9)
        assert sequential.anytime_p(c * 1.01, n) < 0.05 < sequential.anytime_p(c * 0.99, n)
    assert math.isinf(sequential.critical(3))  # three rounds are too few for any anytime-valid verdict


def test_looking_after_every_round_keeps_the_level_where_a_fixed_t_does_not():
    paths = _paths(20261128)
    anytime = _ever_rejects(paths, sequential.critical)
    naive = _ever_rejects(paths, lambda k: t_quantile(0.975, k - 1))
    se = math.sqrt(0.05 * 0.95 / SEQUENCES)
    assert anytime <= 0.05 + 2 * se
    assert naive > 0.15  # the boundary the sequence replaces: peeking inflates its 5 % several times over


def test_the_interval_where_resolve_stops_covers_the_true_change():
    """Stop at the first round whose anytime half-width is within 5 % (or at LOOKS): the interval there
    holds the true change at least 95 % of the time, whatever the noise."""
    for sd in (0.02, 0.08):
        paths = _paths(7, shift=0.1, sd=sd)
        covered = 0
        for path in paths:
            for k in range(3, LOOKS + 1):
                half = sequential.half_width(float(np.std(path[:k], ddof=1)), k)
                if half <= math.log1p(0.05) or k == LOOKS:
                    covered += abs(path[:k].mean() - 0.1) <= half
                    break
        assert covered / SEQUENCES >= 0.95 - 2 * math.sqrt(0.05 * 0.95 / SEQUENCES)


def test_rounds_to_reach_is_the_first_round_within_the_target():
    for sd in (0.01, 0.05, 0.2):
        n = sequential.rounds_to_reach(sd, 0.05)
        assert sequential.half_width(sd, n) <= math.log1p(0.05) < sequential.half_width(sd, n - 1)
    assert sequential.rounds_to_reach(1.0, 0.01, most=50) is None


def _outcomes(medians: list[float]) -> list[Outcome]:
    return [
        Outcome(
            Status.OK,
            stats=LatencyRound(median_us=m, min_us=m, samples=1, calls_per_sample=1, timed_s=m / 1e6, samples_us=[m]),
        )
        for m in medians
    ]


def test_a_graph_is_settled_when_its_paired_interval_is_within_the_target():
    rng = np.random.default_rng(3)
    a = list(1000 * np.exp(rng.normal(0, 0.05, 30)))
    tight = [m * 1.1 * math.exp(e) for m, e in zip(a, rng.normal(0, 0.005, 30))]
    resolver = Resolver(0.05, 60, None)
    assert (
        resolver.settle("g", {"a": _outcomes(a[:3]), "b": _outcomes(tight[:3])}, more=True) is None
    )  # no interval yet
    settled = resolver.settle("g", {"a": _outcomes(a[:12]), "b": _outcomes(tight[:12])}, more=True)
    assert settled.resolved and "resolved" in settled.note
    fields = settled.fields("b")
    assert fields["resolved"] and fields["resolve_half"] <= 0.05 and fields["resolve_target"] == 0.05


def test_a_graph_out_of_reach_is_given_up_and_says_what_it_would_need():
    rng = np.random.default_rng(4)
    a = list(1000 * np.exp(rng.normal(0, 0.3, 10)))
    b = list(1000 * np.exp(rng.normal(0, 0.3, 10)))
    resolver = Resolver(0.02, 20, None, predicted=lambda graph, median: 321)
    assert resolver.settle("g", {"a": _outcomes(a[:5]), "b": _outcomes(b[:5])}, more=True) is None  # too early to judge
    settled = resolver.settle("g", {"a": _outcomes(a[:6]), "b": _outcomes(b[:6])}, more=True)
    assert not settled.resolved and "given up" in settled.note and "calibration about 321" in settled.note
    capped = Resolver(0.02, 4, None).settle("g", {"a": _outcomes(a[:4]), "b": _outcomes(b[:4])}, more=False)
    assert not capped.resolved and "--rounds 4 at most" in capped.note
    budget = Resolver(0.02, 60, 10.0).settle(
        "g", {"a": _outcomes(a[:3]), "b": _outcomes(b[:3])}, more=True, budget_out=True
    )
    assert "--budget ran out" in budget.note


def test_a_disputed_graph_is_resolved_like_an_ok_one():
    """Its first round disputed (the reference overruled), its time stands: it is judged on its rounds."""
    rng = np.random.default_rng(3)
    a = list(1000 * np.exp(rng.normal(0, 0.05, 30)))
    tight = [m * 1.1 * math.exp(e) for m, e in zip(a, rng.normal(0, 0.005, 30))]
    first, *rest = _outcomes(a[:12])
    runs = {"a": [dataclasses.replace(first, status=Status.DISPUTED), *rest], "b": _outcomes(tight[:12])}
    assert Resolver(0.05, 60, None).settle("g", runs, more=True).resolved


def test_a_single_run_resolves_on_its_own_rounds():
    rng = np.random.default_rng(5)
    rounds = list(500 * np.exp(rng.normal(0, 0.005, 15)))
    settled = Resolver(0.05, 60, None).settle("g", {"ort-cpu": _outcomes(rounds)}, more=True)
    assert settled.resolved and settled.fields("ort-cpu")["resolve_half"] <= 0.05


def test_one_slow_round_does_not_give_a_graph_up():
    rng = np.random.default_rng(6)
    a = list(5000 * np.exp(rng.normal(0, 0.03, 10)))
    b = [m * 1.1 * math.exp(e) for m, e in zip(a, rng.normal(0, 0.03, 10))]
    b[-1] *= 2.0  # a slow round: the SD says hundreds of rounds, the typical noise a few dozen
    resolver = Resolver(0.05, 20, None)
    assert rounds_to_reach_sd(resolver, a, b) > 2 * 20
    assert resolver.settle("g", {"a": _outcomes(a), "b": _outcomes(b)}, more=True) is None


def rounds_to_reach_sd(resolver: Resolver, a: list[float], b: list[float]) -> int:
    sd = resolver.noise({"a": a, "b": b})
    return sequential.rounds_to_reach(sd, 0.05) or 10**6
