"""Kernel -> ONNX graph, seeded feeds and a float64 numpy reference. Imports onnx and numpy only."""
