"""The graphs of benchmarks/reference_sweep.py: one-op models with their inputs, each for one (op, version).

Sources, in the order the sweep makes them:
  node test   onnx's own node test cases (onnx.backend.test.case.node.collect_testcases: the `expect`
              generators run in-process, inputs drawn from a seeded numpy), as onnx writes them; their
              expected outputs are the test authors' numpy of the spec
  converted   a node test taken down to each older version of its op by onnx.version_converter, which
              keeps the graph's meaning: the expected outputs still hold
  restamped   a node test whose node is valid at an older version as it is (onnx.checker says so), the
              model's opset set to that version: the same node under the older version's rules, so no
              expected outputs (the older rules may differ: that is what the sweep is looking for)
  generated   dbench's generators (benchmarks/reference_generators.py): random shapes and attributes for
              the ops real models use, at every version, with a numpy formula of that version's spec
              where it is simple to write
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import onnx.defs
from onnx import helper

DOMAINS = ("", "ai.onnx.ml")
"""The standard domains the sweep covers."""
RANDOM_OPS = {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli", "Multinomial"}
"""Ops that draw their own random numbers: no two implementations agree on their values."""


@dataclass
class Case:
    """One graph of one (op, version): the model, its inputs by name, and the spec's outputs where known."""

    id: str
    domain: str
    op: str
    version: int
    source: str
    model: onnx.ModelProto
    inputs: dict[str, Any]
    expected: list[Any] | None = None
    """The spec's outputs: onnx's test authors' numpy (node tests, converted ones) or a generator's formula."""


