"""Cutting a model into the units its runtime executes: on ONNX Runtime CPU and OpenVINO CPU (their
own reports of their layers), a Conv+Relu they fuse is one unit, an unfused chain is several, every
node lands in exactly one unit and every executed layer in exactly one unit, the layers they insert
are units of their own, and each unit's graph computes what the model computes there. The cut's
rules on reports made by hand, without a runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from dbench.executed import ExecutedGraph, ExecutedLayer
from dbench.runtimes.base import RuntimeOptions
from dbench.sources.item import Item
from dbench.sources.units import model_identity, named_model_item, prepare, unit_graphs
from dbench.units.cut import EXECUTED, FOLDED, INSERTED, cut
from dbench.units.graph import unit_model, value_types
from dbench.units.structure import Structure
from dbench.worker.execution import ExecutionJob, describe_execution
from tests import model_builders as mb

RUNTIMES = ("ort-cpu", "openvino")


def conv_relu(rng) -> onnx.ModelProto:
    """Conv 3x3 + bias -> Relu: both runtimes fuse the Relu into the convolution."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    return mb.model(
        nodes,
        [mb.value("x", [1, 8, 16, 16])],
        [mb.value("y", [1, 16, 16, 16])],
        [mb.weight("w", (16, 8, 3, 3), rng), mb.weight("b", (16,), rng)],
        "conv_relu",
    )


def unfused_chain(rng) -> onnx.ModelProto:
    """Conv -> MaxPool -> Conv: neither runtime fuses a pooling between two convolutions."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["h"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["h"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2"], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    return mb.model(
        nodes,
        [mb.value("x", [1, 8, 16, 16])],
        [mb.value("y", [1, 8, 8, 8])],
        [mb.weight("w1", (8, 8, 3, 3), rng), mb.weight("w2", (8, 8, 3, 3), rng)],
        "chain",
    )


def twin_blocks(rng) -> onnx.ModelProto:
    """Two Conv+Relu blocks of the same shapes, other weights: one unit graph, counted twice."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["y"], name="relu2"),
    ]
    return mb.model(
        nodes,
        [mb.value("x", [1, 16, 12, 12])],
        [mb.value("y", [1, 16, 12, 12])],
        [mb.weight("w1", (16, 16, 3, 3), rng), mb.weight("w2", (16, 16, 3, 3), rng)],
        "twins",
    )


MODELS = {
    "conv_relu": conv_relu,
    "chain": unfused_chain,
    "twins": twin_blocks,
    "mlp": mb.mlp,
    "cnn": mb.cnn,
    "lstm": mb.lstm,
    "attention": mb.attention,
    "int8": mb.int8_qdq,
    "int8_pool": mb.int8_pool,
    "se": mb.squeeze_excite,
}
DIMS = {"mlp": {"batch": 4}, "cnn": {"n": 1}, "lstm": {"seq": 5}}


def executed(path: Path, dims: dict[str, int], runtime: str) -> ExecutedGraph:
    """The runtime's report of its layers for the model, asked in this process as the worker asks it."""
    item = named_model_item(path, dims)
    data, _ = item.load()
    answer = describe_execution(
        ExecutionJob(item.spec, data, runtime, RuntimeOptions(threads=1), "const", item.contract)
    )
    assert isinstance(answer, ExecutedGraph), answer
    return answer


def cut_of(tmp_path: Path, name: str, seed: int, runtime: str):
    path = mb.save(MODELS[name](np.random.default_rng(seed)), tmp_path, name)
    dims = DIMS.get(name, {})
    graph = executed(path, dims, runtime)
    prepared = prepare(path, dims)
    return prepared, graph, cut(prepared.structure, graph), path, dims


