"""Old-opset CNNs exported with PyTorch's TorchScript exporter (opsets 7 to 12), written into a folder:
the structures old model zoos hold (ResNet-50's bottlenecks, MobileNet v2's depthwise blocks with ReLU6,
a DenseNet's concatenations, a VGG with LRN, Dropout and a Softmax over classes), random weights
seeded, BatchNormalization with random running statistics. Used by benchmarks/foreign_verification.py.

    .venv/bin/python benchmarks/old_opset_models.py OUT_DIR [--opsets 7,9,11,12]
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

OPSETS = (7, 9, 11, 12)


def models():
    """name -> (module, input shape). Built here so that nothing is downloaded."""
    import torch
    from torch import nn

    def bn(channels: int) -> nn.BatchNorm2d:
        layer = nn.BatchNorm2d(channels)
        layer.running_mean.uniform_(-0.5, 0.5)
        layer.running_var.uniform_(0.5, 1.5)
        layer.weight.data.uniform_(0.5, 1.5)
        layer.bias.data.uniform_(-0.5, 0.5)
        return layer

    class Bottleneck(nn.Module):
        def __init__(self, inside: int, width: int, stride: int) -> None:
            super().__init__()
            out = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(inside, width, 1, bias=False),
                bn(width),
                nn.ReLU(),
                nn.Conv2d(width, width, 3, stride, 1, bias=False),
                bn(width),
                nn.ReLU(),
                nn.Conv2d(width, out, 1, bias=False),
                bn(out),
            )
            self.skip = (
                nn.Sequential(nn.Conv2d(inside, out, 1, stride, bias=False), bn(out))
                if stride != 1 or inside != out
                else nn.Identity()
            )

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    def resnet50() -> nn.Module:
        layers, inside = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), bn(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(inside, width, stride if i == 0 else 1))
                inside = width * 4
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inside, 1000), nn.Softmax(dim=1))

    class Inverted(nn.Module):
        def __init__(self, inside: int, out: int, stride: int, expand: int = 6) -> None:
            super().__init__()
            hidden = inside * expand
            self.use_skip = stride == 1 and inside == out
            self.body = nn.Sequential(
                nn.Conv2d(inside, hidden, 1, bias=False),
                bn(hidden),
                nn.ReLU6(),
                nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                bn(hidden),
                nn.ReLU6(),
                nn.Conv2d(hidden, out, 1, bias=False),
                bn(out),
            )

        def forward(self, x):
            return x + self.body(x) if self.use_skip else self.body(x)

    def mobilenet() -> nn.Module:
        layers, inside = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), bn(32), nn.ReLU6()], 32
        for out, blocks, stride in ((16, 1, 1), (24, 2, 2), (32, 3, 2), (64, 2, 2), (96, 2, 1), (160, 2, 2)):
            for i in range(blocks):
                layers.append(Inverted(inside, out, stride if i == 0 else 1, 1 if out == 16 else 6))
                inside = out
        return nn.Sequential(
            *layers,
            nn.Conv2d(inside, 640, 1, bias=False),
            bn(640),
            nn.ReLU6(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Dropout(0.2),
            nn.Linear(640, 1000),
        )

    class Dense(nn.Module):
        def __init__(self, inside: int, growth: int = 16) -> None:
            super().__init__()
            self.body = nn.Sequential(
                bn(inside),
                nn.ReLU(),
                nn.Conv2d(inside, 4 * growth, 1, bias=False),
                bn(4 * growth),
                nn.ReLU(),
                nn.Conv2d(4 * growth, growth, 3, 1, 1, bias=False),
            )

        def forward(self, x):
            return torch.cat([x, self.body(x)], 1)

    def densenet() -> nn.Module:
        layers, inside = [nn.Conv2d(3, 32, 7, 2, 3, bias=False), bn(32), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 32
        for stage in range(3):
            for _ in range(4):
                layers.append(Dense(inside))
                inside += 16
            if stage < 2:
                layers += [bn(inside), nn.ReLU(), nn.Conv2d(inside, inside // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
                inside //= 2
        return nn.Sequential(
            *layers, bn(inside), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inside, 100)
        )

    def vgg() -> nn.Module:
        layers, inside = [], 3
        for out in (32, "M", 64, "M", 128, 128, "M", 256, 256, "M"):
            if out == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(inside, out, 3, 1, 1), nn.ReLU()]
                inside = out
            if out == 32:
                layers.append(nn.LocalResponseNorm(5, 1e-4, 0.75, 2.0))
        return nn.Sequential(
            *layers,
            nn.Flatten(),
            nn.Linear(256 * 7 * 7, 512),
            nn.ReLU(),
            nn.Dropout(0.5),
            nn.Linear(512, 100),
            nn.Softmax(dim=1),
        )

    torch.manual_seed(0)
    return {
        "resnet50": (resnet50(), (1, 3, 224, 224)),
        "mobilenet_v2": (mobilenet(), (1, 3, 224, 224)),
        "densenet": (densenet(), (1, 3, 112, 112)),
        "vgg_lrn": (vgg(), (1, 3, 112, 112)),
    }


def export(out: Path, opsets: tuple[int, ...] = OPSETS) -> list[Path]:
    """Write `<model>_opset<N>.onnx` for every model and opset the exporter can write; returns the paths."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (module, shape) in models().items():
        module.eval()
        example = torch.rand(shape) * 2 - 1
        for opset in opsets:
            buffer = io.BytesIO()
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                try:
                    torch.onnx.export(
                        module,
                        (example,),
                        buffer,
                        opset_version=opset,
                        dynamo=False,
                        input_names=["x"],
                        output_names=["y"],
                    )
                except Exception as err:  # an op this opset cannot express: said, and the others written
                    print(
                        f"{name} opset {opset}: not exported ({type(err).__name__}: {str(err).splitlines()[0][:120]})"
                    )
                    continue
            path = out / f"{name}_opset{opset}.onnx"
            path.write_bytes(buffer.getvalue())
            written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--opsets", default=",".join(map(str, OPSETS)))
    args = parser.parse_args()
    for path in export(args.out, tuple(int(o) for o in args.opsets.split(","))):
        print(path)


if __name__ == "__main__":
    main()
