"""The corpus of benchmarks/model_intake.py, built here into a git-ignored folder: `<name>.onnx` per
model plus `corpus.json` ({name: {source, inputs}}: where it came from, and the input file its first
test data set gave, if any). Sources:

  node      ONNX's backend node test cases (onnx.backend.test.case.node.collect_testcases), the first
            case of every operator, at the IR and opset onnx writes
  pytorch   the old PyTorch exports onnx ships (pytorch-converted, pytorch-operator: IR 3, opset 6 and 9)
  simple    onnx's `simple` test models (IR 4 to 7)
  real      real network structures onnx ships (light_*: AlexNet, DenseNet-121, Inception v1/v2,
            ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512; IR 3, opset 9) and ONNX Runtime's datasets
  torch     small PyTorch modules (MLP, CNN, LSTM, bidirectional GRU, Transformer encoder layer,
            ConvTranspose decoder) exported at opsets 7 to 20 (IR 3 to 9), initializers kept as inputs
            or not, node names kept or stripped; needs torch (skipped, and said, without it)
  convert   a helper-built MLP and CNN converted by onnx.version_converter to opsets 7 to 23, stamped
            with IR 3 to 13, initializers as inputs where the IR allows
  int8      onnxruntime.quantization of float models: static QDQ, static QOperator, dynamic
"""

from __future__ import annotations

import glob
import io
import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DIMS = {"batch": 2, "seq": 8}
"""The sizes every symbolic dimension of the exported models takes (the run's --dim)."""
IR_OF_OPSET = {
    7: 3,
    8: 3,
    9: 4,
    10: 5,
    11: 6,
    12: 7,
    13: 7,
    14: 7,
    15: 8,
    16: 8,
    17: 8,
    18: 8,
    19: 9,
    20: 9,
    21: 10,
    22: 10,
    23: 11,
}
"""The IR version onnx released with each opset (the oldest IR a file of that opset can have)."""
TORCH_OPSETS = (7, 9, 11, 13, 17, 20)
CONVERT_OPSETS = (7, 8, 10, 12, 14, 16, 18, 19, 21, 22, 23)


class Corpus:
    """Writes models into a folder and remembers where each came from."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.index: dict[str, dict] = {}
        self.skipped: list[str] = []

    def add(self, name: str, model: onnx.ModelProto, source: str, inputs: dict[str, np.ndarray] | None = None) -> None:
        onnx.save(model, str(self.folder / f"{name}.onnx"))
        entry = {"source": source, "inputs": None}
        if inputs:
            np.savez(self.folder / f"{name}.inputs.npz", **inputs)
            entry["inputs"] = f"{name}.inputs.npz"
        self.index[name] = entry

    def write_index(self) -> None:
        (self.folder / "corpus.json").write_text(json.dumps({"models": self.index, "skipped": self.skipped}, indent=1))


def _read_inputs(data_dir: Path, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The first test data set's inputs, by the model's input names."""
    found = []
    for path in sorted(data_dir.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1])):
        tensor = onnx.TensorProto()
        try:
            tensor.ParseFromString(path.read_bytes())
        except Exception:
            continue  # a sequence or optional input: not a tensor
        found.append((tensor.name, numpy_helper.to_array(tensor)))
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    if all(name in names for name, _ in found):
        return dict(found)
    return dict(zip(names, (array for _, array in found)))  # old data sets leave tensor names empty: by position


def node_cases(corpus: Corpus, limit: int | None) -> None:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    first: dict[str, object] = {}
    for case in sorted(cases, key=lambda c: c.name):
        op = case.model.graph.node[0].op_type if case.model.graph.node else case.name
        first.setdefault(op, case)
    for _op, case in list(sorted(first.items()))[:limit]:
        inputs = {}
        if case.data_sets:
            names = [i.name for i in case.model.graph.input]
            inputs = {
                n: v
                for n, v in zip(names, case.data_sets[0][0])
                if isinstance(v, np.ndarray) and v.dtype.kind in "biufc"
            }  # tensors of numbers only
        corpus.add(f"node__{case.name[5:]}", case.model, "node", inputs)


