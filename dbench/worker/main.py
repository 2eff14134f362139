"""The worker process: loads one graph at a time on one runtime, binds seeded inputs, times it,
verifies it, profiles it, and returns an Outcome. It lives across kernels; the parent replaces it
when it crashes, hangs or runs out of memory. Jobs and Outcomes cross the pipe pickled as they are."""

from __future__ import annotations

import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from dbench.outcome import Outcome, Phase, Status
from dbench.worker.instance import runtime_for
from dbench.worker.job import Job
from dbench.worker.profiling import (
    PROFILE_BUDGET_S,
    best_profile,
    over_cap,
    profile_before_timing,
    profile_first,
    profile_runs,
    separate_pass_s,
    taken_well,
)
from dbench.worker.timing import TimingConfig

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from dbench.runtimes.base import Profile, Runtime, Session
    from dbench.stats.records import LatencyRound
    from dbench.worker.timing import Warmed


def _no_phase(name: str) -> None:
    """Phases go nowhere when a job runs in-process."""


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__


def _device_iterations(median_us: float, timing: TimingConfig) -> int:
    """Runs per device-event round: about PROFILE_BUDGET_S of work, or the round's share of --min-time
    where that is less (--quick: a GPU smoke run's event rounds must not cost more than its sampling),
    between 1 (a call longer than that is resolved by the events alone) and 10,000."""
    budget_s = min(PROFILE_BUDGET_S, timing.min_time)
    return max(1, min(10_000, math.ceil(budget_s * 1e6 / max(median_us, 1.0))))


def _estimate_bytes(spec, verify: bool, weights_const: bool, requests: int = 1) -> int:
    """Memory a kernel needs at least: feeds and outputs (each request in flight its own), a constant
    copy of the weights, and the float64 reference and comparison arrays when verifying."""
    need = spec.min_bytes * requests + (sum(t.nbytes for t in spec.weights) if weights_const else 0)
    if verify:
        need += 2 * 8 * sum(t.size for t in spec.inputs + spec.outputs)
    return need


def _memory_figures(outcome: Outcome, memory, baseline: int, peak_resets: bool) -> None:
    """The worker's peak resident memory since the kernel began, and that peak above its baseline."""
    if peak_resets and (peak := memory.peak_rss()) is not None:
        outcome.peak_rss_bytes = peak
        outcome.memory_bytes = max(0, peak - baseline)


def _settle_profile(
    session,
    job: Job,
    outcome: Outcome,
    median_us: float,
    first: Profile | None,
    skipped: str,
    phase: Callable[[str], None],
) -> None:
    """The row's per-node profile: the one taken before timing where it stands, else a separate pass
    after timing, unless it would cost more than --quick allows (then the row says so)."""
    profile = first
    if not skipped and not taken_well(first, median_us):
        cost = separate_pass_s(outcome.prepare_s, job.profile_runs, median_us)
        if job.profile_cap_s is not None and cost > job.profile_cap_s:
            skipped = over_cap(cost, job.profile_cap_s)
        else:
            phase("profiling")
            t0 = time.perf_counter()
            # The session's last use: the adapter may release the timed model to reuse its memory.
            profile = best_profile(session, profile_runs(job.profile_runs, median_us), median_us, job.profile_cap_s)
            outcome.profile_s = (outcome.profile_s or 0.0) + time.perf_counter() - t0
    if profile is not None:
        outcome.nodes = [asdict(n) for n in profile.nodes]
        outcome.profile_call_us = profile.call_us
    if skipped:
        outcome.message = "; ".join(m for m in (outcome.message, skipped) if m)


@dataclass
class Inputs:
    """A job's drawn inputs: every feed (the model's stored weights included), those made constants at
    prepare, and those bound for every call."""

    feeds: dict[str, np.ndarray]
    constants: dict[str, np.ndarray]
    per_call: dict[str, np.ndarray]


@dataclass
class Prepared:
    """A prepared, bound session, and what a profile taken before timing left: the profile (None where it
    was not taken, or cost too much), the calls it made (they warm the session up), and why it is missing."""

    session: Session
    profile: Profile | None = None
    warmed: Warmed | None = None
    skipped: str = ""


