"""The machine key: built from more than the host name, stable for one machine, readable, and
recorded in the header of every run along with the load average."""

from __future__ import annotations

import math

import pytest

from dbench.store.machine import isa_features, machine_key
from dbench.store.metadata import host_metadata, is_busy, machine_name, own_load

SERVER = {
    "hostname": "box",
    "microarchitecture": "sapphirerapids",
    "isa": ["avx512", "amx", "bf16", "vnni"],
    "cores": 8,
    "memory_bytes": 32 * 2**30,
    "gpus": [],
    "cpu_model": "Intel Xeon",
}


def test_same_host_name_different_hardware_gets_different_keys():
    board = {
        **SERVER,
        "microarchitecture": "neoverse_n1",
        "isa": ["neon", "dotprod"],
        "cores": 4,
        "memory_bytes": 8 * 2**30,
    }
    a, b = machine_key(SERVER), machine_key(board)
    assert (
        a != b
        and a.startswith("box-sapphirerapids-8c-32g-avx512-amx-bf16-vnni-")
        and b.startswith("box-neoverse_n1-4c-8g-neon-dotprod-")
    )
    assert machine_key({**SERVER, "gpus": ["NVIDIA H100 80GB HBM3"]}) != a  # same CPU, a GPU added
    assert machine_key(dict(SERVER)) == a


def test_isa_features_from_cpu_flags():
    assert isa_features(["avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile"]) == [
        "avx512",
        "amx",
        "bf16",
        "vnni",
    ]
    assert isa_features(["avx2", "fma"]) == ["avx2"]
    assert isa_features(["fp", "asimd", "asimddp", "sve", "i8mm", "bf16"]) == [
        "neon",
        "sve",
        "dotprod",
        "i8mm",
        "armbf16",
    ]


def test_header_records_key_and_load():
    host = host_metadata()
    assert host["machine_key"] == host["machine"] == machine_name()
    assert host["hostname"].replace("-", "_").lower()[:3] in host["machine_key"].replace("-", "_")
    assert len(host["load_start"]) == 3 and host["busy_start"] == is_busy(host["load_start"], host["cpu_affinity"])
    assert is_busy([1.1], 2) and not is_busy([0.9], 2) and not is_busy(None, 2)


def test_a_run_is_not_busy_at_its_end_from_its_own_threads():
    """The end reading counts the run's own busy threads (at most its cores, through the load's 60 s
    average): a 2-thread run of 4 minutes on 2 cores at load 1.8 is not busy; at 3.2 another job is; a
    20 s run has added only a little of its own yet."""
    from dbench.render.warnings import run_warnings

    def rows(seconds: int, threads: int = 2, **extra) -> list[dict]:
        return [
            {
                "status": "ok",
                "finished_at": f"2026-11-27T02:{seconds // 60:02d}:{seconds % 60:02d}+00:00",
                "load_1m": load,
                "runtime_options": {"threads": threads},
                **extra,
            }
        ]

    host = {"taken_at": "2026-11-27T02:00:00+00:00", "cpu_affinity": 2, "load_start": [0.2]}
    load = 1.8
    own = own_load(rows(240), 2, host["taken_at"])
    assert own == pytest.approx(2 * (1 - math.exp(-4)))
    assert not is_busy([load], 2, own) and is_busy([load], 2) and not run_warnings(rows(240), host)
    load = 3.2
    (line,) = run_warnings(rows(240), host)
    assert line.startswith(
        "machine busy at the end of the run: 1-minute load 3.2 on 2 cores, at most 2.0 of it this run's own threads"
    )
    assert own_load(rows(20), 2, host["taken_at"]) == pytest.approx(2 * (1 - math.exp(-1 / 3)))
    assert own_load(rows(240, threads=1), 2, host["taken_at"]) < 1  # one thread is one thread's load
    assert (
        own_load(rows(240, threads=1, streams=2, threads_per_stream=2), 2, host["taken_at"]) == own
    )  # at most the cores
    assert own_load([], 2, host["taken_at"]) == 0.0 and own_load(rows(240), 2, None) == 0.0


def test_env_prints_what_dbench_records():
    import json

    from typer.testing import CliRunner

    from dbench.cli import app

    result = CliRunner().invoke(app, ["env"])
    assert result.exit_code == 0, result.output
    recorded = json.loads(result.stdout)
    assert recorded["machine_key"] == machine_name() and recorded["runtimes"]["ort-cpu"] and "caches" in recorded
