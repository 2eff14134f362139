"""The models of benchmarks/predict_accuracy.py, built here from PyTorch modules written in this file
(torch.onnx.export, TorchScript exporter, opset 17, fixed shapes, PyTorch's own random initial
weights: structure is what a latency prediction needs) and int8 models made from some of them by
onnxruntime.quantization (static QDQ, and dynamic MatMulInteger, with the settings its guidance gives
for this CPU). Families: CNNs with grouped and depthwise convolutions, a 1-D convolutional audio model,
a U-Net with transposed convolutions, transformer encoders (text, vision) and a causal decoder, LSTM
and GRU models, an MLP, int8.

    PYTHONPATH=. python benchmarks/predict_corpus.py --out build/predict-corpus

The `tv_` models are torchvision's own architectures at their real widths (ResNet-18/50, MobileNetV2,
MobileNetV3-Small/Large with squeeze-excitation and hard-swish, EfficientNet-B0, RegNetY-400MF,
ViT-B/16), exported by benchmarks/torchvision_export.py with an interpreter that has torchvision
(`--torchvision-python`, or TORCHVISION_PYTHON): torchvision does not import beside the torch of
dbench's test extra, so it lives in a venv of its own outside the repository:

    python3 -m venv ../tv && ../tv/bin/pip install torch==2.14.1 torchvision==0.29.1 onnx
    PYTHONPATH=. python benchmarks/predict_corpus.py --torchvision-python ../tv/bin/python --models tv_resnet18
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn

OPSET = 17


def conv_bn(
    cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: type[nn.Module] | None = nn.ReLU
) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class Basic(nn.Module):
    """ResNet's basic block."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, cout, 3, stride), conv_bn(cout, cout, 3, act=None))
        self.skip = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.skip(x))


class Bottleneck(nn.Module):
    """ResNet-50's bottleneck; `groups` > 1 and a wider middle make it ResNeXt's."""

    def __init__(self, cin: int, mid: int, cout: int, stride: int, groups: int = 1) -> None:
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(cin, mid, 1), conv_bn(mid, mid, 3, stride, groups), conv_bn(mid, cout, 1, act=None)
        )
        self.skip = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.skip(x))


