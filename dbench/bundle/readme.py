"""The short README that travels in a bundle: what it holds and the commands to run on the board."""

from __future__ import annotations

import dbench
from dbench.gen.manifest import MANIFEST_VERSION

README = "README.txt"

TEXT = """\
dbench bundle: {graphs} DeepBench kernel graphs ({suite}, {precisions})
Exported by dbench {version}; manifest version {manifest_version}.
Files: manifest.json (every graph's spec), one .onnx per graph (no weight data:
weights are generated from seeds on the board), SHA256SUMS (checked before any run).
Nothing in this bundle is executable.

On the board (aarch64 or any other machine with Python >= 3.10):
  pip install --only-binary=:all: 'dbench[board]' onnxruntime   # or openvino
  dbench run --graphs THIS_BUNDLE --runtime ort-cpu            # also: openvino, ort-xnnpack, ort-acl
  dbench run --graphs THIS_BUNDLE --runtime ort-cpu --cpus 4-7 # time one cluster only
On an Intel x86-64 board, OpenVINO through ONNX Runtime (its plugin execution provider):
  pip install --only-binary=:all: 'dbench[board]' onnxruntime onnxruntime-ep-openvino
  dbench run --graphs THIS_BUNDLE --runtime ort-openvino       # --device GPU or NPU for its others

The bundle (archive or unpacked folder) is verified first: a changed, missing,
extra or linked file refuses the run. Results go to results/<machine>/<run>.jsonl
(and .csv); bring that file home and compare it with a server run:
  dbench compare SERVER_RUN.jsonl BOARD_RUN.jsonl
"""


def readme_text(graphs: int, suite: str, precisions: list[str]) -> str:
    """The README for a bundle of `graphs` graphs (no dates: the same export gives the same bytes)."""
    return TEXT.format(
        graphs=graphs,
        suite=suite,
        precisions=", ".join(precisions) or "none",
        version=dbench.__version__,
        manifest_version=MANIFEST_VERSION,
    )


UNITS_TEXT = """\
dbench bundle: the {graphs} execution units of model {model} ({dims}), as {runtime} runs it ({settings}),
and an empty graph (the runtime's cost per call)
Exported by dbench {version}; manifest version {manifest_version}.
Files: manifest.json (every graph's spec), one .onnx per unit (the model's own weights inside),
SHA256SUMS (checked before any run). Nothing in this bundle is executable.

On the board (aarch64 or any other machine with Python >= 3.10):
  pip install --only-binary=:all: 'dbench[board]' {package}
  dbench run --graphs THIS_BUNDLE --runtime {runtime}{run_flags}

Bring the run's .jsonl home and predict the model's latency on the board from it:
  dbench predict {model}.onnx{dim_flags} --runtime {runtime}{run_flags} --units-run BOARD_RUN.jsonl
"""


def units_readme_text(
    graphs: int, model: str, dims: str, runtime: str, settings: str, run_flags: str, package: str
) -> str:
    """The README of a bundle of a model's units (no dates: the same export gives the same bytes)."""
    return UNITS_TEXT.format(
        graphs=graphs,
        model=model,
        dims=dims or "no --dim",
        runtime=runtime,
        settings=settings,
        version=dbench.__version__,
        manifest_version=MANIFEST_VERSION,
        run_flags=run_flags,
        dim_flags=f" --dim {dims}" if dims else "",
        package=package,
    )