def versions() -> dict[tuple[str, str], list[int]]:
    """Every (domain, op) of the standard domains and the since_versions onnx.defs defines for it."""
    found: dict[tuple[str, str], set[int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in DOMAINS:
            found.setdefault((schema.domain, schema.name), set()).add(schema.since_version)
    return {key: sorted(vs) for key, vs in sorted(found.items())}


def deprecated() -> set[tuple[str, str, int]]:
    """The (domain, op, version)s onnx marks deprecated."""
    return {
        (s.domain, s.name, s.since_version)
        for s in onnx.defs.get_all_schemas_with_history()
        if s.domain in DOMAINS and s.deprecated
    }


def since_version(domain: str, op: str, opset: int) -> int | None:
    """The version of `op` a model importing `opset` of `domain` has, or None where it has none."""
    try:
        return onnx.defs.get_schema(op, opset, domain).since_version
    except onnx.defs.SchemaError:
        return None


def _opset(model: onnx.ModelProto, domain: str) -> int | None:
    for entry in model.opset_import:
        if entry.domain == domain or (domain == "" and entry.domain == "ai.onnx"):
            return entry.version
    return None


def _array(value: Any) -> Any:
    """A node test's value as the implementations take it: a TensorProto (float8, int4... that numpy
    has no type for) as its numpy array, a sequence or optional as it is."""
    from onnx import numpy_helper

    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [_array(v) for v in value]
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def _feeds(model: onnx.ModelProto, values: list[Any]) -> dict[str, Any]:
    initialised = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initialised]
    return dict(zip(names, values))


def node_cases(seed: int) -> list[Case]:
    """onnx's one-node test cases of the standard domains (multi-node ones test function bodies or
    several ops at once: a disagreement could not be put on one op version)."""
    from onnx.backend.test.case.node import collect_testcases

    np.random.seed(seed)  # the expect generators draw from numpy's global state
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        collected = collect_testcases()
    cases = []
    for test in collected:
        nodes = test.model.graph.node
        if len(nodes) != 1 or not test.data_sets:
            continue
        node = nodes[0]
        domain = "" if node.domain == "ai.onnx" else node.domain
        opset = _opset(test.model, domain)
        version = since_version(domain, node.op_type, opset) if domain in DOMAINS and opset else None
        if version is None:
            continue
        inputs, outputs = test.data_sets[0]
        cases.append(
            Case(
                f"{node.op_type}-{version}:{test.name}",
                domain,
                node.op_type,
                version,
                "node test",
                test.model,
                _feeds(test.model, [_array(v) for v in inputs]),
                [_array(v) for v in outputs],
            )
        )
    return cases


def _with_opset(model: onnx.ModelProto, domain: str, opset: int) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for entry in copy.opset_import:
        if entry.domain == domain or (domain == "" and entry.domain == "ai.onnx"):
            entry.version = opset
    return copy


def _valid(model: onnx.ModelProto) -> bool:
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:  # the checker's ValidationError, or shape inference's InferenceError
        return False
    return True


def _converted(model: onnx.ModelProto, opset: int) -> onnx.ModelProto | None:
    from onnx import version_converter

    try:
        return version_converter.convert_version(model, opset)
    except Exception:  # no adapter for some step, or the adapter refuses the node
        return None


def older_cases(case: Case, history: list[int]) -> list[Case]:
    """The node test `case` at every older version of its op: converted where onnx.version_converter
    takes it there (expected outputs kept), restamped where the node is valid there as it is."""
    older = []
    for version in (v for v in history if v < case.version):
        converted = _converted(case.model, version) if case.domain == "" else None
        if converted is not None and any(n.op_type == case.op for n in converted.graph.node) and _valid(converted):
            older.append(
                Case(
                    f"{case.op}-{version}:{case.id.split(':', 1)[1]}@converted",
                    case.domain,
                    case.op,
                    version,
                    "converted",
                    converted,
                    dict(case.inputs),
                    case.expected,
                )
            )
        restamped = _with_opset(case.model, case.domain, version)
        if _valid(restamped):
            older.append(
                Case(
                    f"{case.op}-{version}:{case.id.split(':', 1)[1]}@restamped",
                    case.domain,
                    case.op,
                    version,
                    "restamped",
                    restamped,
                    dict(case.inputs),
                )
            )
    return older


def _element(array: np.ndarray) -> int:
    """The ONNX element type of an array (numpy's object arrays hold strings)."""
    return onnx.TensorProto.STRING if array.dtype.kind in "OU" else helper.np_dtype_to_tensor_dtype(array.dtype)


def one_node_model(
    op: str,
    version: int,
    inputs: list[tuple[str, np.ndarray | None]],
    outputs: int | list[str],
    domain: str = "",
    initializers: dict[str, np.ndarray] | None = None,
    expected: list[Any] | None = None,
    outer: tuple[str, ...] | list[str] = (),
    **attributes: Any,
) -> onnx.ModelProto:
    """A model of one `op` node at `version` (the model's opset), its inputs typed and shaped from the
    arrays given (None: an omitted optional input), outputs typed by shape inference (where the op has
    none, as the `expected` arrays, else as the first input's type), and `initializers` among its
    inputs' names stored in the model; `outer` inputs are graph inputs the node reads only from its
    subgraphs (outer scope)."""
    from onnx import numpy_helper

    initializers = initializers or {}
    names = [name if array is not None or name in initializers else "" for name, array in inputs if name not in outer]
    while names and not names[-1]:
        names.pop()
    output_names = [f"y{i}" for i in range(outputs)] if isinstance(outputs, int) else outputs
    node = helper.make_node(op, names, output_names, domain=domain or None, **attributes)
    graph_inputs = [
        helper.make_tensor_value_info(name, _element(array), array.shape)
        for name, array in inputs
        if array is not None and name not in initializers
    ]
    stored = [numpy_helper.from_array(array, name) for name, array in initializers.items()]
    graph = helper.make_graph(
        [node],
        f"{op}_{version}",
        graph_inputs,
        [helper.make_value_info(name, onnx.TypeProto()) for name in output_names if name],
        stored,
    )
    opsets = [helper.make_opsetid(domain, version)] + ([helper.make_opsetid("", 13)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 7 if version <= 13 and not domain else model.ir_version
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    del model.graph.output[:]
    typed = {
        v.name: v
        for v in [*inferred.graph.value_info, *inferred.graph.output]
        if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type and v.type.tensor_type.HasField("shape")
    }
    first = next(array for _, array in inputs if array is not None)
    known = list(expected or []) + [first] * len(output_names)
    model.graph.output.extend(
        typed.get(name) or helper.make_tensor_value_info(name, _element(like), like.shape)
        for name, like in zip(output_names, known)
        if name
    )
    return model
