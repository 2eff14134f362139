"""On-disk cache of built TensorRT engines. The file name is a hash of everything that makes an engine
valid (graph and weights, TensorRT version, GPU, compute capability, build options), so an engine
from another version or GPU is never found; each file also starts with a header naming those fields,
and one whose header does not match is rebuilt."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"DBENCH-ENGINE-1\n"


def cache_root() -> Path:
    """Where engines are cached: $DBENCH_CACHE_DIR, else ~/.cache/dbench (XDG_CACHE_HOME honoured)."""
    base = os.environ.get("DBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dbench"
    )
    return Path(base) / "engines"


def graph_hash(model_bytes: bytes, constants: Mapping[str, np.ndarray]) -> str:
    """sha256 of the serialized graph and of each constant weight (name, dtype, shape, bytes), so
    the same graph with other weights is another engine."""
    digest = hashlib.sha256(model_bytes)
    for name in sorted(constants):
        array = np.ascontiguousarray(constants[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(hashlib.sha256(memoryview(array).cast("B")).digest())
    return digest.hexdigest()


def engine_key(fields: Mapping[str, Any]) -> str:
    """A short stable hash of the key fields (their JSON with sorted keys)."""
    return hashlib.sha256(json.dumps(dict(fields), sort_keys=True).encode()).hexdigest()[:32]


def read_engine(path: Path, fields: Mapping[str, Any]) -> tuple[bytes | None, str]:
    """(engine bytes, "") from a cache file whose header holds exactly `fields`; (None, note) when the
    file is missing (empty note) or written for something else (a one-line note naming the difference)."""
    if not path.exists():
        return None, ""
    data = path.read_bytes()
    header_end = data.find(b"\n", len(MAGIC))
    if not data.startswith(MAGIC) or header_end < 0:
        return None, f"engine cache {path} has no dbench header; rebuilt"
    try:
        header = json.loads(data[len(MAGIC) : header_end])
    except ValueError:
        return None, f"engine cache {path} has an unreadable header; rebuilt"
    differ = sorted(k for k in set(header) | set(fields) if header.get(k) != fields.get(k))
    if differ:
        was = ", ".join(f"{k}={header.get(k)!r}" for k in differ)
        return None, f"engine cache {path} was built for {was}; rebuilt"
    return data[header_end + 1 :], ""


def write_engine(path: Path, fields: Mapping[str, Any], engine: bytes) -> None:
    """Write atomically (temporary file, then rename), so a killed build leaves no half engine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    with open(partial, "wb") as fh:
        fh.write(MAGIC + json.dumps(dict(fields), sort_keys=True).encode() + b"\n")
        fh.write(memoryview(engine))
    os.replace(partial, path)
