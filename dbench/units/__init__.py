"""A model's execution units: the groups of its nodes that a runtime executes as one layer (what it
fused), cut from the runtime's own report of what it executes, each turned into a small graph of its
own so that it can be timed like any kernel; and the model's latency predicted from those times.
Pure onnx and numpy: the runtime is asked in the worker (dbench.worker.execution), never here."""