class ResNet(nn.Module):
    def __init__(self, blocks: list[nn.Module], width: int, classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


def resnet18() -> nn.Module:
    plan = [
        (64, 64, 1),
        (64, 64, 1),
        (64, 128, 2),
        (128, 128, 1),
        (128, 256, 2),
        (256, 256, 1),
        (256, 512, 2),
        (512, 512, 1),
    ]
    return ResNet([Basic(*p) for p in plan], 512)


def resnet50() -> nn.Module:
    blocks, cin = [], 64
    for mid, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(count):
            blocks.append(Bottleneck(cin, mid, mid * 4, stride if i == 0 else 1))
            cin = mid * 4
    return ResNet(blocks, 2048)


def resnext() -> nn.Module:
    """ResNeXt-style (32 groups of 4 channels in the 3x3), two stages."""
    blocks, cin = [], 64
    for mid, count, stride in ((128, 2, 1), (256, 2, 2)):
        for i in range(count):
            blocks.append(Bottleneck(cin, mid, mid * 2, stride if i == 0 else 1, groups=32))
            cin = mid * 2
    return ResNet(blocks, cin)


class InvertedResidual(nn.Module):
    """MobileNetV2's block (expand 1x1, depthwise 3x3, project 1x1), with squeeze-excitation and another
    activation for MobileNetV3 and EfficientNet."""

    def __init__(
        self, cin: int, cout: int, stride: int, expand: int, act: type[nn.Module] = nn.ReLU6, se: bool = False
    ) -> None:
        super().__init__()
        mid = cin * expand
        layers: list[nn.Module] = [conv_bn(cin, mid, 1, act=act)] if expand != 1 else []
        layers.append(conv_bn(mid, mid, 3, stride, groups=mid, act=act))
        if se:
            layers.append(SqueezeExcite(mid))
        layers.append(conv_bn(mid, cout, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = (
            nn.Conv2d(channels, max(8, channels // 4), 1),
            nn.Conv2d(max(8, channels // 4), channels, 1),
        )

    def forward(self, x):
        scale = torch.sigmoid(self.fc2(torch.relu(self.fc1(nn.functional.adaptive_avg_pool2d(x, 1)))))
        return x * scale


class MobileNet(nn.Module):
    def __init__(self, plan, stem: int, last: int, act: type[nn.Module], se_from: int = 99) -> None:
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, stem, 3, 2, act=act)]
        cin = stem
        for i, (t, c, n, s) in enumerate(plan):
            for j in range(n):
                layers.append(InvertedResidual(cin, c, s if j == 0 else 1, t, act, se=i >= se_from))
                cin = c
        layers.append(conv_bn(cin, last, 1, act=act))
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(last, 1000)

    def forward(self, x):
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def mobilenet_v2() -> nn.Module:
    plan = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    return MobileNet(plan, 32, 1280, nn.ReLU6)


def mobilenet_v3() -> nn.Module:
    """MobileNetV3-Small-like: hard-swish and squeeze-excitation in the later stages."""
    plan = [(1, 16, 1, 2), (4, 24, 2, 2), (4, 40, 3, 2), (6, 48, 2, 1), (6, 96, 3, 2)]
    return MobileNet(plan, 16, 576, nn.Hardswish, se_from=2)


def efficientnet() -> nn.Module:
    """EfficientNet-B0-like: SiLU (swish) and squeeze-excitation in every block."""
    plan = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 40, 2, 2), (6, 80, 3, 2), (6, 112, 3, 1), (6, 192, 4, 2), (6, 320, 1, 1)]
    return MobileNet(plan, 32, 1280, nn.SiLU, se_from=0)


class ShuffleBlock(nn.Module):
    """ShuffleNet v2's unit: split, 1x1 / depthwise 3x3 / 1x1 on one half, concat, channel shuffle."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        half = channels // 2
        self.branch = nn.Sequential(
            conv_bn(half, half, 1), conv_bn(half, half, 3, groups=half, act=None), conv_bn(half, half, 1)
        )

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        out = torch.cat([a, self.branch(b)], dim=1)
        n, c, h, w = out.shape
        return out.reshape(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)


def shufflenet() -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, 24, 3, 2), nn.MaxPool2d(3, 2, 1), conv_bn(24, 116, 1)]
    for channels, count in ((116, 4), (232, 8), (464, 4)):
        if channels != 116:
            layers.append(conv_bn(channels // 2, channels, 3, 2, groups=channels // 2))
        layers += [ShuffleBlock(channels) for _ in range(count)]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(464, 1000))


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand: int) -> None:
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU())
        self.e1, self.e3 = (
            nn.Sequential(nn.Conv2d(squeeze, expand, 1), nn.ReLU()),
            nn.Sequential(nn.Conv2d(squeeze, expand, 3, padding=1), nn.ReLU()),
        )

    def forward(self, x):
        s = self.squeeze(x)
        return torch.cat([self.e1(s), self.e3(s)], 1)


def squeezenet() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, 2),
        nn.ReLU(),
        nn.MaxPool2d(3, 2),
        Fire(64, 16, 64),
        Fire(128, 16, 64),
        nn.MaxPool2d(3, 2),
        Fire(128, 32, 128),
        Fire(256, 32, 128),
        nn.MaxPool2d(3, 2),
        Fire(256, 48, 192),
        Fire(384, 48, 192),
        Fire(384, 64, 256),
        Fire(512, 64, 256),
        nn.Conv2d(512, 1000, 1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def vgg() -> nn.Module:
    layers: list[nn.Module] = []
    cin = 3
    for c in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
        if c == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(cin, c, 3, padding=1), nn.ReLU()]
            cin = c
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512 * 3 * 3, 1024), nn.ReLU(), nn.Linear(1024, 1000))


class Dense(nn.Module):
    def __init__(self, cin: int, growth: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin),
            nn.ReLU(),
            nn.Conv2d(cin, 4 * growth, 1, bias=False),
            nn.BatchNorm2d(4 * growth),
            nn.ReLU(),
            nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False),
        )

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


def densenet() -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for count in (6, 12):
        for _ in range(count):
            layers.append(Dense(cin, 32))
            cin += 32
        layers += [conv_bn(cin, cin // 2, 1), nn.AvgPool2d(2)]
        cin //= 2
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000))


class UNet(nn.Module):
    """A three-level U-Net: transposed convolutions up, skip connections concatenated."""

    def __init__(self) -> None:
        super().__init__()
        self.d1, self.d2, self.d3 = conv_bn(3, 32, 3), conv_bn(32, 64, 3, 2), conv_bn(64, 128, 3, 2)
        self.u2, self.c2 = nn.ConvTranspose2d(128, 64, 2, 2), conv_bn(128, 64, 3)
        self.u1, self.c1 = nn.ConvTranspose2d(64, 32, 2, 2), conv_bn(64, 32, 3)
        self.out = nn.Conv2d(32, 2, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(a)
        c = self.d3(b)
        b = self.c2(torch.cat([self.u2(c), b], 1))
        return self.out(self.c1(torch.cat([self.u1(b), a], 1)))


def kws() -> nn.Module:
    """A keyword-spotting model: 1-D convolutions over 40 mel bands, then pooling and a classifier."""
    layers: list[nn.Module] = []
    cin = 40
    for cout, stride in ((128, 1), (128, 2), (256, 1), (256, 2)):
        layers += [nn.Conv1d(cin, cout, 5, stride, 2), nn.BatchNorm1d(cout), nn.ReLU()]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(256, 12))


def encoder() -> nn.Module:
    """PyTorch's own TransformerEncoder: 4 layers, width 256, 4 heads, GELU feed-forward 1024."""
    layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True)
    return nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)


class Bert(nn.Module):
    """A BERT-mini-like encoder over token ids: embeddings (token, position), 4 layers, pooler."""

    def __init__(self, vocab: int = 8192, width: int = 256, seq: int = 128) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Parameter(torch.randn(1, seq, width) * 0.02)
        self.norm = nn.LayerNorm(width)
        self.encoder = encoder()
        self.pool = nn.Linear(width, width)

    def forward(self, ids):
        x = self.encoder(self.norm(self.tokens(ids) + self.positions))
        return torch.tanh(self.pool(x[:, 0]))


class Vit(nn.Module):
    """A ViT-Tiny-like model: 16x16 patches of a 224x224 image, width 192, 6 layers, 3 heads."""

    def __init__(self) -> None:
        super().__init__()
        self.patches = nn.Conv2d(3, 192, 16, 16)
        self.position = nn.Parameter(torch.randn(1, 196, 192) * 0.02)
        layer = nn.TransformerEncoderLayer(
            192, 3, 768, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
        self.head = nn.Linear(192, 1000)

    def forward(self, x):
        tokens = self.patches(x).flatten(2).transpose(1, 2) + self.position
        return self.head(self.encoder(tokens).mean(1))


class Decoder(nn.Module):
    """A GPT-like causal decoder: 4 pre-norm layers, width 256, the causal mask a constant."""

    def __init__(self, seq: int = 64) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.layers = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))
        self.head = nn.Linear(256, 4096)

    def forward(self, x):
        return self.head(self.layers(x, mask=self.mask))


