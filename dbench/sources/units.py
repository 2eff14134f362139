"""A model's execution units as graphs (`dbench predict`): the whole model with dbench's node names
(so the runtime names its layers after them), an empty graph (one Identity: the runtime's cost per
call), and one graph per distinct unit the runtime executes, cut from the runtime's own report of
its layers (dbench.units.cut), the layers it inserts between the model's included where a graph can
express them (ONNX Runtime's NCHWc reorders and Transposes). Identical units are one graph with a
count. Every graph carries
`attrs.predict`: its role, the model (name, file hash, --dim) and the runtime settings it was cut for,
and for a unit its count and the nodes and layers of each occurrence, so the prediction is made
from result rows alone, on this machine or from a board's run of an exported bundle."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dbench.errors import UnsupportedError
from dbench.executed import CHANNELS_LAST, ExecutedGraph, ExecutedLayer
from dbench.frommodel.model_file import LoadedModel, load_model
from dbench.frommodel.walk import extract
from dbench.gen.feeds import default_seed
from dbench.gen.graph import EVICT_ATTR, IR_VERSION, OPSET, GraphSpec, TensorSpec
from dbench.gen.manifest import sha256
from dbench.gen.precision import WEIGHT_ONLY_COMPUTE
from dbench.sources.contract import ONNX_REFERENCE, Contract
from dbench.sources.item import Item
from dbench.sources.model import model_item
from dbench.sources.model_spec import RANDOM_WEIGHTS, foreign_spec, random_weights
from dbench.units.cut import EXECUTED, INSERTED, UNMATCHED, Cut, Unit, cut
from dbench.units.graph import executed_model, inserted_model, known_shape, shaped, unit_model, value_types
from dbench.units.prediction import EMPTY, EVICTED, MODEL, PREDICT_ATTR, UNIT
from dbench.units.same import signature
from dbench.units.structure import Structure, name_nodes

UNIT_FAMILY = "unit"
EMPTY_FAMILY = "empty"
EMPTY_ID = "empty"
EVICTED_EMPTY_ID = "empty.evicted"
TIMED_KINDS = (EXECUTED, UNMATCHED)
"""The unit kinds of the model's nodes timed in isolation; folded values are not graphs of their own, and
a layer the runtime inserted is one where a graph can express it (dbench.units.graph.inserted_model)."""
UNITS = Contract(
    reference=ONNX_REFERENCE,
    described_by="the unit as cut when the run started",
    remedy="the model changed during the run; run dbench predict again",
)
NAMED_MODEL = Contract(
    reference=ONNX_REFERENCE,
    described_by="the model as read when the run started",
    remedy="the file changed during the run; run it again",
)
OPS_IN_ID = 3


@dataclass(frozen=True)
class Identity:
    """What a prediction's graphs were made for: the model, its --dim, and the runtime and its
    settings (threads, graph optimisation, ...) whose layers cut it."""

    model: str
    sha256: str
    dims: dict[str, int]
    runtime: str
    settings: dict[str, Any]

    def tag(self, role: str, **more: Any) -> dict[str, Any]:
        return {
            "role": role,
            "model": self.model,
            "sha256": self.sha256,
            "dims": dict(self.dims),
            "runtime": self.runtime,
            "settings": dict(self.settings),
            **more,
        }


@dataclass(frozen=True)
class Prepared:
    """A model read for its prediction: the loaded model (weights in, dbench's node names), its structure."""

    path: Path
    dims: dict[str, int]
    loaded: LoadedModel
    structure: Structure


def prepare(path: Path, dims: dict[str, int]) -> Prepared:
    """Read the model with its weights and name its nodes as dbench does."""
    loaded = load_model(path, dims, weights=True)
    model = name_nodes(loaded.model)
    types = {**value_types(loaded.model), **value_types(loaded.shapes)}
    full = frozenset(
        name
        for name, v in types.items()
        if v.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in v.type.tensor_type.shape.dim)
    )
    structure = Structure(model.graph, frozenset(random_weights(model)), full)
    return Prepared(Path(path), dims, replace(loaded, model=model), structure)


def named_model_item(path: Path, dims: dict[str, int]) -> Item:
    """The whole model as `dbench run --model` runs it, with dbench's node names."""
    item = model_item(path, dims)

    def load() -> tuple[bytes, str | None]:
        data, digest = item.load()
        return name_nodes(onnx.load_model_from_string(data)).SerializeToString(), digest

    return Item(item.spec, load, NAMED_MODEL, item.unsupported)


