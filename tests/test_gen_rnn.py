"""Recurrent graphs (dbench.gen.rnn): every cell x form x pass on shrunk shapes against the float64
numpy cells, on onnx.reference, ONNX Runtime CPU and OpenVINO CPU; the numpy backward against finite
differences; the FLOP tally against an independent count; the whole RNN catalog builds and checks."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import pytest
from onnx import shape_inference
from typer.testing import CliRunner

from dbench.catalog import RnnKernel, load_catalog, load_kernel_file
from dbench.catalog.kernels import Origin
from dbench.cli import app
from dbench.errors import KernelFileError, UnsupportedError
from dbench.gen import plan as gen_plan
from dbench.gen import rnn
from dbench.gen.feeds import make_feeds
from dbench.gen.options import RNN_FORMS, GenOptions
from dbench.gen.precision import DTYPES
from dbench.gen.rnn_math import GATES, backward, forward
from tests.helpers import ort_session, run_ort_named, write_csv

CELLS = ("vanilla", "lstm", "gru")
# (cell, GRU candidate activation): the relu variant exists for GRU only.
VARIANTS = [("vanilla", "tanh"), ("lstm", "tanh"), ("gru", "tanh"), ("gru", "relu")]
PASS_FORMS = [("fwd", "op"), ("fwd", "recurrence"), ("bwd_weights", "bptt")]
CASES = [(c, a, p, f) for c, a in VARIANTS for p, f in PASS_FORMS]
CASE_IDS = [f"{c}-{a}-{p}-{f}" for c, a, p, f in CASES]
# Graphs that exist in each precision (ONNX's RNN ops have no bfloat16 type: no bf16 op form).
RUN_CASES = [
    (*case, prec) for case in CASES for prec in ("fp32", "fp16", "bf16") if not (case[3] == "op" and prec == "bf16")
]
RUN_IDS = ["-".join(case) for case in RUN_CASES]

# onnx.reference's RNN knows only Tanh/Affine activations and its GRU ignores `activations`
# (always tanh): these two op-form graphs are beyond it (strict: a fix upstream shows up here).
REFERENCE_EVALUATOR_GAPS = {
    ("vanilla", "tanh", "fwd", "op"): "onnx.reference's RNN has no Relu activation",
    ("gru", "relu", "fwd", "op"): "onnx.reference's GRU ignores `activations` (always tanh)",
}


def _kernel(cell: str, rng: np.random.Generator, timesteps: int | None = None, train: bool = False) -> RnnKernel:
    """A shrunk kernel: H in 3..5, N = 2, T in 3..4 (unless given)."""
    origins = (Origin(suite="train", app="test", line=1),) if train else ()
    return RnnKernel(
        cell=cell,
        hidden=int(rng.integers(3, 6)),
        batch=2,
        timesteps=timesteps or int(rng.integers(3, 5)),
        origins=origins,
    )


def _graph(kernel: RnnKernel, activation: str, pass_name: str, base: str, precision: str = "fp32"):
    gru_activation = activation if kernel.cell == "gru" else None
    return rnn.build(
        kernel, precision, pass_name, rnn.form_name(base, kernel.cell, activation), gru_activation=gru_activation
    )


def _rel_err(out: np.ndarray, ref: np.ndarray) -> float:
    """max|out - ref| / max|ref|; absolute when the reference is all zeros (a ReLU layer with
    H = 3 can be entirely inactive)."""
    err = float(np.abs(np.asarray(out, dtype=np.float64) - ref).max())
    scale = float(np.abs(ref).max())
    return err / scale if scale else err


def _check_outputs(graph, outputs: dict, ref: dict, context: str) -> None:
    rule = gen_plan.tolerance(graph.spec)
    assert rule.metric == "rel"
    assert set(outputs) == set(ref)
    for name, value in ref.items():
        assert outputs[name].shape == value.shape, f"{context}: {name} shape"
        err = _rel_err(outputs[name], value)
        assert err <= rule.bound, f"{context}: {name} relative error {err:.2e} > {rule.bound:g}"


def _openvino_run(model: onnx.ModelProto, feeds: dict) -> dict:
    """Run on OpenVINO CPU with computation pinned to f32 (a bf16-capable CPU would otherwise run
    fp32 graphs in bf16), binding every feed by name as dbench's adapter does; bfloat16 travels as
    its raw 16-bit words (OpenVINO has no numpy bfloat16)."""
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(
        core.read_model(model.SerializeToString(), b""), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    request = compiled.create_infer_request()
    for name, value in feeds.items():
        target = request.get_tensor(name).data
        target[...] = np.ascontiguousarray(value).view(target.dtype)
    request.infer()
    outputs = {}
    for port in compiled.outputs:
        tensor = request.get_tensor(port)
        data = np.array(tensor.data, copy=True)
        outputs[port.get_any_name()] = data.view(DTYPES["bfloat16"]) if tensor.element_type == ov.Type.bf16 else data
    return outputs


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh randomness each run; the seed is printed (shown by pytest on failure) to reproduce it."""
    seed = np.random.SeedSequence().entropy
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2**31))


