"""Suite selectors and filters (op family or cell, application, id pattern) over a list of kernels."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from dbench.catalog.kernels import RNN_CELLS, Kernel
from dbench.errors import UsageError

SUITES: dict[str, tuple[str, ...]] = {
    "train": ("train",),
    "inference": ("inference_server", "inference_device"),
    "inference-server": ("inference_server",),
    "inference-device": ("inference_device",),
    "user": ("user",),
    "transformer": ("transformer_prefill", "transformer_decode"),
    "transformer-prefill": ("transformer_prefill",),
    "transformer-decode": ("transformer_decode",),
    "all": ("train", "inference_server", "inference_device", "user"),
}

DEFAULT_SUITES = {"list": "all", "gen": "inference", "run": "inference", "export": "inference-device"}
"""Each command's suite when none is given and the kernels come from the DeepBench catalog."""

FAMILIES = ("gemm", "conv", "rnn", "sparse")
TRANSFORMER_FAMILIES = ("attention", "norm", "gelu", "swiglu", "rotary", "embedding")
"""The transformer suite's own families (its projections are gemm rows, its stems conv rows)."""
NORM_OPS = ("layernorm", "rmsnorm")
OPS = FAMILIES + RNN_CELLS + TRANSFORMER_FAMILIES + NORM_OPS


def suite_for(command: str, suite: str | None, from_catalog: bool) -> str:
    """The suite selector `command` uses: the one given; else its default for the catalog (`inference`
    for gen and run, `all` for list); else `all` for the user's kernel file or a gen folder, whose
    kernels were chosen already."""
    if suite:
        return suite
    return DEFAULT_SUITES[command] if from_catalog else "all"


@dataclass(frozen=True)
class Selection:
    """What the user asked for: a suite selector, op families or cells, applications, an id glob."""

    suite: str = "all"
    ops: tuple[str, ...] = ()
    apps: tuple[str, ...] = ()
    pattern: str | None = None
    """Kernel id globs, comma-separated (a kernel matching any is selected)."""

    def __post_init__(self) -> None:
        if self.suite not in SUITES:
            raise UsageError(f"unknown suite {self.suite!r}; valid suites: {', '.join(SUITES)}")
        for op in self.ops:
            if op not in OPS:
                raise UsageError(f"unknown op {op!r}; valid ops: {', '.join(OPS)}")

    @property
    def suite_tags(self) -> tuple[str, ...]:
        return SUITES[self.suite]

    def describe(self) -> str:
        """The selectors as command-line flags, to name them in a message."""
        given = [f"--suite {self.suite}", *(f"--ops {op}" for op in self.ops), *(f"--app {app}" for app in self.apps)]
        if self.pattern is not None:
            given.append(f"--id {self.pattern!r}")
        return " ".join(given)

    def nothing_matches(self, source: str) -> str:
        """The one line for a selection that matches no kernel of `source`."""
        return (
            f"no kernel matches {self.describe()} in {source}; check the selectors with dbench list "
            "(an --id glob matches whole ids, e.g. 'gemm_m1760_*')"
        )

    def matches(self, kernel: Kernel) -> bool:
        return self.admits(kernel.id, kernel.family, kernel.op, kernel.suites, kernel.apps)

    def admits(self, kernel_id: str, family: str, op: str, suites: Iterable[str], apps: Iterable[str]) -> bool:
        """Whether a kernel with these fields is selected (a graph's spec carries the same fields)."""
        if not set(suites) & set(self.suite_tags):
            return False
        if self.ops and family not in self.ops and op not in self.ops:
            return False
        if self.apps and not any(a.lower() in (x.lower() for x in self.apps) for a in apps):
            return False
        return self.pattern is None or any(fnmatchcase(kernel_id, glob) for glob in self.pattern.split(","))


def select(kernels: Iterable[Kernel], selection: Selection) -> list[Kernel]:
    """The kernels that match, in catalog order."""
    return [k for k in kernels if selection.matches(k)]
