"""How the report words its ratios: against an ordinary baseline a ratio is a speedup; against a
vendor-library baseline (`--baseline torch`: PyTorch calling oneDNN/MKL, cuBLAS/cuDNN) the same
number, baseline time / time, is the fraction of the library's speed a runtime reaches on that kernel
("ort-cpu ×0.62 of oneDNN/MKL": 62 %)."""

from __future__ import annotations

VENDOR_LIBRARIES = {"torch": "oneDNN/MKL", "torch-cuda": "cuBLAS/cuDNN"}
"""Runtimes that are a vendor library's baseline, and the libraries they call."""


def library(runtime: str) -> str | None:
    """The vendor library behind `runtime`, or None when it is not a vendor-library baseline."""
    return VENDOR_LIBRARIES.get(runtime)


def ratio_title(runtime: str, label: str) -> str:
    """A family table's title part: `speedup vs ort-cpu`, or `fraction of oneDNN/MKL (torch)`."""
    vendor = library(runtime)
    return f"fraction of {vendor} ({label})" if vendor else f"speedup vs {label}"


def ratio_sentence(runtime: str, label: str) -> str:
    """The line that says what the report's ratios are."""
    vendor = library(runtime)
    if vendor:
        return (
            f"Ratio = {label} time / time: the fraction of the vendor library's speed ({vendor} through "
            f"{label}) each runtime reaches on that kernel (×0.62: 62 %, ×1.10: 10 % faster than the library)"
        )
    return f"Speedup = {label} time / time"