def _checked_model(job: Job) -> tuple[onnx.ModelProto | None, Outcome | None]:
    """The job's graph parsed and held to its description (bytes, fed inputs, memory it needs), or the
    outcome that refuses it before any runtime starts."""
    import onnx

    from dbench.gen.manifest import sha256
    from dbench.sources.contract import check_model
    from dbench.worker import memory

    try:
        model = onnx.load_model_from_string(job.model)
    except Exception as err:  # protobuf raises DecodeError and friends
        return None, Outcome(Status.FAILED, f"cannot load the graph: {_first_line(err)}")
    if job.sha256 and sha256(job.model) != job.sha256:
        return None, Outcome(
            Status.FAILED, f"the graph file does not match its manifest (sha256 differs); {job.contract.remedy}"
        )
    mismatch = check_model(model, job.spec)
    if mismatch:
        return None, Outcome(Status.FAILED, f"{mismatch} in {job.contract.described_by}; {job.contract.remedy}")
    need = _estimate_bytes(job.spec, job.verify, job.weights == "const", job.load.streams if job.load else 1)
    if need > memory.available():
        return None, Outcome(
            Status.OOM,
            f"needs at least {need / 2**30:.1f} GiB, {memory.available() / 2**30:.1f} GiB "
            "available; skipped before allocating",
        )
    return model, None


def _make_inputs(job: Job, model: onnx.ModelProto, outcome: Outcome, phase: Callable[[str], None]) -> Inputs:
    """Draw the spec's seeded inputs and the model's stored weights, split by the weights mode."""
    from dbench.gen.feeds import make_feeds
    from dbench.gen.weights import split_feeds
    from dbench.sources.contract import stored_weights

    phase("making inputs")
    t0 = time.perf_counter()
    feeds = {**make_feeds(job.spec), **stored_weights(model, job.weights)}
    constants, per_call = split_feeds(job.spec, feeds, job.weights)
    outcome.inputs_s = time.perf_counter() - t0
    return Inputs(feeds, constants, per_call)


def _prepare(
    job: Job,
    runtime: Runtime,
    model: onnx.ModelProto,
    inputs: Inputs,
    outcome: Outcome,
    phase: Callable[[str], None],
) -> Prepared:
    """Prepare and bind the session; a slow graph is profiled in it before its timed calls (those calls
    are its warm-up), unless that costs more than --quick allows."""
    phase("preparing")
    t0 = time.perf_counter()
    first = job.profile_runs > 0 and profile_first(job.spec, runtime.options.thread_count)
    profiled = runtime.prepare_profiling(model, job.spec, inputs.constants) if first else None
    prepared = Prepared(profiled or runtime.prepare(model, job.spec, inputs.constants))
    prepared.session.bind(inputs.per_call)
    outcome.prepare_s = time.perf_counter() - t0
    _note_backing(prepared.session, outcome)
    outcome.runtime_options = runtime.describe()  # after prepare: includes what the runtime read back
    if profiled is not None:
        phase("profiling")
        t0 = time.perf_counter()
        prepared.profile, prepared.warmed = profile_before_timing(prepared.session, job.profile_runs, job.profile_cap_s)
        outcome.profile_s = time.perf_counter() - t0
        if prepared.profile is None:  # over --quick's cap: the warm-up stands, the profile is left out
            best_us = prepared.warmed.best_ns / 1e3
            prepared.skipped = over_cap(best_us / 1e6 * profile_runs(job.profile_runs, best_us), job.profile_cap_s)
    return prepared


def _note_backing(session: Session, outcome: Outcome) -> None:
    """Say in the row when the inputs a call reads are not on huge pages (the machine's kernel offers
    none, or gave none): a runtime streaming them may then be slower than its own tool elsewhere."""
    from dbench.runtimes.pages import backing

    found = backing(session.input_buffers())
    if found is not None and (note := found.short()):
        outcome.message = "; ".join(m for m in (outcome.message, note) if m)


def _time(job: Job, prepared: Prepared, outcome: Outcome, phase: Callable[[str], None]) -> LatencyRound:
    """The round's timed calls (a later round pays its own work out of its share), then the device's own
    times and state where the runtime has them."""
    from dbench.gen.graph import EVICT_ATTR
    from dbench.worker.evict import eviction_buffer, measure_evicted
    from dbench.worker.timing import measure

    session = prepared.session
    gpu_start = session.gpu_state()
    phase("timing")
    own_s = outcome.inputs_s + outcome.prepare_s if job.round > 1 else None
    call = slowed(session.run, job.slowdown) if job.slowdown else session.run
    if job.spec.attrs.get(EVICT_ATTR):  # a unit in the cache state its model leaves it (dbench.worker.evict)
        stats = measure_evicted(
            call, job.timing, eviction_buffer(int(job.spec.attrs[EVICT_ATTR])), session.refresh_inputs
        )
    else:
        stats = measure(call, job.timing, session.runtime_latency_us, prepared.warmed, own_s)
    outcome.stats = stats
    outcome.device_memory_bytes = session.device_memory()
    device_runs = _device_iterations(stats.median_us, job.timing)
    outcome.device_median_us = session.device_time_us(device_runs)
    outcome.device_graph_median_us = session.device_graph_time_us(device_runs)
    outcome.gpu_state = {"start": gpu_start, "end": session.gpu_state()} if gpu_start is not None else None
    return stats