def shipped(corpus: Corpus, limit: int | None) -> None:
    """The models onnx and onnxruntime ship as files: old PyTorch exports, simple models, real structures."""
    root = Path(onnx.__file__).parent / "backend" / "test" / "data"
    for folder, source, prefix in (
        ("pytorch-converted", "pytorch", "ptconv"),
        ("pytorch-operator", "pytorch", "ptop"),
        ("simple", "simple", "simple"),
    ):
        for model_path in sorted(root.glob(f"{folder}/*/model.onnx"))[:limit]:
            model = onnx.load(str(model_path))
            name = f"{prefix}__{model_path.parent.name[5:]}"
            corpus.add(name, model, source, _read_inputs(model_path.parent / "test_data_set_0", model))
    for model_path in sorted(root.glob("light/*.onnx"))[:limit]:
        corpus.add(f"real__{model_path.stem[6:]}", onnx.load(str(model_path)), "real")
    import onnxruntime

    for model_path in sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "datasets", "*.onnx"))):
        corpus.add(f"real__ort_{Path(model_path).stem}", onnx.load(model_path), "real")


def _torch_modules():
    import torch
    from torch import nn

    class Cnn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(16, 16, 3, padding=1, groups=4),
                nn.ReLU(),
                nn.Conv2d(16, 32, 1),
                nn.AdaptiveAvgPool2d(1),
                nn.Flatten(),
                nn.Linear(32, 10),
            )

        def forward(self, x):
            return self.body(x)

    class Rnn(nn.Module):
        def __init__(self, cell) -> None:
            super().__init__()
            self.rnn = cell

        def forward(self, x):
            return self.rnn(x)[0]

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Sequential(
                nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1),
                nn.ReLU(),
                nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1),
            )

        def forward(self, x):
            return self.up(x)

    torch.manual_seed(0)
    return {
        "mlp": (nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), torch.randn(2, 32), {0: "batch"}),
        "cnn": (Cnn().eval(), torch.randn(2, 3, 16, 16), {0: "batch"}),
        "lstm": (Rnn(nn.LSTM(16, 16, num_layers=2)), torch.randn(8, 2, 16), {0: "seq", 1: "batch"}),
        "gru": (Rnn(nn.GRU(16, 16, bidirectional=True)), torch.randn(8, 2, 16), {0: "seq", 1: "batch"}),
        "encoder": (
            nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval(),
            torch.randn(2, 8, 32),
            {0: "batch", 1: "seq"},
        ),
        "decoder": (Decoder(), torch.randn(2, 16, 6, 6), {0: "batch"}),
    }


def _strip_names(model: onnx.ModelProto) -> onnx.ModelProto:
    for node in model.graph.node:
        node.name = ""
    return model


def torch_exports(corpus: Corpus, limit: int | None) -> None:
    try:
        import torch
    except ImportError:
        corpus.skipped.append("torch exports: torch is not installed (pip install torch)")
        return
    count = 0
    for name, (module, example, axes) in _torch_modules().items():
        for opset in TORCH_OPSETS:
            for as_inputs in (True, False):
                if limit is not None and count >= limit:
                    return
                buffer = io.BytesIO()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        torch.onnx.export(
                            module,
                            (example,),
                            buffer,
                            opset_version=opset,
                            dynamo=False,
                            input_names=["x"],
                            dynamic_axes={"x": axes},
                            keep_initializers_as_inputs=as_inputs,
                            do_constant_folding=not as_inputs,
                        )
                except Exception as err:  # an op this opset cannot express: the exporter says so
                    corpus.skipped.append(
                        f"torch {name} opset {opset}: {type(err).__name__}: {str(err).splitlines()[0][:120]}"
                    )
                    continue
                model = onnx.load_from_string(buffer.getvalue())
                label = f"torch__{name}_op{opset}_{'inputs' if as_inputs else 'consts'}"
                if opset in (11, 17) and as_inputs:
                    model, label = _strip_names(model), label + "_unnamed"
                corpus.add(label, model, "torch")
                count += 1


