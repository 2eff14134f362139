"""Errors agreed by every rank, so no rank is left waiting alone in a collective call."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from dbench.errors import DbenchError

T = TypeVar("T")


class AgreedError(DbenchError):
    """A user-facing error every rank raises together; rank 0 prints it once."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def together(comm: Any, action: Callable[[], T]) -> T:
    """Run `action` on every rank; if it raised a DbenchError on any rank, raise the first one everywhere."""
    try:
        result, problem = action(), None
    except DbenchError as error:
        result, problem = None, (str(error), error.exit_code)
    problems = [p for p in comm.allgather(problem) if p is not None]
    if problems:
        raise AgreedError(*problems[0])
    return result  # type: ignore[return-value]
