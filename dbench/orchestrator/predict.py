"""`dbench predict`: ask the runtime how it executes the model (a worker prepares it exactly as a timed
run would and reports its layers), cut the model into the units it executes, then time the whole
model, an empty graph and every distinct unit in one run, in rounds, round-major, so that the model
and its units see the same machine; the prediction is made from the run's rows
(dbench.units.prediction). The runtime's report is kept in the run header, so `--resume` cuts the
same units again without asking it. Units this machine timed before are taken from the unit cache
(dbench.orchestrator.unit_cache) and the units it times are kept there. No terminal output here."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbench.errors import DbenchError, UsageError
from dbench.executed import ExecutedGraph, ExecutedLayer
from dbench.orchestrator.request import RunRequest, check_resume, validate
from dbench.orchestrator.run import (
    PREDICT_KIND,
    PlannedRun,
    RunResult,
    execute_run,
    new_run,
    plan_estimate,
    resume_run,
)
from dbench.orchestrator.runner import RunConfig, RunObserver, Variant, weights_for
from dbench.orchestrator.unit_cache import Entry, UnitCache, keep_timed, reused_item, unit_key
from dbench.orchestrator.worker_process import WorkerProcess
from dbench.outcome import Outcome
from dbench.run_options import REQUEST_FLAGS
from dbench.runtimes.base import Runtime
from dbench.sources.item import Item
from dbench.sources.resolve import MODEL, source_kind
from dbench.sources.units import UnitGraphs, model_identity, named_model_item, prepare, tagged_model_item, unit_graphs
from dbench.store.log import RunLog, find_run
from dbench.store.metadata import machine_name
from dbench.units.prediction import EMPTY, PREDICT_ATTR, REUSED, UNIT
from dbench.worker.execution import ExecutionJob


def check_predictable(request: RunRequest, classes: dict[str, type[Runtime]]) -> None:
    """One model file, one runtime that reports what it executes, one thread count."""
    if source_kind(request.graphs) is not MODEL:
        raise UsageError(f"dbench predict takes one .onnx model file, not {request.graphs}")
    names = request.runtimes()
    if len(names) > 1:
        raise UsageError(
            "dbench predict cuts the model by one runtime's layers; give one --runtime and run it once per runtime"
        )
    if isinstance(request.threads, list):
        raise UsageError("dbench predict runs one configuration; give one --threads count")
    cls = classes[names[0]]
    if not cls.reports_execution:
        able = ", ".join(sorted(name for name, c in _known().items() if c.reports_execution))
        raise UsageError(
            f"runtime {names[0]} cannot tell which layers it executes for a model, so dbench cannot cut "
            f"the model into its units; use {able}"
        )


def _known() -> dict[str, type[Runtime]]:
    """Every registered runtime's adapter class (their modules import without their runtimes)."""
    from dbench.runtimes.registry import RUNTIMES, runtime_class

    return {name: runtime_class(name) for name in RUNTIMES}


def settings(variant: Variant, config: RunConfig, item: Item) -> dict[str, Any]:
    """The settings a cut depends on: the runtime options and the weights mode."""
    return {**dataclasses.asdict(variant.options), "weights": weights_for(item.spec, config.weights)}


def ask_runtime(item: Item, variant: Variant, config: RunConfig) -> ExecutedGraph:
    """The layers the runtime executes for the model, from a worker that prepares it as the run will."""
    data, digest = item.load()
    job = ExecutionJob(
        item.spec, data, variant.runtime, variant.options, weights_for(item.spec, config.weights), item.contract
    )
    worker = WorkerProcess(config.memory_limit, config.cpus)
    try:
        answer = worker.submit(job, config.timeout)
    finally:
        worker.stop()
    if isinstance(answer, Outcome):
        raise DbenchError(
            f"{variant.runtime} could not prepare {item.spec.id} to report its layers "
            f"({answer.status}: {answer.message}); check the model with dbench run --model"
        )
    return answer


def executed_from_header(data: dict[str, Any]) -> ExecutedGraph:
    """The runtime's report as a run header stores it."""

    def attributes(pairs: list) -> tuple:
        return tuple((name, tuple(value) if isinstance(value, list) else value) for name, value in pairs)

    layers = tuple(
        ExecutedLayer(
            **{
                **layer,
                **{k: tuple(layer[k]) for k in ("sources", "inputs", "outputs")},
                "attributes": attributes(layer.get("attributes", [])),
            }
        )
        for layer in data["layers"]
    )
    return ExecutedGraph(data["runtime"], layers, data["tensor_names"])


