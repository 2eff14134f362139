"""What `dbench report` needs beyond the core, checked before any work and without importing it."""

from __future__ import annotations

import importlib.util

from dbench.errors import InputError

REPORT_PACKAGES = ("pandas", "matplotlib", "openpyxl")


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as missing
        return False


def require_extras() -> None:
    """One line naming the missing packages of the `report` extra (exit 2, as any missing dependency)."""
    missing = [name for name in REPORT_PACKAGES if not _installed(name)]
    if missing:
        raise InputError(
            f"dbench report needs {', '.join(missing)}: pip install 'dbench[report]' "
            "(or pip install -e '.[report]' in a clone)"
        )
