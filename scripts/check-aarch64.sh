#!/usr/bin/env bash
# Proof that dbench works on aarch64, from an x86 machine: an arm64 Debian root (mmdebstrap, variant
# extract: no chroot privileges needed) run under qemu-user through proot (which re-enters qemu on
# every exec, so the worker process starts, and binds an ARM /proc/cpuinfo, without which ONNX
# Runtime's CPU detection crashes under qemu). aarch64 wheels are downloaded for the root's own
# Python and glibc, dbench[board] + onnxruntime installed into one folder (its size is printed) and
# openvino into another; a bundle exported here is run there with verification on ort-cpu and
# openvino, a tampered copy is refused there, and the board's runs are merged with a server run here.
#
# EMULATED TIMINGS MEAN NOTHING: qemu translates every instruction. What this proves is correctness
# (every row verified against numpy), the workflow, the light install and the board metadata.
#
# Usage: scripts/check-aarch64.sh            (env: HOST_PYTHON, OPS, IDS, SUITE, DBENCH_AARCH64_CACHE)
# Needs: mmdebstrap qemu-user-static proot (apt-get install mmdebstrap qemu-user-static proot), network
# for the first run. Downloads are cached under .cache/aarch64/ (git-ignored). Exit 0 when every
# board row is ok and the tampered bundle was refused; 3 when a tool is missing.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${DBENCH_AARCH64_CACHE:-$REPO/.cache/aarch64}
HOST_PYTHON=${HOST_PYTHON:-python3}
# The device suite's GEMV and RNN kernels with batch 1 (9 graphs): emulated, the big GEMMs take minutes each.
OPS=${OPS:-gemm,rnn}
IDS=${IDS:-*_n1_*}
SUITE=${SUITE:-bookworm}
ROOT=$CACHE/root
START=$(date +%s)

