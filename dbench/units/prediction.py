"""A model's latency predicted from its units' rows, beside its own, from result rows alone.

    predicted = empty + Σ count x (unit median - empty) x kept

`empty` is the median of an empty graph (one Identity) on the same runtime in the same run: every
isolated call pays the runtime's cost per call once, the model pays it once in all. `kept` is the
share of the unit's own profile that is not a layout reorder the runtime inserted at the unit's
boundaries (BOUNDARY_REORDERS): an isolated unit takes planar inputs and returns planar outputs, so
the runtime converts to its blocked layout and back around it, where inside the model the layers
hand each other the blocked layout (in the models' cuts such layers are always `inserted`, never a
node's). Left in, they made OpenVINO over-predict CNNs by up to 83 % (docs/predict.md). A unit
without a profile (--quick) keeps its whole time, and the prediction says so. Its interval
pairs the rounds: every graph of a prediction run is timed in the same rounds (round-major), so in
round r the prediction P_r from the units' and the empty graph's round medians is set against the
model's round median M_r, and the log ratios log(P_r / M_r) give a Student-t interval of the error
(df = rounds - 1), centred on the error of the medians. Each unit's time inside the model is the sum
of its layers' times in the runtime's profile of the whole model (the model's `nodes`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dbench.stats.student import t_quantile
from dbench.store.invariants import PROFILE_EVENT_US

PREDICT_ATTR = "predict"
"""GraphSpec.attrs key of every graph of a prediction (dbench.sources.units writes it)."""
MODEL, UNIT, EMPTY = "model", "unit", "empty"
"""The roles of a prediction's graphs: the whole model, a unit, the empty graph."""
DISAGREE_RATIO = 1.25
"""A unit's isolated time (net of the empty graph, times its count) and its time inside the model
disagree when one is more than this many times the other..."""
DISAGREE_SHARE = 0.02
"""...and the difference is at least this share of the model's time, and more than the profiler's own
cost per layer (PROFILE_EVENT_US: every profiled layer carries it, the timed calls do not)."""
CONFIDENCE = 0.95
BOUNDARY_REORDERS = frozenset({"Reorder", "ReorderInput", "ReorderOutput"})
"""Layer types the runtimes insert to move data between layouts (OpenVINO's Reorder, ONNX Runtime's
NCHWc ReorderInput and ReorderOutput): no ONNX node makes them, so in a unit's own profile they are
the conversions at its boundaries."""


@dataclass(frozen=True)
class UnitLine:
    """One unit of a prediction: a distinct unit graph with its count, or a layer the runtime inserted
    (no graph: its time inside the model only), or the nodes folded at load (no time at all)."""

    graph: str
    kind: str
    nodes: tuple[str, ...]
    """The nodes of its first occurrence."""
    count: int
    status: str = ""
    median_us: float | None = None
    isolated_us: float | None = None
    """count x (median - empty) x kept: what the unit adds to the prediction."""
    reorders_us: float | None = None
    """count x (median - empty) x (1 - kept): its boundary reorders, left out of the prediction."""
    in_model_us: float | None = None
    """Its layers' time in the runtime's profile of the whole model, over every occurrence."""
    share: float | None = None
    """in_model_us over the profile's total."""
    kernels: tuple[str, ...] = ()
    """The DeepBench-family kernels among its nodes (catalog ids), so suite rows can be set beside it."""
    layers: tuple[str, ...] = ()
    disagrees: bool = False

    @property
    def ratio(self) -> float | None:
        """Isolated over in-model time."""
        if self.isolated_us is None or not self.in_model_us:
            return None
        return self.isolated_us / self.in_model_us


