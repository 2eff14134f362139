"""Foreign models as graphs: one whole model (`dbench run --model`) or every .onnx file of a folder
without a dbench manifest (`dbench run --graphs DIR`). Shapes are read now (a file that is not a model
stops the run before its log exists); weights are read when the model's turn comes. A model dbench
cannot feed or check (a string input, an input that sets a shape) is an unsupported Item with the reason."""

from __future__ import annotations

from pathlib import Path

import onnx

from dbench.errors import InputError, UnsupportedError
from dbench.frommodel.dims import check_dims_used, symbolic_names
from dbench.frommodel.model_file import check_fits, load_model
from dbench.frommodel.walk import extract
from dbench.gen.feeds import default_seed
from dbench.gen.graph import GraphSpec
from dbench.gen.manifest import confined_file
from dbench.sources.contract import ONNX_REFERENCE, Contract
from dbench.sources.item import Item
from dbench.sources.model_spec import FAMILY, foreign_spec

MODEL = Contract(
    reference=ONNX_REFERENCE,
    described_by="the model as read when the run started",
    remedy="the file changed during the run; run it again",
)


def _unread(name: str, path: Path) -> GraphSpec:
    """The spec of a model that will not run: its name and file, nothing to feed."""
    return GraphSpec(
        id=name,
        kernel_id=name,
        family=FAMILY,
        op=FAMILY,
        params={"file": path.name},
        suites=("user",),
        apps=(name,),
        pass_name="fwd",
        form=FAMILY,
        precision="fp32",
        flops=0,
        flops_executed=0,
        inputs=(),
        outputs=(),
        seed=default_seed(name),
    )


def _no_graph() -> tuple[bytes, str | None]:
    return b"", None


def model_item(path: Path, dims: dict[str, int], all_dims: bool = True) -> Item:
    """The whole model as one graph (id: its file name without .onnx); refused now if it cannot fit in memory."""
    check_fits(path)
    loaded = load_model(path, dims, weights=False, all_dims=all_dims)
    try:
        spec = foreign_spec(loaded, extract(loaded), loaded.name)
    except UnsupportedError as why:
        return Item(_unread(loaded.name, path), _no_graph, MODEL, unsupported=str(why))

    def load() -> tuple[bytes, str | None]:
        model = load_model(path, dims, weights=True, all_dims=all_dims).model
        for output in model.graph.output:  # the shape its exporter's example data gave: the runtime computes it
            if output.type.HasField("tensor_type"):
                output.type.tensor_type.ClearField("shape")
        return model.SerializeToString(), None

    return Item(spec, load, MODEL)


def models_in_folder(folder: Path, dims: dict[str, int]) -> list[Item]:
    """Every .onnx file of a folder, in name order; each --dim must be declared by at least one of them."""
    paths = sorted(folder.glob("*.onnx"))
    if not paths:
        inside = sorted(
            str(m.parent) for m in folder.glob("*/manifest.json")
        )  # `dbench gen --out` writes a folder per suite
        where = (
            f"point --graphs at {' or '.join(inside)}, made by dbench gen"
            if inside
            else "point --graphs at a folder made by dbench gen or one holding .onnx models"
        )
        raise InputError(f"no manifest.json in {folder} and no .onnx files either; {where}")
    for path in paths:  # as gen folders and bundles: a link never leads a run outside the folder
        confined_file(folder, path.name)
    items = [model_item(path, dims, all_dims=False) for path in paths]
    declared = [name for path in paths for name in symbolic_names(onnx.load(str(path), load_external_data=False))]
    check_dims_used(dims, declared, f"any model in {folder}")
    return items
