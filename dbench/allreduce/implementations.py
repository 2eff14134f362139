"""The all-reduce implementations: `mpi` (MPI_Allreduce), `ring` (baidu-allreduce's bandwidth-optimal
ring over point-to-point calls) and `nccl` (NCCL through CuPy). `run(None, buf)` reduces in place."""

from __future__ import annotations

import ctypes
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from dbench.allreduce.devices import Device, Gpu
from dbench.errors import DbenchError, InputError


def mpi_cuda_support() -> bool | None:
    """MPIX_Query_cuda_support() of the loaded MPI library (MPICH, Open MPI), None where it has no such call."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    libraries = {line.split()[-1] for line in maps.splitlines() if "/libmpi" in line}
    for path in sorted(libraries):
        query = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
        if query is not None:
            return bool(query())
    return None


class Implementation(ABC):
    """One all-reduce algorithm on one kind of buffer; `run` returns once the result is in `recv`."""

    name = ""

    def __init__(self, comm: Any, device: Device) -> None:
        self.comm, self.device = comm, device

    def scratch_elements(self, elements: int) -> int:
        """Elements of temporary buffer `prepare` allocates for a message of `elements`."""
        return 0

    def prepare(self, elements: int, dtype: str) -> None:
        """Allocate what `run` needs for this message size, outside the timed region."""

    @abstractmethod
    def run(self, send: Any | None, recv: Any) -> None:
        """One all-reduce of `send` (or of `recv` in place when `send` is None) into `recv`."""


class Mpi(Implementation):
    """MPI_Allreduce(SUM) through mpi4py's buffer API (MPI_IN_PLACE for in place)."""

    name = "mpi"

    def run(self, send: Any | None, recv: Any) -> None:
        from mpi4py import MPI

        self.device.sync()
        self.comm.Allreduce(MPI.IN_PLACE if send is None else send, recv, op=MPI.SUM)


def chunk_bounds(elements: int, ranks: int) -> list[tuple[int, int]]:
    """`ranks` contiguous chunks covering `elements`, sizes differing by at most one (the first are longer)."""
    base, extra = divmod(elements, ranks)
    starts = [k * base + min(k, extra) for k in range(ranks + 1)]
    return list(zip(starts[:-1], starts[1:]))


class Ring(Implementation):
    """The bandwidth-optimal ring: n-1 Sendrecv steps of reduce-scatter then n-1 of all-gather, each
    moving one ~size/n chunk to the right neighbour; every rank sends 2(n-1)/n of the message."""

    name = "ring"

    def scratch_elements(self, elements: int) -> int:
        return -(-elements // self.comm.size)

    def prepare(self, elements: int, dtype: str) -> None:
        self.bounds = chunk_bounds(elements, self.comm.size)
        self.scratch = None  # free the previous size's scratch before allocating this one
        self.scratch = self.device.xp.empty(self.scratch_elements(elements), dtype=dtype)

    def run(self, send: Any | None, recv: Any) -> None:
        ranks, rank, xp = self.comm.size, self.comm.rank, self.device.xp
        right, left = (rank + 1) % ranks, (rank - 1) % ranks
        if send is not None:
            recv[...] = send
        for step in range(ranks - 1):  # reduce-scatter: afterwards chunk rank+1 holds the full sum
            (sa, sb), (ra, rb) = self.bounds[(rank - step) % ranks], self.bounds[(rank - step - 1) % ranks]
            incoming = self.scratch[: rb - ra]
            self.device.sync()
            self.comm.Sendrecv(recv[sa:sb], right, recvbuf=incoming, source=left)
            xp.add(recv[ra:rb], incoming, out=recv[ra:rb])
        for step in range(ranks - 1):  # all-gather: pass the finished chunks around the ring
            (sa, sb), (ra, rb) = self.bounds[(rank + 1 - step) % ranks], self.bounds[(rank - step) % ranks]
            self.device.sync()
            self.comm.Sendrecv(recv[sa:sb], right, recvbuf=recv[ra:rb], source=left)
        self.device.sync()


class Nccl(Implementation):
    """ncclAllReduce(SUM) on CuPy buffers; the communicator is built from a unique id broadcast over MPI."""

    name = "nccl"

    def __init__(self, comm: Any, device: Device) -> None:
        super().__init__(comm, device)
        from cupy.cuda import nccl

        self.nccl = nccl
        uid = comm.bcast(nccl.get_unique_id() if comm.rank == 0 else None, root=0)
        self.communicator = nccl.NcclCommunicator(comm.size, uid, comm.rank)
        self.types = {"float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64, "int32": nccl.NCCL_INT32}

    def run(self, send: Any | None, recv: Any) -> None:
        stream = self.device.xp.cuda.get_current_stream()
        source = recv if send is None else send
        self.communicator.allReduce(
            source.data.ptr, recv.data.ptr, recv.size, self.types[str(recv.dtype)], self.nccl.NCCL_SUM, stream.ptr
        )
        stream.synchronize()


def require(name: str, device: Device, local_ranks: int) -> None:
    """Raise a one-line error unless implementation `name` can run here on `device` with `local_ranks` ranks
    on this host."""
    if name == "nccl":
        try:
            from cupy.cuda import nccl  # noqa: F401
        except ImportError:
            raise InputError("nccl needs CuPy built with NCCL and an NVIDIA GPU: pip install 'dbench[gpu]'") from None
        if device.sharing(local_ranks) > 1:  # NCCL says only NCCL_ERROR_INVALID_USAGE (seen on one H200)
            raise InputError(
                f"nccl needs a GPU of its own for each rank: {local_ranks} ranks on this host share its "
                f"{device.devices} GPU(s), and NCCL refuses two ranks on one "
                "device; start at most one rank per GPU, or use --impl mpi or ring"
            )
    elif isinstance(device, Gpu) and not mpi_cuda_support():
        from mpi4py import MPI

        vendor, version = MPI.get_vendor()
        library = f"{vendor} {'.'.join(map(str, version))}"
        raise DbenchError(
            f"{name} with --device gpu needs a CUDA-aware MPI, and {library} is not one "
            "(MPIX_Query_cuda_support is 0 or missing): use --impl nccl, or --device cpu"
        )


def implementation(name: str, comm: Any, device: Device) -> Implementation:
    """Build implementation `name` on `device`, collectively (nccl's communicator needs every rank)."""
    return {"mpi": Mpi, "ring": Ring, "nccl": Nccl}[name](comm, device)
