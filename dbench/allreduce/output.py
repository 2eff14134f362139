"""Terminal output: a stdout console wide enough for the tables, and user errors as one red line."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape

PIPE_WIDTH = 160  # rich's default 80 columns would wrap the table when stdout is a pipe (as under mpiexec)


def console() -> Console:
    """The stdout console, 160 columns wide when stdout is not a terminal and COLUMNS is unset."""
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(width=PIPE_WIDTH if wide else None)


def print_error(message: object) -> None:
    """`error: <message>` on stderr, on one line, no traceback."""
    Console(stderr=True).print(f"[bold red]error:[/] {escape(str(message))}", highlight=False, soft_wrap=True)
