"""Where a unit's time inside the model differs from its time alone, layer by layer, on ONNX Runtime: for
each unit of a model (the cut `dbench predict` makes), ONNX Runtime's profile of the unit's own layers
(its boundary reorders left out, as the prediction leaves them out) in the whole model, against the same
layers in the unit's own graph called

- warm: repeated (dbench's warm time);
- evicted: after reading a buffer of the model's traffic, its inputs read back (dbench's evicted twin);
- evicted, outputs warm: the same, and the unit's output buffers read back too (bound once, written
  by every call);
- evicted, inputs cold: after the model's traffic, nothing read back.

Each unit's bytes are printed beside it (weights, inputs, outputs, and its largest activation), with the
machine's cache sizes, so that where the model is slower than the unit alone can be set against how
its data fits the caches. Every unit is timed in one process, one session per way; run it alone:

    PYTHONPATH=. python benchmarks/predict_activation_state.py build/predict-corpus/tv_efficientnet_b0.onnx
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import onnx

from dbench.gen.feeds import make_feeds
from dbench.gen.precision import DTYPES
from dbench.gen.weights import split_feeds
from dbench.orchestrator.request import RunRequest
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.onnxruntime import parse_profile
from dbench.sources.contract import stored_weights
from dbench.sources.folder import folder_items
from dbench.sources.units import named_model_item
from dbench.store.metadata import cache_sizes
from dbench.units.prediction import BOUNDARY_REORDERS
from dbench.worker.evict import eviction_buffer
from dbench.worker.instance import runtime_for

WAYS = ("warm", "evicted", "evicted, outputs warm", "evicted, inputs cold")
WARMUP = 3


def _profiled(runtime, data: bytes, spec, calls: int, before) -> dict[str, float]:
    """Layer name -> its profiled time per call (boundary reorders left out) over `calls` calls, each
    after `before(inputs, outputs)` (untimed), in a fresh profiling session with its inputs and
    outputs bound once."""
    model = onnx.load_model_from_string(data)
    feeds = {**make_feeds(spec), **stored_weights(model, "const")}
    constants, per_call = split_feeds(spec, feeds, "const")
    session = runtime.make_session(model.SerializeToString(), constants, profiling=True)
    binding = session.io_binding()
    for name, array in per_call.items():
        binding.bind_cpu_input(name, array)
    outputs = {t.name: np.zeros(t.shape, dtype=DTYPES[t.dtype]) for t in spec.outputs}
    for name, array in outputs.items():
        binding.bind_output(name, "cpu", 0, array.dtype, list(array.shape), array.ctypes.data)
    for _ in range(WARMUP + calls):
        before(list(per_call.values()), list(outputs.values()))
        session.run_with_iobinding(binding)
    path = session.end_profiling()
    with open(path) as fh:
        events = json.load(fh)
    os.unlink(path)
    return {
        n.name: n.time_us
        for n in parse_profile(events, WARMUP).nodes
        if not n.container and n.op_type not in BOUNDARY_REORDERS
    }


def _read(arrays: list[np.ndarray]) -> None:
    for a in arrays:
        a.view(np.uint8).sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None, help="write every unit's figures here too")
    args = parser.parse_args()
    from dbench.orchestrator.predict import export_units

    folder = Path(tempfile.mkdtemp(prefix="activation-state-"))
    export_units(RunRequest(graphs=str(args.model), runtime="ort-cpu", threads=args.threads), folder / "units")
    runtime = runtime_for("ort-cpu", RuntimeOptions(threads=args.threads))
    caches = cache_sizes()
    item = named_model_item(args.model, {})
    whole, _ = item.load()
    in_model = _profiled(runtime, whole, item.spec, args.calls, lambda i, o: None)
    units = [
        u
        for u in folder_items(folder / "units")
        if u.spec.attrs["predict"].get("role") == "unit"
        and not u.spec.attrs["predict"].get("timing")
        and u.spec.attrs["predict"]["kind"] != "inserted"
    ]
    traffic = units[0].spec.attrs["predict"]["evict_bytes"]
    buffer = eviction_buffer(traffic)
    ways = {
        "warm": lambda i, o: None,
        "evicted": lambda i, o: (buffer.sum(), _read(i)),
        "evicted, outputs warm": lambda i, o: (buffer.sum(), _read(i), _read(o)),
        "evicted, inputs cold": lambda i, o: buffer.sum(),
    }
    print(
        f"{args.model.stem} on ort-cpu, --threads {args.threads}: {len(units)} distinct units, model traffic "
        f"{traffic / 2**20:.1f} MiB; caches {', '.join(f'{k} {v // 1024} KiB' for k, v in caches.items())}; "
        f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("| unit | count | weights | inputs | outputs | largest activation | in model | " + " | ".join(WAYS) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(WAYS))
    found = []
    for unit in units:
        info = unit.spec.attrs["predict"]
        data, _ = unit.load()
        layers = [name for o in info["occurrences"] for name in o["layers"]]
        model_us = sum(in_model.get(name, 0.0) for name in layers) / info["count"]
        times = {
            way: sum(_profiled(runtime, data, unit.spec, args.calls, before).values()) for way, before in ways.items()
        }
        inputs = sum(t.nbytes for t in unit.spec.inputs if t.role != "weight")
        outputs = sum(t.nbytes for t in unit.spec.outputs)
        largest = max(
            [t.nbytes for t in unit.spec.inputs if t.role != "weight"] + [t.nbytes for t in unit.spec.outputs]
        )
        found.append(
            {
                "unit": unit.spec.id,
                "count": info["count"],
                "weight_bytes": info["weight_bytes"],
                "input_bytes": inputs,
                "output_bytes": outputs,
                "largest_bytes": largest,
                "in_model_us": model_us,
                **times,
            }
        )
        print(
            f"| {unit.spec.id} | {info['count']} | {info['weight_bytes'] / 1024:.0f} KiB | {inputs / 1024:.0f} KiB | "
            f"{outputs / 1024:.0f} KiB | {largest / 1024:.0f} KiB | {model_us:.1f} | "
            + " | ".join(f"{times[w]:.1f}" for w in WAYS)
            + " |",
            flush=True,
        )
    print(
        "\nsums (µs, each unit x its count), by its largest activation against the L2 "
        f"({caches.get('L2', 0) // 1024} KiB):"
    )
    for name, members in (
        ("all", found),
        ("largest activation > L2", [f for f in found if f["largest_bytes"] > caches.get("L2", 0)]),
        ("largest activation <= L2", [f for f in found if f["largest_bytes"] <= caches.get("L2", 0)]),
    ):
        total = lambda key, members=members: sum(f["count"] * f[key] for f in members)  # noqa: E731
        print(
            f"  {name} ({len(members)} units): in model {total('in_model_us'):.0f}; "
            + "; ".join(
                f"{w} {total(w):.0f} ({total(w) / total('in_model_us') - 1:+.1%})" for w in WAYS if total("in_model_us")
            )
        )
    print(f"load at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "model": args.model.stem,
                    "threads": args.threads,
                    "caches": caches,
                    "traffic": traffic,
                    "units": found,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
