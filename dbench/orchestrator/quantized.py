"""`dbench compare FP32-RUN QUANTIZED-RUN --quantized` (or `dbench compare RUN --quantized`): what
quantization buys, in time and in accuracy.

The two runs are `dbench predict` runs (whole model and units) or `dbench run --model` runs (whole
model only) of an fp32 model and its quantized twin, on one runtime; or one `dbench run --graphs DIR`
run of a folder holding both (whole model only, its rounds paired: the fairest speedup). Time: the whole model and each
unit twin (dbench.units.twins pairs the two cuts) through compare's test (dbench.units.speedup).
Accuracy: a worker runs both model files, as the runs named them, on one runtime and the same seeded
inputs (dbench.worker.accuracy), twice: the models as they were timed (their outputs' error and, for a
[batch, classes] output, top-1 agreement), then with each twin's boundary values exposed as outputs
in both (the error the quantized model has accumulated by the end of that unit; exposing a value may
keep a runtime from fusing across it, which is why the whole model's figures come from the first pass).
The parent never imports a runtime: it edits ONNX graphs and reads rows."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from dbench.errors import InputError, UsageError
from dbench.orchestrator.request import RunRequest
from dbench.orchestrator.worker_process import WorkerProcess
from dbench.outcome import Outcome
from dbench.sources.item import Item
from dbench.sources.model import model_item
from dbench.sources.units import prepare
from dbench.stats.fdr import FDR
from dbench.store.compare import RESOLUTION, Comparison, open_run, run_side
from dbench.store.log import RunLog
from dbench.store.shards import merge
from dbench.units.prediction import MODEL, PREDICT_ATTR
from dbench.units.speedup import WHOLE, Speed, speeds
from dbench.units.twins import CutSide, Pairing, pair_units
from dbench.worker.accuracy import AccuracyCost, AccuracyJob, ValueCost

INPUTS = 200
"""Seeded inputs the accuracy is measured over by default: at batch 1, 198 of 200 agreeing (99 %) has the
Wilson interval [96.4 %, 99.7 %], all 200 [98.1 %, 100 %]; give --inputs for narrower ones."""

MAX_INPUTS = 1_000_000
"""--inputs' ceiling: an interval of a point's tenth at any agreement, and a number a typo cannot make hours."""


@dataclass(frozen=True)
class Line:
    """The whole model or one unit twin: its timing and the error of the values that end it."""

    label: str
    speed: Speed
    fp32_units: tuple[str, ...] = ()
    quantized_units: tuple[str, ...] = ()
    errors: tuple[ValueCost, ...] = ()

    @property
    def worst(self) -> ValueCost | None:
        """The value with the largest relative error."""
        return max(self.errors, key=lambda e: e.relative_error, default=None)


@dataclass(frozen=True)
class QuantizedComparison:
    """An fp32 model beside its quantized twin: the whole model first, then each unit twin."""

    fp32: str
    quantized: str
    runtime: str
    comparison: Comparison
    lines: tuple[Line, ...]
    inputs: int
    seed: int
    fp32_alone: tuple[str, ...] = ()
    quantized_alone: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Every line's figures, for --format json."""

        def line(x: Line) -> dict[str, Any]:
            interval = x.speed.interval
            return {
                "label": x.label,
                "speedup": x.speed.speedup,
                "speedup_low": interval[0] if interval else None,
                "speedup_high": interval[1] if interval else None,
                "time_trusted": x.speed.trusted,
                "verdict": x.speed.pair.verdict,
                "fp32_us": x.speed.pair.a[0].get("median_us") if x.speed.pair.a else None,
                "quantized_us": x.speed.pair.b[0].get("median_us") if x.speed.pair.b else None,
                "fp32_status": x.speed.pair.a[0].get("status") if x.speed.pair.a else None,
                "quantized_status": x.speed.pair.b[0].get("status") if x.speed.pair.b else None,
                "fp32_units": list(x.fp32_units),
                "quantized_units": list(x.quantized_units),
                "errors": [vars(e) for e in x.errors],
            }

        return {
            "fp32": self.fp32,
            "quantized": self.quantized,
            "runtime": self.runtime,
            "method": self.comparison.method,
            "inputs": self.inputs,
            "seed": self.seed,
            "lines": [line(x) for x in self.lines],
            "fp32_units_without_twin": list(self.fp32_alone),
            "quantized_units_without_twin": list(self.quantized_alone),
            "notes": list(self.notes),
            "warnings": self.warnings,
        }

    @property
    def warnings(self) -> list[str]:
        """What the runs' readers must know (a busy machine, --quick, a torn log line: compare's warnings)."""
        return list(dict.fromkeys(self.comparison.a.warnings + self.comparison.b.warnings))


