"""The report shows the transformer suite's prefill and decode rows apart: a real quick run of two RMSNorm
kernels, one per phase, from a kernel file, reported into one section per family and phase."""

from __future__ import annotations

from typer.testing import CliRunner

from dbench.cli import app
from dbench.report.phases import family_section
from tests.helpers import write_csv
from tests.report_fixtures import QUICK_UNCAPPED


def test_family_section_names_the_phase():
    assert family_section("gemm", ["inference_server"]) == "gemm"
    assert family_section("gemm", ["transformer_decode"]) == "gemm · decode"
    assert family_section("gemm", ["transformer_decode", "transformer_prefill"]) == "gemm · prefill+decode"
    assert family_section("norm", None) == "norm"


def test_report_puts_prefill_and_decode_rows_in_their_own_sections(tmp_path):
    kernels = write_csv(
        tmp_path / "k.csv",
        "family,suite,app,role,kind,batch,seq,hidden",
        "norm,transformer_prefill,tiny,mlp norm,rms,1,8,32",
        "norm,transformer_decode,tiny,mlp norm,rms,1,1,32",
    )
    out = tmp_path / "res"
    runner = CliRunner()
    run = ["run", "--runtime", "ort-cpu", "--kernels", str(kernels), "--suite", "transformer"]
    result = runner.invoke(app, [*run, *QUICK_UNCAPPED, "--threads", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "rep")])
    assert report.exit_code == 0, report.output
    text = (tmp_path / "rep" / "report.md").read_text()
    sections = {part.split("\n", 1)[0]: part for part in text.split("\n## ")}
    assert "norm_rms_b1_s8_h32" in sections["norm · prefill"] and "s1_h32" not in sections["norm · prefill"]
    assert "norm_rms_b1_s1_h32" in sections["norm · decode"] and "s8_h32" not in sections["norm · decode"]
