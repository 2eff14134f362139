"""Server rounds (MLPerf's Server scenario): requests arrive at a seeded Poisson schedule's times
(dbench.stats.arrivals) and wait in one FIFO queue for whichever of the session's requests is free;
a request's latency runs from its scheduled arrival to the end of its run, so queueing counts; the
runs' own mean time is kept (the load the rate really was follows from it, dbench.stats.throughput). The
dispatcher sleeps until each arrival and sends at once every arrival already due (it never spins: a
spinning thread would take a core from the runtime); its lag behind the schedule is recorded, and the
measured arrival rate is what its sends achieved. A row's rounds send enough arrivals together for its
p99 to rest on P99_ABOVE slower requests (dbench.stats.quantile), each keeping its slowest latencies so
that the pooled p99 and its order-statistic interval are exact. With a latency bound, the first round then searches
for the highest rate whose p99 keeps it (dbench.stats.ratesearch), within a time budget."""

from __future__ import annotations

import dataclasses
import gc
import math
import queue
import threading
import time
from typing import Any

import numpy as np

from dbench.runtimes.base import ConcurrentSession
from dbench.stats.arrivals import arrival_rate, poisson_schedule
from dbench.stats.quantile import P99, P99_ABOVE, arrivals_for, slowest
from dbench.stats.ratesearch import RateSearch, Trial
from dbench.stats.records import ServerRound
from dbench.stats.samples import kept
from dbench.worker.streams import capacity, percentiles_us, warm_up
from dbench.worker.timing import TimingConfig

PATIENCE = 2.0
"""A request still queued this many times the schedule's span after its start is abandoned (counted as
unserved, its latency at least that long): an overloaded server ends its round by itself."""
MIN_REQUESTS = 100
"""Arrivals a round and a search trial send at least, where their time allows: a p99 over fewer requests
is their maximum."""
LEAD_S = 0.001
"""The schedule starts this long after the dispatcher has set it up."""
TRIAL_S = 0.5
"""A search trial lasts about this long, or MIN_REQUESTS arrivals where that is longer."""
CAPACITY_S = 0.25
"""Time spent measuring the closed-loop throughput that caps the search."""


def requests_for(rate: float, config: TimingConfig, rounds: int) -> int:
    """Arrivals in one of `rounds` rounds: `iterations` when stopping by count, else enough that the
    row's p99 rests on P99_ABOVE requests (arrivals_for(99, P99_ABOVE) divided among the rounds, at least
    MIN_REQUESTS a round) or about the round's share of --min-time at the rate where that is more, at most
    what the round's share of --max-time holds."""
    if config.iterations is not None:
        return max(2, config.iterations)
    wanted = max(MIN_REQUESTS, math.ceil(arrivals_for(P99, P99_ABOVE) / rounds), math.ceil(rate * config.min_time))
    return max(2, min(wanted, math.floor(rate * config.max_time)))


