"""Which machines a cluster holds: every worker is asked its machine key (the same key `dbench run` files
its results under, or $DBENCH_MACHINE_KEY), and workers that share a key are one machine. The fleet
sends one timing job to one worker of each machine, never two: timing must not share cores with timing."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any

import dbench


@dataclass(frozen=True)
class Member:
    """One worker of the cluster: its address, the machine it runs on, and what it runs."""

    address: str
    key: str
    hostname: str
    dbench: str
    python: str
    problem: str = ""
    """Why this worker cannot serve (its machine key cannot be taken), or ''."""


def identify() -> dict[str, Any]:
    """Run on a worker (Client.run): its machine key, host name and versions; the key's own error as text."""
    import socket

    from dbench.errors import DbenchError
    from dbench.store.metadata import machine_name

    try:
        key, problem = machine_name(), ""
    except DbenchError as err:
        key, problem = "", str(err)
    return {
        "key": key,
        "hostname": socket.gethostname(),
        "dbench": dbench.__version__,
        "python": platform.python_version(),
        "problem": problem,
    }


def members(client: Any, known: dict[str, Member]) -> dict[str, Member]:
    """Every worker the scheduler lists now, by address; only workers not in `known` are asked who they are."""
    addresses = list(client.scheduler_info(n_workers=-1)["workers"])
    fresh = [a for a in addresses if a not in known]
    found = {a: m for a, m in known.items() if a in addresses}
    if fresh:
        answers = client.run(identify, workers=fresh, on_error="return")
        for address, answer in answers.items():
            if isinstance(answer, BaseException):
                found[address] = Member(address, "", "?", "?", "?", f"the worker could not say who it is: {answer}")
            else:
                found[address] = Member(address, **answer)
    return found


def one_per_machine(found: dict[str, Member]) -> dict[str, Member]:
    """Machine key -> the worker that times there (the first by address, so a re-ask picks the same)."""
    chosen: dict[str, Member] = {}
    for address in sorted(found):
        member = found[address]
        if member.key and not member.problem:
            chosen.setdefault(member.key, member)
    return chosen


def refusal(member: Member) -> str:
    """Why a machine cannot serve this caller ('' when it can): a dbench of another version would
    write rows of another schema, or a key it cannot take."""
    if member.problem:
        return member.problem
    if member.dbench != dbench.__version__:
        return (
            f"it runs dbench {member.dbench} and this caller {dbench.__version__}: install the same version "
            "on every machine"
        )
    return ""
