"""dbench's implementations of the op versions onnx.reference computes wrongly (or cannot run), one
module per family, each class written from the ONNX spec of the versions it serves; the table of
which class serves which version is dbench.sources.reference_corrections."""
