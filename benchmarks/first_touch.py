"""What writing freshly allocated memory costs a new process, by how long the memory lay free before:
a VM whose balloon driver reports free pages to its host (virtio-balloon free page reporting) hands
them back after a few seconds, and the next process to touch them waits for the host to back them
again. dbench's rounds are fresh processes minutes apart, so a 2 GB weight is drawn into such memory
every round. Each measurement is a fresh Python process that fills 1 GiB, after the previous one
exited and a pause; pauses interleaved, in rounds.

    python benchmarks/first_touch.py [--rounds 3] [--pauses 0,5,15,30] [--gib 1]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROBE = """
import sys, time
import numpy as np
block = np.empty(int(float(sys.argv[1]) * 2**28), dtype=np.float32)
start = time.perf_counter()
block.fill(1.0)
fresh = time.perf_counter() - start
start = time.perf_counter()
block.fill(2.0)
print(fresh, time.perf_counter() - start)
"""


def touch(gib: float) -> tuple[float, float]:
    """Seconds per GiB to write fresh memory in a new process, and to write it again."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(gib)], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]) / gib, float(out[1]) / gib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pauses", type=lambda t: [float(v) for v in t.split(",")], default=[0.0, 5.0, 15.0, 30.0])
    parser.add_argument("--gib", type=float, default=1.0)
    args = parser.parse_args()
    balloon = Path("/sys/bus/virtio/drivers/virtio_balloon").exists()
    print(f"virtio_balloon driver present: {balloon}; {args.rounds} rounds, pauses {args.pauses} s, {args.gib:g} GiB a process")
    fresh: dict[float, list[float]] = {p: [] for p in args.pauses}
    again: list[float] = []
    for number in range(args.rounds):
        order = args.pauses[number % len(args.pauses):] + args.pauses[:number % len(args.pauses)]
        for pause in order:
            touch(args.gib)  # the memory this measurement's process will get was just freed by this one
            time.sleep(pause)
            first, second = touch(args.gib)
            fresh[pause].append(first)
            again.append(second)
    print("| pause before the process (s) | first write, s per GiB: median (min-max over rounds) |")
    print("|---:|---|")
    for pause, values in fresh.items():
        print(f"| {pause:g} | {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f}) |")
    print(f"written again in the same process: {statistics.median(again):.3f} s per GiB (median of {len(again)})")


if __name__ == "__main__":
    main()
