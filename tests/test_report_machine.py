"""The machine key: built from more than the host name, stable for one machine, readable, and
recorded in the header of every run along with the load average."""

from __future__ import annotations

from dbench.store.machine import isa_features, machine_key
from dbench.store.metadata import host_metadata, is_busy, machine_name

SERVER = {"hostname": "box", "microarchitecture": "sapphirerapids", "isa": ["avx512", "amx", "bf16", "vnni"],
          "cores": 8, "memory_bytes": 32 * 2**30, "gpus": [], "cpu_model": "Intel Xeon"}


def test_same_host_name_different_hardware_gets_different_keys():
    board = {**SERVER, "microarchitecture": "neoverse_n1", "isa": ["neon", "dotprod"], "cores": 4, "memory_bytes": 8 * 2**30}
    a, b = machine_key(SERVER), machine_key(board)
    assert a != b and a.startswith("box-sapphirerapids-8c-32g-avx512-amx-bf16-vnni-") and b.startswith("box-neoverse_n1-4c-8g-neon-dotprod-")
    assert machine_key({**SERVER, "gpus": ["NVIDIA H100 80GB HBM3"]}) != a  # same CPU, a GPU added
    assert machine_key(dict(SERVER)) == a


def test_isa_features_from_cpu_flags():
    assert isa_features(["avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile"]) == ["avx512", "amx", "bf16", "vnni"]
    assert isa_features(["avx2", "fma"]) == ["avx2"]
    assert isa_features(["fp", "asimd", "asimddp", "sve", "i8mm", "bf16"]) == ["neon", "sve", "dotprod", "i8mm", "armbf16"]


def test_header_records_key_and_load():
    host = host_metadata()
    assert host["machine_key"] == host["machine"] == machine_name()
    assert host["hostname"].replace("-", "_").lower()[:3] in host["machine_key"].replace("-", "_")
    assert len(host["load_start"]) == 3 and host["busy_start"] == is_busy(host["load_start"], host["cpu_affinity"])
    assert is_busy([1.1], 2) and not is_busy([0.9], 2) and not is_busy(None, 2)


def test_env_prints_what_dbench_records():
    import json

    from typer.testing import CliRunner

    from dbench.cli import app

    result = CliRunner().invoke(app, ["env"])
    assert result.exit_code == 0, result.output
    recorded = json.loads(result.stdout)
    assert recorded["machine_key"] == machine_name() and recorded["runtimes"]["ort-cpu"] and "caches" in recorded
