#!/usr/bin/env bash
# Pack onnxruntime-gpu for a lent GPU machine that cannot reach a package index and takes 64 MiB a call:
# the wheel for the machine's Python, unpacked (dist-info kept, so dbench's probes read its version),
# as a tar.xz split into parts that each travel in one call of the warm machine.
#
# Usage: scripts/pack-ort-gpu.sh [--version 1.31.1] [--python 3.12] [--part-size 58M] [--out .carry]
#   Here: writes OUT/ort-gpu.tar.xz.partNN and OUT/ort-gpu.sha256, and prints the calls that carry them.
#   There, one call per part (the machine must stay warm between them: 30 s idle):
#     mkdir -p /tmp/carry && cp .carry/ort-gpu.* /tmp/carry/    (carry: .carry/ort-gpu.sha256, .carry/ort-gpu.tar.xz.partNN)
#   and then, with the last part, scripts/check-gpu.sh --packed /tmp/carry --only ort-cuda ...
# The parts are git-ignored (.carry/). 1.31.1 is what `pip install 'dbench[gpu]'` resolves to (docs/runtimes/gpu.md);
# the image's CUDA 13, cuBLAS and cuDNN serve it, so its [cuda,cudnn] wheels stay behind.
set -euo pipefail

VERSION=1.31.1 PYVER=3.12 PART=58M
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=$REPO/.carry
while [ $# -gt 0 ]; do
    case "$1" in
        --version) VERSION=$2; shift 2 ;;
        --python) PYVER=$2; shift 2 ;;
        --part-size) PART=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "pack-ort-gpu: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
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
echo "carry each part in its own call of the warm GPU machine, in order:"
for part in "$OUT"/ort-gpu.tar.xz.part*; do
    rel=${part#"$REPO"/}
    echo "  carry [\"${OUT#"$REPO"/}/ort-gpu.sha256\", \"$rel\"]: mkdir -p /tmp/carry && cp ${OUT#"$REPO"/}/ort-gpu.* /tmp/carry/"
done
echo "then, in the call after the last part: scripts/check-gpu.sh --packed /tmp/carry --only ort-cuda ..."
