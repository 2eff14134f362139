"""Message sizes: DeepBench's seven (shipped package data), an explicit list, or an nccl-tests sweep."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from importlib import resources

from dbench.errors import UsageError

SUFFIXES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
COUNT = re.compile(r"^\s*(\d+)\s*([KMG]?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Size:
    """One message: elements per rank, and DeepBench's repeat count when it is one of its sizes."""

    elements: int
    upstream_repeats: int | None = None


def deepbench_sizes() -> tuple[Size, ...]:
    """The 7 sizes of DeepBench's all_reduce_problems.h (float32 elements per rank) with num_repeats."""
    text = resources.files("dbench").joinpath("catalog", "data", "allreduce.csv").read_text()
    return tuple(Size(int(r["size_floats"]), int(r["num_repeats"])) for r in csv.DictReader(io.StringIO(text)))


def parse_count(text: str, what: str) -> int:
    """A positive integer with an optional binary suffix: 1000, 4K (4096), 16M, 1G."""
    match = COUNT.match(text)
    value = int(match.group(1)) * SUFFIXES[match.group(2).upper()] if match else 0
    if value <= 0:
        raise UsageError(f"{what}: {text!r} is not a positive count; "
                         "write e.g. 100000, 4K or 16M (K/M/G = 2^10/2^20/2^30)")
    return value


def size_list(text: str) -> tuple[Size, ...]:
    """`deepbench` or a comma-separated list of element counts, in the order given, duplicates dropped."""
    if text.strip().lower() == "deepbench":
        return deepbench_sizes()
    counts = [parse_count(part, "--sizes") for part in text.split(",") if part.strip()]
    if not counts:
        raise UsageError("--sizes is empty; give 'deepbench' or element counts such as 100000,4M")
    return tuple(Size(n) for n in dict.fromkeys(counts))


def sweep(begin: str, end: str, factor: int, itemsize: int) -> tuple[Size, ...]:
    """nccl-tests' -b/-e/-f: bytes from begin to end (inclusive), multiplied by factor each step."""
    low, high = parse_count(begin, "-b/--minbytes"), parse_count(end, "-e/--maxbytes")
    if low > high:
        raise UsageError(f"-b {begin} is larger than -e {end}; the sweep goes from -b up to -e")
    if factor < 2:
        raise UsageError(f"-f/--stepfactor must be 2 or more, got {factor}")
    if low < itemsize:
        raise UsageError(f"-b {begin} is smaller than one element ({itemsize} bytes)")
    sizes, nbytes = [], low
    while nbytes <= high:
        sizes.append(nbytes // itemsize)
        nbytes *= factor
    return tuple(Size(n) for n in dict.fromkeys(sizes))
