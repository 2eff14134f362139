"""The Graph: a kernel in one precision, pass and form, as an ONNX model plus everything needed to
feed, verify and account for it on another machine (its GraphSpec, written to the manifest)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper

from dbench.gen.precision import DTYPES, ONNX_TYPES, PACKED_BITS

# Pinned so that ONNX Runtime >= 1.18, OpenVINO >= 2024.4 and TensorRT 10/11 all load every graph:
# opset 22 is the first with bfloat16 Conv/ConvTranspose; IR 10 is what onnx 1.17 (opset 22) writes.
OPSET = 22
IR_VERSION = 10
IR_FOR_OPSET = {23: 11}
"""The IR version onnx writes for an ONNX opset newer than OPSET (onnx 1.18 and later: opset 23, IR 11)."""
PRODUCER = "dbench"
MODEL_FAMILY = "model"
"""The `family` of a whole foreign model run as one graph (no kernel family: dbench.sources.model_spec)."""


TOUCHED_BYTES = "touched_bytes"
"""GraphSpec.attrs key of a graph that reads only part of an input (an embedding gather reads its tokens'
rows, not the table): the bytes it moves at least, which min_bytes gives instead of every input's size."""

EVICT_ATTR = "evict_bytes"
"""GraphSpec.attrs key of a graph timed in the cache state a model leaves it (`dbench predict`'s evicted
units): the bytes the worker reads between its timed calls (dbench.worker.evict); absent: ordinary timing."""


@dataclass(frozen=True)
class TensorSpec:
    """A graph input or output: name, shape, dtype name, role, and how feeds are drawn for it.

    Float feeds are uniform in [low, high]; integer feeds uniform over the integers in [low, high];
    `zeros` is the fraction of elements set to zero (sparse weights)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str
    low: float = -1.0
    high: float = 1.0
    zeros: float = 0.0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes as stored: a 4-bit tensor packs two values a byte."""
        if self.dtype in PACKED_BITS:
            return -(-self.size * PACKED_BITS[self.dtype] // 8)
        return self.size * DTYPES[self.dtype].itemsize

    def value_info(self) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(self.name, ONNX_TYPES[self.dtype], list(self.shape))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TensorSpec:
        return cls(**{**data, "shape": tuple(data["shape"])})


@dataclass(frozen=True)
class GraphSpec:
    """Everything about one graph except the ONNX bytes; one manifest entry.

    `flops` is DeepBench's count for the kernel; `flops_executed` what this graph actually computes
    (larger for forms that do extra work). `min_bytes` is the size of every input and output."""

    id: str
    kernel_id: str
    family: str
    op: str
    params: dict[str, Any]
    suites: tuple[str, ...]
    apps: tuple[str, ...]
    pass_name: str
    form: str
    precision: str
    flops: int
    flops_executed: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    seed: int
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def min_bytes(self) -> int:
        """Every input and output once, or the bytes a partial reader touches (TOUCHED_BYTES)."""
        touched = self.attrs.get(TOUCHED_BYTES)
        return touched if touched is not None else sum(t.nbytes for t in self.inputs + self.outputs)

    @property
    def weights(self) -> tuple[TensorSpec, ...]:
        return tuple(t for t in self.inputs if t.role == "weight")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["suites"], data["apps"] = list(self.suites), list(self.apps)
        data["min_bytes"] = self.min_bytes
        for key in ("inputs", "outputs"):
            for t in data[key]:
                t["shape"] = list(t["shape"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphSpec:
        data = {k: v for k, v in data.items() if k != "min_bytes"}
        data["suites"], data["apps"] = tuple(data["suites"]), tuple(data["apps"])
        data["inputs"] = tuple(TensorSpec.from_dict(t) for t in data["inputs"])
        data["outputs"] = tuple(TensorSpec.from_dict(t) for t in data["outputs"])
        return cls(**data)


@dataclass
class Graph:
    """A generated graph: its spec and its ONNX model (no weight data inside)."""

    spec: GraphSpec
    model: onnx.ModelProto

    @property
    def id(self) -> str:
        return self.spec.id


def make_model(
    name: str,
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    doc: str = "",
    opsets: Mapping[str, int] | None = None,
) -> onnx.ModelProto:
    """Nodes -> a model at the pinned opset and IR version; every tensor is a graph input, and every
    input is read by some node (a runtime may drop an unread input and then refuse its feed). `opsets`
    adds or replaces opset imports by domain (`""`: ONNX's own, e.g. 23 for its Attention op; a newer
    ONNX opset raises the IR version to the one its onnx release writes)."""
    unread = [t.name for t in inputs if t.name not in read_names(nodes)]
    if unread:
        raise ValueError(f"graph {name} declares inputs that no node reads: {', '.join(unread)}")
    graph = helper.make_graph(
        list(nodes), name, [t.value_info() for t in inputs], [t.value_info() for t in outputs], doc_string=doc
    )
    imports = {"": OPSET, **(opsets or {})}
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in imports.items()], producer_name=PRODUCER
    )
    model.ir_version = IR_VERSION if imports[""] <= OPSET else IR_FOR_OPSET[imports[""]]
    return model


def read_names(nodes: Sequence[onnx.NodeProto]) -> set[str]:
    """Every tensor name the nodes read, nested graphs included (a Loop body reads outer tensors by name)."""
    names: set[str] = set()
    for node in nodes:
        names.update(node.input)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                names |= read_names(attr.g.node)
    return names


def graph_id(kernel_id: str, pass_name: str, form: str, precision: str) -> str:
    """`<kernel id>.<pass>.<form>.<precision>`: unique per graph, safe as a file name."""
    return f"{kernel_id}.{pass_name}.{form}.{precision}"
