"""Graphs generated in memory from catalog kernels (DeepBench's lists or a `--kernels` file)."""

from __future__ import annotations

from collections.abc import Iterable

from dbench.errors import UnsupportedError
from dbench.gen.family import make_spec
from dbench.gen.plan import GraphRequest, build
from dbench.sources.item import Item


def _no_graph() -> tuple[bytes, str | None]:
    return b"", None


def items_from_requests(requests: Iterable[GraphRequest]) -> list[Item]:
    """Build each planned graph in memory (fast: graphs hold no weights); a graph that cannot exist in
    its precision is an unsupported Item with the generator's reason."""
    items = []
    for request in requests:
        try:
            graph = build(request)
        except UnsupportedError as err:
            spec = make_spec(request.kernel, request.precision, request.pass_name, request.form)
            items.append(Item(spec, _no_graph, unsupported=str(err)))
            continue
        data = graph.model.SerializeToString()
        items.append(Item(graph.spec, lambda data=data: (data, None)))
    return items