# --- structure -------------------------------------------------------------------------------


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("cell,activation,pass_name,base", CASES, ids=CASE_IDS)
def test_graph_checks_and_infers_shapes(cell, activation, pass_name, base, precision, rng):
    kernel = _kernel(cell, rng)
    if base == "op" and precision == "bf16":
        with pytest.raises(UnsupportedError, match="recurrence"):
            _graph(kernel, activation, pass_name, base, precision)
        return
    graph = _graph(kernel, activation, pass_name, base, precision)
    onnx.checker.check_model(graph.model, full_check=True)
    inferred = shape_inference.infer_shapes(graph.model, check_type=True, strict_mode=True)
    declared = {o.name: tuple(d.dim_value for d in o.type.tensor_type.shape.dim) for o in inferred.graph.output}
    assert declared == {o.name: o.shape for o in graph.spec.outputs}
    assert not graph.model.graph.initializer, "graph files hold no weight data"
    assert [i.name for i in graph.model.graph.input] == [t.name for t in graph.spec.inputs]
    assert {t.role for t in graph.spec.inputs} == {"activation", "weight"}
    assert graph.spec.attrs == ({"gru_activation": activation} if cell == "gru" else {})
    assert graph.spec.form == rnn.form_name(base, cell, activation)
    assert graph.spec.flops == kernel.flops()


# --- numerics --------------------------------------------------------------------------------


@pytest.mark.parametrize("cell,activation,pass_name,base,precision", RUN_CASES, ids=RUN_IDS)
def test_onnx_reference_matches_numpy(cell, activation, pass_name, base, precision, rng):
    from onnx.reference import ReferenceEvaluator

    gap = REFERENCE_EVALUATOR_GAPS.get((cell, activation, pass_name, base))
    graph = _graph(_kernel(cell, rng), activation, pass_name, base, precision)
    feeds = make_feeds(graph.spec, _seed(rng))
    try:
        values = ReferenceEvaluator(graph.model).run(None, feeds)
        outputs = dict(zip([o.name for o in graph.model.graph.output], values))
        _check_outputs(graph, outputs, rnn.reference(graph.spec, feeds), f"onnx.reference {graph.id}")
    except (AssertionError, RuntimeError) as err:
        if gap:
            pytest.xfail(f"{gap}: {err}")
        raise
    assert not gap, f"onnx.reference now handles {graph.id}; remove it from REFERENCE_EVALUATOR_GAPS"


@pytest.mark.parametrize(
    "cell,activation,pass_name,base,precision",
    [c for c in RUN_CASES if c[4] != "bf16"],
    ids=[i for c, i in zip(RUN_CASES, RUN_IDS) if c[4] != "bf16"],
)
def test_onnxruntime_matches_numpy(cell, activation, pass_name, base, precision, rng):
    """fp32 and fp16 run and match on ONNX Runtime CPU (bf16: see test_onnxruntime_refuses_bf16_as_unsupported)."""
    graph = _graph(_kernel(cell, rng), activation, pass_name, base, precision)
    feeds = make_feeds(graph.spec, _seed(rng))
    _check_outputs(
        graph,
        run_ort_named(ort_session(graph.model), feeds),
        rnn.reference(graph.spec, feeds),
        f"onnxruntime {graph.id}",
    )


