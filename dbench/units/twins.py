"""Which units of an fp32 model and of its quantized twin do the same work, from their two cuts alone.

A quantizer keeps the fp32 model's node names (QDQ: the Conv stays `/0/Conv`, Q and DQ nodes are added
around it) or at least the names of the values one layer hands the next (dynamic int8: `/0/Gemm`
becomes MatMulInteger, Cast, Mul and Add, the Add still writing `/0/Gemm_output_0`). So two unit
occurrences are twins when they share a node name or a value they write; a twin is a connected group
of them (one fp32 unit and one quantized unit, or several a side where the runtimes fused differently).
A unit that shares nothing with the other model has no twin: the input's QuantizeLinear, a layer the
runtime inserted."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CutSide:
    """One model's cut as its prediction run recorded it: each timed unit occurrence's graph id and node
    names, and what each node of the model writes."""

    graphs: tuple[str, ...]
    nodes: tuple[tuple[str, ...], ...]
    writes: dict[str, tuple[str, ...]]
    """Node name -> the values it writes."""

    def written(self, index: int) -> set[str]:
        """The values the occurrence's nodes write."""
        return {value for node in self.nodes[index] for value in self.writes.get(node, ())}


@dataclass(frozen=True)
class Twin:
    """A group of fp32 unit occurrences and the quantized ones that do their work (indices into each CutSide)."""

    fp32: tuple[int, ...]
    quantized: tuple[int, ...]

    def label(self, fp32: CutSide) -> str:
        """The fp32 nodes it covers, e.g. `/0/Conv+/1/Relu` (the first three, then how many more)."""
        names = [n for i in self.fp32 for n in fp32.nodes[i]]
        return "+".join(names[:3]) + (f" (+{len(names) - 3})" if len(names) > 3 else "")


@dataclass(frozen=True)
class Pairing:
    """The twins, in the fp32 model's order, and the occurrences of each side with none."""

    twins: tuple[Twin, ...]
    fp32_alone: tuple[int, ...]
    quantized_alone: tuple[int, ...]


def pair_units(fp32: CutSide, quantized: CutSide) -> Pairing:
    """Group the occurrences of both cuts that share a node name or a written value (module docstring)."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(key: tuple[str, int]) -> tuple[str, int]:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    owner: dict[str, int] = {}
    for i, nodes in enumerate(fp32.nodes):
        for node in nodes:
            owner[f"node {node}"] = i
        for value in fp32.written(i):
            owner[f"value {value}"] = i
    for j, nodes in enumerate(quantized.nodes):
        keys = [f"node {node}" for node in nodes] + [f"value {value}" for value in quantized.written(j)]
        for key in keys:
            if key in owner:
                parent[find(("q", j))] = find(("f", owner[key]))
    groups: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    for i in range(len(fp32.nodes)):
        groups.setdefault(find(("f", i)), ([], []))[0].append(i)
    for j in range(len(quantized.nodes)):
        groups.setdefault(find(("q", j)), ([], []))[1].append(j)
    twins = [Twin(tuple(f), tuple(q)) for f, q in groups.values() if f and q]
    return Pairing(
        tuple(sorted(twins, key=lambda t: t.fp32[0])),
        tuple(i for f, q in groups.values() if not q for i in f),
        tuple(j for f, q in groups.values() if not f for j in q),
    )
