"""The benchmark's options: as typed (forwarded verbatim to the ranks) and resolved (validated), including
the message sizes: DeepBench's seven (shipped package data), an explicit list, or an nccl-tests sweep."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from dbench.errors import UsageError

ITEMSIZE = {"float32": 4, "float64": 8, "int32": 4}
IMPLEMENTATIONS = ("mpi", "ring", "nccl")
DEVICES = ("cpu", "gpu")
ITER_POLICIES = ("auto", "deepbench")
AUTO_BYTES = 2**28  # auto iterations: about 256 MiB through the all-reduce per timed block
AUTO_MIN, AUTO_MAX = 5, 1000
WARMUP_MIN = 2
MAX_CALLS = 1_000_000
"""--iters and --warmup beyond this many calls per size are typos (DeepBench's largest num_repeats is 10000)."""
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
        raise UsageError(
            f"{what}: {text!r} is not a positive count; write e.g. 100000, 4K or 16M (K/M/G = 2^10/2^20/2^30)"
        )
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


@dataclass(frozen=True)
class Arguments:
    """The options exactly as given on the command line; their defaults are the CLI's."""

    sizes: str | None = None
    begin: str | None = None
    end: str | None = None
    factor: int = 2
    dtype: str = "float32"
    impl: str = "mpi,ring"
    iters: str = "auto"
    warmup: int | None = None
    check_repeat: bool = False
    out: Path = Path("results")
    device: str = "cpu"

    def to_argv(self) -> list[str]:
        """Command-line arguments that reproduce these options in a rank process (--out made absolute)."""
        argv = [
            "--dtype",
            self.dtype,
            "--impl",
            self.impl,
            "--iters",
            self.iters,
            "--out",
            str(self.out.absolute()),
            "--device",
            self.device,
        ]
        if self.sizes is not None:
            argv += ["--sizes", self.sizes]
        if self.begin is not None:
            argv += ["-b", self.begin]
        if self.end is not None:
            argv += ["-e", self.end]
        if self.begin is not None or self.end is not None:
            argv += ["-f", str(self.factor)]
        if self.warmup is not None:
            argv += ["--warmup", str(self.warmup)]
        if self.check_repeat:
            argv.append("--check-repeat")
        return argv


@dataclass(frozen=True)
class Options:
    """Validated options: sizes, dtype, implementations, iteration policy and where results go."""

    sizes: tuple[Size, ...]
    dtype: str
    implementations: tuple[str, ...]
    iters: int | str
    warmup: int | None
    check_repeat: bool
    out: Path
    device: str

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    def iterations(self, size: Size) -> int:
        """Timed calls for one size: --iters N, DeepBench's num_repeats, or ~256 MiB of traffic (5 to 1000)."""
        if isinstance(self.iters, int):
            return self.iters
        if self.iters == "deepbench":
            return size.upstream_repeats or 0
        return min(AUTO_MAX, max(AUTO_MIN, math.ceil(AUTO_BYTES / (size.elements * self.itemsize))))

    def warmup_calls(self, size: Size) -> int:
        """Untimed calls before the timed block: --warmup, else a tenth of the timed calls, at least 2."""
        return self.warmup if self.warmup is not None else max(WARMUP_MIN, self.iterations(size) // 10)

    def record(self) -> dict:
        """The options as stored in the run header."""
        return {
            "sizes": [s.elements for s in self.sizes],
            "dtype": self.dtype,
            "implementations": list(self.implementations),
            "iters": self.iters,
            "warmup": self.warmup,
            "check_repeat": self.check_repeat,
            "device": self.device,
            "out": str(self.out),
        }


def _choice(value: str, valid: tuple[str, ...], option: str) -> str:
    if value not in valid:
        raise UsageError(f"{option} {value!r} is not valid; choose one of: {', '.join(valid)}")
    return value


def _iters(text: str) -> int | str:
    if text in ITER_POLICIES:
        return text
    if text.isdigit() and 0 < int(text) <= MAX_CALLS:
        return int(text)
    raise UsageError(f"--iters {text!r} is not valid; give auto, deepbench or a count from 1 to {MAX_CALLS}")


def resolve(args: Arguments) -> Options:
    """Validate `args` into Options; bad values raise a one-line UsageError naming the fix."""
    dtype = _choice(args.dtype, tuple(ITEMSIZE), "--dtype")
    device = _choice(args.device, DEVICES, "--device")
    names = [i.strip() for i in args.impl.split(",") if i.strip()]
    impls = tuple(dict.fromkeys(_choice(name, IMPLEMENTATIONS, "--impl") for name in names))
    if not impls:
        raise UsageError(f"--impl is empty; choose from: {', '.join(IMPLEMENTATIONS)}")
    if args.begin is not None or args.end is not None:
        if args.sizes is not None:
            raise UsageError("give either --sizes or the -b/-e/-f sweep, not both")
        sizes = sweep(args.begin or args.end, args.end or args.begin, args.factor, ITEMSIZE[dtype])
    else:
        if args.factor != Arguments.factor:
            raise UsageError(
                f"-f/--stepfactor {args.factor} multiplies the sizes of a -b/-e sweep; add -b and -e, or drop -f"
            )
        sizes = size_list(args.sizes or "deepbench")
    iters = _iters(args.iters)
    if iters == "deepbench" and any(s.upstream_repeats is None for s in sizes):
        raise UsageError("--iters deepbench uses DeepBench's repeat counts, which exist only for --sizes deepbench")
    if args.warmup is not None and not 0 <= args.warmup <= MAX_CALLS:
        raise UsageError(f"--warmup must be 0 to {MAX_CALLS} calls, got {args.warmup}")
    return Options(sizes, dtype, impls, iters, args.warmup, args.check_repeat, args.out, device)
