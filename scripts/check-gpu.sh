#!/usr/bin/env bash
# Verify dbench's GPU paths on a machine with an NVIDIA GPU, and print what ran and what could not:
#   torch-cuda   PyTorch's CUDA build (cuBLAS, cuDNN): gpu-marked tests, then a verified run of the
#                suite with CUDA-event device times with and without a CUDA graph, `dbench peak`, and a
#                report whose roofline puts the GEMMs against the GPU's measured ceiling
#   ort-cuda     onnxruntime-gpu (CUDA EP)            gpu-marked tests + a verified GEMM/conv run
#   ort-trt      onnxruntime-gpu + TensorRT 10 (EP)    the same
#   tensorrt     TensorRT 10 or 11 (native)            the same
#   nccl         dbench allreduce --impl nccl (CuPy, mpi4py, MPICH)
# A runtime that `dbench runtimes` calls unusable is not attempted: its line says why (the probe's
# reason: package, driver, a named library). Nothing is installed from the network unless it is
# reachable: the GPU image this project is lent has PyTorch (CUDA 13), CuPy, NCCL and cuDNN but
# neither onnxruntime-gpu nor TensorRT, whose wheels must be carried in (docs/runtimes/gpu.md).
#
# Usage: scripts/check-gpu.sh [--wheels DIR | --no-install] [--packed DIR] [--only LIST] [--suite SUITE] [--ops OPS]
#                              [--rounds N] [--no-tests] [--no-peak] [--run-limit SECONDS] [--out DIR]
#   --wheels DIR  install what is missing from this folder of wheels only (pip --no-index): carried
#                 onnxruntime-gpu / tensorrt / mpich / dbench's core dependencies
#   --no-install  install nothing: report what is missing and go on
#   --packed DIR  unpack onnxruntime-gpu from the parts scripts/pack-ort-gpu.sh made (carried into DIR one
#                 call at a time), after checking them against its ort-gpu.sha256
#   --only LIST   check only these, comma-separated: torch-cuda, ort-cuda, ort-trt, tensorrt, nccl
#                 (a lent machine's minutes are few: split the checks across calls)
#   --suite       suite for the torch-cuda run (default inference)     --ops  its ops (default all)
#   --rounds N    rounds per graph of each `dbench run` (default: --quick's; 1 writes each row as its graph
#                 ends, so that a run cut by --run-limit keeps every graph it reached)
#   --no-tests    leave out the gpu-marked tests (when an earlier call on the same checkout ran them)
#   --no-peak     leave out `dbench peak` (when an earlier call measured it into the same --out: the
#                 report's roofline reads it from there)
#   --run-limit   stop each `dbench run` with Ctrl-C after this many seconds (rows written so far are
#                 kept, and the summary says it was cut); default none
#   --out         results and logs (default gpu-check/)
# dbench runs from this checkout on the image's own Python (its CUDA build of PyTorch, CuPy and NCCL stay
# in use); missing pure-Python dependencies go into .gpu-deps/, never torch.
# Exit 0 when steps ran and every one passed; 1 when one failed or none could run; 3 when no NVIDIA GPU is visible.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
WHEELS="" INSTALL=1 SUITE=inference OPS="" OUT=$REPO/gpu-check ONLY="" RUN_LIMIT="" ROUNDS="" TESTS=1 PEAK=1 PACKED=""
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) WHEELS=$(cd "$2" && pwd); shift 2 ;;
        --no-install) INSTALL=0; shift ;;
        --packed) PACKED=$(cd "$2" && pwd); shift 2 ;;
        --only) ONLY=",$2,"; shift 2 ;;
        --run-limit) RUN_LIMIT=$2; shift 2 ;;
        --suite) SUITE=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --no-tests) TESTS=0; shift ;;
        --no-peak) PEAK=0; shift ;;
        --ops) OPS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "check-gpu: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
