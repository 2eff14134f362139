"""The files under the tests' working directory, so the session can fail when a run or a test leaves one
there (an ONNX Runtime profile, a results folder written without --out): every output belongs in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

NOT_WATCHED = {".git", ".venv", "venv", "__pycache__", ".pytest_cache", "node_modules"}
"""Folders that tools, not the tests, write into (the interpreter's bytecode caches, pytest's own cache)."""


def files_under(root: Path) -> set[str]:
    """Every file and folder path under `root`, relative to it, leaving NOT_WATCHED folders and eggs out."""
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in NOT_WATCHED and not d.endswith(".egg-info")]
        here = Path(folder).relative_to(root)
        found.update(str(here / name) for name in [*dirs, *files])
    return found


def left_behind(before: set[str], root: Path) -> list[str]:
    """The paths under `root` that were not there `before`, shortest first (a new folder before its files)."""
    return sorted(files_under(root) - before, key=lambda p: (p.count(os.sep), p))
