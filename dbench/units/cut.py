"""Cut a model into the units a runtime executes, from the runtime's own report (dbench.executed), so
that every node of the model lands in exactly one unit.

1. A layer claims the nodes its sources name (a node's name, or a tensor's: the node writing it; a
   name `a/b` that names neither is tried as `a`).
   A layer whose op is not among the nodes it names (ONNX Runtime names a fused convolution after the
   Relu whose output it writes) claims the node of its op that those nodes alone read from.
2. Where layers read and write the model's own tensors (ONNX Runtime), a layer also claims the nodes
   between the model tensors it reads and those it writes, looked through the layers the runtime
   inserted to move data (a reorder to its blocked layout and back): e.g. a Gemm that fused a MatMul
   and its bias Add, whose Reshapes carry new names. Where that slice would run past what the layer
   reads, only the writers of its outputs are claimed.
3. Layers that claim a node in common are one unit (a node is never split between two).
4. A node no layer claims joins the unit of the producer whose output it alone reads (a fused
   epilogue: the Add and Relu a convolution absorbed), else the unit all its readers are in (a
   fused prologue: the parts of a GELU), checked against the runtime's edges where it has them (a
   unit that reads another's output holds a layer that reads one of that unit's layers). A
   DequantizeLinear of computed data goes with its readers, as quantised runtimes fuse it into each.
5. What is left: nodes of static values make the `folded` unit (computed when the runtime loads the
   model); any other node joins its producer's unit, else its readers', else stands alone (`unmatched`).
6. Units that feed each other in a cycle are merged, so that every unit is a contiguous piece of
   the model. A layer that claims no node but computes (an op the runtime made, such as OpenVINO's
   LSTMSequence for an ONNX LSTM) belongs to the unit of the layers it feeds, when they are one;
   the other layers that claim no node are `inserted` units of their own (reorders, conversions).
"""

from __future__ import annotations

from dataclasses import dataclass

from dbench.executed import ExecutedGraph
from dbench.units.structure import Structure

EXECUTED = "executed"
"""Nodes the runtime runs as one or more layers: timed in isolation."""
INSERTED = "inserted"
"""A layer the runtime added (a reorder, a conversion): no node of the model, timed only inside it."""
FOLDED = "folded"
"""Nodes of static values the runtime computes once, when it loads the model: no time per call."""
UNMATCHED = "unmatched"
"""Nodes no layer accounts for and no neighbour takes: timed in isolation, with no time inside the model."""
SLICE_LIMIT = 10_000
MAIN_OP_DEPTH = 3
"""How far back a layer looks for the node of its own op (a convolution behind the Add and Relu it fused)."""
DEQUANTIZE = "DequantizeLinear"


@dataclass(frozen=True)
class Unit:
    """A piece of the model that the runtime executes as its `layers`: the nodes it owns (indices in
    graph order) and the nodes its own graph repeats although another unit owns them (a
    DequantizeLinear the runtime fuses into each of its readers)."""

    kind: str
    nodes: tuple[int, ...]
    layers: tuple[str, ...]
    borrowed: tuple[int, ...] = ()


@dataclass(frozen=True)
class Cut:
    """A model cut into units: every node is owned by exactly one unit."""

    runtime: str
    names: tuple[str, ...]
    units: tuple[Unit, ...]

    def __post_init__(self) -> None:
        owned = sorted(i for unit in self.units for i in unit.nodes)
        if owned != list(range(len(self.names))):
            raise AssertionError(f"the cut owns nodes {owned[:10]}... instead of each of {len(self.names)} nodes once")

    def unit_of(self) -> dict[int, int]:
        """Node index -> the index of the unit that owns it."""
        return {i: u for u, unit in enumerate(self.units) for i in unit.nodes}


class _Sets:
    """Union-find over hashable items."""

    def __init__(self) -> None:
        self.parent: dict = {}

    def find(self, item):
        self.parent.setdefault(item, item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, a, b) -> None:
        self.parent[self.find(a)] = self.find(b)


def resolve(source: str, structure: Structure) -> int | None:
    """The node a source name stands for: a node of that name, else the writer of a tensor of that
    name; `a/b/c` that names neither is tried as `a/b`, then `a` (a runtime's `conv1/WithoutBiases`)."""
    name = source
    while name:
        if name in structure.index:
            return structure.index[name]
        if name in structure.producer:
            return structure.producer[name]
        name = name.rsplit("/", 1)[0] if "/" in name else ""
    return None


