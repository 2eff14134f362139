"""`--from-model`: the kernels of small models built in the tests, known by construction, extracted
exactly (ids, precision, pass, form, counts, nodes); every extracted graph verifies on ORT and OpenVINO."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from dbench.catalog import load_kernel_file
from dbench.frommodel.output import KERNELS_FILE, MODEL_ATTR, build_graphs, write_outputs
from dbench.frommodel.walk import model_kernels
from dbench.gen.manifest import read_manifest
from dbench.runtimes.base import RuntimeOptions
from dbench.worker.job import Job
from dbench.worker.main import execute
from dbench.worker.timing import QUICK
from tests import model_builders as mb

# model -> (dims, {(kernel id, precision, pass, form): nodes}), by construction in model_builders.
EXPECTED = {
    "mlp": (
        {"batch": 3},
        {
            ("gemm_m64_n3_k64_nn", "fp32", "fwd", "matmul"): ("fc1", "fc2"),
            ("gemm_m10_n3_k64_tn", "fp32", "fwd", "gemm"): ("head",),
        },
    ),
    "cnn": (
        {"n": 2},
        {
            ("conv_w12_h12_c8_n2_k8_s3_r3_pw1_ph1_sw1_sh1", "fp32", "fwd", "conv"): ("conv1", "conv3"),
            ("conv_w12_h12_c8_n2_k8_s3_r3_pw2_ph2_sw1_sh1_g8_dw2_dh2", "fp32", "fwd", "conv"): ("depthwise",),
            ("conv_w24_h24_c4_n2_k8_s2_r2_pw0_ph0_sw2_sh2", "fp32", "bwd_data", "convtranspose"): ("up",),
        },
    ),
    "lstm": ({"seq": 5}, {("rnn_lstm_h16_n2_t5", "fp32", "fwd", "op"): ("lstm1", "lstm2")}),
    "attention": (
        {},
        {
            ("gemm_m8_n8_k16_nn_b8", "fp32", "fwd", "matmul"): ("qk",),
            ("gemm_m16_n8_k8_nn_b8", "fp32", "fwd", "matmul"): ("pv",),
        },
    ),
    "int8": (
        {},
        {
            ("gemm_m16_n4_k32_nn", "int8", "fwd", "qdq"): ("qdq_matmul",),
            ("gemm_m8_n4_k32_nn", "int8", "fwd", "integer"): ("integer_matmul",),
        },
    ),
    "int8_qlinear": (
        {},
        {
            ("conv_w8_h8_c4_n1_k8_s3_r3_pw1_ph1_sw1_sh1", "int8", "fwd", "qlinear"): ("qconv",),
            ("conv_w8_h8_c4_n1_k8_s3_r3_pw0_ph0_sw2_sh2", "int8", "fwd", "integer"): ("iconv",),
            ("gemm_m16_n4_k32_nn", "int8", "fwd", "qlinear"): ("qmatmul",),
        },
    ),
}
BUILDERS = {
    "mlp": mb.mlp,
    "cnn": mb.cnn,
    "lstm": mb.lstm,
    "attention": mb.attention,
    "int8": mb.int8_qdq,
    "int8_qlinear": mb.int8_qlinear,
}
NOT_KERNELS = {
    "mlp": {"relu1", "relu2"},
    "cnn": {"relu1"},
    "lstm": {"squeeze1", "squeeze2"},
    "attention": {"softmax"},
    "int8": {"q_x", "dq_x", "dq_w", "q_y", "dq_y"},
    "int8_qlinear": set(),
}


def extracted(tmp_path, name: str, seed: int):
    path = mb.save(BUILDERS[name](np.random.default_rng(seed)), tmp_path, name)
    return model_kernels(path, EXPECTED[name][0])


@pytest.mark.parametrize("name", EXPECTED)
def test_kernels_equal_construction(tmp_path, name, seed):
    extraction = extracted(tmp_path, name, seed)
    found = {(k.kernel.id, k.precision, k.pass_name, k.form): k.nodes for k in extraction.kernels}
    assert found == EXPECTED[name][1]
    for k in extraction.kernels:
        assert k.copies == len(k.nodes) == k.kernel.copies("user")
    assert {s.node for s in extraction.skipped} == NOT_KERNELS[name]  # every other node accounted for


def test_qdq_nodes_folded_into_their_kernel(tmp_path, seed):
    """The DQ nodes of a QDQ kernel, the Q of its output, and the Q that quantises a model input for it
    (issue 40.5: it was left over as "quantisation between kernels")."""
    skipped = {s.node: s for s in extracted(tmp_path, "int8", seed).skipped}
    assert {n for n, s in skipped.items() if s.folded_into == "qdq_matmul"} == {"q_x", "dq_x", "dq_w", "q_y"}
    assert "folded into the int8 kernel of node qdq_matmul" in skipped["q_x"].reason


def test_kernels_csv_is_a_kernels_file(tmp_path, seed):
    """The written CSV loads through the --kernels path with the same kernels and counts."""
    extraction = extracted(tmp_path, "cnn", seed)
    folder = write_outputs(extraction, build_graphs(extraction, EXPECTED["cnn"][0]), tmp_path / "out" / "cnn")
    loaded = {k.id: k.copies("user") for k in load_kernel_file(folder / KERNELS_FILE)}
    assert loaded == {k.kernel.id: k.copies for k in extraction.kernels}
    tags = {e.spec.kernel_id: e.spec.attrs[MODEL_ATTR] for e in read_manifest(folder)}
    assert tags["conv_w12_h12_c8_n2_k8_s3_r3_pw1_ph1_sw1_sh1"] == {
        "name": "cnn",
        "copies": 2,
        "nodes": ["conv1", "conv3"],
        "dims": {"n": 2},
    }


def run_graph(graph, runtime: str):
    job = Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime=runtime,
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        weights="const",
        verify=True,
        profile_runs=0,
    )
    return execute(job)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
@pytest.mark.parametrize("name", EXPECTED)
def test_every_extracted_graph_verifies(tmp_path, name, runtime, seed):
    for graph in build_graphs(extracted(tmp_path, name, seed), EXPECTED[name][0]):
        outcome = run_graph(graph, runtime)
        assert outcome.status == "ok", (graph.id, outcome.message)
        assert outcome.verification["ok"] and outcome.verification["by"] == "numpy", graph.id


def test_shape_arithmetic_is_folded_for_shapes(tmp_path, seed):
    """ONNX inference alone leaves the Reshape's first dim open; folding the shape subgraph resolves it,
    and the shape nodes are still accounted for."""
    from dbench.frommodel.fold import open_shapes
    from dbench.frommodel.model_file import load_model

    path = mb.save(mb.flatten_by_shape_arithmetic(np.random.default_rng(seed)), tmp_path, "flatten")
    loaded = load_model(path, {"seq": 5, "batch": 3}, weights=False)
    assert open_shapes(loaded.model) and not open_shapes(loaded.shapes)
    extraction = model_kernels(path, {"seq": 5, "batch": 3})
    assert [(k.kernel.id, k.nodes) for k in extraction.kernels] == [("gemm_m8_n15_k16_nn", ("proj",))]
    assert {s.node for s in extraction.skipped} == {"shape", "d0", "d1", "rows", "rows1", "target", "flat"}


def test_shape_arithmetic_rooted_in_constant_nodes_is_folded(tmp_path, seed):
    """PyTorch's TorchScript exporter roots shape arithmetic in Constant nodes (a Mod of two constants
    giving a Slice end): their values are known without inputs, so the Reshape's shape resolves."""
    from dbench.frommodel.fold import open_shapes
    from dbench.frommodel.model_file import load_model

    const = lambda name, value: helper.make_node(
        "Constant",
        [],
        [name],
        name=name,  # noqa: E731
        value=numpy_helper.from_array(np.array(value, dtype=np.int64)),
    )
    nodes = [
        const("four", [4]),
        const("three", [3]),
        helper.make_node("Mod", ["four", "three"], ["one"], name="mod"),
        const("zero", [0]),
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Slice", ["shape", "zero", "one"], ["rows"], name="rows"),
        const("width", [-1]),
        helper.make_node("Concat", ["rows", "width"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"], name="flat"),
        helper.make_node("MatMul", ["flat", "w"], ["y"], name="proj"),
    ]
    model = mb.model(
        nodes,
        [mb.value("x", ["batch", 4, 4])],
        [mb.value("y", ["batch", 8])],
        [mb.weight("w", (16, 8), np.random.default_rng(seed))],
        "constants",
    )
    path = mb.save(model, tmp_path, "constants")
    loaded = load_model(path, {"batch": 3}, weights=False)
    assert not open_shapes(loaded.shapes)
    assert [k.kernel.id for k in model_kernels(path, {"batch": 3}).kernels] == ["gemm_m8_n3_k16_nn"]


def test_extension_columns_are_optional_and_validated(tmp_path):
    """batch/groups/dilations default to 1 (DeepBench's ids unchanged) and are checked when given."""
    from dbench.errors import KernelFileError
    from tests.helpers import write_csv

    path = write_csv(
        tmp_path / "mixed.csv",
        "family,m,n,k,a_t,b_t,batch,w,h,c,s,r,pad_w,pad_h,wstride,hstride,groups,dil_w,dil_h,copies",
        "gemm,8,8,16,0,0,8,,,,,,,,,,,,,",
        "gemm,8,8,16,0,0,,,,,,,,,,,,,,3",
        "conv,,1,8,,,,12,12,8,3,3,2,2,1,1,8,2,2,",
    )
    kernels = {k.id: k.copies("user") for k in load_kernel_file(path)}
    assert kernels == {
        "gemm_m8_n8_k16_nn_b8": 1,
        "gemm_m8_n8_k16_nn": 3,
        "conv_w12_h12_c8_n1_k8_s3_r3_pw2_ph2_sw1_sh1_g8_dw2_dh2": 1,
    }
    bad = write_csv(
        tmp_path / "bad.csv", "w,h,c,n,k,s,r,pad_w,pad_h,wstride,hstride,groups", "12,12,6,1,8,3,3,1,1,1,1,4"
    )
    with pytest.raises(KernelFileError, match="c=6 is not a multiple of groups=4"):
        load_kernel_file(bad)
