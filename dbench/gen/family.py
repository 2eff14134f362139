"""What a kernel family's generator module provides (the `Family` protocol), and the one way to
make a GraphSpec from a kernel.

Accounting lives in two places only: a kernel's DeepBench FLOP count is `Kernel.flops()` (the
catalog, DeepBench's formulas); what a graph really computes is tallied by the family's `build`
into `GraphSpec.flops_executed`. Bytes are `GraphSpec.min_bytes` (every input and output once).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from dbench.catalog.kernels import Kernel
from dbench.gen.feeds import default_seed
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, graph_id
from dbench.gen.options import GenOptions
from dbench.gen.precision import PRECISIONS
from dbench.gen.tolerance import Tolerance

PlannedGraph = tuple[str, str, dict[str, Any]]
"""(pass, form, build attributes): one graph a kernel yields, before it is built."""


@runtime_checkable
class Family(Protocol):
    """A generator module for one kernel family (gemm, conv, rnn, sparse), in every precision it builds.

    `SUPPORTED_PRECISIONS`: the precisions it has graphs for (others are recorded as unsupported);
    `ROW_SAMPLED`: whether `reference` can compute a subset of output rows (`rows`) of a float graph."""

    SUPPORTED_PRECISIONS: tuple[str, ...]
    ROW_SAMPLED: bool

    def plan(self, kernel: Kernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
        """The graphs the kernel yields under `options`; the backward passes too when `train`."""

    def build(self, kernel: Kernel, precision: str, pass_name: str, form: str, **attrs: Any) -> Graph:
        """One planned graph: ONNX model and spec; UnsupportedError where it cannot exist."""

    def reference(
        self, spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """The float64 (or exact integer) outputs, from the spec and feeds alone."""

    def tolerance(self, spec: GraphSpec) -> Tolerance:
        """The rule the runtime's outputs are checked by against `reference`."""


def make_spec(
    kernel: Kernel,
    precision: str,
    pass_name: str,
    form: str,
    *,
    inputs: tuple[TensorSpec, ...] = (),
    outputs: tuple[TensorSpec, ...] = (),
    flops_executed: int = 0,
    attrs: dict[str, Any] | None = None,
    id_form: str | None = None,
) -> GraphSpec:
    """The spec of one of the kernel's graphs: its id and feed seed from kernel id, pass, form and
    precision (`id_form` where the id spells the form differently, e.g. int8's padded `qdq-pad4`),
    the kernel's fields and DeepBench FLOPs. Without inputs and outputs it describes a graph that
    does not exist in this precision (a run records it as unsupported)."""
    gid = graph_id(kernel.id, pass_name, id_form or form, precision)
    return GraphSpec(
        id=gid,
        kernel_id=kernel.id,
        family=kernel.family,
        op=kernel.op,
        params=kernel.params(),
        suites=kernel.suites,
        apps=kernel.apps,
        pass_name=pass_name,
        form=form,
        precision=precision,
        flops=kernel.flops(),
        flops_executed=flops_executed,
        inputs=inputs,
        outputs=outputs,
        seed=default_seed(gid),
        attrs=attrs or {},
    )


def float_tolerance(spec: GraphSpec) -> Tolerance:
    """The relative bound of the graph's floating-point precision."""
    return Tolerance("rel", PRECISIONS[spec.precision].tolerance)


def check_whole_outputs(family: str, rows: np.ndarray | None) -> None:
    """Refuse a row subset where the family's reference computes whole outputs only."""
    if rows is not None:
        raise ValueError(f"{family} references compute whole outputs; `rows` applies to row-sampled families only")
