"""The machine key: a readable, folder-safe name built from more than the host name (host, CPU
microarchitecture, core count, memory, the ISA features that change kernel speed, GPU) plus a short
hash of all of it, so two machines with one host name never share a results folder."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

ISA_FEATURES = (
    # x86: vector width, matrix units, low-precision dot products
    ("avx512", ("avx512f",)),
    ("avx2", ("avx2",)),
    ("amx", ("amx_tile", "amx-tile")),
    ("bf16", ("avx512_bf16", "amx_bf16")),
    ("vnni", ("avx512_vnni", "avx_vnni", "avx512vnni")),
    ("fp16", ("avx512_fp16",)),
    # ARM (/proc/cpuinfo "Features")
    ("neon", ("asimd",)),
    ("sve", ("sve",)),
    ("sve2", ("sve2",)),
    ("dotprod", ("asimddp",)),
    ("i8mm", ("i8mm",)),
    ("armbf16", ("bf16",)),
)
"""(name in the key, cpuinfo flags any of which means the feature)."""


def isa_features(flags: list[str]) -> list[str]:
    """The key's ISA features present in the CPU flags, in ISA_FEATURES order (avx2 dropped when
    avx512 is there: it is implied)."""
    have = set(flags)
    found = [name for name, aliases in ISA_FEATURES if have.intersection(aliases)]
    return [f for f in found if not (f == "avx2" and "avx512" in found)]


def microarchitecture(cpu: dict[str, Any]) -> str:
    """archspec's name for the host CPU (zen3, sapphirerapids, neoverse_v1, ...); without archspec,
    `<vendor>-f<family>m<model>` from /proc/cpuinfo."""
    try:
        import archspec.cpu

        return str(archspec.cpu.host().name)
    except Exception:  # archspec missing, or unknown on this platform: fall back to cpuinfo
        pass
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return "unknown"
    vendor = fields.get("vendor_id") or fields.get("CPU implementer") or "cpu"
    family = fields.get("cpu family") or fields.get("CPU architecture") or "?"
    model = fields.get("model") or fields.get("CPU part") or "?"
    return f"{vendor}-f{family}m{model}".lower()


def _safe(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "_", text.lower()).strip("_") or "x"


def machine_key(identity: dict[str, Any]) -> str:
    """`<host>-<uarch>-<cores>c-<mem>g[-<isa>...][-<gpu>]-<hash6>`, e.g.
    `vm-zen3-2c-8g-avx2-3f9a1c`; the hash covers every identity field (GPU list and CPU model too)."""
    memory_gib = round((identity.get("memory_bytes") or 0) / 2**30)
    parts = [
        _safe(identity.get("hostname") or "host"),
        _safe(identity.get("microarchitecture") or "unknown"),
        f"{identity.get('cores') or 0}c",
        f"{memory_gib}g",
        *identity.get("isa", []),
    ]
    gpus = identity.get("gpus") or []
    if gpus:
        parts.append(_safe(gpus[0].replace("NVIDIA", "")) + (f"x{len(gpus)}" if len(gpus) > 1 else ""))
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:6]
    return "-".join(parts + [digest])


KEY_OVERRIDE = "DBENCH_MACHINE_KEY"
"""Names this machine in place of its computed key: identical nodes of a cluster under one name, a
container whose host name changes every start, or several fleet nodes on one host in tests."""
OVERRIDE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")


def key_override() -> str | None:
    """$DBENCH_MACHINE_KEY when set (one line naming the fix when it is not a folder-safe name), else None."""
    from dbench.errors import UsageError

    value = os.environ.get(KEY_OVERRIDE)
    if value is None:
        return None
    if not OVERRIDE_PATTERN.match(value):
        raise UsageError(
            f"{KEY_OVERRIDE}={value!r} is not a machine key: use 1 to 120 lower-case letters, digits, "
            "'.', '_' or '-', starting with a letter or digit (it names a results folder)"
        )
    return value
