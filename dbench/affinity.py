"""CPU lists (`0-3,6`) for `--cpus`: parsed and checked against the CPUs this process may use in the
parent, applied with sched_setaffinity in the worker, so a board's big or little cluster can be timed."""

from __future__ import annotations

import os
from collections.abc import Iterable

from dbench.errors import UsageError


def format_cpus(cpus: Iterable[int]) -> str:
    """Sorted CPU numbers as ranges: {0,1,2,3,6} -> "0-3,6"."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def available_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity mask; every CPU where there is none)."""
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return set(range(os.cpu_count() or 1))


def parse_cpus(text: str) -> tuple[int, ...]:
    """`0-3,6` -> (0, 1, 2, 3, 6), checked against the available CPUs; a one-line UsageError otherwise."""
    if not text.strip():
        raise UsageError("--cpus was given no CPU; name some, e.g. --cpus 0-3,6, or leave --cpus out to use every CPU")
    cpus: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low, high = int(first), int(last if dash else first)
        except ValueError:
            raise UsageError(
                f"--cpus {text!r}: {part.strip()!r} is not a CPU number or range; write e.g. --cpus 0-3,6"
            ) from None
        if low < 0 or high < low:
            raise UsageError(
                f"--cpus {text!r}: {part.strip()!r} is not an ascending range of CPU numbers; write e.g. --cpus 0-3,6"
            )
        cpus.update(range(low, high + 1))
    available = available_cpus()
    missing = cpus - available
    if missing:
        raise UsageError(
            f"--cpus {text!r}: CPU {format_cpus(missing)} not available here (this process may use "
            f"{format_cpus(available)})"
        )
    return tuple(sorted(cpus))


def pin(cpus: Iterable[int]) -> None:
    """Restrict this process (and the threads it starts later) to `cpus`."""
    os.sched_setaffinity(0, set(cpus))
