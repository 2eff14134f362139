"""The family contract: every family module provides what family.Family states, precision is a
dimension each family declares (int8 covers GEMM and convolution), and the generator modules
import one another without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from dbench.catalog import ConvKernel, RnnKernel, SparseKernel
from dbench.errors import UnsupportedError
from dbench.gen import plan as gen_plan
from dbench.gen.family import Family, make_spec
from dbench.gen.feeds import make_feeds
from dbench.gen.options import GenOptions

GEN = Path(gen_plan.__file__).parent


@pytest.mark.parametrize("name", sorted(gen_plan.FAMILIES))
def test_every_family_module_follows_the_protocol(name):
    family = gen_plan.FAMILIES[name]
    assert isinstance(family, Family), f"{family.__name__} lacks part of family.Family"
    assert set(family.SUPPORTED_PRECISIONS) <= {"fp32", "fp16", "bf16", "int8", "int4"}


def test_int8_is_a_precision_of_gemm_and_conv_only():
    assert [n for n, f in gen_plan.FAMILIES.items() if "int8" in f.SUPPORTED_PRECISIONS] == ["gemm", "conv"]
    kernels = [
        RnnKernel(cell="gru", hidden=4, batch=2, timesteps=3),
        SparseKernel(m=4, n=4, k=4, a_t=False, b_t=False, sparsity=0.9),
    ]
    for request in gen_plan.plan(kernels, ("inference_server",), GenOptions(precision="int8")):
        with pytest.raises(
            UnsupportedError, match=rf"^{request.kernel.family} kernels have no int8 form \(int8 covers gemm, conv\)$"
        ):
            gen_plan.build(request)


def test_whole_output_families_refuse_a_row_sample():
    graph = gen_plan.FAMILIES["conv"].build(
        ConvKernel(w=5, h=5, c=2, n=3, k=2, s=3, r=3, pad_w=1, pad_h=1, wstride=1, hstride=1), "fp32", "fwd", "conv"
    )
    with pytest.raises(ValueError, match="whole outputs"):
        gen_plan.reference(graph.spec, make_feeds(graph.spec), rows=np.array([0]))


def test_make_spec_without_tensors_describes_a_missing_graph():
    """The spec a run records for a graph that has no form in its precision."""
    kernel = RnnKernel(cell="lstm", hidden=4, batch=2, timesteps=3)
    spec = make_spec(kernel, "int8", "fwd", "none")
    assert spec.id == f"{kernel.id}.fwd.none.int8"
    assert (spec.inputs, spec.outputs, spec.flops_executed, spec.flops) == ((), (), 0, kernel.flops())


def _gen_imports(path: Path) -> set[str]:
    """The dbench.gen modules a module imports, at top level, inside functions, or named as a
    string for importlib."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("dbench.gen."):
            names.add(node.value.split(".")[2])
        elif isinstance(node, ast.ImportFrom) and node.module == "dbench.gen":
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dbench.gen."):
            names.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            names |= {a.name.split(".")[2] for a in node.names if a.name.startswith("dbench.gen.")}
    return names


def test_generator_modules_import_without_a_cycle():
    graph = {p.stem: _gen_imports(p) for p in GEN.glob("*.py")}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join(path + (module,))}"
        if module in done:
            return
        for imported in graph.get(module, ()):
            visit(imported, path + (module,))
        done.add(module)

    for module in graph:
        visit(module, ())
