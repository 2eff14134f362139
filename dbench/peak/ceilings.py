"""The ceilings `dbench peak` stored, read back: peak.json in a machine's results folder (merged with what it
held, so a ceiling is the highest rate measured on the machine key), the ceilings of a row's own kind of
device (a GPU row is never set against the host), and a row's fraction of its roofline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dbench.errors import UsageError


def device_kind(runtime: str) -> str | None:
    """'gpu' or 'cpu', the device a runtime's rows run on (Runtime.device_kind); None for an unknown name."""
    from dbench.runtimes.registry import runtime_class

    try:
        return runtime_class(runtime).device_kind
    except UsageError:
        return None


def _keep_highest(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` with each of its copy and triad bandwidths that `old` beat replaced by `old`'s, and when that was
    measured."""
    merged = dict(new)
    for field in ("copy_gbps", "triad_gbps"):
        if (old.get(field) or 0) > new[field]:
            merged[field] = old[field]
            merged[f"{field}_taken_at"] = old.get(f"{field}_taken_at", old.get("taken_at"))
    return merged


def _still_skipped(key: str, gemm: dict[str, dict[str, float]], devices: dict[str, Any]) -> bool:
    """Whether a `skipped` entry ("<runtime> <precision>" or "<runtime> bandwidth") has no measurement beside it."""
    runtime, _, what = key.partition(" ")
    return runtime not in devices if what == "bandwidth" else what not in gemm.get(runtime, {})


def merge_peaks(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """peak.json after a new measurement: the highest bandwidths (host and each GPU runtime's) and GEMM
    rates of both (a ceiling is the most this machine key was measured to reach), entries measured only
    before kept, and a skip recorded only where no measurement exists."""
    if not old or old.get("machine_key") != new["machine_key"]:
        return new
    merged = _keep_highest(old, new)
    before = old.get("device_bandwidth", {})
    devices = {**before, **{r: _keep_highest(before.get(r, {}), e) for r, e in new.get("device_bandwidth", {}).items()}}
    gemm = {r: dict(v) for r, v in old.get("gemm_tflops", {}).items()}
    shapes = {r: dict(v) for r, v in old.get("gemm_shapes", {}).items()}
    when = {r: dict(v) for r, v in old.get("gemm_taken_at", {}).items()}
    for runtime, rates in new["gemm_tflops"].items():
        for precision, rate in rates.items():
            if rate >= gemm.get(runtime, {}).get(precision, 0.0):
                gemm.setdefault(runtime, {})[precision] = rate
                shapes.setdefault(runtime, {})[precision] = new["gemm_shapes"][runtime][precision]
                when.setdefault(runtime, {})[precision] = new["taken_at"]
    merged.update(
        gemm_tflops=gemm,
        gemm_shapes=shapes,
        gemm_taken_at=when,
        device_bandwidth=devices,
        skipped={
            k: v for k, v in {**old.get("skipped", {}), **new["skipped"]}.items() if _still_skipped(k, gemm, devices)
        },
    )
    return merged


def save_peaks(peaks: dict[str, Any], results: Path) -> Path:
    """Write peak.json in the machine's results folder (where reports look for it), merged with what it held."""
    from dbench.store.log import ensure_writable

    path = ensure_writable(results / peaks["machine_key"]) / "peak.json"
    path.write_text(json.dumps(merge_peaks(read_peak_file(path.parent), peaks), indent=1) + "\n")
    return path


def device_bandwidth(peaks: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The bandwidth record of the memory `kind` runtimes read: the host's for CPU runtimes; for GPU
    runtimes the GPU's own, the best measured through any GPU runtime (they share the one GPU), never
    the host's; None where unmeasured."""
    if kind == "cpu":
        return peaks if peaks.get("triad_gbps") else None
    records = [
        b for r, b in peaks.get("device_bandwidth", {}).items() if device_kind(r) == kind and b.get("triad_gbps")
    ]
    return max(records, key=lambda b: b["triad_gbps"], default=None)


def ceilings(peaks: dict[str, Any] | None, precision: str, runtime: str) -> tuple[float | None, float | None]:
    """(best GEMM TFLOP/s in `precision` over the runtimes on `runtime`'s kind of device, that device's
    triad GB/s) from a peak.json, None where unmeasured: a GPU row is never set against the host."""
    kind = device_kind(runtime)
    if not peaks or kind is None:
        return None, None
    rates = [
        r[precision] for name, r in peaks.get("gemm_tflops", {}).items() if precision in r and device_kind(name) == kind
    ]
    bandwidth = device_bandwidth(peaks, kind)
    return (max(rates) if rates else None), (bandwidth["triad_gbps"] if bandwidth else None)


def roof_fraction(row: dict[str, Any], peaks: dict[str, Any]) -> float | None:
    """A verified row's TFLOP/s as a fraction of its roofline on its own device: min(GEMM ceiling,
    triad x intensity). Above 1 the row outran a ceiling: callers flag it (the ceiling is low), never
    show it as a fraction."""
    peak_tflops, bandwidth = ceilings(peaks, row.get("precision", ""), row.get("runtime", ""))
    if not (
        row.get("status") == "ok"
        and row.get("verified")
        and row.get("tflops")
        and peak_tflops
        and bandwidth
        and row.get("intensity")
    ):
        return None
    return row["tflops"] / min(peak_tflops, bandwidth * row["intensity"] / 1e3)


def read_peak_file(folder: Path) -> dict[str, Any] | None:
    """The machine folder's peak.json, or None."""
    path = folder / "peak.json"
    return json.loads(path.read_text()) if path.is_file() else None
