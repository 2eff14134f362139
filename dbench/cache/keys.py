"""Content addresses of cache entries: the graph's bytes, its spec (seed and input distributions
included), the kind of entry, the check's parameters, and the version of the code that computes it."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from dbench.gen.graph import GraphSpec


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of every Python file of the dbench package and of the numerical libraries' versions:
    any change to how inputs are drawn or references computed gives new keys (conservatively, so does
    any other change to dbench), so a stale entry is never read."""
    import numpy
    import onnx

    digest = hashlib.sha256(f"numpy {numpy.__version__} onnx {onnx.__version__}".encode())
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def entry_key(kind: str, model: bytes, spec: GraphSpec, **params: Any) -> str:
    """The key of one entry: what it is (`kind`, e.g. `full` or `projection`) for this graph's bytes
    and spec, under these check parameters and this code version."""
    digest = hashlib.sha256(b"dbench reference cache 1\0")
    digest.update(
        json.dumps(
            {"kind": kind, "params": params, "spec": spec.to_dict(), "code": code_version()},
            sort_keys=True,
            default=str,
        ).encode()
    )
    digest.update(hashlib.sha256(model).digest())
    return digest.hexdigest()
