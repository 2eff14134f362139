"""A real Dask cluster on this machine for the fleet's tests: a scheduler on the loopback and nodes, each a
`dask worker` (nanny and worker process) with a machine key of its own ($DBENCH_MACHINE_KEY), so one host
plays several machines. Every process is started by tests.processes.process_tree and killed by process
group when the cluster's `with` block ends, however it ends."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.processes import process_tree

START_TIMEOUT_S = 90.0


class LocalCluster:
    """`with LocalCluster(tmp) as cluster: cluster.add_node("node-a")`; `cluster.address` is the scheduler's."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.stack = contextlib.ExitStack()
        self.nodes: dict[str, subprocess.Popen] = {}
        self.address = ""

    def __enter__(self) -> LocalCluster:
        self.stack.__enter__()
        file = self.folder / "scheduler.json"
        file.unlink(missing_ok=True)  # a stale file would name a scheduler long gone
        self.stack.enter_context(
            process_tree(
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
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not file.is_file() or not file.read_text().strip():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written whole just before the scheduler listens
        self.address = json.loads(file.read_text())["address"]
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.__exit__(*exc)

    def env(self, key: str) -> dict[str, str]:
        # Each node plays a machine of its own: its own timing lock, which on one real machine they would share.
        return {**os.environ, "DBENCH_MACHINE_KEY": key, "DBENCH_LOCK_DIR": str(self.folder / f"{key}-lock")}

    def add_node(self, key: str) -> None:
        """Start a node (nanny + worker, one thread) named `key` and wait until the scheduler lists it."""
        before = self.workers()
        log = (self.folder / f"{key}.log").open("ab")
        self.nodes[key] = self.stack.enter_context(
            process_tree(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    self.address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                    "--name",
                    key,
                    "--local-directory",
                    str(self.folder / key),
                ],
                env=self.env(key),
                stdout=log,
                stderr=log,
            )
        )
        self.wait(lambda workers: len(workers - before) >= 1, f"node {key} did not join")

    def workers(self) -> set[str]:
        from distributed import Client

        with Client(self.address, timeout=30, set_as_default=False) as client:
            return set(client.scheduler_info(n_workers=-1)["workers"])

    def wait(self, done, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not done(self.workers()):
            assert time.monotonic() < deadline, what
            time.sleep(0.2)

    def kill_worker_process(self, key: str) -> None:
        """SIGKILL the node's worker process alone: its nanny starts a new one (the machine comes back)."""
        nanny = psutil.Process(self.nodes[key].pid)
        children = [p for p in nanny.children() if "python" in p.name()]
        assert children, f"node {key} has no worker process"
        for child in children:
            child.send_signal(signal.SIGKILL)

    def kill_node(self, key: str) -> None:
        """SIGKILL the node's whole tree (nanny, worker, its dbench workers): the machine is gone."""
        node = self.nodes.pop(key)
        for proc in [*psutil.Process(node.pid).children(recursive=True), psutil.Process(node.pid)]:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGKILL)
        node.wait(30)