class _Layers:
    """The executed layers with their claims and the edges between them."""

    def __init__(self, executed: ExecutedGraph, structure: Structure) -> None:
        self.layers = list(executed.layers)
        self.structure = structure
        self.claims: list[set[int]] = []
        for layer in self.layers:  # a constant or a graph side names what it holds, not what it runs
            nodes = {resolve(s, structure) for s in layer.sources} if layer.executes else set()
            self.claims.append({n for n in nodes if n is not None})
        self.transparent = {k for k, layer in enumerate(self.layers) if layer.moves_data and not self.claims[k]}
        self.writer = {t: k for k, layer in enumerate(self.layers) for t in layer.outputs}
        if executed.tensor_names:
            self._claim_by_tensors()
        self._claim_main_ops()
        self.feeds = [self._feeding(k) for k in range(len(self.layers))]

    def _claim_main_ops(self) -> None:
        """Step 1b: a layer of an op its claimed nodes lack (ONNX Runtime's `y_nchwc` Conv names the Relu
        whose output it writes) claims the node of that op its claimed nodes alone read from, within
        MAIN_OP_DEPTH private edges, with the nodes between."""
        s = self.structure
        taken = set().union(*self.claims) if self.claims else set()
        for k, layer in enumerate(self.layers):
            op = layer.op_type.rsplit(":", 1)[-1]
            if not self.claims[k] or op in {s.nodes[i].op_type for i in self.claims[k]}:
                continue
            paths = [(i, ()) for i in sorted(self.claims[k])]
            for _ in range(MAIN_OP_DEPTH):
                found, step = None, []
                for i, path in paths:
                    for t in s.dynamic_reads(i):
                        p = s.producer.get(t)
                        if p is None or p in taken or s.readers.get(t) != [i]:
                            continue
                        if s.nodes[p].op_type == op:
                            found = (*path, p)
                            break
                        step.append((p, (*path, p)))
                    if found:
                        break
                if found:
                    self.claims[k] |= set(found)
                    taken |= set(found)
                    break
                paths = step

    def _through(self, tensor: str, seen: set[str]) -> set[int]:
        """The non-transparent layers whose output reaches `tensor` (through transparent layers)."""
        if tensor in seen:
            return set()
        seen.add(tensor)
        k = self.writer.get(tensor)
        if k is None:
            return set()
        if k in self.transparent:
            return self._through(self.layers[k].inputs[0], seen) if self.layers[k].inputs else set()
        return {k}

    def _feeding(self, k: int) -> set[int]:
        seen: set[str] = set()
        return {p for t in self.layers[k].inputs for p in self._through(t, seen)}

    def _claim_by_tensors(self) -> None:
        """Step 2: claims from the model tensors a layer reads and writes, through transparent layers."""
        s = self.structure
        same = _Sets()
        for k in self.transparent:
            layer = self.layers[k]
            for out in layer.outputs:
                if layer.inputs:
                    same.union(layer.inputs[0], out)
        classes: dict = {}
        for t in s.tensors:
            classes.setdefault(same.find(t), set()).add(t)
        originals = lambda t: classes.get(same.find(t), set()) if t else set()  # noqa: E731
        named = {n: k for k, claims in enumerate(self.claims) for n in claims}
        for k, layer in enumerate(self.layers):
            if k in self.transparent:
                continue
            read = {o for t in layer.inputs for o in originals(t)}
            written = {o for t in layer.outputs for o in originals(t) if o in s.producer}
            if not written:
                continue
            taken = {n for n, owner in named.items() if owner != k}
            between = _slice(s, written, read, taken)
            self.claims[k] |= between if between is not None else {s.producer[t] for t in written}


def _slice(s: Structure, written: set[str], read: set[str], taken: set[int]) -> set[int] | None:
    """The nodes between tensors `read` and `written`, or None when they are not bounded by `read`
    (the walk back reaches a graph input the layer does not read, or a node another layer names)."""
    todo = [s.producer[t] for t in written]
    found: set[int] = set()
    while todo:
        i = todo.pop()
        if i in found:
            continue
        if i in taken or len(found) > SLICE_LIMIT:
            return None
        found.add(i)
        for t in s.reads[i]:
            if t in read or t in s.static:
                continue
            if t not in s.producer:
                return None
            todo.append(s.producer[t])
    return found


