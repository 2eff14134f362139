"""Graph bytes are stable: the same kernel and options give the same file (sha256) as when the
hashes in tests/data/graph_sha256.json were recorded (one graph per family, cell, pass, form,
precision and GEMM transpose), so a refactoring of the generators cannot change a graph unnoticed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from dbench.catalog import load_catalog
from dbench.errors import UnsupportedError
from dbench.gen.options import GenOptions
from dbench.gen.plan import build, plan

PINNED = json.loads((Path(__file__).parent / "data" / "graph_sha256.json").read_text())
EVERY_SUITE = ("train", "inference_server", "inference_device")


@pytest.fixture(scope="module")
def kernels() -> dict:
    return {k.id: k for k in load_catalog()}


@pytest.mark.parametrize("entry", PINNED, ids=[e["graph"] for e in PINNED])
def test_graph_bytes_match_the_pinned_hash(entry, kernels):
    options = GenOptions(**{**entry["options"], "passes": tuple(entry["options"]["passes"])})
    graphs = {g.id: g for g in _built(plan([kernels[entry["kernel"]]], EVERY_SUITE, options))}
    assert hashlib.sha256(graphs[entry["graph"]].model.SerializeToString()).hexdigest() == entry["sha256"]


def _built(requests: list) -> list:
    """The graphs of the requests that have one in their precision."""
    graphs = []
    for request in requests:
        try:
            graphs.append(build(request))
        except UnsupportedError:
            pass
    return graphs
