"""Open a user's ONNX model safely: readable, within memory, external data only from inside its folder,
symbolic dimensions bound, shapes inferred. Every refusal is one line naming the fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx

from dbench.errors import DbenchError, InputError
from dbench.frommodel.dims import bind_dims, check_dims_used, symbolic_names
from dbench.frommodel.fold import fold_shape_arithmetic, open_shapes

MEMORY_FACTOR = 3
"""A model needs about this many times its weights in memory to be run and verified (weights, the
runtime's packed copy, the reference evaluator's)."""


@dataclass(frozen=True)
class LoadedModel:
    """A model with its dimensions bound and its shapes inferred; `weights` says whether initializer
    data (and external data) was read. `shapes` is the model whose value_info holds the most shapes
    (shape arithmetic folded where inference alone left some open); `model` keeps every node."""

    name: str
    path: Path
    model: onnx.ModelProto
    weights: bool
    shapes: onnx.ModelProto


def _external(tensor: onnx.TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in tensor.external_data}


def external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """Initializers (graph and subgraphs) whose data is stored outside the model file."""
    from onnx.external_data_helper import _get_all_tensors

    return [t for t in _get_all_tensors(model) if t.data_location == onnx.TensorProto.EXTERNAL]


def check_external(model: onnx.ModelProto, folder: Path) -> int:
    """The bytes of external data the model reads; a location outside `folder` (absolute, `..`, a link
    leading out) or a missing file is refused."""
    root = folder.resolve()
    total = 0
    for tensor in external_tensors(model):
        info = _external(tensor)
        location = info.get("location", "")
        target = (root / location).resolve()
        if not location or Path(location).is_absolute() or not target.is_relative_to(root):
            raise InputError(
                f"initializer {tensor.name!r} points at external data {location!r} outside the model's folder "
                f"{folder}; dbench reads external data only from inside it: move the file there"
            )
        if not target.is_file():
            raise InputError(
                f"initializer {tensor.name!r}: external data file {location!r} is missing from {folder}; "
                "copy it beside the model"
            )
        total += int(info["length"]) if "length" in info else target.stat().st_size
    return total


def _check_memory(need: int, what: str) -> None:
    import psutil

    free = psutil.virtual_memory().available
    if need > free:
        raise DbenchError(
            f"{what} needs about {need / 2**30:.1f} GiB of memory, {free / 2**30:.1f} GiB available; "
            "run it on a machine with more memory"
        )


def _parse(path: Path) -> onnx.ModelProto:
    if not path.is_file():
        raise InputError(f"no model file {path}; give the path of an .onnx file")
    _check_memory(MEMORY_FACTOR * path.stat().st_size, f"model {path.name}")
    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as err:  # protobuf's DecodeError and friends
        raise InputError(
            f"{path} is not an ONNX model ({type(err).__name__}); give a .onnx file exported by a framework"
        ) from None


def infer_shapes(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """ONNX shape inference, strict, with constant propagation so Reshape targets resolve; the outputs of
    ONNX Runtime's MatMulNBits (which ONNX's inference does not know) typed from its input and `N`, and
    inference run again past them, as often as a chain of them needs."""
    inferred = _inferred(model, path)
    while True:
        typed = _matmulnbits_outputs(inferred)
        if not typed:
            return inferred
        model = onnx.ModelProto()
        model.CopyFrom(inferred)
        model.graph.value_info.extend(typed)
        inferred = _inferred(model, path)


def _matmulnbits_outputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The value infos of MatMulNBits outputs not yet typed whose input A is: A's shape with its last
    dimension N."""
    known = {v.name: v for v in [*model.graph.input, *model.graph.value_info, *model.graph.output]}
    typed = []
    for node in model.graph.node:
        if node.op_type != "MatMulNBits" or node.output[0] in known or node.input[0] not in known:
            continue
        a = known[node.input[0]].type.tensor_type
        if not a.HasField("shape"):
            continue
        n = next(attr.i for attr in node.attribute if attr.name == "N")
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in a.shape.dim][:-1] + [n]
        typed.append(onnx.helper.make_tensor_value_info(node.output[0], a.elem_type, dims))
    return typed


def _inferred(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(
            f"{path.name} fails ONNX shape inference ({first[:300]}); fix or re-export the model "
            "(onnx.checker.check_model(..., full_check=True) shows the same)"
        ) from None


def load_model(path: Path, dims: dict[str, int], weights: bool, all_dims: bool = True) -> LoadedModel:
    """Read, check and bind a model; with `weights`, it must fit in memory with its external data,
    which is read too (after the checks). `all_dims`: every --dim must be one of the model's."""
    path = Path(path)
    model = _parse(path)
    external = check_external(model, path.parent)
    if all_dims:
        check_dims_used(dims, symbolic_names(model), f"model {path.name}")
    if weights:
        _check_memory(MEMORY_FACTOR * (path.stat().st_size + external), f"model {path.name} with its weights")
        if external:
            from onnx.external_data_helper import load_external_data_for_model

            load_external_data_for_model(model, str(path.parent))
    bind_dims(model, dims)
    inferred = infer_shapes(model, path)
    shapes = infer_shapes(fold_shape_arithmetic(inferred), path) if open_shapes(inferred) else inferred
    return LoadedModel(path.stem, path, inferred, weights, shapes)


def check_fits(path: Path) -> None:
    """Refuse, before any run starts, a model that with its external data would not fit in memory."""
    model = _parse(Path(path))
    _check_memory(
        MEMORY_FACTOR * (Path(path).stat().st_size + check_external(model, Path(path).parent)),
        f"model {Path(path).name} with its weights",
    )
