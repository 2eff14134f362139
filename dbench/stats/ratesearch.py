"""The highest arrival rate whose 99th-percentile latency stays under a bound, by a short bisection.
No rate above the closed-loop throughput (every stream busy, the `ceiling`) is sustainable: its queue
grows for as long as the arrivals last, so the ceiling counts as failing without a trial. Between the
highest rate that kept the bound and the lowest that did not, the next trial is their midpoint, until
the two are within `tolerance` of each other, or `max_trials` trials were made (the caller also stops
it when its time is spent). The answer is a bracket: the highest passing rate and the lowest failing one."""

from __future__ import annotations

from dataclasses import dataclass, field

TOLERANCE = 0.05
MAX_TRIALS = 10


@dataclass(frozen=True)
class Trial:
    """One rate tried: its p99 latency (µs), whether that kept the bound, how many requests it sent and
    the arrival rate its dispatcher achieved."""

    rate: float
    p99_us: float
    passed: bool
    requests: int = 0
    arrival_rate: float | None = None


@dataclass
class RateSearch:
    """The search's state; feed it each trial's result with `record` and ask `next_rate`."""

    ceiling: float
    tolerance: float = TOLERANCE
    max_trials: int = MAX_TRIALS
    trials: list[Trial] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.ceiling > 0:
            raise ValueError(f"the search needs a positive ceiling (closed-loop throughput), not {self.ceiling}")

    @property
    def passed(self) -> float:
        """The highest rate that kept the bound below the lowest failing one (0.0: none yet)."""
        return max((t.rate for t in self.trials if t.passed and t.rate < self.failed), default=0.0)

    @property
    def failed(self) -> float:
        """The lowest rate that did not keep the bound (the ceiling until a trial fails below it)."""
        return min([t.rate for t in self.trials if not t.passed] + [self.ceiling])

    def record(self, trial: Trial) -> None:
        self.trials.append(trial)

    def converged(self) -> bool:
        return self.passed > 0 and (self.failed - self.passed) <= self.tolerance * self.failed

    def next_rate(self) -> float | None:
        """The next rate to try, or None when the bracket is narrow enough or the trials are spent."""
        if len(self.trials) >= self.max_trials or self.converged():
            return None
        return (self.passed + self.failed) / 2

    def stop_reason(self) -> str:
        """Why the search stopped (or would stop now)."""
        if self.converged():
            return f"bracket within {self.tolerance:.0%}"
        if len(self.trials) >= self.max_trials:
            return f"trial limit ({self.max_trials})"
        return "time limit"

    def to_dict(self) -> dict:
        """The result as a row records it: the bracket, every trial, and why it stopped."""
        return {
            "max_rate": self.passed or None,
            "max_rate_failed": self.failed,
            "ceiling": self.ceiling,
            "trials": [
                {
                    "rate": t.rate,
                    "p99_us": t.p99_us,
                    "passed": t.passed,
                    "requests": t.requests,
                    "arrival_rate": t.arrival_rate,
                }
                for t in self.trials
            ],
            "stop": self.stop_reason(),
        }
