"""`--dim batch=1,seq=128`: the values bound to a model's symbolic input dimensions."""

from __future__ import annotations

from collections.abc import Iterable

import onnx

from dbench.errors import UsageError

FIRST_IR_WITHOUT_INPUT_INITIALIZERS = 4
"""From IR 4 on an initializer need not be a graph input, and one that is not is a typed constant
(before, every initializer was an input with a default, and shape inference typed only those)."""


def parse_dims(values: Iterable[str]) -> dict[str, int]:
    """`["batch=1,seq=128", "heads=4"]` -> {"batch": 1, "seq": 128, "heads": 4}; a bad item is one clear error."""
    dims: dict[str, int] = {}
    for value in values:
        for item in filter(None, (v.strip() for v in value.split(","))):
            name, sep, number = item.partition("=")
            if not sep or not name.strip() or not number.strip().isdigit() or int(number) <= 0:
                raise UsageError(f"--dim {item!r} is not NAME=POSITIVE_INTEGER (e.g. --dim batch=1,seq=128)")
            dims[name.strip()] = int(number)
    return dims


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The inputs the caller feeds (an input that is also an initializer has a default and is not fed)."""
    initialized = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initialized]


def symbolic_names(model: onnx.ModelProto) -> list[str]:
    """Every symbolic dimension name the model's fed inputs declare, in order of appearance."""
    names = [d.dim_param for i in graph_inputs(model) for d in i.type.tensor_type.shape.dim if d.dim_param]
    return list(dict.fromkeys(names))


def bind_dims(model: onnx.ModelProto, dims: dict[str, int]) -> None:
    """Give every fed tensor input's dimension a size, in place: symbolic ones from `dims`. A dimension
    left without a size is one error naming the --dim to give."""
    declared = symbolic_names(model)
    for value in graph_inputs(model):
        if not value.type.HasField("tensor_type"):
            continue  # a sequence, map or optional: no dimension of its own to bind (a run says it cannot feed it)
        if not value.type.tensor_type.HasField("shape"):
            raise UsageError(f"model input {value.name!r} declares no shape; re-export the model with input shapes")
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                continue
            if dim.dim_param and dim.dim_param in dims:
                dim.dim_value = dims[dim.dim_param]  # setting the value clears the oneof's dim_param
                continue
            if dim.dim_param:
                missing = [n for n in declared if n not in dims]
                raise UsageError(
                    f"symbolic dimension {dim.dim_param!r} (input {value.name!r}, axis {axis}) is unbound; "
                    f"give --dim {','.join(f'{n}=N' for n in missing)}"
                )
            raise UsageError(
                f"input {value.name!r} axis {axis} has neither a size nor a name; re-export the model "
                "with a named or fixed dimension there"
            )


def check_dims_used(dims: dict[str, int], declared: Iterable[str], what: str) -> None:
    """A --dim no model declares is a typo: one error listing the names there are."""
    names = list(dict.fromkeys(declared))
    unknown = [name for name in dims if name not in names]
    if unknown:
        raise UsageError(
            f"--dim {unknown[0]} is not a symbolic dimension of {what}; its symbolic dimensions: "
            f"{', '.join(names) or 'none'}"
        )
