"""Ways to time a model's units in the cache state the model leaves them, side by side in one process,
against the whole model: the units' sum (empty + Σ (unit - empty), each occurrence its own session)
taken

- alone: each unit repeated (its weights warm: what dbench predict did before);
- chain: the units called in the model's order, each timed by its own clock reads, so each finds the
  caches the units before it left (the empty graph in the chain too, for the chain's cost per call);
- chain+inputs: the chain, each unit's inputs read just before its call (as its producer left them);
- evicted: each unit after reading a buffer of the model's traffic (dbench.worker.evict), inputs back;
- model-state: alone plus the evicted excess in the unit's weight share (dbench predict's way).

Boundary reorders are not left out here (no profiles): the sums compare the ways with one another and
with the model, not dbench predict's final figure. Run it alone on the machine:

    PYTHONPATH=. python benchmarks/predict_cache_ways.py build/predict-corpus/tv_resnet18.onnx ort-cpu
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from dbench.gen.feeds import make_feeds
from dbench.gen.weights import split_feeds
from dbench.orchestrator.request import RunRequest
from dbench.runtimes.base import RuntimeOptions
from dbench.sources.contract import stored_weights
from dbench.sources.folder import folder_items
from dbench.sources.units import named_model_item
from dbench.units.prediction import in_model_state, weight_share
from dbench.units.structure import name_nodes
from dbench.worker.instance import runtime_for

clock = time.perf_counter_ns


def session(runtime, spec, data: bytes):
    """A prepared session with its inputs bound, and those inputs."""
    model = onnx.load_model_from_string(data)
    feeds = {**make_feeds(spec), **stored_weights(model, "const")}
    constants, per_call = split_feeds(spec, feeds, "const")
    prepared = runtime.prepare(model, spec, constants)
    prepared.bind(per_call)
    return prepared, list(per_call.values())


def median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1e3


def alone(s, calls: int) -> float:
    for _ in range(3):
        s.run()
    samples = []
    for _ in range(calls):
        t0 = clock()
        s.run()
        samples.append(clock() - t0)
    return median_us(samples)


def evicted(s, buffer: np.ndarray, calls: int) -> float:
    samples = []
    for _ in range(calls + 2):
        buffer.sum()
        s.refresh_inputs()
        t0 = clock()
        s.run()
        samples.append(clock() - t0)
    return median_us(samples[2:])


def chain(empty, sessions: list, calls: int, touch: bool) -> tuple[float, list[float]]:
    """The empty graph then every occurrence in the model's order, `calls` times over (2 untimed first)."""
    per = [[] for _ in sessions]
    empties = []
    for n in range(calls + 2):
        t0 = clock()
        empty.run()
        if n >= 2:
            empties.append(clock() - t0)
        for i, (s, inputs) in enumerate(sessions):
            if touch:
                for a in inputs:
                    a.view(np.uint8).sum()
            t0 = clock()
            s.run()
            t1 = clock()
            if n >= 2:
                per[i].append(t1 - t0)
    return median_us(empties), [median_us(p) for p in per]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("runtime")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from dbench.orchestrator.predict import export_units

    folder = Path(tempfile.mkdtemp(prefix="cache-ways-"))
    export_units(RunRequest(graphs=str(args.model), runtime=args.runtime, threads=args.threads), folder / "units")
    runtime = runtime_for(args.runtime, RuntimeOptions(threads=args.threads))
    items = folder_items(folder / "units")
    named = name_nodes(onnx.load(str(args.model), load_external_data=False))
    index = {node.name: i for i, node in enumerate(named.graph.node)}
    units, occurrences = [], []
    for item in items:
        info = item.spec.attrs["predict"]
        if info.get("timing"):
            continue
        data, _ = item.load()
        if info["role"] == "empty":
            empty = session(runtime, item.spec, data)[0]
            continue
        row = {"attrs": {"predict": info}}
        for o in info["occurrences"]:  # each occurrence its own session: its own weights, as in the model
            occurrences.append((max(index[n] for n in o["nodes"]), len(units), session(runtime, item.spec, data)))
        units.append(row)
    occurrences.sort(key=lambda o: o[0])
    traffic = units[0]["attrs"]["predict"]["evict_bytes"]
    buffer = np.ones(max(1, traffic // 8))
    data, _ = named_model_item(args.model, {}).load()
    whole = session(runtime, named_model_item(args.model, {}).spec, data)[0]
    print(
        f"{args.model.stem} on {args.runtime}, --threads {args.threads}: {len(units)} distinct units, "
        f"{len(occurrences)} "
        f"calls, model traffic {traffic / 2**20:.1f} MiB; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for repeat in range(args.repeats):
        model = alone(whole, args.calls)
        e, ee = alone(empty, 2000), evicted(empty, buffer, 200)
        warm = [alone(s, args.calls) for _, _, (s, _) in occurrences]
        cold = [evicted(s, buffer, args.calls) for _, _, (s, _) in occurrences]
        ce, chained = chain(empty, [s for _, _, s in occurrences], args.calls, touch=False)
        te, touched = chain(empty, [s for _, _, s in occurrences], args.calls, touch=True)
        state = [
            in_model_state(w, e, c, ee, weight_share(units[u])) for (_, u, _), w, c in zip(occurrences, warm, cold)
        ]
        sums = {
            "alone": e + sum(w - e for w in warm),
            "chain": ce + sum(c - ce for c in chained),
            "chain+inputs": te + sum(c - te for c in touched),
            "evicted": e + sum(c - ee for c in cold),
            "model-state": e + sum(s - e for s in state),
        }
        print(
            f"  repeat {repeat + 1}: model {model:.0f} µs; "
            + "; ".join(f"{k} {v:.0f} ({v / model - 1:+.1%})" for k, v in sums.items())
            + f"; empty {e:.1f} µs, evicted {ee:.1f}, in the chain {ce:.1f}"
        )
    print(f"  load at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
