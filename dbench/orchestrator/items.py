"""The graphs a run times, as Items: generated in memory from catalog kernels, or listed by a gen
folder's manifest (each file read only when its turn comes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from dbench.errors import UnsupportedError, UsageError
from dbench.gen.family import make_spec
from dbench.gen.plan import GraphRequest, build
from dbench.gen.graph import GraphSpec
from dbench.gen.manifest import MANIFEST, Entry

if TYPE_CHECKING:
    from dbench.orchestrator.request import RunRequest


@dataclass(frozen=True)
class Item:
    """One graph to run: its spec, and how to get its bytes (and expected hash) when its turn comes.
    `unsupported` holds the generator's reason when no graph exists in this precision."""

    spec: GraphSpec
    load: Callable[[], tuple[bytes, str | None]]
    unsupported: str = ""


def items_from_requests(requests: Iterable[GraphRequest]) -> list[Item]:
    """Build each planned graph in memory (fast: graphs hold no weights)."""
    items = []
    for request in requests:
        try:
            graph = build(request)
        except UnsupportedError as err:
            spec = make_spec(request.kernel, request.precision, request.pass_name, request.form)
            items.append(Item(spec, lambda: (b"", None), str(err)))
            continue
        data = graph.model.SerializeToString()
        items.append(Item(graph.spec, lambda data=data: (data, None)))
    return items


def items_from_folder(path: Path) -> list[Item]:
    """The graphs of a gen folder or of a bundle (verified first: archive or folder); each graph's
    bytes are read (and checked against the manifest's hash) only when run."""
    from dbench.bundle.verify import open_graphs

    entries, read = open_graphs(path)

    def loader(entry: Entry) -> Callable[[], tuple[bytes, str | None]]:
        return lambda: (read(entry), entry.sha256)

    return [Item(e.spec, loader(e)) for e in entries]


def is_model_file(graphs: Path) -> bool:
    """A path naming one model (`--model`), existing or not (a missing one is then reported as such)."""
    return graphs.is_file() or graphs.suffix == ".onnx"


def is_foreign(graphs: Path) -> bool:
    """A model file, or a folder without a dbench manifest (of plain .onnx files); never a bundle
    (an archive, or a folder with SHA256SUMS), which is verified as one."""
    from dbench.bundle.verify import is_bundle

    return not is_bundle(graphs) and (is_model_file(graphs) or (graphs.is_dir() and not (graphs / MANIFEST).exists()))


def build_items(request: "RunRequest", int8_form: str) -> list[Item]:
    """The graphs a request names: from a gen folder (filtered by the same selectors), or generated in
    memory from the catalog or a kernel file. Naming no graph at all is a UsageError."""
    from dbench.catalog import Selection, load_catalog, load_kernel_file, select
    from dbench.catalog.select import suite_for
    from dbench.gen.options import GenOptions
    from dbench.gen.plan import plan

    if request.graphs and is_foreign(Path(request.graphs)):
        from dbench.foreign.items import folder_items, model_item

        path = Path(request.graphs)
        return [model_item(path, request.dims)] if is_model_file(path) else folder_items(path, request.dims)
    suite = suite_for("run", request.suite, from_catalog=not (request.graphs or request.kernels))
    selection = Selection(suite, request.ops, request.apps, request.pattern)
    if request.graphs:
        listed = items_from_folder(Path(request.graphs))
        if not listed:
            raise UsageError(f"the manifest in {request.graphs} lists no graphs; generate some there with dbench gen")
        items = [item for item in listed
                 if selection.admits(item.spec.kernel_id, item.spec.family, item.spec.op, item.spec.suites, item.spec.apps)]
    else:
        source = load_kernel_file(Path(request.kernels)) if request.kernels else load_catalog()
        if not source:
            raise UsageError(f"{request.kernels} holds no kernel rows (a header only?); add rows, one kernel per line")
        options = GenOptions.from_fields(request.gen, int8_form)
        items = items_from_requests(plan(select(source, selection), selection.suite_tags, options))
    if not items:
        source = f"--graphs {request.graphs}" if request.graphs else f"--kernels {request.kernels}" if request.kernels else "the DeepBench catalog"
        raise UsageError(selection.nothing_matches(source))
    return items
