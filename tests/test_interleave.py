"""The one interleaving rule (dbench.stats.interleave.rotated) and the runner's use of it: every variant
runs first equally often, round by round and graph by graph."""

from __future__ import annotations

from collections import Counter

from dbench.orchestrator.runner import RunConfig, Runner, Variant
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import runtime_class
from dbench.stats.interleave import rotated
from dbench.worker.timing import TimingConfig


def test_rotated_moves_the_first_to_the_end_each_turn():
    assert rotated("abc", 0) == ["a", "b", "c"]
    assert rotated("abc", 1) == ["b", "c", "a"]
    assert rotated("abc", 2) == ["c", "a", "b"]
    assert rotated("abc", 3) == rotated("abc", 0)
    assert rotated("abc", -1) == ["c", "a", "b"]
    assert rotated(("x", "y"), 1) == ["y", "x"]
    assert rotated([], 5) == []


def test_rotated_keeps_the_input_and_gives_each_variant_every_position():
    variants = ("a", "b", "c", "d")
    orders = [rotated(variants, turn) for turn in range(7, 7 + len(variants))]
    assert variants == ("a", "b", "c", "d")
    for position in range(len(variants)):
        assert sorted(order[position] for order in orders) == sorted(variants)


def test_the_runner_rotates_its_variants_by_round_and_graph():
    variants = tuple(Variant(label, "ort-cpu", RuntimeOptions(threads=1)) for label in ("a", "b", "c"))
    runner = Runner(
        RunConfig(variants=variants, timing=TimingConfig(rounds=3)),
        {"ort-cpu": runtime_class("ort-cpu")},
        log=None,
        run_id="run-x",
    )
    first = Counter()
    for number in range(3):
        for position in range(4):
            order = [v.label for v in runner._variants(number, position)]
            assert sorted(order) == ["a", "b", "c"]
            assert order == rotated(["a", "b", "c"], number + position)
            first[order[0]] += 1
    assert first == {"a": 4, "b": 4, "c": 4}
