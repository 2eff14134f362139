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
of its layers' times in the runtime's profile of the whole model (the model's `nodes`).

A unit timed alone and repeated finds its weights warm; inside the model the layers before it have
pushed them out. So each unit is also timed `evicted` (a twin row: the same graph, the model's traffic
between two uses of the unit read before every call, its inputs brought back: dbench.worker.evict),
and so is the empty graph. The unit's time in the model's cache state takes the evicted time's excess
in the share of the unit's bytes that are weights (the values it reads from and hands to its neighbours
are warm inside the model, just written or about to be read):

    in the model's state = warm + f x (evicted net of the evicted empty - warm net of the empty),
    f = weight bytes / (weight bytes + bytes of its inputs and outputs)

METHODS names the three ways, so a run's rows give each (the benchmark sets them side by side).

A layer the runtime inserts between the model's layers (ONNX Runtime's NCHWc reorders) is part of the
model's execution plan, read before any timing: where a graph expresses it, it is a unit of its own
(kind `inserted`), counted whole (its profile is that one layer, no boundary of a unit); the others
(OpenVINO's Reorder) stay outside, their time in the model's profile shown beside the prediction."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dbench.stats.student import t_quantile
from dbench.store.invariants import PROFILE_EVENT_US
from dbench.units.cut import INSERTED

PREDICT_ATTR = "predict"
"""GraphSpec.attrs key of every graph of a prediction (dbench.sources.units writes it)."""
MODEL, UNIT, EMPTY = "model", "unit", "empty"
"""The roles of a prediction's graphs: the whole model, a unit, the empty graph."""
EVICTED = "evicted"
"""The `timing` of a unit's or the empty graph's twin timed after the model's traffic (dbench.worker.evict)."""
REUSED = "reused_from"
"""The tag key of a unit or empty graph taken from the unit cache: the run that timed it."""
MODEL_STATE, WARM = "model-state", "warm"
METHODS = (MODEL_STATE, WARM, EVICTED)
"""model-state: warm plus the evicted excess in the unit's weight share (the default); warm: the units
alone and repeated; evicted: every unit after the model's traffic, inputs included."""
CHECKED = ("ok", "disputed")
"""Statuses whose time is valid: measured and verified, or verified with a disputed reference (a second
implementation sided with the runtime); both count in a prediction, the second flagged."""
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
    """Its layers' time in the runtime's profile of the whole model, over every occurrence (None for a
    layer the runtime inserted, timed as a unit: its name in the profile is not stable, see inserted_us)."""
    share: float | None = None
    """in_model_us over the profile's total."""
    kernels: tuple[str, ...] = ()
    """The DeepBench-family kernels among its nodes (catalog ids), so suite rows can be set beside it."""
    layers: tuple[str, ...] = ()
    disagrees: bool = False
    evicted_us: float | None = None
    """The median of its evicted twin (after the model's traffic between its uses)."""
    weight_share: float | None = None
    """Its weights' share of its bytes (weights, inputs and outputs): the share of the evicted excess kept."""
    cache_us: float | None = None
    """What the model's cache state adds to its warm time (count x f x (evicted net - warm net) x kept)."""
    flag: str = ""
    """disputed, weak or unverified: counted, but its check was not a plain pass."""

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
    """The layers the runtime inserted (reorders, conversions): their time inside the model, in all."""
    untimed_inserted_us: float | None = None
    """Those of them no unit times (no graph expresses them: OpenVINO's Reorder): their time inside the
    model, outside the prediction."""
    reorders_us: float | None = None
    """The units' boundary reorders left out of the prediction (Σ of the units' reorders_us)."""
    profiled_us: float | None = None
    """The model's profile: the sum of its layers' times per call."""
    units: tuple[UnitLine, ...] = ()
    notes: tuple[str, ...] = ()
    dims: dict[str, int] = field(default_factory=dict)
    method: str = WARM
    """How the units were timed into the prediction (METHODS)."""
    evicted_empty_us: float | None = None
    left_out: tuple[str, ...] = ()
    """The units that did not run ok (`graph (status)`), left out of the prediction."""
    left_out_us: float | None = None
    """Their layers' time in the runtime's profile of the whole model."""
    flagged: tuple[str, ...] = ()
    """Units counted whose check was disputed, weak or missing (`graph (flag)`)."""
    gap: dict[str, float] = field(default_factory=dict)
    """The gap between the units alone and the model, by cause (gap_by_cause)."""

    @property
    def left_out_share(self) -> float | None:
        """The left-out units' share of the model in its profile."""
        return self.left_out_us / self.profiled_us if self.left_out_us is not None and self.profiled_us else None

    def to_dict(self) -> dict[str, Any]:
        """The table row (units left out)."""
        return {
            "run_id": self.run_id,
            "model": self.model,
            "runtime": self.runtime,
            "dims": self.dims,
            "predicted_us": self.predicted_us,
            "measured_us": self.measured_us,
            "error": self.error,
            "error_low": self.error_low,
            "error_high": self.error_high,
            "rounds": self.rounds,
            "interval_note": self.interval_note,
            "empty_us": self.empty_us,
            "units_timed": self.units_timed,
            "units_total": self.units_total,
            "nodes_timed": self.nodes_timed,
            "nodes_total": self.nodes_total,
            "inserted_us": self.inserted_us,
            "untimed_inserted_us": self.untimed_inserted_us,
            "reorders_us": self.reorders_us,
            "method": self.method,
            "evicted_empty_us": self.evicted_empty_us,
            "left_out": list(self.left_out),
            "left_out_us": self.left_out_us,
            "left_out_share": self.left_out_share,
            "flagged": list(self.flagged),
            "gap": dict(self.gap),
            "profiled_us": self.profiled_us,
            "notes": list(self.notes),
        }


def tag(row: dict[str, Any]) -> dict[str, Any]:
    return (row.get("attrs") or {}).get(PREDICT_ATTR) or {}


def _ok(row: dict[str, Any] | None) -> bool:
    """A row whose time counts: ok or disputed (CHECKED), with a median."""
    return row is not None and row.get("status") in CHECKED and row.get("median_us") is not None


def flag(row: dict[str, Any]) -> str:
    """Why a counted unit's check was not a plain pass: disputed, weak or unverified ("" when it was)."""
    message = row.get("message") or ""
    if row.get("status") == "disputed":
        return "disputed"
    if message.startswith("weak verification"):
        return "weak"
    if message.startswith("unverified") or (row.get("verification") or {}).get("ok", True) is None:
        return "unverified"
    return ""


def weight_share(row: dict[str, Any]) -> float:
    """A unit's weights' share of its bytes (weights, inputs, outputs), from its tag (0 without one)."""
    info = tag(row)
    weights, io = info.get("weight_bytes") or 0, info.get("io_bytes") or 0
    return weights / (weights + io) if weights + io else 0.0


def in_model_state(warm: float, empty: float, evicted: float, evicted_empty: float, share: float) -> float:
    """A unit's median in the model's cache state: its warm median plus the evicted excess (each net
    of its own empty graph) in its weights' share."""
    return warm + share * ((evicted - evicted_empty) - (warm - empty))


def kept(row: dict[str, Any]) -> float | None:
    """The share of a unit's own profile that is not a boundary reorder (BOUNDARY_REORDERS), or None
    when no profile was taken (`profile_call_us` says one was); all of it for a layer the runtime
    inserted (a reorder timed as itself is no boundary of a unit: the model runs it)."""
    if tag(row).get("kind") == INSERTED:
        return 1.0
    layers = [n for n in row.get("nodes") or [] if not n.get("container")]
    total = sum(float(n["time_us"]) for n in layers)
    if not total:  # a profile without timed layers (OpenVINO's in-place Flatten or Concat) leaves nothing out
        return None if row.get("profile_call_us") is None else 1.0
    own = {node for occurrence in tag(row).get("occurrences") or [] for node in occurrence.get("nodes", [])}
    return 1.0 - sum(float(n["time_us"]) for n in layers if _at_boundary(n, own)) / total


def _at_boundary(layer: dict[str, Any], own: set[str]) -> bool:
    """Whether a layer of a unit's own profile is one the runtime put at the unit's boundary: a reorder
    (BOUNDARY_REORDERS), or a Transpose that no node of the unit made (named after none of `own`, the
    unit's nodes: ONNX Runtime's NHWC transformer wraps an int8 QLinearConv alone in two, where inside
    the model its neighbours hand it NHWC already). Without `own` (rows that do not list the unit's
    nodes) only the reorders."""
    if layer["op_type"] in BOUNDARY_REORDERS:
        return True
    return bool(own) and layer["op_type"] == "Transpose" and re.sub(r"_token_\d+$", "", layer["name"]) not in own


def predicted(empty_us: float, units: list[tuple[int, float, float]]) -> float:
    """empty + Σ count x (median - empty) x kept over (count, median, kept) triples."""
    return empty_us + sum(count * (median - empty_us) * share for count, median, share in units)


def _share(row: dict[str, Any]) -> float:
    """kept(row), 1 for a unit without a profile (its boundary reorders cannot be told apart)."""
    share = kept(row)
    return 1.0 if share is None else share


@dataclass(frozen=True)
class Sides:
    """The rows a prediction is made of, and how its units' times are taken (METHODS)."""

    empty: dict[str, Any]
    units: list[dict[str, Any]]
    """The units that count (CHECKED), warm rows."""
    method: str = WARM
    evicted_empty: dict[str, Any] | None = None
    twins: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Warm unit id -> its evicted twin's row (those that ran ok)."""

    def rows(self) -> list[dict[str, Any]]:
        """Every row the prediction reads."""
        return [
            self.empty,
            *self.units,
            *([self.evicted_empty] if self.method != WARM else []),
            *(self.twins.values() if self.method != WARM else []),
        ]

    def effective(self, unit: dict[str, Any], r: int | None = None) -> float:
        """The unit's median (round r's, or the row's) as the method takes it."""
        warm, empty = _median(unit, r), _median(self.empty, r)
        twin = self.twins.get(unit["graph_id"])
        if self.method == WARM or twin is None or self.evicted_empty is None:
            return warm
        evicted, evicted_empty = _median(twin, r), _median(self.evicted_empty, r)
        if self.method == EVICTED:
            return empty + evicted - evicted_empty
        return in_model_state(warm, empty, evicted, evicted_empty, weight_share(unit))

    def predicted(self, r: int | None = None) -> float:
        return predicted(
            _median(self.empty, r), [(tag(u)["count"], self.effective(u, r), _share(u)) for u in self.units]
        )


def _median(row: dict[str, Any], r: int | None) -> float:
    return row["median_us"] if r is None else row["round_medians_us"][r]


def paired_interval(model: dict[str, Any], sides: Sides, error: float) -> tuple[float | None, float | None, int, str]:
    """(low, high) of the error from the rounds the model, the empty graphs and every timed unit (and
    twin) share, with the number of rounds, or a note saying why there is none."""
    series = [model, *sides.rows()]
    rounds = min(len(r.get("round_medians_us") or []) for r in series)
    if rounds < 2:
        return None, None, rounds, f"{rounds} round in common: no interval (2 rounds at least)"
    ratios = []
    for r in range(rounds):
        p = sides.predicted(r)
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


def _unit_lines(
    model: dict[str, Any] | None, sides: Sides | None, units: list[dict[str, Any]], scale_us: float | None
) -> list[UnitLine]:
    profile = _profile(model)
    total = sum(profile.values()) if profile else None
    in_model = lambda layers: sum(profile.get(name, 0.0) for name in layers) if profile else None  # noqa: E731
    share = lambda us: us / total if us is not None and total else None  # noqa: E731
    empty_us = sides.empty["median_us"] if sides else None
    lines = []
    for row in units:
        info = tag(row)
        occurrences = info.get("occurrences") or [{"nodes": [], "layers": []}]
        layers = tuple(name for o in occurrences for name in o["layers"])
        # A layer the runtime inserted has no time of its own in the model's profile that can be trusted: ONNX
        # Runtime numbers its reorders anew in every session (its ReorderOutput_token_N of the session that reported
        # the plan is another reorder in the profiled one), so only their sum over the model is shown (inserted_us).
        inside = None if info.get("kind") == INSERTED else in_model(layers)
        counted = _ok(row) and sides is not None
        effective = sides.effective(row) if counted else None
        net = info["count"] * (effective - empty_us) if counted else None
        isolated = net * _share(row) if net is not None else None
        reorders = net - isolated if net is not None else None
        cache = info["count"] * (effective - row["median_us"]) * _share(row) if counted else None
        twin = sides.twins.get(row["graph_id"]) if sides else None
        disagrees = bool(
            isolated is not None
            and inside
            and scale_us
            and not 1 / DISAGREE_RATIO <= isolated / inside <= DISAGREE_RATIO
            and abs(isolated - inside) >= max(DISAGREE_SHARE * scale_us, PROFILE_EVENT_US * len(layers))
        )
        lines.append(
            UnitLine(
                row["graph_id"],
                info.get("kind", "executed"),
                tuple(occurrences[0]["nodes"]),
                info["count"],
                row["status"],
                row.get("median_us"),
                isolated,
                reorders,
                inside,
                share(inside),
                tuple(info.get("kernels") or ()),
                layers,
                disagrees,
                twin["median_us"] if twin else None,
                weight_share(row) if info.get("weight_bytes") is not None else None,
                cache,
                flag(row) if _ok(row) else "",
            )
        )
    for unit in (tag(model).get("units") or []) if model else []:
        if unit["graph"]:
            continue
        inside = in_model(unit["layers"]) if unit["kind"] == INSERTED else 0.0
        lines.append(
            UnitLine(
                unit["layers"][0] if unit["kind"] == INSERTED and unit["layers"] else unit["kind"],
                unit["kind"],
                tuple(unit["nodes"]),
                1,
                "",
                None,
                None,
                None,
                inside,
                share(inside),
                (),
                tuple(unit["layers"]),
            )
        )
    return lines


def gap_by_cause(sides: Sides, measured_us: float | None, untimed_inserted_us: float | None) -> dict[str, float]:
    """The units alone as called (every call its own: the model's units, then the layers the runtime
    inserted that are timed as units), and what turns that into the prediction and the measurement, by
    cause: each call's cost per call beyond the model's one, the units' own boundary reorders, the
    model's cache state; then the inserted layers no unit times (their time in the model's profile),
    and what is left (the measurement less all of the above)."""
    empty = sides.empty["median_us"]
    calls = sum(tag(u)["count"] for u in sides.units)
    alone = lambda inserted: sum(
        tag(u)["count"] * u["median_us"]
        for u in sides.units  # noqa: E731
        if (tag(u).get("kind") == INSERTED) == inserted
    )
    gap = {
        "units alone": alone(False),
        "inserted layers alone": alone(True),
        "per-call overhead": -(calls - 1) * empty,
        "units' boundary reorders": -sum(
            tag(u)["count"] * (u["median_us"] - empty) * (1 - _share(u)) for u in sides.units
        ),
        "cache": sum(tag(u)["count"] * (sides.effective(u) - u["median_us"]) * _share(u) for u in sides.units),
    }
    gap["predicted"] = sides.predicted()
    if measured_us is not None:
        if untimed_inserted_us is not None:
            gap["inserted layers not timed"] = untimed_inserted_us
        gap["unexplained"] = measured_us - gap["predicted"] - (untimed_inserted_us or 0.0)
        gap["measured"] = measured_us
    return gap


def _sides(members: list[dict[str, Any]], units: list[dict[str, Any]], method: str, notes: list[str]) -> Sides | None:
    """The rows the prediction is made of, by `method`, falling back to warm times (with a note) where
    the evicted twins did not run or were not timed (a run before them)."""
    empty = next((r for r in members if tag(r).get("role") == EMPTY and not tag(r).get("timing")), None)
    if not _ok(empty):
        notes.append(f"the empty graph did not run ok ({empty['status'] if empty else 'missing'}): no prediction")
        return None
    timed = [r for r in units if _ok(r)]
    if method == WARM:
        return Sides(empty, timed)
    evicted_empty = next((r for r in members if tag(r).get("role") == EMPTY and tag(r).get("timing") == EVICTED), None)
    twins = {tag(r).get("warm"): r for r in members if tag(r).get("role") == UNIT and tag(r).get("timing") == EVICTED}
    if evicted_empty is None and not twins:
        notes.append(
            f"no unit was timed evicted (a run made before the {MODEL_STATE} timing): the units are taken warm"
        )
        return Sides(empty, timed)
    if not _ok(evicted_empty):
        notes.append(
            f"the evicted empty graph did not run ok ({evicted_empty['status'] if evicted_empty else 'missing'}): "
            "the units are taken warm"
        )
        return Sides(empty, timed)
    counted = {k: r for k, r in twins.items() if _ok(r)}
    warm_only = [  # a unit without weights is its warm time in the model's state: it has no twin to miss
        r["graph_id"] for r in timed if r["graph_id"] not in counted and (method == EVICTED or weight_share(r))
    ]
    if warm_only:
        notes.append(f"{len(warm_only)} units have no evicted time and are taken warm: {', '.join(warm_only[:5])}")
    return Sides(empty, timed, method, evicted_empty, counted)


def _prediction(run_id: str, variant: str, members: list[dict[str, Any]], method: str) -> Prediction:
    model = next((r for r in members if tag(r).get("role") == MODEL), None)
    units = [r for r in members if tag(r).get("role") == UNIT and not tag(r).get("timing")]
    info = tag(model or units[0] if model or units else members[0])
    notes: list[str] = []
    sides = _sides(members, units, method, notes)
    untimed = [f"{r['graph_id']} ({r['status']})" for r in units if not _ok(r)]
    timed = [r for r in units if _ok(r)]
    unprofiled = [r["graph_id"] for r in timed if kept(r) is None]
    if unprofiled:
        notes.append(
            f"{len(unprofiled)} units have no per-node profile (--quick, --no-profile): their boundary reorders "
            f"stay in the prediction ({', '.join(unprofiled[:3])}{', ...' if len(unprofiled) > 3 else ''})"
        )
    notes += _reuse_notes(members)
    as_executed = [f"{r['graph_id']} ({tag(r)['timed_as']})" for r in units if tag(r).get("timed_as")]
    if as_executed:
        notes.append(
            f"{len(as_executed)} units timed as the layer the runtime runs inside the model, on the layout "
            f"its neighbours hand it: {', '.join(as_executed[:5])}"
        )
    empty_us = sides.empty["median_us"] if sides else None
    predicted_us = sides.predicted() if sides else None
    measured_us = model["median_us"] if _ok(model) else None
    if model is not None and measured_us is None:
        notes.append(f"the whole model did not run ok ({model['status']}): {model.get('message', '')[:200]}")
    error = predicted_us / measured_us - 1 if predicted_us is not None and measured_us else None
    low = high = None
    rounds, note = 0, ""
    if error is not None and not untimed:
        low, high, rounds, note = paired_interval(model, sides, error)
    elif error is not None:
        note = f"{len(untimed)} units left out: no interval"
    lines = _unit_lines(model, sides, units, measured_us or predicted_us)
    profile = _profile(model)
    inserted = [u for u in (tag(model).get("units") or []) if u["kind"] == INSERTED] if model else []
    inserted_us = sum(profile.get(name, 0.0) for u in inserted for name in u["layers"]) if profile else None
    untimed_inserted_us = (
        sum(profile.get(name, 0.0) for u in inserted if not u["graph"] for name in u["layers"]) if profile else None
    )
    left = [line for line in lines if line.status and line.status not in CHECKED]
    left_out_us = sum(line.in_model_us or 0.0 for line in left) if profile and left else None
    if untimed:
        share = (
            f"{left_out_us / sum(profile.values()):.1%} of the model in the runtime's profile"
            if left_out_us is not None
            else "their share of the model is unknown (no profile of the whole model)"
        )
        notes.append(
            f"{len(untimed)} units did not run ok and are left out of the prediction ({share}): {', '.join(untimed)}"
        )
    flagged = tuple(f"{line.graph} ({line.flag})" for line in lines if line.flag)
    if flagged:
        notes.append(
            f"{len(flagged)} units are counted although their check was not a plain pass: {', '.join(flagged[:8])}"
            + (", ..." if len(flagged) > 8 else "")
        )
    total_units = int(tag(model).get("graphs") if model else max((tag(r).get("graphs", 0) for r in units), default=0))
    model_tag = tag(model) if model else {}
    nodes_total = sum(len(u["nodes"]) for u in model_tag.get("units", [])) or sum(
        len(o["nodes"]) for r in units for o in tag(r).get("occurrences", [])
    )
    return Prediction(
        run_id=run_id,
        model=info.get("model", ""),
        runtime=info.get("runtime", ""),
        variant=variant,
        predicted_us=predicted_us,
        measured_us=measured_us,
        empty_us=empty_us,
        units_timed=len(timed),
        units_total=total_units,
        nodes_timed=sum(len(o["nodes"]) for r in timed for o in tag(r).get("occurrences", [])),
        nodes_total=nodes_total,
        error=error,
        error_low=low,
        error_high=high,
        rounds=rounds,
        interval_note=note,
        inserted_us=inserted_us,
        profiled_us=sum(profile.values()) if profile else None,
        reorders_us=sum(line.reorders_us for line in lines if line.reorders_us is not None)
        if empty_us is not None
        else None,
        units=tuple(lines),
        notes=tuple(notes),
        dims=dict(info.get("dims") or {}),
        method=sides.method if sides else method,
        evicted_empty_us=sides.evicted_empty["median_us"] if sides and sides.evicted_empty else None,
        left_out=tuple(untimed),
        left_out_us=left_out_us,
        flagged=flagged,
        untimed_inserted_us=untimed_inserted_us,
        gap=gap_by_cause(sides, measured_us, untimed_inserted_us) if sides else {},
    )


def _reuse_notes(members: list[dict[str, Any]]) -> list[str]:
    """How many of the prediction's unit and empty graphs came from the unit cache, and from which runs."""
    graphs = [r for r in members if tag(r).get("role") in (UNIT, EMPTY)]
    runs = sorted({tag(r)[REUSED] for r in graphs if tag(r).get(REUSED)})
    reused = sum(1 for r in graphs if tag(r).get(REUSED))
    if not reused:
        return []
    return [
        f"{reused} of {len(graphs)} unit and empty graphs (evicted twins included) reused from the unit cache, "
        f"as timed in run {', '.join(runs)}; their rounds are paired with this run's model rounds, timed at "
        "another moment, so the interval does not cover the machine's drift between the runs "
        "(--fresh times them again)"
    ]


def predictions(rows: list[dict[str, Any]], method: str = MODEL_STATE) -> list[Prediction]:
    """One Prediction per run, model and variant among `rows` (rows of any runs; those without a
    prediction tag are ignored), its units taken by `method` (METHODS). A run that holds only units and
    the empty graph (a board's run of an exported bundle) gives a prediction without a measurement."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        info = tag(row)
        if info.get("role") in (MODEL, UNIT, EMPTY):
            key = (row.get("run_id", ""), info.get("model", ""), row.get("variant") or row.get("runtime", ""))
            groups.setdefault(key, []).append(row)
    return [
        _prediction(run_id, variant, members, method)
        for (run_id, _, variant), members in groups.items()
        if any(tag(r).get("role") in (MODEL, UNIT) for r in members)
    ]
