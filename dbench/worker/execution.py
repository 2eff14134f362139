"""The worker's other job: ask the runtime which layers it executes for a graph (prepared exactly as a
timed job prepares it: the same options, weights as constants), without timing anything. `dbench
predict` sends it before its run, so that no runtime is ever imported in the parent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dbench.executed import ExecutedGraph
from dbench.gen.graph import GraphSpec
from dbench.outcome import Outcome, Status
from dbench.runtimes.base import RuntimeOptions
from dbench.sources.contract import Contract


@dataclass(frozen=True)
class ExecutionJob:
    """One graph to prepare on a runtime and describe: its spec, serialized model and contract, as in a Job."""

    spec: GraphSpec
    model: bytes
    runtime: str
    options: RuntimeOptions
    weights: str = "const"
    contract: Contract = Contract()


def describe_execution(job: ExecutionJob, phase: Callable[[str], None] = lambda name: None) -> ExecutedGraph | Outcome:
    """The runtime's executed graph for the job's graph, or an Outcome saying why there is none (the
    runtime refused the graph, or the graph does not match its spec)."""
    import onnx

    from dbench.errors import DbenchError, OutOfMemory, UnsupportedError
    from dbench.gen.feeds import make_feeds
    from dbench.gen.weights import split_feeds
    from dbench.sources.contract import check_model, stored_weights
    from dbench.worker.instance import runtime_for

    try:
        model = onnx.load_model_from_string(job.model)
    except Exception as err:  # protobuf's DecodeError and friends
        return Outcome(Status.FAILED, f"cannot load the graph: {type(err).__name__}")
    mismatch = check_model(model, job.spec)
    if mismatch:
        return Outcome(Status.FAILED, f"{mismatch} in {job.contract.described_by}; {job.contract.remedy}")
    session = None
    try:
        runtime = runtime_for(job.runtime, job.options)
        with runtime.errors():
            phase("making inputs")
            feeds = {**make_feeds(job.spec), **stored_weights(model, job.weights)}
            constants, _ = split_feeds(job.spec, feeds, job.weights)
            phase("preparing")
            session = runtime.prepare(model, job.spec, constants)
            return session.executed_graph()
    except UnsupportedError as err:
        return Outcome(Status.UNSUPPORTED, str(err))
    except (OutOfMemory, MemoryError) as err:
        return Outcome(Status.OOM, str(err) or type(err).__name__)
    except DbenchError as err:
        return Outcome(Status.FAILED, str(err))
    finally:
        if session is not None:
            session.close()
