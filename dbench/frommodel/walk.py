"""Walk a loaded model: identical nodes become one kernel with a count and the nodes' names; every
other node is accounted for with the reason it is not a kernel (nothing is dropped silently)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dbench.catalog.kernel_files import USER_SUITE
from dbench.catalog.kernels import Kernel, Origin
from dbench.frommodel.extract import Found, NotExpressed, Shapes, node_kernel, node_names
from dbench.frommodel.model_file import LoadedModel


@dataclass(frozen=True)
class ModelKernel:
    """A kernel of the model: the catalog kernel (one origin per occurrence), the graph that times it
    (precision, pass, form, build attributes) and the nodes it stands for."""

    kernel: Kernel
    precision: str
    pass_name: str
    form: str
    nodes: tuple[str, ...]
    attrs: tuple[tuple[str, Any], ...] = ()

    @property
    def copies(self) -> int:
        return len(self.nodes)


@dataclass(frozen=True)
class Skipped:
    """A node that is not a kernel: folded into one (Q/DQ of an int8 kernel), or not expressible."""

    node: str
    op: str
    reason: str
    folded_into: str = ""


@dataclass(frozen=True)
class Extraction:
    """The kernels of one model and the nodes left over, in graph order."""

    model: str
    kernels: tuple[ModelKernel, ...]
    skipped: tuple[Skipped, ...]

    @property
    def not_expressed(self) -> tuple[Skipped, ...]:
        return tuple(s for s in self.skipped if not s.folded_into)


def extract(loaded: LoadedModel) -> Extraction:
    """Every node of the model's main graph as a kernel occurrence or a Skipped with its reason."""
    graph = loaded.model.graph
    names = node_names(graph.node)
    shapes = Shapes(loaded.shapes, graph, names)
    merged: dict[tuple[Any, ...], ModelKernel] = {}
    folded: dict[str, tuple[str, str]] = {}
    """A folded Q/DQ node -> (the node whose kernel absorbed it, that kernel's precision)."""
    reasons: dict[str, Skipped] = {}
    for index, (node, name) in enumerate(zip(graph.node, names)):
        try:
            found: Found = node_kernel(node, shapes)
        except NotExpressed as why:
            reasons[name] = Skipped(name, node.op_type, str(why))
            continue
        for absorbed in found.folded:
            folded.setdefault(absorbed, (name, found.precision))
        key = (found.kernel.id, found.precision, found.pass_name, found.form, found.attrs)
        origins = tuple(Origin(suite=USER_SUITE, app=loaded.name, line=index, source=name) for _ in range(found.repeat))
        previous = merged.get(key)
        kernel = replace(found.kernel, origins=(previous.kernel.origins if previous else ()) + origins)
        nodes = (previous.nodes if previous else ()) + (name,) * found.repeat
        merged[key] = ModelKernel(kernel, found.precision, found.pass_name, found.form, nodes, found.attrs)
    skipped = []
    for name in names:
        if name in folded and name in reasons:
            skipped.append(
                replace(
                    reasons[name],
                    reason=f"folded into the {folded[name][1]} kernel of node {folded[name][0]}",
                    folded_into=folded[name][0],
                )
            )
        elif name in reasons:
            skipped.append(reasons[name])
    return Extraction(loaded.name, tuple(merged.values()), tuple(skipped))


def model_kernels(path, dims: dict[str, int]) -> Extraction:
    """Load a model (shapes only, no weight data) and extract its kernels."""
    from dbench.frommodel.model_file import load_model

    return extract(load_model(path, dims, weights=False))
