"""The worker process: loads one graph at a time on one runtime, binds seeded inputs, times it,
verifies it, profiles it, and returns a versioned Outcome. It lives across kernels; the parent
replaces it when it crashes, hangs or runs out of memory."""

from __future__ import annotations

import math
import os
import signal
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dbench.gen.build import Tolerance

OUTCOME_VERSION = 1


@dataclass(frozen=True)
class Job:
    """One graph to measure. `model` is the serialized ONNX graph (no weights inside)."""

    spec: dict[str, Any]
    model: bytes
    sha256: str | None
    runtime: str
    options: dict[str, Any]
    timing: dict[str, Any]
    verify: bool = True
    profile_runs: int = 10


@dataclass
class Outcome:
    """What the worker measured for one Job: status, message, statistics, verdict, profile, memory."""

    status: str
    message: str = ""
    stats: dict[str, Any] | None = None
    verification: dict[str, Any] | None = None
    nodes: list[dict[str, Any]] = field(default_factory=list)
    peak_rss_bytes: int | None = None
    memory_bytes: int | None = None
    device_memory_bytes: int | None = None
    runtime_options: dict[str, Any] | None = None
    inputs_s: float | None = None
    prepare_s: float | None = None
    verify_s: float | None = None
    profile_s: float | None = None
    version: int = OUTCOME_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__


def _is_oom(err: BaseException) -> bool:
    text = str(err).lower()
    return isinstance(err, MemoryError) or "bad_alloc" in text or "failed to allocate" in text or "out of memory" in text


def _check_model(model, spec) -> str | None:
    """A reason the graph does not match its manifest entry, or None."""
    names = [i.name for i in model.graph.input]
    expected = [t.name for t in spec.inputs]
    if names != expected:
        return f"graph inputs {names} do not match the manifest's {expected}"
    for value, tensor in zip(model.graph.input, spec.inputs):
        dims = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
        if dims != tensor.shape:
            return f"input {tensor.name} has shape {dims} in the graph but {tensor.shape} in the manifest"
    return None


VERIFY_ROWS = 256
"""Above this many output rows (GEMM and sparse), verification checks a seeded sample of rows."""
PROFILE_BUDGET_S = 0.05
"""Profiling stops after about this much kernel time, once two runs are done (the first run is cold)."""


def _verify_rows(spec) -> "np.ndarray | None":
    """A seeded sample of output rows to verify when the output is large, else None (all rows)."""
    import numpy as np

    from dbench.gen.build import ROW_SAMPLED

    rows = spec.outputs[0].shape[0] if spec.outputs else 0
    if spec.family not in ROW_SAMPLED or spec.precision == "int8" or rows <= VERIFY_ROWS:
        return None
    return np.sort(np.random.default_rng(spec.seed).choice(rows, VERIFY_ROWS, replace=False))


def _profile_runs(limit: int, median_us: float) -> int:
    """At least 2 runs (the first, cold one is dropped), at most `limit`, about PROFILE_BUDGET_S of work."""
    return max(2, min(limit, math.ceil(PROFILE_BUDGET_S * 1e6 / max(median_us, 1.0))))


def _estimate_bytes(spec, verify: bool, weights_const: bool) -> int:
    """Memory a kernel needs at least: feeds, outputs, a constant copy of the weights, and the
    float64 reference and comparison arrays when verifying."""
    need = spec.min_bytes + (sum(t.nbytes for t in spec.weights) if weights_const else 0)
    if verify:
        need += 2 * 8 * sum(t.size for t in spec.inputs + spec.outputs)
    return need


def _expected(model, spec, feeds: dict, rows) -> tuple[dict | None, str, Tolerance]:
    """(reference outputs, what computed them, tolerance rule): dbench's numpy reference for its own
    graphs; onnx.reference for a foreign model, or (None, why not, rule) when it cannot run it."""
    from dbench.foreign.spec import FAMILY

    if spec.family == FAMILY:
        from dbench.foreign.reference import reference_outputs, tolerance as model_tolerance

        outputs, by = reference_outputs(model, spec, feeds)
        return outputs, by, model_tolerance(spec)
    from dbench.gen.build import reference, tolerance

    return reference(spec, feeds, rows), "numpy", tolerance(spec)


