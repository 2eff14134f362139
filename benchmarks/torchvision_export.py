"""Export torchvision's own architectures to ONNX (opset 17, batch 1, PyTorch's random initial weights),
for benchmarks/predict_corpus.py. Run by an interpreter that has torchvision (torchvision does not import
beside the torch of dbench's test extra), e.g. a venv outside the repository:

    python3 -m venv ../tv && ../tv/bin/pip install torch==2.14.1 torchvision==0.29.1 onnx
    ../tv/bin/python benchmarks/torchvision_export.py resnet18 build/predict-corpus/tv_resnet18.onnx
"""

from __future__ import annotations

import io
import sys
import warnings


def main() -> None:
    import onnx
    import torch
    import torchvision

    name, out = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    module = getattr(torchvision.models, name)(weights=None).eval()
    size = 224
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (torch.randn(1, 3, size, size),),
            buffer,
            opset_version=17,
            dynamo=False,
            input_names=["x"],
            output_names=["y"],
        )
    model = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
