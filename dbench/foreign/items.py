"""Run items for foreign models: one whole model (`dbench run --model`) or every .onnx file of a folder
without a dbench manifest (`dbench run --graphs DIR`). Shapes are read now (a bad file stops the run
before its log exists); weights are read when the model's turn comes."""

from __future__ import annotations

from pathlib import Path

import onnx

from dbench.errors import InputError
from dbench.foreign.spec import foreign_spec
from dbench.frommodel.dims import check_dims_used, symbolic_names
from dbench.frommodel.load import check_fits, load_model
from dbench.frommodel.walk import extract
from dbench.gen.manifest import confined_file
from dbench.orchestrator.items import Item


def model_item(path: Path, dims: dict[str, int], all_dims: bool = True) -> Item:
    """The whole model as one graph (id: its file name without .onnx); refused now if it cannot fit in memory."""
    check_fits(path)
    loaded = load_model(path, dims, weights=False, all_dims=all_dims)
    spec = foreign_spec(loaded, extract(loaded), loaded.name)

    def load() -> tuple[bytes, str | None]:
        return load_model(path, dims, weights=True, all_dims=all_dims).model.SerializeToString(), None

    return Item(spec, load)


def folder_items(folder: Path, dims: dict[str, int]) -> list[Item]:
    """Every .onnx file of a folder, in name order; each --dim must be declared by at least one of them."""
    paths = sorted(folder.glob("*.onnx"))
    if not paths:
        raise InputError(f"no manifest.json in {folder} and no .onnx files either; point --graphs at a folder made by "
                          "dbench gen or one holding .onnx models")
    for path in paths:  # as gen folders and bundles: a link never leads a run outside the folder
        confined_file(folder, path.name)
    items = [model_item(path, dims, all_dims=False) for path in paths]
    declared = [name for path in paths for name in symbolic_names(onnx.load(str(path), load_external_data=False))]
    check_dims_used(dims, declared, f"any model in {folder}")
    return items
