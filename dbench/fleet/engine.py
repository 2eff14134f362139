"""The engine under the fleet, Dask distributed, behind one door: the optional extra's check, and the
connection to a cluster named by its scheduler's address or scheduler file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbench.errors import InputError

EXTRA = "pip install 'dbench[fleet]'"
CONNECT_TIMEOUT_S = 30.0


def require_distributed() -> Any:
    """The `distributed` module, or one line naming the extra that installs it (exit 2)."""
    try:
        import distributed
    except ImportError:
        raise InputError(f"a fleet runs on Dask's distributed, which is not installed here: {EXTRA}") from None
    return distributed


def connect(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> Any:
    """A Client of the cluster at `address` (`tcp://host:8786`, or a scheduler file that `dask scheduler
    --scheduler-file` wrote), or one line saying it cannot be reached and how to start one."""
    distributed = require_distributed()
    path = Path(address)
    try:
        if "://" not in address and path.is_file():
            return distributed.Client(scheduler_file=str(path), timeout=timeout_s, set_as_default=False)
        return distributed.Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:
        raise InputError(f"cannot reach a Dask scheduler at {address} ({str(err).splitlines()[0] if str(err) else type(err).__name__}); "
                         "start one with `dask scheduler` and give its address (tcp://HOST:8786) or its --scheduler-file") from None