class Recurrent(nn.Module):
    def __init__(
        self, cell: type[nn.Module], width: int, hidden: int, layers: int, bidirectional: bool, classes: int
    ) -> None:
        super().__init__()
        self.rnn = cell(width, hidden, num_layers=layers, bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


class Crnn(nn.Module):
    """Convolutions over a spectrogram, then a GRU over time (a speech or OCR front end)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(conv_bn(1, 32, 3), nn.MaxPool2d(2), conv_bn(32, 64, 3), nn.MaxPool2d(2))
        self.gru = nn.GRU(64 * 10, 128)
        self.head = nn.Linear(128, 30)

    def forward(self, x):
        f = self.conv(x)  # [1, 64, 10, T/4]
        seq = f.flatten(1, 2).permute(2, 0, 1)
        return self.head(self.gru(seq)[0])


def mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(512, 1024),
        nn.ReLU(),
        nn.Linear(1024, 1024),
        nn.ReLU(),
        nn.Linear(1024, 1024),
        nn.ReLU(),
        nn.Linear(1024, 10),
    )


@dataclass(frozen=True)
class Spec:
    """A model of the corpus: its module, its example input, and, for int8, the float model it quantises."""

    build: Callable[[], nn.Module] | None
    example: Callable[[], torch.Tensor] | None
    quantise: str = ""
    """`static` (QDQ, calibrated on random inputs) or `dynamic` (MatMulInteger) of the model named `source`."""
    source: str = ""
    torchvision: str = ""
    """The torchvision.models builder it is (exported by benchmarks/torchvision_export.py)."""


IMAGE = lambda size=224: torch.randn(1, 3, size, size)  # noqa: E731
MODELS: dict[str, Spec] = {
    "resnet18": Spec(resnet18, IMAGE),
    "resnet50": Spec(resnet50, IMAGE),
    "resnext": Spec(resnext, lambda: IMAGE(112)),
    "mobilenet_v2": Spec(mobilenet_v2, IMAGE),
    "mobilenet_v3": Spec(mobilenet_v3, IMAGE),
    "efficientnet": Spec(efficientnet, IMAGE),
    "shufflenet": Spec(shufflenet, IMAGE),
    "squeezenet": Spec(squeezenet, IMAGE),
    "vgg": Spec(vgg, lambda: IMAGE(96)),
    "densenet": Spec(densenet, lambda: IMAGE(112)),
    "unet": Spec(UNet, lambda: IMAGE(128)),
    "kws": Spec(kws, lambda: torch.randn(1, 40, 98)),
    "encoder": Spec(encoder, lambda: torch.randn(1, 128, 256)),
    "bert": Spec(Bert, lambda: torch.randint(0, 8192, (1, 128))),
    "vit": Spec(Vit, IMAGE),
    "decoder": Spec(Decoder, lambda: torch.randn(1, 64, 256)),
    "lstm": Spec(lambda: Recurrent(nn.LSTM, 256, 256, 2, False, 32), lambda: torch.randn(64, 1, 256)),
    "gru": Spec(lambda: Recurrent(nn.GRU, 128, 128, 1, True, 32), lambda: torch.randn(64, 1, 128)),
    "crnn": Spec(Crnn, lambda: torch.randn(1, 1, 40, 128)),
    "mlp": Spec(mlp, lambda: torch.randn(8, 512)),
    "resnet18_int8": Spec(None, None, "static", "resnet18"),
    "mobilenet_v2_int8": Spec(None, None, "static", "mobilenet_v2"),
    "mlp_int8": Spec(None, None, "dynamic", "mlp"),
    "encoder_int8": Spec(None, None, "dynamic", "encoder"),
}
TORCHVISION = (
    "resnet18",
    "resnet50",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "efficientnet_b0",
    "regnet_y_400mf",
    "vit_b_16",
)
MODELS.update({f"tv_{name}": Spec(None, None, torchvision=name) for name in TORCHVISION})
MODELS.update({f"tv_{name}_int8": Spec(None, None, "static", f"tv_{name}") for name in ("resnet18", "mobilenet_v2")})
REAL = tuple([f"tv_{name}" for name in TORCHVISION] + ["lstm", "tv_resnet18_int8", "tv_mobilenet_v2_int8"])
"""The models at their real widths (torchvision's, the LSTM model, int8 QDQ exports of two of them)."""
TORCHVISION_PYTHON = os.environ.get("TORCHVISION_PYTHON", "")


def export_torchvision(spec: Spec, path: Path, python: str) -> None:
    """torchvision's own architecture, exported by an interpreter that has torchvision."""
    if not python:
        raise SystemExit(
            f"{path.stem} is torchvision's {spec.torchvision}: give --torchvision-python (a venv with torch "
            "2.14.1 and torchvision 0.29.1, see this file's docstring) or build it there first"
        )
    subprocess.run(
        [python, str(Path(__file__).with_name("torchvision_export.py")), spec.torchvision, str(path)], check=True
    )


def export(name: str, spec: Spec, path: Path) -> None:
    torch.manual_seed(hash(name) % 2**31)
    module = spec.build().eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings():  # gradients on: PyTorch's fused encoder fast path has no ONNX export
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, (spec.example(),), buffer, opset_version=OPSET, dynamo=False, input_names=["x"], output_names=["y"]
        )
    model = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def reduce_range() -> bool:
    """What onnxruntime.quantization's own guidance asks for this machine: 7-bit weights on an x86 CPU
    without VNNI, where the uint8 x int8 path's 16-bit pair sums saturate (ONNX Runtime's results then
    miss the model's by 13-22 % here, and dbench refuses their times), full 8 bits elsewhere."""
    from dbench.store.metadata import host_metadata

    isa = set(host_metadata().get("isa", []))
    return bool(isa & {"avx2", "avx512"}) and "vnni" not in isa


def quantise(spec: Spec, source: Path, path: Path) -> None:
    """onnxruntime.quantization of the float model at `source`, as its guidance for CPU inference says
    (QDQ, uint8 activations, int8 weights, `reduce_range` by the machine): static (calibrated on a few
    random inputs) or dynamic (MatMulInteger)."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    if spec.quantise == "dynamic":
        quantize_dynamic(str(source), str(path), weight_type=QuantType.QInt8, reduce_range=reduce_range())
        return
    model = onnx.load(str(source))
    (value,) = model.graph.input
    shape = [d.dim_value for d in value.type.tensor_type.shape.dim]

    class Random(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(0)
            self.feeds = iter([{value.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    quantize_static(
        str(source),
        str(path),
        Random(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        reduce_range=reduce_range(),
    )


def build(folder: Path, names: list[str], python: str = TORCHVISION_PYTHON) -> dict[str, Path]:
    """Every model named (and the float models the int8 ones quantise) in `folder`, kept when present."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in names:
        spec = MODELS[name]
        path = folder / f"{name}.onnx"
        if not path.exists():
            if spec.quantise:
                source = build(folder, [spec.source], python)[spec.source]
                quantise(spec, source, path)
            elif spec.torchvision:
                export_torchvision(spec, path, python)
            else:
                export(name, spec, path)
        paths[name] = path
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/predict-corpus"))
    parser.add_argument("--models", default=",".join(MODELS), help="names, or `real` (the models at real widths)")
    parser.add_argument("--torchvision-python", default=TORCHVISION_PYTHON, help="an interpreter with torchvision")
    args = parser.parse_args()
    names = list(REAL) if args.models == "real" else args.models.split(",")
    for path in build(args.out, names, args.torchvision_python).values():
        print(
            f"{path}: {path.stat().st_size / 2**20:.1f} MiB, "
            f"{len(onnx.load(str(path), load_external_data=False).graph.node)} nodes"
        )


if __name__ == "__main__":
    main()
