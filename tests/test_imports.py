"""The core (catalog, gen, store, CLI) works without any runtime: importing it loads none."""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "dbench.cli",
    "dbench.catalog",
    "dbench.gen.plan",
    "dbench.gen.family",
    "dbench.gen.options",
    "dbench.gen.gemm",
    "dbench.gen.conv",
    "dbench.gen.rnn",
    "dbench.gen.int8",
    "dbench.gen.sparse",
    "dbench.gen.writer",
    "dbench.store.export",
    "dbench.store.compare",
    "dbench.runtimes.registry",
    "dbench.orchestrator.run",
    "dbench.render.run",
    "dbench.orchestrator.predict",
    "dbench.sources.units",
    "dbench.units.prediction",
    "dbench.render.predict",
    "dbench.render.profile",
    "dbench.report.predictions",
]
RUNTIMES = ["onnxruntime", "openvino", "tensorrt", "mpi4py", "cupy", "torch"]


def test_core_imports_no_runtime():
    code = (
        f"import sys, importlib\nfor m in {CORE!r}: importlib.import_module(m)\n"
        f"loaded = [m for m in {RUNTIMES!r} if m in sys.modules]\nprint(loaded)\nsys.exit(1 if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_gen_runs_with_runtimes_hidden(tmp_path):
    """`dbench gen` and `dbench list` with onnxruntime, openvino and mpi4py made unimportable."""
    code = (
        "import sys\nfor m in ('onnxruntime', 'openvino', 'mpi4py'): sys.modules[m] = None\n"
        "from dbench.cli import app\nsys.argv = ['dbench', 'gen', '--suite', 'inference-device', '--out', "
        "sys.argv[1]]\n"
        "app()"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list((tmp_path / "inference-device").glob("*.onnx"))) > 40


def test_validating_a_run_starts_no_runtime():
    """The parent checks every runtime's options (OpenVINO's included) without importing any runtime."""
    code = (
        "import sys\nfrom dbench.orchestrator.request import RunRequest, validate\n"
        "for name, extra in (('ort-cpu', {'use_arena': '1'}), ('openvino', {'NUM_STREAMS': '2'})):\n"
        "    validate(RunRequest(runtime=name, threads=1, extra=extra))\n"
        f"loaded = [m for m in {RUNTIMES!r} if m in sys.modules]\nprint(loaded)\nsys.exit(1 if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
