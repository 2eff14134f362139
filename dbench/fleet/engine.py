"""The engine under the fleet, Dask distributed, behind one door: the optional extra's check, and the
connection to a cluster named by its scheduler's address or scheduler file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dbench.errors import InputError

EXTRA = "pip install 'dbench[fleet]'"
CONNECT_TIMEOUT_S = 30.0
ADDRESS = re.compile(r"^[a-z][a-z0-9+]*://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?/?$")


def require_distributed() -> Any:
    """The `distributed` module, or one line naming the extra that installs it (exit 2)."""
    try:
        import distributed
    except ImportError:
        raise InputError(f"a fleet runs on Dask's distributed, which is not installed here: {EXTRA}") from None
    return distributed


def check_address(address: str) -> None:
    """A scheduler's address (`tcp://host:8786`, `tls://[::1]:8786`) or an existing scheduler file, else one
    line: a typo is refused at once instead of after the connection's timeout."""
    if ADDRESS.match(address) and len(address) <= 300:
        return
    if "://" not in address and len(address) <= 4096 and Path(address).is_file():
        return
    shown = address if len(address) <= 60 else address[:40] + "..."
    raise InputError(
        f"{shown!r} is neither a Dask scheduler's address (tcp://HOST:8786) nor a scheduler file; "
        "give the address `dask scheduler` printed, or the file its --scheduler-file wrote"
    )


def connect(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> Any:
    """A Client of the cluster at `address` (`tcp://host:8786`, or a scheduler file that `dask scheduler
    --scheduler-file` wrote), or one line saying it cannot be reached and how to start one."""
    distributed = require_distributed()
    check_address(address)
    path = Path(address)
    try:
        if "://" not in address and path.is_file():
            return distributed.Client(scheduler_file=str(path), timeout=timeout_s, set_as_default=False)
        return distributed.Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as err:
        raise InputError(
            f"cannot reach a Dask scheduler at {address} ("
            f"{str(err).splitlines()[0] if str(err) else type(err).__name__}); "
            "start one with `dask scheduler` and give its address (tcp://HOST:8786) or its --scheduler-file"
        ) from None
