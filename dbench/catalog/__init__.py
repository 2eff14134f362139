"""DeepBench's kernel lists (package data) as Kernel objects, with suite and filter selection."""

from dbench.catalog.kernel_files import load_catalog, load_kernel_file
from dbench.catalog.kernels import ConvKernel, GemmKernel, Kernel, RnnKernel, SparseKernel
from dbench.catalog.select import FAMILIES, SUITES, Selection, select

__all__ = [
    "ConvKernel",
    "FAMILIES",
    "GemmKernel",
    "Kernel",
    "RnnKernel",
    "SUITES",
    "Selection",
    "SparseKernel",
    "load_catalog",
    "load_kernel_file",
    "select",
]
