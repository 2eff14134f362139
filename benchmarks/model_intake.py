"""Every real model gets in: build a corpus of ONNX models here (benchmarks/intake_corpus.py: ONNX's
backend node test cases, old PyTorch exports, real network structures, PyTorch exports at opsets 7-20,
converted models at opsets 7-23 and IR 3-13, int8 models from onnxruntime.quantization), run
`dbench list --from-model` on each and one `dbench run --graphs` over every model `list` accepts, and
print one table: the run's status (ok / unsupported with its reason / failed ...), tracebacks, and each
kernel-bearing model's FLOPs beside an independent count from the ONNX spec (benchmarks/flops_oracle.py).

Needs onnx and onnxruntime (its quantization tools build the int8 models; openvino for --runtime
openvino); torch for the PyTorch exports (`pip install torch`; without it they are skipped, and the
table says so). The corpus goes to a git-ignored folder (graphs/intake-corpus by default).

    PYTHONPATH=. python benchmarks/model_intake.py                   # the whole corpus, ort-cpu
    PYTHONPATH=. python benchmarks/model_intake.py --limit 3         # a smoke run: 3 models per source
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).parent))
import flops_oracle  # noqa: E402
import intake_corpus  # noqa: E402

TRACEBACK = re.compile(r"Traceback \(most recent call last\)")


def declared_dims(model: onnx.ModelProto) -> list[str]:
    stored = {t.name for t in model.graph.initializer}
    return list(
        dict.fromkeys(
            d.dim_param
            for i in model.graph.input
            if i.name not in stored
            for d in i.type.tensor_type.shape.dim
            if d.dim_param
        )
    )


def dims_arg(names: list[str]) -> list[str]:
    sizes = [f"{n}={intake_corpus.DIMS.get(n, 1)}" for n in names]
    return ["--dim", ",".join(sizes)] if sizes else []


def list_model(path: Path, names: list[str]) -> tuple[str, str]:
    """(`ok` or `refused`, the kernels count or the refusal line); a traceback is its own verdict."""
    from typer.testing import CliRunner

    from dbench.cli import app

    result = CliRunner().invoke(app, ["list", "--from-model", str(path), "--format", "json", *dims_arg(names)])
    if result.exception is not None and not isinstance(result.exception, SystemExit) or TRACEBACK.search(result.output):
        return "traceback", f"{type(result.exception).__name__}: {result.exception}"
    if result.exit_code != 0:
        return "refused", result.output.strip().splitlines()[-1][:160]
    return "ok", f"{len(json.loads(result.output)['kernels'])} kernels"


def dbench_flops(path: Path, names: list[str]) -> dict[str, int]:
    """FLOPs per node name from dbench's extraction (a kernel's FLOPs on each node it stands for)."""
    from dbench.frommodel.walk import model_kernels

    extraction = model_kernels(path, {n: intake_corpus.DIMS.get(n, 1) for n in names})
    per_node: dict[str, int] = {}
    for mk in extraction.kernels:
        for node in mk.nodes:
            per_node[node] = per_node.get(node, 0) + mk.kernel.flops()
    return per_node


def oracle_feeds(model: onnx.ModelProto, saved: Path | None) -> dict[str, np.ndarray]:
    """The test data set's inputs where the corpus has them, else ones of the declared shapes (the
    oracle needs shapes, not values)."""
    if saved is not None:
        try:
            with np.load(saved) as data:
                return {k: data[k] for k in data.files}
        except ValueError:  # a data set of strings or objects: ones of the declared shapes below
            pass
    stored = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in stored or not value.type.HasField("tensor_type"):
            continue
        shape = [
            d.dim_value if d.HasField("dim_value") else intake_corpus.DIMS.get(d.dim_param, 1)
            for d in value.type.tensor_type.shape.dim
        ]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        feeds[value.name] = np.ones(shape, dtype=dtype)
    return feeds


def compare_flops(path: Path, entry: dict, names: list[str], corpus: Path) -> dict:
    """dbench's FLOPs per expressed node against the oracle's, and the kernel nodes dbench left out."""
    from dbench.frommodel.extract import node_names

    model = onnx.load(str(path))
    saved = corpus / entry["inputs"] if entry.get("inputs") else None
    oracle, how = flops_oracle.count(model, oracle_feeds(model, saved))
    if not oracle:
        return {"kernel_nodes": 0, "how": how}
    ours = dbench_flops(path, names)
    labels = node_names(model.graph.node)
    expressed = {i for i in oracle if labels[i] in ours}
    differ = [labels[i] for i in expressed if ours[labels[i]] != oracle[i]]
    return {
        "kernel_nodes": len(oracle),
        "expressed": len(expressed),
        "how": how,
        "dbench": sum(ours.values()),
        "oracle": sum(oracle[i] for i in expressed),
        "differ": differ,
        "left_out": [labels[i] for i in oracle if i not in expressed],
    }


def run_folder(folder: Path, out: Path, runtime: str, dims: list[str], timeout: float) -> subprocess.CompletedProcess:
    """One `dbench run --graphs` over the folder, in its own process group (killed whole on a timeout)."""
    command = [
        sys.executable,
        "-m",
        "dbench",
        "run",
        "--graphs",
        str(folder),
        "--runtime",
        runtime,
        "--quick",
        "--profile-runs",
        "2",
        "--threads",
        "1",
        "--timeout",
        "120",
        "--out",
        str(out),
        *dims_arg(dims),
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--corpus", type=Path, default=Path("graphs/intake-corpus"), help="folder to build the corpus in"
    )
    parser.add_argument("--runtime", default="ort-cpu")
    parser.add_argument("--limit", type=int, default=None, help="models taken from each source (default: all)")
    parser.add_argument(
        "--reuse", action="store_true", help="run the corpus already in --corpus instead of building it"
    )
    parser.add_argument("--run-timeout", type=float, default=6 * 3600, help="seconds the folder run may take in all")
    args = parser.parse_args()

    started = time.time()
    if not args.reuse:
        intake_corpus.build(args.corpus, args.limit)
    index = json.loads((args.corpus / "corpus.json").read_text())
    models, skipped = index["models"], index["skipped"]
    print(
        f"corpus: {len(models)} models in {args.corpus} ({time.time() - started:.0f} s); by source: "
        f"{dict(Counter(e['source'] for e in models.values()))}"
    )
    for line in skipped:
        print(f"  not built: {line}")

    accepted = args.corpus / "accepted"
    shutil.rmtree(accepted, ignore_errors=True)
    accepted.mkdir()
    table: dict[str, dict] = {}
    all_dims: set[str] = set()
    for name, entry in sorted(models.items()):
        path = args.corpus / f"{name}.onnx"
        names = declared_dims(onnx.load(str(path), load_external_data=False))
        verdict, detail = list_model(path, names)
        row = {"source": entry["source"], "list": verdict, "list_detail": detail}
        if verdict == "ok":
            shutil.copy(path, accepted / path.name)
            all_dims.update(names)
            row["flops"] = compare_flops(path, entry, names, args.corpus)
        table[name] = row

    out = args.corpus / "results"
    shutil.rmtree(out, ignore_errors=True)
    done = run_folder(accepted, out, args.runtime, sorted(all_dims), args.run_timeout)
    rows = {
        r["graph_id"]: r
        for log in out.rglob("*.jsonl")
        for r in map(json.loads, log.read_text().splitlines()[1:])
        if r.get("type") == "result"
    }
    run_tracebacks = len(TRACEBACK.findall(done.stdout + done.stderr))
    for name, row in table.items():
        if name in rows:
            row["run"], row["message"] = rows[name]["status"], rows[name]["message"]
            run_tracebacks += bool(TRACEBACK.search(rows[name]["message"]))
        elif row["list"] == "ok":
            row["run"], row["message"] = "no row", ""

    print(
        f"\n| model | source | list --from-model | run ({args.runtime}) | FLOPs dbench / spec | kernel nodes not "
        "expressed |"
    )
    print("|---|---|---|---|---|---|")
    for name, row in sorted(table.items()):
        flops = row.get("flops", {})
        figure = ""
        if flops.get("kernel_nodes"):
            figure = f"{flops['dbench']} / {flops['oracle']}" + (
                "" if not flops["differ"] else f" DIFFER at {flops['differ'][:3]}"
            )
        listed = row["list"] if row["list"] == "ok" else f"{row['list']}: {row['list_detail']}"
        run = row.get("run", "")
        if run and run != "ok":
            run = f"{run}: {row['message'][:120]}"
        left = ", ".join(flops.get("left_out", [])[:3])
        print(f"| {name} | {row['source']} | {listed} | {run} | {figure} | {left} |")

    statuses = Counter(row.get("run", "not run (list refused)") for row in table.values())
    kernel_models = [r for r in table.values() if r.get("flops", {}).get("kernel_nodes")]
    equal = [r for r in kernel_models if not r["flops"]["differ"]]
    left_out = sum(len(r["flops"]["left_out"]) for r in kernel_models)
    refusals = Counter(row["list_detail"].split(";")[0][:90] for row in table.values() if row["list"] == "refused")
    print(f"\nmodels: {len(table)}; run statuses: {dict(statuses)}; run exit status {done.returncode}")
    print(f"tracebacks: list {sum(r['list'] == 'traceback' for r in table.values())}, run {run_tracebacks}")
    print(
        f"kernel-bearing models: {len(kernel_models)}; FLOPs equal to the spec's count over the nodes dbench "
        f"expresses: {len(equal)}/{len(kernel_models)}; kernel nodes not expressed: {left_out}"
    )
    for reason, n in refusals.most_common():
        print(f"  list refused {n}: {reason}")
    unsupported = Counter(
        re.sub(r"'[^']*'", "'…'", r["message"])[:100] for r in table.values() if r.get("run") == "unsupported"
    )
    for reason, n in unsupported.most_common(25):
        print(f"  unsupported {n}: {reason}")
    for name, row in sorted(table.items()):
        if row.get("run") not in (None, "ok", "unsupported"):
            print(f"  {row['run']}: {name}: {row['message'][:300]}")
    print(f"took {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
