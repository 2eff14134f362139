"""Finished `dbench predict` runs predicted again with other shares of each unit's evicted excess: the
same rows (warm, evicted and both empty graphs, same rounds), the unit's time in the model's cache
state = warm + f x (evicted excess), f taken four ways:

- weights: f = weight bytes / (weight + input + output bytes): dbench predict's rule;
- weights+outputs: f = (weight + output bytes) / (weight + input + output bytes): only the inputs warm;
- evicted: f = 1 (every byte where the model's traffic left it);
- warm: f = 0 (the units alone and repeated).

The units' input and output bytes are read from a fresh cut of each run's model (`dbench export
--units`, the same cut the run made), so the runs need the corpus models under --corpus.

    PYTHONPATH=. python benchmarks/predict_share_rules.py results-real --corpus build/predict-corpus
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

import dbench.units.prediction as prediction
from dbench.gen.precision import DTYPES
from dbench.orchestrator.predict import export_units
from dbench.orchestrator.request import RunRequest
from dbench.store.log import RunLog

RULES: dict[str, Callable[[int, int, int], float]] = {
    "weights": lambda w, i, o: w / (w + i + o) if w + i + o else 0.0,
    "weights+outputs": lambda w, i, o: (w + o) / (w + i + o) if w + i + o else 0.0,
    "evicted": lambda w, i, o: 1.0,
    "warm": lambda w, i, o: 0.0,
}


def unit_bytes(corpus: Path, model: str, runtime: str, threads: int) -> dict[str, tuple[int, int]]:
    """Unit graph id -> (input bytes, output bytes), from a cut of the model as the run made it."""
    out = Path(tempfile.mkdtemp(prefix="share-rules-")) / "units"
    export_units(RunRequest(graphs=str(corpus / f"{model}.onnx"), runtime=runtime, threads=threads), out)

    def size(t: dict) -> int:
        return int(np.prod(t["shape"])) * DTYPES[t["dtype"]].itemsize

    graphs = json.loads((out / "manifest.json").read_text())["graphs"]
    return {g["id"]: (sum(size(t) for t in g["inputs"] if t["role"] != "weight"), sum(size(t) for t in g["outputs"]))
            for g in graphs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path)
    parser.add_argument("--corpus", type=Path, default=Path("build/predict-corpus"))
    args = parser.parse_args()
    errors: dict[str, list[float]] = {name: [] for name in RULES}
    original = prediction.weight_share
    for path in sorted(args.runs.rglob("*.jsonl")):
        log = RunLog.read(path)
        rows = log.rows()
        model = next((r for r in rows if prediction.tag(r).get("role") == "model"), None)
        if model is None:
            continue
        info = prediction.tag(model)
        sizes = unit_bytes(args.corpus, info["model"], info["runtime"], log.header()["request"]["threads"] or 1)
        line = f"| {info['model']} | {info['runtime']} |"
        for name, rule in RULES.items():
            prediction.weight_share = lambda row, rule=rule: rule(prediction.tag(row)["weight_bytes"], *sizes[row["graph_id"]])
            (p,) = prediction.predictions(rows)
            errors[name].append(p.error)
            line += f" {p.error * 100:+.1f}% |"
        print(line)
    prediction.weight_share = original
    for name, found in errors.items():
        print(f"{name}: {sum(abs(e) <= 0.10 for e in found)}/{len(found)} within ±10 %, {sum(abs(e) <= 0.05 for e in found)}/"
              f"{len(found)} within ±5 %, mean signed error {sum(found) / len(found) * 100:+.1f}%")


if __name__ == "__main__":
    main()
