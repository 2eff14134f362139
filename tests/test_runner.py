"""The run loop end to end on ONNX Runtime CPU: verified rows, isolation from crashes and hangs,
bad graph folders, resume after SIGKILL, Ctrl-C, and the CLI's one-line errors."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import onnx
import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.gen.manifest import read_manifest, sha256, write_manifest
from dbench.orchestrator.request import COMPARE_ROUNDS, RunRequest
from dbench.stats.interleave import rotated
from tests.helpers import write_csv
from tests.processes import process_tree

runner = CliRunner()
FAST = ("--quick", "--profile-runs", "2")


@pytest.fixture
def kernels(tmp_path) -> Path:
    """Six small GEMMs and one convolution (user kernels, so every run is quick)."""
    path = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", *[f"{16 * i},8,32,{i % 2},0" for i in range(1, 7)])
    return path


def rows_of(out: Path) -> list[dict]:
    (log,) = out.glob("*/*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()[1:] if '"type": "result"' in line]


def round_lines(out: Path) -> list[dict]:
    """The round records of the run log under `out`, in the order they were written."""
    (log,) = out.glob("*/*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()[1:] if '"type": "round"' in line]


def wait_for_rows(out: Path, count: int, seconds: float = 60, of=rows_of) -> None:
    """Poll until the run log under `out` holds `count` rows (or round records, with `of=round_lines`;
    the run goes on in another process)."""
    deadline = time.time() + seconds
    while time.time() < deadline and not (list(out.glob("*/*.jsonl")) and len(of(out)) >= count):
        time.sleep(0.2)


@pytest.fixture
def dbench() -> Iterator[Callable[..., subprocess.Popen]]:
    """Starts `python -m dbench ARGS` in a process tree of its own; whatever is left of each when the
    test ends (an assertion failed before the run did) is ended by process group."""
    with contextlib.ExitStack() as trees:

        def start(*args: str, env: dict | None = None) -> subprocess.Popen:
            command = [sys.executable, "-m", "dbench", *args]
            popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
            return trees.enter_context(process_tree(command, {**os.environ, **(env or {})}, **popen))

        yield start


def worker_children(pid: int) -> list[int]:
    """The live dbench worker processes whose parent is `pid` (from /proc); other children, such as a
    short-lived command the run starts to read the machine's metadata, are not workers."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and b"dbench.worker" in command:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_run_logs_verified_rows_with_metadata(kernels, tmp_path):
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", "--kernels", str(kernels), *FAST, "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = rows_of(out)
    assert len(rows) == 6 and {r["status"] for r in rows} == {"ok"}
    row = rows[0]
    assert row["verified"] is True and row["error"] < 1e-4 and row["tolerance"] == 1e-3
    assert row["precision_executed"] == "fp32" and not row["precision_fallback"]
    assert row["median_us"] > 0 and row["p10_us"] <= row["median_us"] <= row["p90_us"] <= row["p99_us"]
    assert row["kernel_time_us"] > 0 and row["nodes"] and row["tflops"] > 0 and row["gbps"] > 0
    assert row["runtime"] == "ort-cpu" and row["runtime_options"]["intra_op_num_threads"] == os.cpu_count()
    assert row["weights"] == "const" and row["peak_rss_bytes"] > 0
    (log,) = out.glob("*/*.jsonl")
    header = json.loads(log.read_text().splitlines()[0])
    assert header["schema_version"] == 3 and header["host"]["cpu_count"] == os.cpu_count()
    assert "onnxruntime" in header["host"]["packages"] and header["timing"]["min_samples"] == 3
    assert header["timing"]["rounds"] == 3 and [v["label"] for v in header["variants"]] == ["ort-cpu"]
    rounds = [json.loads(line) for line in log.read_text().splitlines() if '"type": "round"' in line]
    assert len(rounds) == 18 and {r["round"] for r in rounds} == {1, 2, 3}
    for row in rows:  # every row from its three rounds, each round's median kept exactly
        mine = sorted((r for r in rounds if r["graph_id"] == row["graph_id"]), key=lambda r: r["round"])
        assert row["rounds"] == 3 and row["round_medians_us"] == [r["outcome"]["stats"]["median_us"] for r in mine]
        assert sum(row["round_sizes"]) == len(row["samples_us"]) and row["samples"] == sum(
            r["outcome"]["stats"]["samples"] for r in mine
        )
        assert row["variant"] == "ort-cpu" and set(row["percentiles_us"]) == {"50", "90", "99"}
    # verification and the profile come from the first round only; later rounds only time
    assert all(r["outcome"]["verification"] for r in rounds if r["round"] == 1)
    assert not any(r["outcome"]["verification"] or r["outcome"]["nodes"] for r in rounds if r["round"] > 1)
    assert log.with_suffix(".parquet").exists() and log.with_suffix(".csv").exists()
    assert "6 ok" in result.stdout


