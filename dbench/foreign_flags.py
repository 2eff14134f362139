"""Flags users bring from benchmark_app, trtexec and onnxruntime_perf_test, and dbench's way to say the
same (data/foreign_flags.csv, the table of docs/cli.md in short): a usage error that holds one names it."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files


@dataclass(frozen=True)
class ForeignFlag:
    """A flag of another tool (`flag`, as typed there) and what dbench takes instead."""

    tool: str
    flag: str
    dbench: str


@cache
def foreign_flags() -> tuple[ForeignFlag, ...]:
    """The table, read once."""
    with files("dbench").joinpath("data/foreign_flags.csv").open(newline="") as fh:
        return tuple(ForeignFlag(**row) for row in csv.DictReader(fh))


def foreign_hint(args: Iterable[str], own: set[str]) -> str | None:
    """What the other tools' flags among `args` are in dbench (`--fp16` is `--precision fp16` here), for
    the options that are not the command's `own`; None when there are none."""
    typed = {arg.split("=", 1)[0] for arg in args if arg.startswith("-")} - own
    found = [f for f in foreign_flags() if f.flag in typed]
    if not found:
        return None
    said = "; ".join(f"{f.tool}'s {f.flag} is {f.dbench}" for f in found)
    return f"coming from another tool? {said} (docs/cli.md)"
