"""Which check verifies a graph, and running it with the reference cache:

- `full`: the whole reference, elementwise (dbench.check.full); `rows`: a seeded sample of a huge
  GEMM output's rows, where a projection would cost more;
- `projection` / `exact-projection`: a linear output projected on random vectors beside the same
  projection of the reference, computed without it (dbench.check.projection); anything flagged is
  settled elementwise (`projection+full`, `projection+rows`);
- `steps` / `steps-anchored`: a recurrent forward graph, every step from the runtime's own previous
  state (dbench.check.steps).

Every part that does not depend on the runtime's output is cached (dbench.cache), so a second runtime
pays only for looking at its own output. False-accept probabilities: docs/method.md."""

from __future__ import annotations

import numpy as np

from dbench.cache.keys import entry_key
from dbench.cache.store import ReferenceCache
from dbench.check.expected import verify_rows
from dbench.check.full import FullReference, Unverified, full_check, malformed
from dbench.check.projection import exact_usable, linear_output, projection_check, projection_pays
from dbench.check.steps import steps_check
from dbench.check.verdict import Verdict
from dbench.gen.graph import GraphSpec
from dbench.sources.contract import NUMPY


def choose(
    spec: GraphSpec, model: bytes, feeds: dict[str, np.ndarray], cache: ReferenceCache, reference: str = NUMPY
) -> str:
    """The check for a graph: `steps` for a recurrent forward graph; the cached full reference when
    there is one (exact, already paid for); a projection where one costs less than the full check it
    replaces; else `full` (`rows` for a huge GEMM output)."""
    if reference != NUMPY:  # a foreign model: onnx.reference's outputs, whole
        return "full"
    if spec.family == "rnn" and spec.pass_name == "fwd":
        return "steps"
    rows = verify_rows(spec)
    full = "full" if rows is None else "rows"
    if cache.contains(entry_key("full", model, spec, rows=None if rows is None else rows.tolist())):
        return full
    linear = linear_output(spec, feeds)
    if (
        linear is None
        or (spec.precision == "int8" and not exact_usable(linear, spec))
        or not projection_pays(linear, spec)
    ):
        return full
    return "exact-projection" if spec.precision == "int8" else "projection"


def verify(
    spec: GraphSpec,
    model: bytes,
    feeds: dict[str, np.ndarray],
    outputs: dict[str, np.ndarray],
    reference: str,
    full_reference: FullReference,
    cache: ReferenceCache,
) -> Verdict | Unverified:
    """Verify a runtime's outputs with the check `choose` picks (module docstring)."""
    from dbench.gen.plan import tolerance

    kind = choose(spec, model, feeds, cache, reference)
    rule = tolerance(spec) if reference == NUMPY else None
    if rule is not None and (bad := malformed(spec, outputs, rule)) is not None:
        return bad
    if kind in ("full", "rows"):
        return full_check(spec, model, outputs, full_reference, cache, verify_rows(spec) if kind == "rows" else None)
    if kind == "steps":
        return steps_check(spec, model, feeds, outputs, rule, cache)
    return projection_check(linear_output(spec, feeds), spec, model, outputs, rule, full_reference, cache)