def execute(job: Job) -> Outcome:
    """Run one job in this process (the worker loop calls this; tests may call it directly)."""
    import onnx

    from dbench.worker import memory
    from dbench.worker.timing import TimingConfig, measure
    from dbench.worker.verify import compare
    from dbench.errors import DbenchError, UnsupportedError
    from dbench.gen.feeds import make_feeds
    from dbench.gen.graph import GraphSpec
    from dbench.gen.manifest import sha256
    from dbench.gen.weights import split_feeds
    from dbench.runtimes.base import RuntimeOptions
    from dbench.runtimes.registry import runtime_class

    spec = GraphSpec.from_dict(job.spec)
    options = RuntimeOptions(**job.options)
    try:
        model = onnx.load_model_from_string(job.model)
    except Exception as err:  # protobuf raises DecodeError and friends
        return Outcome("failed", f"cannot load the graph: {_first_line(err)}")
    if job.sha256 and sha256(job.model) != job.sha256:
        return Outcome("failed", "the graph file does not match its manifest (sha256 differs); regenerate it with dbench gen --force")
    mismatch = _check_model(model, spec)
    if mismatch:
        return Outcome("failed", f"{mismatch}; regenerate the folder with dbench gen --force")
    need = _estimate_bytes(spec, job.verify, options.weights == "const")
    if need > memory.available():
        return Outcome("oom", f"needs at least {need / 2**30:.1f} GiB, {memory.available() / 2**30:.1f} GiB available; skipped before allocating")

    outcome = Outcome("ok")
    session = None
    try:
        runtime = runtime_class(job.runtime)(options)
        memory.trim()
        baseline = memory.current_rss()
        peak_resets = memory.reset_peak()  # else the peak would be an earlier kernel's: not reported
        t0 = time.perf_counter()
        feeds = make_feeds(spec)
        constants, per_call = split_feeds(spec, feeds, options.weights)
        outcome.inputs_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        session = runtime.prepare(model, spec, constants)
        session.bind(per_call)
        outcome.prepare_s = time.perf_counter() - t0
        outcome.runtime_options = runtime.describe()  # after prepare: includes what the runtime read back
        stats = measure(session.run, TimingConfig(**job.timing))
        outcome.stats = stats.to_dict()
        if peak_resets and (peak := memory.peak_rss()) is not None:
            outcome.peak_rss_bytes = peak
            outcome.memory_bytes = max(0, peak - baseline)
        outcome.device_memory_bytes = session.device_memory()
        if job.verify:
            t0 = time.perf_counter()
            rows = _verify_rows(spec)
            outputs = session.outputs()
            if rows is not None:
                outputs = {name: value[rows] for name, value in outputs.items()}
            expected, by, rule = _expected(model, spec, feeds, rows)
            if expected is None:  # a foreign model the reference evaluator cannot run: said plainly
                outcome.verification = {"ok": None, "by": None}
                outcome.message = f"unverified: {by}"
            else:
                verdict = compare(outputs, expected, rule)
                outcome.verification = {**verdict.to_dict(), "by": by, "rows_checked": len(rows) if rows is not None else None}
                if not verdict.ok:
                    outcome.status = "mismatch"
                    outcome.message = f"{verdict.detail}: error {verdict.error:.3g} > {verdict.metric} tolerance {verdict.bound:g}"
            outcome.verify_s = time.perf_counter() - t0
        if job.profile_runs:
            t0 = time.perf_counter()
            # The session's last use: the adapter may release the timed model to reuse its memory.
            outcome.nodes = [asdict(n) for n in session.profile(_profile_runs(job.profile_runs, stats.median_us))]
            outcome.profile_s = time.perf_counter() - t0
    except UnsupportedError as err:
        return Outcome("unsupported", str(err))
    except DbenchError as err:
        return Outcome("failed", str(err))
    except Exception as err:  # a runtime's own exception: record it, keep the worker alive
        if _is_oom(err):
            return Outcome("oom", _first_line(err))
        return Outcome("failed", _first_line(err) + " | " + traceback.format_exc(limit=3).replace("\n", " ")[-400:])
    finally:
        if session is not None:
            session.close()
    return outcome


def serve(connection, memory_limit: int | None = None) -> None:
    """Worker main loop: receive Jobs, send Outcomes, until the parent closes the pipe.
    SIGINT is ignored so that Ctrl-C is handled once, by the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
        # Test hooks: a kernel whose id contains the string crashes (SIGSEGV) or hangs the worker.
        if crash_on and crash_on in job.spec["id"]:
            os.kill(os.getpid(), signal.SIGSEGV)
        if hang_on and hang_on in job.spec["id"]:
            time.sleep(3600)
        connection.send(execute(job).to_dict())


def main() -> None:
    """Entry point of `python -m dbench.worker FD [MEMORY_LIMIT]`."""
    import sys
    from multiprocessing.connection import Connection

    serve(Connection(int(sys.argv[1])), int(sys.argv[2]) if len(sys.argv) > 2 else None)