def by_kind(model_cut, kind: str) -> list[list[str]]:
    return [[model_cut.names[i] for i in unit.nodes] for unit in model_cut.units if unit.kind == kind]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_fused_conv_relu_is_one_unit(tmp_path, seed, runtime):
    _, _, model_cut, _, _ = cut_of(tmp_path, "conv_relu", seed, runtime)
    assert by_kind(model_cut, EXECUTED) == [["conv", "relu"]]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_unfused_chain_is_several_units(tmp_path, seed, runtime):
    _, _, model_cut, _, _ = cut_of(tmp_path, "chain", seed, runtime)
    assert by_kind(model_cut, EXECUTED) == [["conv1"], ["pool"], ["conv2"]]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_node_and_every_executed_layer_lands_in_exactly_one_unit(tmp_path, seed, runtime, name):
    prepared, graph, model_cut, _, _ = cut_of(tmp_path, name, seed, runtime)
    owned = sorted(i for unit in model_cut.units for i in unit.nodes)
    assert owned == list(range(len(prepared.structure.nodes)))
    placed = [layer for unit in model_cut.units for layer in unit.layers]
    running = [layer.name for layer in graph.layers if layer.executes]
    assert sorted(placed) == sorted(running)
    for unit in model_cut.units:
        assert not set(unit.borrowed) & set(unit.nodes)
        assert unit.kind != EXECUTED or unit.layers


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_layers_the_runtime_inserts_are_units_of_their_own(tmp_path, seed, runtime):
    """Both runtimes move the activations to a blocked layout around the convolutions: reorders that
    are no node of the model."""
    _, graph, model_cut, _, _ = cut_of(tmp_path, "cnn", seed, runtime)
    inserted = [unit for unit in model_cut.units if unit.kind == INSERTED]
    assert inserted and all(not unit.nodes and len(unit.layers) == 1 for unit in inserted)
    kinds = {layer.name: layer.op_type for layer in graph.layers}
    assert any("Reorder" in kinds[unit.layers[0]] for unit in inserted)


def _timed_inserted(prepared, graph, model_cut, path) -> list[tuple[ExecutedLayer, onnx.ModelProto, Item]]:
    """Each inserted layer the cut times as a unit: the layer, its unit graph, the graph's item."""
    graphs = unit_graphs(prepared, graph, model_identity(path, {}, graph.runtime, {"threads": 1}), "fp32")
    items = {item.spec.id: item for item in graphs.items if not item.spec.attrs["predict"].get("timing")}
    layers = {layer.name: layer for layer in graph.layers}
    found = []
    for unit, graph_id in zip(model_cut.units, graphs.layout):
        if unit.kind == INSERTED and graph_id:
            found.append(
                (layers[unit.layers[0]], onnx.load_model_from_string(items[graph_id].load()[0]), items[graph_id])
            )
    return found


