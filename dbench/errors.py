"""User-facing errors: one line that names the problem and the fix; the CLI prints it, no traceback."""


class DbenchError(Exception):
    """A problem the user can fix; `str(err)` is the whole message."""

    exit_code = 1


class UsageError(DbenchError):
    """Bad command-line input (unknown suite, op, precision...); exit code 2 like typer's."""

    exit_code = 2


class KernelFileError(DbenchError):
    """A malformed kernel CSV: the message names file, row and column."""

    exit_code = 2

    def __init__(self, path: str, row: int, column: str, problem: str) -> None:
        super().__init__(f"{path}: row {row}, column '{column}': {problem}")


class UnsupportedError(DbenchError):
    """A graph a runtime (or a generator) cannot run in the asked form or precision; recorded as
    an `unsupported` row with this message, never a crash."""


class OutOfMemory(DbenchError):
    """The runtime could not allocate what a graph needs; recorded as an `oom` row."""


class RuntimeSetupError(DbenchError):
    """The runtime cannot start as configured (a device it does not see): no graph can run, so the
    run stops with this line instead of recording every graph as failed."""
