"""The shared libraries an ELF file names as DT_NEEDED, read from the file itself, so that a probe can
name exactly the `.so` an installed execution provider will ask the loader for (no readelf needed)."""

from __future__ import annotations

import struct
from pathlib import Path

SHT_DYNAMIC = 6
DT_NEEDED = 1


def needed_libraries(path: str | Path) -> list[str]:
    """The sonames `path` (a 64-bit little-endian ELF shared object) depends on, in file order."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path} is not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = []
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != SHT_DYNAMIC:
            continue
        strtab_offset = sections[link][4]
        for pos in range(offset, offset + size, entsize or 16):
            tag, value = struct.unpack_from("<qQ", data, pos)
            if tag == DT_NEEDED:
                end = data.index(b"\0", strtab_offset + value)
                names.append(data[strtab_offset + value : end].decode())
    return names