@dataclass(frozen=True)
class _Run:
    """One side as the comparison needs it: its log, model file, dims, runtime settings and rows."""

    log: RunLog
    path: Path
    request: RunRequest
    model_row: dict
    rows: dict[str, dict]
    units: list[dict]
    """The model row's cut: every unit occurrence (graph id, kind, nodes) of a prediction run; [] otherwise."""


def _tag(row: dict) -> dict:
    return (row.get("attrs") or {}).get(PREDICT_ATTR) or {}


def _read(results: Path, name: str) -> _Run:
    """A run of one model, its model file still as it was timed."""
    log = open_run(results, name)
    header = log.header()
    request = RunRequest.from_dict(header.get("request", {}), log.path)
    path = Path(request.graphs or "")
    if not request.graphs or path.suffix != ".onnx":
        raise UsageError(
            f"run {header.get('run_id', name)} did not time one model; --quantized compares two runs of "
            "dbench predict MODEL.onnx (or dbench run --model MODEL.onnx)"
        )
    if not path.is_file():
        raise InputError(f"run {header.get('run_id', name)} timed {path}, which is no longer there; put it back")
    rows = {r["graph_id"]: r for r in log.rows()}
    model_row = next((r for r in rows.values() if _tag(r).get("role") == MODEL), None) or rows.get(path.stem)
    if model_row is None:
        raise InputError(f"run {header.get('run_id', name)} has no row of {path.name}; was it interrupted?")
    digest = _tag(model_row).get("sha256")
    if digest and hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        raise InputError(f"{path} changed since run {header.get('run_id', name)} timed it; time it again")
    units = [u for u in _tag(model_row).get("units") or [] if u.get("graph") and u["graph"] in rows]
    return _Run(log, path, request, model_row, rows, units)


def _read_folder_run(results: Path, name: str) -> tuple[_Run, _Run]:
    """One `dbench run --graphs DIR` run of two models, the fp32 model and its quantized twin, timed in
    the same rounds: each side as a run of its own model file (the fp32 one is the row of precision fp32)."""
    log = open_run(results, name)
    header = log.header()
    request = RunRequest.from_dict(header.get("request", {}), log.path)
    folder = Path(request.graphs or "")
    rows = list({r["graph_id"]: r for r in log.rows()}.values())
    fp32 = [r for r in rows if r.get("precision") == "fp32"]
    quantized = [r for r in rows if r.get("precision") != "fp32"]
    if not request.graphs or not folder.is_dir() or len(fp32) != 1 or len(quantized) != 1:
        raise UsageError(
            f"run {header.get('run_id', name)} is not a run of a folder of two models, one fp32 and one "
            "quantized; give two runs (dbench compare FP32-RUN INT8-RUN --quantized), or time both models in "
            "one run with dbench run --graphs DIR"
        )
    sides = []
    for row in (fp32[0], quantized[0]):
        path = folder / f"{row['graph_id']}.onnx"
        if not path.is_file():
            raise InputError(f"run {header.get('run_id', name)} timed {path}, which is no longer there; put it back")
        sides.append(_Run(log, path, request, row, {row["graph_id"]: row}, []))
    return sides[0], sides[1]


def _cut_side(run: _Run, model: onnx.ModelProto) -> CutSide:
    return CutSide(
        tuple(u["graph"] for u in run.units),
        tuple(tuple(u["nodes"]) for u in run.units),
        {n.name: tuple(o for o in n.output if o) for n in model.graph.node},
    )


def _boundary(model: onnx.ModelProto, nodes: set[str]) -> list[str]:
    """The values `nodes` write that a node outside them reads, or that the model outputs."""
    written = [o for n in model.graph.node if n.name in nodes for o in n.output if o]
    read_outside = {i for n in model.graph.node if n.name not in nodes for i in n.input}
    outputs = {o.name for o in model.graph.output}
    return [v for v in written if v in read_outside or v in outputs]


