"""What `dbench gen --from-model` writes: the kernels CSV (catalog columns, `--kernels` reads it), the
not-expressed sidecar, and one graph per kernel with a manifest; all built in memory first, then
written through a temporary folder, so a failure leaves nothing half-written."""

from __future__ import annotations

import csv
import io
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from dbench.catalog.kernel_files import FAMILY_COLUMN, OPTIONAL, SCHEMAS
from dbench.errors import InputError
from dbench.frommodel.walk import Extraction, ModelKernel
from dbench.gen.graph import Graph
from dbench.gen.manifest import Entry, sha256, write_manifest
from dbench.gen.plan import GraphRequest, build

KERNELS_FILE = "kernels.csv"
NOT_EXPRESSED_FILE = "not_expressed.csv"
MODEL_ATTR = "model"
"""GraphSpec.attrs key of a from-model graph: {name, copies, nodes, dims}; the report sums kernels with
it, and `run --kernels-run` checks the kernels were made for the model at the same --dim."""


def _param_columns() -> list[str]:
    columns = [c.name for cls, schema in SCHEMAS.items() for c in schema + OPTIONAL.get(cls, ())]
    return list(dict.fromkeys(columns))


def kernel_rows(extraction: Extraction) -> list[dict[str, Any]]:
    """One CSV row per kernel: family, its parameters, suite `user`, app = the model, copies, and
    (informational; `--kernels` ignores them) precision, pass, form, id, GFLOP and the nodes."""
    rows = []
    for mk in extraction.kernels:
        params = {k: int(v) if isinstance(v, bool) else v for k, v in mk.kernel.params().items()}
        rows.append(
            {
                FAMILY_COLUMN: mk.kernel.family,
                **{c: params.get(c, "") for c in _param_columns()},
                "suite": "user",
                "app": extraction.model,
                "copies": mk.copies,
                "precision": mk.precision,
                "pass": mk.pass_name,
                "form": mk.form,
                "id": mk.kernel.id,
                "gflop": round(mk.kernel.flops() / 1e9, 6),
                "nodes": ";".join(dict.fromkeys(mk.nodes)),
            }
        )
    return rows


def skipped_rows(extraction: Extraction) -> list[dict[str, str]]:
    return [{"node": s.node, "op": s.op, "reason": s.reason, "folded_into": s.folded_into} for s in extraction.skipped]


def to_csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def no_kernel_nodes(path: Path, extraction: Extraction) -> str:
    """The one line for a model none of whose nodes is a kernel (0 graphs is never a result)."""
    return (
        f"{path} has no node dbench times as a kernel ({len(extraction.skipped)} other nodes, each listed with its "
        f"reason by dbench list --from-model); time the whole model with dbench run --model {path}"
    )


def kernels_csv(extraction: Extraction) -> str:
    columns = [
        FAMILY_COLUMN,
        *_param_columns(),
        "suite",
        "app",
        "copies",
        "precision",
        "pass",
        "form",
        "id",
        "gflop",
        "nodes",
    ]
    return to_csv(kernel_rows(extraction), columns)


def request_of(mk: ModelKernel) -> GraphRequest:
    """The graph that times a model kernel as the model runs it: its precision, pass, form and build
    attributes (a Gemm's C as the model has it); int8 unpadded (the model's real sizes), GRU with its
    tanh candidate."""
    attrs: dict[str, Any] = dict(mk.attrs)
    if mk.precision == "int8":
        attrs["pad"] = False
    elif mk.kernel.family == "rnn" and mk.kernel.op == "gru":
        attrs["gru_activation"] = "tanh"
    return GraphRequest(mk.kernel, mk.precision, mk.pass_name, mk.form, attrs)


def build_graphs(extraction: Extraction, dims: dict[str, int]) -> list[Graph]:
    """One graph per kernel, its spec tagged with the model, the count, the nodes and the --dim sizes."""
    graphs = []
    for mk in extraction.kernels:
        graph = build(request_of(mk))
        tag = {"name": extraction.model, "copies": mk.copies, "nodes": list(dict.fromkeys(mk.nodes)), "dims": dims}
        graph.spec = replace(graph.spec, attrs={**graph.spec.attrs, MODEL_ATTR: tag})
        graphs.append(graph)
    return graphs


def write_outputs(extraction: Extraction, graphs: list[Graph], folder: Path) -> Path:
    """Write everything into `folder` (replacing the files of an earlier run of the same model)."""
    files = {
        KERNELS_FILE: kernels_csv(extraction).encode(),
        NOT_EXPRESSED_FILE: to_csv(skipped_rows(extraction), ["node", "op", "reason", "folded_into"]).encode(),
    }
    entries = []
    for graph in graphs:
        data = graph.model.SerializeToString()
        files[f"{graph.id}.onnx"] = data
        entries.append(Entry(graph.spec, f"{graph.id}.onnx", sha256(data)))
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            for name, data in files.items():
                (staging / name).write_bytes(data)
            write_manifest(staging, entries)
            folder.mkdir(exist_ok=True)
            for item in staging.iterdir():
                os.replace(item, folder / item.name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as err:
        raise InputError(f"cannot write to {folder}: {err.strerror}; choose another folder with --out") from None
    return folder
