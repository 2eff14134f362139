"""The quantized test corpus, made at test time (test helpers): torchvision's ResNet-18 and MobileNetV2
architectures written here in torch (torchvision does not import beside the test extra's torch), shrunk
by a width multiplier and a small input, exported to ONNX and quantized by onnxruntime.quantization as
its documentation says: static QDQ with per-channel int8 weights and uint8 activations, calibrated on a
reader of random images; dynamic int8 (DynamicQuantizeLinear, MatMulInteger) for an MLP."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import onnx

OPSET = 17


def _divisible(value: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible: channels rounded to a multiple of 8, never below 90 % of `value`."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def resnet18(width: float = 1.0, classes: int = 1000):
    """torchvision's ResNet-18 (BasicBlock x [2, 2, 2, 2], 1x1 downsample), channels times `width`,
    initialised as torchvision does (Kaiming fan-out convolutions, unit BatchNorm)."""
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int, stride: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout)]

    class Basic(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(*conv_bn(cin, cout, 3, stride), nn.ReLU(), *conv_bn(cout, cout, 3, 1))
            down = stride != 1 or cin != cout
            self.skip = nn.Sequential(*conv_bn(cin, cout, 1, stride)) if down else nn.Identity()
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.body(x) + self.skip(x))

    widths = [_divisible(c * width) for c in (64, 128, 256, 512)]
    layers: list[nn.Module] = [*conv_bn(3, widths[0], 7, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = widths[0]
    for stage, cout in enumerate(widths):
        for block in range(2):
            layers.append(Basic(cin, cout, 2 if stage and not block else 1))
            cin = cout
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))
    _torchvision_init(model)
    return model


def mobilenet_v2(width: float = 1.0, classes: int = 1000):
    """torchvision's MobileNetV2 (inverted residuals, ReLU6, 1280-channel head), channels times
    `width` (rounded to multiples of 8 as torchvision does)."""
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, nn.ReLU6()) if act else nn.Sequential(*layers)

    class Inverted(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            mid = cin * expand
            body = [conv_bn(cin, mid, 1)] if expand != 1 else []
            body += [conv_bn(mid, mid, 3, stride, groups=mid), conv_bn(mid, cout, 1, act=False)]
            self.body = nn.Sequential(*body)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    plan = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    cin = _divisible(32 * width)
    layers: list[nn.Module] = [conv_bn(3, cin, 3, 2)]
    for t, c, n, s in plan:
        for i in range(n):
            cout = _divisible(c * width)
            layers.append(Inverted(cin, cout, s if i == 0 else 1, t))
            cin = cout
    last = _divisible(1280 * max(1.0, width))
    layers.append(conv_bn(cin, last, 1))
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(last, classes))
    _torchvision_init(model)
    return model


def mlp(features: int = 256, hidden: int = 512, classes: int = 100):
    """A three-layer MLP: the MatMuls that quantize_dynamic turns into MatMulInteger."""
    from torch import nn

    return nn.Sequential(
        nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes)
    )


def _torchvision_init(model) -> None:
    """torchvision's initialisation: Kaiming-normal fan-out convolutions, BatchNorm weight 1 and bias 0,
    linear layers normal(0, 0.01)."""
    import torch
    from torch import nn

    generator = torch.Generator().manual_seed(0)
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu", generator=generator)
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, 0.01, generator=generator)
            nn.init.zeros_(module.bias)


def normalise(model, shape: tuple[int, ...], batches: int = 4):
    """BatchNorm's running statistics measured on random images (a cumulative average over `batches`),
    as training would leave them: without it a randomly initialised network's activations shrink layer
    by layer (depthwise convolutions initialised by fan-out), and its output hardly depends on its input."""
    import torch
    from torch import nn

    generator = torch.Generator().manual_seed(1)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(8, *shape[1:], generator=generator))
    return model.eval()


def export(module, shape: tuple[int, ...], path: Path) -> Path:
    """torch.onnx.export of `module` in eval mode (TorchScript exporter, opset 17, fixed shape), input `x`."""
    import torch

    torch.manual_seed(0)
    module = module.eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (torch.randn(*shape),),
            buffer,
            opset_version=OPSET,
            dynamo=False,
            input_names=["x"],
            output_names=["y"],
        )
    model = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def quantize_static_qdq(source: Path, target: Path, shape: tuple[int, ...], images: int = 8) -> Path:
    """onnxruntime.quantization.quantize_static as its documentation says for CPU: QDQ format, uint8
    activations, per-channel int8 weights, after its pre-processing (shape inference and optimisation),
    calibrated (MinMax) on `images` random normal inputs."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Random(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(1)
            self.feeds = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(images)])

        def get_next(self):
            return next(self.feeds, None)

    prepared = target.with_suffix(".pre.onnx")
    quant_pre_process(str(source), str(prepared))
    quantize_static(
        str(prepared),
        str(target),
        Random(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=True,
    )
    prepared.unlink()
    return target


def quantize_dynamic_int8(source: Path, target: Path) -> Path:
    """onnxruntime.quantization.quantize_dynamic with int8 weights: DynamicQuantizeLinear on the
    activations, MatMulInteger, and the float rescale after it."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)
    return target


def static_models(folder: Path, size: int = 64, width: float = 0.5) -> dict[str, tuple[Path, Path]]:
    """{name: (fp32 model, its static QDQ twin)} for ResNet-18 and MobileNetV2 at `size` x `size`."""
    shape = (1, 3, size, size)
    made = {}
    for name, build in (("resnet18", resnet18), ("mobilenet_v2", mobilenet_v2)):
        fp32 = export(normalise(build(width), shape), shape, folder / f"{name}.onnx")
        made[name] = (fp32, quantize_static_qdq(fp32, folder / f"{name}_int8.onnx", shape))
    return made


def dynamic_model(folder: Path) -> tuple[Path, Path]:
    """(fp32 MLP, its dynamic-int8 twin)."""
    fp32 = export(mlp(), (4, 256), folder / "mlp.onnx")
    return fp32, quantize_dynamic_int8(fp32, folder / "mlp_int8.onnx")
