"""Board metadata for the run header: SoC/board model, each core's CPU part (MIDR), ARM features,
clusters (big.LITTLE, from each core's maximum frequency) and governors. Read from /proc and /sys
under `root`, so the parsers run on sample trees; on machines without these files (x86, containers)
the fields are empty, never an error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dbench.affinity import format_cpus

IMPLEMENTERS = {
    0x41: "ARM",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x46: "Fujitsu",
    0x48: "HiSilicon",
    0x4E: "NVIDIA",
    0x51: "Qualcomm",
    0x53: "Samsung",
    0x61: "Apple",
    0x6D: "Microsoft",
    0xC0: "Ampere",
}
ARM_PARTS = {
    0xD03: "Cortex-A53",
    0xD04: "Cortex-A35",
    0xD05: "Cortex-A55",
    0xD07: "Cortex-A57",
    0xD08: "Cortex-A72",
    0xD09: "Cortex-A73",
    0xD0A: "Cortex-A75",
    0xD0B: "Cortex-A76",
    0xD0C: "Neoverse-N1",
    0xD0D: "Cortex-A77",
    0xD0E: "Cortex-A76AE",
    0xD40: "Neoverse-V1",
    0xD41: "Cortex-A78",
    0xD42: "Cortex-A78AE",
    0xD44: "Cortex-X1",
    0xD46: "Cortex-A510",
    0xD47: "Cortex-A710",
    0xD48: "Cortex-X2",
    0xD49: "Neoverse-N2",
    0xD4B: "Cortex-A78C",
    0xD4D: "Cortex-A715",
    0xD4E: "Cortex-X3",
    0xD4F: "Neoverse-V2",
    0xD80: "Cortex-A520",
    0xD81: "Cortex-A720",
    0xD82: "Cortex-X4",
}
"""Arm Ltd's part numbers (implementer 0x41), as in the Arm cores' Technical Reference Manuals."""
FEATURES = ("asimd", "asimdhp", "asimddp", "sve", "sve2", "i8mm", "bf16", "svei8mm", "svebf16", "sme")
"""The /proc/cpuinfo `Features` that decide which kernels run: NEON, fp16, dot product, SVE, int8 and bf16 matmul."""


def parse_cpuinfo(text: str) -> dict[int, dict[str, str]]:
    """/proc/cpuinfo as {processor number: its fields}; fields before the first `processor` line
    (some 32-bit kernels) and after the last block (`Hardware`, `Model`) are shared by all."""
    cores: dict[int, dict[str, str]] = {}
    shared: dict[str, str] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "processor" and value.isdigit():
            current = cores.setdefault(int(value), {})
        elif current is not None and key not in ("Hardware", "Model", "Revision", "Serial"):
            current[key] = value
        else:
            shared[key] = value
    return {n: {**shared, **fields} for n, fields in cores.items()}


def midr_fields(midr: int) -> dict[str, Any]:
    """Implementer, variant, part and revision of a MIDR_EL1 value, with names where known."""
    implementer, part = (midr >> 24) & 0xFF, (midr >> 4) & 0xFFF
    return {
        "midr": f"0x{midr:08x}",
        "implementer": IMPLEMENTERS.get(implementer, f"0x{implementer:02x}"),
        "part": f"0x{part:03x}",
        "name": ARM_PARTS.get(part, "") if implementer == 0x41 else "",
        "variant": (midr >> 20) & 0xF,
        "revision": midr & 0xF,
    }


def _cpuinfo_midr(fields: dict[str, str]) -> int | None:
    """A MIDR assembled from cpuinfo's `CPU implementer/variant/part/revision` (architecture 0xF)."""
    try:
        return (
            int(fields["CPU implementer"], 0) << 24
            | int(fields.get("CPU variant", "0"), 0) << 20
            | 0xF << 16
            | int(fields["CPU part"], 0) << 4
            | int(fields.get("CPU revision", "0"), 0)
        )
    except (KeyError, ValueError):
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip("\0 \n")
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def cluster_list(max_khz: dict[int, int]) -> list[dict[str, Any]]:
    """Cores grouped by maximum frequency, fastest first (a big.LITTLE board shows two or three)."""
    groups: dict[int, list[int]] = {}
    for cpu, khz in max_khz.items():
        groups.setdefault(khz, []).append(cpu)
    return [
        {"cpus": format_cpus(cpus), "max_mhz": khz // 1000, "cores": len(cpus)}
        for khz, cpus in sorted(groups.items(), reverse=True)
    ]


def _core(cpu: int, fields: dict[str, str], sysfs: Path) -> dict[str, Any]:
    base = sysfs / f"cpu{cpu}"
    midr = _int(_read(base / "regs/identification/midr_el1"))
    core: dict[str, Any] = {"cpu": cpu}
    if midr is None:
        midr = _cpuinfo_midr(fields)
    if midr is not None:
        core.update(midr_fields(midr))
    for key, path in (("max_khz", "cpufreq/cpuinfo_max_freq"), ("capacity", "cpu_capacity")):
        value = _int(_read(base / path))
        if value is not None:
            core[key] = value
    governor = _read(base / "cpufreq/scaling_governor")
    if governor:
        core["governor"] = governor
    return core


def board_metadata(root: Path = Path("/")) -> dict[str, Any]:
    """Board model, per-core parts and frequencies, ARM features, clusters and governors."""
    cpuinfo = parse_cpuinfo(_read(root / "proc/cpuinfo") or "")
    sysfs = root / "sys/devices/system/cpu"
    numbers = sorted(
        set(cpuinfo)
        | {
            int(m.group(1))
            for p in (sysfs.glob("cpu[0-9]*") if sysfs.is_dir() else [])
            if (m := re.fullmatch(r"cpu(\d+)", p.name))
        }
    )
    cores = [_core(n, cpuinfo.get(n, {}), sysfs) for n in numbers]
    flags = next((f.get("Features", "").split() for f in cpuinfo.values() if "Features" in f), [])
    model = _read(root / "proc/device-tree/model") or next((f["Model"] for f in cpuinfo.values() if "Model" in f), None)
    parts = sorted({c["name"] or c["part"] for c in cores if "part" in c})
    return {
        "model": model,
        "cpu_parts": parts,
        "features": [f for f in FEATURES if f in flags],
        "clusters": cluster_list({c["cpu"]: c["max_khz"] for c in cores if "max_khz" in c}),
        "governors": sorted({c["governor"] for c in cores if "governor" in c}),
        "cores": [c for c in cores if len(c) > 1],
    }
