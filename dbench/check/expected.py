"""What a graph's outputs are checked against: the reference its source names (dbench's numpy
reference of its family, or onnx.reference for a foreign model), on a seeded sample of rows when the
output is large."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dbench.gen.graph import GraphSpec

if TYPE_CHECKING:
    import numpy as np

    from dbench.gen.tolerance import Tolerance

VERIFY_ROWS = 256
"""Above this many output rows (GEMM and sparse), verification checks a seeded sample of rows."""


def verify_rows(spec: GraphSpec) -> np.ndarray | None:
    """A seeded sample of output rows to verify when the output is large, else None (all rows)."""
    import numpy as np

    from dbench.gen.plan import ROW_SAMPLED

    if (
        spec.family not in ROW_SAMPLED
        or spec.precision in ("int8", "int4")
        or not spec.outputs
        or not spec.outputs[0].shape
    ):
        return None  # whole outputs: another family, exact int8, int4 (whole), or a 0-d output (no rows to sample)
    rows = spec.outputs[0].shape[0]
    if rows <= VERIFY_ROWS:
        return None
    return np.sort(np.random.default_rng(spec.seed).choice(rows, VERIFY_ROWS, replace=False))


def expected_outputs(model, spec: GraphSpec, feeds: dict, rows, reference: str) -> tuple[dict | None, str, Tolerance]:
    """(reference outputs, what computed them, tolerance rule) by the reference the source names:
    dbench's numpy reference of the graph's family, or onnx.reference (None and why not, when it
    cannot run the model)."""
    from dbench.sources.contract import ONNX_REFERENCE

    if reference == ONNX_REFERENCE:
        from dbench.check.quantized import derive
        from dbench.sources.model_reference import reference_outputs
        from dbench.sources.model_reference import tolerance as model_tolerance

        outputs, by = reference_outputs(model, spec, feeds)
        if outputs is None:
            return outputs, by, model_tolerance(spec)
        return outputs, by, derive(model, spec, feeds, outputs, model_tolerance(spec))
    from dbench.gen.plan import reference, tolerance

    return reference(spec, feeds, rows), "numpy", tolerance(spec)