def _strongly_connected(edges: dict[int, set[int]]) -> list[list[int]]:
    """Tarjan's strongly connected components, iteratively (models have thousands of nodes)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    components = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                components.append(component)
    return components


class _Assignment:
    """Nodes to groups (a group: layers that share a node), grown by steps 3-6."""

    def __init__(self, structure: Structure, layers: _Layers) -> None:
        self.s = structure
        self.layers = layers
        groups = _Sets()
        shared: dict[int, int] = {}
        for k, claims in enumerate(layers.claims):
            groups.find(("layer", k))
            for n in claims:
                if self._repeated(n):  # each reader's layer repeats it: it joins the first, never merges them
                    shared.setdefault(n, k)
                else:
                    groups.union(("node", n), ("layer", k))
        self.owner: dict[int, object] = {
            n: groups.find(("node", n)) for claims in layers.claims for n in claims if not self._repeated(n)
        }
        self.owner.update({n: groups.find(("layer", k)) for n, k in shared.items()})
        self.group_layers: dict[object, set[int]] = {}
        for k, claims in enumerate(layers.claims):
            if claims:
                self.group_layers.setdefault(groups.find(("layer", k)), set()).add(k)
        self.adopted = self._adopt({k: groups.find(("layer", k)) for k, claims in enumerate(layers.claims) if claims})

    def _adopt(self, group_of: dict[int, object]) -> set[int]:
        """Layers that compute but name nothing of the model (an op a runtime's own pass made, such as
        OpenVINO's LSTMSequence for an ONNX LSTM) join the unit every layer they feed is in."""
        adopted = set()
        for k, layer in enumerate(self.layers.layers):
            if k in group_of or layer.moves_data or not layer.executes:
                continue
            readers = {
                group_of.get(j)
                for j, feeds in enumerate(self.layers.feeds)
                if k in feeds and self.layers.layers[j].executes and j not in self.layers.transparent
            }
            if len(readers) == 1 and None not in readers:
                self.group_layers[readers.pop()].add(k)
                adopted.add(k)
        return adopted

    def _repeated(self, i: int) -> bool:
        """A DequantizeLinear of computed data: quantised runtimes fuse it into each of its readers."""
        return self.s.nodes[i].op_type == DEQUANTIZE and not self.s.static_node(i)

    def _connected(self, producer_group, consumer_group) -> bool:
        """Whether a layer of `consumer_group` reads from a layer of `producer_group` (True where either has none)."""
        producers = self.group_layers.get(producer_group)
        consumers = self.group_layers.get(consumer_group)
        if not producers or not consumers:
            return True
        return any(self.layers.feeds[k] & producers for k in consumers)

    def _consistent(self, i: int, group) -> bool:
        """Whether node `i` may join `group`: every unit it reads from feeds a layer of that group."""
        for t in self.s.dynamic_reads(i):
            p = self.s.producer.get(t)
            if p is None or p not in self.owner or self.owner[p] == group:
                continue
            if not self._connected(self.owner[p], group):
                return False
        return True

    def _epilogue(self, i: int) -> bool:
        candidates = []
        for t in self.s.dynamic_reads(i):
            p = self.s.producer.get(t)
            if p is not None and p in self.owner and self.s.readers.get(t) == [i]:
                candidates.append(self.owner[p])
        fitting = list(dict.fromkeys(g for g in candidates if self._consistent(i, g)))
        if len(fitting) == 1:
            self.owner[i] = fitting[0]
            return True
        return False

    def _prologue(self, i: int) -> bool:
        readers = self.s.consumers(i)
        if not readers or any(r not in self.owner for r in readers):
            return False
        groups = list(dict.fromkeys(self.owner[r] for r in readers))
        if len(groups) == 1 and self._consistent(i, groups[0]):
            self.owner[i] = groups[0]
            return True
        if self._repeated(i):
            self.owner[i] = groups[0]  # its other readers' graphs repeat it (`borrowed`)
            return True
        return False

    def propagate(self) -> None:
        """Step 4, until nothing changes."""
        order = range(len(self.s.nodes))
        changed = True
        while changed:
            changed = False
            for i in order:
                if i not in self.owner and not self._repeated(i) and self._epilogue(i):
                    changed = True
            for i in reversed(order):
                if i not in self.owner and self._prologue(i):
                    changed = True

    def leftovers(self) -> None:
        """Step 5: static nodes to the folded group; the rest to a neighbour's group or their own."""
        for i in range(len(self.s.nodes)):
            if i not in self.owner and self.s.static_node(i):
                self.owner[i] = FOLDED
        changed = True
        while changed:
            changed = False
            for i in range(len(self.s.nodes)):
                if i in self.owner:
                    continue
                producers = [
                    self.owner[p]
                    for t in self.s.dynamic_reads(i)
                    if (p := self.s.producer.get(t)) is not None and p in self.owner
                ]
                readers = [self.owner[r] for r in self.s.consumers(i) if r in self.owner]
                if producers or readers:
                    self.owner[i] = (producers or readers)[0]
                    changed = True
        for i in range(len(self.s.nodes)):
            self.owner.setdefault(i, ("alone", i))

    def merge_cycles(self) -> None:
        """Step 6: groups that feed each other in a cycle become one."""
        edges: dict[object, set[object]] = {}
        for i in range(len(self.s.nodes)):
            group = self.owner[i]
            if group == FOLDED:
                continue
            edges.setdefault(group, set())
            for t in self.s.dynamic_reads(i):
                p = self.s.producer.get(t)
                if p is not None and self.owner[p] not in (group, FOLDED):
                    edges.setdefault(self.owner[p], set()).add(group)
        keys = list(edges)
        numbered = {g: n for n, g in enumerate(keys)}
        components = _strongly_connected({numbered[g]: {numbered[h] for h in targets} for g, targets in edges.items()})
        for component in components:
            if len(component) < 2:
                continue
            target = keys[component[0]]
            merged = {keys[n] for n in component}
            for i, group in self.owner.items():
                if group in merged:
                    self.owner[i] = target
            self.group_layers[target] = set().union(*(self.group_layers.get(g, set()) for g in merged))
            for g in merged - {target}:
                self.group_layers.pop(g, None)


def _borrowed(structure: Structure, owner: dict[int, object]) -> dict[object, set[int]]:
    """For each group, the DequantizeLinear nodes of computed data it reads but another group owns."""
    borrowed: dict[object, set[int]] = {}
    for i, node in enumerate(structure.nodes):
        if node.op_type != DEQUANTIZE or structure.static_node(i):
            continue
        for r in structure.consumers(i):
            if owner[r] != owner[i]:
                borrowed.setdefault(owner[r], set()).add(i)
    return borrowed


def cut(structure: Structure, executed: ExecutedGraph) -> Cut:
    """The units of the model as `executed` runs it (steps 1-6 above)."""
    layers = _Layers(executed, structure)
    assignment = _Assignment(structure, layers)
    assignment.propagate()
    assignment.leftovers()
    assignment.merge_cycles()
    owner = assignment.owner
    borrowed = _borrowed(structure, owner)
    members: dict[object, list[int]] = {}
    for i in range(len(structure.nodes)):
        members.setdefault(owner[i], []).append(i)
    units = []
    for group, nodes in members.items():
        ks = sorted(assignment.group_layers.get(group, set()))
        names = tuple(layers.layers[k].name for k in ks)
        if group == FOLDED:
            kind = FOLDED
        elif any(layers.layers[k].executes for k in ks):
            kind = EXECUTED
        elif all(structure.static_node(i) for i in nodes):
            kind = FOLDED
        else:
            kind = UNMATCHED
        units.append(Unit(kind, tuple(nodes), names, tuple(sorted(borrowed.get(group, ())))))
    inserted = [
        Unit(INSERTED, (), (layer.name,))
        for k, layer in enumerate(layers.layers)
        if not layers.claims[k] and layer.executes and k not in assignment.adopted
    ]
    folded = [u for u in units if u.kind == FOLDED]
    rest = sorted((u for u in units if u.kind != FOLDED), key=lambda u: u.nodes[0])
    merged_folded = (
        [Unit(FOLDED, tuple(sorted(i for u in folded for i in u.nodes)), tuple(n for u in folded for n in u.layers))]
        if folded
        else []
    )
    return Cut(executed.runtime, tuple(structure.names), tuple(rest + inserted + merged_folded))
