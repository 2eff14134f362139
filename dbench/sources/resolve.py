"""Resolve what a run asks for into its source and that source's Items: the DeepBench catalog or a
kernel file (generated in memory), a gen folder or bundle (its manifest), a folder of foreign .onnx
files, or one model. The caller learns which options apply from the SourceKind, never the kind itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dbench.errors import UsageError
from dbench.sources.item import Item


class Asked(Protocol):
    """The fields of a run request that name its graphs (dbench.orchestrator.request.RunRequest has them)."""

    suite: str | None
    ops: tuple[str, ...]
    apps: tuple[str, ...]
    pattern: str | None
    kernels: str | None
    graphs: str | None
    gen: dict[str, Any]
    dims: dict[str, int]


@dataclass(frozen=True)
class SourceKind:
    """A kind of graph source and which of a run's options apply to it."""

    name: str
    selectable: bool
    """--suite, --ops, --app and --id select among its graphs."""
    generated: bool
    """Its graphs are generated for the run: --kernels and the generation options apply."""
    sized: bool
    """--dim sizes the symbolic dimensions of its inputs."""
    run_kind: str
    """The run header's `kind`: `model` for one whole model, `kernels` otherwise."""


CATALOG = SourceKind("catalog", selectable=True, generated=True, sized=False, run_kind="kernels")
GEN_FOLDER = SourceKind("gen folder or bundle", selectable=True, generated=False, sized=False, run_kind="kernels")
MODEL_FOLDER = SourceKind("folder of models", selectable=False, generated=False, sized=True, run_kind="kernels")
MODEL = SourceKind("model", selectable=False, generated=False, sized=True, run_kind="model")


def is_model_file(graphs: Path) -> bool:
    """A path naming one model (`--model`), existing or not (a missing one is then reported as such)."""
    return graphs.is_file() or graphs.suffix == ".onnx"


def source_kind(graphs: str | None) -> SourceKind:
    """The kind of source `--graphs` (or `--model`) names; no path: the catalog or a kernel file."""
    from dbench.sources.folder import made_by_dbench

    if not graphs:
        return CATALOG
    path = Path(graphs)
    if made_by_dbench(path):
        return GEN_FOLDER
    if is_model_file(path):
        return MODEL
    return MODEL_FOLDER if path.is_dir() else GEN_FOLDER  # a missing folder: reported as no gen folder


def _generated(asked: Asked, selection, int8_form: str) -> list[Item]:
    from dbench.catalog import load_catalog, load_kernel_file, select
    from dbench.gen.options import GenOptions
    from dbench.gen.plan import plan
    from dbench.sources.generated import items_from_requests

    source = load_kernel_file(Path(asked.kernels)) if asked.kernels else load_catalog()
    if not source:
        raise UsageError(f"{asked.kernels} holds no kernel rows (a header only?); add rows, one kernel per line")
    options = GenOptions.from_fields(asked.gen, int8_form)
    return items_from_requests(plan(select(source, selection), selection.suite_tags, options))


def _listed(asked: Asked, selection) -> list[Item]:
    from dbench.sources.folder import folder_items

    listed = folder_items(Path(asked.graphs))
    if not listed:
        raise UsageError(f"the manifest in {asked.graphs} lists no graphs; generate some there with dbench gen")
    return [
        item
        for item in listed
        if selection.admits(item.spec.kernel_id, item.spec.family, item.spec.op, item.spec.suites, item.spec.apps)
    ]


def build_items(asked: Asked, int8_form: str) -> list[Item]:
    """The graphs a request names, from whichever source it names, selected by its selectors where
    they apply. Naming no graph at all is a UsageError."""
    from dbench.catalog import Selection
    from dbench.catalog.select import suite_for

    kind = source_kind(asked.graphs)
    if kind in (MODEL, MODEL_FOLDER):
        from dbench.sources.model import model_item, models_in_folder

        path = Path(asked.graphs)
        return [model_item(path, asked.dims)] if kind is MODEL else models_in_folder(path, asked.dims)
    suite = suite_for("run", asked.suite, from_catalog=not (asked.graphs or asked.kernels))
    selection = Selection(suite, asked.ops, asked.apps, asked.pattern)
    items = _listed(asked, selection) if kind is GEN_FOLDER else _generated(asked, selection, int8_form)
    if not items:
        source = (
            f"--graphs {asked.graphs}"
            if asked.graphs
            else f"--kernels {asked.kernels}"
            if asked.kernels
            else "the DeepBench catalog"
        )
        raise UsageError(selection.nothing_matches(source))
    return items
