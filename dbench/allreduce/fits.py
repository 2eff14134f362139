"""Whether the largest message fits in each device's free memory, checked before anything is
allocated: send, receive and an implementation's scratch buffers per rank, times the ranks sharing it."""

from __future__ import annotations

from dbench.allreduce.devices import Device
from dbench.allreduce.implementations import Implementation
from dbench.errors import DbenchError

RANK_OVERHEAD = 2**26  # host bytes per rank for the interpreter, MPI and the check's temporaries
GB = 1e9


def bytes_per_rank(impl: Implementation, elements: int, itemsize: int) -> dict[str, int]:
    """Bytes one rank holds at once for one message, per device: send + receive + scratch buffers,
    plus a host copy of a GPU result for its hash."""
    buffers = (2 * elements + impl.scratch_elements(elements)) * itemsize
    if impl.device.name == "cpu":
        return {"cpu": buffers}
    return {"gpu": buffers, "cpu": elements * itemsize}


def check_fits(
    elements: int, itemsize: int, impls: list[Implementation], devices: dict[str, Device], local_ranks: int
) -> None:
    """Raise a clear error when the largest message (`elements` per rank) cannot fit on this host."""
    for name, device in devices.items():
        per_rank = max(bytes_per_rank(i, elements, itemsize).get(name, 0) for i in impls)
        per_rank += RANK_OVERHEAD if name == "cpu" else 0
        sharing = device.sharing(local_ranks)
        needed, free = per_rank * sharing, device.free_bytes()
        if needed > free:
            where = "host memory" if name == "cpu" else "GPU memory"
            raise DbenchError(
                f"size {elements} ({elements * itemsize / GB:.2f} GB per buffer) needs {needed / GB:.1f} GB of {where} "
                f"({sharing} ranks x {per_rank / GB:.2f} GB for send, receive and scratch buffers) "
                f"but {free / GB:.1f} GB is free: choose smaller --sizes or fewer ranks per host"
            )