@pytest.mark.slow
def test_onnxruntime_refuses_bf16_as_unsupported(tmp_path):
    """ONNX Runtime's CPU provider has no bfloat16 Gemm or Add: `dbench run` records every bf16
    RNN graph (each cell, forward and backward) as `unsupported` with ORT's own message. Strict: when
    ORT gains these kernels this fails, and the bf16 cases belong in test_onnxruntime_matches_numpy."""
    kernels = write_csv(
        tmp_path / "rnn.csv", "cell,hidden,batch,timesteps,suite", *(f"{cell},4,2,3,train" for cell in CELLS)
    )
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--kernels",
            str(kernels),
            "--suite",
            "train",
            "--precision",
            "bf16",
            "--rnn-form",
            "recurrence",
            "--runtime",
            "ort-cpu",
            "--quick",
            "--out",
            str(tmp_path / "results"),
        ],
    )
    assert result.exit_code == 0, result.output
    (log,) = (tmp_path / "results").rglob("*.jsonl")
    rows = [r for r in map(json.loads, log.read_text().splitlines()) if r["type"] == "result"]
    assert sorted(r["graph_id"].split(".")[1] for r in rows) == ["bwd_weights"] * 3 + ["fwd"] * 3
    for row in rows:
        assert row["status"] == "unsupported", row
        assert "NOT_IMPLEMENTED : Could not find an implementation for" in row["message"], row


@pytest.mark.parametrize("cell,activation,pass_name,base,precision", RUN_CASES, ids=RUN_IDS)
def test_openvino_loads_and_matches_numpy(cell, activation, pass_name, base, precision, rng):
    """Every graph ONNX Runtime runs, and the bf16 graphs it refuses (ONNX's RNN ops have no bf16 form)."""
    graph = _graph(_kernel(cell, rng), activation, pass_name, base, precision)
    feeds = make_feeds(graph.spec, _seed(rng))
    # Computation pinned to f32: this checks the graph's meaning in fp16/bf16 I/O; OpenVINO's own
    # low-precision accuracy is the runner's business.
    _check_outputs(graph, _openvino_run(graph.model, feeds), rnn.reference(graph.spec, feeds), f"openvino {graph.id}")


@pytest.mark.parametrize(
    "cell,activation,pass_name,base",
    [c for c in CASES if c[3] != "op"],
    ids=[i for c, i in zip(CASES, CASE_IDS) if c[3] != "op"],
)
def test_single_step_sequence(cell, activation, pass_name, base, rng):
    """T = 1 (four catalog kernels): the backward has no earlier state to slice, and the LSTM and
    GRU backward read no Y. Both runtimes, fed every declared input: OpenVINO drops an unread input
    and then refuses its feed ("Port for tensor name Y was not found")."""
    graph = _graph(_kernel(cell, rng, timesteps=1), activation, pass_name, base)
    feeds = make_feeds(graph.spec, _seed(rng))
    ref = rnn.reference(graph.spec, feeds)
    _check_outputs(graph, run_ort_named(ort_session(graph.model), feeds), ref, f"onnxruntime {graph.id}")
    _check_outputs(graph, _openvino_run(graph.model, feeds), ref, f"openvino {graph.id}")


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_single_step_backward_runs_and_verifies_through_dbench_run(runtime, tmp_path):
    """`dbench run` of the T = 1 GRU (DeepBench's rnn_gru_h512_n32_t1, shrunk) and LSTM backward
    graphs: every row `ok` with its outputs verified against the numpy reference."""
    kernels = write_csv(
        tmp_path / "rnn.csv", "cell,hidden,batch,timesteps,suite", "gru,8,4,1,train", "lstm,8,4,1,train"
    )
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--kernels",
            str(kernels),
            "--suite",
            "train",
            "--pass",
            "bwd_weights",
            "--runtime",
            runtime,
            "--quick",
            "--out",
            str(tmp_path / "results"),
        ],
    )
    assert result.exit_code == 0, result.output
    (log,) = (tmp_path / "results").rglob("*.jsonl")
    rows = [r for r in map(json.loads, log.read_text().splitlines()) if r["type"] == "result"]
    assert sorted(r["graph_id"] for r in rows) == [
        "rnn_gru_h8_n4_t1.bwd_weights.bptt.fp32",
        "rnn_lstm_h8_n4_t1.bwd_weights.bptt.fp32",
    ]
    for row in rows:
        assert row["status"] == "ok", row
        assert row["verified"] is True, row


