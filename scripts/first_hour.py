"""The README's first hour, proved: in a fresh clone and a fresh virtual environment, the Quick start's
first command (its run with --quick), then every command of "The CLI at a glance" in its order. Placeholders become
real things (the ids of the runs made before, `examples/models/`, this machine's CPUs), and the timed
runs are narrowed to a few graphs with --quick (STEPS) so that CI stays short. Every command must exit
0; the first failure stops the proof with the command, its status and the end of its output.

    python3 scripts/first_hour.py            # from a clone; proves its committed HEAD
    python3 scripts/first_hour.py --keep     # keep the clone (its results/, report/) to look at

`tests/test_first_hour.py` checks, without running anything, that STEPS names every glance command."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_EXTRA = "--quick"
"""Appended to the first command: its 47 graphs with --quick (minutes less; the install and every graph still run)."""
FEW = ["--id", "gemm_m3072_n[124]_k1024_nn"]
"""Three small inference GEMMs (3072 x 1, 2, 4 x 1024): the catalog runs' stand-in for the whole suite."""
STEPS: dict[str, list[str]] = {
    "pip install -e '.[report,openvino,mpi]'": [],
    "dbench list --suite inference --ops gemm": [],
    "dbench list --suite transformer": [],
    "dbench gen --suite inference --out graphs/": [],
    "dbench run --suite inference --runtime ort-cpu": [*FEW, "--quick"],
    "dbench run --graphs graphs/inference --runtime openvino": [*FEW, "--quick"],
    "dbench run --suite inference-device --batch 1,8,32 --json": ["--ops", "rnn", "--quick"],
    "dbench run --resume RUN-ID": [],
    "dbench run --suite inference --budget 10m": [*FEW, "--quick"],
    "dbench run --suite inference-device --runtime ort-cpu,openvino": ["--id", "gemm_m*_n1_k*", "--quick"],
    "dbench run --suite inference-device --streams 1,2,4": ["--id", "gemm_m64_n1_k1216_nn", "--quick"],
    "dbench run --id 'gemm_m35_*' --scenario server --rate 400 --latency-bound 5": ["--quick", "--search-time", "3"],
    "dbench compare RUN": [],
    "dbench calibrate": ["--budget", "20s", "--id", "gemm_m64_n1_k1216_nn,gemm_m128_n1500_k1280_nn"],
    "dbench run --ops gemm --runtime ort-cpu,openvino --resolve 5%": [
        "--id",
        "gemm_m64_n1_k1216_nn",
        "--budget",
        "30s",
    ],
    "dbench compare RUN-A RUN-B": [],
    "dbench run --suite inference --runtime torch": [*FEW, "--quick"],
    "dbench report results/": [],
    "dbench report results/ --baseline torch": [],
    "dbench peak": ["--runtime", "ort-cpu"],
    "dbench env": [],
    "dbench cache": [],
    "dbench runtimes": [],
    "dbench allreduce --np 4": ["--sizes", "100000,4M", "--iters", "5"],
    "dbench run --suite inference --shard 1/4": [*FEW, "--quick"],
    "dbench list --from-model model.onnx --dim batch=1": [],
    "dbench gen --from-model model.onnx --dim batch=1": [],
    "dbench run --graphs graphs/model/": ["--quick"],
    "dbench run --model model.onnx --dim batch=1 --kernels-run KERNELS-RUN": ["--quick"],
    "dbench predict model.onnx --dim batch=1 --runtime openvino": ["--quick"],
    "dbench export --units model.onnx --dim batch=1 --out u.tar.gz": [],
    "dbench run --suite inference-device --show-profile": ["--id", "gemm_m64_n1_k1216_nn", "--quick"],
    "dbench run --graphs folder-of-onnx-files/ --dim batch=1,seq=32": ["--quick"],
    "dbench export --suite inference-device --out b.tar.gz": [],
    "dbench run --graphs b.tar.gz --cpus 4-7": ["--id", "gemm_m64_n1_k1216_nn", "--quick"],
}
"""Each glance command (whitespace collapsed) -> the arguments appended to it here."""
RUN_MADE_BY = {
    "RUN-A": "dbench run --suite inference --runtime ort-cpu",
    "RUN-B": "dbench run --graphs graphs/inference --runtime openvino",
    "RUN": "dbench run --suite inference-device --runtime ort-cpu,openvino",
    "KERNELS-RUN": "dbench run --graphs graphs/model/",
}
"""Run placeholders -> the glance command whose run they name."""
PREPARE = {"dbench run --suite inference --runtime torch": "pip install 'torch==2.13.0'"}
"""Commands run before a glance command, as its README comment says: torch's CPU build, the one the test
extra pins (on this project's machines it resolves to the 2.13.0+cpu wheel: docs/runtimes/torch.md)."""
MODEL = "examples/models/resnet18.onnx"
FOREIGN = "examples/models/lstm.onnx"
STEP_TIMEOUT = 1800


def normalized(command: str) -> str:
    return " ".join(command.split())


