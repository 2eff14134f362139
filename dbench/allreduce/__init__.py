"""All-reduce benchmark over DeepBench's message sizes with mpi4py: timed, checked exactly, stored.

Stands alone: imports neither onnx nor any runtime; mpi4py and CuPy are imported only where ranks run.
"""
