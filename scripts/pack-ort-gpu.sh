#!/usr/bin/env bash
# Pack what a lent GPU machine lacks, for a machine that cannot reach a package index and takes 64 MiB a
# call: onnxruntime-gpu's wheel for the machine's Python, unpacked (dist-info kept, so dbench's probes read
# its version), as a tar.xz split into parts that each travel in one call of the warm machine; and the
# pure-Python wheels dbench needs that the image lacks (archspec, openpyxl, et-xmlfile on the image of
# 2026-11), in OUT/wheels, carried with the first part.
#
# Usage: scripts/pack-ort-gpu.sh [--version 1.31.1] [--python 3.12] [--part-size 58M] [--out .carry] [--plan]
#   --plan: download nothing, print the lease's calls for the parts already in OUT
#   Here: writes OUT/ort-gpu.tar.xz.partNN, OUT/ort-gpu.sha256 and OUT/wheels/, and prints a lease's calls:
#   one per part, back to back (a warm machine goes back after 30 s idle), each also running a slice of
#   the torch-cuda suite, the last one unpacking the parts (check-gpu.sh --packed) and checking ort-cuda.
# The parts are git-ignored (.carry/). 1.31.1 is what `pip install 'dbench[gpu]'` resolves to (docs/runtimes/gpu.md);
# the image's CUDA 13, cuBLAS and cuDNN serve it, so its [cuda,cudnn] wheels stay behind.
set -euo pipefail

VERSION=1.31.1 PYVER=3.12 PART=58M PLAN_ONLY=0
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=$REPO/.carry
while [ $# -gt 0 ]; do
    case "$1" in
        --version) VERSION=$2; shift 2 ;;
        --python) PYVER=$2; shift 2 ;;
        --part-size) PART=$2; shift 2 ;;
        --out) OUT=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
        --plan) PLAN_ONLY=1; shift ;;
        *) echo "pack-ort-gpu: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
pack() {  # download, unpack and split onnxruntime-gpu; download the pure-Python wheels
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    tag=cp${PYVER/./}
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        -d "$work" "onnxruntime-gpu==$VERSION" 2> >(grep -v "is ignored" >&2) \
        || { echo "pack-ort-gpu: cannot download onnxruntime-gpu $VERSION for Python $PYVER: is a package index reachable?" >&2; exit 1; }
    wheel=$(ls "$work"/onnxruntime_gpu-"$VERSION"-"$tag"-*.whl)
    mkdir -p "$work/stage" "$OUT"
    python3 -m zipfile -e "$wheel" "$work/stage"
    rm -f "$OUT"/ort-gpu.tar.xz.part*
    tar -C "$work/stage" -cf - . | xz -T0 -6 | split -b "$PART" -d - "$OUT/ort-gpu.tar.xz.part"
    (cd "$OUT" && cat ort-gpu.tar.xz.part* | sha256sum | sed 's/-$/ort-gpu.tar.xz/' > ort-gpu.sha256)
    echo "packed $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) into $OUT:"
    ls -l "$OUT"/ort-gpu.tar.xz.part* | awk '{print "  " $5 " bytes  " $NF}'
    rm -rf "$OUT/wheels"
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$OUT/wheels" archspec openpyxl et-xmlfile \
        || { echo "pack-ort-gpu: cannot download dbench's pure-Python dependencies: is a package index reachable?" >&2; exit 1; }
    echo "and the pure-Python wheels the image lacks: $(cd "$OUT/wheels" && echo *.whl)"
}

# A lease's calls, back to back: each carries one part (and the first the wheels) into /tmp/carry, then runs
# one slice of the torch-cuda suite; the last unpacks the parts and checks ort-cuda. Run limits keep the
# four calls, with the machine's start, inside a 15-minute lease (docs/runtimes/gpu.md#a-lease-in-four-calls).
plan() {
    rel=${OUT#"$REPO"/}
    slices=("--only torch-cuda --ops rnn --rounds 1 --no-tests --run-limit 150 --wheels $rel/wheels"
            "--only torch-cuda --ops sparse --rounds 1 --no-peak --run-limit 110"
            "--only torch-cuda --ops gemm,conv --rounds 1 --no-tests --no-peak --run-limit 140")
    parts=("$OUT"/ort-gpu.tar.xz.part*)
    echo "a lease in ${#parts[@]} calls of the warm GPU machine (run: command, carry), back to back:"
    for i in "${!parts[@]}"; do
        carry="\"$rel/ort-gpu.sha256\", \"${parts[$i]#"$REPO"/}\""
        [ "$i" = 0 ] && carry="$carry, \"$rel/wheels\""
        if [ "$i" -lt $(( ${#parts[@]} - 1 )) ] && [ "$i" -lt ${#slices[@]} ]; then
            check="scripts/check-gpu.sh ${slices[$i]}"
        elif [ "$i" -lt $(( ${#parts[@]} - 1 )) ]; then
            check="true"
        else
            check="scripts/check-gpu.sh --packed /tmp/carry --only ort-cuda --rounds 1 --run-limit 120"
        fi
        echo "  $((i + 1)). carry [$carry]"
        echo "     mkdir -p /tmp/carry && cp $rel/ort-gpu.* /tmp/carry/ && $check; tar -czf \$OUT/gpu-check-$((i + 1)).tgz gpu-check"
    done
}

if [ "$PLAN_ONLY" = 0 ]; then pack; fi
ls "$OUT"/ort-gpu.tar.xz.part* >/dev/null 2>&1 || { echo "pack-ort-gpu: no parts in $OUT (run it without --plan first)" >&2; exit 1; }
plan
