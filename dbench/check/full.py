"""The full check: the whole reference (dbench's float64 numpy, or onnx.reference for a foreign
model), compared elementwise under the graph's tolerance, from the reference cache when it holds it;
`rows` compares a seeded sample of a huge GEMM output's rows instead, as before the cheaper checks."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from dbench.cache.keys import entry_key
from dbench.cache.store import ReferenceCache
from dbench.check.verdict import Verdict, compare
from dbench.gen.graph import GraphSpec
from dbench.gen.tolerance import Tolerance

FullReference = Callable[[np.ndarray | None], tuple[dict[str, np.ndarray] | None, str, Tolerance]]
"""rows -> (expected outputs, what computed them, tolerance rule); None outputs when it cannot run."""


@dataclass(frozen=True)
class Unverified:
    """The graph has no reference that can run (a foreign model onnx.reference cannot evaluate)."""

    reason: str


def malformed(spec: GraphSpec, outputs: dict[str, np.ndarray], rule: Tolerance) -> Verdict | None:
    """A failing verdict when an output is missing, has the wrong shape or non-finite values."""
    for tensor in spec.outputs:
        out = outputs.get(tensor.name)
        problem = (
            f"output {tensor.name} missing"
            if out is None
            else f"output {tensor.name} has shape {tuple(out.shape)}, expected {tensor.shape}"
            if tuple(out.shape) != tensor.shape
            else f"output {tensor.name} has non-finite values"
            if not np.isfinite(out).all()
            else ""
        )
        if problem:
            return Verdict(False, math.inf, rule.metric, rule.bound, problem)
    return None


def full_check(
    spec: GraphSpec,
    model: bytes,
    outputs: dict[str, np.ndarray],
    full_reference: FullReference,
    cache: ReferenceCache,
    rows: np.ndarray | None = None,
    via: str = "",
) -> Verdict | Unverified:
    """The reference outputs (only `rows` of them when given) from the cache or computed and cached,
    compared elementwise; `via` names the check that led here (`projection`)."""
    key = entry_key("full", model, spec, rows=None if rows is None else rows.tolist())
    stored = cache.get(key)
    if stored is not None:
        by, rule = str(stored.pop(".by")), Tolerance.from_json(str(stored.pop(".rule")))
        expected = stored
    else:
        expected, by, rule = full_reference(rows)
        if expected is None:
            return Unverified(by)
        cache.put(key, {**expected, ".by": np.array(by), ".rule": np.array(rule.to_json())})
    if rows is not None:
        outputs = {name: np.asarray(value)[rows] for name, value in outputs.items()}
    verdict = compare(outputs, expected, rule)
    kind = "full" if rows is None else "rows"
    total = spec.outputs[0].shape[0] if rows is not None else 0
    return replace(
        verdict,
        check=f"{via}+{kind}" if via else kind,
        by=by,
        false_accept=0.0 if rows is None else 1.0 - len(rows) / total,
        rows_checked=None if rows is None else len(rows),
    )