def _items(
    request: RunRequest, config: RunConfig, executed: ExecutedGraph | None
) -> tuple[list[Item], UnitGraphs, ExecutedGraph]:
    """The run's graphs: the whole model (tagged with the cut), the empty graph, then the units."""
    path = Path(request.graphs)
    variant = config.variants[0]
    model = named_model_item(path, request.dims)
    if model.unsupported:
        raise DbenchError(f"{path.name} cannot be run whole, so there is nothing to predict: {model.unsupported}")
    if executed is None:
        executed = ask_runtime(model, variant, config)
    identity = model_identity(path, request.dims, variant.runtime, settings(variant, config, model))
    graphs = unit_graphs(prepare(path, request.dims), executed, identity, model.spec.precision)
    return [tagged_model_item(model, graphs), *graphs.items], graphs, executed


def plan_predict(
    request: RunRequest,
    out_dir: Path,
    resume: str | None = None,
    lock_policy: str = "refuse",
    on_wait: Callable[[str], None] | None = None,
    fresh: bool = False,
) -> tuple[PlannedRun, UnitGraphs]:
    """Check the request, ask the runtime for its layers, cut the model and create the run's log (or
    reopen a prediction run's log, cutting it again from the layers it stored), the machine's timing lock
    taken first (`lock_policy`, dbench.orchestrator.lock). Units this machine timed before under the same
    settings are taken from the unit cache (dbench.orchestrator.unit_cache) unless `fresh`; the header
    records which, and from which runs."""
    stored = None
    if resume is not None:
        check_resume(request)
        stored = RunLog.read(find_run(out_dir, resume))
        header = stored.header()
        if header.get("kind") != PREDICT_KIND:
            raise UsageError(f"{resume} is not a dbench predict run; finish it with dbench run --resume {resume}")
        request = RunRequest.from_dict(header.get("request", {}), stored.path)
    classes = validate(request)
    check_predictable(request, classes)
    # No --quick cost cap here: a prediction pairs the model's rounds with its units' (every graph keeps all
    # its rounds), and the model's profile gives the units' in-model times (it is never left out).
    config = request.config()
    config = dataclasses.replace(config, timing=dataclasses.replace(config.timing, round_cost_cap=None))
    executed = executed_from_header(header["executed"]) if stored else None
    items, graphs, executed = _items(request, config, executed)
    config = with_unit_timing(request, config, items)
    fresh = fresh or bool(stored and header.get(CACHE_HEADER, {}).get("fresh"))
    folder = stored.path.parent if stored else out_dir / machine_name()
    reused = {} if fresh else _cached(items, config, classes, UnitCache(folder))
    items = [reused_item(item, reused[item.spec.id]) if item.spec.id in reused else item for item in items]
    if stored:
        planned = resume_run(request, config, classes, stored.path, header, items, lock_policy, on_wait)
    else:
        extra = {
            "kind": PREDICT_KIND,
            "executed": dataclasses.asdict(executed),
            CACHE_HEADER: {"fresh": fresh, "reused": {graph: entry.run_id for graph, entry in reused.items()}},
            **({UNIT_TIMING_HEADER: next(iter(config.graph_timing.values())).to_dict()} if config.graph_timing else {}),
        }
        planned = new_run(request, config, classes, out_dir, items, extra, lock_policy=lock_policy, on_wait=on_wait)
    label = config.variants[0].label
    for graph_id, entry in reused.items():
        if (graph_id, label) not in planned.state.finished:
            planned.state.rounds[(graph_id, label)] = entry.outcomes()
    planned.estimate = plan_estimate(items, config, folder, planned.state)
    return planned, graphs


UNIT_MIN_TIME = 0.5
"""Seconds of sampling per unit and empty graph, all rounds together, where no --min-time is given (the
model keeps the run's): a unit's calls are short, so even a third of this gives each round hundreds of
calls, and a unit's interval comes from its rounds, not from its calls; the model's own time is the
measurement the prediction is judged against."""


def with_unit_timing(request: RunRequest, config: RunConfig, items: list[Item]) -> RunConfig:
    """The run's configuration with its units and empty graphs sampling UNIT_MIN_TIME, unless the request
    sets the sampling itself (--min-time, --iterations, --quick)."""
    if request.min_time is not None or request.iterations is not None or request.quick:
        return config
    timing = dataclasses.replace(config.timing, min_time=min(UNIT_MIN_TIME, config.timing.min_time))
    units = {item.spec.id: timing for item in items if item.spec.attrs[PREDICT_ATTR]["role"] in (UNIT, EMPTY)}
    return dataclasses.replace(config, graph_timing=units)


