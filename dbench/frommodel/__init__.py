"""A user's own ONNX model: its compute nodes as catalog kernels (`dbench gen --from-model`), and the
whole model timed beside the sum of its kernels."""
