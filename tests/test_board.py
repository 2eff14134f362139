"""Board metadata parsed from sample /proc and /sys trees of real ARM boards (formats as their kernels
print them), the same code on this machine (no ARM fields, no crash), and `--cpus` pinning."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.affinity import available_cpus, format_cpus, parse_cpus
from dbench.cli import app
from dbench.errors import UsageError
from dbench.store.board import board_metadata, midr_fields, parse_cpuinfo

ARM64_BLOCK = """processor\t: {n}
BogoMIPS\t: 48.00
Features\t: {features}
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: {variant}
CPU part\t: {part}
CPU revision\t: {revision}

"""
PI4_TAIL = (
    "Hardware\t: BCM2835\nRevision\t: c03111\nSerial\t\t: 10000000a1b2c3d4\nModel\t\t: Raspberry Pi 4 Model B Rev 1.1\n"
)
RK3588_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp"
V1_FEATURES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop "
    "sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 "
    "i8mm bf16 dgh rng"
)


def pi4_cpuinfo() -> str:
    """A Raspberry Pi 4 (4x Cortex-A72) running a 64-bit kernel."""
    blocks = "".join(
        ARM64_BLOCK.format(n=n, features="fp asimd evtstrm crc32 cpuid", variant="0x0", part="0xd08", revision=3)
        for n in range(4)
    )
    return blocks + PI4_TAIL


def rk3588_tree(root: Path) -> Path:
    """An RK3588 board (4x Cortex-A55 at 1.8 GHz + 4x Cortex-A76 at 2.4 GHz) with device tree and sysfs."""
    little = [
        ARM64_BLOCK.format(n=n, features=RK3588_FEATURES, variant="0x2", part="0xd05", revision=0) for n in range(4)
    ]
    big = [
        ARM64_BLOCK.format(n=n, features=RK3588_FEATURES, variant="0x4", part="0xd0b", revision=0) for n in range(4, 8)
    ]
    files = {"proc/cpuinfo": "".join(little + big), "proc/device-tree/model": "Radxa ROCK 5 Model B\0"}
    for n in range(8):
        midr = 0x412FD050 if n < 4 else 0x414FD0B0
        files[f"sys/devices/system/cpu/cpu{n}/regs/identification/midr_el1"] = f"0x{midr:016x}\n"
        files[f"sys/devices/system/cpu/cpu{n}/cpufreq/cpuinfo_max_freq"] = "1800000\n" if n < 4 else "2400000\n"
        files[f"sys/devices/system/cpu/cpu{n}/cpufreq/scaling_governor"] = "schedutil\n" if n < 4 else "performance\n"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_parse_cpuinfo_shares_trailing_fields():
    cores = parse_cpuinfo(pi4_cpuinfo())
    assert sorted(cores) == [0, 1, 2, 3]
    assert cores[3]["CPU part"] == "0xd08" and cores[3]["Model"] == "Raspberry Pi 4 Model B Rev 1.1"


def test_midr_fields_decode_the_register():
    fields = midr_fields(0x414FD0B0)
    assert fields == {
        "midr": "0x414fd0b0",
        "implementer": "ARM",
        "part": "0xd0b",
        "name": "Cortex-A76",
        "variant": 4,
        "revision": 0,
    }
    assert midr_fields(0x511F8030)["implementer"] == "Qualcomm" and midr_fields(0x511F8030)["name"] == ""


def test_pi4_from_cpuinfo_alone(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text(pi4_cpuinfo())
    board = board_metadata(tmp_path)
    assert board["model"] == "Raspberry Pi 4 Model B Rev 1.1"
    assert board["cpu_parts"] == ["Cortex-A72"] and board["features"] == ["asimd"]
    assert board["clusters"] == [] and board["governors"] == []
    assert [c["midr"] for c in board["cores"]] == ["0x410fd083"] * 4


def test_big_little_board_from_sysfs(tmp_path):
    board = board_metadata(rk3588_tree(tmp_path))
    assert board["model"] == "Radxa ROCK 5 Model B"
    assert board["cpu_parts"] == ["Cortex-A55", "Cortex-A76"]
    assert board["features"] == ["asimd", "asimdhp", "asimddp"]
    assert board["clusters"] == [
        {"cpus": "4-7", "max_mhz": 2400, "cores": 4},
        {"cpus": "0-3", "max_mhz": 1800, "cores": 4},
    ]
    assert board["governors"] == ["performance", "schedutil"]
    assert board["cores"][5]["name"] == "Cortex-A76" and board["cores"][5]["variant"] == 4


def test_server_arm_features(tmp_path):
    """A Neoverse-V1 server core (AWS Graviton3): SVE, int8 and bf16 matrix instructions."""
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text(
        ARM64_BLOCK.format(n=0, features=V1_FEATURES, variant="0x1", part="0xd40", revision=1)
    )
    board = board_metadata(tmp_path)
    assert board["cpu_parts"] == ["Neoverse-V1"]
    assert board["features"] == ["asimd", "asimdhp", "asimddp", "sve", "i8mm", "bf16", "svei8mm", "svebf16"]


def test_this_machine_and_an_empty_root(tmp_path):
    assert board_metadata(tmp_path) == {
        "model": None,
        "cpu_parts": [],
        "features": [],
        "clusters": [],
        "governors": [],
        "cores": [],
    }
    board = board_metadata()
    json.dumps(board)
    if platform.machine() in ("x86_64", "AMD64"):
        assert board["features"] == [] and board["cpu_parts"] == []


def test_cpu_lists():
    assert format_cpus([6, 0, 1, 2, 3]) == "0-3,6" and format_cpus([]) == ""
    first = min(available_cpus())
    assert parse_cpus(f"{first}") == (first,)
    for bad, needle in [
        ("a-b", "is not a CPU number"),
        ("3-1", "not an ascending range"),
        ("-1", "not a CPU number"),
        ("100000", "CPU 100000 not available here"),
    ]:
        with pytest.raises(UsageError, match=needle):
            parse_cpus(bad)


@pytest.mark.slow
def test_run_pins_the_worker_and_records_it(tmp_path):
    cpu = max(available_cpus())
    results = tmp_path / "results"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            "inference-device",
            "--ops",
            "gemm",
            "--id",
            "gemm_m128_n1_k1024_*",
            "--quick",
            "--profile-runs",
            "0",
            "--cpus",
            str(cpu),
            "--out",
            str(results),
        ],
    )
    assert result.exit_code == 0, result.output
    header, row = [
        r for r in map(json.loads, next(results.rglob("*.jsonl")).read_text().splitlines()) if r["type"] != "round"
    ]
    assert header["request"]["cpus"] == str(cpu) and "board" in header["host"]
    assert (
        row["status"] == "ok" and row["runtime_options"]["cpus"] == str(cpu) and row["runtime_options"]["threads"] == 1
    )


def test_bad_cpus_is_one_line_before_any_file(tmp_path):
    results = tmp_path / "results"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            "inference-device",
            "--ops",
            "gemm",
            "--cpus",
            f"0-{os.cpu_count() + 8}",
            "--out",
            str(results),
        ],
    )
    assert result.exit_code == 2 and "not available here" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and not results.exists()


@pytest.mark.slow
def test_run_without_pyarrow_writes_csv_and_says_why_no_parquet(tmp_path, monkeypatch):
    """A light board install has no pyarrow (nor pandas): the run still ends with its .jsonl and .csv."""
    import csv
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError, as where it is absent
    monkeypatch.setitem(sys.modules, "pandas", None)
    results = tmp_path / "results"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            "inference-device",
            "--ops",
            "gemm",
            "--id",
            "gemm_m128_n1_k1024_*",
            "--quick",
            "--profile-runs",
            "0",
            "--out",
            str(results),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Parquet not written: pyarrow is not installed" in result.output
    log = next(results.rglob("*.jsonl"))
    assert not log.with_suffix(".parquet").exists()
    (row,) = csv.DictReader(log.with_suffix(".csv").open())
    assert row["status"] == "ok" and row["runtime_options.cpus"] and row["params.m"] == "128"