UNIT_TIMING_HEADER = "unit_timing"
"""The run header's record of the units' and empty graphs' timing settings, where they are not the run's."""
CACHE_HEADER = "unit_cache"
"""The run header's record of the unit cache's use: `fresh` (asked not to use it) and `reused` (graph id ->
the run that timed it)."""


def cache_line(planned: PlannedRun) -> str:
    """One line on the unit cache's use in a planned prediction: how many graphs it reused, from which runs."""
    reused = {item.spec.id: tag_run for item in planned.items if (tag_run := item.spec.attrs[PREDICT_ATTR].get(REUSED))}
    graphs = sum(1 for item in planned.items if item.spec.attrs[PREDICT_ATTR]["role"] in (UNIT, EMPTY))
    if (planned.header.get(CACHE_HEADER) or {}).get("fresh"):
        return f"unit cache: not used (--fresh): all {graphs} unit and empty graphs timed"
    if not reused:
        return f"unit cache: none of the {graphs} unit and empty graphs known on this machine: all timed"
    return (
        f"unit cache: {len(reused)} of {graphs} unit and empty graphs reused from run "
        f"{', '.join(sorted(set(reused.values())))}; {graphs - len(reused)} timed"
    )


def _keys(items: list[Item], config: RunConfig, classes: dict[str, type[Runtime]]) -> dict[str, str]:
    """Graph id -> unit cache key of the run's cacheable graphs (its units and empty graphs)."""
    variant = config.variants[0]
    version, machine = classes[variant.runtime].version(), machine_name()
    keys = {item.spec.id: unit_key(item, variant, config, version, machine) for item in items}
    return {graph: key for graph, key in keys.items() if key is not None}


def _cached(
    items: list[Item], config: RunConfig, classes: dict[str, type[Runtime]], cache: UnitCache
) -> dict[str, Entry]:
    """Graph id -> the cache entry that times it, for every graph the cache holds."""
    found = {graph: cache.get(key, config.timing_of(graph)) for graph, key in _keys(items, config, classes).items()}
    return {graph: entry for graph, entry in found.items() if entry is not None}


def execute_predict(planned: PlannedRun, observer: RunObserver) -> RunResult:
    """Run a planned prediction (dbench.orchestrator.run.execute_run), then keep the units it timed in this
    machine's unit cache for the next prediction."""
    result = execute_run(planned, observer)
    keys = _keys(planned.items, planned.config, planned.runtime_classes)
    keep_timed(UnitCache(result.log_path.parent), keys, RunLog.read(result.log_path), planned.run_id)
    return result


def _said(value: Any, flag: str) -> str:
    return f"{flag} {value}" if value not in (None, {}, "") else f"no {flag}"


