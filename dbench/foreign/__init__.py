"""Foreign graphs: any .onnx file (no dbench manifest) run as one graph, its inputs drawn from the
declared types and shapes, its outputs verified with onnx.reference where that is possible."""
