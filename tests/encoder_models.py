"""A small BERT-like encoder exported from torch (token ids in, hidden states out) and its 4-bit
weight-only twins made by onnxruntime.quantization's MatMulNBits quantizer, built at test time."""

from __future__ import annotations

from pathlib import Path


def bert_like(path: Path, layers: int = 2, hidden: int = 64, heads: int = 4, seq: int = 16, vocab: int = 128) -> Path:
    """Export a `layers`-layer post-norm transformer encoder (embeddings, self-attention, GELU MLP) with
    seeded weights for token ids [1, seq] to `path` (fp32, weights inside)."""
    import torch

    torch.manual_seed(0)

    class Layer(torch.nn.Module):
        """Post-norm self-attention and a GELU MLP, as BERT's layers (written out: torch's fused
        encoder layer has no ONNX export)."""

        def __init__(self) -> None:
            super().__init__()
            self.qkv = torch.nn.Linear(hidden, 3 * hidden)
            self.out = torch.nn.Linear(hidden, hidden)
            self.up = torch.nn.Linear(hidden, 4 * hidden)
            self.down = torch.nn.Linear(4 * hidden, hidden)
            self.norm1 = torch.nn.LayerNorm(hidden)
            self.norm2 = torch.nn.LayerNorm(hidden)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.qkv(x).view(1, seq, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
            attention = torch.softmax(q @ k.transpose(-1, -2) / (hidden // heads) ** 0.5, dim=-1) @ v
            x = self.norm1(x + self.out(attention.transpose(1, 2).reshape(1, seq, hidden)))
            return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = torch.nn.Embedding(vocab, hidden)
            self.positions = torch.nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
            self.layers = torch.nn.ModuleList(Layer() for _ in range(layers))

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.tokens(ids) + self.positions
            for layer in self.layers:
                x = layer(x)
            return x

    model = Encoder().eval()
    ids = torch.zeros(1, seq, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(model, (ids,), str(path), input_names=["ids"], output_names=["hidden"], dynamo=False)
    return path


def quantized_4bit(source: Path, path: Path, block: int = 32, symmetric: bool = True, qdq: bool = False) -> Path:
    """`source` with its MatMul weights quantised to 4 bits in blocks of `block` by onnxruntime's
    MatMulNBitsQuantizer: MatMulNBits nodes, or (`qdq`) DequantizeLinear(int4/uint4) -> MatMul."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    from onnxruntime.quantization.quant_utils import QuantFormat

    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(source)),
        bits=4,
        block_size=block,
        is_symmetric=symmetric,
        quant_format=QuantFormat.QDQ if qdq else QuantFormat.QOperator,
    )
    quantizer.process()
    onnx.save(quantizer.model.model, str(path))
    return path
