"""Export the example models of docs/from-model.md (examples/models/) from PyTorch modules written here.

Run it in its own environment (torch is not a dbench dependency):
    python -m venv venv-torch && venv-torch/bin/pip install torch==2.13.0 onnx onnxscript
    venv-torch/bin/python scripts/export_models.py --out examples/models

Extraction needs shapes, not trained weights, so the files are stored without weight data: every
floating initializer of more than KEEP_ELEMENTS elements becomes a graph input, and the model's metadata
`dbench.random_weights` records its [min, max] at export. dbench draws such inputs uniformly in that
range (PyTorch's own initialisers are uniform or constant, so the drawn weights are alike) and makes
them constants in memory, as for its own graphs. The three models stay under 100 kB together.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import onnx
import torch
from onnx import numpy_helper
from torch import nn

KEEP_ELEMENTS = 16
RANDOM_WEIGHTS = "dbench.random_weights"  # dbench.sources.model_spec.RANDOM_WEIGHTS
OPSET = 18


class BasicBlock(nn.Module):
    """ResNet's two 3x3 convolutions with a shortcut (a 1x1 strided projection when the shape changes)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """ResNet-18 (He et al. 2016) for 1000 classes, as torchvision builds it."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
        self.layers = nn.Sequential(
            *[nn.Sequential(BasicBlock(cin, cout, s), BasicBlock(cout, cout, 1)) for cin, cout, s in widths]
        )
        self.fc = nn.Linear(512, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class EncoderLayer(nn.Module):
    """A pre-norm transformer encoder layer with attention written as MatMuls (batched Q·K^T and P·V)."""

    def __init__(self, width: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ffn = nn.Sequential(nn.Linear(width, ffn), nn.GELU(), nn.Linear(ffn, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, s, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) / (w // self.heads) ** 0.5
        attended = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, w)
        x = x + self.proj(attended)
        return x + self.ffn(self.norm2(x))


class Encoder(nn.Module):
    """Four encoder layers, width 256, 4 heads, feed-forward 1024 (a small BERT-like encoder)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[EncoderLayer(256, 4, 1024) for _ in range(4)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class LstmModel(nn.Module):
    """Two stacked LSTM layers, hidden 256 (input width 256), then a linear head: a speech/text tagger."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(256, 256, num_layers=2)
        self.head = nn.Linear(256, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(x)[0])


def strip_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """Large floating initializers -> graph inputs, their [min, max] in the metadata."""
    ranges = {}
    kept = []
    for tensor in model.graph.initializer:
        array = numpy_helper.to_array(tensor)
        if array.dtype.kind == "f" and array.size > KEEP_ELEMENTS:
            ranges[tensor.name] = [float(array.min()), float(array.max())]
            model.graph.input.append(
                onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(array.shape))
            )
        else:
            kept.append(tensor)
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    model.metadata_props.add(key=RANDOM_WEIGHTS, value=json.dumps(ranges))
    return model


def export(module: nn.Module, example: torch.Tensor, path: Path, dynamic: dict) -> None:
    module.eval()
    program = torch.onnx.export(
        module,
        (example,),
        dynamo=True,
        opset_version=OPSET,
        input_names=["x"],
        output_names=["y"],
        dynamic_shapes=({k: torch.export.Dim(v) for k, v in dynamic.items()},),
        external_data=False,
    )
    model = strip_weights(program.model_proto)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    print(f"{path}: {path.stat().st_size / 1024:.1f} kB, {len(model.graph.node)} nodes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("examples/models"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    export(ResNet18(), torch.randn(1, 3, 224, 224), args.out / "resnet18.onnx", {0: "batch"})
    export(Encoder(), torch.randn(2, 64, 256), args.out / "encoder.onnx", {0: "batch", 1: "seq"})
    export(LstmModel(), torch.randn(32, 4, 256), args.out / "lstm.onnx", {0: "seq", 1: "batch"})


if __name__ == "__main__":
    main()
