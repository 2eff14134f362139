"""What the fleet costs a graph: the same `--quick` selection timed by `dbench run` on this machine and by
`dbench run --fleet` on a one-node Dask cluster on this machine (scheduler and node on the loopback),
interleaved rep by rep (local/fleet, then fleet/local). Per rep it prints both commands' wall time per
graph and, from the fleet's record, what the node's run spent handing its messages (rounds, rows,
progress) to the scheduler: the dispatch cost that holds up timing, per graph, beside a local --quick
graph's wall time. The goal: under 5 %.

    python benchmarks/fleet_overhead.py [--reps 3] [--suite inference-device] [--ops gemm]

Every process it starts (scheduler, node) is in its own process group, killed when it ends."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dbench.stats.interleave import rotated

START_TIMEOUT_S = 90.0


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


def cluster(folder: Path, procs: list[subprocess.Popen]) -> str:
    """A scheduler and one node (key bench-node) on the loopback; their processes go into `procs`."""
    file = folder / "scheduler.json"
    env = {**os.environ, "DBENCH_MACHINE_KEY": "bench-node", "DBENCH_FLEET_LOCK_DIR": str(folder)}
    procs.append(
        start(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(file),
            ],
            env,
            folder / "scheduler.log",
        )
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not file.is_file() or not file.read_text().strip():
        if time.monotonic() > deadline:
            raise SystemExit("the scheduler did not start")
        time.sleep(0.1)
    time.sleep(0.2)
    address = json.loads(file.read_text())["address"]
    procs.append(
        start(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                address,
                "--nworkers",
                "1",
                "--nthreads",
                "1",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                "--local-directory",
                str(folder / "node"),
            ],
            env,
            folder / "node.log",
        )
    )
    from distributed import Client

    with Client(address, timeout=30, set_as_default=False) as client:
        client.wait_for_workers(1, timeout=START_TIMEOUT_S)
    return address


def timed(command: list[str]) -> float:
    start_s = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - start_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--suite", default="inference-device")
    parser.add_argument("--ops", default="gemm")
    args = parser.parse_args()
    selection = ["--suite", args.suite, "--ops", args.ops, "--quick"]
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="dbench-fleet-bench-") as tmp:
        folder = Path(tmp)
        try:
            address = cluster(folder, procs)
            dbench = [sys.executable, "-m", "dbench", "run", *selection, "--history", "0"]
            rows = []
            for rep in range(args.reps):
                out = folder / f"rep{rep}"
                local = [*dbench, "--out", str(out / "local")]
                fleet = [*dbench, "--fleet", address, "--out", str(out / "fleet")]
                walls = {}
                for name, command in rotated((("local", local), ("fleet", fleet)), rep):
                    walls[name] = timed(command)
                record = json.loads(next((out / "fleet" / "fleets").glob("*.json")).read_text())
                machine = record["machines"]["bench-node"]
                graphs = machine["rows"]
                rows.append(
                    (
                        walls["local"] / graphs,
                        walls["fleet"] / graphs,
                        machine["send_s"] / graphs,
                        machine["messages"] / graphs,
                        machine["wall_s"] / graphs,
                    )
                )
                local_g, fleet_g, send_g, messages_g, node_g = rows[-1]
                print(
                    f"rep {rep + 1}: {graphs} graphs; per graph: local dbench run {local_g * 1e3:.0f} ms, fleet "
                    f"{fleet_g * 1e3:.0f} ms (node's own run {node_g * 1e3:.0f} ms); dispatch {send_g * 1e3:.2f} ms in "
                    f"{messages_g:.1f} messages = {send_g / local_g:.2%} of a local --quick graph",
                    flush=True,
                )
            shares = [send / local for local, _, send, _, _ in rows]
            extra = [(fleet - local) / local for local, fleet, _, _, _ in rows]
            print(
                f"dispatch share of a --quick graph: median {statistics.median(shares):.2%} "
                f"(range {min(shares):.2%} to {max(shares):.2%}) over {len(rows)} reps"
            )
            print(
                f"whole command, fleet vs local, per graph: median {statistics.median(extra):+.1%} "
                f"(range {min(extra):+.1%} to {max(extra):+.1%}); includes connecting and the node's start of each run"
            )
        finally:
            for proc in reversed(procs):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()


if __name__ == "__main__":
    main()