@dataclass(frozen=True)
class Prediction:
    """One model on one runtime: predicted and (where the model ran) measured latency, the error and
    its paired interval, and the units behind it."""

    run_id: str
    model: str
    runtime: str
    variant: str
    predicted_us: float | None
    measured_us: float | None
    empty_us: float | None
    units_timed: int
    units_total: int
    nodes_timed: int
    nodes_total: int
    error: float | None = None
    error_low: float | None = None
    error_high: float | None = None
    rounds: int = 0
    interval_note: str = ""
    inserted_us: float | None = None
    """The layers the runtime inserted (reorders, conversions): their time inside the model."""
    reorders_us: float | None = None
    """The units' boundary reorders left out of the prediction (Σ of the units' reorders_us)."""
    profiled_us: float | None = None
    """The model's profile: the sum of its layers' times per call."""
    units: tuple[UnitLine, ...] = ()
    notes: tuple[str, ...] = ()
    dims: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The table row (units left out)."""
        return {"run_id": self.run_id, "model": self.model, "runtime": self.runtime, "dims": self.dims,
                "predicted_us": self.predicted_us, "measured_us": self.measured_us, "error": self.error,
                "error_low": self.error_low, "error_high": self.error_high, "rounds": self.rounds,
                "interval_note": self.interval_note,
                "empty_us": self.empty_us, "units_timed": self.units_timed, "units_total": self.units_total,
                "nodes_timed": self.nodes_timed, "nodes_total": self.nodes_total, "inserted_us": self.inserted_us,
                "reorders_us": self.reorders_us,
                "profiled_us": self.profiled_us, "notes": list(self.notes)}


def tag(row: dict[str, Any]) -> dict[str, Any]:
    return (row.get("attrs") or {}).get(PREDICT_ATTR) or {}


def _ok(row: dict[str, Any] | None) -> bool:
    return row is not None and row.get("status") == "ok" and row.get("median_us") is not None


def kept(row: dict[str, Any]) -> float | None:
    """The share of a unit's own profile that is not a boundary reorder (BOUNDARY_REORDERS), or None
    when no profile was taken (`profile_call_us` says one was)."""
    layers = [n for n in row.get("nodes") or [] if not n.get("container")]
    total = sum(float(n["time_us"]) for n in layers)
    if not total:  # a profile without timed layers (OpenVINO's in-place Flatten or Concat) leaves nothing out
        return None if row.get("profile_call_us") is None else 1.0
    return 1.0 - sum(float(n["time_us"]) for n in layers if n["op_type"] in BOUNDARY_REORDERS) / total


def predicted(empty_us: float, units: list[tuple[int, float, float]]) -> float:
    """empty + Σ count x (median - empty) x kept over (count, median, kept) triples."""
    return empty_us + sum(count * (median - empty_us) * share for count, median, share in units)


def _share(row: dict[str, Any]) -> float:
    """kept(row), 1 for a unit without a profile (its boundary reorders cannot be told apart)."""
    share = kept(row)
    return 1.0 if share is None else share


def paired_interval(model: dict[str, Any], empty: dict[str, Any], units: list[dict[str, Any]],
                    error: float) -> tuple[float | None, float | None, int, str]:
    """(low, high) of the error from the rounds the model, the empty graph and every timed unit share,
    with the number of rounds, or a note saying why there is none."""
    series = [model, empty, *units]
    rounds = min(len(r.get("round_medians_us") or []) for r in series)
    if rounds < 2:
        return None, None, rounds, f"{rounds} round in common: no interval (2 rounds at least)"
    ratios = []
    for r in range(rounds):
        e = empty["round_medians_us"][r]
        p = predicted(e, [(tag(u)["count"], u["round_medians_us"][r], _share(u)) for u in units])
        m = model["round_medians_us"][r]
        if p <= 0 or m <= 0:
            return None, None, rounds, f"round {r + 1} predicts {p:.1f} µs: no interval on a non-positive prediction"
        ratios.append(math.log(p / m))
    sd = float(np.std(ratios, ddof=1))
    if sd == 0.0:
        return None, None, rounds, "the rounds' prediction errors are identical: no interval is measurable"
    half = t_quantile(1 - (1 - CONFIDENCE) / 2, rounds - 1) * sd / math.sqrt(rounds)
    return (1 + error) * math.exp(-half) - 1, (1 + error) * math.exp(half) - 1, rounds, ""


def _profile(row: dict[str, Any] | None) -> dict[str, float]:
    """Layer name -> its time per call in the row's profile (containers left out)."""
    if not row:
        return {}
    return {n["name"]: float(n["time_us"]) for n in row.get("nodes") or [] if not n.get("container")}


def _unit_lines(model: dict[str, Any] | None, empty_us: float | None, units: list[dict[str, Any]],
                scale_us: float | None) -> list[UnitLine]:
    profile = _profile(model)
    total = sum(profile.values()) if profile else None
    in_model = lambda layers: sum(profile.get(name, 0.0) for name in layers) if profile else None  # noqa: E731
    share = lambda us: us / total if us is not None and total else None  # noqa: E731
    lines = []
    for row in units:
        info = tag(row)
        occurrences = info.get("occurrences") or [{"nodes": [], "layers": []}]
        layers = tuple(name for o in occurrences for name in o["layers"])
        inside = in_model(layers)
        net = info["count"] * (row["median_us"] - empty_us) if _ok(row) and empty_us is not None else None
        isolated = net * _share(row) if net is not None else None
        reorders = net - isolated if net is not None else None
        disagrees = bool(isolated is not None and inside and scale_us
                         and not 1 / DISAGREE_RATIO <= isolated / inside <= DISAGREE_RATIO
                         and abs(isolated - inside) >= max(DISAGREE_SHARE * scale_us, PROFILE_EVENT_US * len(layers)))
        lines.append(UnitLine(row["graph_id"], info.get("kind", "executed"), tuple(occurrences[0]["nodes"]), info["count"], row["status"],
                              row.get("median_us"), isolated, reorders, inside, share(inside), tuple(info.get("kernels") or ()),
                              layers, disagrees))
    for unit in (tag(model).get("units") or []) if model else []:
        if unit["graph"]:
            continue
        inside = in_model(unit["layers"]) if unit["kind"] == "inserted" else 0.0
        lines.append(UnitLine(unit["layers"][0] if unit["kind"] == "inserted" and unit["layers"] else unit["kind"],
                              unit["kind"], tuple(unit["nodes"]), 1, "", None, None, None, inside, share(inside), (),
                              tuple(unit["layers"])))
    return lines


