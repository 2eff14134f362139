"""Which graphs a selection of kernels yields (a cheap plan), and building each one on demand.

Family modules are named here as strings and imported only when used; each provides
`plan(kernel, options, train) -> [(pass, form, attrs)]`,
`build(kernel, precision, pass_name, form, **attrs) -> Graph` and `reference(spec, feeds) -> outputs`,
and optionally `tolerance(spec) -> Tolerance` where the per-precision relative bound does not apply.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Iterable

from dbench.catalog.kernels import Kernel
from dbench.errors import UnsupportedError, UsageError
from dbench.gen.graph import Graph, GraphSpec
from dbench.gen.precision import ALL_PRECISIONS, PRECISIONS

FAMILY_MODULES = {
    "gemm": "dbench.gen.gemm",
    "conv": "dbench.gen.conv",
    "rnn": "dbench.gen.rnn",
    "sparse": "dbench.gen.sparse",
}
INT8_MODULE = "dbench.gen.int8"
INT8_FAMILIES = ("gemm", "conv")
ALL_PASSES = ("fwd", "bwd_data", "bwd_filter", "bwd_weights")
GEMM_FORMS = ("gemm", "matmul")
RNN_FORMS = ("op", "recurrence")
INT8_FORMS = ("qlinear", "qdq", "integer")
GRU_ACTIVATIONS = ("tanh", "relu")


@dataclass(frozen=True)
class GenOptions:
    """Generation choices that change the graph (and are recorded in its spec)."""

    precision: str = "fp32"
    passes: tuple[str, ...] = ALL_PASSES
    gemm_form: str = "gemm"
    rnn_form: str = "op"
    gru_activation: str = "tanh"
    int8_form: str = "qdq"
    int8_pad: bool = True

    def __post_init__(self) -> None:
        if self.precision not in ALL_PRECISIONS:
            raise UsageError(f"unknown precision {self.precision!r}; valid precisions: {', '.join(ALL_PRECISIONS)}")
        for value, valid, what in [
            (self.gemm_form, GEMM_FORMS, "gemm form"),
            (self.rnn_form, RNN_FORMS, "rnn form"),
            (self.int8_form, INT8_FORMS, "int8 form"),
            (self.gru_activation, GRU_ACTIVATIONS, "GRU activation"),
        ]:
            if value not in valid:
                raise UsageError(f"unknown {what} {value!r}; valid: {', '.join(valid)}")
        for p in self.passes:
            if p not in ALL_PASSES:
                raise UsageError(f"unknown pass {p!r}; valid passes: {', '.join(ALL_PASSES)}")


    @classmethod
    def from_fields(cls, fields: dict[str, Any], int8_form: str) -> "GenOptions":
        """From JSON-ready fields (the CLI's, or a run header's): empty `passes` means all passes,
        an empty `int8_form` means `int8_form` (the runtime's preferred form)."""
        return cls(**{**fields, "passes": tuple(fields["passes"]) or ALL_PASSES, "int8_form": fields["int8_form"] or int8_form})


@dataclass(frozen=True)
class Tolerance:
    """How outputs are checked against the reference.

    metric `rel`: max|out - ref| / max|ref| <= bound (floating point; robust to near-zero elements).
    metric `abs`: max|out - ref| <= bound (integer outputs: 0 = exact; one quantisation step for Q/DQ)."""

    metric: str
    bound: float


@dataclass(frozen=True)
class GraphRequest:
    """One graph to build: kernel, precision, pass and form (plus form attributes)."""

    kernel: Kernel
    precision: str
    pass_name: str
    form: str
    attrs: dict[str, Any] = field(default_factory=dict)


def family_module(family: str, precision: str = "fp32") -> ModuleType:
    """The generator module for a family in a precision (imported on first use): int8 GEMM and
    convolution have their own module; other families have no int8 form."""
    if precision == "int8":
        if family not in INT8_FAMILIES:
            raise UnsupportedError(f"{family} kernels have no int8 form (int8 covers {', '.join(INT8_FAMILIES)})")
        return importlib.import_module(INT8_MODULE)
    return importlib.import_module(FAMILY_MODULES[family])


def plan(kernels: Iterable[Kernel], suite_tags: Iterable[str], options: GenOptions) -> list[GraphRequest]:
    """Every graph the kernels yield: the forward pass, and the backward passes for kernels selected
    through the train suite. Nothing is built yet. A kernel with no graph in the precision gets one
    request whose build raises UnsupportedError, so a run records it as `unsupported`."""
    tags = set(suite_tags)
    requests = []
    for kernel in kernels:
        train = "train" in tags and "train" in kernel.suites
        try:
            module = family_module(kernel.family, options.precision)
        except UnsupportedError:
            requests.append(GraphRequest(kernel, options.precision, "fwd", "none"))
            continue
        for pass_name, form, attrs in module.plan(kernel, options, train):
            if pass_name in options.passes:
                requests.append(GraphRequest(kernel, options.precision, pass_name, form, attrs))
    return requests


def build(request: GraphRequest) -> Graph:
    """Build one planned graph."""
    module = family_module(request.kernel.family, request.precision)
    return module.build(request.kernel, request.precision, request.pass_name, request.form, **request.attrs)


ROW_SAMPLED = ("gemm", "sparse")
"""Families whose float reference can compute a subset of output rows (`rows`), for huge outputs."""


def reference(spec: GraphSpec, feeds: dict, rows=None) -> dict:
    """The float64 (or exact integer) numpy reference outputs of a graph, from its spec alone;
    `rows` (families in ROW_SAMPLED, float precisions) limits it to those rows of the output."""
    module = family_module(spec.family, spec.precision)
    if rows is None:
        return module.reference(spec, feeds)
    return module.reference(spec, feeds, rows)


def tolerance(spec: GraphSpec) -> Tolerance:
    """The verification rule for a graph: the family module's own, else the precision's relative bound."""
    module = family_module(spec.family, spec.precision)
    if hasattr(module, "tolerance"):
        return module.tolerance(spec)
    return Tolerance("rel", PRECISIONS[spec.precision].tolerance)