@pytest.mark.parametrize("cell,activation", VARIANTS)
def test_op_and_recurrence_forms_agree(cell, activation, rng):
    """Given the op form's X, W, B, the recurrence form fed XW = X·W^T + Wb and Rb gives the same Y."""
    kernel = _kernel(cell, rng)
    op = _graph(kernel, activation, "fwd", "op")
    rec = _graph(kernel, activation, "fwd", "recurrence")
    feeds = make_feeds(op.spec, _seed(rng))
    gh = kernel.gates * kernel.hidden
    rec_feeds = {k: v for k, v in feeds.items() if k in ("R", "initial_h", "initial_c")}
    rec_feeds["XW"] = (feeds["X"] @ feeds["W"][0].T + feeds["B"][0, :gh]).astype(np.float32)
    rec_feeds["Rb"] = feeds["B"][:, gh:]
    assert set(rec_feeds) == {t.name for t in rec.spec.inputs}
    y_op = run_ort_named(ort_session(op.model), feeds)["Y"]
    y_rec = run_ort_named(ort_session(rec.model), rec_feeds)["Y"]
    assert y_op.shape == (kernel.timesteps, 1, kernel.batch, kernel.hidden)
    assert _rel_err(y_rec, y_op[:, 0].astype(np.float64)) < 1e-5
    ref_op = rnn.reference(op.spec, feeds)["Y"][:, 0]
    assert _rel_err(rnn.reference(rec.spec, rec_feeds)["Y"], ref_op) < 1e-6


def _random_layer(cell: str, rng: np.random.Generator, hidden: int = 3, batch: int = 2, steps: int = 3) -> dict:
    g = GATES[cell]
    return {
        "x": rng.uniform(-1, 1, (steps, batch, hidden)),
        "w": rng.uniform(-1, 1, (g * hidden, hidden)),
        # biases lean positive so a vanilla ReLU layer this small is rarely all inactive
        "r": rng.uniform(-1, 1, (g * hidden, hidden)),
        "b": rng.uniform(-0.5, 1, 2 * g * hidden),
        "h0": rng.uniform(-1, 1, (batch, hidden)),
        "c0": rng.uniform(-1, 1, (batch, hidden)),
        "dy": rng.uniform(-1, 1, (steps, batch, hidden)),
    }


def _trace(cell: str, layer: dict, activation: str, r=None, b=None):
    r = layer["r"] if r is None else r
    b = layer["b"] if b is None else b
    gh = r.shape[0]
    return forward(
        cell,
        layer["x"] @ layer["w"].T + b[:gh],
        r,
        b[gh:],
        layer["h0"],
        layer["c0"] if cell == "lstm" else None,
        activation,
    )


@pytest.mark.parametrize("cell,activation", VARIANTS)
def test_numpy_backward_matches_finite_differences(cell, activation, rng):
    """dR and dB of loss = sum(Y·dY), against central differences of the numpy forward (float64)."""
    layer = _random_layer(cell, rng)
    c0 = layer["c0"] if cell == "lstm" else None
    dr, db = backward(cell, layer["dy"], layer["r"], layer["h0"], _trace(cell, layer, activation), c0, activation)

    def loss(r, b):
        return float((_trace(cell, layer, activation, r, b).y * layer["dy"]).sum())

    eps = 1e-6
    for value, grad, name in ((layer["r"], dr, "dR"), (layer["b"], db, "dB")):
        numeric = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            step = np.zeros_like(value)
            step[idx] = eps
            args = (value + step, layer["b"]) if name == "dR" else (layer["r"], value + step)
            args_m = (value - step, layer["b"]) if name == "dR" else (layer["r"], value - step)
            numeric[idx] = (loss(*args) - loss(*args_m)) / (2 * eps)
        assert np.abs(numeric - grad).max() <= 1e-6 * max(1.0, np.abs(numeric).max()), name


