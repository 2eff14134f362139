"""dbench: DeepBench's kernels as tiny ONNX graphs, timed per op on every inference runtime."""

__version__ = "0.1.0"
