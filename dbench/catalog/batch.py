"""`--batch 1,8,32`: each selected kernel at each of these batch sizes, the way benchmark_app's -b or
trtexec's --shapes set a model's batch. The batch dimension of each family is DeepBench's own: the N of
GEMM and sparse GEMM (columns of B and C, which its lists vary with the mini-batch: 1760 x 16..128 x 1760
in training, 7680 x 1/2/4 x 2560 sparse), the n of convolution and the batch of RNN."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from dbench.catalog.kernels import Kernel
from dbench.errors import UsageError

BATCH_FIELD = {
    "gemm": "n",
    "sparse": "n",
    "conv": "n",
    "rnn": "batch",
    **dict.fromkeys(("attention", "norm", "gelu", "swiglu", "rotary", "embedding"), "batch"),
}
"""The kernel field that is the batch dimension, per family."""
MAX_BATCH = 65536
"""A batch beyond this is a typo: the graphs would need terabytes of inputs."""


def parse_batches(values: Iterable[str]) -> tuple[int, ...]:
    """`["1,8", "32"]` -> (1, 8, 32), in the order given, duplicates dropped; one line for a bad size."""
    sizes: list[int] = []
    for value in values:
        for item in (v.strip() for v in value.split(",")):
            if not (item.isdigit() and 0 < int(item) <= MAX_BATCH):
                raise UsageError(
                    f"--batch {item!r} is not a batch size from 1 to {MAX_BATCH}; write e.g. --batch 1,8,32"
                )
            sizes.append(int(item))
    return tuple(dict.fromkeys(sizes))


def with_batches(kernels: Iterable[Kernel], sizes: tuple[int, ...]) -> list[Kernel]:
    """Each kernel at each size (kernel by kernel, sizes in the order given); a kernel that two originals
    become is listed once, with the first one's origins. No sizes: the kernels as they are."""
    if not sizes:
        return list(kernels)
    batched: dict[str, Kernel] = {}
    for kernel in kernels:
        for size in sizes:
            resized = dataclasses.replace(kernel, **{BATCH_FIELD[kernel.family]: size})
            batched.setdefault(resized.id, resized)
    return list(batched.values())