def empty_item(identity: Identity, evict_bytes: int = 0) -> Item:
    """One Identity over one float: a call that does no work, its time the runtime's cost per call (with
    `evict_bytes`, its cost per call after the model's traffic: EVICTED_EMPTY_ID)."""
    graph_id = EVICTED_EMPTY_ID if evict_bytes else EMPTY_ID
    x = TensorSpec("x", (1,), "float32", "activation")
    y = TensorSpec("y", (1,), "float32", "output")
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="identity")], EMPTY_ID, [x.value_info()], [y.value_info()]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="dbench units")
    model.ir_version = IR_VERSION
    data = model.SerializeToString()
    tag = identity.tag(EMPTY, content=signature(model), **({"timing": EVICTED} if evict_bytes else {}))
    spec = GraphSpec(
        id=graph_id,
        kernel_id=graph_id,
        family=EMPTY_FAMILY,
        op=EMPTY_FAMILY,
        params={},
        suites=("user",),
        apps=(identity.model,),
        pass_name="fwd",
        form=EMPTY_FAMILY,
        precision="fp32",
        flops=0,
        flops_executed=0,
        inputs=(x,),
        outputs=(y,),
        seed=default_seed(EMPTY_ID),
        attrs={PREDICT_ATTR: tag, **({EVICT_ATTR: evict_bytes} if evict_bytes else {})},
    )
    return Item(spec, lambda: (data, None), UNITS)


CONSTANT_OPS = ("Constant", "ConstantOfShape")
"""Nodes that make a weight from constants alone: a structure-only model's weights (ConstantOfShape of
a stored shape), which a runtime folds into stored weights when it prepares the graph."""


def _weight_bytes(model: onnx.ModelProto, spec: GraphSpec, types: dict[str, onnx.ValueInfoProto]) -> int:
    """The bytes of the weights a unit graph reads: its initializers, the weights drawn as inputs, and
    the weights its own constant nodes make (sized by the model's inferred `types`)."""
    stored = sum(
        numpy_helper.to_array(t).nbytes if not t.raw_data else len(t.raw_data) for t in model.graph.initializer
    )
    made = sum(_value_bytes(node.output[0], types) for node in model.graph.node if node.op_type in CONSTANT_OPS)
    return stored + made + sum(t.nbytes for t in spec.weights)


def _value_bytes(name: str, types: dict[str, onnx.ValueInfoProto]) -> int:
    """The bytes of a value whose type and shape the model's inference knows (0 where it does not)."""
    shape = known_shape(name, types)
    return int(np.prod(shape[1], dtype=np.int64)) * helper.tensor_dtype_to_np_dtype(shape[0]).itemsize if shape else 0


def _io_bytes(spec: GraphSpec) -> int:
    """The bytes of the values a unit reads from its neighbours and hands on (its activations and outputs)."""
    return sum(t.nbytes for t in spec.inputs if t.role != "weight") + sum(t.nbytes for t in spec.outputs)


def _evicted_twin(item: Item, evict_bytes: int) -> Item:
    """The same unit graph, timed after the model's traffic between its uses (dbench.worker.evict)."""
    tag = {**item.spec.attrs[PREDICT_ATTR], "timing": EVICTED, "warm": item.spec.id}
    graph_id = f"{item.spec.id}.{EVICTED}"
    spec = replace(
        item.spec,
        id=graph_id,
        kernel_id=graph_id,
        attrs={**item.spec.attrs, PREDICT_ATTR: tag, EVICT_ATTR: evict_bytes},
    )
    return Item(spec, item.load, item.contract, item.unsupported)


def _ops_text(prepared: Prepared, unit: Unit, layers: dict[str, ExecutedLayer]) -> str:
    """The unit's first ops (its nodes', or an inserted layer's own), as its graph id shows them."""
    ops = list(dict.fromkeys(prepared.structure.nodes[i].op_type for i in unit.nodes)) or [
        layers[name].op_type.rpartition(":")[2] for name in unit.layers
    ]
    text = "-".join(ops[:OPS_IN_ID]) + (f"+{len(ops) - OPS_IN_ID}" if len(ops) > OPS_IN_ID else "")
    return re.sub(r"[^A-Za-z0-9_+-]", "_", text)


