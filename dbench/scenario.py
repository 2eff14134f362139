"""How requests reach a graph in a throughput or server job: the scenario, the requests in flight, and
for the server scenario the arrival rate, the latency bound and the time the max-rate search may take.
A latency job (the default) has no Load."""

from __future__ import annotations

from dataclasses import asdict, dataclass

THROUGHPUT = "throughput"
SERVER = "server"
SCENARIOS = (THROUGHPUT, SERVER)


@dataclass(frozen=True)
class Load:
    """`streams` requests in flight on one compiled graph, each with the job's threads. `throughput`
    keeps every request busy (a closed loop); `server` sends requests at Poisson arrivals of `rate` per
    second to whichever request is free (a queue in front), and with a `latency_bound_us` searches for
    the highest rate whose p99 keeps it, for at most `search_s` seconds (first round only)."""

    scenario: str
    streams: int
    rate: float | None = None
    latency_bound_us: float | None = None
    search_s: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)
