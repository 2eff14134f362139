"""The round cost cap of --quick: another round only while a round's own cost (inputs, preparing,
warm-up) stays within its share of --max-time; default settings have no cap."""

from __future__ import annotations

import dataclasses

from dbench.orchestrator.runner import another_round, round_cost_s
from dbench.outcome import Outcome, Status
from dbench.stats.records import LatencyRound
from dbench.worker.timing import QUICK, TimingConfig


def _round(inputs_s: float, prepare_s: float, warmup_s: float, median_us: float = 10.0) -> Outcome:
    stats = LatencyRound(
        median_us=median_us,
        min_us=median_us,
        samples=1,
        calls_per_sample=1,
        timed_s=0.01,
        samples_us=[median_us],
        warmup_s=warmup_s,
    )
    return Outcome(Status.OK, stats=stats, inputs_s=inputs_s, prepare_s=prepare_s)


def test_round_cost_adds_inputs_preparing_and_warm_up():
    assert round_cost_s(_round(0.5, 0.25, 0.125)) == 0.875
    assert round_cost_s(Outcome(Status.OK)) == 0.0


def test_quick_gives_a_costly_graph_one_round_and_a_cheap_one_all():
    share = QUICK.round_cost_cap * QUICK.max_time / QUICK.rounds
    assert another_round([_round(0.01, 0.02, 0.001)], QUICK)
    assert not another_round([_round(share, 0.0, 0.001)], QUICK)  # just over: inputs alone take the share
    assert not another_round([_round(0.01, 0.02, 0.001), _round(0.01, share, 0.0)], QUICK)  # the last round decides


def test_default_settings_have_no_cap():
    assert TimingConfig().round_cost_cap is None
    assert another_round([_round(30.0, 30.0, 1.0, median_us=1000.0)], TimingConfig())
    uncapped = dataclasses.replace(QUICK, round_cost_cap=None)
    assert another_round([_round(30.0, 30.0, 0.001)], uncapped)


def test_a_disputed_graph_gets_every_round_an_ok_one_gets():
    """A disputed graph's time stands (only its reference was overruled): its rounds go on, so its row
    has an interval like any other; a failed one stops."""
    disputed = dataclasses.replace(_round(0.01, 0.02, 0.001), status=Status.DISPUTED)
    assert another_round([disputed], TimingConfig())
    assert another_round([disputed, _round(0.01, 0.02, 0.001)], TimingConfig())
    assert not another_round([dataclasses.replace(disputed, status=Status.MISMATCH)], TimingConfig())
