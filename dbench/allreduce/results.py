"""One result row per (size, implementation, placement), built on rank 0 from every rank's outcome."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dbench.allreduce.check import Verdict


@dataclass(frozen=True)
class Outcome:
    """What one rank measured and checked: its mean seconds per call and its check verdict."""

    seconds: float
    verdict: Verdict


@dataclass(frozen=True)
class Result:
    """A stored row. Times are per-rank means, then min/mean/max over ranks; bandwidths use the mean."""

    elements: int
    bytes: int
    dtype: str
    ranks: int
    implementation: str
    device: str
    in_place: bool
    iters: int
    warmup: int
    time_min_us: float
    time_mean_us: float
    time_max_us: float
    algbw_gbps: float
    busbw_gbps: float
    deepbench_gbps: float
    wrong: int
    hash: str
    hash_agree: bool
    repeat_identical: bool | None
    status: str

    def row(self) -> dict[str, Any]:
        return asdict(self)


def summarize(outcomes: list[Outcome], *, elements: int, itemsize: int, dtype: str, implementation: str,
              device: str, in_place: bool, iters: int, warmup: int) -> Result:
    """Combine the ranks' outcomes: algbw = bytes/time, busbw = algbw*2(n-1)/n (nccl-tests),
    DeepBench's GB/s = bytes*ranks/time (its result sheets); #wrong summed over ranks."""
    ranks, nbytes = len(outcomes), elements * itemsize
    times = [o.seconds for o in outcomes]
    mean = sum(times) / ranks
    digests = {o.verdict.digest for o in outcomes}
    repeats = [o.verdict.repeatable for o in outcomes]
    repeat_identical = None if repeats[0] is None else all(repeats)
    wrong = sum(o.verdict.wrong for o in outcomes)
    ok = wrong == 0 and len(digests) == 1 and repeat_identical is not False
    algbw = nbytes / mean / 1e9
    return Result(
        elements=elements, bytes=nbytes, dtype=dtype, ranks=ranks, implementation=implementation, device=device,
        in_place=in_place, iters=iters, warmup=warmup,
        time_min_us=min(times) * 1e6, time_mean_us=mean * 1e6, time_max_us=max(times) * 1e6,
        algbw_gbps=algbw, busbw_gbps=algbw * 2 * (ranks - 1) / ranks, deepbench_gbps=nbytes * ranks / mean / 1e9,
        wrong=wrong, hash=outcomes[0].verdict.digest, hash_agree=len(digests) == 1,
        repeat_identical=repeat_identical, status="ok" if ok else "mismatch",
    )
