"""`dbench run --resolve X%`: when a graph has had rounds enough. After each round of all its variants a
graph is settled when

* its anytime-valid 95 % interval (dbench.stats.sequential) is within ±X: in an interleaved run the
  paired interval of every variant against the first, in a single run the interval of the rounds'
  mean (the between-run drift is not in it: more rounds of one run cannot shrink that);
* or its rounds reach the per-graph budget (`--rounds`, the most a graph may get);
* or, from MIN_ABANDON rounds on, its own typical noise (a robust SD: one slow round must not give a graph
  up) says it would need more than ABANDON_FACTOR times that budget (its rounds are then better spent on
  other graphs);
* or the run's --budget cannot pay another round of it (the run loop decides, graph by graph).

Every rule looks at the spread of the rounds, never at where their mean lies, and the interval is a
confidence sequence, valid whenever the run stops: the row's promise holds at the round it stopped.
A graph not resolved says so, with the rounds its own noise says it would need and, where `dbench
calibrate` measured this machine, the rounds the calibration predicts for a graph of its time."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dbench.outcome import MEASURED, Outcome
from dbench.stats.sequential import mean_half_width, paired_half_width, rounds_to_reach

MIN_ROUNDS = 3
"""Rounds every graph gets before the run's budget may stop it (a verdict needs 3 paired rounds)."""
MIN_ABANDON = 6
"""Rounds a graph's noise is measured on before it may be given up as out of reach."""
ABANDON_FACTOR = 2.0
DEFAULT_MAX_ROUNDS = 60
"""The most rounds a graph gets under --resolve when --rounds does not say."""


@dataclass(frozen=True)
class Settled:
    """A graph's end under --resolve: whether every interval reached the target, each variant's half-width
    (the widest of its pairs for the first variant), and what to say in its rows."""

    target: float | None
    resolved: bool
    halves: dict[str, float | None]
    note: str

    def fields(self, label: str) -> dict:
        """A variant row's resolve fields (none for a run of rounds until its budget, as calibrate's)."""
        if self.target is None:
            return {}
        half = self.halves.get(label)
        return {
            "resolve_target": self.target,
            "resolved": self.resolved,
            "resolve_half": None if half is None or not math.isfinite(half) else math.expm1(half),
            "resolve_note": self.note,
        }


class Resolver:
    """Decides, graph by graph, whether --resolve has what it asked for; with no target (`dbench
    calibrate`), every graph gets rounds until the run's budget or its most rounds."""

    min_rounds = MIN_ROUNDS

    def __init__(
        self,
        target: float | None,
        most: int,
        budget_s: float | None,
        predicted: Callable[[str, float], int | None] | None = None,
    ) -> None:
        self.target = target
        self.goal = math.log1p(target) if target is not None else -math.inf
        self.most = most
        self.budget_s = budget_s
        self.predicted = predicted or (lambda graph_id, median_us: None)

    def halves(self, medians: dict[str, list[float]]) -> dict[str, float | None]:
        """Each variant's anytime half-width on log time: against the first variant where there are
        several (the first carries the widest of them), its own rounds' otherwise."""
        labels = list(medians)
        if len(labels) == 1:
            return {labels[0]: mean_half_width(medians[labels[0]])}
        first = medians[labels[0]]
        pairs = {label: paired_half_width(first, medians[label]) for label in labels[1:]}
        known = [h for h in pairs.values() if h is not None]
        return {labels[0]: max(known) if len(known) == len(pairs) else None, **pairs}

    def noise(self, medians: dict[str, list[float]], robust: bool = False) -> float | None:
        """The SD per round of what is being resolved (the noisiest pair's log ratio, or the rounds' log
        medians), None below two rounds; `robust`: 1.4826 times the median absolute deviation instead, which
        one slow round does not move."""
        labels = list(medians)
        first = np.log(medians[labels[0]])
        series = [first] if len(labels) == 1 else []
        for label in labels[1:]:
            other = np.log(medians[label])
            n = min(first.size, other.size)
            series.append(other[:n] - first[:n])
        if any(x.size < 2 for x in series):
            return None
        if robust:
            return max(1.4826 * float(np.median(np.abs(x - np.median(x)))) for x in series)
        return max(float(np.std(x, ddof=1)) for x in series)

    def settle(
        self, graph_id: str, outcomes: dict[str, list[Outcome]], more: bool, budget_out: bool = False
    ) -> Settled | None:
        """The graph's Settled once it is done, None while it should get another round. `more`: the run
        loop would give it one (none failed, its rounds below the budget); `budget_out`: the run's
        --budget cannot."""
        if any(o.status not in MEASURED or not o.stats for runs in outcomes.values() for o in runs):
            return Settled(self.target, False, {}, "")
        if self.target is None:
            return None if more and not budget_out else Settled(None, False, {}, "")
        medians = {label: [o.stats.median_us for o in runs] for label, runs in outcomes.items()}
        halves = self.halves(medians)
        widest = halves[next(iter(halves))]
        rounds = min(len(m) for m in medians.values())
        if widest is not None and widest <= self.goal:
            return Settled(
                self.target,
                True,
                halves,
                f"resolved: ±{math.expm1(widest):.1%} after {rounds} rounds (--resolve {self.target:.0%})",
            )
        sd = self.noise(medians)
        needed = rounds_to_reach(sd, self.target) if sd is not None else None
        typical = self.noise(medians, robust=True)
        hopeless = (
            rounds >= MIN_ABANDON
            and typical is not None
            and ((found := rounds_to_reach(typical, self.target)) is None or found > ABANDON_FACTOR * self.most)
        )
        if more and not budget_out and not hopeless:
            return None
        reached = f"±{math.expm1(widest):.1%}" if widest is not None and math.isfinite(widest) else "no interval yet"
        why = (
            "the run's --budget ran out"
            if budget_out
            else f"--rounds {self.most} at most"
            if not more
            else f"given up: it would need more than {ABANDON_FACTOR:g} times --rounds {self.most}"
        )
        median = float(np.median([m for ms in medians.values() for m in ms]))
        calibrated = self.predicted(graph_id, median)
        own = (
            "not measured"
            if sd is None
            else f"(SD {sd:.1%} a round) needs {f'about {needed}' if needed else 'more than 1000'} rounds for "
            f"±{self.target:.0%}"
        )
        return Settled(
            self.target,
            False,
            halves,
            f"not resolved: {reached} after {rounds} rounds ({why}); its own noise "
            f"{own}" + (f", this machine's calibration about {calibrated}" if calibrated else ""),
        )
