"""A throughput or server job in the worker: prepare the graph with its requests in flight, time one
round of the scenario, verify the outputs of every request (not only the first) against one reference,
then profile one request alone in a latency session (the executed precision and the node kernels; a
profile of N concurrent runs would mix their times)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from dbench.check.expected import expected_outputs, verify_rows
from dbench.outcome import PASSING, Status
from dbench.runtimes.base import ConcurrentSession, Runtime
from dbench.scenario import SERVER
from dbench.sources.contract import ONNX_REFERENCE
from dbench.worker.profiling import best_profile, profile_runs

if TYPE_CHECKING:
    from dbench.outcome import Outcome
    from dbench.stats.records import ServerRound, ThroughputRound
    from dbench.worker.job import Job


def measure_round(session: ConcurrentSession, job: Job) -> ThroughputRound | ServerRound:
    """The round's figures: the closed loop, or the server's arrivals seeded by the graph and round."""
    from dbench.worker.server import measure_server
    from dbench.worker.streams import measure_throughput

    load = job.load
    if load.scenario == SERVER:
        return measure_server(
            session,
            job.timing,
            load.rate,
            load.latency_bound_us,
            load.search_s if job.round == 1 else 0.0,
            job.spec.seed * 1000 + job.round,
            job.rounds,
        )
    return measure_throughput(session, job.timing)


def verify_requests(
    session: ConcurrentSession, expected: Mapping[str, np.ndarray], rule, rows
) -> tuple[dict[str, Any], str]:
    """Every request's outputs against the reference: the worst request's verdict, and a message naming
    the first request that failed (empty when all passed)."""
    from dbench.check.verdict import compare

    worst, failed = None, ""
    for request in range(session.requests):
        outputs = session.outputs(request)
        if rows is not None:
            outputs = {name: value[rows] for name, value in outputs.items()}
        verdict = compare(outputs, expected, rule)
        if not verdict.ok and not failed:
            failed = (
                f"request {request + 1} of {session.requests}: {verdict.detail}: error {verdict.error:.3g} > "
                f"{verdict.metric} tolerance {verdict.bound:g}"
            )
        if worst is None or (verdict.ok, -verdict.error) < (worst.ok, -worst.error):
            worst = verdict
    return {**worst.to_dict(), "requests_checked": session.requests}, failed


def verify_foreign_requests(
    session: ConcurrentSession,
    runtime: Runtime,
    model,
    job: Job,
    feeds: dict[str, np.ndarray],
    outcome: Outcome,
    phase: Callable[[str], None],
) -> None:
    """A foreign graph under load: the first request's outputs verified as a latency row's are (the
    reference, checked by a second implementation: dbench.worker.foreign), every other request's
    against the first's."""
    from dbench.check.verdict import compare
    from dbench.sources.model_reference import tolerance
    from dbench.worker.foreign import verify_foreign

    first = session.outputs(0)
    found = verify_foreign(job, model, feeds, first, runtime, phase)
    outcome.status, outcome.message = found.status, found.message
    outcome.verification = {**found.verification, "requests_checked": session.requests}
    rule = found.rule or tolerance(job.spec)  # a quantized graph's rule, derived when its reference was checked
    for request in range(1, session.requests):
        verdict = compare(session.outputs(request), first, rule)
        if not verdict.ok and outcome.status in PASSING:
            outcome.status = Status.MISMATCH
            outcome.message = (
                f"request {request + 1} of {session.requests} differs from request 1: {verdict.detail}: error "
                f"{verdict.error:.3g} > {verdict.metric} tolerance {verdict.bound:g}"
            )
            outcome.verification = {**outcome.verification, "ok": False}
            return


def run_under_load(
    runtime: Runtime,
    model,
    job: Job,
    feeds: dict[str, np.ndarray],
    constants: Mapping[str, np.ndarray],
    per_call: dict[str, np.ndarray],
    outcome: Outcome,
    phase: Callable[[str], None],
    memory_figures: Callable[[], None],
) -> None:
    """Fill `outcome` for a job with a Load (the worker's `execute` has made the inputs)."""
    spec = job.spec
    phase("preparing")
    t0 = time.perf_counter()
    session = runtime.prepare_concurrent(model, spec, constants, job.load.streams)
    try:
        session.bind(per_call)
        outcome.prepare_s = time.perf_counter() - t0
        outcome.runtime_options = runtime.describe()
        phase("timing")
        outcome.stats = measure_round(session, job)
        memory_figures()
        if job.verify and job.contract.reference == ONNX_REFERENCE:
            phase("verifying")
            t0 = time.perf_counter()
            verify_foreign_requests(session, runtime, model, job, feeds, outcome, phase)
            outcome.verify_s = time.perf_counter() - t0
        elif job.verify:
            phase("verifying")
            t0 = time.perf_counter()
            rows = verify_rows(spec)
            expected, by, rule = expected_outputs(model, spec, feeds, rows, job.contract.reference)
            if expected is None:
                outcome.verification = {"ok": None, "by": None}
                outcome.message = f"unverified: {by}"
            else:
                verdict, failed = verify_requests(session, expected, rule, rows)
                outcome.verification = {**verdict, "by": by, "rows_checked": len(rows) if rows is not None else None}
                if failed:
                    outcome.status = Status.MISMATCH
                    outcome.message = failed
            outcome.verify_s = time.perf_counter() - t0
    finally:
        session.close()
    if job.profile_runs:
        phase("profiling")
        t0 = time.perf_counter()
        alone = runtime.prepare(model, spec, constants)
        try:
            alone.bind(per_call)
            call_us = outcome.stats.latency_p50_us
            profile = best_profile(alone, profile_runs(job.profile_runs, call_us), call_us, job.profile_cap_s)
        finally:
            alone.close()
        outcome.nodes = [asdict(n) for n in profile.nodes]
        outcome.profile_call_us = profile.call_us
        outcome.profile_s = time.perf_counter() - t0
