"""A quantized model's accuracy cost against its fp32 twin, measured in a worker: both models prepared by
one runtime, fed the same seeded inputs (input i drawn from the fp32 model's spec with seed + i, the
way every job draws its inputs), and every compared value's error tallied (dbench.stats.agreement). The
compared values are the models' outputs and the values the parent exposed as extra outputs in both
(a unit twin's boundary: dbench.orchestrator.quantized). Arrays never leave the worker: only the
tallies' figures go back."""

from __future__ import annotations

from dataclasses import dataclass

from dbench.gen.graph import GraphSpec
from dbench.outcome import Outcome, failure_outcome
from dbench.runtimes.base import RuntimeOptions
from dbench.stats.agreement import ErrorTally


@dataclass(frozen=True)
class AccuracyJob:
    """Run both models on `inputs` seeded inputs and compare each of `values`: (the fp32 model's output,
    the quantized model's output that stands for it); top-1 agreement only for `classifiers`."""

    fp32: GraphSpec
    fp32_model: bytes
    quantized: GraphSpec
    quantized_model: bytes
    runtime: str
    options: RuntimeOptions
    inputs: int
    values: tuple[tuple[str, str], ...]
    classifiers: tuple[str, ...] = ()


@dataclass(frozen=True)
class ValueCost:
    """One compared value's error over the inputs (the agreement only for a [batch, classes] output)."""

    name: str
    relative_error: float
    worst: float
    agreement: float | None = None
    agreement_low: float | None = None
    agreement_high: float | None = None
    rows: int = 0


@dataclass(frozen=True)
class AccuracyCost:
    """The errors of every compared value, by its fp32 name, over `inputs` inputs drawn from `seed` on."""

    runtime: str
    inputs: int
    seed: int
    values: dict[str, ValueCost]


def _figures(name: str, tally: ErrorTally) -> ValueCost:
    interval = tally.agreement_interval()
    return ValueCost(
        name,
        tally.relative_error,
        tally.worst,
        tally.agreement,
        interval[0] if interval else None,
        interval[1] if interval else None,
        tally.rows,
    )


def measure_accuracy(job: AccuracyJob) -> AccuracyCost | Outcome:
    """In the worker: the tallies' figures, or an Outcome saying why the runtime could not run a model."""
    import onnx

    from dbench.gen.feeds import make_feeds
    from dbench.gen.weights import split_feeds
    from dbench.sources.contract import stored_weights
    from dbench.worker.instance import runtime_for

    sessions = []
    try:
        runtime = runtime_for(job.runtime, job.options)
        with runtime.errors():
            for spec, data in ((job.fp32, job.fp32_model), (job.quantized, job.quantized_model)):
                model = onnx.load_model_from_string(data)
                constants, _ = split_feeds(spec, stored_weights(model, "const"), "const")
                sessions.append((spec, runtime.prepare(model, spec, constants)))
            tallies = {pair: ErrorTally(classify=pair[0] in job.classifiers) for pair in job.values}
            for i in range(job.inputs):
                feeds = make_feeds(job.fp32, job.fp32.seed + i)
                outputs = []
                for spec, session in sessions:
                    session.bind(split_feeds(spec, feeds, "const")[1])
                    session.run()
                    outputs.append(session.outputs())
                for (fp32, quantized), tally in tallies.items():
                    tally.add(outputs[0][fp32], outputs[1][quantized])
        return AccuracyCost(
            job.runtime, job.inputs, job.fp32.seed, {pair[0]: _figures(pair[0], t) for pair, t in tallies.items()}
        )
    except Exception as err:  # every error becomes the job's answer (dbench.outcome.failure_outcome)
        return failure_outcome(err)
    finally:
        for _, session in sessions:
            session.close()