def test_large_outputs_are_verified_on_a_sample_of_rows(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "8,300,16,0,1")
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", "--kernels", str(kernels), *FAST, "--out", str(out)])
    assert result.exit_code == 0, result.output
    (row,) = rows_of(out)
    assert row["status"] == "ok" and row["verified"] and row["verified_rows"] == 256


def test_unsupported_precision_is_a_row_not_a_crash(kernels, tmp_path):
    out = tmp_path / "res"
    result = runner.invoke(
        app, ["run", "--kernels", str(kernels), "--id", "gemm_m16_*", "--precision", "bf16", *FAST, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    (row,) = rows_of(out)
    assert row["status"] == "unsupported" and "NOT_IMPLEMENTED" in row["message"]


@pytest.mark.slow
def test_crashing_kernel_is_recorded_and_the_run_goes_on(kernels, tmp_path, dbench):
    out = tmp_path / "res"
    proc = dbench(
        "run", "--kernels", str(kernels), *FAST, "--out", str(out), env={"DBENCH_WORKER_CRASH_ON": "gemm_m48_"}
    )
    proc.communicate(timeout=120)
    assert proc.returncode == 3, "a crashed row makes the run exit 3"
    rows = {r["kernel_id"]: r for r in rows_of(out)}
    assert rows["gemm_m48_n8_k32_tn"]["status"] == "crashed" and "SIGSEGV" in rows["gemm_m48_n8_k32_tn"]["message"]
    assert sum(r["status"] == "ok" for r in rows.values()) == 5


@pytest.mark.slow
def test_hanging_kernel_times_out_and_the_run_goes_on(kernels, tmp_path, dbench):
    out = tmp_path / "res"
    proc = dbench(
        "run",
        "--kernels",
        str(kernels),
        *FAST,
        "--timeout",
        "5",
        "--out",
        str(out),
        env={"DBENCH_WORKER_HANG_ON": "gemm_m32_"},
    )
    proc.communicate(timeout=120)
    rows = {r["kernel_id"]: r for r in rows_of(out)}
    assert rows["gemm_m32_n8_k32_nn"]["status"] == "timeout"
    assert sum(r["status"] == "ok" for r in rows.values()) == 5


@pytest.mark.slow
def test_out_of_memory_becomes_an_oom_row(kernels, tmp_path):
    big = write_csv(tmp_path / "big.csv", "m,n,k,a_t,b_t", "16384,16384,16384,0,0", "16,8,32,0,0")
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", "--kernels", str(big), *FAST, "--memory-limit", "1.5", "--out", str(out)])
    assert result.exit_code == 3, result.output
    rows = {r["kernel_id"]: r for r in rows_of(out)}
    big, small = rows["gemm_m16384_n16384_k16384_nn"], rows["gemm_m16_n8_k32_nn"]
    assert big["status"] == "oom", big["message"]  # failed once in a full local run, message unseen:
    assert small["status"] == "ok", small["message"]  # the messages say why next time


@pytest.mark.slow
def test_worker_killed_from_outside_is_crashed_not_oom(kernels, tmp_path, dbench):
    """A SIGKILL with no out-of-memory record in the cgroup is not called oom: the row says crashed
    and who killed it, and the run goes on."""
    out = tmp_path / "res"
    proc = dbench(
        "run",
        "--kernels",
        str(kernels),
        *FAST,
        "--rounds",
        "1",
        "--out",
        str(out),
        env={"DBENCH_WORKER_HANG_ON": "gemm_m32_"},
    )
    try:
        wait_for_rows(out, 1)
        deadline = time.time() + 30
        while time.time() < deadline and not worker_children(proc.pid):
            time.sleep(0.1)
        time.sleep(1)  # the worker has the hanging graph by now
        for worker in worker_children(proc.pid):
            os.kill(worker, signal.SIGKILL)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    row = {r["kernel_id"]: r for r in rows_of(out)}["gemm_m32_n8_k32_nn"]
    assert (
        row["status"] == "crashed" and "SIGKILL from outside dbench (no out-of-memory record found)" in row["message"]
    )
    assert len(rows_of(out)) == 6 and proc.returncode == 3


@pytest.mark.slow
def test_killed_run_resumes_with_every_graph_exactly_once(kernels, tmp_path, dbench):
    """Killed in its first round: the resumed run keeps the rounds measured before the kill, measures
    each missing round once, and writes each graph's row once, from all its rounds."""
    out = tmp_path / "res"
    proc = dbench(
        "run", "--kernels", str(kernels), *FAST, "--out", str(out), env={"DBENCH_WORKER_HANG_ON": "gemm_m64_"}
    )
    wait_for_rows(out, 3, of=round_lines)
    os.killpg(proc.pid, signal.SIGKILL)  # parent and worker, mid-run
    proc.wait()
    before = round_lines(out)
    assert len(before) == 3 and rows_of(out) == []
    run_id = next(out.glob("*/*.jsonl")).stem
    result = runner.invoke(app, ["run", "--resume", run_id, "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = rows_of(out)
    assert sorted(r["graph_id"] for r in rows) == sorted({r["graph_id"] for r in rows}) and len(rows) == 6
    assert {r["status"] for r in rows} == {"ok"} and {r["rounds"] for r in rows} == {3}
    measured = [(r["graph_id"], r["round"]) for r in round_lines(out)]
    assert len(measured) == len(set(measured)) == 18 and round_lines(out)[:3] == before
    for line in before:  # the rounds from before the kill are the rows' first rounds
        (row,) = [r for r in rows if r["graph_id"] == line["graph_id"]]
        assert row["round_medians_us"][0] == line["outcome"]["stats"]["median_us"]


@pytest.mark.slow
def test_a_crash_in_a_later_round_makes_the_row_crashed_and_names_the_round(kernels, tmp_path, dbench):
    out = tmp_path / "res"
    proc = dbench(
        "run", "--kernels", str(kernels), *FAST, "--out", str(out), env={"DBENCH_WORKER_CRASH_ON": "gemm_m48_@2"}
    )
    proc.communicate(timeout=300)
    assert proc.returncode == 3
    rows = {r["kernel_id"]: r for r in rows_of(out)}
    crashed = rows["gemm_m48_n8_k32_tn"]
    assert (
        crashed["status"] == "crashed"
        and crashed["message"].startswith("round 2 of 3: ")
        and "SIGSEGV" in crashed["message"]
    )
    assert crashed["median_us"] is None and crashed["verified"] is True  # round 1 had verified it
    assert [r["rounds"] for r in rows.values() if r["status"] == "ok"] == [3] * 5


@pytest.mark.slow
def test_sigkilled_run_leaves_no_worker_behind(kernels, tmp_path, dbench):
    """SIGKILL of `dbench run` alone (not its group): the worker, in its own process group, dies with
    it (PR_SET_PDEATHSIG) instead of hanging on."""
    proc = dbench(
        "run",
        "--kernels",
        str(kernels),
        *FAST,
        "--out",
        str(tmp_path / "res"),
        env={"DBENCH_WORKER_HANG_ON": "gemm_m16_"},
    )
    workers: list[int] = []
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not workers:
            workers = worker_children(proc.pid)
            time.sleep(0.2)
        assert workers, "the run started no worker"
        assert all(os.getpgid(w) != os.getpgid(proc.pid) for w in workers), "the worker has its own process group"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.time() + 10
        while time.time() < deadline and any(alive(w) for w in workers):
            time.sleep(0.1)
        assert not [w for w in workers if alive(w)], "a worker outlived its killed parent"
    finally:
        for pid in [proc.pid, *workers]:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        proc.communicate()


@pytest.mark.slow
def test_weights_are_fed_for_training_graphs_and_constant_for_inference(tmp_path):
    """`--weights auto`: the train-only GEMM feeds its weights per call, the inference one holds them as
    constants; the row says which, and `--weights input` overrides both."""
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t,suite", "16,8,32,0,0,train", "32,8,32,0,0,inference_server")
    for mode, expected in (
        ("auto", {"gemm_m16_n8_k32_nn": "input", "gemm_m32_n8_k32_nn": "const"}),
        ("input", {"gemm_m16_n8_k32_nn": "input", "gemm_m32_n8_k32_nn": "input"}),
    ):
        out = tmp_path / mode
        result = runner.invoke(app, ["run", "--kernels", str(kernels), "--weights", mode, *FAST, "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert {r["kernel_id"]: r["weights"] for r in rows_of(out)} == expected


@pytest.mark.parametrize("weights", ["const", "input"])
def test_the_runtime_receives_the_jobs_weights_mode(weights, monkeypatch):
    """The Job's weights mode reaches the runtime: the weight arrays as constants, or none (fed per call)."""
    from dbench.catalog import GemmKernel
    from dbench.gen import gemm
    from dbench.runtimes.base import RuntimeOptions
    from dbench.runtimes.onnxruntime import OrtCpu
    from dbench.worker import main as worker
    from dbench.worker.timing import QUICK

    received: list[list[str]] = []
    prepare = OrtCpu.prepare

    def recording_prepare(self, model, spec, constants):
        received.append(sorted(constants))
        return prepare(self, model, spec, constants)

    monkeypatch.setattr(OrtCpu, "prepare", recording_prepare)
    graph = gemm.build(GemmKernel(m=32, n=8, k=16, a_t=False, b_t=False), "fp32", "fwd", "gemm")
    job = worker.Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime="ort-cpu",
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        weights=weights,
        profile_runs=0,
    )
    assert graph.spec.weights and worker.execute(job).status == "ok"
    assert received == [sorted(t.name for t in graph.spec.weights) if weights == "const" else []]


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_keeps_finished_rows(stop, kernels, tmp_path, dbench):
    """Ctrl-C, or SIGTERM as a scheduler or `kill` sends it: rows kept, one line saying how to finish."""
    out = tmp_path / "res"
    proc = dbench(
        "run", "--kernels", str(kernels), *FAST, "--out", str(out), env={"DBENCH_WORKER_HANG_ON": "gemm_m48_"}
    )
    wait_for_rows(out, 2, of=round_lines)
    proc.send_signal(stop)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "interrupted" in stderr and "--resume" in stderr and "Traceback" not in stderr
    assert len(round_lines(out)) == 2 and rows_of(out) == []


@pytest.fixture
def graph_folder(tmp_path, kernels) -> Path:
    result = runner.invoke(app, ["gen", "--kernels", str(kernels), "--out", str(tmp_path / "g")])
    assert result.exit_code == 0
    return tmp_path / "g" / "all"


@pytest.mark.slow
def test_corrupt_graph_fails_alone(graph_folder, tmp_path):
    entries = read_manifest(graph_folder)
    (graph_folder / entries[0].file).write_bytes(b"\x08\x07not a protobuf")
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", "--graphs", str(graph_folder), *FAST, "--out", str(out)])
    assert result.exit_code == 3, result.output
    rows = {r["graph_id"]: r for r in rows_of(out)}
    bad = rows[entries[0].spec.id]
    assert bad["status"] == "failed" and (
        "cannot load the graph" in bad["message"] or "does not match its manifest" in bad["message"]
    )
    assert sum(r["status"] == "ok" for r in rows.values()) == 5


@pytest.mark.slow
def test_wrong_answer_is_a_mismatch(graph_folder, tmp_path):
    """A graph that computes 2·A·B + C where the manifest promises A·B + C must not pass as ok."""
    entries = read_manifest(graph_folder)
    path = graph_folder / entries[1].file
    model = onnx.load(path)
    for attribute in model.graph.node[0].attribute:
        if attribute.name == "alpha":
            attribute.f = 2.0
    path.write_bytes(model.SerializeToString())
    entries[1] = type(entries[1])(entries[1].spec, entries[1].file, sha256(path.read_bytes()))
    write_manifest(graph_folder, entries)
    out = tmp_path / "res"
    runner.invoke(app, ["run", "--graphs", str(graph_folder), *FAST, "--out", str(out)])
    rows = {r["graph_id"]: r for r in rows_of(out)}
    wrong = rows[entries[1].spec.id]
    assert wrong["status"] == "mismatch" and wrong["verified"] is False and wrong["error"] > 0.1


@pytest.mark.slow
def test_manifest_that_does_not_match_its_graph(graph_folder, tmp_path):
    entries = read_manifest(graph_folder)
    (graph_folder / entries[0].file).write_bytes((graph_folder / entries[2].file).read_bytes())
    out = tmp_path / "res"
    runner.invoke(app, ["run", "--graphs", str(graph_folder), *FAST, "--out", str(out)])
    row = {r["graph_id"]: r for r in rows_of(out)}[entries[0].spec.id]
    assert row["status"] == "failed" and "does not match its manifest" in row["message"]


@pytest.mark.parametrize(
    "args,code,needle",
    [
        (("run", "--runtime", "tvm"), 2, "unknown runtime 'tvm'; known runtimes: ort-cpu"),
        (("run", "--runtime", "ort-cuda"), 2, "pip install 'dbench[gpu]'"),
        (("run", "--resume", "run-nope"), 2, "unknown run 'run-nope'"),
        (("run", "--weights", "maybe"), 2, "unknown weights mode"),
        (("run", "--graph-opt", "max"), 2, "unknown graph optimisation level 'max'; valid: disable, basic"),
    ],
)
def test_run_bad_input_is_one_line(args, code, needle, tmp_path):
    result = runner.invoke(app, [*args, "--out", str(tmp_path)])
    assert result.exit_code == code, result.output
    assert needle in result.output and "Traceback" not in result.output
    assert not list(tmp_path.glob("*/*.jsonl")), "no run log is started for input that cannot run"


def test_graphs_folder_without_manifest(tmp_path):
    result = runner.invoke(app, ["run", "--graphs", str(tmp_path), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "no manifest.json in" in result.output


def test_gens_out_folder_given_to_graphs_names_the_suite_folder_inside(graph_folder, tmp_path):
    """`dbench gen --out g` writes g/<suite>/; a user who then runs `--graphs g` is told which folder to give."""
    result = runner.invoke(app, ["run", "--graphs", str(graph_folder.parent), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert f"point --graphs at {graph_folder}, made by dbench gen" in " ".join(result.output.split())


def test_unwritable_results_folder(kernels, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = runner.invoke(app, ["run", "--kernels", str(kernels), "--out", str(blocker)])
    assert result.exit_code == 2 and "cannot write results to" in result.output


@pytest.mark.slow
def test_int8_run_shows_what_ran_in_int8_and_sparse_speedup(tmp_path):
    gemm_file = write_csv(tmp_path / "g.csv", "m,n,k,a_t,b_t", "35,16,64,0,0")
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", "--kernels", str(gemm_file), "--precision", "int8", *FAST, "--out", str(out)])
    assert result.exit_code == 0, result.output
    (row,) = rows_of(out)
    assert row["status"] == "ok" and row["form"] == "qlinear" and row["attrs"]["padded"] == {"m": 36}
    assert row["precision_executed"] == "int8" and row["error"] == 0
    assert any(n["op_type"] == "QLinearMatMul" for n in row["nodes"])
    sparse_file = write_csv(tmp_path / "s.csv", "m,n,k,a_t,b_t,sparsity", "64,8,128,0,0,0.9")
    out = tmp_path / "res2"
    result = runner.invoke(app, ["run", "--kernels", str(sparse_file), *FAST, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {r["form"] for r in rows_of(out)} == {"sparse", "dense"}
    assert "dense / sparse time" in result.stdout
    import pandas as pd

    frame = pd.read_csv(next(out.glob("*/*.csv")))
    speedup = frame.loc[frame["form"] == "sparse", "sparse_speedup"].item()
    medians = frame.set_index("form")["median_us"]
    assert speedup == pytest.approx(medians["dense"] / medians["sparse"])


@pytest.mark.slow
def test_compare_two_runs_side_by_side(kernels, tmp_path):
    out = tmp_path / "res"
    for threads in ("1", "2"):
        result = runner.invoke(
            app,
            ["run", "--kernels", str(kernels), "--id", "gemm_m16_*", "--threads", threads, *FAST, "--out", str(out)],
        )
        assert result.exit_code == 0, result.output
    first, second = sorted(p.stem for p in out.glob("*/*.jsonl"))
    result = runner.invoke(app, ["compare", first, second, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "gemm_m16_n8_k32_tn.fwd.gemm.fp32" in result.stdout and "geometric-mean time ratio" in result.stdout
    assert "Welch's t over each run's rounds" in " ".join(result.stdout.split())
    rows = {
        p.stem: next(r for r in map(json.loads, p.read_text().splitlines()) if r["type"] == "result")
        for p in out.glob("*/*.jsonl")
    }
    from dbench.stats.differences import welch

    expected = welch(rows[first]["round_medians_us"], rows[second]["round_medians_us"])
    assert f"{expected.ratio:.3f}" in result.stdout and f"{expected.low:.3f}–{expected.high:.3f}" in result.stdout
    missing = runner.invoke(app, ["compare", first, "run-nope", "--out", str(out)])
    assert missing.exit_code == 2 and "unknown run 'run-nope'" in missing.output


@pytest.mark.slow
def test_an_interleaved_run_times_each_graph_on_every_variant_in_every_round(kernels, tmp_path):
    """`--runtime ort-cpu,openvino --threads 1,2`: four variants, each graph's variants back to back in
    every round (each variant in its own worker), one row per graph and variant; `dbench compare RUN`
    pairs each variant's rounds with the first variant's, and `report` keeps the variants apart."""
    out = tmp_path / "res"
    # --quick's sampling without its round cost cap: OpenVINO's 0.12 s compile of a tiny graph comes near the
    # cap's 0.17 s a round on a loaded machine, and this test is about interleaving, not about that cap
    result = runner.invoke(
        app,
        [
            "run",
            "--kernels",
            str(kernels),
            "--id",
            "gemm_m[13][62]_*",
            "--runtime",
            "ort-cpu,openvino",
            "--threads",
            "1,2",
            "--min-time",
            "0.02",
            "--max-time",
            "0.5",
            "--warmup",
            "0",
            "--profile-runs",
            "2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    labels = ["ort-cpu threads=1", "ort-cpu threads=2", "openvino threads=1", "openvino threads=2"]
    rows = rows_of(out)
    assert sorted((r["graph_id"], r["variant"]) for r in rows) == sorted(
        (g, v) for g in {r["graph_id"] for r in rows} for v in labels
    )
    assert {
        (
            r["variant"],
            r["runtime"],
            r["runtime_options"].get("threads", r["runtime_options"].get("intra_op_num_threads")),
        )
        for r in rows
    } >= {("ort-cpu threads=2", "ort-cpu", 2)}
    firsts = set()
    for number in range(
        1, COMPARE_ROUNDS + 1
    ):  # an interleaved run's rounds; in each, a graph's four variants back to back
        graphs = [r["graph_id"] for r in round_lines(out) if r["round"] == number]
        assert all(len(set(graphs[i : i + 4])) == 1 for i in range(0, len(graphs), 4)) and len(graphs) == 8
        variants = [r["variant"] for r in round_lines(out) if r["round"] == number]
        assert all(variants[i : i + 4] in [rotated(labels, turn) for turn in range(4)] for i in range(0, 8, 4))
        firsts.update(variants[0:8:4])
    assert len(firsts) > 1  # rotated round by round: no variant always runs first
    said = " ".join(result.output.split())  # the run's own brief verdicts: each variant against the first
    assert (
        all(f"{label} against {labels[0]}: " in said for label in labels[1:])
        and "kernel by kernel: dbench compare" in said
    )
    assert "b against a" not in said  # compare's summary speaks of the variants by name
    run_id = next(out.glob("*/*.jsonl")).stem
    compared = runner.invoke(app, ["compare", run_id, "--out", str(out), "--format", "json"])
    assert compared.exit_code == 0, compared.output
    tables = json.loads(compared.stdout)
    assert [(t["a"], t["b"]) for t in tables] == [(labels[0], label) for label in labels[1:]]
    assert all(
        k["method"].startswith("paired over rounds") and k["a_rounds"] == k["b_rounds"] == COMPARE_ROUNDS
        for t in tables
        for k in t["kernels"]
    )
    report = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "rep")])
    assert report.exit_code == 0, report.output
    assert all(label in report.stdout for label in labels)


def test_an_interleaved_latency_run_gets_the_compare_rounds_unless_told():
    """Several latency variants and no --rounds: COMPARE_ROUNDS, kept in the request (so in the header a
    resume reads); one variant, --rounds, --quick or a throughput sweep keep their own."""
    assert RunRequest(runtime="ort-cpu,ort-cpu").compare_rounds().rounds == COMPARE_ROUNDS
    assert RunRequest(threads=[1, 2]).compare_rounds().timing().rounds == COMPARE_ROUNDS
    assert RunRequest(runtime="ort-cpu,openvino", rounds=3).compare_rounds().rounds == 3
    for alone in (RunRequest(), RunRequest(runtime="ort-cpu,openvino", quick=True), RunRequest(streams=[1, 2])):
        assert alone.compare_rounds().rounds is None and alone.compare_rounds().timing().rounds == alone.timing().rounds


@pytest.mark.parametrize("resets", [True, False])
def test_memory_is_reported_only_when_the_peak_could_be_reset(resets, monkeypatch):
    """Without a reset, VmHWM would be the largest earlier kernel's peak: the row says nothing instead."""
    from dbench.catalog import GemmKernel
    from dbench.gen import gemm
    from dbench.runtimes.base import RuntimeOptions
    from dbench.worker import main as worker
    from dbench.worker import memory
    from dbench.worker.timing import QUICK

    monkeypatch.setattr(memory, "reset_peak", lambda: resets)
    graph = gemm.build(GemmKernel(m=32, n=8, k=16, a_t=False, b_t=False), "fp32", "fwd", "gemm")
    job = worker.Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime="ort-cpu",
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        profile_runs=2,
    )
    outcome = worker.execute(job)
    assert outcome.status == "ok" and outcome.stats.median_us > 0
    if resets:
        assert outcome.peak_rss_bytes > 0 and outcome.memory_bytes is not None
    else:
        assert outcome.peak_rss_bytes is None and outcome.memory_bytes is None


class _ScriptedPasses:
    """A session whose profiling passes run at the given speeds (µs per call), one per call to profile."""

    def __init__(self, speeds: list[float]) -> None:
        self.speeds = list(speeds)
        self.asked: list[tuple[int, int]] = []

    def profile(self, runs: int, warmup: int = 1):
        from dbench.runtimes.base import NodeProfile, Profile

        self.asked.append((runs, warmup))
        call = self.speeds.pop(0)
        return Profile([NodeProfile("mm", "Gemm", "Gemm", "CPU", "fp32", call * 0.98)], call)


def test_a_profiling_pass_slower_than_the_timed_calls_is_taken_again_and_the_fastest_kept():
    """A load burst during the profile is the machine, not the kernel: another pass is taken (at most
    PROFILE_ATTEMPTS), each after a warm-up of about PROFILE_WARMUP_S."""
    from dbench.worker.profiling import PROFILE_ATTEMPTS, PROFILE_WARMUP_CALLS
    from dbench.worker.profiling import best_profile as _profile

    burst = _ScriptedPasses([5000.0, 4000.0, 1100.0, 900.0])
    assert _profile(burst, 10, median_us=1000.0).call_us == 1100.0
    assert burst.asked == [(10, 50)] * 3 and len(burst.asked) == PROFILE_ATTEMPTS
    steady = _ScriptedPasses([1500.0, 900.0])
    assert _profile(steady, 10, median_us=1000.0).call_us == 1500.0 and len(steady.asked) == 1
    long_kernel = _ScriptedPasses([2e6])
    _profile(long_kernel, 1, median_us=2e6)
    tiny_kernel = _ScriptedPasses([5.0])
    _profile(tiny_kernel, 10, median_us=5.0)
    assert long_kernel.asked == [(1, 1)] and tiny_kernel.asked == [(10, PROFILE_WARMUP_CALLS)]


def test_an_expensive_profiling_pass_is_not_taken_again(monkeypatch):
    """A pass that took longer than PROFILE_RETRY_S (a server GRU, a 2 GB weight loaded again) is kept even
    when slow: a retry would cost more than the profile is worth; the invariant sentence says the load."""
    from dbench.worker import profiling

    monkeypatch.setattr(profiling, "PROFILE_RETRY_S", 0.0)
    burst = _ScriptedPasses([5000.0, 1100.0])
    assert profiling.best_profile(burst, 10, median_us=1000.0).call_us == 5000.0 and len(burst.asked) == 1


def test_under_a_quick_cap_a_slow_pass_is_retried_only_within_the_cap():
    """--quick bounds the profile's cost: no retry once the passes together would pass `cap_s`."""
    from dbench.worker import profiling

    capped = _ScriptedPasses([5000.0, 1100.0])
    assert profiling.best_profile(capped, 10, median_us=1000.0, cap_s=0.0).call_us == 5000.0 and len(capped.asked) == 1
    roomy = _ScriptedPasses([5000.0, 1100.0])
    assert profiling.best_profile(roomy, 10, median_us=1000.0, cap_s=60.0).call_us == 1100.0 and len(roomy.asked) == 2


def test_profiling_runs_never_exceed_profile_runs():
    """--profile-runs N bounds the profiled runs of a pass: about 0.05 s of kernel time, at least one."""
    from dbench.worker.profiling import profile_runs

    assert profile_runs(10, 5.0) == 10 and profile_runs(3, 5.0) == 3
    assert profile_runs(10, 20_000.0) == 3 and profile_runs(10, 2e6) == 1


def test_the_worker_reports_each_phase_of_a_job_before_its_outcome():
    """Through the real worker process: a kernel that takes minutes says what it is doing."""
    from dbench.catalog.kernels import GemmKernel
    from dbench.gen.plan import GraphRequest, build
    from dbench.orchestrator.worker_process import WorkerProcess
    from dbench.outcome import Status
    from dbench.runtimes.base import RuntimeOptions
    from dbench.worker.job import Job
    from dbench.worker.timing import QUICK

    graph = build(GraphRequest(GemmKernel(m=8, n=4, k=16, a_t=False, b_t=False), "fp32", "fwd", "gemm"))
    job = Job(
        spec=graph.spec,
        model=graph.model.SerializeToString(),
        sha256=None,
        runtime="ort-cpu",
        options=RuntimeOptions(threads=1),
        timing=QUICK,
    )
    phases: list[str] = []
    worker = WorkerProcess()
    try:
        outcome = worker.submit(job, 120, phases.append)
    finally:
        worker.stop()
    assert outcome.status == Status.OK, outcome.message
    assert phases == ["making inputs", "preparing", "timing", "verifying", "profiling"]


def _scripted_worker(gaps_s: list[float]):
    """A WorkerProcess whose 'worker' is a thread on the other end of its connection: it takes the job
    and sends a Phase after each gap, then an ok Outcome (the process slot holds a sleeping child)."""
    import socket
    import threading
    from multiprocessing.connection import Connection

    from dbench.orchestrator.worker_process import WorkerProcess
    from dbench.outcome import Outcome, Phase, Status

    ours, theirs = socket.socketpair()
    worker = WorkerProcess()
    worker.process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    worker.connection = Connection(ours.detach())
    far = Connection(theirs.detach())

    def serve() -> None:
        try:
            far.recv()
            for i, gap in enumerate(gaps_s):
                time.sleep(gap)
                far.send(Phase(f"phase {i}"))
            far.send(Outcome(Status.OK))
        except OSError:  # the parent gave up and closed its end
            pass

    threading.Thread(target=serve, daemon=True).start()
    return worker


def test_each_phase_restarts_the_timeout_and_a_stalled_one_is_named():
    """--timeout is a watchdog on progress: a job longer than it in all, but never silent that long,
    finishes; a phase silent past it is a timeout that says which phase stalled."""
    from dbench.outcome import Status

    steady = _scripted_worker([0.8, 0.8, 0.8])
    try:
        assert steady.submit(None, 2.0).status == Status.OK  # 2.4 s in all
    finally:
        steady.stop()
    stalled = _scripted_worker([0.2, 4.0])
    try:
        outcome = stalled.submit(None, 2.0)
    finally:
        stalled.stop()
    assert outcome.status == Status.TIMEOUT and "no progress for 2 s while phase 0" in outcome.message