def _prediction(run_id: str, variant: str, members: list[dict[str, Any]]) -> Prediction:
    model = next((r for r in members if tag(r).get("role") == MODEL), None)
    empty = next((r for r in members if tag(r).get("role") == EMPTY), None)
    units = [r for r in members if tag(r).get("role") == UNIT]
    info = tag(model or empty or units[0])
    timed = [r for r in units if _ok(r)]
    notes = []
    if not _ok(empty):
        notes.append(f"the empty graph did not run ok ({empty['status'] if empty else 'missing'}): no prediction")
    untimed = [f"{r['graph_id']} ({r['status']})" for r in units if not _ok(r)]
    if untimed:
        notes.append(f"{len(untimed)} units did not run ok and are left out of the prediction: {', '.join(untimed[:5])}")
    unprofiled = [r["graph_id"] for r in timed if kept(r) is None]
    if unprofiled:
        notes.append(f"{len(unprofiled)} units have no per-node profile (--quick, --no-profile): their boundary reorders "
                     f"stay in the prediction ({', '.join(unprofiled[:3])}{', ...' if len(unprofiled) > 3 else ''})")
    as_executed = [f"{r['graph_id']} ({tag(r)['timed_as']})" for r in units if tag(r).get("timed_as")]
    if as_executed:
        notes.append(f"{len(as_executed)} units timed as the layer the runtime runs inside the model, on the layout "
                     f"its neighbours hand it: {', '.join(as_executed[:5])}")
    empty_us = empty["median_us"] if _ok(empty) else None
    predicted_us = predicted(empty_us, [(tag(r)["count"], r["median_us"], _share(r)) for r in timed]) if empty_us is not None else None
    measured_us = model["median_us"] if _ok(model) else None
    if model is not None and measured_us is None:
        notes.append(f"the whole model did not run ok ({model['status']}): {model.get('message', '')[:200]}")
    error = predicted_us / measured_us - 1 if predicted_us is not None and measured_us else None
    low = high = None
    rounds, note = 0, ""
    if error is not None and not untimed:
        low, high, rounds, note = paired_interval(model, empty, timed, error)
    lines = _unit_lines(model, empty_us, units, measured_us or predicted_us)
    profile = _profile(model)
    inserted = [line.in_model_us for line in lines if line.kind == "inserted" and line.in_model_us is not None]
    total_units = int(tag(model).get("graphs") if model else max((tag(r).get("graphs", 0) for r in units), default=0))
    model_tag = tag(model) if model else {}
    nodes_total = sum(len(u["nodes"]) for u in model_tag.get("units", [])) or \
        sum(len(o["nodes"]) for r in units for o in tag(r).get("occurrences", []))
    return Prediction(
        run_id=run_id, model=info.get("model", ""), runtime=info.get("runtime", ""), variant=variant,
        predicted_us=predicted_us, measured_us=measured_us, empty_us=empty_us, units_timed=len(timed),
        units_total=total_units, nodes_timed=sum(len(o["nodes"]) for r in timed for o in tag(r).get("occurrences", [])),
        nodes_total=nodes_total, error=error, error_low=low, error_high=high, rounds=rounds, interval_note=note,
        inserted_us=sum(inserted) if profile else None, profiled_us=sum(profile.values()) if profile else None,
        reorders_us=sum(line.reorders_us for line in lines if line.reorders_us is not None) if empty_us is not None else None,
        units=tuple(lines), notes=tuple(notes), dims=dict(info.get("dims") or {}))


def predictions(rows: list[dict[str, Any]]) -> list[Prediction]:
    """One Prediction per run, model and variant among `rows` (rows of any runs; those without a
    prediction tag are ignored). A run that holds only units and the empty graph (a board's run of an
    exported bundle) gives a prediction without a measurement."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        info = tag(row)
        if info.get("role") in (MODEL, UNIT, EMPTY):
            key = (row.get("run_id", ""), info.get("model", ""), row.get("variant") or row.get("runtime", ""))
            groups.setdefault(key, []).append(row)
    return [_prediction(run_id, variant, members) for (run_id, _, variant), members in groups.items()
            if any(tag(r).get("role") in (MODEL, UNIT) for r in members)]
