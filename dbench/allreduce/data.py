"""Deterministic integer-valued inputs whose sums are exact in every dtype, and the exact check of one
(size, implementation, placement): one call on fresh inputs, compared with the expected sum, hashed, and
optionally repeated to prove the result is reproducible.

Rank r's element i is P[(i + r*SHIFT) % PERIOD] for a fixed pseudo-random pattern P of integers in
[-LIMIT, LIMIT]: every partial sum is an integer of magnitude <= LIMIT * ranks, so float32 adds it
exactly in any order, and the expected result is the periodic sum of the shifted patterns.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from dbench.allreduce.devices import Device
from dbench.allreduce.implementations import Implementation
from dbench.errors import InputError

PERIOD = 65521  # prime: the pattern never lines up with power-of-two sizes or with ring chunk borders
SHIFT = 7919  # rank r reads the pattern shifted by r * SHIFT elements
LIMIT = 100  # values in [-LIMIT, LIMIT]
SEED = 2017
EXACT_FLOAT32 = 2**24  # float32 holds every integer up to this magnitude
BLOCK_ROWS = 64  # compare 64 periods (about 4M elements) at a time to bound temporaries
REPEATS = 3  # extra checked calls under --check-repeat


def _base() -> np.ndarray:
    return np.random.default_rng(SEED).integers(-LIMIT, LIMIT + 1, PERIOD, dtype=np.int64)


def rank_pattern(rank: int, dtype: str) -> np.ndarray:
    """One period of rank `rank`'s input: element i is base[(i + rank*SHIFT) % PERIOD]."""
    return np.roll(_base(), -(rank * SHIFT) % PERIOD).astype(dtype)


def expected_pattern(ranks: int, dtype: str) -> np.ndarray:
    """One period of the exact all-reduce sum over `ranks` ranks (summed in int64, then cast)."""
    if LIMIT * ranks > EXACT_FLOAT32:
        raise InputError(f"{ranks} ranks: sums of the check pattern would exceed 2^24 and stop being exact in float32")
    base = _base()
    return sum(np.roll(base, -(r * SHIFT) % PERIOD) for r in range(ranks)).astype(dtype)


def _periods(buf: Any) -> tuple[Any, Any]:
    rows = buf.size // PERIOD
    return buf[: rows * PERIOD].reshape(rows, PERIOD), buf[rows * PERIOD :]


def fill(buf: Any, pattern: Any) -> None:
    """Write the periodic `pattern` into the 1-D buffer `buf` (numpy or CuPy, same kind as pattern)."""
    body, tail = _periods(buf)
    body[...] = pattern
    tail[...] = pattern[: tail.size]


def poison(buf: Any) -> None:
    """Fill a result buffer with a value no correct all-reduce can produce (NaN, or the int minimum)."""
    buf.fill(np.nan if np.dtype(buf.dtype).kind == "f" else np.iinfo(buf.dtype).min)


def count_wrong(buf: Any, pattern: Any) -> int:
    """How many elements of `buf` differ from the periodic expected `pattern` (nccl-tests' #wrong)."""
    body, tail = _periods(buf)
    wrong = int((tail != pattern[: tail.size]).sum())
    for start in range(0, body.shape[0], BLOCK_ROWS):
        wrong += int((body[start : start + BLOCK_ROWS] != pattern).sum())
    return wrong


def digest(host: np.ndarray) -> str:
    """sha256 of the result's bytes: equal results on every rank and every repeat give equal digests."""
    return hashlib.sha256(np.ascontiguousarray(host).data).hexdigest()


@dataclass(frozen=True)
class Verdict:
    """This rank's check: wrong elements, the result's sha256, and whether repeats gave the same bytes."""

    wrong: int
    digest: str
    repeatable: bool | None


def _checked_call(
    impl: Implementation, device: Device, send: Any, recv: Any, in_place: bool, values: Any, expected: Any
) -> tuple[int, str]:
    if in_place:
        fill(recv, values)
    else:
        fill(send, values)
        poison(recv)  # so a call that leaves the output untouched cannot pass on an earlier result
    impl.run(None if in_place else send, recv)
    return count_wrong(recv, expected), digest(device.to_host(recv))


def check(
    impl: Implementation, device: Device, send: Any, recv: Any, in_place: bool, values: Any, expected: Any, repeat: bool
) -> Verdict:
    """Run the checked call (and REPEATS more with `repeat`); `values`/`expected` are one period each."""
    wrong, first = _checked_call(impl, device, send, recv, in_place, values, expected)
    if not repeat:
        return Verdict(wrong, first, None)
    digests = [_checked_call(impl, device, send, recv, in_place, values, expected)[1] for _ in range(REPEATS)]
    return Verdict(wrong, first, all(d == first for d in digests))
