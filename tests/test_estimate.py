"""The plan before a run: its estimate from earlier rows, the roofline or the settings alone, the ETA's
per-job seconds, and `--budget` cutting sampling (then the profile) to fit, or refusing in one line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.errors import UsageError
from dbench.orchestrator.estimate import (
    MIN_SCALE,
    PROCESS_START_S,
    GraphCost,
    duration,
    estimate,
    fit_budget,
    graph_costs,
    least_call_s,
    parse_duration,
    round_seconds,
)
from dbench.store.metadata import machine_name
from dbench.worker.profiling import CPU_FLOPS_PER_THREAD
from dbench.worker.timing import QUICK, TimingConfig
from tests.helpers import write_csv

runner = CliRunner()
KEYS = [("a", "ort-cpu", "ort-cpu"), ("b", "ort-cpu", "ort-cpu")]


def _run(args: list[str]):
    return runner.invoke(app, ["run", *args])


def _header(folder) -> dict:
    (log,) = sorted(folder.glob("*/*.jsonl"))[-1:]
    return json.loads(log.read_text().splitlines()[0])


@pytest.mark.parametrize(("text", "seconds"), [("600", 600), ("90s", 90), ("10m", 600), ("1.5h", 5400), (" 2M ", 120)])
def test_durations_parse(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "0", "-5m", "inf", "nan", "10x", "m"])
def test_bad_durations_are_refused_naming_the_fix(text):
    with pytest.raises(UsageError, match="not a positive duration; write e.g. 600, 90s, 10m or 1.5h"):
        parse_duration(text)


def test_duration_words():
    assert [duration(s) for s in (4.6, 190, 3900)] == ["5 s", "3 min 10 s", "1 h 5 min"]


def test_rounds_and_round_seconds_follow_the_timing_settings():
    timing = TimingConfig()  # 3 rounds sharing 2 s to 10 s
    rounds, first, later = round_seconds(0.001, timing, fixed_s=0.1)
    warm = max(timing.warmup_time, 0.001)
    assert rounds == 3 and first == pytest.approx(warm + timing.min_time / 3)
    assert later == pytest.approx(warm + timing.min_time / 3 - 0.1 - warm)  # a later round pays its own work
    slow_rounds, slow_first, _ = round_seconds(
        8.0, timing
    )  # a call over the round's share: fewer rounds, one call each
    assert slow_rounds == 1 and slow_first == pytest.approx(8.0 + 8.0)
    rounds, first, later = round_seconds(0.65, timing, fixed_s=0.5)  # 3 samples, then a cold call and 2 a round
    assert rounds == 3 and first == pytest.approx(0.65 * 4) and later == pytest.approx(0.65 * 3)


def test_estimate_adds_rounds_processes_and_the_first_rounds_checks():
    costs = {
        ("a", "ort-cpu"): GraphCost(0.001, 0.1, 0.6, 0.4, "earlier row"),
        ("b", "ort-cpu"): GraphCost(0.0, 0.05, 0.0, 0.05, "settings only"),
    }
    plan = estimate(costs, KEYS, QUICK, verify=True, profile=True, variants=1)
    rounds, first, later = round_seconds(0.001, QUICK, 0.1)
    assert plan.jobs[("a", "ort-cpu", 0)] == pytest.approx(0.1 + first + 1.0)  # verified and profiled once
    assert plan.jobs[("a", "ort-cpu", rounds - 1)] == pytest.approx(0.1 + later)
    assert plan.total_s == pytest.approx(sum(plan.jobs.values()) + PROCESS_START_S * QUICK.rounds)
    assert plan.sources == {"earlier row": 1, "roofline": 0, "settings only": 1}
    assert plan.describe().startswith("at least ")  # a graph without any figure makes the total a lower bound
    unchecked = estimate(costs, KEYS, QUICK, verify=False, profile=False, variants=1)
    assert unchecked.total_s == pytest.approx(plan.total_s - 1.0 - 0.05)
    unprofiled = estimate(costs, KEYS, QUICK, verify=True, profile=False, variants=1)
    assert unprofiled.total_s == pytest.approx(plan.total_s - 0.4 - 0.05)
    resumed = estimate(costs, KEYS, QUICK, verify=True, profile=True, variants=1, measured={("a", "ort-cpu"): rounds})
    assert not any(key[0] == "a" for key in resumed.jobs)


def test_fit_budget_cuts_sampling_then_the_profile_and_says_so():
    costs = {
        ("a", "ort-cpu"): GraphCost(0.0005, 0.1, 0.1, 0.2, "earlier row"),
        ("b", "ort-cpu"): GraphCost(0.0005, 0.1, 0.5, 2.5, "earlier row"),
    }
    timing = TimingConfig()
    full = estimate(costs, KEYS, timing, True, True, 1).total_s
    same, profile, notes = fit_budget(full + 1, costs, KEYS, timing, True, True, 1)
    assert same == timing and profile and notes == []
    cut, profile, notes = fit_budget(full - 1, costs, KEYS, timing, True, True, 1)
    assert profile and MIN_SCALE * timing.min_time <= cut.min_time < timing.min_time and len(notes) == 1
    assert estimate(costs, KEYS, cut, True, True, 1).total_s <= full - 1 + 0.01
    assert "sampling cut to" in notes[0] and "wider intervals" in notes[0]
    floor_with_profile = estimate(costs, KEYS, _scaled(timing, MIN_SCALE), True, True, 1).total_s
    floor = estimate(costs, KEYS, _scaled(timing, MIN_SCALE), True, False, 1).total_s
    assert floor < floor_with_profile
    _, profile, notes = fit_budget((floor + floor_with_profile) / 2, costs, KEYS, timing, True, True, 1)
    assert not profile and any("no per-node profile" in n for n in notes)
    with pytest.raises(UsageError, match=r"cannot hold this run: it needs at least .* raise --budget"):
        fit_budget(floor * 0.9, costs, KEYS, timing, True, True, 1)


def _scaled(timing: TimingConfig, scale: float) -> TimingConfig:
    from dataclasses import replace

    return replace(timing, min_time=timing.min_time * scale, max_time=timing.max_time * scale)


def test_costs_come_from_the_roofline_when_no_row_has_run(tmp_path):
    from dbench.orchestrator.request import RunRequest
    from dbench.sources.resolve import build_items

    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "512,512,512,0,0")
    items = build_items(RunRequest(kernels=str(kernels)), "qdq")
    folder = tmp_path / "machine"
    bound = graph_costs(items, {"ort-cpu": 2}, folder)[(items[0].spec.id, "ort-cpu")]
    assert bound.source == "settings only" and bound.call_s == pytest.approx(
        2 * 512**3 / (CPU_FLOPS_PER_THREAD["fp32"] * 2)
    )
    folder.mkdir()
    (folder / "peak.json").write_text(json.dumps({"gemm_tflops": {"ort-cpu": {"fp32": 0.1}}, "triad_gbps": 10.0}))
    cost = graph_costs(items, {"ort-cpu": 2}, folder)[(items[0].spec.id, "ort-cpu")]
    assert cost.source == "roofline" and cost.call_s == pytest.approx(2 * 512**3 / 0.1e12)


def test_a_big_decode_gemv_is_costed_by_drawing_and_packing_its_weight(tmp_path):
    """Llama-3.2-1B's LM head at decode, 128256 x 2048 (1 GB in fp32): its few microseconds of FLOPs say
    nothing of a round, which draws and pre-packs the weight; the plan counts both every round."""
    from dbench.orchestrator.estimate import DRAWING_BYTES_PER_S, FIXED_ROUND_S, PACKING_BYTES_PER_S
    from dbench.orchestrator.request import RunRequest
    from dbench.sources.resolve import build_items

    items = build_items(
        RunRequest(kernels=str(write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "128256,1,2048,0,0"))), "qdq"
    )
    spec = items[0].spec
    cost = graph_costs(items, {"ort-cpu": 2}, tmp_path / "none")[(spec.id, "ort-cpu")]
    weight = 128256 * 2048 * 4
    drawn = sum(t.nbytes for t in spec.inputs)
    assert cost.round_s == pytest.approx(FIXED_ROUND_S + weight / PACKING_BYTES_PER_S + drawn / DRAWING_BYTES_PER_S)
    assert cost.round_s > 5 * cost.call_s and cost.round_s > 5.0


def test_without_rows_or_peak_a_cpu_call_is_bounded_by_its_flops_and_a_gpu_call_is_not(tmp_path):
    from dbench.orchestrator.request import RunRequest
    from dbench.sources.resolve import build_items

    items = build_items(
        RunRequest(kernels=str(write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "4096,4096,4096,0,0"))), "qdq"
    )
    spec = items[0].spec
    assert least_call_s(spec, "ort-cpu", 1) == pytest.approx(2 * 4096**3 / CPU_FLOPS_PER_THREAD["fp32"])
    assert least_call_s(spec, "ort-cpu", 4) == pytest.approx(least_call_s(spec, "ort-cpu", 1) / 4)
    assert least_call_s(spec, "torch-cuda", 1) == 0.0  # a GPU is not bound by a CPU thread's rate
    costs = graph_costs(items, {"ort-cpu": 1}, tmp_path / "none")
    rounds, first, _ = round_seconds(costs[(spec.id, "ort-cpu")].call_s, TimingConfig())
    assert first >= least_call_s(spec, "ort-cpu", 1)  # the plan's lower bound counts at least the warm-up call


def test_a_run_prints_its_plan_and_the_next_one_plans_from_its_rows(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "8,8,8,0,0")
    args = [
        "--kernels",
        str(kernels),
        "--quick",
        "--min-time",
        "0.01",
        "--profile-runs",
        "0",
        "--threads",
        "1",
        "--out",
        str(tmp_path / "res"),
    ]
    first = _run(args)
    assert first.exit_code == 0, first.output
    assert "plan: at least " in first.output and "2 from the timing settings and a FLOP bound" in first.output
    assert _header(tmp_path / "res")["estimate_s"] > 0
    second = _run(args)
    assert second.exit_code == 0, second.output
    assert "plan: about " in second.output and "(2 from earlier rows of this machine)" in second.output
    assert (tmp_path / "res" / machine_name()).is_dir()


def test_budget_cuts_sampling_records_it_and_resume_keeps_it(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "8,8,8,0,0")
    out = tmp_path / "res"
    done = _run(["--kernels", str(kernels), "--threads", "1", "--out", str(out), "--budget", "5s"])
    assert done.exit_code == 0, done.output
    assert "--budget gave up: sampling cut to" in done.output
    header = _header(out)
    assert header["budget_gave_up"] and header["request"]["budget"] == 5
    assert (
        header["request"]["min_time"] < TimingConfig().min_time
        and header["timing"]["min_time"] == header["request"]["min_time"]
    )
    roomy = _run(["--kernels", str(kernels), "--threads", "1", "--quick", "--out", str(out), "--budget", "1h"])
    assert roomy.exit_code == 0 and "--budget gave up" not in roomy.output and "budget_gave_up" not in _header(out)


def test_a_budget_nothing_fits_is_refused_before_anything_is_written(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "8,8,8,0,0")
    done = _run(["--kernels", str(kernels), "--out", str(tmp_path / "res"), "--budget", "1s"])
    assert done.exit_code == 2
    assert "error: --budget 1 s cannot hold this run" in done.output and "Traceback" not in done.output
    assert not list((tmp_path / "res").glob("*/*.jsonl"))


def test_a_round_cost_cap_gives_costly_graphs_one_round_in_the_plan():
    """--quick's cap: a round whose inputs, preparing and warm-up cost more than its share of --max-time
    is the graph's only round; a cheap graph keeps all three."""
    cap = QUICK.round_cost_cap * QUICK.max_time / QUICK.rounds
    assert round_seconds(0.001, QUICK, fixed_s=cap / 2)[0] == QUICK.rounds
    assert round_seconds(0.001, QUICK, fixed_s=cap * 2)[0] == 1
    assert round_seconds(0.001, TimingConfig(), fixed_s=100.0)[0] == 3  # no cap by default


def test_the_plan_leaves_out_a_profile_over_the_quick_cap():
    cap = QUICK.profile_cap_s()
    costs = {
        ("a", "ort-cpu"): GraphCost(0.001, 0.01, 0.0, cap * 4, "earlier row"),
        ("b", "ort-cpu"): GraphCost(0.001, 0.01, 0.0, cap / 4, "earlier row"),
    }
    with_profile = estimate(costs, KEYS, QUICK, verify=False, profile=True, variants=1)
    without = estimate(costs, KEYS, QUICK, verify=False, profile=False, variants=1)
    assert with_profile.total_s == pytest.approx(without.total_s + cap / 4)  # only b's profile is within the cap
