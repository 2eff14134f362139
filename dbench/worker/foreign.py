"""How a foreign graph's outputs are verified (`--model`, foreign `--graphs`, predict's units; rules in
docs/method.md, "Foreign graphs: the reference checked"). The reference is onnx.reference (with
dbench's corrections), and it is itself checked: a runtime is never blamed on its word alone.

1. A structure-only model (constant-filled weights) is verified on a copy with seeded random weights
   and its output Softmax's logits exposed, run on the same runtime and options in a session of its
   own (dbench.sources.verify_weights); the timed session is not touched.
2. The runtime's outputs are compared with the reference's (cached like every full reference).
3. Where they disagree, a second, independent implementation (dbench.worker.second) runs the same graph
   on the same inputs: agreeing with the runtime against the reference, the row is `disputed`;
   agreeing with the reference, or with neither, `mismatch`; without one, `mismatch` saying so. The
   first node whose outputs differ from the reference's is named where the graph's values fit in memory.
4. Where the reference cannot run (over its budget, an op it lacks), the second implementation is the
   check (`cross-runtime`): agreement verifies the row, disagreement is a `mismatch` that names both.
Only rows that disagree, or that the reference cannot check, pay for steps 3 and 4."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from dbench.check.verdict import Verdict, compare, failure
from dbench.gen.graph import GraphSpec
from dbench.gen.tolerance import Tolerance
from dbench.outcome import Status
from dbench.sources.verify_weights import ForVerification, for_verification

CROSS_RUNTIME = "cross-runtime"
"""The check of a row verified against a second runtime's outputs (the reference could not run)."""


@dataclass
class ForeignVerdict:
    """What verification made of a foreign graph: the row's status, its message, and its verification
    fields (the deciding check's verdict, the second implementation's word, the first node that differs)."""

    status: Status
    message: str
    verification: dict[str, Any] = field(default_factory=dict)
    rule: Tolerance | None = None
    """The rule the outputs were compared by (None when nothing checked them)."""


def _run_here(
    runtime, model: onnx.ModelProto, spec: GraphSpec, feeds: dict[str, np.ndarray], weights: str
) -> dict[str, np.ndarray]:
    """The runtime's outputs for another graph than the timed one, in a session of its own."""
    from dbench.gen.weights import split_feeds

    constants, per_call = split_feeds(spec, feeds, weights)
    with runtime.errors():  # the runtime's own exceptions as dbench's, here where they are caught
        session = runtime.prepare(model, spec, constants)
        try:
            session.bind(per_call)
            session.run()
            return {name: np.array(value, copy=True) for name, value in session.outputs().items()}
        finally:
            session.close()


def _reference(
    spec: GraphSpec, key_bytes: bytes, model: onnx.ModelProto, feeds: dict[str, np.ndarray], cache, base: Tolerance
) -> tuple[dict[str, np.ndarray] | None, str, Tolerance]:
    """The reference's outputs and the rule they are compared by (`base`, or for a graph that rounds
    the rule dbench.check.quantized derives), from the cache or computed and cached (the full check's
    entry), or (None, why the reference cannot run, `base`)."""
    from dbench.cache.keys import entry_key
    from dbench.check.quantized import derive
    from dbench.sources.model_reference import reference_outputs

    key = entry_key("full", key_bytes, spec, rows=None)
    stored = cache.get(key)
    if stored is not None:
        by = str(stored.pop(".by"))
        rule = Tolerance.from_json(str(stored.pop(".rule")))
        return stored, by, rule
    expected, by = reference_outputs(model, spec, feeds)
    if expected is None:
        return None, by, base
    rule = derive(model, spec, feeds, expected, base)
    cache.put(key, {**expected, ".by": np.array(by), ".rule": np.array(rule.to_json())})
    return expected, by, rule


def _over(outputs: dict[str, np.ndarray], expected: dict[str, np.ndarray], rule: Tolerance) -> list[str]:
    """The outputs outside the tolerance, in order."""
    return [
        name
        for name in expected
        if not compare({name: outputs.get(name)} if name in outputs else {}, {name: expected[name]}, rule).ok
    ]


