"""Two runs side by side (e.g. two runtimes, or a server and an ARM board): rows joined on graph id,
with each side's status, executed precision and median, and the ratio of the medians."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dbench.errors import DbenchError
from dbench.store.log import RunLog, find_run


@dataclass(frozen=True)
class Pair:
    """One graph in both runs (either side may be missing)."""

    graph_id: str
    a: dict | None
    b: dict | None

    @property
    def ratio(self) -> float | None:
        """median(b) / median(a): above 1 means b is slower."""
        if self.a and self.b and self.a.get("median_us") and self.b.get("median_us"):
            return self.b["median_us"] / self.a["median_us"]
        return None


def open_run(results: Path, name: str) -> RunLog:
    """A run by id (looked up under `results/`) or by the path of its .jsonl log."""
    path = Path(name)
    if path.suffix == ".jsonl":
        if not path.is_file():
            raise DbenchError(f"no run log at {path}")
        return RunLog.read(path)
    return RunLog.read(find_run(results, name))


def pair_rows(a: list[dict], b: list[dict]) -> list[Pair]:
    """Rows of two runs joined on graph id, in the first run's order, then the second's extras."""
    by_a = {r["graph_id"]: r for r in a}
    by_b = {r["graph_id"]: r for r in b}
    order = list(by_a) + [g for g in by_b if g not in by_a]
    return [Pair(g, by_a.get(g), by_b.get(g)) for g in order]
