"""The token embedding: Y[batch, seq, hidden] = Gather(TABLE[vocab, hidden], IDS[batch, seq], axis 0).

The table is a weight (a constant the runtime holds, 1 GB for Llama-3.2-1B in fp32); the ids are drawn
uniformly over the vocabulary. The graph's bytes are the rows it touches (each token's row read and
written, its id read), not the table: GraphSpec.min_bytes reads them from the spec's TOUCHED_BYTES attribute.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from dbench.catalog.kernels import EmbeddingKernel
from dbench.errors import UsageError
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import TOUCHED_BYTES, Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import GenOptions
from dbench.gen.precision import DTYPES, PRECISIONS
from dbench.gen.subgraph import float_dtype

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = False
FORMS = ("gather",)


def build(kernel: EmbeddingKernel, precision: str, pass_name: str = "fwd", form: str = "gather") -> Graph:
    """The embedding Gather in a floating-point precision."""
    if form not in FORMS:
        raise UsageError(f"unknown embedding form {form!r}; valid: {', '.join(FORMS)}")
    dt = float_dtype(precision)
    inputs = (
        TensorSpec("TABLE", (kernel.vocab, kernel.hidden), dt, "weight"),
        TensorSpec("IDS", (kernel.batch, kernel.seq), "int64", "activation", low=0, high=kernel.vocab - 1),
    )
    outputs = (TensorSpec("Y", (kernel.batch, kernel.seq, kernel.hidden), dt, "output"),)
    node = helper.make_node("Gather", ["TABLE", "IDS"], ["Y"], axis=0)
    spec = make_spec(
        kernel,
        precision,
        pass_name,
        form,
        inputs=inputs,
        outputs=outputs,
        attrs={TOUCHED_BYTES: kernel.min_bytes(DTYPES[dt].itemsize)},
    )
    return Graph(spec, make_model(spec.id, [node], inputs, outputs, doc=f"token embedding {kernel.id}"))


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The table's rows of the ids, in float64 (exact: a gather copies)."""
    check_whole_outputs("embedding", rows)
    return {"Y": np.asarray(feeds["TABLE"][feeds["IDS"]], dtype=np.float64)}


tolerance = float_tolerance


def plan(kernel: EmbeddingKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    return [("fwd", FORMS[0], {})]