START=$(date +%s)
cd "$REPO" || exit 1
RAN=() COULD_NOT=() FAILED=()
mkdir -p "$OUT"
say() { printf '[check-gpu %4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
ran() { RAN+=("$1"); say "ran: $1"; }
could_not() { COULD_NOT+=("$1: $2"); say "could not: $1: $2"; }
failed() { FAILED+=("$1 (log: $2)"); say "FAILED: $1 (log: $2)"; tail -n 15 "$2" | sed 's/^/    /'; }
step() {  # step NAME LOG COMMAND...: run, record ran/failed by exit status
    local name=$1 log=$2; shift 2
    if "$@" >"$log" 2>&1; then ran "$name"; else failed "$name" "$log"; fi
}
limited_step() {  # like step, for a `dbench run` stopped by Ctrl-C after --run-limit seconds
    local name=$1 log=$2 status; shift 2
    if [ -z "$RUN_LIMIT" ]; then step "$name" "$log" "$@"; return; fi
    timeout -s INT -k 30 "$RUN_LIMIT" "$@" >"$log" 2>&1; status=$?
    if [ $status -eq 0 ]; then ran "$name"
    elif [ $status -eq 124 ]; then ran "$name: CUT at --run-limit $RUN_LIMIT s (rows written before it are kept)"
    else failed "$name" "$log"; fi
}
wanted() { [ -z "$ONLY" ] || [[ $ONLY == *",$1,"* ]]; }

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >"$OUT/gpus.txt" 2>&1; then
    echo "check-gpu: no NVIDIA GPU visible (nvidia-smi -L failed): run this on a GPU machine" >&2
    exit 3
fi
say "GPUs: $(tr '\n' ';' <"$OUT/gpus.txt")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader >>"$OUT/gpus.txt" 2>&1

# ---- environment --------------------------------------------------------------------------------
# dbench runs from this checkout (PYTHONPATH), on the image's own Python, so its CUDA build of PyTorch,
# CuPy and NCCL stay in use; what the image lacks goes into .gpu-deps/ without dependencies (so nothing
# the image has is shadowed), from --wheels when given, else from the index if it is reachable.
PY=${PYTHON:-python3}
DEPS=${DBENCH_GPU_DEPS:-$REPO/.gpu-deps}  # where what the image lacks is installed (a test points it elsewhere)
export PYTHONPATH="$REPO:$DEPS${PYTHONPATH:+:$PYTHONPATH}"
pip_install() {
    if [ -n "$WHEELS" ]; then "$PY" -m pip install -q --no-deps --target "$DEPS" --no-index --find-links "$WHEELS" "$@"
    else "$PY" -m pip install -q --no-deps --target "$DEPS" "$@"; fi
}
missing_modules() {
    "$PY" - <<'PYEOF'
import importlib.util
wanted = {"onnx": "onnx", "numpy": "numpy", "ml_dtypes": "ml_dtypes", "typer": "typer", "click": "click", "rich": "rich",
          "psutil": "psutil", "archspec": "archspec", "pytest": "pytest", "pandas": "pandas", "pyarrow": "pyarrow",
          "matplotlib": "matplotlib", "openpyxl": "openpyxl", "et_xmlfile": "et-xmlfile",
          "pynvml": "nvidia-ml-py"}
print(" ".join(dist for module, dist in wanted.items() if importlib.util.find_spec(module) is None))
PYEOF
}
missing=$(missing_modules)
if [ -n "$missing" ] && [ "$INSTALL" = 0 ]; then
    say "missing (not installed: --no-install): $missing"
elif [ -n "$missing" ]; then
    say "installing what the image lacks into $DEPS: $missing"
    pip_install $missing >"$OUT/install.log" 2>&1 || say "some could not be installed (log: $OUT/install.log)"
    still=$(missing_modules)
    [ -n "$still" ] && say "still missing (their steps will fail; carry their wheels with --wheels): $still"
fi
if [ -n "$WHEELS" ]; then  # carried runtimes: whichever of these wheels the folder holds
    for pattern in 'onnxruntime_gpu-*.whl' 'tensorrt*.whl' 'nvidia_*.whl' 'cupy_cuda13x-*.whl' 'mpi4py-*.whl'; do
        for wheel in "$WHEELS"/$pattern; do
            [ -e "$wheel" ] || continue
            say "installing carried $(basename "$wheel")"
            pip_install "$wheel" >>"$OUT/install.log" 2>&1 || say "  failed (log: $OUT/install.log)"
        done
    done
fi
if [ -n "$PACKED" ]; then  # onnxruntime-gpu from scripts/pack-ort-gpu.sh's parts, whole or not at all
    if [ ! -f "$PACKED/ort-gpu.sha256" ] || ! ls "$PACKED"/ort-gpu.tar.xz.part* >/dev/null 2>&1; then
        say "--packed $PACKED: no ort-gpu.sha256 and parts there (scripts/pack-ort-gpu.sh makes them)"
    elif [ "$(cat "$PACKED"/ort-gpu.tar.xz.part* | sha256sum | cut -d' ' -f1)" != "$(cut -d' ' -f1 "$PACKED/ort-gpu.sha256")" ]; then
        say "--packed $PACKED: the parts do not match ort-gpu.sha256 (one missing or cut short): not unpacked"
    else
        say "unpacking onnxruntime-gpu from $(ls "$PACKED"/ort-gpu.tar.xz.part* | wc -l) carried parts into $DEPS"
        mkdir -p "$DEPS" && cat "$PACKED"/ort-gpu.tar.xz.part* | tar -xJ -C "$DEPS" || say "  failed to unpack"
    fi
fi
for wheel in ${WHEELS:+"$WHEELS"/mpich-*.whl}; do  # pip --target drops a wheel's data/lib (libmpi):
    [ -e "$wheel" ] || continue                   # unpack it and point mpi4py and dbench at it
    say "unpacking carried $(basename "$wheel") into $DEPS/mpich"
    rm -rf "$DEPS/mpich" && mkdir -p "$DEPS/mpich" && "$PY" -m zipfile -e "$wheel" "$DEPS/mpich"
    data=$(echo "$DEPS"/mpich/mpich-*.data/data)
    chmod +x "$data"/bin/* 2>/dev/null
    export PATH="$data/bin:$PATH" LD_LIBRARY_PATH="$data/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" DBENCH_MPIEXEC="$data/bin/mpiexec"
done
dbench() { "$PY" -m dbench "$@"; }
"$PY" - <<'EOF' | tee "$OUT/stack.txt"
import importlib.metadata as md
for dist in ("torch", "onnxruntime-gpu", "onnxruntime", "tensorrt-cu13", "tensorrt", "cupy-cuda13x", "nvidia-ml-py", "mpi4py"):
    try:
        print(f"{dist} {md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"{dist} -")
try:
    import torch
    print(f"torch.cuda {torch.version.cuda} available={torch.cuda.is_available()} cudnn={torch.backends.cudnn.version()}")
except Exception as err:
    print(f"torch does not import: {err}")
EOF
dbench runtimes | tee "$OUT/runtimes.txt"
usable() {  # usable NAME: exit 0 when `dbench runtimes` may use it, else print the reason
    "$PY" -c "import sys; from dbench.runtimes.registry import status; s = status(sys.argv[1]); print(s.reason); sys.exit(0 if s.available else 1)" "$1"
}

# ---- torch-cuda: the vendor libraries, the whole suite, the roofline ---------------------------
if ! wanted torch-cuda; then
    say "torch-cuda: not in --only"
elif reason=$(usable torch-cuda); then
    if [ "$TESTS" = 1 ]; then
        step "torch-cuda gpu-marked tests" "$OUT/pytest-torch-cuda.log" "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/test_runtime_torch.py
    else
        say "torch-cuda gpu-marked tests: left out (--no-tests)"
    fi
    if [ "$PEAK" = 1 ]; then
        step "torch-cuda peak (GEMM ceiling, bandwidth)" "$OUT/peak.log" dbench peak --runtime torch-cuda --precision fp32 --precision fp16 --out "$OUT/results"
    else
        say "torch-cuda peak: left out (--no-peak; the report reads an earlier call's from $OUT/results)"
    fi
    selection=(--suite "$SUITE"); [ -n "$OPS" ] && selection+=(--ops "$OPS"); [ -n "$ROUNDS" ] && selection+=(--rounds "$ROUNDS")
    limited_step "torch-cuda run ${selection[*]} --quick (verified, device time with and without a CUDA graph)" "$OUT/run-torch-cuda.log" \
        "$PY" -m dbench run --runtime torch-cuda "${selection[@]}" --quick --out "$OUT/results"
    "$PY" - "$OUT/results" <<'EOF' | tee "$OUT/torch-cuda-rows.txt"
import json, sys
from pathlib import Path
rows = [json.loads(line) for path in Path(sys.argv[1]).rglob("run-*.jsonl") for line in path.read_text().splitlines()]
rows = [r for r in rows if r.get("type") == "result" and r.get("runtime") == "torch-cuda"]
statuses = {}
for r in rows:
    statuses[r["status"]] = statuses.get(r["status"], 0) + 1
timed = [r for r in rows if r["status"] == "ok"]
graph = [r for r in timed if r.get("device_graph_median_us")]
print(f"torch-cuda rows: {len(rows)} {statuses}; ok and verified: {sum(1 for r in timed if r.get('verified'))}; "
      f"device time: {sum(1 for r in timed if r.get('device_median_us'))}; with a CUDA graph: {len(graph)}")
for r in [r for r in rows if r["status"] != "ok"][:20]:
    print(f"  {r['graph_id']}: {r['status']}: {r['message'][:160]}")
EOF
    step "report with the roofline against the measured GPU ceiling" "$OUT/report.log" dbench report "$OUT/results" --baseline torch-cuda --out "$OUT/report"
else
    could_not torch-cuda "$reason"
fi

# ---- ONNX Runtime and TensorRT: each where its wheels are installed -----------------------------
for name in ort-cuda ort-trt tensorrt; do
    if ! wanted "$name"; then
        say "$name: not in --only"
    elif reason=$(usable "$name"); then
        for family in gemm conv rnn sparse int8; do  # one process each: a crash in one family hides no other
            [ "$TESTS" = 1 ] || { say "$name gpu-marked tests: left out (--no-tests)"; break; }
            step "$name gpu-marked test, $family" "$OUT/pytest-$name-$family.log" \
                "$PY" -m pytest -q -s -p no:cacheprovider -m gpu tests/test_runtime_gpu.py -k "$name and $family"
        done
        limited_step "$name run inference-device gemm,conv --quick (verified, device time)" "$OUT/run-$name.log" \
            "$PY" -m dbench run --runtime "$name" --suite inference-device --ops gemm,conv --quick ${ROUNDS:+--rounds "$ROUNDS"} --out "$OUT/results"
    else
        could_not "$name" "$reason"
    fi
done

# ---- all-reduce over NCCL -----------------------------------------------------------------------
if ! wanted nccl; then
    say "nccl: not in --only"
elif reason=$("$PY" -c "
import importlib.util as u
need = [m for m in ('cupy', 'mpi4py') if u.find_spec(m) is None]
print('missing ' + ', '.join(need) + \": pip install 'dbench[gpu,mpi]' (or carry the wheels: --wheels)\" if need else '')
import sys; sys.exit(1 if need else 0)"); then
    gpus=$(grep -c '^GPU ' "$OUT/gpus.txt")
    step "nccl gpu-marked tests (exact sums on 2+ GPUs; ranks sharing a GPU refused in one line)" "$OUT/pytest-nccl.log" \
        timeout -s INT -k 15 240 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/test_allreduce_mpi.py -k nccl
    if [ "$gpus" -ge 2 ]; then
        step "allreduce --impl nccl on $gpus GPUs" "$OUT/allreduce.log" \
            timeout -s INT -k 15 300 "$PY" -m dbench allreduce --np "$gpus" --impl nccl --out "$OUT/results"
    else
        could_not "allreduce --impl nccl timing" "one GPU: NCCL needs a GPU per rank and all-reduce needs 2 ranks"
    fi
else
    could_not "allreduce nccl" "$reason"
fi

# ---- what ran, what could not -------------------------------------------------------------------
echo
echo "check-gpu summary ($(( $(date +%s) - START )) s; logs and results in $OUT)"
for line in "${RAN[@]}"; do echo "  ran:       $line"; done
for line in "${FAILED[@]}"; do echo "  FAILED:    $line"; done
for line in "${COULD_NOT[@]}"; do echo "  could not: $line"; done
[ ${#RAN[@]} -gt 0 ] || { echo "check-gpu: nothing could run on this GPU machine (see the reasons above)"; exit 1; }
[ ${#FAILED[@]} -eq 0 ]
