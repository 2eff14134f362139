"""Timing one (size, implementation, placement): warm-up calls, a barrier, then a timed block of calls."""

from __future__ import annotations

from typing import Any

from dbench.allreduce.implementations import Implementation


def time_calls(comm: Any, impl: Implementation, send: Any | None, recv: Any, warmup: int, iters: int) -> float:
    """This rank's mean seconds per call over `iters` back-to-back calls (MPI_Wtime), after `warmup` calls
    and a barrier so every rank starts the block together."""
    from mpi4py import MPI

    for _ in range(warmup):
        impl.run(send, recv)
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iters):
        impl.run(send, recv)
    return (MPI.Wtime() - start) / iters