def readme_commands(text: str) -> tuple[str, list[str]]:
    """The Quick start's first command and the glance block's commands (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    quick = next(b for b in blocks if "python3 -m venv" in b)
    first = next(line for line in quick.splitlines() if line.startswith("python3 -m venv"))
    glance_section = text[text.index("## The CLI at a glance") :]
    glance = re.search(r"```bash\n(.*?)```", glance_section, re.S).group(1)
    commands = [normalized(line.split(" # ")[0] if " # " in line else line) for line in glance.splitlines()]
    return first, [c for c in commands if c]


@dataclass
class Proof:
    """The clone, and what its commands made so far: runs by the command that made them."""

    clone: Path
    runs: dict[str, list[str]] = field(default_factory=dict)
    interrupted: str = ""

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return {**env, "PATH": f"{self.clone / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "120"}

    def run_ids(self) -> set[str]:
        return {p.stem for p in (self.clone / "results").glob("*/*.jsonl")}

    def substituted(self, command: str) -> list[str]:
        """The command's words with its placeholders made real, and STEPS' arguments appended."""
        words = shlex.split(command)
        real = []
        for i, word in enumerate(words):
            if word in RUN_MADE_BY:
                word = self.runs[RUN_MADE_BY[word]][-1]
            elif word == "RUN-ID":
                word = self.interrupted
            elif word == "model.onnx":
                word = MODEL
            elif word == "graphs/model/":
                word = f"graphs/{Path(MODEL).stem}/"
            elif word == "folder-of-onnx-files/":
                word = str(self.foreign_folder())
            elif i > 0 and words[i - 1] == "--cpus":
                word = ",".join(map(str, sorted(os.sched_getaffinity(0))))
            real.append(word)
        return real + STEPS[command]

    def foreign_folder(self) -> Path:
        folder = self.clone / "foreign"
        folder.mkdir(exist_ok=True)
        shutil.copy(self.clone / FOREIGN, folder)
        return folder

    def interrupt_a_run(self) -> None:
        """A run stopped by SIGTERM after its first row, as a user's Ctrl-C would: the run RUN-ID names."""
        before = self.run_ids()
        command = ["dbench", "run", "--suite", "inference", *FEW, "--min-time", "1"]
        with subprocess.Popen(
            command,
            cwd=self.clone,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as job:
            try:
                deadline = time.monotonic() + 600
                while time.monotonic() < deadline and job.poll() is None:
                    logs = [p for p in (self.clone / "results").glob("*/*.jsonl") if p.stem not in before]
                    if logs and len(logs[0].read_text().splitlines()) >= 2:
                        job.send_signal(signal.SIGTERM)
                        break
                    time.sleep(0.2)
                _, err = job.communicate(timeout=120)
            finally:
                if job.poll() is None:
                    os.killpg(job.pid, signal.SIGKILL)
        if job.returncode != 130:
            fail(" ".join(command) + " (stopped after its first row)", job.returncode, err)
        (self.interrupted,) = self.run_ids() - before


def fail(command: str, code: int | None, output: str) -> None:
    print(f"\nFAILED (exit {code}): {command}\n{output[-4000:]}", flush=True)
    sys.exit(1)


def run_step(proof: Proof, label: str, words: list[str], shell: bool = False) -> None:
    """One command in the clone, in a process group of its own that is killed on a timeout; a command
    with --json must print one JSON object on stdout and nothing else there."""
    start = time.monotonic()
    print(f"$ {label}", flush=True)
    with subprocess.Popen(
        label if shell else words,
        shell=shell,
        cwd=proof.clone,
        env=proof.env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as job:
        try:
            out, err = job.communicate(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            out, err = job.communicate()
            fail(label, None, f"killed after {STEP_TIMEOUT} s\n{out}{err}")
    if job.returncode != 0:
        fail(label, job.returncode, out + err)
    if "--json" in words:
        try:
            json.loads(out)
        except json.JSONDecodeError as error:
            fail(label, 0, f"stdout is not one JSON object ({error}):\n{out[:2000]}")
    print(f"  ok in {time.monotonic() - start:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone and print where it is")
    args = parser.parse_args()
    first, glance = readme_commands((ROOT / "README.md").read_text())
    unknown = [c for c in glance if c not in STEPS]
    if unknown:
        sys.exit(f"scripts/first_hour.py does not know these README commands yet: {unknown}; add them to STEPS")
    work = Path(tempfile.mkdtemp(prefix="dbench-first-hour-"))
    started = time.monotonic()
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(work / "dbench")], check=True)
        proof = Proof(work / "dbench")
        run_step(proof, f"{first} {FIRST_EXTRA}", [], shell=True)
        for command in glance:
            if command == "dbench run --resume RUN-ID":
                proof.interrupt_a_run()
            if command in PREPARE:
                run_step(proof, PREPARE[command], [], shell=True)
            before = proof.run_ids()
            words = proof.substituted(command)
            run_step(proof, shlex.join(words), words)
            proof.runs[command] = sorted(proof.run_ids() - before)
        print(
            f"the README's first command and its {len(glance)} glance commands ran in "
            f"{(time.monotonic() - started) / 60:.1f} min",
            flush=True,
        )
    finally:
        if args.keep:
            print(f"kept: {work / 'dbench'}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