def _base_models() -> dict[str, onnx.ModelProto]:
    """An MLP and a CNN written with onnx.helper at opset 13 (symbolic batch), to convert."""
    rng = np.random.default_rng(0)
    w = lambda name, shape: numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)
    mlp = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
            helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
            helper.make_node("Relu", ["hb"], ["r"], name="relu"),
            helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2", transB=1),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [w("w1", (24, 48)), w("b1", (48,)), w("w2", (10, 48)), w("b2", (10,))],
    )
    cnn = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "c1", "cb1"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["a"], ["ar"]),
            helper.make_node(
                "Conv", ["ar", "c2"], ["b"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], group=2
            ),
            helper.make_node("GlobalAveragePool", ["b"], ["g"]),
            helper.make_node("Flatten", ["g"], ["f"]),
            helper.make_node("Gemm", ["f", "d", "db"], ["y"], transB=1),
        ],
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])],
        [w("c1", (8, 4, 3, 3)), w("cb1", (8,)), w("c2", (8, 4, 3, 3)), w("d", (5, 8)), w("db", (5,))],
    )
    return {
        name: helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        for name, graph in (("mlp", mlp), ("cnn", cnn))
    }


def _as_inputs(model: onnx.ModelProto) -> onnx.ModelProto:
    declared = {i.name for i in model.graph.input}
    model.graph.input.extend(
        helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
        for t in model.graph.initializer
        if t.name not in declared
    )
    return model


def converted(corpus: Corpus, limit: int | None) -> None:
    from onnx import version_converter

    count = 0
    for name, base in _base_models().items():
        for opset in CONVERT_OPSETS:
            if limit is not None and count >= limit:
                return
            try:
                model = version_converter.convert_version(base, opset)
            except Exception as err:
                corpus.skipped.append(
                    f"convert {name} to opset {opset}: {type(err).__name__}: {str(err).splitlines()[0][:120]}"
                )
                continue
            model.ir_version = IR_OF_OPSET[opset]
            if model.ir_version < 4 or opset in (14, 21):
                model = _as_inputs(model)
            suffix = "_inputs" if len(model.graph.input) > 1 else ""
            corpus.add(f"convert__{name}_op{opset}_ir{model.ir_version}{suffix}", model, "convert")
            count += 1
        newest = version_converter.convert_version(base, 23)
        for ir in (12, 13):
            newest.ir_version = ir
            corpus.add(f"convert__{name}_op23_ir{ir}", newest, "convert")


class _Calibration:
    """Random calibration batches for onnxruntime.quantization's static quantisation."""

    def __init__(self, name: str, shape: tuple[int, ...]) -> None:
        rng = np.random.default_rng(0)
        self.batches = iter([{name: rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


def int8(corpus: Corpus, limit: int | None, work: Path) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    count = 0
    for name, base in _base_models().items():
        source = work / f"{name}_float.onnx"
        fixed = onnx.ModelProto()
        fixed.CopyFrom(base)
        shape = (DIMS["batch"], 24) if name == "mlp" else (DIMS["batch"], 4, 12, 12)
        for dim, size in zip(fixed.graph.input[0].type.tensor_type.shape.dim, shape):
            dim.dim_value = size
        onnx.save(fixed, str(source))
        variants = [
            ("qdq", dict(quant_format=QuantFormat.QDQ)),
            ("qoperator", dict(quant_format=QuantFormat.QOperator)),
            ("qdq_perchannel", dict(quant_format=QuantFormat.QDQ, per_channel=True)),
            (
                "qoperator_u8s8",
                dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8),
            ),
        ]
        for label, options in variants:
            if limit is not None and count >= limit:
                return
            target = work / f"{name}_{label}.onnx"
            quantize_static(str(source), str(target), _Calibration("x", shape), **options)
            corpus.add(f"int8__{name}_{label}", onnx.load(str(target)), "int8")
            count += 1
        target = work / f"{name}_dynamic.onnx"
        quantize_dynamic(str(source), str(target))
        corpus.add(f"int8__{name}_dynamic", onnx.load(str(target)), "int8")


def build(folder: Path, limit: int | None = None) -> Corpus:
    """Build the corpus into `folder` (emptied first); `limit` caps the models taken from each source."""
    import logging

    logging.getLogger().setLevel(logging.ERROR)  # onnxruntime.quantization's advice, once per model
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    work = folder / ".work"
    work.mkdir()
    corpus = Corpus(folder)
    node_cases(corpus, limit)
    shipped(corpus, limit)
    torch_exports(corpus, limit)
    converted(corpus, limit)
    int8(corpus, limit, work)
    shutil.rmtree(work)
    corpus.write_index()
    return corpus