def _verify(
    job: Job,
    model: onnx.ModelProto,
    inputs: Inputs,
    session: Session,
    runtime: Runtime,
    outcome: Outcome,
    phase: Callable[[str], None],
) -> None:
    """The outputs against the graph's reference: a foreign graph's through the checked foreign reference
    (a second runtime before any `mismatch`), a generated graph's by the check its family allows."""
    from dbench.cache.store import open_cache
    from dbench.check.expected import expected_outputs
    from dbench.check.full import Unverified
    from dbench.check.verify import verify
    from dbench.sources.contract import ONNX_REFERENCE
    from dbench.worker.foreign import verify_foreign

    phase("verifying")
    t0 = time.perf_counter()
    if job.contract.reference == ONNX_REFERENCE:
        found = verify_foreign(job, model, inputs.feeds, session.outputs(), runtime, phase)
        outcome.status, outcome.verification = found.status, found.verification
        outcome.message = "; ".join(m for m in (outcome.message, found.message) if m)
    else:
        spec = job.spec
        verdict = verify(
            spec,
            job.model,
            inputs.feeds,
            session.outputs(),
            job.contract.reference,
            lambda rows: expected_outputs(model, spec, inputs.feeds, rows, job.contract.reference),
            open_cache(),
        )
        if isinstance(verdict, Unverified):  # no reference can run: said plainly
            outcome.verification = {"ok": None, "by": None}
            outcome.message = f"unverified: {verdict.reason}"
        else:
            outcome.verification = verdict.to_dict()
            if not verdict.ok:
                outcome.status = Status.MISMATCH
                outcome.message = (
                    f"{verdict.detail}: error {verdict.error:.3g} > {verdict.metric} tolerance {verdict.bound:g}"
                )
            elif verdict.weak:  # verified, but agreement on such outputs proves little: said so
                outcome.message = f"weak verification: the expected outputs are degenerate ({verdict.weak})"
    outcome.verify_s = time.perf_counter() - t0


def _refused(err: BaseException) -> Outcome:
    """The outcome of a job the runtime or the machine refused, by what was raised."""
    from dbench.errors import DbenchError, OutOfMemory, RuntimeSetupError, UnsupportedError

    if isinstance(err, RuntimeSetupError):
        return Outcome(Status.FAILED, str(err), aborts_run=True)
    if isinstance(err, UnsupportedError):
        return Outcome(Status.UNSUPPORTED, str(err))
    if isinstance(err, OutOfMemory):
        return Outcome(Status.OOM, str(err))
    if isinstance(err, MemoryError):  # numpy or Python itself, e.g. under --memory-limit
        return Outcome(Status.OOM, _first_line(err))
    if isinstance(err, DbenchError):
        return Outcome(Status.FAILED, str(err))
    # an error no adapter classified: record it, keep the worker alive
    return Outcome(Status.FAILED, _first_line(err) + " | " + traceback.format_exc(limit=3).replace("\n", " ")[-400:])