def _with_weights(model: onnx.ModelProto, ranges: dict[str, tuple[float, float]]) -> onnx.ModelProto:
    """A unit graph with the draw ranges of the model's weights stored without data that it reads."""
    reads = {i.name for i in model.graph.input}
    drawn = {name: list(r) for name, r in ranges.items() if name in reads}
    if drawn:
        model.metadata_props.add(key=RANDOM_WEIGHTS, value=json.dumps(drawn))
    return model


def _unread(graph_id: str, prepared: Prepared) -> GraphSpec:
    return GraphSpec(
        id=graph_id,
        kernel_id=graph_id,
        family=UNIT_FAMILY,
        op=UNIT_FAMILY,
        params={"file": prepared.path.name},
        suites=("user",),
        apps=(prepared.loaded.name,),
        pass_name="fwd",
        form=UNIT_FAMILY,
        precision="fp32",
        flops=0,
        flops_executed=0,
        inputs=(),
        outputs=(),
        seed=default_seed(graph_id),
    )


def _unit_spec(
    graph_id: str, model: onnx.ModelProto, types, prepared: Prepared, tag: dict[str, Any], precision: str
) -> GraphSpec:
    """The spec of a unit graph, as for a foreign model, named and tagged as a unit, in the whole
    model's precision (a QuantizeLinear alone is part of an int8 model, and verified as such), except a
    weight-only model's unit, which is in its own (int4 where it holds 4-bit weights, its float precision
    where it holds none: an attention product reads no weights); the catalog kernels of its nodes
    (DeepBench's families) are listed in its tag."""
    loaded = LoadedModel(graph_id, prepared.path, model, True, shaped(model, types))
    extraction = extract(loaded)
    spec = foreign_spec(loaded, extraction, graph_id)
    kernels = [k.kernel.id for k in extraction.kernels for _ in range(k.copies)]
    return replace(
        spec,
        family=UNIT_FAMILY,
        op=UNIT_FAMILY,
        form=UNIT_FAMILY,
        apps=(prepared.loaded.name,),
        precision=spec.precision if precision in WEIGHT_ONLY_COMPUTE else precision,
        attrs={**spec.attrs, PREDICT_ATTR: {**tag, "kernels": kernels}},
    )


@dataclass(frozen=True)
class UnitGraphs:
    """The graphs a prediction times besides the model: the empty graph, then one per distinct unit;
    `cut` is the model's partition, `layout` each unit's graph id ("" for inserted or folded units)."""

    identity: Identity
    cut: Cut
    layout: tuple[str, ...]
    items: tuple[Item, ...]

    def model_tag(self) -> dict[str, Any]:
        """What the whole model's row records of the cut: every unit, its graph, nodes and layers."""
        names = self.cut.names
        units = [
            {"graph": graph, "kind": unit.kind, "nodes": [names[i] for i in unit.nodes], "layers": list(unit.layers)}
            for unit, graph in zip(self.cut.units, self.layout)
        ]
        graphs = sum(1 for item in self.items if tag_of(item)["role"] == UNIT and not tag_of(item).get("timing"))
        return self.identity.tag(MODEL, units=units, graphs=graphs)