say() { printf '[check-aarch64 %4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }

missing=""
for tool in mmdebstrap qemu-aarch64-static proot; do
    command -v "$tool" >/dev/null || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    echo "check-aarch64: missing tools:$missing; install them with: apt-get install mmdebstrap qemu-user-static proot" >&2
    exit 3
fi
dbench() { PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" "$HOST_PYTHON" -m dbench "$@"; }
mkdir -p "$CACHE"

# 1. An arm64 Debian root holding Python (extract: packages unpacked, no maintainer scripts, no chroot).
if [ ! -x "$ROOT/usr/bin/python3" ]; then
    say "building the arm64 $SUITE root with mmdebstrap (variant extract)"
    mmdebstrap --quiet --variant=extract --architectures=arm64 --include=python3,libstdc++6,libgomp1 \
        "$SUITE" "$CACHE/root.tar" http://deb.debian.org/debian
    rm -rf "$ROOT" && mkdir -p "$ROOT" && tar -xf "$CACHE/root.tar" -C "$ROOT" && rm "$CACHE/root.tar"
fi
# An ARM /proc/cpuinfo (a 4-core Cortex-A72 board): under qemu-user the guest would read the x86 host's.
cat > "$CACHE/cpuinfo" <<'CPUINFO'
processor	: 0
BogoMIPS	: 108.00
Features	: fp asimd evtstrm crc32 cpuid
CPU implementer	: 0x41
CPU architecture: 8
CPU variant	: 0x0
CPU part	: 0xd08
CPU revision	: 3

processor	: 1
BogoMIPS	: 108.00
Features	: fp asimd evtstrm crc32 cpuid
CPU implementer	: 0x41
CPU architecture: 8
CPU variant	: 0x0
CPU part	: 0xd08
CPU revision	: 3

Hardware	: emulated (qemu-user)
Model	: dbench check-aarch64 (qemu-user, Cortex-A72 cpuinfo)
CPUINFO
board() {  # board ARGS...: the root's python3 with ARGS (the root has no shell). The cache folder is bound at
    # its own path: proot 5.1 does not translate faccessat2's path, so guest and host paths must agree.
    # /proc, /sys and /dev are the host's (psutil reads /proc/meminfo, ORT's cpuinfo /sys/devices/system/cpu),
    # except /proc/cpuinfo: an ARM one, else ORT's CPU detection fails on the x86 host's under qemu-user.
    HOME=$CACHE PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$CACHE/site-board:$CACHE/site-openvino \
        proot -q qemu-aarch64-static -r "$ROOT" -b /proc -b /sys -b /dev -b "$CACHE/cpuinfo:/proc/cpuinfo" \
        -b "$CACHE" -w "$CACHE" \
        /usr/bin/python3 "$@"
}
read -r PYVER GLIBC < <(qemu-aarch64-static -L "$ROOT" "$ROOT/usr/bin/python3" -c \
    'import platform, sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}", platform.libc_ver()[1])')
say "root: Python $PYVER, glibc $GLIBC (aarch64)"

# 2. aarch64 wheels for exactly this Python and glibc: every manylinux tag the root's glibc accepts
#    (asking for manylinux2014 alone silently picks years-old releases; openvino needs glibc >= 2.35).
PLATFORMS=(--platform manylinux2014_aarch64)
for minor in $(seq 17 "${GLIBC#2.}"); do PLATFORMS+=(--platform "manylinux_2_${minor}_aarch64"); done
WHEEL_ARGS=(--only-binary=:all: "${PLATFORMS[@]}" --python-version "$PYVER" --implementation cp)
rm -rf "$CACHE/dist" && "$HOST_PYTHON" -m pip wheel --quiet --no-deps -w "$CACHE/dist" "$REPO"
DBENCH_WHEEL=$(ls "$CACHE"/dist/dbench-*.whl)
rm -f "$CACHE"/wheels/dbench-*.whl  # only dist/ holds dbench: a stale copy of the same version would win
install() {  # install() TARGET REQUIREMENT...: from the downloaded wheels only
    rm -rf "$1" && "$HOST_PYTHON" -m pip install --quiet --no-index --find-links "$CACHE/wheels" --find-links "$CACHE/dist" \
        --target "$1" "${WHEEL_ARGS[@]}" "${@:2}"
}
installed() { install "$CACHE/site-board" "dbench[board]" onnxruntime && install "$CACHE/site-openvino" openvino; }
if ! installed 2>/dev/null; then  # the first time, or when a requirement changed: fetch, then install
    say "downloading aarch64 wheels (cached in $CACHE/wheels)"
    "$HOST_PYTHON" -m pip download --quiet -d "$CACHE/wheels" "${WHEEL_ARGS[@]}" "$DBENCH_WHEEL[board]" onnxruntime openvino
    rm -f "$CACHE"/wheels/dbench-*.whl  # pip copies dbench's wheel there too: a later build has the same name
    installed
fi
say "light install, dbench[board] + onnxruntime for aarch64: $(du -sh "$CACHE/site-board" | cut -f1) ($(ls "$CACHE/site-board" | grep -c dist-info) packages; no pandas, no pyarrow: $(ls "$CACHE/site-board" | grep -ciE '^(pandas|pyarrow)' || true) found); openvino adds $(du -sh "$CACHE/site-openvino" | cut -f1)"

# 3. A bundle exported here, a tampered copy, and the server's run of the same bundle.
rm -rf "$CACHE/bundle.tar.gz" "$CACHE/tampered" "$CACHE/results" "$CACHE/board-results"
dbench export --suite inference-device --ops "$OPS" --id "$IDS" --out "$CACHE/bundle.tar.gz"
dbench export --suite inference-device --ops "$OPS" --id "$IDS" --out "$CACHE/tampered" >/dev/null
graph=$(ls "$CACHE"/tampered/*.onnx | head -1) && printf '\0' >> "$graph"
say "server run (this x86 machine, ort-cpu)"
dbench run --graphs "$CACHE/bundle.tar.gz" --runtime ort-cpu --quick --out "$CACHE/results" >/dev/null

# 4. On the emulated board: the tampered bundle must be refused, the real one run on both runtimes.
say "board: the tampered bundle must be refused"
if board -m dbench run --graphs "$CACHE/tampered" --quick --out "$CACHE/board-results" 2>"$CACHE/tampered.err" >/dev/null \
        || ! grep -q "does not match its checksum" "$CACHE/tampered.err"; then
    echo "check-aarch64: FAILED: the tampered bundle was not refused for its checksum: $(cat "$CACHE/tampered.err")" >&2; exit 1
fi
say "refused: $(grep 'error:' "$CACHE/tampered.err")"
for runtime in ort-cpu openvino; do
    # One thread: under qemu-user, runtime threads that spin-wait for each other crawl (minutes per graph).
    say "board run: $runtime, 1 thread (emulated: slow, and its timings mean nothing)"
    board -m dbench run --graphs "$CACHE/bundle.tar.gz" \
        --runtime "$runtime" --threads 1 --quick --profile-runs 2 --timeout 900 --out "$CACHE/board-results" >/dev/null
done

# 5. Home again: the board's runs beside the server's, compared kernel by kernel, and checked.
mkdir -p "$CACHE/results/aarch64-qemu"
cp "$CACHE"/board-results/*/*.jsonl "$CACHE/results/aarch64-qemu/"
server_log=$(ls "$CACHE"/results/*/*.jsonl | grep -v aarch64-qemu | head -1)
for log in "$CACHE"/results/aarch64-qemu/*.jsonl; do
    dbench compare "$server_log" "$log" | tail -n 4
done
"$HOST_PYTHON" - "$CACHE/results" <<'SUMMARY'
import json, sys
from pathlib import Path

bad = 0
for log in sorted(Path(sys.argv[1]).rglob("*.jsonl")):
    header, *rows = [json.loads(line) for line in log.read_text().splitlines()]
    host, board = header["host"], header["host"].get("board", {})
    statuses = {}
    for row in rows:
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    verified = sum(1 for row in rows if row.get("verified"))
    precisions = sorted({f'{row["precision"]}->{row["precision_executed"]}' for row in rows})
    where = "board (emulated aarch64)" if "aarch64" in host["os"] else "server"
    print(f"{where}: {header['runtime']['name']} {header['runtime']['version']}: {len(rows)} rows {statuses}, "
          f"{verified} verified, precision {', '.join(precisions)}; os {host['os']}; board model {board.get('model')!r}, "
          f"parts {board.get('cpu_parts')}, features {board.get('features')}")
    if where.startswith("board"):
        bad += sum(1 for row in rows if row["status"] != "ok" or not row.get("verified"))
print("EMULATED TIMINGS MEAN NOTHING: qemu-user translates every aarch64 instruction; compare them with nothing.")
sys.exit(1 if bad else 0)
SUMMARY
say "done: every board row ok and verified; the tampered bundle refused"