def _second_outputs(job, checked: ForVerification, feeds: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict | None]:
    """(the second implementation's record, its outputs or None): which runtime, version and options,
    or why there is none."""
    from dataclasses import asdict

    from dbench.runtimes.registry import runtime_class
    from dbench.worker.second import OutputsJob, outputs_elsewhere, second_implementation

    second = second_implementation(job.runtime, job.options.threads)
    if not second.runtime:
        return {"runtime": None, "why": second.why_none}, None
    record = {
        "runtime": second.runtime,
        "version": runtime_class(second.runtime).version(),
        "options": {k: v for k, v in asdict(second.options).items() if v not in (None, {}, False)},
    }
    answer = outputs_elsewhere(
        OutputsJob(checked.spec, checked.model.SerializeToString(), second.runtime, second.options, feeds, job.weights)
    )
    if isinstance(answer, str):
        return {**record, "why": answer}, None
    return record, answer


def _localise(
    job,
    runtime,
    checked: ForVerification,
    feeds: dict[str, np.ndarray],
    rule: Tolerance,
    targets: list[str],
    second: dict[str, Any],
) -> dict[str, Any]:
    """The first node whose outputs differ from the reference's: computed by this runtime, or where it
    cannot expose every value, by the second implementation when that disagrees with the reference too.
    In a graph that rounds, every value is judged by its own derived rule (dbench.check.quantized), so
    a near-tie rounded the other way is no difference."""
    from dbench.check.localise import exposed, first_disagreement
    from dbench.check.quantized import derive
    from dbench.errors import DbenchError
    from dbench.sources.model_reference import reference_values
    from dbench.worker.second import OutputsJob, outputs_elsewhere, second_implementation

    made = exposed(checked.model, checked.spec)
    if isinstance(made, str):
        return {"why": f"not localised: {made}"}
    model, spec = made
    values, why = reference_values(checked.model, checked.spec, feeds)
    if values is None:
        return {"why": f"not localised: {why}"}
    by = job.runtime
    try:
        computed = _run_here(runtime, model, spec, feeds, job.weights)
    except DbenchError as err:
        if second.get("agrees_with_reference") is not False:
            return {"why": f"not localised: this runtime cannot run the graph with every value an output ({err})"}
        other = second_implementation(job.runtime, job.options.threads)
        computed = outputs_elsewhere(
            OutputsJob(spec, model.SerializeToString(), other.runtime, other.options, feeds, job.weights)
        )
        if isinstance(computed, str):
            return {
                "why": f"not localised: neither runtime can run the graph with every value an output ({err}; "
                f"{computed})"
            }
        by = other.runtime
    base = Tolerance(rule.metric, rule.bound)
    found = first_disagreement(
        checked.model, values, computed, derive(checked.model, checked.spec, feeds, values, base, True), targets
    )
    if found is None:
        return {
            "why": "no single node: with every value an output the runtime agrees with the reference, "
            "so the difference comes from how it runs the graph whole (a fusion or rewrite)"
        }
    return {**found, "by": by}


def _error_text(verdict: Verdict) -> str:
    return f"error {verdict.error:.3g}"


def _where(first: dict[str, Any]) -> str:
    if "op" not in first:
        return first["why"]
    return (
        f"first node that differs: {first['op']} {first['node']!r} ({first['domain']} opset {first['opset']}), "
        f"output {first['output']!r} error {first['error']:.3g}"
    )