@pytest.mark.parametrize("cell,activation", VARIANTS)
def test_onnx_backward_on_a_real_forward_trace(cell, activation, rng):
    """The bptt graph (ONNX Runtime, fp32) fed a genuine forward trace gives the numpy gradients."""
    kernel = RnnKernel(cell=cell, hidden=3, batch=2, timesteps=3)
    layer = _random_layer(cell, rng)
    trace = _trace(cell, layer, activation)
    graph = _graph(kernel, activation, "bwd_weights", "bptt")
    recorded = {
        "dY": layer["dy"],
        "Y": trace.y,
        "initial_h": layer["h0"][None],
        "C": trace.c,
        "initial_c": layer["c0"][None],
        "gates": trace.gates,
        "R": layer["r"][None],
    }
    feeds = {t.name: np.asarray(recorded[t.name], dtype=np.float32) for t in graph.spec.inputs}
    c0 = layer["c0"] if cell == "lstm" else None
    dr, db = backward(cell, layer["dy"], layer["r"], layer["h0"], trace, c0, activation)
    out = run_ort_named(ort_session(graph.model), feeds)
    assert _rel_err(out["dR"], dr[None]) < 1e-5
    assert _rel_err(out["dB"], db[None]) < 1e-5


# --- FLOPs -----------------------------------------------------------------------------------

_ELEMENTWISE = {"Add", "Sub", "Mul", "Sigmoid", "Tanh", "Relu", "Greater", "Where"}


def _count_flops(graph: onnx.GraphProto, shapes: dict[str, tuple[int, ...]], steps: int) -> int:
    """The documented FLOP rule applied to shape-inferred nodes (Loop bodies run `steps` times)."""
    total = 0
    for node in graph.node:
        if node.op_type == "Loop":
            total += steps * _count_flops(node.attribute[0].g, shapes, steps)
            continue
        out = shapes[node.output[0]]
        if node.input and shapes.get(node.input[0] + "#int"):
            continue  # loop index arithmetic
        if node.op_type in _ELEMENTWISE:
            total += math.prod(out)
        elif node.op_type == "MatMul":
            total += 2 * math.prod(out) * shapes[node.input[0]][-1]
        elif node.op_type == "Gemm":
            a = shapes[node.input[0]]
            k = a[0] if any(at.name == "transA" and at.i for at in node.attribute) else a[-1]
            total += 2 * math.prod(out) * k + (math.prod(out) if len(node.input) == 3 else 0)
        elif node.op_type == "ReduceSum":
            total += math.prod(shapes[node.input[0]])
    return total


def _inferred_shapes(model: onnx.ModelProto) -> dict:
    inferred = shape_inference.infer_shapes(model, strict_mode=True)
    shapes: dict = {}

    def collect(graph: onnx.GraphProto) -> None:
        for v in list(graph.input) + list(graph.value_info) + list(graph.output):
            shapes[v.name] = tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
            if v.type.tensor_type.elem_type == onnx.TensorProto.INT64:
                shapes[v.name + "#int"] = True
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    collect(attr.g)

    collect(inferred.graph)
    return shapes


@pytest.mark.parametrize("cell,activation", VARIANTS)
def test_flops_executed_is_an_honest_count(cell, activation, rng):
    kernel = _kernel(cell, rng)
    t, n, h, g = kernel.timesteps, kernel.batch, kernel.hidden, kernel.gates
    graphs = {base: _graph(kernel, activation, p, base) for p, base in PASS_FORMS}
    for base in ("recurrence", "bptt"):
        model = graphs[base].model
        assert graphs[base].spec.flops_executed == _count_flops(model.graph, _inferred_shapes(model), t), base
    recurrent = 2 * g * t * n * h * h
    # op = recurrence + the input projection X·W^T and its bias Wb
    assert graphs["op"].spec.flops_executed - graphs["recurrence"].spec.flops_executed == recurrent + g * t * n * h
    assert graphs["recurrence"].spec.flops_executed > recurrent
    # backward: dh through R each step, plus dR over all steps
    assert graphs["bptt"].spec.flops_executed > 2 * recurrent


