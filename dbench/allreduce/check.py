"""The correctness check of one (size, implementation, placement): one call on fresh inputs, compared
exactly with the expected sum, hashed, and optionally repeated to prove the result is reproducible."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbench.allreduce.data import count_wrong, digest, fill, poison
from dbench.allreduce.devices import Device
from dbench.allreduce.implementations import Implementation

REPEATS = 3  # extra checked calls under --check-repeat


@dataclass(frozen=True)
class Verdict:
    """This rank's check: wrong elements, the result's sha256, and whether repeats gave the same bytes."""

    wrong: int
    digest: str
    repeatable: bool | None


def _checked_call(impl: Implementation, device: Device, send: Any, recv: Any, in_place: bool,
                  values: Any, expected: Any) -> tuple[int, str]:
    if in_place:
        fill(recv, values)
    else:
        fill(send, values)
        poison(recv)  # so a call that leaves the output untouched cannot pass on an earlier result
    impl.run(None if in_place else send, recv)
    return count_wrong(recv, expected), digest(device.to_host(recv))


def check(impl: Implementation, device: Device, send: Any, recv: Any, in_place: bool, values: Any,
          expected: Any, repeat: bool) -> Verdict:
    """Run the checked call (and REPEATS more with `repeat`); `values`/`expected` are one period each."""
    wrong, first = _checked_call(impl, device, send, recv, in_place, values, expected)
    if not repeat:
        return Verdict(wrong, first, None)
    digests = [_checked_call(impl, device, send, recv, in_place, values, expected)[1] for _ in range(REPEATS)]
    return Verdict(wrong, first, all(d == first for d in digests))
