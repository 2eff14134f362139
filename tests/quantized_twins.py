"""Quantized twins made at test time, as edge teams make them: a small torch CNN classifier exported to
ONNX and quantized by onnxruntime.quantization.quantize_static (QDQ, per-channel weights, a seeded
calibration reader), a small MLP quantized by quantize_dynamic, and a QDQ twin broken on purpose (one
weight scale wrong) whose accuracy cost a comparison must show."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

IMAGE = (1, 3, 16, 16)
CLASSES = 10


def _export(module, example, path: Path) -> Path:
    """The torch module exported to ONNX (opset 17, batch fixed) at `path`."""
    import torch

    module.eval()
    with torch.no_grad():
        torch.onnx.export(
            module, (example,), str(path), input_names=["x"], output_names=["logits"], opset_version=17, dynamo=False
        )
    return path


def cnn_classifier(folder: Path, seed: int) -> Path:
    """A two-convolution classifier ([1, 3, 16, 16] -> [1, 10] logits) with seeded weights, as fp32 ONNX."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    module = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1, stride=2),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, CLASSES),
    )
    return _export(module, torch.randn(*IMAGE), folder / "cnn_fp32.onnx")


def mlp(folder: Path, seed: int) -> Path:
    """A three-layer MLP ([1, 64] -> [1, 10]) with seeded weights, as fp32 ONNX."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    module = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, CLASSES))
    return _export(module, torch.randn(1, 64), folder / "mlp_fp32.onnx")


class _Calibration:
    """quantize_static's data reader: `count` seeded standard-normal batches for the model's one input
    (the distribution dbench's seeded feeds draw from a float input)."""

    def __init__(self, name: str, shape: tuple[int, ...], seed: int, count: int = 16) -> None:
        rng = np.random.default_rng(seed)
        self._batches = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(count)])

    def get_next(self):
        return next(self._batches, None)


def qdq_twin(fp32: Path, seed: int) -> Path:
    """The static int8 QDQ twin of `fp32` (per-channel weights, uint8 activations, int8 weights)."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    out = fp32.with_name(fp32.stem.replace("_fp32", "") + "_int8.onnx")
    quantize_static(
        str(fp32),
        str(out),
        _Calibration("x", IMAGE, seed),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
    )
    return out


def dynamic_twin(fp32: Path) -> Path:
    """The dynamic int8 twin of `fp32` (int8 weights; activations quantized per call)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = fp32.with_name(fp32.stem.replace("_fp32", "") + "_dynamic.onnx")
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
    return out


def broken_twin(quantized: Path, factor: float = 16.0) -> Path:
    """A copy of a QDQ model whose first convolution's weight scales are `factor` times too large: what a
    wrong scale in a quantizer's output looks like, an accuracy cost a comparison must not miss."""
    model = onnx.load(str(quantized))
    dequantized = {n.input[0]: n for n in model.graph.node if n.op_type == "DequantizeLinear"}
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    scale_name = dequantized[_weight_source(model, conv)].input[1]
    for i, init in enumerate(model.graph.initializer):
        if init.name == scale_name:
            wrong = numpy_helper.to_array(init) * np.float32(factor)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(wrong.astype(np.float32), scale_name))
    out = quantized.with_name(quantized.stem + "_broken.onnx")
    onnx.save(model, str(out))
    return out


def _weight_source(model: onnx.ModelProto, conv: onnx.NodeProto) -> str:
    """The quantized weight initializer that the DequantizeLinear feeding `conv`'s weight reads."""
    producer = next(n for n in model.graph.node if conv.input[1] in n.output)
    return producer.input[0]
