"""The run loop, in rounds: every round hands each pending graph (in a shuffled order after the first)
to a fresh worker process per variant, and the variants of one graph run back to back, so that drift
cancels between them. A round's outcome is logged at once; a graph's row is written after its last
round (or at once when it fails, or when its budget allows no more rounds). A resumed run skips what
its log already holds, rounds included.

Under --resolve a graph's rounds are not fixed: after each round of all its variants, the graph is
settled when its anytime-valid interval (dbench.stats.sequential; paired against the first variant in an
interleaved run) is within the target, or its rounds reach --rounds, or its own noise shows it cannot
get there, or the run's --budget would be overrun by another round of it (dbench.orchestrator.resolve).
Each job is also checked against the machine's register of timing processes (dbench.orchestrator.lock),
so a row timed while another dbench was timing says so."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from dbench.errors import DbenchError, RuntimeSetupError
from dbench.gen.graph import GraphSpec
from dbench.orchestrator.lock import TimingLock
from dbench.orchestrator.resolve import Resolver, Settled
from dbench.orchestrator.worker_process import WorkerProcess
from dbench.outcome import MEASURED, Outcome, Status
from dbench.runtimes.base import Runtime, RuntimeOptions
from dbench.scenario import Load
from dbench.sources.item import Item
from dbench.stats.coverage import Coverage
from dbench.stats.drift import Drift
from dbench.stats.interleave import rotated
from dbench.stats.records import LOAD_ROUNDS, LatencyRound, round_from_dict
from dbench.stats.summary import summarize_rounds
from dbench.stats.throughput import summarize_load
from dbench.store.history import History, config_key
from dbench.store.log import RunLog, resume_command
from dbench.store.schema import Row
from dbench.worker.job import Job
from dbench.worker.timing import TimingConfig

WEIGHT_MODES = ("auto", "const", "input")


@dataclass(frozen=True)
class Variant:
    """One configuration every graph is timed under: a runtime and its options, named by `label` (the
    runtime, or what differs from the run's other variants, e.g. `threads=2`)."""

    label: str
    runtime: str
    options: RuntimeOptions
    load: Load | None = None
    """Requests in flight (throughput or server rows); None: one at a time (latency rows)."""


@dataclass(frozen=True)
class RunConfig:
    """How to run: the variants (one, or several interleaved), timing, verification, profiling and
    isolation limits. `weights` is `auto` (const for inference graphs, input for training ones),
    `const` or `input`."""

    variants: tuple[Variant, ...]
    timing: TimingConfig
    weights: str = "auto"
    verify: bool = True
    profile_runs: int = 10
    timeout: float = 600.0
    memory_limit: int | None = None
    cpus: tuple[int, ...] | None = None
    """CPUs the workers are pinned to (None: wherever the parent may run)."""
    history_runs: int = 0
    """Earlier runs per graph whose spread measures the between-run drift the rows' intervals carry
    (dbench.store.history; 0: the rounds alone)."""
    resolve: float | None = None
    """--resolve: rounds per graph until its anytime-valid interval is within ± this fraction, at most
    `timing.rounds` (None: every graph gets `timing.rounds`)."""
    budget_s: float | None = None
    """Under --resolve (or `dbench calibrate`, without a target), the seconds the whole run may take: no
    round is started that would overrun it."""
    slowdowns: dict[str, float] = field(default_factory=dict)
    """Variant label -> a benchmark's injected slowdown (dbench.orchestrator.slowdown); empty for users."""
    graph_timing: dict[str, TimingConfig] = field(default_factory=dict)
    """Graph id -> its own timing settings where they are not `timing` (a prediction's units sample less
    than its model: dbench.orchestrator.predict); same rounds as `timing`."""

    def timing_of(self, graph_id: str) -> TimingConfig:
        """The timing settings of one graph."""
        return self.graph_timing.get(graph_id, self.timing)


class Interrupted(DbenchError):
    """Ctrl-C during a run: every finished row and round is already in the log."""

    exit_code = 130


def weights_for(spec: GraphSpec, mode: str) -> str:
    """`auto`: weights as constants for inference graphs, fed per call for training ones
    (backward passes, or kernels that are only in the train suite)."""
    if mode != "auto":
        return mode
    training = spec.pass_name != "fwd" or (bool(spec.suites) and set(spec.suites) <= {"train"})
    return "input" if training else "const"


class RunObserver(Protocol):
    """What follows a run as it goes (the terminal's progress display; tests)."""

    def on_round(self, number: int, rounds: int, jobs: int) -> None:
        """Round `number` (1-based) of `rounds` begins, with `jobs` graph x variant jobs."""

    def on_start(self, item: Item, variant: str) -> None:
        """A graph goes to the worker of a variant."""

    def on_phase(self, item: Item, phase: str) -> None:
        """The worker began a phase of the graph's job (`preparing`, `timing`, `verifying`...)."""

    def on_row(self, row: Row) -> None:
        """The graph's row is in the log."""


def outcome_record(outcome: Outcome) -> dict[str, Any]:
    """A round's Outcome as a JSON-ready dict (a round line of the log), its statistics with their kind."""
    return {
        **dataclasses.asdict(outcome),
        "status": outcome.status.value,
        "stats": outcome.stats.to_dict() if outcome.stats is not None else None,
    }


def outcome_from_record(record: dict[str, Any]) -> Outcome:
    """The Outcome a round line holds."""
    names = {f.name for f in dataclasses.fields(Outcome)}
    stats = round_from_dict(record["stats"]) if record.get("stats") else None
    return Outcome(
        **{**{k: v for k, v in record.items() if k in names}, "status": Status(record["status"]), "stats": stats}
    )


@dataclass
class RunState:
    """What a run's log already holds: the (graph, variant) pairs with a row, and the rounds measured
    for the others."""

    finished: set[tuple[str, str]] = field(default_factory=set)
    rounds: dict[tuple[str, str], list[Outcome]] = field(default_factory=dict)

    @classmethod
    def from_log(cls, rows: list[dict[str, Any]], rounds: list[dict[str, Any]], default_variant: str) -> RunState:
        state = cls({(r["graph_id"], r.get("variant") or default_variant) for r in rows})
        for record in rounds:
            key = (record["graph_id"], record.get("variant") or default_variant)
            if key not in state.finished:
                state.rounds.setdefault(key, []).append(outcome_from_record(record["outcome"]))
        return state


def combine(
    outcomes: list[Outcome], timing: TimingConfig, drift: Drift | None = None, coverage: Coverage | None = None
) -> Outcome:
    """A graph's Outcome over its rounds: the first round's verification, profile and phases; the
    statistics of every round together, a latency row's intervals with the between-run `drift` earlier
    runs measured, scaled by the factor the machine's history showed such intervals to need (`coverage`);
    the largest memory; the device time's median."""
    first = outcomes[0]
    stats = [o.stats for o in outcomes if o.stats]
    device = sorted(o.device_median_us for o in outcomes if o.device_median_us is not None)

    def largest(name: str) -> int | None:
        values = [getattr(o, name) for o in outcomes if getattr(o, name) is not None]
        return max(values) if values else None

    def total(name: str) -> float | None:
        values = [getattr(o, name) for o in outcomes if getattr(o, name) is not None]
        return sum(values) if values else None

    summary = None
    if stats and isinstance(stats[0], LOAD_ROUNDS):  # requests in flight: their own statistics
        summary = summarize_load(stats, timing.percentiles, timing.unstable_above)
    elif stats:
        summary = summarize_rounds(stats, timing.percentiles, timing.unstable_above, drift, coverage)
    return dataclasses.replace(
        first,
        stats=None,
        figures=summary,
        peak_rss_bytes=largest("peak_rss_bytes"),
        memory_bytes=largest("memory_bytes"),
        device_memory_bytes=largest("device_memory_bytes"),
        inputs_s=total("inputs_s"),
        prepare_s=total("prepare_s"),
        device_median_us=device[len(device) // 2] if device else None,
    )


def round_cost_s(outcome: Outcome) -> float:
    """What a round cost outside its sampling: drawing the inputs, preparing, and the warm-up."""
    return (outcome.inputs_s or 0.0) + (outcome.prepare_s or 0.0) + (outcome.stats.warmup_s if outcome.stats else 0.0)


def another_round(outcomes: list[Outcome], timing: TimingConfig) -> bool:
    """Whether the graph gets one more round: every round so far measured, (with a round cost cap, as
    under --quick) the last round's own cost within the cap, and (unless stopping by iterations, or under
    --resolve, where the rounds' count is the budget) its sampling so far plus one more round's share, or
    one more call where a call is longer, stays within --max-time, so that a graph whose one call takes
    seconds is not timed rounds times over (it then says how many rounds it got)."""
    if len(outcomes) >= timing.rounds or any(o.status not in MEASURED or not o.stats for o in outcomes):
        return False
    if timing.round_too_costly(round_cost_s(outcomes[-1])):
        return False
    if timing.iterations is not None or timing.share_rounds is not None:
        return True
    sampled = sum(o.stats.timed_s for o in outcomes)
    call_s = outcomes[-1].stats.call_us / 1e6
    return sampled + max(timing.min_time / timing.rounds, call_s) <= timing.max_time * (1 + 1e-9)


class Runner:
    """Runs items on every variant in rounds, each round through fresh worker processes, logging each
    round as it is measured and each row as it is complete."""

    def __init__(
        self,
        config: RunConfig,
        runtime_classes: Mapping[str, type[Runtime]],
        log: RunLog,
        run_id: str,
        history: History | None = None,
        timing_lock: TimingLock | None = None,
        predicted_rounds: Callable[[str, float], int | None] | None = None,
    ) -> None:
        self.config = config
        self.log = log
        self.run_id = run_id
        self.history = history
        self.timing_lock = timing_lock
        self.runtime_info = {
            v.label: {
                "name": v.runtime,
                "version": runtime_classes[v.runtime].version(),
                "device": v.options.device or "default",
            }
            for v in config.variants
        }
        self.seq = 0
        self.overlaps: dict[tuple[str, str], set[str]] = {}
        """(graph, variant) -> the other timing processes seen while its rounds were timed."""
        self.resolver = (
            Resolver(config.resolve, config.timing.rounds, config.budget_s, predicted_rounds)
            if config.resolve is not None or config.budget_s is not None
            else None
        )

    def _outcome(
        self, worker: WorkerProcess, item: Item, variant: Variant, number: int, observer: RunObserver
    ) -> Outcome:
        """The outcome of round `number` (0-based) of one graph on one variant: the first round also
        verifies and profiles."""
        if item.unsupported:
            return Outcome(Status.UNSUPPORTED, item.unsupported)
        try:
            data, digest = item.load()
        except OSError as err:
            return Outcome(Status.FAILED, f"cannot read the graph file: {err.strerror}")
        timing = self.config.timing_of(item.spec.id)
        job = Job(
            spec=item.spec,
            model=data,
            sha256=digest,
            runtime=variant.runtime,
            options=variant.options,
            timing=timing.per_round(),
            weights=weights_for(item.spec, self.config.weights),
            verify=self.config.verify and number == 0,
            profile_runs=self.config.profile_runs if number == 0 else 0,
            profile_cap_s=timing.profile_cap_s(),
            round=number + 1,
            rounds=timing.rounds,
            contract=item.contract,
            load=variant.load,
            slowdown=self.config.slowdowns.get(variant.label, 0.0),
        )
        return worker.submit(job, self.config.timeout, lambda name: observer.on_phase(item, name))

    def _finish(
        self,
        item: Item,
        variant: Variant,
        outcomes: list[Outcome],
        observer: RunObserver,
        settled: Settled | None = None,
    ) -> Row:
        """Write the row of a graph and variant from its rounds. A round after the first that failed
        (a crash, a timeout) makes the row that failure, named by its round, without figures."""
        info = self.runtime_info[variant.label]
        weights = weights_for(item.spec, self.config.weights)
        # The settings in force as the worker read them after prepare; as requested when no graph got that far.
        options = outcomes[0].runtime_options or dataclasses.asdict(variant.options)
        drift, coverage = self._history_of(item, variant, options, weights, outcomes)
        outcome = combine(outcomes, self.config.timing_of(item.spec.id), drift, coverage)
        last = outcomes[-1]
        if len(outcomes) > 1 and last.status not in MEASURED:
            outcome = dataclasses.replace(
                outcome,
                status=last.status,
                figures=None,
                message=f"round {len(outcomes)} of {self.config.timing.rounds}: {last.message}",
            )
        row = Row.build(
            self.run_id,
            self.seq,
            item.spec,
            {**info, "options": options},
            weights,
            outcome,
            variant.label,
            variant.load,
        )
        overlapped = sorted(self.overlaps.pop((item.spec.id, variant.label), set()))
        row = dataclasses.replace(
            row,
            overlapped=overlapped or None,
            injected_slowdown=self.config.slowdowns.get(variant.label),
            **(settled.fields(variant.label) if settled else {}),
        )
        self.log.append(row.to_dict())
        self.seq += 1
        observer.on_row(row)
        return row

    def _history_of(
        self, item: Item, variant: Variant, options: dict[str, Any], weights: str, outcomes: list[Outcome]
    ) -> tuple[Drift | None, Coverage | None]:
        """The drift this machine's earlier runs measured for a latency row of this graph and configuration,
        and how well such rows' intervals held later runs there (dbench.store.history)."""
        medians = [o.stats.median_us for o in outcomes if isinstance(o.stats, LatencyRound)]
        if self.history is None or variant.load is not None or not medians:
            return None, None
        info = self.runtime_info[variant.label]
        config = config_key(info["name"], info["version"], info["device"], options, weights, "latency")
        drift = self.history.drift(config, item.spec.id, medians)
        return drift, self.history.coverage(config, sorted(medians)[len(medians) // 2])

    def _watch(self, key: tuple[str, str]) -> None:
        """Note the other processes timing on this machine now against a graph's variant."""
        if self.timing_lock is not None:
            others = self.timing_lock.others()
            if others:
                self.overlaps.setdefault(key, set()).update(t.key() for t in others)

    def _order(self, items: list[Item], number: int) -> list[Item]:
        """The first round in the given order; later ones shuffled (seeded by the run and round), so that
        a graph's rounds fall at different moments and next to different neighbours."""
        if number == 0:
            return list(items)
        shuffled = list(items)
        random.Random(f"{self.run_id}/{number}").shuffle(shuffled)
        return shuffled

    def _variants(self, number: int, position: int) -> list[Variant]:
        """The variants of one graph in this round, rotated graph by graph and round by round so that
        none always runs first (after the other's caches, or before a frequency step)."""
        return rotated(self.config.variants, number + position)

    def _due(self, item: Item, variant: Variant, number: int, state: RunState, pending: set[tuple[str, str]]) -> bool:
        """Whether round `number` (0-based) of this graph and variant is still to be measured."""
        key = (item.spec.id, variant.label)
        measured = state.rounds.get(key, [])
        return (
            key in pending
            and len(measured) == number
            and (number == 0 or another_round(measured, self.config.timing_of(item.spec.id)))
        )

    def _settle(
        self,
        item: Item,
        state: RunState,
        pending: set[tuple[str, str]],
        rows: list[Row],
        observer: RunObserver,
        budget_out: bool = False,
    ) -> None:
        """Under --resolve, after a round of all the graph's variants: write its rows when the Resolver
        says it is settled (or the run's budget cannot give it another round)."""
        keys = [(item.spec.id, v.label) for v in self.config.variants]
        outcomes = {label: state.rounds.get((graph, label), []) for graph, label in keys}
        more = all(another_round(o, self.config.timing_of(item.spec.id)) for o in outcomes.values())
        settled = self.resolver.settle(item.spec.id, outcomes, more, budget_out)
        if settled is None:
            return
        for variant in self.config.variants:
            key = (item.spec.id, variant.label)
            if key in pending and outcomes[variant.label]:
                rows.append(self._finish(item, variant, outcomes[variant.label], observer, settled))
                pending.discard(key)
                state.finished.add(key)

    def _within_budget(
        self,
        todo: list[tuple[Item, Variant]],
        number: int,
        state: RunState,
        pending: set[tuple[str, str]],
        rows: list[Row],
        observer: RunObserver,
    ) -> list[tuple[Item, Variant]]:
        """Under --resolve with --budget, this round's jobs that fit in what is left of it (a graph's
        next round costs what its last one did); the graphs left out are settled now."""
        if self.resolver is None or self.resolver.budget_s is None or number < self.resolver.min_rounds:
            return todo
        left = self.resolver.budget_s - (time.monotonic() - self.started)
        kept, planned = [], 0.0
        for graph in dict.fromkeys(item.spec.id for item, _ in todo):
            jobs = [(item, variant) for item, variant in todo if item.spec.id == graph]
            cost = self.round_costs.get(graph, 0.0)
            if planned + cost <= left:
                kept += jobs
                planned += cost
            else:
                self._settle(jobs[0][0], state, pending, rows, observer, budget_out=True)
        return kept

    def run(self, items: list[Item], state: RunState, observer: RunObserver) -> list[Row]:
        """Run every (item, variant) that has no row in `state`, round by round, telling `observer` as
        each round begins, each job starts and enters a phase in the worker, and each row is logged."""
        rows: list[Row] = []
        self.seq = len(state.finished)
        self.started = time.monotonic()
        self.round_costs: dict[str, float] = {}
        timing = self.config.timing
        pending = {(i.spec.id, v.label) for i in items for v in self.config.variants} - state.finished
        for number in range(timing.rounds):
            todo = [
                (item, variant)
                for position, item in enumerate(self._order(items, number))
                for variant in self._variants(number, position)
                if self._due(item, variant, number, state, pending)
            ]
            todo = self._within_budget(todo, number, state, pending, rows, observer)
            if not todo:
                continue
            observer.on_round(number + 1, timing.rounds, len(todo))
            workers = {v.label: WorkerProcess(self.config.memory_limit, self.config.cpus) for v in self.config.variants}
            try:
                for index, (item, variant) in enumerate(todo):
                    key = (item.spec.id, variant.label)
                    observer.on_start(item, variant.label)
                    self._watch(key)
                    began = time.monotonic()
                    outcome = self._outcome(workers[variant.label], item, variant, number, observer)
                    cost = time.monotonic() - began
                    self.round_costs[item.spec.id] = cost + (
                        self.round_costs.get(item.spec.id, 0.0) if index and todo[index - 1][0] is item else 0.0
                    )
                    self._watch(key)
                    if outcome.aborts_run:
                        raise RuntimeSetupError(f"{outcome.message}; {self.seq} rows are in {self.log.path}")
                    self.log.append_round(
                        {
                            "graph_id": item.spec.id,
                            "variant": variant.label,
                            "round": number + 1,
                            "outcome": outcome_record(outcome),
                        }
                    )
                    outcomes = state.rounds.setdefault(key, [])
                    outcomes.append(outcome)
                    if self.resolver is not None:
                        if (
                            index + 1 == len(todo) or todo[index + 1][0] is not item
                        ):  # the graph's last variant this round
                            self._settle(item, state, pending, rows, observer)
                    elif not another_round(outcomes, self.config.timing_of(item.spec.id)):
                        rows.append(self._finish(item, variant, outcomes, observer))
                        pending.discard(key)
                        state.finished.add(key)
                for worker in workers.values():
                    worker.close()
            except KeyboardInterrupt:
                raise Interrupted(
                    f"interrupted; {self.seq} rows (and the rounds measured since) are in {self.log.path}; "
                    f"finish with: {resume_command(self.log.path)}"
                ) from None
            finally:
                for worker in workers.values():
                    worker.stop()  # a no-op after close; on any error, the worker's group is killed
        for item in items:  # graphs a resumed run had measured in every round it gets, but not yet written
            if self.resolver is not None and any((item.spec.id, v.label) in pending for v in self.config.variants):
                self._settle(item, state, pending, rows, observer, budget_out=True)
            for variant in self.config.variants:
                key = (item.spec.id, variant.label)
                if key in pending and state.rounds.get(key):
                    rows.append(self._finish(item, variant, state.rounds[key], observer))
                    pending.discard(key)
        return rows
