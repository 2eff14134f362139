"""SHA256SUMS: the checksum list of a bundle, in the format `sha256sum -c` reads (`<hex>  <name>`)."""

from __future__ import annotations

import hashlib
import re

from dbench.errors import InputError

CHECKSUMS = "SHA256SUMS"
LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def format_checksums(members: dict[str, bytes]) -> str:
    """One line per member, sorted by name (the list itself is not listed)."""
    return "".join(f"{digest(data)}  {name}\n" for name, data in sorted(members.items()) if name != CHECKSUMS)


def parse_checksums(text: str) -> dict[str, str]:
    """name -> hex digest; a one-line error for a malformed or duplicated line."""
    sums: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = LINE.match(line)
        if not match:
            raise InputError(
                f"{CHECKSUMS} line {number} is not `<sha256>  <file>`; re-export the bundle with `dbench export`"
            )
        sha, name = match.groups()
        if name in sums:
            raise InputError(f"{CHECKSUMS} lists {name!r} twice; re-export the bundle with `dbench export`")
        sums[name] = sha
    return sums
