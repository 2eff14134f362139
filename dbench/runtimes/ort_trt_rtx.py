"""ONNX Runtime with NVIDIA's TensorRT-RTX execution provider, the plugin package
`onnxruntime-ep-nv-tensorrt-rtx` (TensorRT-RTX's libraries inside the wheel). It serves RTX GPUs of
compute capability 7.5, 8.6, 8.9 and 12.0, not data-center parts (a Hopper H100/H200 is 9.0): the GPU and
its capability are checked through the driver and NVML before the package, so a machine that cannot
run it says why in those words."""

from __future__ import annotations

from typing import Any, ClassVar

from dbench.runtimes import gpu
from dbench.runtimes.ort_plugin import OrtPluginRuntime

COMPUTE_CAPABILITIES = ("7.5", "8.6", "8.9", "12.0")
"""The compute capabilities TensorRT-RTX builds engines for."""


def capability_problem(device: int = 0) -> str | None:
    """Why GPU `device` cannot run TensorRT-RTX (no driver or GPU, NVML missing, a compute capability
    outside COMPUTE_CAPABILITIES), else None."""
    problem = gpu.driver_problem()
    if problem:
        return problem
    record = gpu.gpu_metadata(device)
    capability = record.get("compute_capability")
    if capability is None:
        return f"the GPU's compute capability cannot be read: {record.get('nvml', 'NVML gave none')}"
    if capability not in COMPUTE_CAPABILITIES:
        return (
            f"{record.get('name', 'this GPU')} is compute capability {capability}, outside TensorRT-RTX's "
            f"{', '.join(COMPUTE_CAPABILITIES)} (ort-trt and tensorrt run on it)"
        )
    return None


class OrtTrtRtx(OrtPluginRuntime):
    """ONNX Runtime, NvTensorRTRTXExecutionProvider as a plugin, on the first RTX GPU it offers. Inputs
    are bound in host memory, so a timed call includes their copies to the GPU (not yet run on an RTX GPU)."""

    name: ClassVar[str] = "ort-trt-rtx"
    extra: ClassVar[str] = "ort-trt-rtx"
    device_kind: ClassVar[str] = "gpu"
    provider: ClassVar[str] = "NvTensorRTRTXExecutionProvider"
    plugin_module: ClassVar[str] = "onnxruntime_ep_nv_tensorrt_rtx"
    plugin_distribution: ClassVar[str] = "onnxruntime-ep-nv-tensorrt-rtx"
    serves: ClassVar[str] = f"NVIDIA RTX GPUs of compute capability {', '.join(COMPUTE_CAPABILITIES)}"
    supported_options: ClassVar[frozenset[str]] = frozenset({"threads", "graph_optimization"})

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """The GPU first (driver, device, compute capability), then the package and its devices."""
        problem = capability_problem()
        if problem:
            return False, f"{problem}; it serves {cls.serves}"
        return super().availability()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "gpu": gpu.gpu_metadata(0)}
