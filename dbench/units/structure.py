"""A model's graph as the cut reads it: its nodes under the names dbench gives them, who writes and who
reads every tensor (a control-flow node reads what its bodies read from outside), and which tensors
are static: known before any input is seen (weights, constants, shapes of bound inputs, and whatever is
computed from those alone), so a runtime folds them when it loads the model."""

from __future__ import annotations

from functools import cached_property

import onnx

from dbench.frommodel.extract import node_names

RANDOM_OPS = {"RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli", "Multinomial"}
"""Ops that draw new values on every call: never static, whatever their inputs."""
SHAPE_READERS = {"Shape", "Size"}
"""Ops that read only their input's shape, which is known once the dimensions are bound."""


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [g for a in node.attribute for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs)]


def outer_reads(graph: onnx.GraphProto) -> list[str]:
    """The tensors a (sub)graph reads from outside itself, in order of first use."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    reads: list[str] = []
    for node in graph.node:
        for name in [*node.input, *(n for g in _subgraphs(node) for n in outer_reads(g))]:
            if name and name not in defined:
                reads.append(name)
        defined.update(o for o in node.output if o)
    return list(dict.fromkeys(reads))


def node_reads(node: onnx.NodeProto) -> tuple[str, ...]:
    """Every tensor a node reads: its inputs and what its bodies read from the enclosing graph."""
    return tuple(dict.fromkeys([*(n for n in node.input if n), *(n for g in _subgraphs(node) for n in outer_reads(g))]))


def name_nodes(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with every main-graph node named as dbench names it (its own name where it has a unique
    one, `<op>_<index>` or `<name>_<index>` otherwise), in place: a runtime then names its layers
    after the same names the cut reads."""
    for node, name in zip(model.graph.node, node_names(model.graph.node)):
        node.name = name
    return model


class Structure:
    """Nodes, tensors and static values of a model's main graph. `constants`: graph inputs that the
    run makes constants (weights stored without data, drawn at run time); `shaped`: tensors whose
    shape is fully known (shape inference with the dimensions bound)."""

    def __init__(
        self, graph: onnx.GraphProto, constants: frozenset[str] = frozenset(), shaped: frozenset[str] = frozenset()
    ) -> None:
        self.graph = graph
        self.nodes = list(graph.node)
        self.names = node_names(self.nodes)
        self.index = {name: i for i, name in enumerate(self.names)}
        self.producer = {t: i for i, node in enumerate(self.nodes) for t in node.output if t}
        self.reads = [node_reads(node) for node in self.nodes]
        self.readers: dict[str, list[int]] = {}
        for i, reads in enumerate(self.reads):
            for t in reads:
                self.readers.setdefault(t, []).append(i)
        self.inputs = [i.name for i in graph.input]
        self.outputs = [o.name for o in graph.output]
        self.initializers = {t.name for t in graph.initializer} | set(constants)
        self.shaped = shaped

    @cached_property
    def tensors(self) -> set[str]:
        """Every tensor name of the main graph: inputs, initializers and node outputs."""
        return set(self.inputs) | self.initializers | set(self.producer)

    @cached_property
    def static(self) -> set[str]:
        """Tensors known before any input is seen (nodes are in topological order, as ONNX requires)."""
        static = set(self.initializers)
        for node in self.nodes:
            if node.op_type in RANDOM_OPS or _subgraphs(node):
                continue
            if all(
                not t or t in static or (node.op_type in SHAPE_READERS and k == 0 and t in self.shaped)
                for k, t in enumerate(node.input)
            ):
                static.update(o for o in node.output if o)
        return static

    def static_node(self, i: int) -> bool:
        """Whether node `i` computes only static tensors (the runtime can fold it at load)."""
        outputs = [o for o in self.nodes[i].output if o]
        return bool(outputs) and all(o in self.static for o in outputs)

    def dynamic_reads(self, i: int) -> list[str]:
        """The tensors node `i` reads that are not static (what it needs from the call's data)."""
        return [t for t in self.reads[i] if t not in self.static]

    def consumers(self, i: int) -> list[int]:
        """The nodes reading any output of node `i`, in graph order."""
        return sorted({r for o in self.nodes[i].output if o for r in self.readers.get(o, [])})
