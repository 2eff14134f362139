"""The worker process's one runtime instance, made once and kept across jobs, for the timed jobs and
the execution-report jobs alike."""

from __future__ import annotations

from dbench.runtimes.base import Runtime, RuntimeOptions

_runtime: list[tuple[str, RuntimeOptions, Runtime]] = []
"""This process's runtime instance with its name and options, kept across jobs (a run has one)."""


def runtime_for(name: str, options: RuntimeOptions) -> Runtime:
    """The runtime for a job: its class resolved and instantiated once per worker process (again
    only if a job names another runtime or other options)."""
    from dbench.runtimes.registry import runtime_class

    if not _runtime or _runtime[0][:2] != (name, options):
        _runtime[:] = [(name, options, runtime_class(name)(options))]
    return _runtime[0][2]
