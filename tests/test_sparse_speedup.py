"""DeepBench's sparse speedup (dense time / sparse time) with the interval its two graphs' rounds give
it: found where the forms truly differ, `same within noise` where the rounds cannot tell them apart,
no interval below three rounds, one speedup per variant of an interleaved run."""

from __future__ import annotations

import numpy as np
import pytest

from dbench.render.tables import speedup_table
from dbench.store.derived import sparse_speedups, with_derived


def row(form: str, rounds: list[float], variant: str = "ort-cpu", kernel: str = "sparse_m64") -> dict:
    return {
        "family": "sparse",
        "status": "ok",
        "kernel_id": kernel,
        "precision": "fp32",
        "form": form,
        "variant": variant,
        "median_us": float(np.median(rounds)),
        "round_medians_us": rounds,
    }


def test_a_true_speedup_is_found_and_its_interval_holds_it(seed):
    """Over many draws of 5 rounds a side: a 95 % interval holds the true 2x in 93-97 % of them (binomial
    bounds a correct interval leaves with probability under 1e-4), and every draw finds the speedup."""
    rng = np.random.default_rng(seed)
    held, draws = 0, 2000
    for _ in range(draws):
        dense = list(200 * np.exp(0.01 * rng.standard_normal(5)))
        sparse = list(100 * np.exp(0.01 * rng.standard_normal(5)))
        ((key, speedup),) = sparse_speedups([row("dense", dense), row("sparse", sparse)]).items()
        assert key == ("ort-cpu", "sparse_m64") and speedup.value == pytest.approx(2.0, rel=0.05)
        assert speedup.low > 1 and speedup.verdict == "faster"
        held += speedup.low < 2.0 < speedup.high
    assert 0.93 <= held / draws <= 0.97


def test_rounds_that_cannot_tell_the_forms_apart_say_so():
    dense, sparse = [100.0, 130.0, 80.0, 120.0], [110.0, 90.0, 125.0, 85.0]
    (speedup,) = sparse_speedups([row("dense", dense), row("sparse", sparse)]).values()
    assert speedup.low < 1 < speedup.high and speedup.verdict == "same within noise"
    (few,) = sparse_speedups([row("dense", [200.0, 210.0]), row("sparse", [100.0, 101.0])]).values()
    assert few.low is None and few.verdict == "no interval" and few.value == pytest.approx(205.0 / 100.5)


def test_an_interleaved_run_has_a_speedup_per_variant_and_exports_the_interval(seed):
    rng = np.random.default_rng(seed)
    rows = [
        row(form, list(median * np.exp(0.01 * rng.standard_normal(3))), variant)
        for variant, dense_us in (("ort-cpu", 200), ("openvino", 90))
        for form, median in (("dense", dense_us), ("sparse", 100))
    ]
    speedups = sparse_speedups(rows)
    assert (
        speedups[("ort-cpu", "sparse_m64")].verdict == "faster"
        and speedups[("openvino", "sparse_m64")].verdict == "slower"
    )
    exported = {(r["variant"], r["form"]): r for r in with_derived(rows)}
    for variant in ("ort-cpu", "openvino"):
        sparse = exported[(variant, "sparse")]
        assert sparse["sparse_speedup"] == speedups[(variant, "sparse_m64")].value
        assert sparse["sparse_speedup_low"] < sparse["sparse_speedup"] < sparse["sparse_speedup_high"]
        assert exported[(variant, "dense")]["sparse_speedup"] is None
    table = speedup_table(speedups)
    assert [c.header for c in table.columns] == ["variant", "kernel", "speedup", "95% interval", "sparse form"]