def verify_foreign(
    job,
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    outputs: dict[str, np.ndarray],
    runtime,
    phase: Callable[[str], None],
) -> ForeignVerdict:
    """Verify the timed session's outputs of a foreign graph (module docstring); `model` is the graph
    as the worker prepared it, `feeds` every input it was given."""
    from dbench.cache.store import open_cache
    from dbench.check.quantized import chain_rule
    from dbench.errors import DbenchError
    from dbench.sources.model_reference import tolerance, unrepeatable

    spec = job.spec
    if why := unrepeatable(model):  # a second runtime draws other numbers: nothing can check it
        return ForeignVerdict(Status.OK, f"unverified: {why}", {"ok": None, "by": None})
    rule = tolerance(spec)
    checked = for_verification(model, spec)
    notes: dict[str, Any] = {}
    said = ""
    key_bytes = job.model
    if checked.replaced:
        try:
            outputs = _run_here(runtime, checked.model, checked.spec, feeds, job.weights)
            key_bytes = checked.model.SerializeToString()
            notes = {"random_weights": len(checked.replaced), "exposed": list(checked.exposed)}
            logits = f" and its Softmax's input {', '.join(checked.exposed)} as an output" if checked.exposed else ""
            said = (
                f"checked on the graph with seeded random weights in place of its {len(checked.replaced)} "
                "constant-filled "
                f"ones{logits} (the timed graph keeps its own)"
            )
        except DbenchError as err:  # the copy will not run: its own outputs are checked, weakly, and the row says why
            checked = ForVerification(model, spec)
            said = f"the graph with random weights in place of its constant-filled ones cannot run ({err})"
    expected, by, rule = _reference(checked.spec, key_bytes, checked.model, feeds, open_cache(), rule)
    if expected is not None:
        verdict = compare(outputs, expected, rule)
        record = {**verdict.to_dict(), "check": "full", "by": by, **notes}
        if verdict.ok:
            weak = f"weak verification: the expected outputs are degenerate ({verdict.weak})" if verdict.weak else ""
            return ForeignVerdict(Status.OK, "; ".join(m for m in (weak, said) if m), record, rule)
        return _disputed_or_mismatch(
            job, runtime, checked, feeds, outputs, expected, verdict, record, rule, said, phase
        )
    rule = chain_rule(checked.model, rule)
    phase("cross-checking")
    second, theirs = _second_outputs(job, checked, feeds)
    if theirs is None:
        return ForeignVerdict(
            Status.OK,
            "; ".join(m for m in (f"unverified: {by}; {second['why']}", said) if m),
            {"ok": None, "by": None, "second": second, "reference": by, **notes},
        )
    verdict = compare(outputs, theirs, rule)
    record = {
        **verdict.to_dict(),
        "check": CROSS_RUNTIME,
        "by": second["runtime"],
        "second": {**second, "agrees": verdict.ok},
        "reference": by,
        **notes,
    }
    if verdict.ok:
        weak = f"; weak verification: the expected outputs are degenerate ({verdict.weak})" if verdict.weak else ""
        return ForeignVerdict(
            Status.OK,
            f"verified against {second['runtime']}, not onnx.reference ({by}){weak}" + (f"; {said}" if said else ""),
            record,
            rule,
        )
    return ForeignVerdict(
        Status.MISMATCH,
        f"{failure(verdict)} against {second['runtime']}, and onnx.reference cannot tell which is right ({by})",
        record,
    )


def _disputed_or_mismatch(
    job,
    runtime,
    checked: ForVerification,
    feeds,
    outputs,
    expected,
    verdict: Verdict,
    record: dict[str, Any],
    rule: Tolerance,
    said: str,
    phase,
) -> ForeignVerdict:
    """The runtime disagrees with the reference: the second implementation's word decides (module docstring)."""
    phase("cross-checking")
    second, theirs = _second_outputs(job, checked, feeds)
    record["outputs"] = _over(outputs, expected, rule)
    against = failure(verdict)
    if theirs is None:
        status, text = Status.MISMATCH, f"{against}; no second implementation checked: {second['why']}"
    else:
        with_runtime = compare(outputs, theirs, rule)
        with_reference = compare(theirs, expected, rule)
        second.update(
            agrees=with_runtime.ok,
            error=with_runtime.error,
            agrees_with_reference=with_reference.ok,
            error_to_reference=with_reference.error,
        )
        name = second["runtime"]
        if with_runtime.ok and not with_reference.ok:
            status = Status.DISPUTED
            text = (
                f"disputed: onnx.reference differs ({against}); {name} agrees with this runtime "
                f"({_error_text(with_runtime)}), so the reference is taken to be wrong"
            )
        elif with_reference.ok:
            status, text = (
                Status.MISMATCH,
                f"{against}; {name} agrees with onnx.reference ({_error_text(with_reference)})",
            )
        else:
            status, text = (
                Status.MISMATCH,
                (
                    f"{against}; {name} agrees with neither ({_error_text(with_runtime)} against this "
                    f"runtime, {_error_text(with_reference)} against onnx.reference)"
                ),
            )
    record["second"] = second
    phase("localising")
    try:
        first = _localise(job, runtime, checked, feeds, rule, record["outputs"], second)
    except Exception as err:  # shape inference or the evaluator refusing the exposed graph: said, never fatal
        first = {"why": f"not localised ({type(err).__name__}: {str(err).strip()[:200]})"}
    record["first_difference"] = first
    return ForeignVerdict(status, "; ".join(m for m in (text, _where(first), said) if m), record)