def _float_values(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Every float value of the model whose element type shape inference knows."""
    inferred = onnx.shape_inference.infer_shapes(model)
    values = list(inferred.graph.value_info) + list(inferred.graph.output)
    return {v.name: v for v in values if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT}


def _exposed(model: onnx.ModelProto, values: list[str], folder: Path, dims: dict[str, int]) -> Item:
    """The model with `values` added to its outputs, as an Item read from `folder`."""
    known = _float_values(model)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    present = {o.name for o in copy.graph.output}
    copy.graph.output.extend(known[name] for name in values if name not in present)
    path = folder / "exposed.onnx"
    onnx.save(copy, str(path))
    return model_item(path, dims, all_dims=False)


def _accuracy(
    fp32: Item,
    quantized: Item,
    run: _Run,
    inputs: int,
    values: tuple[tuple[str, str], ...],
    classifiers: tuple[str, ...] = (),
) -> AccuracyCost | str:
    """The worker's accuracy cost over `values` (fp32 value, the quantized value for it), or why there is none."""
    config = run.request.config()
    variant = config.variants[0]
    job = AccuracyJob(
        fp32.spec,
        fp32.load()[0],
        quantized.spec,
        quantized.load()[0],
        variant.runtime,
        variant.options,
        inputs,
        values,
        classifiers,
    )
    worker = WorkerProcess(config.memory_limit, config.cpus)
    try:
        answer = worker.submit(job, config.timeout)
    finally:
        worker.stop()
    if isinstance(answer, Outcome):
        return f"{variant.runtime} could not run both models ({answer.status}: {answer.message})"
    return answer


def _check_inputs(fp32: Item, quantized: Item) -> None:
    """Both models take the same inputs (names, shapes, types): the same feeds go to each."""
    a = [(t.name, tuple(t.shape), t.dtype) for t in fp32.spec.inputs if t.role != "weight"]
    b = [(t.name, tuple(t.shape), t.dtype) for t in quantized.spec.inputs if t.role != "weight"]
    if a != b:
        raise InputError(
            f"the models take different inputs (fp32 {a}, quantized {b}): a quantized twin is fed what its "
            "fp32 model is; give the same --dim to both runs"
        )


def _checked_runs(results: Path, fp32_name: str, quantized_name: str | None) -> tuple[_Run, _Run]:
    """Both sides (two runs, or one run of both models), refused unless on one runtime."""
    if quantized_name is None:
        fp32, quantized = _read_folder_run(results, fp32_name)
    else:
        fp32, quantized = _read(results, fp32_name), _read(results, quantized_name)
    runtimes = [r.request.config().variants[0].runtime for r in (fp32, quantized)]
    if len(set(runtimes)) > 1 or any(len(r.request.config().variants) > 1 for r in (fp32, quantized)):
        raise UsageError(
            f"the runs are on {' and '.join(runtimes)}: what quantization buys is measured on one runtime; "
            "time both models on the same --runtime"
        )
    return fp32, quantized


def _whole_items(fp32: _Run, quantized: _Run) -> tuple[Item, Item, tuple[str, ...]]:
    """Both model files as Items, and the fp32 model's outputs, refused unless the twin takes the same
    inputs and gives outputs of the same names."""
    items = [model_item(r.path, r.request.dims, all_dims=False) for r in (fp32, quantized)]
    _check_inputs(*items)
    outputs = tuple(t.name for t in items[0].spec.outputs)
    missing = [o for o in outputs if o not in {t.name for t in items[1].spec.outputs}]
    if missing:
        raise InputError(
            f"the quantized model has no output named {', '.join(missing)}: a quantized twin keeps its fp32 "
            "model's output names; compare the twin onnxruntime.quantization made of that model"
        )
    return items[0], items[1], outputs


def _probed(
    runs: tuple[_Run, _Run], models: list[onnx.ModelProto], exposed: tuple[tuple[str, str], ...], inputs: int
) -> AccuracyCost | str | None:
    """The second pass: the values that end the twins exposed as outputs of both models (None: no value to expose)."""
    if not exposed:
        return None
    with tempfile.TemporaryDirectory(prefix="dbench-quantized-") as tmp:
        items = []
        for k, (model, run) in enumerate(zip(models, runs)):
            folder = Path(tmp) / str(k)
            folder.mkdir()
            items.append(_exposed(model, [pair[k] for pair in exposed], folder, run.request.dims))
        return _accuracy(items[0], items[1], runs[0], inputs, exposed)


def check_inputs(inputs: int) -> None:
    """Refuse an --inputs count outside 1..MAX_INPUTS in one line."""
    if not 1 <= inputs <= MAX_INPUTS:
        raise UsageError(f"--inputs {inputs} must be 1 to {MAX_INPUTS:,} (the inputs the accuracy is measured over)")


def compare_quantized(
    results: Path,
    fp32_name: str,
    quantized_name: str | None,
    inputs: int = INPUTS,
    fdr: float = FDR,
    resolution: float = RESOLUTION,
) -> QuantizedComparison:
    """Set the quantized run beside the fp32 run (module docstring), compare's verdicts at `fdr`; without
    `quantized_name`, the one run of a folder of both models, whose rounds pair them."""
    check_inputs(inputs)
    fp32, quantized = _checked_runs(results, fp32_name, quantized_name)
    fp32_item, quantized_item, outputs = _whole_items(fp32, quantized)
    models = [prepare(r.path, r.request.dims).loaded.model for r in (fp32, quantized)]
    fp32_cut = _cut_side(fp32, models[0])
    pairing = pair_units(fp32_cut, _cut_side(quantized, models[1]))
    twins = {twin.label(fp32_cut): twin for twin in pairing.twins}
    lines = {WHOLE: ([fp32.model_row], [quantized.model_row])} | {
        label: (
            [fp32.rows[fp32.units[i]["graph"]] for i in twin.fp32],
            [quantized.rows[quantized.units[j]["graph"]] for j in twin.quantized],
        )
        for label, twin in twins.items()
    }
    one_run = quantized_name is None
    sides = [run_side(merge([r.log])) for r in ((fp32,) if one_run else (fp32, quantized))]
    comparison, found = speeds(sides[0], sides[-1], lines, fdr, resolution, interleaved=one_run)
    whole = _accuracy(fp32_item, quantized_item, fp32, inputs, tuple((o, o) for o in outputs), outputs)
    boundaries = _twin_boundaries(pairing, fp32, models)
    probed = _probed((fp32, quantized), models, tuple(dict.fromkeys(v for b in boundaries.values() for v in b)), inputs)
    result_lines = []
    for speed in found:
        if speed.label == WHOLE:
            errors = tuple(whole.values[o] for o in outputs) if isinstance(whole, AccuracyCost) else ()
            result_lines.append(Line(WHOLE, speed, errors=errors))
            continue
        twin = twins[speed.label]
        errors = (
            tuple(probed.values[v] for v, _ in boundaries[speed.label] if v in probed.values)
            if isinstance(probed, AccuracyCost)
            else ()
        )
        fp32_units = tuple(fp32.units[i]["graph"] for i in twin.fp32)
        quantized_units = tuple(quantized.units[j]["graph"] for j in twin.quantized)
        result_lines.append(Line(speed.label, speed, fp32_units, quantized_units, errors))
    return QuantizedComparison(
        f"{fp32.log.header().get('run_id')} ({fp32.path.name})",
        f"{quantized.log.header().get('run_id')} ({quantized.path.name})",
        fp32.request.config().variants[0].runtime,
        comparison,
        tuple(result_lines),
        inputs,
        fp32_item.spec.seed,
        tuple(_alone(fp32, pairing.fp32_alone)),
        tuple(_alone(quantized, pairing.quantized_alone)),
        tuple(f"no accuracy cost: {cost}" for cost in (whole, probed) if isinstance(cost, str))
        + tuple(_fallbacks(quantized, lines)),
    )


def _fallbacks(run: _Run, lines: dict[str, tuple[list[dict], list[dict]]]) -> list[str]:
    """A line for each quantized row the runtime ran in another precision than the model's: its time is
    not a time of the quantized arithmetic (OpenVINO runs a dynamic-int8 MatMulInteger in fp32, say)."""
    rows = {r["graph_id"]: r for _, quantized in lines.values() for r in quantized}
    return [
        f"{r['graph_id']} ran in {r.get('precision_executed')}, not {r.get('precision')}: its time is not "
        f"of {r.get('precision')} arithmetic"
        for r in rows.values()
        if r.get("precision_fallback")
    ]


def _stands_for(model: onnx.ModelProto, value: str) -> str:
    """The quantized model's value its consumers read for `value`: where a QuantizeLinear quantizes it,
    the output of the DequantizeLinear after it (QDQ: a Relu the quantizer dropped lives on as that
    pair's clamp, so the Conv's own output is not yet the fp32 model's value); else `value` itself."""
    for q in model.graph.node:
        if q.op_type == "QuantizeLinear" and q.input[0] == value:
            for d in model.graph.node:
                if d.op_type == "DequantizeLinear" and d.input[0] == q.output[0]:
                    return d.output[0]
    return value


def _twin_boundaries(pairing: Pairing, fp32: _Run, models: list[onnx.ModelProto]) -> dict[str, list[tuple[str, str]]]:
    """Each twin's label -> (fp32 value that ends it, the quantized value standing for it), for the values
    the quantizer kept by name, as float, in the quantized model."""
    side = _cut_side(fp32, models[0])
    in_quantized = _float_values(models[1])
    written_quantized = {o for n in models[1].graph.node for o in n.output}
    in_fp32 = _float_values(models[0])
    found = {}
    for twin in pairing.twins:
        nodes = {n for i in twin.fp32 for n in fp32.units[i]["nodes"]}
        kept = [v for v in _boundary(models[0], nodes) if v in written_quantized and v in in_fp32]
        found[twin.label(side)] = [
            (v, _stands_for(models[1], v)) for v in kept if _stands_for(models[1], v) in in_quantized
        ]
    return found


def _alone(run: _Run, indices: tuple[int, ...]) -> list[str]:
    """`graph (nodes)` of each unit occurrence without a twin."""
    return [
        f"{run.units[i]['graph']} ({', '.join(run.units[i]['nodes']) or 'a layer the runtime inserted'})"
        for i in indices
    ]
