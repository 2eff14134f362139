"""The unit every graph source resolves into: one graph to run, whatever its source."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dbench.gen.graph import GraphSpec
from dbench.sources.contract import Contract


@dataclass(frozen=True)
class Item:
    """One graph to run: its spec (inputs and how each is drawn, outputs, FLOPs), how to get its bytes
    (and the hash they must have) when its turn comes, and the contract the worker holds it to.
    `unsupported` holds the reason when no graph exists (a precision its family lacks)."""

    spec: GraphSpec
    load: Callable[[], tuple[bytes, str | None]]
    contract: Contract = Contract()
    unsupported: str = ""
