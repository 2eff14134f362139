"""Which graphs a selection of kernels yields (a cheap plan), and building, referencing and
checking each one through its family's module (see family.Family)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dbench.catalog.batch import with_batches
from dbench.catalog.kernels import Kernel
from dbench.errors import UnsupportedError
from dbench.gen import attention, conv, embedding, gelu, gemm, norm, rnn, rotary, sparse, swiglu
from dbench.gen.family import Family
from dbench.gen.graph import Graph, GraphSpec
from dbench.gen.options import GenOptions
from dbench.gen.tolerance import Tolerance

FAMILIES: dict[str, Family] = {
    "gemm": gemm,
    "conv": conv,
    "rnn": rnn,
    "sparse": sparse,
    "attention": attention,
    "norm": norm,
    "gelu": gelu,
    "swiglu": swiglu,
    "rotary": rotary,
    "embedding": embedding,
}

ROW_SAMPLED = tuple(name for name, family in FAMILIES.items() if family.ROW_SAMPLED)
"""Families whose float reference can compute a subset of output rows (`rows`), for huge outputs."""


@dataclass(frozen=True)
class GraphRequest:
    """One graph to build: kernel, precision, pass and form (plus form attributes)."""

    kernel: Kernel
    precision: str
    pass_name: str
    form: str
    attrs: dict[str, Any] = field(default_factory=dict)


def _builder(name: str) -> Family:
    """The family's module, or UnsupportedError naming a kernel family this build has no graphs for (a
    catalog row of a family whose generator is not part of this version, e.g. attention)."""
    if name not in FAMILIES:
        raise UnsupportedError(
            f"no graph builder for {name} kernels in this version of dbench (builders: {', '.join(FAMILIES)}); "
            f"select the other families with --ops"
        )
    return FAMILIES[name]


def _family(name: str, precision: str) -> Family:
    """The family's module, or UnsupportedError when it builds no graph in `precision`."""
    family = _builder(name)
    if precision not in family.SUPPORTED_PRECISIONS:
        covered = [n for n, f in FAMILIES.items() if precision in f.SUPPORTED_PRECISIONS]
        raise UnsupportedError(f"{name} kernels have no {precision} form ({precision} covers {', '.join(covered)})")
    return family


def plan(kernels: Iterable[Kernel], suite_tags: Iterable[str], options: GenOptions) -> list[GraphRequest]:
    """Every graph the kernels yield: the forward pass, and the backward passes for kernels selected
    through the train suite, each at every `--batch` size if any. Nothing is built yet. A kernel with no
    graph in the precision gets one request whose build raises UnsupportedError, so a run records it as
    `unsupported`."""
    tags = set(suite_tags)
    requests = []
    for kernel in with_batches(kernels, options.batch):
        train = "train" in tags and "train" in kernel.suites
        family = FAMILIES.get(kernel.family)
        if family is None or options.precision not in family.SUPPORTED_PRECISIONS:
            requests.append(GraphRequest(kernel, options.precision, "fwd", "none"))
            continue
        for pass_name, form, attrs in family.plan(kernel, options, train):
            if pass_name in options.passes:
                requests.append(GraphRequest(kernel, options.precision, pass_name, form, attrs))
    return requests


def build(request: GraphRequest) -> Graph:
    """Build one planned graph."""
    family = _family(request.kernel.family, request.precision)
    return family.build(request.kernel, request.precision, request.pass_name, request.form, **request.attrs)


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The float64 (or exact integer) numpy reference outputs of a graph, from its spec alone;
    `rows` (families in ROW_SAMPLED, float precisions) limits it to those rows of the output."""
    return _family(spec.family, spec.precision).reference(spec, feeds, rows)


def tolerance(spec: GraphSpec) -> Tolerance:
    """The verification rule for a graph (its family's)."""
    return _family(spec.family, spec.precision).tolerance(spec)