def test_the_nchwc_reorders_onnx_runtime_inserts_are_timed_as_units_of_their_own(tmp_path, seed):
    """ONNX Runtime runs a squeeze-excitation's convolutions in its blocked NCHWc layout and the Mul
    planar, inserting reorders between them (no node of the model). Each is a unit graph of its one layer
    at the shapes it has inside the model (the blocked side padded to the CPU's block, which the report
    carries): fed the model's value (or its NCHWc layout), ONNX Runtime gives the model's value (or its
    NCHWc layout), and the reference check (onnx.reference with dbench's reorders) agrees with it."""
    import onnxruntime as ort

    from dbench.gen.feeds import make_feeds
    from dbench.runtimes.ort_execution import nchwc_block_size
    from dbench.sources.contrib_reference import to_nchwc
    from dbench.sources.model_reference import reference_outputs

    prepared, graph, model_cut, path, _ = cut_of(tmp_path, "se", seed, "ort-cpu")
    block = nchwc_block_size()
    reorders = [layer for layer in graph.layers if "Reorder" in layer.op_type]
    assert {layer.op_type for layer in reorders} == {
        "com.microsoft.nchwc:ReorderInput",
        "com.microsoft.nchwc:ReorderOutput",
    }
    assert all(layer.layout == f"NCHWc{block}" for layer in reorders)
    timed = _timed_inserted(prepared, graph, model_cut, path)
    assert sorted(layer.name for layer, _, _ in timed) == sorted(layer.name for layer in reorders)
    model = prepared.loaded.model
    types = {**value_types(model), **value_types(prepared.loaded.shapes)}
    values = _all_values(
        model, types, {"x": np.random.default_rng(seed).uniform(-1, 1, (1, 8, 10, 10)).astype(np.float32)}
    )
    for layer, unit_graph, item in timed:  # identical reorders are one graph (the first's names), counted
        assert [(n.domain, n.op_type) for n in unit_graph.graph.node] == [tuple(layer.op_type.split(":"))]
        assert item.spec.attrs["predict"]["kind"] == INSERTED and item.spec.attrs["predict"]["weight_bytes"] == 0
        session = ort.InferenceSession(unit_graph.SerializeToString(), providers=["CPUExecutionProvider"])
        source = unit_graph.graph.input[0].name
        if layer.op_type.endswith("ReorderInput"):
            planar = values[layer.inputs[0]]
            (got,) = session.run(None, {source: planar})
            assert planar.shape[1] == 20 and got.shape[1] == -(-20 // block) * block
            assert np.array_equal(got, to_nchwc(planar, block))
        else:
            planar = values[layer.outputs[0]]
            (got,) = session.run(None, {source: to_nchwc(planar, block)})
            assert np.array_equal(got, planar)
        feeds = make_feeds(item.spec)
        expected, by = reference_outputs(unit_graph, item.spec, feeds)
        assert by == "onnx.reference" and np.array_equal(
            expected[unit_graph.graph.output[0].name], session.run(None, feeds)[0]
        )


def test_the_transposes_onnx_runtime_inserts_around_its_channels_last_layers_are_units(tmp_path, seed):
    """The NHWC transformer's Transposes (into and out of the NhwcMaxPool) are units of their one node with
    the runtime's permutation; the model's value in gives its transpose out."""
    import onnxruntime as ort

    prepared, graph, model_cut, path, _ = cut_of(tmp_path, "int8_pool", seed, "ort-cpu")
    timed = _timed_inserted(prepared, graph, model_cut, path)
    assert sorted(dict(layer.attributes)["perm"] for layer, _, _ in timed) == [(0, 2, 3, 1), (0, 3, 1, 2)]
    model = prepared.loaded.model
    types = {**value_types(model), **value_types(prepared.loaded.shapes)}
    values = _all_values(
        model, types, {"x": np.random.default_rng(seed).uniform(-1, 1, (1, 8, 32, 32)).astype(np.float32)}
    )
    for layer, unit_graph, _ in timed:
        known = layer.inputs[0] if layer.inputs[0] in values else layer.outputs[0]
        perm = dict(layer.attributes)["perm"]
        value = values[known] if known == layer.inputs[0] else np.transpose(values[known], np.argsort(perm))
        session = ort.InferenceSession(unit_graph.SerializeToString(), providers=["CPUExecutionProvider"])
        (got,) = session.run(None, {unit_graph.graph.input[0].name: value})
        assert np.array_equal(got, np.transpose(value, perm))


def test_openvinos_inserted_reorders_stay_untimed(tmp_path, seed):
    """No ONNX op expresses OpenVINO's Reorder layers: they stay units without a graph (their time inside
    the model is shown beside the prediction)."""
    prepared, graph, model_cut, path, _ = cut_of(tmp_path, "se", seed, "openvino")
    assert any(unit.kind == INSERTED for unit in model_cut.units)
    assert _timed_inserted(prepared, graph, model_cut, path) == []


def test_an_inserted_layer_is_a_graph_where_its_shapes_can_be_told():
    """The side that is a tensor of the model gives the other: the NCHWc block's padding of a reorder (either
    layout), a Transpose's permutation backwards; a view (Reshape), a reorder reported without its block
    (an older run's report), a Transpose without its permutation or a layer between two tensors the model
    does not know stay without a graph."""
    from dbench.units.graph import inserted_model

    base = mb.model([helper.make_node("Identity", ["a"], ["b"])], [mb.value("a", [1])], [mb.value("b", [1])])
    types = {
        v.name: v
        for v in [
            mb.value("y", [1, 20, 5, 5]),
            mb.value("yl", [1, 5, 5, 20]),
            mb.value("xl", [1, 5, 5, 12]),
            mb.value("t", [1, 4, 4, 8], TensorProto.UINT8),
        ]
    }

    def dims(layer):
        found = inserted_model(base, types, layer)
        if found is None:
            return None
        onnx.checker.check_model(found)
        shape = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
        return shape(found.graph.input[0]), shape(found.graph.output[0])

    out = "com.microsoft.nchwc:ReorderOutput"
    assert dims(ExecutedLayer("r", out, (), ("b0",), ("y",), layout="NCHWc16", attributes=(("channels", 20),))) == (
        [1, 32, 5, 5],
        [1, 20, 5, 5],
    )
    assert dims(
        ExecutedLayer(
            "r", out, (), ("b0",), ("yl",), layout="NCHWc8", attributes=(("channels", 20), ("channels_last", 1))
        )
    ) == ([1, 24, 5, 5], [1, 5, 5, 20])
    assert dims(
        ExecutedLayer(
            "r",
            "com.microsoft.nchwc:ReorderInput",
            (),
            ("xl",),
            ("b1",),
            layout="NCHWc8",
            attributes=(("channels_last", 1),),
        )
    ) == ([1, 5, 5, 12], [1, 16, 5, 5])
    assert dims(ExecutedLayer("t", "Transpose", (), ("t0",), ("t",), attributes=(("perm", (0, 3, 1, 2)),))) == (
        [1, 4, 8, 4],
        [1, 4, 4, 8],
    )
    assert dims(ExecutedLayer("r", out, (), ("b0",), ("y",), attributes=(("channels", 20),))) is None
    assert dims(ExecutedLayer("t", "Transpose", (), ("t0",), ("t",))) is None
    assert dims(ExecutedLayer("v", "Reshape", (), ("y", "shape"), ("v0",), moves_data=True)) is None
    assert dims(ExecutedLayer("t", "Transpose", (), ("t0",), ("t1",), attributes=(("perm", (0, 3, 1, 2)),))) is None


def _all_values(model: onnx.ModelProto, types: dict, feeds: dict) -> dict[str, np.ndarray]:
    """Every tensor of the model on `feeds`, by onnx.reference."""
    from onnx.reference import ReferenceEvaluator

    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    names = [o for node in exposed.graph.node for o in node.output if o and o in types]
    known = {o.name for o in exposed.graph.output}
    exposed.graph.output.extend(types[n] for n in names if n not in known)
    outputs = [o.name for o in exposed.graph.output]
    return dict(zip(outputs, ReferenceEvaluator(exposed).run(None, feeds)))


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", ["cnn", "int8", "lstm", "attention"])
def test_each_unit_graph_computes_what_the_model_computes_there(tmp_path, seed, runtime, name):
    """Fresh random inputs through the model (onnx.reference), every value kept; each unit's own graph,
    fed the model's values at its inputs, gives the model's values at its outputs."""
    from onnx.reference import ReferenceEvaluator

    prepared, _, model_cut, _, _ = cut_of(tmp_path, name, seed, runtime)
    model = prepared.loaded.model
    types = {**value_types(prepared.loaded.model), **value_types(prepared.loaded.shapes)}
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        feeds[value.name] = (
            rng.integers(0, 255, shape) if np.issubdtype(dtype, np.integer) else rng.uniform(-1, 1, shape)
        ).astype(dtype)
    values = {**feeds, **_all_values(model, types, feeds)}
    checked = 0
    for index, unit in enumerate(model_cut.units):
        if unit.kind != EXECUTED:
            continue
        graph = unit_model(model, types, prepared.structure, unit, f"u{index}")
        onnx.checker.check_model(graph)
        results = ReferenceEvaluator(graph).run(None, {i.name: values[i.name] for i in graph.graph.input})
        for output, result in zip(graph.graph.output, results):
            expected = values[output.name]
            assert result.shape == expected.shape
            scale = max(1.0, float(np.abs(expected.astype(np.float64)).max()))
            assert np.abs(result.astype(np.float64) - expected.astype(np.float64)).max() <= 1e-5 * scale, output.name
            checked += 1
    assert checked


def test_a_layer_onnx_runtime_runs_channels_last_is_timed_as_that_layer(tmp_path, seed):
    """ONNX Runtime runs the QDQ pool as NhwcMaxPool on the NHWC QLinearConv's output; alone, the same
    DQ-MaxPool-Q would get its generic NCHW uint8 pool. The unit's graph is the executed layer on NHWC
    tensors: fed the model's value at its input (channels last), ONNX Runtime gives the model's value
    at its output, and the reference check (onnx.reference with dbench's contrib ops) agrees."""
    import onnxruntime as ort

    from dbench.gen.feeds import make_feeds
    from dbench.sources.model_reference import reference_outputs

    prepared, graph, model_cut, path, _ = cut_of(tmp_path, "int8_pool", seed, "ort-cpu")
    pools = [layer for layer in graph.layers if layer.op_type == "com.microsoft:NhwcMaxPool"]
    assert len(pools) == 1 and pools[0].layout == "NHWC" and dict(pools[0].attributes)["strides"] == (2, 2)
    (unit,) = [u for u in model_cut.units if u.layers == (pools[0].name,)]
    assert [model_cut.names[i] for i in unit.nodes] == ["dq_h", "pool", "q_p"]
    graphs = unit_graphs(prepared, graph, model_identity(path, {}, "ort-cpu", {"threads": 1}), "int8")
    (item,) = [
        i for i in graphs.items if i.spec.attrs["predict"].get("timed_as") and not i.spec.attrs["predict"].get("timing")
    ]
    assert item.spec.attrs["predict"]["timed_as"] == "com.microsoft:NhwcMaxPool on NHWC"
    assert [t.shape for t in item.spec.inputs] == [(1, 32, 32, 16)] and [t.shape for t in item.spec.outputs] == [
        (1, 16, 16, 16)
    ]
    data, _ = item.load()
    unit_graph = onnx.load_model_from_string(data)
    assert [(n.domain, n.op_type) for n in unit_graph.graph.node] == [("com.microsoft", "NhwcMaxPool")]
    model = prepared.loaded.model
    types = {**value_types(model), **value_types(prepared.loaded.shapes)}
    x = np.random.default_rng(seed).uniform(-1, 1, (1, 8, 32, 32)).astype(np.float32)
    values = _all_values(model, types, {"x": x})
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    (pooled,) = session.run(None, {"hq": np.ascontiguousarray(values["hq"].transpose(0, 2, 3, 1))})
    assert np.array_equal(pooled, values["pq"].transpose(0, 2, 3, 1))
    feeds = make_feeds(item.spec)
    expected, by = reference_outputs(unit_graph, item.spec, feeds)
    assert by == "onnx.reference" and np.array_equal(expected["pq"], session.run(None, feeds)[0])


def test_a_layer_runs_as_itself_only_where_it_is_one_channels_last_layer_over_one_4d_tensor():
    """A planar layer, or a unit with two inputs, keeps the unit graph itself (no executed model)."""
    from dbench.units.graph import executed_model

    pool = ExecutedLayer(
        "pool_token_1",
        "com.microsoft:NhwcMaxPool",
        inputs=("h",),
        outputs=("p",),
        layout="NHWC",
        attributes=(("kernel_shape", (2, 2)), ("strides", (2, 2))),
    )
    one = mb.model(
        [helper.make_node("MaxPool", ["h"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2])],
        [mb.value("h", [1, 4, 8, 8], TensorProto.UINT8)],
        [mb.value("p", [1, 4, 4, 4], TensorProto.UINT8)],
    )
    timed = executed_model(one, pool)
    assert [
        (v.name, [d.dim_value for d in v.type.tensor_type.shape.dim]) for v in [*timed.graph.input, *timed.graph.output]
    ] == [("h", [1, 8, 8, 4]), ("p", [1, 4, 4, 4])]
    onnx.checker.check_model(timed)
    assert executed_model(one, ExecutedLayer("pool", "MaxPool", inputs=("h",), outputs=("p",))) is None
    two = mb.model(
        [helper.make_node("Add", ["h", "g"], ["p"], name="add")],
        [mb.value("h", [1, 4, 8, 8]), mb.value("g", [1, 4, 8, 8])],
        [mb.value("p", [1, 4, 8, 8])],
    )
    assert executed_model(two, pool) is None


def test_a_stored_report_gives_back_the_channels_last_layers_attributes():
    """--resume cuts again from the run header's JSON: the layers' layouts (channels-last, NCHWc with its
    block) and attributes survive it."""
    import dataclasses
    import json

    from dbench.orchestrator.predict import executed_from_header

    report = ExecutedGraph(
        "ort-cpu",
        (
            ExecutedLayer(
                "pool_token_1",
                "com.microsoft:NhwcMaxPool",
                ("pool",),
                ("h",),
                ("p",),
                layout="NHWC",
                attributes=(("auto_pad", "NOTSET"), ("pads", (1, 1, 1, 1))),
            ),
            ExecutedLayer(
                "ReorderOutput",
                "com.microsoft.nchwc:ReorderOutput",
                ("ReorderOutput",),
                ("reorder_token_1",),
                ("h2",),
                moves_data=True,
                layout="NCHWc16",
                attributes=(("channels", 20), ("channels_last", 0)),
            ),
            ExecutedLayer("conv", "Conv", ("conv",), ("x", "w"), ("h",)),
        ),
        tensor_names=True,
    )
    assert executed_from_header(json.loads(json.dumps(dataclasses.asdict(report)))) == report


def test_identical_units_are_one_graph_with_a_count_and_keep_their_kernel_id(tmp_path, seed):
    path = mb.save(twin_blocks(np.random.default_rng(seed)), tmp_path, "twins")
    graph = executed(path, {}, "ort-cpu")
    graphs = unit_graphs(prepare(path, {}), graph, model_identity(path, {}, "ort-cpu", {"threads": 1}), "fp32")
    timed = [
        item for item in graphs.items if item.spec.family == "unit" and not item.spec.attrs["predict"].get("timing")
    ]
    units = [item for item in timed if item.spec.attrs["predict"]["kind"] == EXECUTED]
    assert len(units) == 1
    tag = units[0].spec.attrs["predict"]
    assert tag["count"] == 2 and [o["nodes"] for o in tag["occurrences"]] == [["conv1", "relu1"], ["conv2", "relu2"]]
    assert tag["kernels"] == ["conv_w12_h12_c16_n1_k16_s3_r3_pw1_ph1_sw1_sh1"]
    # Its evicted twin: the same graph, read after the model's traffic (both occurrences' weights and outputs).
    (twin,) = [
        item
        for item in graphs.items
        if item.spec.attrs["predict"].get("timing") == "evicted" and item.spec.id.startswith(units[0].spec.id)
    ]
    assert twin.spec.id == units[0].spec.id + ".evicted" and twin.load() == units[0].load()
    assert tag["weight_bytes"] == 16 * 16 * 3 * 3 * 4 and tag["io_bytes"] == 2 * 16 * 12 * 12 * 4
    # The traffic also holds what the layers ONNX Runtime inserts write (its NCHWc reorders, timed as units too).
    inserted = sum(
        item.spec.attrs["predict"]["count"] * sum(t.nbytes for t in item.spec.outputs)
        for item in timed
        if item.spec.attrs["predict"]["kind"] == INSERTED
    )
    assert (
        twin.spec.attrs["evict_bytes"] == tag["evict_bytes"] == 2 * (tag["weight_bytes"] + 16 * 12 * 12 * 4) + inserted
    )


# The cut's rules, on reports made by hand.


def _structure(nodes, inputs, outputs, initializers=()) -> Structure:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    names = {t for node in nodes for t in node.output} | {i.name for i in inputs}
    return Structure(graph, shaped=frozenset(names))


def _units(
    structure: Structure, layers: list[ExecutedLayer], tensor_names: bool = False
) -> list[tuple[str, list[str], list[str]]]:
    model_cut = cut(structure, ExecutedGraph("test", tuple(layers), tensor_names))
    return [(u.kind, [model_cut.names[i] for i in u.nodes], list(u.layers)) for u in model_cut.units]


X = mb.value("x", [2, 4])
Y = mb.value("y", [2, 4])


def test_an_epilogue_the_runtime_fused_joins_its_producer():
    """conv -> add(other input x) -> relu, the layer named after conv only: add and relu join it."""
    nodes = [
        helper.make_node("Relu", ["x"], ["c"], name="conv"),
        helper.make_node("Add", ["c", "x"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    s = _structure(nodes, [X], [Y])
    assert _units(s, [ExecutedLayer("conv_fused", "Conv", ("conv",))]) == [
        ("executed", ["conv", "add", "relu"], ["conv_fused"])
    ]


def test_a_prologue_the_runtime_fused_joins_its_reader():
    """The parts of a GELU before the layer that names only its last node join that layer."""
    nodes = [
        helper.make_node("Div", ["x", "x"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Mul", ["x", "e"], ["y"], name="mul"),
    ]
    s = _structure(nodes, [X], [Y])
    assert _units(s, [ExecutedLayer("gelu", "Gelu", ("mul",))]) == [("executed", ["div", "erf", "mul"], ["gelu"])]


def test_a_layer_claims_the_nodes_between_the_model_tensors_it_reads_and_writes():
    """A fused layer with a new name, reading x and writing y through a reshape and a reorder the
    runtime inserted with new tensor names, claims every node between x and y; the inserted layers
    are units of their own."""
    nodes = [helper.make_node("Neg", ["x"], ["a"], name="n1"), helper.make_node("Abs", ["a"], ["y"], name="n2")]
    s = _structure(nodes, [X], [Y])
    layers = [
        ExecutedLayer("reshape_in", "Reshape", (), ("x",), ("t0",), moves_data=True),
        ExecutedLayer("fused_7", "Fused", (), ("t0",), ("t1",)),
        ExecutedLayer("reorder_out", "ReorderOutput", (), ("t1",), ("y",), moves_data=True),
    ]
    assert _units(s, layers, tensor_names=True) == [
        ("executed", ["n1", "n2"], ["fused_7"]),
        ("inserted", [], ["reshape_in"]),
        ("inserted", [], ["reorder_out"]),
    ]


def test_units_that_feed_each_other_in_a_cycle_are_merged():
    """a -> b -> c with a and c in one layer and b in another: one unit, so that each is contiguous."""
    nodes = [
        helper.make_node("Neg", ["x"], ["a"], name="a"),
        helper.make_node("Abs", ["a"], ["b"], name="b"),
        helper.make_node("Neg", ["b"], ["y"], name="c"),
    ]
    s = _structure(nodes, [X], [Y])
    (unit,) = _units(s, [ExecutedLayer("l1", "K", ("a", "c")), ExecutedLayer("l2", "K", ("b",))])
    assert unit[:2] == ("executed", ["a", "b", "c"]) and sorted(unit[2]) == ["l1", "l2"]


def test_a_dequantize_of_computed_data_goes_with_its_readers_and_is_repeated_in_each():
    scale = onnx.numpy_helper.from_array(np.array(0.1, dtype=np.float32), "s")
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s"], ["q"], name="quant"),
        helper.make_node("DequantizeLinear", ["q", "s"], ["d"], name="dq"),
        helper.make_node("Relu", ["d"], ["r1"], name="first"),
        helper.make_node("Neg", ["d"], ["r2"], name="second"),
        helper.make_node("Add", ["r1", "r2"], ["y"], name="add"),
    ]
    s = _structure(nodes, [X], [Y], [scale])
    model_cut = cut(
        s,
        ExecutedGraph(
            "test",
            (
                ExecutedLayer("q", "Q", ("quant",)),
                ExecutedLayer("l1", "K", ("first",)),
                ExecutedLayer("l2", "K", ("second",)),
                ExecutedLayer("l3", "K", ("add",)),
            ),
        ),
    )
    owner = {model_cut.names[i]: unit for unit in model_cut.units for i in unit.nodes}
    assert owner["dq"] is owner["first"]
    assert [model_cut.names[i] for i in owner["second"].borrowed] == ["dq"]


def test_static_values_read_by_several_units_are_folded():
    """A shape computed from x's bound shape, read by two reshapes in two layers: computed at load."""
    shape = onnx.numpy_helper.from_array(np.array([8], dtype=np.int64), "flat")
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("ReduceProd", ["s"], ["n"], name="prod", keepdims=1),
        helper.make_node("Reshape", ["x", "n"], ["a"], name="r1"),
        helper.make_node("Reshape", ["x", "flat"], ["b"], name="r2"),
        helper.make_node("Reshape", ["b", "n"], ["y"], name="r3"),
    ]
    s = _structure(nodes, [X], [mb.value("y", [8])], [shape])
    units = _units(
        s,
        [
            ExecutedLayer("l1", "Reshape", ("r1",)),
            ExecutedLayer("l2", "Reshape", ("r2",)),
            ExecutedLayer("l3", "Reshape", ("r3",)),
        ],
    )
    assert (FOLDED, ["shape", "prod"], []) in units


def test_a_layer_that_names_nothing_but_computes_joins_the_unit_it_feeds():
    """OpenVINO's LSTMSequence names only itself: it belongs to the unit of the layer it feeds."""
    nodes = [helper.make_node("Neg", ["x"], ["a"], name="rnn"), helper.make_node("Abs", ["a"], ["y"], name="after")]
    s = _structure(nodes, [X], [Y])
    layers = [
        ExecutedLayer("Seq_12", "RNNSeq", ("Seq_12",), ("x#0",), ("Seq_12#0",)),
        ExecutedLayer("after", "Eltwise", ("after",), ("Seq_12#0",), ("after#0",)),
    ]
    (unit,) = _units(s, layers)
    assert unit[1] == ["rnn", "after"] and sorted(unit[2]) == ["Seq_12", "after"]


def test_dbench_names_nodes_the_runtime_then_reports():
    """Nameless and duplicate node names are given dbench's own names before the runtime sees the model."""
    from dbench.units.structure import name_nodes

    nodes = [
        helper.make_node("Neg", ["x"], ["a"]),
        helper.make_node("Abs", ["a"], ["b"], name="dup"),
        helper.make_node("Neg", ["b"], ["y"], name="dup"),
    ]
    model = name_nodes(mb.model(nodes, [X], [Y]))
    assert [n.name for n in model.graph.node] == ["Neg_0", "dup", "dup_2"]
    assert TensorProto.FLOAT  # the model's types are untouched


def test_a_unit_reading_a_value_of_unknown_shape_is_unsupported_with_the_reason(tmp_path):
    """NonZero's output has a data-dependent length: the unit that reads it cannot be drawn a feed."""
    from dbench.errors import UnsupportedError

    nodes = [
        helper.make_node("NonZero", ["x"], ["n"], name="nonzero"),
        helper.make_node("Cast", ["n"], ["f"], name="cast", to=1),
        helper.make_node("Relu", ["f"], ["y"], name="relu"),
    ]
    model = mb.model(nodes, [X], [mb.value("y", [2, None])])
    path = mb.save(model, tmp_path, "nonzero")
    prepared = prepare(path, {})
    model_cut = cut(
        prepared.structure,
        ExecutedGraph(
            "test", (ExecutedLayer("nz", "NonZero", ("nonzero",)), ExecutedLayer("rest", "Relu", ("cast", "relu")))
        ),
    )
    types = {**value_types(prepared.loaded.model), **value_types(prepared.loaded.shapes)}
    second = next(u for u in model_cut.units if u.layers == ("rest",))
    with pytest.raises(UnsupportedError, match="shape of input 'n' is unknown"):
        unit_model(prepared.loaded.model, types, prepared.structure, second, "u1")


def test_the_weights_a_structure_only_model_makes_count_as_weights(tmp_path):
    """onnx's light_* networks make every weight with ConstantOfShape: a unit's weights are those bytes
    (the runtime folds them into stored weights), so its evicted excess and the model's traffic hold them."""
    path = mb.save(mb.structure_only(), tmp_path, "structure")
    graph = executed(path, {}, "ort-cpu")
    graphs = unit_graphs(prepare(path, {}), graph, model_identity(path, {}, "ort-cpu", {"threads": 1}), "fp32")
    tags = [
        item.spec.attrs["predict"]
        for item in graphs.items
        if item.spec.family == "unit" and not item.spec.attrs["predict"].get("timing")
    ]
    conv = next(tag for tag in tags if "conv1" in tag["occurrences"][0]["nodes"])
    gemm = next(tag for tag in tags if "fc" in tag["occurrences"][0]["nodes"])
    shapes = (4 + 1) * 8  # each ConstantOfShape's stored int64 shape
    assert conv["weight_bytes"] == (8 * 4 * 3 * 3 + 8) * 4 + shapes
    assert gemm["weight_bytes"] == (10 * 8 * 36 + 10) * 4 + (2 + 1) * 8
