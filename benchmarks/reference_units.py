"""How often does the reference call a correct runtime wrong on real models? Every execution unit
`dbench predict` would cut from a model (each runtime's own cut, as its unit graphs, with the inputs
dbench draws for them), run on ONNX Runtime CPU (graph optimizations off), on OpenVINO CPU (f32
pinned), on onnx.reference as it is and on dbench's corrected foreign reference, and judged as the
worker judges a row (dbench.check.verdict.compare, the unit's tolerance). Where the two runtimes agree,
a reference that fails either of them is a false mismatch. Units above onnx.reference's FLOP budget are
counted apart: dbench does not verify them with onnx.reference at all.

    PYTHONPATH=. python benchmarks/reference_units.py --source light               # onnx's nine light_* CNNs (opset 9)
    PYTHONPATH=. python benchmarks/reference_units.py --source torch --opsets 7,9,10,11,12
    PYTHONPATH=. python benchmarks/reference_units.py --source converted            \
# onnx's pytorch-converted tests (opset 6)

Sources: `light` (the structures onnx ships, weights by ConstantOfShape: dbench draws them), `torch`
(modules of benchmarks/predict_corpus.py exported by PyTorch's TorchScript exporter at old opsets,
at small inputs, into build/reference-units/; models the corrections were not written on), and
`converted` (onnx's pytorch-converted and pytorch-operator test models: IR 3, opsets 6 to 9).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "reference-units"
RUNTIMES = ("ort-cpu", "openvino")
TORCH_MODELS = {
    "resnet18": 96,
    "mobilenet_v2": 96,
    "squeezenet": 96,
    "shufflenet": 96,
    "densenet": 64,
    "vgg": 96,
    "kws": None,
    "unet": 64,
    "lstm": None,
    "gru": None,
    "crnn": None,
}
"""The modules of benchmarks/predict_corpus.py exported here, and the image side they get (small, so
that onnx.reference runs their units within its budget)."""


@dataclass
class Tally:
    """One model's units on one runtime's cut."""

    model: str
    runtime: str
    units: int = 0
    over_budget: int = 0
    runtimes_disagree: int = 0
    one_runtime: int = 0
    """Units only one runtime runs: judged against it alone."""
    one_runtime_differs: Counter = field(default_factory=Counter)
    """Of those, how many each reference (raw, corrected) disagrees with: not counted as false mismatches."""
    raw_unverified: int = 0
    raw_false: int = 0
    corrected_unverified: int = 0
    corrected_false: int = 0
    false_ops: Counter = field(default_factory=Counter)
    remaining_ops: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)


def light_models() -> list[Path]:
    root = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return sorted(root.glob("light_*.onnx"))


def converted_models() -> list[Path]:
    root = Path(onnx.__file__).parent / "backend" / "test" / "data"
    return sorted([*root.glob("pytorch-converted/*/model.onnx"), *root.glob("pytorch-operator/*/model.onnx")])


def torch_models(opsets: list[int]) -> tuple[list[Path], list[str]]:
    """The corpus modules exported at each opset (a module the exporter refuses at an opset is said)."""
    import torch

    from benchmarks.predict_corpus import MODELS

    BUILD.mkdir(parents=True, exist_ok=True)
    made, refused = [], []
    for name, side in TORCH_MODELS.items():
        spec = MODELS[name]
        example = spec.example()
        if side is not None:
            example = torch.randn(1, 3, side, side) if example.shape[1] == 3 else example
        for opset in opsets:
            path = BUILD / f"{name}_opset{opset}.onnx"
            if not path.exists():
                torch.manual_seed(opset)
                module = spec.build().eval()
                buffer = io.BytesIO()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        torch.onnx.export(
                            module,
                            (example,),
                            buffer,
                            opset_version=opset,
                            dynamo=False,
                            input_names=["x"],
                            output_names=["y"],
                        )
                except Exception as err:  # the exporter's refusal of an op at this opset
                    refused.append(f"{name} at opset {opset}: {str(err).strip().splitlines()[0][:160]}")
                    continue
                path.write_bytes(buffer.getvalue())
            made.append(path)
    return made, refused


def _outputs(
    run, model: onnx.ModelProto, feeds: dict[str, np.ndarray], names: list[str]
) -> dict[str, np.ndarray] | str:
    try:
        return dict(zip(names, (np.asarray(v) for v in run(model, feeds))))
    except Exception as err:  # the runtime's or the evaluator's own failure: said, not counted as a verdict
        return f"{type(err).__name__}: {str(err).strip().splitlines()[0][:160] if str(err).strip() else ''}"


def _reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray], names: list[str], corrected: bool):  # noqa: ANN202
    from onnx.reference import ReferenceEvaluator

    from dbench.sources.contrib_reference import contrib_ops
    from dbench.sources.foreign_reference import foreign_evaluator

    def run(m, f):  # noqa: ANN001, ANN202
        evaluator = foreign_evaluator(m) if corrected else ReferenceEvaluator(m, new_ops=list(contrib_ops(m)))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return evaluator.run(None, f)

    return _outputs(run, model, feeds, names)


def units_of(path: Path, runtime: str, tally: Tally, show: bool) -> None:
    """Judge every unit graph of `runtime`'s cut of the model at `path` into `tally`."""
    from benchmarks.reference_run import run_openvino, run_ort
    from dbench.check.verdict import compare
    from dbench.executed import ExecutedGraph
    from dbench.gen.feeds import make_feeds
    from dbench.runtimes.base import RuntimeOptions
    from dbench.sources.contract import stored_weights
    from dbench.sources.model_reference import FLOP_BUDGET, tolerance
    from dbench.sources.units import model_identity, named_model_item, prepare, unit_graphs
    from dbench.worker.execution import ExecutionJob, describe_execution

    item = named_model_item(path, {})
    if item.unsupported:
        tally.notes.append(f"dbench refuses the model: {item.unsupported}")
        return
    data, _ = item.load()
    executed = describe_execution(
        ExecutionJob(item.spec, data, runtime, RuntimeOptions(threads=1), "const", item.contract)
    )
    if not isinstance(executed, ExecutedGraph):
        tally.notes.append(f"{runtime} refuses the model: {executed.message[:160]}")
        return
    graphs = unit_graphs(
        prepare(path, {}), executed, model_identity(path, {}, runtime, {"threads": 1}), item.spec.precision
    )
    for unit in graphs.items[1:]:
        if unit.unsupported:
            tally.notes.append(f"{unit.spec.id}: {unit.unsupported[:120]}")
            continue
        tally.units += 1
        if unit.spec.flops > FLOP_BUDGET:
            tally.over_budget += 1
            continue
        blob, _ = unit.load()
        model = onnx.load_model_from_string(blob)
        stored_weights(model, "const")
        inputs = {i.name for i in model.graph.input}
        feeds = {k: v for k, v in make_feeds(unit.spec).items() if k in inputs}
        names = [o.name for o in model.graph.output]
        rule = tolerance(unit.spec)
        outputs = [
            o
            for o in (_outputs(run_ort, model, feeds, names), _outputs(run_openvino, model, feeds, names))
            if not isinstance(o, str)
        ]
        if not outputs:
            tally.notes.append(f"{unit.spec.id}: neither runtime runs the unit")
            continue
        if len(outputs) == 1:
            tally.one_runtime += 1  # judged against the one runtime that runs it, counted apart
        elif not compare(outputs[1], outputs[0], rule).ok:
            tally.runtimes_disagree += 1
            continue
        ops = unit.spec.id.split(".", 2)[-1]
        for corrected in (False, True):
            expected = _reference(model, feeds, names, corrected)
            if isinstance(expected, str):
                if corrected:
                    tally.corrected_unverified += 1
                else:
                    tally.raw_unverified += 1
                continue
            wrong = not all(compare(o, expected, rule).ok for o in outputs)
            if wrong and len(outputs) == 1:
                tally.one_runtime_differs[("corrected" if corrected else "raw")] += 1
            elif wrong and corrected:
                tally.corrected_false += 1
                tally.remaining_ops[ops] += 1
            elif wrong:
                tally.raw_false += 1
                tally.false_ops[ops] += 1
            if wrong and show:
                print(
                    f"    {'corrected' if corrected else 'raw'} reference fails {unit.spec.id} ({len(outputs)} "
                    "runtime(s))",
                    file=sys.stderr,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("light", "torch", "converted"), required=True)
    parser.add_argument("--opsets", default="7,9,10,11,12", help="opsets of the torch exports")
    parser.add_argument("--models", help="comma-separated model names (file stems) to keep")
    parser.add_argument("--json", type=Path, help="write every tally here as JSON lines")
    parser.add_argument("--show", action="store_true", help="name every unit a reference fails")
    args = parser.parse_args()
    refused: list[str] = []
    if args.source == "light":
        paths = light_models()
    elif args.source == "converted":
        paths = converted_models()
    else:
        paths, refused = torch_models([int(o) for o in args.opsets.split(",")])
    if args.models:
        keep = set(args.models.split(","))
        paths = [p for p in paths if p.stem in keep or p.parent.name in keep]
    for line in refused:
        print(f"not exported: {line}", file=sys.stderr)
    tallies = []
    began = time.monotonic()
    for path in paths:
        for runtime in RUNTIMES:
            name = path.stem if path.stem != "model" else path.parent.name
            tally = Tally(name, runtime)
            units_of(path, runtime, tally, args.show)
            tallies.append(tally)
            print(
                f"{name:42s} {runtime:9s} units {tally.units:4d}  over budget {tally.over_budget:3d}  runtimes "
                "disagree "
                f"{tally.runtimes_disagree:3d}  one runtime {tally.one_runtime:3d}  raw: false "
                f"{tally.raw_false:3d} unverified {tally.raw_unverified:3d}  "
                f"corrected: false {tally.corrected_false:3d} unverified {tally.corrected_unverified:3d}",
                flush=True,
            )
    totals = Counter()
    for tally in tallies:
        for key in (
            "units",
            "over_budget",
            "runtimes_disagree",
            "one_runtime",
            "raw_false",
            "raw_unverified",
            "corrected_false",
            "corrected_unverified",
        ):
            totals[key] += getattr(tally, key)
    judged = totals["units"] - totals["over_budget"] - totals["runtimes_disagree"]
    print(
        f"\n{len(tallies)} model x runtime cuts, {time.monotonic() - began:.0f} s: {totals['units']} units, "
        f"{totals['over_budget']} above the FLOP budget, {totals['runtimes_disagree']} where the runtimes disagree, "
        f"{totals['one_runtime']} only one runtime runs, "
        f"{judged} judged: onnx.reference alone {totals['raw_false']} false mismatches and "
        f"{totals['raw_unverified']} unverified; "
        f"dbench's reference {totals['corrected_false']} false mismatches and {totals['corrected_unverified']} "
        "unverified"
    )
    raw_ops, left_ops = Counter(), Counter()
    single = Counter()
    for tally in tallies:
        single.update(tally.one_runtime_differs)
    print(
        f"units only one runtime runs: onnx.reference alone differs from it on {single['raw']}, dbench's "
        f"reference on {single['corrected']}"
    )
    for tally in tallies:
        raw_ops.update(tally.false_ops)
        left_ops.update(tally.remaining_ops)
    print("onnx.reference alone fails units of:", ", ".join(f"{k} ({v})" for k, v in raw_ops.most_common(12)) or "none")
    print("dbench's reference fails units of:", ", ".join(f"{k} ({v})" for k, v in left_ops.most_common(12)) or "none")
    for tally in tallies:
        for note in tally.notes[:5]:
            print(f"note {tally.model} {tally.runtime}: {note}")
    if args.json:
        with args.json.open("w") as f:
            for tally in tallies:
                f.write(
                    json.dumps(
                        {
                            **tally.__dict__,
                            "false_ops": dict(tally.false_ops),
                            "remaining_ops": dict(tally.remaining_ops),
                            "one_runtime_differs": dict(tally.one_runtime_differs),
                        }
                    )
                    + "\n"
                )


if __name__ == "__main__":
    main()
