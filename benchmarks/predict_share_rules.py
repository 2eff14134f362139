"""Finished `dbench predict` runs predicted again with other shares of each unit's evicted excess: the
same rows (warm, evicted and both empty graphs, same rounds), the unit's time in the model's cache
state = warm + f x (evicted excess), f taken these ways (w: the unit's weight bytes; its activations:
every value it reads from or hands to its neighbours, inputs and outputs; L2: the per-core L2 of the
machine the run timed on, from its header):

- weights: f = w / (w + activations): dbench predict's rule;
- weights+outputs: f = (w + output bytes) / (w + activations): only the inputs warm;
- weights+activations>L2: f = (w + the activations larger than the L2) / (w + activations): a value
  that cannot stay in a core's L2 from its producer's call to its consumer's taken where the model's
  traffic leaves it;
- weights+outputs>L2: the same for the outputs only (the buffers the unit writes);
- evicted: f = 1 (every byte where the model's traffic left it);
- warm: f = 0 (the units alone and repeated).

The units' input and output tensors are read from a fresh cut of each run's model (`dbench export
--units`, the same cut the run made), so the runs need the corpus models under --corpus. `--decide`
names the models the rule is chosen on; the summary is given for them, for the others (held out) and
for all, per runtime.

    PYTHONPATH=. python benchmarks/predict_share_rules.py build/acc2-t1 --corpus build/predict-corpus \\
        --decide tv_efficientnet_b0,tv_mobilenet_v3_small,tv_regnet_y_400mf
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

import dbench.units.prediction as prediction
from dbench.gen.precision import DTYPES
from dbench.orchestrator.predict import export_units
from dbench.orchestrator.request import RunRequest
from dbench.store.log import RunLog

Tensors = tuple[list[int], list[int]]
"""A unit's input and output tensors' bytes (its activations: weights left out)."""


def _share(w: int, tensors: Tensors, cold: list[int]) -> float:
    total = w + sum(tensors[0]) + sum(tensors[1])
    return (w + sum(cold)) / total if total else 0.0


RULES: dict[str, Callable[[int, Tensors, dict[str, int]], float]] = {
    "weights": lambda w, t, c: _share(w, t, []),
    "weights+outputs": lambda w, t, c: _share(w, t, t[1]),
    "weights+activations>L2": lambda w, t, c: _share(w, t, [b for b in t[0] + t[1] if b > c["L2"]]),
    "weights+outputs>L2": lambda w, t, c: _share(w, t, [b for b in t[1] if b > c["L2"]]),
    "evicted": lambda w, t, c: 1.0,
    "warm": lambda w, t, c: 0.0,
}


def unit_tensors(corpus: Path, model: str, runtime: str, threads: int) -> dict[str, Tensors]:
    """Unit graph id -> its input and output tensors' bytes, from a cut of the model as the run made it."""
    out = Path(tempfile.mkdtemp(prefix="share-rules-")) / "units"
    export_units(RunRequest(graphs=str(corpus / f"{model}.onnx"), runtime=runtime, threads=threads), out)

    def size(t: dict) -> int:
        return int(np.prod(t["shape"])) * DTYPES[t["dtype"]].itemsize

    graphs = json.loads((out / "manifest.json").read_text())["graphs"]
    return {
        g["id"]: ([size(t) for t in g["inputs"] if t["role"] != "weight"], [size(t) for t in g["outputs"]])
        for g in graphs
    }


def summary(name: str, found: list[float]) -> str:
    if not found:
        return f"{name}: no pair"
    return (
        f"{name}: {sum(abs(e) <= 0.10 for e in found)}/{len(found)} within ±10 %, {sum(abs(e) <= 0.05 for e in found)}/"
        f"{len(found)} within ±5 %, mean signed error {sum(found) / len(found) * 100:+.1f}%"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--corpus", type=Path, default=Path("build/predict-corpus"))
    parser.add_argument("--decide", default="", help="the models the rule is chosen on (the rest are held out)")
    args = parser.parse_args()
    deciding = set(filter(None, args.decide.split(",")))
    errors: list[tuple[str, str, str, dict[str, float]]] = []
    original = prediction.weight_share
    print("| model | runtime | threads | " + " | ".join(RULES) + " |")
    print("|---|---|---:|" + "---:|" * len(RULES))
    for path in sorted(p for folder in args.runs for p in folder.rglob("*.jsonl")):
        log = RunLog.read(path)
        rows = log.rows()
        model = next((r for r in rows if prediction.tag(r).get("role") == "model"), None)
        if model is None or model.get("status") != "ok":
            continue
        info = prediction.tag(model)
        header = log.header()
        threads = header["request"]["threads"] or 1
        caches = header["host"]["caches"]
        sizes = unit_tensors(args.corpus, info["model"], info["runtime"], threads)
        found = {}
        for name, rule in RULES.items():
            prediction.weight_share = lambda row, rule=rule, sizes=sizes, caches=caches: rule(
                prediction.tag(row).get("weight_bytes") or 0, sizes[row["graph_id"]], caches
            )
            (p,) = prediction.predictions(rows)
            found[name] = p.error
        errors.append((info["model"], info["runtime"], str(threads), found))
        print(
            f"| {info['model']} | {info['runtime']} | {threads} | "
            + " | ".join(f"{e * 100:+.1f}%" for e in found.values())
            + " |",
            flush=True,
        )
    prediction.weight_share = original
    groups = (
        {
            "decided on": [e for e in errors if e[0] in deciding],
            "held out": [e for e in errors if e[0] not in deciding],
            "all": errors,
        }
        if deciding
        else {"all": errors}
    )
    for group, members in groups.items():
        for runtime in [*sorted({e[1] for e in members}), "all"]:
            for threads in [*sorted({e[2] for e in members}), "all"]:
                mine = [e for e in members if runtime in ("all", e[1]) and threads in ("all", e[2])]
                if not mine or (threads == "all" and len({e[2] for e in members}) == 1):
                    continue
                print(f"\n{group}, {runtime}, --threads {threads} ({len(mine)} pairs):")
                for name in RULES:
                    print("  " + summary(name, [e[3][name] for e in mine]))


if __name__ == "__main__":
    main()
