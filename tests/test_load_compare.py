"""`compare` on throughput and server rows, synthetic rounds with a known answer: a throughput row is
judged by its rounds' time per inference with the latency rows' tests (higher throughput is `faster`),
a server row by its rounds' p99 at one rate; modes and rates that differ are refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from dbench.errors import UsageError
from dbench.stats.differences import welch
from dbench.store.compare import Side, compare_sides


def throughput_row(graph: str, per_inference_us: list[float]) -> dict:
    return {
        "graph_id": graph,
        "status": "ok",
        "verified": True,
        "mode": "throughput",
        "median_us": None,
        "time_per_inference_us": float(np.mean(per_inference_us)),
        "round_per_inference_us": per_inference_us,
        "inferences_per_s": 1e6 / float(np.mean(per_inference_us)),
        "runtime": "ort-cpu",
    }


def server_row(graph: str, p99_us: list[float], rate: float = 100.0) -> dict:
    return {
        "graph_id": graph,
        "status": "ok",
        "verified": True,
        "mode": "server",
        "median_us": None,
        "rate": rate,
        "latency_p99_us": float(np.median(p99_us)),
        "round_p99_us": p99_us,
        "runtime": "ort-cpu",
    }


def latency_row(graph: str, medians: list[float]) -> dict:
    return {
        "graph_id": graph,
        "status": "ok",
        "verified": True,
        "median_us": float(np.median(medians)),
        "round_medians_us": medians,
        "runtime": "ort-cpu",
    }


def side(label: str, *rows: dict) -> Side:
    return Side(label, [{r["graph_id"]: r for r in rows}], [label], ["box"])


def rounds(rng, center: float, sd: float = 0.01, n: int = 5) -> list[float]:
    return list(center * np.exp(sd * rng.standard_normal(n)))


def test_higher_throughput_is_faster_by_the_latency_rows_test(seed):
    rng = np.random.default_rng(seed)
    a_rounds, b_rounds = rounds(rng, 100.0), rounds(rng, 80.0)  # b: 25 % more inferences per second
    comparison = compare_sides(side("a", throughput_row("g", a_rounds)), side("b", throughput_row("g", b_rounds)))
    (pair,) = comparison.pairs
    expected = welch(a_rounds, b_rounds)
    assert pair.verdict == "faster" and comparison.mode == "throughput"
    assert pair.ratio == pytest.approx(expected.ratio) and pair.difference.p == pytest.approx(expected.p)
    exported = pair.to_dict()
    assert exported["a_time_per_inference_us"] > exported["b_time_per_inference_us"] and "a_median_us" not in exported
    assert comparison.summary()["figure"] == "time_per_inference_us"


def test_server_rows_are_judged_by_their_rounds_p99(seed):
    rng = np.random.default_rng(seed)
    comparison = compare_sides(
        side("a", server_row("g", rounds(rng, 1000.0))), side("b", server_row("g", rounds(rng, 1300.0)))
    )
    assert comparison.pairs[0].verdict == "slower" and comparison.mode == "server"


@pytest.mark.parametrize(
    "a,b,phrase",
    [
        (
            latency_row("g", [1.0, 1.1, 1.0]),
            throughput_row("g", [1.0, 1.1, 1.0]),
            "holds latency rows and b throughput rows: a latency row is not comparable with a throughput row",
        ),
        (server_row("g", [1.0, 1.1, 1.0]), throughput_row("g", [1.0, 1.1, 1.0]), "holds server rows"),
        (
            server_row("g", [1.0, 1.1, 1.0], 100.0),
            server_row("g", [1.0, 1.1, 1.0], 200.0),
            "server rows at different arrival rates (100/s, 200/s)",
        ),
    ],
)
def test_rows_of_different_modes_or_rates_are_refused(a, b, phrase):
    with pytest.raises(UsageError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        compare_sides(side("a", a), side("b", b))


def test_a_side_that_mixes_modes_is_refused():
    mixed = Side(
        "m", [{"g": latency_row("g", [1.0, 1.1, 1.0]), "h": throughput_row("h", [1.0, 1.1, 1.0])}], ["m"], ["box"]
    )
    with pytest.raises(UsageError, match="m mixes latency and throughput rows"):
        compare_sides(mixed, side("b", latency_row("g", [1.0, 1.1, 1.0])))
