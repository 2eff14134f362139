"""User-facing errors: one line that names the problem and the fix; the CLI prints it, no traceback.

Exit statuses, one rule for every command: 2 for bad input (an option, or a file, folder, run, bundle or
model the command line names, or a missing dependency), refused before anything is written; 1 when the
command could not finish for another reason (a runtime that cannot start, a rank that died, a disk
that refused a write). `dbench run` and `dbench allreduce` add 3 for failed rows and 130 for Ctrl-C."""


class DbenchError(Exception):
    """A problem the user can fix; `str(err)` is the whole message."""

    exit_code = 1


class InputError(DbenchError):
    """Bad input: a file, folder, run log, bundle or model named on the command line is missing,
    malformed or refused, or a package the command needs is not installed; exit code 2, as a bad option."""

    exit_code = 2


class UsageError(InputError):
    """Bad command-line input (unknown suite, op, precision...); exit code 2 like typer's."""


class KernelFileError(InputError):
    """A malformed kernel CSV: the message names file, row and column."""

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