# --- plan, forms, catalog --------------------------------------------------------------------


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("form", RNN_FORMS)
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_plan(cell, form, activation, rng):
    options = GenOptions(rnn_form=form, gru_activation=activation)
    kernel = _kernel(cell, rng, train=True)
    attrs = {"gru_activation": activation} if cell == "gru" else {}
    suffix = "_relu" if cell == "gru" and activation == "relu" else ""
    assert rnn.plan(kernel, options, train=False) == [("fwd", form + suffix, attrs)]
    assert rnn.plan(kernel, options, train=True) == [
        ("fwd", form + suffix, attrs),
        ("bwd_weights", "bptt" + suffix, attrs),
    ]


def test_form_and_attrs_must_agree(rng):
    gru, lstm = _kernel("gru", rng), _kernel("lstm", rng)
    assert rnn.build(gru, "fp32", "fwd", "op_relu").spec.attrs == {"gru_activation": "relu"}
    with pytest.raises(ValueError, match="does not match"):
        rnn.build(gru, "fp32", "fwd", "op_relu", gru_activation="tanh")
    with pytest.raises(ValueError, match="unknown lstm fwd form"):
        rnn.build(lstm, "fp32", "fwd", "op_relu")
    with pytest.raises(ValueError, match="unknown gru bwd_weights form"):
        rnn.build(gru, "fp32", "bwd_weights", "recurrence")


def test_every_catalog_rnn_kernel_builds_in_both_forms():
    """All 125 RNN rows (124 kernels: one tuple is in two inference suites), both forward forms, and
    the backward of the 53 train kernels, through the same plan/build path as `dbench gen`; checked,
    not run. Graphs stay small at T = 750+ (nothing is unrolled, no weight data)."""
    kernels = [k for k in load_catalog() if k.family == "rnn"]
    assert sum(len(k.origins) for k in kernels) == 125
    train = sum("train" in k.suites for k in kernels)
    assert train == sum(k.copies("train") for k in kernels) == 53
    for form in RNN_FORMS:
        requests = gen_plan.plan(kernels, ("train", "inference_server", "inference_device"), GenOptions(rnn_form=form))
        assert sum(r.pass_name == "fwd" for r in requests) == len(kernels)
        assert sum(r.pass_name == "bwd_weights" for r in requests) == train
        for request in requests:
            graph = gen_plan.build(request)
            onnx.checker.check_model(graph.model, full_check=True)
            assert graph.model.ByteSize() < 32_000, graph.id
            assert graph.spec.flops_executed > graph.spec.flops, graph.id


@pytest.mark.parametrize("column,value", [("cell", "transformer"), ("hidden", "0"), ("timesteps", "0")])
def test_bad_kernel_rows_name_the_row(column, value, tmp_path):
    row = {"cell": "lstm", "hidden": "16", "batch": "2", "timesteps": "5"}
    row[column] = value
    path = tmp_path / "mine.csv"
    path.write_text("cell,hidden,batch,timesteps\ngru,8,1,3\n" + ",".join(row.values()) + "\n")
    with pytest.raises(KernelFileError) as err:
        load_kernel_file(path)
    message = str(err.value)
    assert f"{path}: row 3, column '{column}'" in message
    assert value in message


@pytest.mark.parametrize("cell,activation,pass_name,base", CASES, ids=CASE_IDS)
def test_weights_as_constants(cell, activation, pass_name, base, rng, tmp_path):
    """`--weights const` (weights embedded as initializers at load time) runs on ONNX Runtime and OpenVINO."""
    import openvino as ov

    from dbench.gen.weights import embed_weights, split_feeds

    graph = _graph(_kernel(cell, rng), activation, pass_name, base)
    feeds = make_feeds(graph.spec, _seed(rng))
    ref = rnn.reference(graph.spec, feeds)
    constants, remaining = split_feeds(graph.spec, feeds, "const")
    model = embed_weights(graph.model, constants)
    assert set(remaining) == {t.name for t in graph.spec.inputs if t.role == "activation"}
    _check_outputs(graph, run_ort_named(ort_session(model), remaining), ref, f"onnxruntime const {graph.id}")
    path = tmp_path / f"{graph.id}.onnx"
    path.write_bytes(model.SerializeToString())
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(remaining)
    _check_outputs(graph, {o.get_any_name(): result[o] for o in compiled.outputs}, ref, f"openvino const {graph.id}")