def unit_graphs(prepared: Prepared, executed: ExecutedGraph, identity: Identity, precision: str) -> UnitGraphs:
    """Cut the model by the runtime's layers and make one graph per distinct timed unit (the model's
    nodes, or a layer the runtime inserted as itself), each in the model's `precision`."""
    model_cut = cut(prepared.structure, executed)
    layers = {layer.name: layer for layer in executed.layers}
    types = {**value_types(prepared.loaded.model), **value_types(prepared.loaded.shapes)}
    ranges = random_weights(prepared.loaded.model)
    groups: dict[str, list[int]] = {}
    models: dict[str, onnx.ModelProto] = {}
    failures: dict[int, str] = {}
    timed_as: dict[str, str] = {}
    for index, unit in enumerate(model_cut.units):
        if unit.kind == INSERTED:  # timed as itself where a graph can express it, else shown with its time in the model
            inserted = inserted_model(prepared.loaded.model, types, layers[unit.layers[0]])
            if inserted is not None:
                key = signature(inserted)
                groups.setdefault(key, []).append(index)
                models.setdefault(key, inserted)
            continue
        if unit.kind not in TIMED_KINDS:
            continue
        try:
            graph = unit_model(prepared.loaded.model, types, prepared.structure, unit, f"unit{index}")
        except UnsupportedError as why:
            failures[index] = str(why)
            groups[f"unsupported {index}"] = [index]
            continue
        layer = layers.get(unit.layers[0]) if len(unit.layers) == 1 else None
        as_executed = executed_model(graph, layer) if layer is not None else None
        graph = _with_weights(as_executed or graph, ranges)
        key = signature(graph)
        groups.setdefault(key, []).append(index)
        models.setdefault(key, graph)
        if as_executed is not None:
            timed_as[key] = f"{layer.op_type} on {CHANNELS_LAST}"
    total = len(groups)
    layout = [""] * len(model_cut.units)
    items = []
    names = model_cut.names
    for number, (key, indices) in enumerate(groups.items(), start=1):
        first = model_cut.units[indices[0]]
        graph_id = f"{identity.model}.u{number:03d}.{_ops_text(prepared, first, layers)}"
        for index in indices:
            layout[index] = graph_id
        occurrences = [
            {"nodes": [names[i] for i in model_cut.units[i].nodes], "layers": list(model_cut.units[i].layers)}
            for i in indices
        ]
        tag = identity.tag(
            UNIT,
            kind=first.kind,
            count=len(indices),
            graphs=total,
            occurrences=occurrences,
            timed_as=timed_as.get(key, ""),
            **({"content": key} if key in models else {}),
        )
        if key not in models:
            spec = replace(_unread(graph_id, prepared), precision=precision, attrs={PREDICT_ATTR: tag})
            items.append(Item(spec, lambda: (b"", None), UNITS, unsupported=failures[indices[0]]))
            continue
        graph = models[key]
        graph.graph.name = graph_id
        try:
            spec = _unit_spec(graph_id, graph, types, prepared, tag, precision)
        except UnsupportedError as why:
            items.append(
                Item(
                    replace(_unread(graph_id, prepared), precision=precision, attrs={PREDICT_ATTR: tag}),
                    lambda: (b"", None),
                    UNITS,
                    unsupported=str(why),
                )
            )
            continue
        spec = replace(
            spec,
            attrs={
                **spec.attrs,
                PREDICT_ATTR: {
                    **spec.attrs[PREDICT_ATTR],
                    "weight_bytes": _weight_bytes(graph, spec, types),
                    "io_bytes": _io_bytes(spec),
                },
            },
        )
        items.append(Item(spec, lambda graph=graph: (graph.SerializeToString(), None), UNITS))
    return UnitGraphs(identity, model_cut, tuple(layout), tuple(_with_evicted(identity, items)))


def _with_evicted(identity: Identity, units: list[Item]) -> list[Item]:
    """The empty graph, then each unit, each unit that reads weights followed by its evicted twin; and the
    evicted empty graph. The eviction reads the model's traffic between two uses of a unit: every weight of
    the model and every value its units hand on (each occurrence's), recorded in every unit's tag
    (`evict_bytes`). A unit without weights has no twin: its time in the model's state is its warm time
    (its weight share is 0, dbench.units.prediction.in_model_state), so timing it evicted would buy nothing."""
    timed = [u for u in units if not u.unsupported]
    traffic = sum(
        tag_of(u)["count"] * (tag_of(u)["weight_bytes"] + sum(t.nbytes for t in u.spec.outputs)) for u in timed
    )
    items = [empty_item(identity)]
    for unit in units:
        if unit.unsupported:
            items.append(unit)
            continue
        warm = Item(
            replace(unit.spec, attrs={**unit.spec.attrs, PREDICT_ATTR: {**tag_of(unit), "evict_bytes": traffic}}),
            unit.load,
            unit.contract,
        )
        items += [warm, _evicted_twin(warm, traffic)] if tag_of(unit)["weight_bytes"] else [warm]
    return items + ([empty_item(identity, traffic)] if timed else [])


def tag_of(item: Item) -> dict[str, Any]:
    """The item's prediction tag (its role, model, count, ...)."""
    return item.spec.attrs[PREDICT_ATTR]


def model_identity(path: Path, dims: dict[str, int], runtime: str, settings: dict[str, Any]) -> Identity:
    """The identity of a prediction of the model file at `path` on a runtime with these settings."""
    return Identity(Path(path).stem, sha256(Path(path).read_bytes()), dict(dims), runtime, dict(settings))


def tagged_model_item(item: Item, graphs: UnitGraphs) -> Item:
    """The whole model's item carrying the cut in its spec (the report reads the units from its row)."""
    spec = replace(item.spec, attrs={**item.spec.attrs, PREDICT_ATTR: graphs.model_tag()})
    return Item(spec, item.load, item.contract, item.unsupported)