def units_run_predictions(model: Path, request: RunRequest, log: RunLog) -> list:
    """The prediction of `model` from another machine's run of its exported units, without running the
    model there. Refused, with one line naming the difference, unless the run timed this model's units
    (same file, same --dim), cut by the same runtime and settings this prediction asks, with the same
    runtime settings as this request, and every unit of the cut."""
    from dbench.frommodel.predict import SAME_SETTINGS, dims_text
    from dbench.gen.manifest import sha256
    from dbench.units.prediction import predictions, tag

    header, rows = log.header(), log.rows()
    run = header.get("run_id", str(log.path))
    asked = header.get("request", {})
    for name, flag in SAME_SETTINGS.items():
        theirs, ours = asked.get(name), getattr(request, name)
        if name == "extra":
            theirs = theirs or {}
        if theirs != ours:
            raise UsageError(
                f"{run} ran with {_said(theirs, flag)}, this prediction asks {_said(ours, flag)}; give both the same"
            )
    name = Path(model).stem
    mine = [r for r in rows if tag(r).get("model") == name and tag(r).get("role") in ("unit", "empty")]
    if not mine:
        raise UsageError(
            f"{run} holds no unit of model {name}; export them with dbench export --units {model} and run "
            "that bundle with dbench run --graphs"
        )
    info = tag(mine[0])
    if info.get("sha256") != sha256(Path(model).read_bytes()):
        raise UsageError(
            f"{run} timed the units of another {model.name} (its file hash differs): export the units of this "
            "file again and run them"
        )
    if info.get("dims") != dict(request.dims):
        raise UsageError(
            f"{run} timed {name}'s units cut at --dim {dims_text(info.get('dims')) or 'none'}, this prediction "
            f"asks --dim {dims_text(dict(request.dims)) or 'none'}; give the same --dim"
        )
    if info.get("runtime") != request.runtime:
        raise UsageError(
            f"{run} timed {name}'s units as {info.get('runtime')} cuts them, this prediction asks --runtime "
            f"{request.runtime}; give --runtime {info.get('runtime')} or export the units cut by {request.runtime}"
        )
    cut_options = info.get("settings") or {}
    for field, flag in (("threads", "--threads"), ("graph_optimization", "--graph-opt"), ("device", "--device")):
        if field in cut_options and cut_options[field] != getattr(request.options(), field):
            raise UsageError(
                f"{name}'s units were cut at {_said(cut_options[field], flag)}, this prediction asks "
                f"{_said(getattr(request.options(), field), flag)}; give the same"
            )
    units = {r["graph_id"] for r in mine if tag(r).get("role") == "unit" and not tag(r).get("timing")}
    weighted = {  # the units with an evicted twin: those without weights have none (dbench.sources.units)
        r["graph_id"]
        for r in mine
        if tag(r).get("role") == "unit" and not tag(r).get("timing") and tag(r).get("weight_bytes", 1)
    }
    expected = max((tag(r).get("graphs", 0) for r in mine if tag(r).get("role") == "unit"), default=0)
    if len(units) != expected or not any(tag(r).get("role") == "empty" and not tag(r).get("timing") for r in mine):
        missing = "the empty graph" if len(units) == expected else f"{expected - len(units)} of its {expected} units"
        raise UsageError(f"{run} lacks {missing} for model {name}; run the whole exported bundle")
    evicted = {tag(r).get("warm") for r in mine if tag(r).get("timing") == "evicted" and tag(r).get("role") == "unit"}
    timed_evicted = any(tag(r).get("evict_bytes") for r in mine)  # a bundle made with evicted twins
    if timed_evicted and (
        len(weighted - evicted)
        or not any(tag(r).get("timing") == "evicted" and tag(r).get("role") == "empty" for r in mine)
    ):
        missing = (
            f"{len(weighted - evicted)} of its {expected} units' evicted timings"
            if weighted - evicted
            else "the evicted empty graph"
        )
        raise UsageError(f"{run} lacks {missing} for model {name}; run the whole exported bundle")
    return predictions(mine)


RUN_FLAGS = {
    name: REQUEST_FLAGS[name] for name in ("threads", "device", "graph_optimization", "allow_runtime_precision")
}
"""The runtime settings a board's run of the units must repeat, and their flags (dbench.run_options)."""
PACKAGES = {"ort-cpu": "onnxruntime", "openvino": "openvino"}


def _flags(request: RunRequest) -> str:
    """The runtime flags a board's run of the units must repeat (those set away from their defaults)."""
    default = RunRequest()
    parts = []
    for name, flag in RUN_FLAGS.items():
        value = getattr(request, name)
        if value != getattr(default, name):
            parts.append(flag if value is True else f"{flag} {value}")
    parts += [f"--option {k}={v}" for k, v in request.extra.items()]
    return "".join(f" {p}" for p in parts)


def export_units(request: RunRequest, out: Path):
    """A bundle of the model's units as the runtime cuts them here, and the empty graph, for a board to
    run (`dbench run --graphs`) and `dbench predict --units-run` to predict from. Units that cannot be
    graphs of their own are left out and named in every graph's tag (`left_out`); returns the
    Exported bundle and those units with their reasons."""
    from dbench.bundle.export import export_graphs
    from dbench.bundle.readme import units_readme_text
    from dbench.frommodel.predict import dims_text
    from dbench.units.prediction import PREDICT_ATTR

    classes = validate(request)
    check_predictable(request, classes)
    items, graphs, _ = _items(request, request.config(), None)
    made = [item for item in graphs.items if not item.unsupported]
    left_out = {item.spec.id: item.unsupported for item in graphs.items if item.unsupported}
    units = sum(1 for item in made if item.spec.family != "empty" and not item.spec.attrs[PREDICT_ATTR].get("timing"))

    def retagged(spec):
        tag = {
            **spec.attrs[PREDICT_ATTR],
            **({"graphs": units} if "graphs" in spec.attrs[PREDICT_ATTR] else {}),
            "left_out": sorted(left_out),
        }
        return dataclasses.replace(spec, attrs={**spec.attrs, PREDICT_ATTR: tag})

    identity = graphs.identity
    readme = units_readme_text(
        units,
        identity.model,
        dims_text(identity.dims),
        identity.runtime,
        ", ".join(f"{k}={v}" for k, v in identity.settings.items() if v not in (None, {}, "")),
        _flags(request),
        PACKAGES.get(identity.runtime, identity.runtime),
    )
    exported = export_graphs([(retagged(item.spec), item.load()[0]) for item in made], readme, out)
    return exported, left_out
