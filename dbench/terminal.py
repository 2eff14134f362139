"""How wide dbench prints: COLUMNS when it is set, the terminal's width on a terminal, and PIPE_WIDTH
off one (a pipe, a file, a CI log), where rich would otherwise wrap every table at 80 columns."""

from __future__ import annotations

import os
from typing import TextIO

PIPE_WIDTH = 160
"""Off a terminal without COLUMNS: wide enough that the run summary, the all-reduce table and compare's
table keep a graph id (up to about 60 characters) on one line; narrower tables take only their width."""


def output_width(stream: TextIO) -> int | None:
    """The width to give rich for `stream`: None where rich finds it itself (COLUMNS set, or a terminal)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.strip().isdigit() and int(columns) > 0:
        return None  # rich reads COLUMNS itself
    return None if stream.isatty() else PIPE_WIDTH


def console(stderr: bool = False):
    """A rich Console on stdout (or stderr) with the width above."""
    import sys

    from rich.console import Console

    return Console(stderr=stderr, width=output_width(sys.stderr if stderr else sys.stdout))
