"""A second implementation's outputs for a graph, on the same inputs: what a foreign graph's check asks
when the runtime and the reference disagree, or when the reference cannot run. The second runtime runs
in a child worker process (`python -m dbench.worker`, in the worker's process group, so a timeout
kills both), never in the worker itself: a second runtime's threads and memory would stay in the
process that times the next graphs.

Which implementation: the other CPU runtime, OpenVINO for ONNX Runtime (any provider) and ONNX Runtime
for the rest. It is independent of the runtime checked: its own reading of the ONNX spec, its own
kernels (oneDNN and OpenVINO's plugins against MLAS) and graph rewrites. The same runtime with its
optimizations off shares every kernel and every reading of an op with the runtime it checks, exactly
where an old-opset semantic error would be shared, so it is never taken as a second opinion. ONNX
Runtime, when it is the second implementation, runs with graph optimizations off: each node by its own
kernel, the most literal reading of the graph."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass

import numpy as np

from dbench.gen.graph import GraphSpec
from dbench.outcome import Outcome, Phase, failure_outcome
from dbench.runtimes.base import RuntimeOptions

ORT_FAMILY = ("ort-cpu", "ort-cuda", "ort-trt", "ort-xnnpack", "ort-acl")
"""Runtimes built on ONNX Runtime: they share its reading of every op."""
PLAIN_ORT = "disable"
"""ONNX Runtime's graph optimization level as a second implementation."""


@dataclass(frozen=True)
class OutputsJob:
    """Run one graph once on a runtime and return its outputs: the serialized model (weights in, as the
    worker prepared it), its spec (the outputs to return), the feeds (every input, weights included)
    and the weights mode that splits them."""

    spec: GraphSpec
    model: bytes
    runtime: str
    options: RuntimeOptions
    feeds: dict[str, np.ndarray]
    weights: str = "const"


@dataclass(frozen=True)
class Second:
    """The second implementation for a runtime: its name and options, or why there is none."""

    runtime: str = ""
    options: RuntimeOptions | None = None
    why_none: str = ""


def second_implementation(runtime: str, threads: int | None) -> Second:
    """The independent implementation that checks `runtime` (module docstring), if installed here."""
    from dbench.runtimes.registry import runtime_class

    candidate = "openvino" if runtime in ORT_FAMILY else "ort-cpu"
    available, reason = runtime_class(candidate).availability()
    if not available:
        return Second(why_none=f"no second implementation here ({candidate}: {reason})")
    options = RuntimeOptions(threads=threads, graph_optimization=PLAIN_ORT if candidate == "ort-cpu" else "all")
    return Second(candidate, options)


def outputs_of(job: OutputsJob) -> dict[str, np.ndarray] | Outcome:
    """In the child: the runtime's outputs for the job's graph, or an Outcome saying why it has none."""
    import onnx

    from dbench.gen.weights import split_feeds
    from dbench.worker.instance import runtime_for

    session = None
    try:
        runtime = runtime_for(job.runtime, job.options)
        with runtime.errors():
            constants, per_call = split_feeds(job.spec, job.feeds, job.weights)
            session = runtime.prepare(onnx.load_model_from_string(job.model), job.spec, constants)
            session.bind(per_call)
            session.run()
            return {name: np.array(value, copy=True) for name, value in session.outputs().items()}
    except Exception as err:  # every error becomes the job's answer (dbench.outcome.failure_outcome)
        return failure_outcome(err)
    finally:
        if session is not None:
            session.close()


def outputs_elsewhere(job: OutputsJob) -> dict[str, np.ndarray] | str:
    """The job's outputs computed in a child worker process, or why there are none (the runtime's own
    message, or how the child died). The child dies with the worker (PR_SET_PDEATHSIG) and shares its
    process group, so the parent's timeout, which kills the worker's group, ends it too."""
    from multiprocessing.connection import Connection

    mine, theirs = socket.socketpair()
    process = subprocess.Popen(
        [sys.executable, "-m", "dbench.worker", str(theirs.fileno()), str(os.getpid()), "0"],
        pass_fds=[theirs.fileno()],
        stdin=subprocess.DEVNULL,
    )
    theirs.close()
    connection = Connection(mine.detach())
    try:
        connection.send(job)
        while isinstance(answer := connection.recv(), Phase):
            pass
    except (EOFError, OSError):
        answer = None
    finally:
        connection.close()  # the child's loop ends when its pipe closes
        try:
            code = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
    if answer is None:
        return f"{job.runtime} died while running the graph (exit code {code})"
    if isinstance(answer, Outcome):
        return f"{job.runtime} cannot run the graph ({answer.status}: {answer.message})"
    return answer
