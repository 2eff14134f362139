"""`dbench compare`: verdicts on synthetic rounds whose answer is known (same, slower, too few
rounds, no noise floor), the table's false-discovery control, rows that cannot be compared saying
why, interleaved runs read directly, several runs a side, the csv/json formats, refusals of input
that compares nothing, and warnings carried from the runs."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.store.compare import MIN_ROUNDS, Side, compare_sides
from dbench.store.log import RunLog


def row(
    graph: str, medians: list[float] | None, status: str = "ok", verified: bool | None = True, variant: str = ""
) -> dict:
    """A result row with the fields compare reads; `medians` are its round medians (None: a schema-2 row)."""
    middle = float(np.median(medians)) if medians else 100.0
    return {
        "graph_id": graph,
        "status": status,
        "verified": verified,
        "median_us": middle,
        "variant": variant,
        "round_medians_us": medians,
        "samples": 10 * len(medians or [1]),
        "runtime": "ort-cpu",
    }


def rounds(rng, median: float, sd: float, n: int = 5) -> list[float]:
    return list(median * np.exp(sd * rng.standard_normal(n)))


def side(label: str, *runs: list[dict]) -> Side:
    return Side(
        label, [{r["graph_id"]: r for r in run} for run in runs], [f"{label}{i}" for i in range(len(runs))], ["box"]
    )


def test_identical_kernels_are_same_and_a_whole_table_rarely_changes(seed):
    rng = np.random.default_rng(seed)
    changed_tables = 0
    for _ in range(40):
        a = [row(f"g{i}", rounds(rng, 100 + i, 0.04)) for i in range(30)]
        b = [row(f"g{i}", rounds(rng, 100 + i, 0.04)) for i in range(30)]
        comparison = compare_sides(side("a", a), side("b", b))
        assert {p.verdict for p in comparison.pairs} <= {"same", "faster", "slower"}
        changed_tables += any(p.verdict != "same" for p in comparison.pairs)
    assert changed_tables <= 8  # FDR 5 %: a table of identical kernels shows a change about 5 % of the time


def test_a_ten_percent_slowdown_is_slower_with_its_ratio_and_resolvable_change(seed):
    rng = np.random.default_rng(seed)
    a = [row("x", rounds(rng, 100, 0.01)), row("y", rounds(rng, 100, 0.01))]
    b = [row("x", rounds(rng, 110, 0.01)), row("y", rounds(rng, 100, 0.01))]
    x, y = compare_sides(side("a", a), side("b", b)).pairs
    assert x.verdict == "slower" and x.ratio == pytest.approx(1.10, rel=0.03) and x.difference.low > 1
    assert x.difference.resolvable < 0.05 and x.q <= 0.05
    # y is unchanged: its verdict is `same` about 95 % of the time, which the identical-kernels test checks
    # over many tables (asserting it for one draw failed one seed in twenty, as it must)
    assert y.ratio == pytest.approx(1.0, abs=0.05) and y.q > x.q
    assert compare_sides(side("b", b), side("a", a)).pairs[0].verdict == "faster"


def test_a_table_of_separate_runs_too_noisy_to_see_10_percent_says_how_to_see_more(seed):
    """Two separate runs whose kernels' rounds spread by 30 % resolve no 10 % change: the summary says so
    and points to an interleaved run; tight kernels, or an interleaved comparison, get no such line."""
    from dbench.render.tables import compare_summary

    rng = np.random.default_rng(seed)
    noisy = [[row(f"g{i}", rounds(rng, 100, 0.3, 3)) for i in range(6)] for _ in range(2)]
    text = "\n".join(compare_summary(compare_sides(side("a", noisy[0]), side("b", noisy[1]))))
    assert "too noisy to resolve a 10% change" in text and "one interleaved run (dbench run --runtime a,b" in text
    tight = [[row(f"g{i}", rounds(rng, 100, 0.002, 3)) for i in range(6)] for _ in range(2)]
    assert "interleaved run" not in "\n".join(compare_summary(compare_sides(side("a", tight[0]), side("b", tight[1]))))
    paired = compare_sides(side("a", noisy[0]), side("b", noisy[1]), interleaved=True)
    assert "interleaved run (dbench" not in "\n".join(compare_summary(paired))


def test_an_interleaved_table_too_noisy_for_10_percent_says_how_many_rounds_would_do(seed):
    """Paired rounds whose log differences spread by 15 %: `same` that cannot resolve 10 %; each such
    kernel gets the rounds that would (in json too), and the summary gives their median; tight kernels,
    and tables of separate runs, get none."""
    from dbench.render.tables import compare_summary

    rng = np.random.default_rng(seed)
    drift = [np.exp(0.2 * rng.standard_normal(5)) for _ in range(6)]
    a = [row(f"g{i}", list(100 * drift[i] * np.exp(0.1 * rng.standard_normal(5)))) for i in range(6)]
    b = [row(f"g{i}", list(100 * drift[i] * np.exp(0.1 * rng.standard_normal(5)))) for i in range(6)]
    comparison = compare_sides(side("a", a), side("b", b), interleaved=True)
    noisy = [p for p in comparison.pairs if p.verdict == "same" and p.difference.resolvable > 0.10]
    assert noisy and all(p.rounds_to_resolve and p.rounds_to_resolve > 5 for p in noisy)
    assert all(p.to_dict()["rounds_to_resolve"] == p.rounds_to_resolve for p in comparison.pairs)
    needed = sorted(p.rounds_to_resolve for p in noisy)
    text = " ".join(" ".join(compare_summary(comparison)).split())
    median = needed[len(needed) // 2]
    assert (
        f"to resolve a 10% change on the {len(noisy)} too noisy, an interleaved run needs about {median} rounds "
        "as long "
        "as these"
    ) in text and "for the noisiest), from the noise its 5 rounds measured" in text
    assert f"--rounds {median} with --min-time raised {median}/5-fold" in text
    tight = [
        [row(f"g{i}", list(100 * drift[i] * np.exp(0.002 * rng.standard_normal(5)))) for i in range(6)]
        for _ in range(2)
    ]
    calm = compare_sides(side("a", tight[0]), side("b", tight[1]), interleaved=True)
    assert all(p.rounds_to_resolve is None for p in calm.pairs) and "rounds (median" not in " ".join(
        compare_summary(calm)
    )
    separate = compare_sides(side("a", a), side("b", b))
    assert all(p.rounds_to_resolve is None for p in separate.pairs) and "needs about" not in " ".join(
        compare_summary(separate)
    )


def test_a_same_whose_own_interval_excludes_one_says_the_table_decided_it():
    """One kernel of eight at p 0.015: its own 95 % interval is above 1, but over the table its adjusted q
    is above the false-discovery rate, so `same`; the table says why instead of a bare `same`."""
    from rich.console import Console

    from dbench.render.tables import compare_table

    steady = [100, 102, 98, 101, 99]
    a = [row(f"g{i}", steady) for i in range(8)]
    b = [row("g0", [104, 105, 101, 105.5, 102])] + [row(f"g{i}", [101, 99, 100, 98, 102]) for i in range(1, 8)]
    comparison = compare_sides(side("a", a), side("b", b))
    first = comparison.pairs[0]
    assert first.verdict == "same" and first.difference.low > 1 and first.difference.p < 0.05 < first.q
    console = Console(width=300, record=True)
    console.print(compare_table(comparison, 300))
    lines = [line for line in console.export_text().splitlines() if "g0 " in line or "g1 " in line]
    assert f"same (q {first.q:.2f} over the table, above its 5% false-discovery rate)" in lines[0]
    assert "q " not in lines[1] and "same" in lines[1]


def test_there_is_no_noise_floor_a_small_change_in_tight_rounds_is_found(seed):
    """The old 2 % floor called any change under 2 % the same; tight rounds resolve half a percent."""
    rng = np.random.default_rng(seed)
    (pair,) = compare_sides(
        side("a", [row("x", rounds(rng, 100, 0.0005, 8))]), side("b", [row("x", rounds(rng, 100.5, 0.0005, 8))])
    ).pairs
    assert pair.verdict == "slower" and pair.difference.resolvable < 0.002


def test_too_few_rounds_never_gives_a_verdict_however_large_the_change():
    for n_a, n_b in ((1, 5), (2, 2), (MIN_ROUNDS - 1, MIN_ROUNDS)):
        a = [row("x", [100.0 + i for i in range(n_a)])]
        b = [row("x", [300.0 + i for i in range(n_b)])]
        (pair,) = compare_sides(side("a", a), side("b", b)).pairs
        assert pair.verdict == "too few rounds" and f"{MIN_ROUNDS} a side needed" in pair.detail
        assert pair.ratio == pytest.approx(np.median(b[0]["round_medians_us"]) / np.median(a[0]["round_medians_us"]))


def test_rows_that_cannot_be_compared_say_why(seed):
    # "z" is the one pair that compares: the same rounds a side, so `same` whatever the seed (a side of
    # five identical 100s against noisy rounds was `slower` in 5 % of seeds, as Welch's test should be)
    rng = np.random.default_rng(seed)
    good = rounds(rng, 100, 0.01)
    pairs = compare_sides(
        side("a", [row("m", good), row("u", good, verified=None), row("o", good), row("old", None), row("z", good)]),
        side("b", [row("m", good, status="mismatch"), row("u", good), row("old", None), row("z", good)]),
    ).pairs
    verdicts = {p.graph_id: p.verdict for p in pairs}
    assert verdicts == {"m": "b: mismatch", "u": "a: unverified", "o": "only in a", "old": "no rounds", "z": "same"}
    old = next(p for p in pairs if p.graph_id == "old")
    assert old.ratio == pytest.approx(1.0) and old.difference is None


def _log(folder, run_id: str, machine_key: str, rows: list[dict], quick: bool = False, load: float = 0.1) -> str:
    header = {
        "kind": "kernels",
        "runtime": {"name": "ort-cpu"},
        "request": {"quick": quick},
        "host": {
            "machine": "box",
            "hostname": "box",
            "machine_key": machine_key,
            "load_start": [load],
            "cpu_affinity": 2,
        },
    }
    with RunLog.create(folder, run_id, header) as log:
        for r in rows:
            log.append({**r, "load_1m": load})
    return str(log.path)


def test_an_interleaved_run_is_compared_by_its_paired_rounds(tmp_path, seed):
    """Drift shared by both variants round by round: the paired test sees through it."""
    rng = np.random.default_rng(seed)
    drift = np.exp(0.2 * rng.standard_normal(5))
    noise = np.exp(0.005 * rng.standard_normal((2, 5)))
    rows = [
        row("g", list(100 * drift * noise[0]), variant="ort-cpu threads=1"),
        row("g", list(70 * drift * noise[1]), variant="ort-cpu threads=2"),
    ]
    path = _log(tmp_path, "run-ab", "box-key", rows)
    result = CliRunner().invoke(app, ["compare", path])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "a = ort-cpu threads=1" in text and "b = ort-cpu threads=2" in text and "paired t over the rounds" in text
    assert "faster" in text and "1 changed (1 faster, 0 slower)" in text


def test_several_runs_a_side_use_their_spread(tmp_path, seed):
    rng = np.random.default_rng(seed)
    for i in range(3):
        _log(
            tmp_path / "m",
            f"run-a{i}",
            "box-key",
            [row("g", rounds(rng, 100 * np.exp(0.05 * rng.standard_normal()), 0.005))],
        )
        _log(tmp_path / "m", f"run-b{i}", "box-key", [row("g", rounds(rng, 140, 0.005))])
    result = CliRunner().invoke(
        app,
        [
            "compare",
            "run-a*",
            "--vs",
            "run-b0",
            "--vs",
            "run-b1",
            "--vs",
            "run-b2",
            "--out",
            str(tmp_path),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    (table,) = json.loads(result.stdout)
    assert table["a_runs"] == ["run-a0", "run-a1", "run-a2"] and table["b_runs"] == ["run-b0", "run-b1", "run-b2"]
    (kernel,) = table["kernels"]
    assert kernel["method"] == "pooled over runs" and kernel["df"] == 4 and kernel["a_runs"] == 3
    assert kernel["verdict"] == "slower" and kernel["low"] > 1


def test_csv_and_json_have_one_row_per_kernel(tmp_path, seed):
    rng = np.random.default_rng(seed)
    a = _log(tmp_path / "m1", "run-a", "box-key", [row("g", rounds(rng, 100, 0.01)), row("h", rounds(rng, 100, 0.01))])
    b = _log(tmp_path / "m1", "run-b", "box-key", [row("g", rounds(rng, 120, 0.01)), row("h", [5.0, 5.0])])
    table = CliRunner().invoke(app, ["compare", a, b, "--format", "csv"])
    assert table.exit_code == 0, table.output
    records = list(csv.DictReader(io.StringIO(table.stdout)))
    assert [r["graph_id"] for r in records] == ["g", "h"] and records[0]["verdict"] == "slower"
    assert float(records[0]["ratio"]) == pytest.approx(1.2, rel=0.05) and records[1]["verdict"] == "too few rounds"
    assert {"low", "high", "resolvable", "a_rounds", "b_rounds", "a_samples", "q"} <= set(records[0])
    (summary,) = json.loads(CliRunner().invoke(app, ["compare", a, b, "--format", "json"]).stdout)
    assert summary["counts"]["slower"] == 1 and summary["counts"]["too few rounds"] == 1 and summary["fdr"] == 0.05


def test_compare_refuses_what_compares_nothing(tmp_path, seed):
    rng = np.random.default_rng(seed)
    a = _log(tmp_path / "m1", "run-a", "box-key", [row("g", rounds(rng, 100, 0.01))])
    b = _log(tmp_path / "m1", "run-b", "box-key", [row("h", rounds(rng, 100, 0.01))])
    c = _log(tmp_path / "m1", "run-c", "box-key", [row("g", rounds(rng, 100, 0.01))])
    for args, phrase in (
        ([a, a], "a run compared with itself says nothing"),
        ([a, b], "have no graph verified on both sides"),
        ([a], "has one variant"),
        ([a, b, c], "say which are compared with which"),
        ([a, b, "--format", "xml"], "unknown format 'xml'"),
        ([a, b, "--fdr", "0"], "--fdr 0 must be a rate between 0 and 1"),
    ):
        result = CliRunner().invoke(app, ["compare", *args])
        assert result.exit_code == 2 and phrase in " ".join(result.output.split()), (args, result.output)
        assert "Traceback" not in result.output


def test_compare_carries_the_runs_warnings_and_warns_when_machines_differ(tmp_path, seed):
    rng = np.random.default_rng(seed)
    a = _log(
        tmp_path / "m1", "run-a", "box-zen4-8c-32g-avx512-bf16-aaaaaa", [row("g", rounds(rng, 100, 0.01))], load=5.0
    )
    b = _log(tmp_path / "m2", "run-b", "box-zen2-8c-32g-avx2-bbbbbb", [row("g", rounds(rng, 130, 0.01))], quick=True)
    result = CliRunner().invoke(app, ["compare", a, b])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "slower" in text and "different machines" in text
    assert "run-a ran on a busy machine (1-minute load 5.0 at its start" in text and "run-b is a --quick run" in text


def test_an_a_a_run_interleaves_one_runtime_with_itself_and_compares_paired(tmp_path):
    """`--runtime ort-cpu,ort-cpu`: a real run whose two variants are the same settings, labelled #1 and
    #2, timed round by round side by side; compare reads it with the paired test."""
    import subprocess
    import sys

    from tests.helpers import write_csv

    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dbench",
            "run",
            "--kernels",
            str(kernels),
            "--quick",
            "--min-time",
            "0.02",
            "--profile-runs",
            "1",
            "--threads",
            "1",
            "--runtime",
            "ort-cpu,ort-cpu",
            "--out",
            str(tmp_path / "res"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert sorted(r["variant"] for r in summary["rows"]) == ["ort-cpu #1", "ort-cpu #2"]
    result = CliRunner().invoke(app, ["compare", summary["log"], "--format", "json"])
    assert result.exit_code == 0, result.output
    (table,) = json.loads(result.stdout)
    assert (table["a"], table["b"]) == ("ort-cpu #1", "ort-cpu #2") and table["method"].startswith("paired t")
    (kernel,) = table["kernels"]
    assert kernel["method"] == "paired over rounds" and kernel["a_rounds"] == kernel["b_rounds"] == 3
