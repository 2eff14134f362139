"""Runtimes by name, as "module:Class" strings: a runtime's module (and its heavy imports) loads only
when that runtime is chosen or asked about."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from dbench.errors import InputError, UsageError
from dbench.runtimes.base import Runtime

RUNTIMES: dict[str, str] = {
    "ort-cpu": "dbench.runtimes.onnxruntime:OrtCpu",
    "ort-cuda": "dbench.runtimes.ort_gpu:OrtCuda",
    "ort-trt": "dbench.runtimes.ort_gpu:OrtTensorrt",
    "tensorrt": "dbench.runtimes.tensorrt:Tensorrt",
    "openvino": "dbench.runtimes.openvino:OpenVino",
    "ort-xnnpack": "dbench.runtimes.onnxruntime_arm:OrtXnnpack",
    "ort-acl": "dbench.runtimes.onnxruntime_arm:OrtAcl",
    "torch": "dbench.runtimes.torch:TorchCpu",
    "torch-cuda": "dbench.runtimes.torch:TorchCuda",
    "ort-openvino": "dbench.runtimes.ort_openvino:OrtOpenVino",
    "ort-trt-rtx": "dbench.runtimes.ort_trt_rtx:OrtTrtRtx",
}


@dataclass(frozen=True)
class RuntimeStatus:
    """What `dbench runtimes` shows for one runtime."""

    name: str
    available: bool
    version: str
    reason: str
    extra: str


def runtime_class(name: str) -> type[Runtime]:
    """The adapter class registered as `name` (imports its module, not the runtime itself)."""
    if name not in RUNTIMES:
        raise UsageError(f"unknown runtime {name!r}; known runtimes: {', '.join(RUNTIMES)}")
    module_name, _, class_name = RUNTIMES[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def status(name: str) -> RuntimeStatus:
    cls = runtime_class(name)
    ok, reason = cls.availability()
    return RuntimeStatus(name, ok, cls.version() if ok else "", reason, cls.extra)


def require(name: str) -> type[Runtime]:
    """The adapter class, or a one-line error saying why it cannot run here and what installs it."""
    cls = runtime_class(name)
    ok, reason = cls.availability()
    if not ok:
        raise InputError(f"runtime {name} is not usable here: {reason}")
    return cls