def execute(job: Job, phase: Callable[[str], None] = _no_phase) -> Outcome:
    """Run one job in this process (the worker loop calls this; tests may call it directly), phase by
    phase, calling `phase` with each phase's name as it begins: the graph checked, then in the runtime's
    error context its inputs made, the session prepared, timed, verified and profiled."""
    from dbench.worker import memory

    model, refused = _checked_model(job)
    if refused is not None:
        return refused
    outcome = Outcome(Status.OK)
    prepared = None
    try:
        runtime = runtime_for(job.runtime, job.options)
        with runtime.errors():
            memory.trim()
            baseline = memory.current_rss()
            peak_resets = memory.reset_peak()  # else the peak would be an earlier kernel's: not reported
            inputs = _make_inputs(job, model, outcome, phase)
            if job.load is not None:  # requests in flight: their own loop, every request verified
                from dbench.worker.throughput_job import run_under_load

                run_under_load(
                    runtime,
                    model,
                    job,
                    inputs.feeds,
                    inputs.constants,
                    inputs.per_call,
                    outcome,
                    phase,
                    lambda: _memory_figures(outcome, memory, baseline, peak_resets),
                )
                return outcome
            prepared = _prepare(job, runtime, model, inputs, outcome, phase)
            stats = _time(job, prepared, outcome, phase)
            _memory_figures(outcome, memory, baseline, peak_resets)
            if job.verify:
                _verify(job, model, inputs, prepared.session, runtime, outcome, phase)
            if job.spec.family == "attention" and job.round == 1 and runtime.reports_execution:
                from dbench.worker.attention_form import executed_attention, model_op_types

                # Before the profile: OpenVINO's profiling pass is its session's last use and frees the model.
                phase("reading the executed form")
                outcome.executed_form = executed_attention(prepared.session.executed_graph(), model_op_types(model))
            if job.profile_runs:
                _settle_profile(
                    prepared.session, job, outcome, stats.median_us, prepared.profile, prepared.skipped, phase
                )
    except Exception as err:
        return _refused(err)
    finally:
        if prepared is not None:
            prepared.session.close()
    return outcome


def slowed(call: Callable[[], None], fraction: float) -> Callable[[], None]:
    """`call`, then a busy wait of `fraction` of the time it took (a benchmark's injected slowdown: the
    wait burns the CPU as slower work would, and is inside the timed interval)."""
    clock = time.perf_counter_ns

    def run() -> None:
        start = clock()
        call()
        end = clock()
        until = end + (end - start) * fraction
        while clock() < until:
            pass

    return run


def _hooked(hook: str, job: Job) -> bool:
    """Whether a test hook (`ID` or `ID@ROUND`) names this job."""
    part, _, round_number = hook.partition("@")
    return part in job.spec.id and (not round_number or int(round_number) == getattr(job, "round", 1))


def _answer(job, phase: Callable[[str], None]):
    """A Job's Outcome, an ExecutionJob's executed graph (dbench.worker.execution), an OutputsJob's
    outputs (a second implementation's, dbench.worker.second), or an AccuracyJob's accuracy cost
    (dbench.worker.accuracy)."""
    from dbench.worker.accuracy import AccuracyJob, measure_accuracy
    from dbench.worker.execution import ExecutionJob, describe_execution
    from dbench.worker.second import OutputsJob, outputs_of

    if isinstance(job, OutputsJob):
        return outputs_of(job)
    if isinstance(job, AccuracyJob):
        return measure_accuracy(job)
    return describe_execution(job, phase) if isinstance(job, ExecutionJob) else execute(job, phase)


def serve(connection, memory_limit: int | None = None, cpus: tuple[int, ...] | None = None) -> None:
    """Worker main loop: receive Jobs, send Outcomes, until the parent closes the pipe.
    SIGINT is ignored so that Ctrl-C is handled once, by the parent. `cpus` pins this process
    before any runtime starts its threads."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if cpus:
        from dbench.affinity import pin

        pin(cpus)
    if memory_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    crash_on = os.environ.get("DBENCH_WORKER_CRASH_ON")
    hang_on = os.environ.get("DBENCH_WORKER_HANG_ON")
    while True:
        try:
            job = connection.recv()
        except EOFError:
            return
        # Test hooks: a kernel whose id contains the string crashes (SIGSEGV) or hangs the worker; `ID@N`
        # only in round N.
        if crash_on and _hooked(crash_on, job):
            os.kill(os.getpid(), signal.SIGSEGV)
        if hang_on and _hooked(hang_on, job):
            time.sleep(3600)
        connection.send(_answer(job, lambda name: connection.send(Phase(name))))


PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux prctl), and exit now if the
    parent is already gone, so a killed `dbench run` never leaves a worker behind."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


def main() -> None:
    """Entry point of `python -m dbench.worker FD PARENT_PID [MEMORY_LIMIT [CPUS]]` (limit 0: none)."""
    from multiprocessing.connection import Connection

    die_with_parent(int(sys.argv[2]))
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    pinned = tuple(int(cpu) for cpu in sys.argv[4].split(",")) if len(sys.argv) > 4 else None
    serve(Connection(int(sys.argv[1])), limit or None, pinned)
