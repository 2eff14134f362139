"""Run items for foreign models: one whole model (`dbench run --model`) or every .onnx file of a folder
without a dbench manifest (`dbench run --graphs DIR`). Shapes are read now (a bad file stops the run
before its log exists); weights are read when the model's turn comes."""

from __future__ import annotations

from pathlib import Path

from dbench.errors import DbenchError
from dbench.foreign.spec import foreign_spec
from dbench.frommodel.load import load_model
from dbench.frommodel.walk import extract
from dbench.orchestrator.runner import Item


def model_item(path: Path, dims: dict[str, int], graph_id: str | None = None) -> Item:
    """The whole model as one graph (id: its file name without .onnx)."""
    loaded = load_model(path, dims, weights=False)
    spec = foreign_spec(loaded, extract(loaded), graph_id or loaded.name)

    def load() -> tuple[bytes, str | None]:
        return load_model(path, dims, weights=True).model.SerializeToString(), None

    return Item(spec, load)


def folder_items(folder: Path, dims: dict[str, int]) -> list[Item]:
    """Every .onnx file of a folder, in name order."""
    paths = sorted(folder.glob("*.onnx"))
    if not paths:
        raise DbenchError(f"{folder} holds neither a dbench manifest nor .onnx files; point --graphs at a folder of graphs")
    return [model_item(path, dims) for path in paths]