def serve(
    session: ConcurrentSession,
    rate: float,
    count: int,
    seed: int,
    bound_us: float | None,
    deadline_s: float | None = None,
    pooled: int | None = None,
) -> ServerRound:
    """Send `count` arrivals at `rate` per second (schedule seeded by `seed`) to the session's requests
    through one queue; the figures of the round as dbench.stats.throughput reads them, with the slowest
    latencies a pool of `pooled` requests in all (default `count`) needs for its exact p99 and interval.
    Requests still queued `deadline_s` after the schedule's start (default PATIENCE x its span) are
    abandoned: `unserved`, their latency and wait counted as at least that long."""
    scheduled = np.round(poisson_schedule(rate, count, seed) * 1e9).astype(np.int64)
    patience_ns = int((deadline_s if deadline_s is not None else PATIENCE * scheduled[-1] / 1e9) * 1e9)
    arrived, starts, ends = (np.zeros(count, dtype=np.int64) for _ in range(3))
    served_by = np.full(count, -1, dtype=np.int64)
    pending: queue.SimpleQueue = queue.SimpleQueue()
    errors: list[BaseException] = []

    def loop(request: int) -> None:
        clock, run, take = time.perf_counter_ns, session.runner(request), pending.get
        try:
            while (i := take()) is not None:
                if clock() > deadline:
                    continue  # abandoned: the server is too far behind to end its round in time
                t0 = clock()
                run()
                t1 = clock()
                starts[i], ends[i], served_by[i] = t0, t1, request
        except BaseException as err:  # handed to the dispatcher, which stops and raises it
            errors.append(err)

    threads = [
        threading.Thread(target=loop, args=(k,), name=f"dbench-request-{k}", daemon=True)
        for k in range(session.requests)
    ]
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for thread in threads:
            thread.start()
        clock = time.perf_counter_ns
        base = clock() + int(LEAD_S * 1e9)
        deadline = base + max(patience_ns, int(scheduled[-1]))
        for i, at in enumerate(scheduled):
            delay = base + at - clock()
            if delay > 0:
                time.sleep(delay / 1e9)
            arrived[i] = clock()
            pending.put(i)
            if errors:
                break
    finally:
        for _ in threads:
            pending.put(None)
        for thread in threads:
            thread.join()
        if gc_was_enabled:
            gc.enable()
    if errors:
        raise errors[0]
    unserved = served_by < 0
    starts[unserved] = ends[unserved] = deadline  # lower bounds of their wait and latency
    due = base + scheduled
    latencies = (ends - due) / 1e3
    service_us = float(((ends - starts)[~unserved] / 1e3).mean()) if (~unserved).any() else None
    return ServerRound(
        streams=session.requests,
        streams_executed=session.streams_executed(),
        rate=rate,
        requests=count,
        inferences=int((~unserved).sum()),
        unserved=int(unserved.sum()),
        wall_s=(int(ends.max()) - base) / 1e9,
        per_stream=np.bincount(served_by[~unserved], minlength=session.requests).tolist(),
        latency_us=kept(latencies),
        latency_tail_us=slowest(latencies, pooled or count),
        **percentiles_us(latencies),
        latency_bound_us=bound_us,
        over_bound=int((latencies > bound_us).sum()) if bound_us else 0,
        arrival_span_s=(int(arrived[-1]) - int(arrived[0])) / 1e9,
        arrival_rate=arrival_rate(arrived / 1e9),
        service_mean_us=service_us,
        queue_p99_us=float(np.percentile((starts - due) / 1e3, 99)),
        dispatch_lag_p99_us=float(np.percentile((arrived - due) / 1e3, 99)),
    )


def search_max_rate(
    session: ConcurrentSession, first: Trial, bound_us: float, budget_s: float, seed: int
) -> dict[str, Any]:
    """The highest rate whose p99 keeps `bound_us`, by a bisection under the closed-loop throughput
    (`first`: the round's own rate and result), stopping when the bracket is narrow, the trials are
    spent, or the next trial could pass `budget_s` (a trial ends by PATIENCE x its span at the latest)."""
    started = time.perf_counter()
    search = RateSearch(capacity(session, min(CAPACITY_S, budget_s / 4)))
    if first.rate < search.ceiling:
        search.record(first)
    while (rate := search.next_rate()) is not None:
        count = max(MIN_REQUESTS, math.ceil(rate * TRIAL_S))
        if time.perf_counter() - started + PATIENCE * (count - 1) / rate > budget_s:
            break  # the trial could last that long before abandoning its queue
        trial_seed = seed + 100 * (len(search.trials) + 1)  # apart from the rounds' own schedules (seed + round)
        result = serve(session, rate, count, trial_seed, bound_us)  # abandons an overload by itself
        search.record(Trial(rate, result.latency_p99_us, result.latency_p99_us <= bound_us, count, result.arrival_rate))
    return search.to_dict()


def measure_server(
    session: ConcurrentSession,
    config: TimingConfig,
    rate: float,
    bound_us: float | None,
    search_s: float,
    seed: int,
    rounds: int = 1,
) -> ServerRound:
    """One of `rounds` server rounds: warm up, serve the round's arrivals at `rate`, then (with a bound
    and a search budget, first round only) search for the highest rate that keeps the bound."""
    warmup_s = warm_up(session, config)
    count = requests_for(rate, config, rounds)
    result = serve(
        session, rate, count, seed, bound_us, max(PATIENCE * (count - 1) / rate, config.max_time), pooled=count * rounds
    )
    search = None
    if bound_us and search_s > 0:
        first = Trial(rate, result.latency_p99_us, result.latency_p99_us <= bound_us, count, result.arrival_rate)
        search = search_max_rate(session, first, bound_us, search_s, seed)
    return dataclasses.replace(result, warmup_s=warmup_s, search=search)
