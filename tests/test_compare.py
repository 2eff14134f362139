"""`dbench compare`: verdicts on synthetic sample sets whose answer is known, rows that cannot be
compared say why, version-1 runs say `no samples`, and different machines are warned about."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.store.compare import NOISE_FLOOR, compare_pair, geomean_ratio, hodges_lehmann, pair_rows, summary_line, verdict
from dbench.store.log import RunLog


def samples(rng, median: float, spread: float, n: int = 400) -> list[float]:
    return list(median * np.exp(spread * rng.standard_normal(n)))


def row(graph: str, times: list[float] | None, status: str = "ok", verified: bool | None = True) -> dict:
    return {"graph_id": graph, "status": status, "verified": verified,
            "median_us": float(np.median(times)) if times else None, "samples_us": times}


def test_same_distribution_is_same(seed):
    """The verdict is `same`; the 95% interval covers 1 for about 95% of fresh pairs, not for every
    pair (asserting it for one pair failed a CI run here, as it must one time in twenty)."""
    rng = np.random.default_rng(seed)
    shift = hodges_lehmann(np.array(samples(rng, 100, 0.05)), np.array(samples(rng, 100, 0.05)))
    assert verdict(shift) == "same"
    shifts = [hodges_lehmann(np.array(samples(rng, 100, 0.05, 100)), np.array(samples(rng, 100, 0.05, 100)))
              for _ in range(200)]
    covered = sum(s.low < 1 < s.high for s in shifts)
    assert covered >= 170, f"interval covered 1 in {covered} of 200 pairs; nominal 95%"  # 6 sd below 190


def test_ten_percent_slower_with_tight_samples_is_slower(seed):
    rng = np.random.default_rng(seed)
    shift = hodges_lehmann(np.array(samples(rng, 100, 0.01)), np.array(samples(rng, 110, 0.01)))
    assert verdict(shift) == "slower" and shift.ratio == pytest.approx(1.10, rel=0.005) and shift.low > 1
    assert verdict(hodges_lehmann(np.array(samples(rng, 110, 0.01)), np.array(samples(rng, 100, 0.01)))) == "faster"


def test_a_significant_shift_below_the_noise_floor_is_same(seed):
    rng = np.random.default_rng(seed)
    shift = hodges_lehmann(np.array(samples(rng, 100, 0.001, 2000)), np.array(samples(rng, 100.5, 0.001, 2000)))
    assert shift.low > 1  # the test alone would say slower
    assert shift.ratio - 1 < NOISE_FLOOR and verdict(shift) == "same"


def test_noisy_ten_percent_shift_is_not_claimed():
    """Eight samples a side with a 60% log spread: the interval is wide and holds 1, so no verdict.
    (A fixed seed: with fresh ones the test would detect the shift now and then, as it should.)"""
    rng = np.random.default_rng(20261123)
    shift = hodges_lehmann(np.array(samples(rng, 100, 0.6, 8)), np.array(samples(rng, 110, 0.6, 8)))
    assert shift.low < 1 < shift.high and shift.high / shift.low > 1.5 and verdict(shift) == "same"


def test_rows_that_cannot_be_compared_say_why(seed):
    rng = np.random.default_rng(seed)
    good = samples(rng, 100, 0.01)
    assert compare_pair("g", row("g", good), row("g", good, status="mismatch")).verdict == "b: mismatch"
    assert compare_pair("g", row("g", good, verified=None), row("g", good)).verdict == "a: unverified"
    assert compare_pair("g", row("g", good), None).verdict == "only in a"
    old = compare_pair("g", row("g", good), {**row("g", good), "samples_us": None})  # a version-1 row
    assert old.verdict == "no samples" and old.shift is None and old.ratio == pytest.approx(1.0)
    assert compare_pair("g", row("g", good), row("g", good[:1])).verdict == "one sample"


def test_geomean_and_summary(seed):
    rng = np.random.default_rng(seed)
    a = [row("x", samples(rng, 100, 0.01)), row("y", samples(rng, 100, 0.01)), row("z", samples(rng, 50, 0.01), status="crashed")]
    b = [row("x", samples(rng, 120, 0.01)), row("y", samples(rng, 100, 0.01)), row("z", samples(rng, 50, 0.01))]
    pairs = pair_rows(a, b)
    assert [p.verdict for p in pairs] == ["slower", "same", "a: crashed"]
    assert geomean_ratio(pairs) == pytest.approx(np.sqrt(1.2), rel=0.01)
    line = summary_line(pairs)
    assert "1 slower" in line and "1 same within noise" in line and "1 not compared" in line and "over 2 verified" in line


def _log(folder, run_id: str, machine_key: str, rows: list[dict]) -> str:
    with RunLog.create(folder, run_id, {"kind": "kernels", "runtime": {"name": "ort-cpu"},
                                        "host": {"machine": "box", "hostname": "box", "machine_key": machine_key}}) as log:
        for r in rows:
            log.append(r)
    return str(log.path)


def test_cli_warns_when_machines_differ(tmp_path, seed):
    rng = np.random.default_rng(seed)
    a = _log(tmp_path / "m1", "run-a", "box-zen4-8c-32g-avx512-bf16-aaaaaa", [row("g", samples(rng, 100, 0.01))])
    b = _log(tmp_path / "m2", "run-b", "box-zen2-8c-32g-avx2-bbbbbb", [row("g", samples(rng, 130, 0.01))])
    result = CliRunner().invoke(app, ["compare", a, b])
    assert result.exit_code == 0, result.output
    assert "slower" in result.output and "different machines" in result.output
    again = _log(tmp_path / "m1", "run-c", "box-zen4-8c-32g-avx512-bf16-aaaaaa", [row("g", samples(rng, 100, 0.01))])
    same = CliRunner().invoke(app, ["compare", a, again])
    assert "different machines" not in same.output and "1 same within noise" in same.output
