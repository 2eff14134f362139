"""Structure of every graph the catalog yields, in every suite, precision, pass and form: each
declared input is read by some node (a runtime may drop an unread input and then refuse its feed),
and the model declares exactly the spec's inputs and outputs."""

from __future__ import annotations

import onnx
import pytest

from dbench.catalog import load_catalog
from dbench.errors import UnsupportedError
from dbench.gen.options import GenOptions
from dbench.gen.plan import build, plan

EVERY_SUITE = ("train", "inference_server", "inference_device")
# Two option sets per float precision reach every GEMM, RNN and GRU form; int8 in each form, padded or not.
OPTIONS = [
    *(
        GenOptions(precision=p, gemm_form=g, rnn_form=r, gru_activation=a)
        for p in ("fp32", "fp16", "bf16")
        for g, r, a in (("gemm", "op", "tanh"), ("matmul", "recurrence", "relu"))
    ),
    *(
        GenOptions(precision="int8", int8_form=f, int8_pad=pad)
        for f in ("qlinear", "qdq", "integer")
        for pad in (True, False)
    ),
]


def read_names(graph: onnx.GraphProto) -> set[str]:
    """Every tensor name a node of the graph reads, including nodes of nested graphs (Loop bodies
    read outer-scope tensors by name)."""
    names: set[str] = set()
    for node in graph.node:
        names.update(node.input)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                names |= read_names(attr.g)
    return names


@pytest.mark.parametrize(
    "options",
    OPTIONS,
    ids=lambda o: (
        f"{o.precision}-{o.gemm_form}-{o.rnn_form}-{o.gru_activation}"
        + (f"-{o.int8_form}-pad{int(o.int8_pad)}" if o.precision == "int8" else "")
    ),
)
def test_every_declared_input_is_read(options):
    built = 0
    for request in plan(load_catalog(), EVERY_SUITE, options):
        try:
            graph = build(request)
        except UnsupportedError:
            continue
        declared = [i.name for i in graph.model.graph.input]
        assert declared == [t.name for t in graph.spec.inputs], graph.id
        assert [o.name for o in graph.model.graph.output] == [t.name for t in graph.spec.outputs], graph.id
        unread = set(declared) - read_names(graph.model.graph)
        assert not unread, f"{graph.id} declares inputs no node reads: {sorted(unread)}"
        built += 1
    assert built > 100
