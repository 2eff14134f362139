"""ONNX Runtime with OpenVINO's execution provider, the plugin package `onnxruntime-ep-openvino` (it carries
its own OpenVINO): OpenVINO compiles the subgraphs it takes, ONNX Runtime's CPU provider runs the rest.
Precision is pinned by the provider's own option (`precision=FP32`, which the provider turns into
OpenVINO's INFERENCE_PRECISION_HINT f32) and threads by `num_of_threads`."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from dbench.errors import UsageError
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.onnxruntime import CPU_OPTIONS
from dbench.runtimes.ort_plugin import OrtPluginRuntime

DEVICE = re.compile(r"^(CPU|GPU(\.\d+)?|NPU)$")
"""`--device` values: an OpenVINO device as the plugin names it in its devices' `ov_device` metadata."""
PROVIDER_OPTIONS = frozenset(
    {
        "num_streams",
        "cache_dir",
        "load_config",
        "enable_qdq_optimizer",
        "disable_dynamic_shapes",
        "model_priority",
        "enable_opencl_throttling",
        "precision",
    }
)
"""The OpenVINO provider's options `--option` may set (device_type comes from `--device`; num_of_threads
from `--threads`; precision only with `--allow-runtime-precision`)."""
PINNED_PRECISION = "FP32"


class OrtOpenVino(OrtPluginRuntime):
    """ONNX Runtime, OpenVINOExecutionProvider as a plugin; `--device CPU|GPU|GPU.N|NPU` (CPU by default)."""

    name: ClassVar[str] = "ort-openvino"
    extra: ClassVar[str] = "ort-openvino"
    provider: ClassVar[str] = "OpenVINOExecutionProvider"
    plugin_module: ClassVar[str] = "onnxruntime_ep_openvino"
    plugin_distribution: ClassVar[str] = "onnxruntime-ep-openvino"
    serves: ClassVar[str] = (
        "Intel CPUs, GPUs and NPUs only (its devices are the Intel ones ONNX Runtime finds); "
        "the native `openvino` runtime runs OpenVINO on other x86 CPUs"
    )
    supported_options: ClassVar[frozenset[str]] = frozenset(
        {"threads", "graph_optimization", "device", "allow_runtime_precision", "extra"}
    )
    provider_option_names: ClassVar[frozenset[str]] = PROVIDER_OPTIONS | frozenset(CPU_OPTIONS)

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        super().validate_values(options)
        if options.device is not None and not DEVICE.match(options.device):
            raise UsageError(f"--device {options.device} is not an OpenVINO device; use CPU, GPU, GPU.N or NPU")
        if "precision" in options.extra and not options.allow_runtime_precision:
            raise UsageError(
                "--option precision overrides the precision dbench pins (FP32); "
                "add --allow-runtime-precision to run it (recorded as the runtime's choice)"
            )

    @property
    def ov_device(self) -> str:
        return self.options.device or "CPU"

    def select_device(self, devices: list[Any]) -> Any:
        """The plugin's device whose `ov_device` is `--device` (`GPU` takes the first GPU)."""
        for device in devices:
            name = device.ep_metadata.get("ov_device", "")
            if name == self.ov_device or (self.ov_device == "GPU" and name.startswith("GPU")):
                return device
        offered = ", ".join(d.ep_metadata.get("ov_device", "?") for d in devices)
        raise UsageError(f"--device {self.ov_device}: the OpenVINO provider offers {offered} here")

    def provider_options(self) -> dict[str, str]:
        requests = self.concurrency["requests"] if self.concurrency else 1
        options = {
            "num_of_threads": str(self.options.thread_count * requests),
            **({"num_streams": str(requests)} if self.concurrency else {}),
            **({} if self.options.allow_runtime_precision else {"precision": PINNED_PRECISION}),
        }
        options.update({k: v for k, v in self.options.extra.items() if k not in CPU_OPTIONS})
        return options

    def provider_precision(self) -> str:
        """fp32 where the provider's `precision` is FP32 (dbench's pin, or the user's own); unknown otherwise."""
        return "fp32" if self.provider_options().get("precision") == PINNED_PRECISION else ""

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "device": self.ov_device,
            "precision": (
                "FP32, pinned by the provider's precision option (OpenVINO INFERENCE_PRECISION_HINT f32)"
                if not self.options.allow_runtime_precision
                else "the provider's choice (--allow-runtime-precision)"
            ),
            "threads_honoured": (
                "num_of_threads given to the provider (ONNX Runtime does not read OpenVINO's compiled "
                "properties back); intra_op_num_threads for the nodes on CPUExecutionProvider"
            ),
        }
