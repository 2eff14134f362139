"""Machine facts from the libraries made for them: CPU flags from archspec (with /proc/cpuinfo behind it
where archspec cannot tell), GPU names from NVML (nvidia-ml-py) with nvidia-smi behind it for a board
without the library; the machine key is the same whichever source answered."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dbench.store import metadata
from dbench.store.machine import isa_features


def test_cpu_flags_are_archspecs():
    import archspec.cpu.detect

    host = metadata.host_metadata()
    assert host["cpu_flags"] == sorted(archspec.cpu.detect.detected_info().features)
    assert host["isa"] == isa_features(host["cpu_flags"])


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="the fallback reads /proc/cpuinfo (Linux)")
def test_without_archspec_the_flags_come_from_proc_cpuinfo_and_the_key_holds(monkeypatch):
    key = metadata.machine_name()
    import archspec.cpu.detect

    def broken():
        raise RuntimeError("archspec cannot read this host")

    monkeypatch.setattr(archspec.cpu.detect, "detected_info", broken)
    assert metadata.cpu_flags() is None
    flags = metadata._cpu()["flags"]
    assert flags and flags == metadata._cpuinfo()["flags"]
    assert metadata.machine_name() == key  # the key's ISA features are the same facts from either source


def test_gpu_names_come_from_nvml_not_nvidia_smi(monkeypatch):
    """nvidia-ml-py is installed with the test extra: NVML answers (here, without an NVIDIA driver, that
    there is no GPU) and nvidia-smi is never started."""
    pytest.importorskip("pynvml", reason="nvidia-ml-py is in the test extra: pip install -e '.[test]'")
    if shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0:
        pytest.skip("this machine has an NVIDIA driver: see test_gpu_names_match_nvidia_smi")

    def no_nvidia_smi(*args, **kwargs):
        raise AssertionError(f"nvidia-smi was started: {args}")

    monkeypatch.setattr(metadata.subprocess, "run", no_nvidia_smi)
    assert metadata._gpus() == []


def test_without_nvidia_ml_py_the_names_come_from_nvidia_smi(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml now raises ImportError, as on a board
    assert metadata._gpus() == metadata._gpus_from_nvidia_smi()


@pytest.mark.gpu
def test_gpu_names_match_nvidia_smi():
    pytest.importorskip("pynvml", reason="needs nvidia-ml-py: pip install 'dbench[gpu]'")
    if not shutil.which("nvidia-smi"):
        pytest.skip("no nvidia-smi here: no NVIDIA driver")
    smi = metadata._gpus_from_nvidia_smi()
    if not smi:
        pytest.skip("nvidia-smi lists no GPU")
    assert metadata._gpus() == smi
