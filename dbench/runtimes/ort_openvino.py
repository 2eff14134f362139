"""ONNX Runtime with OpenVINO's execution provider, the plugin package `onnxruntime-ep-openvino` (it carries
its own OpenVINO): OpenVINO compiles the subgraphs it takes, ONNX Runtime's CPU provider runs the rest.
The plugin reads OpenVINO's own properties from its `load_config` option (a JSON map, device -> properties)
and ignores, with a warning, the older provider's `precision` and `num_of_threads`: so precision is pinned
by INFERENCE_PRECISION_HINT f32 and threads set by INFERENCE_NUM_THREADS there."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from dbench.errors import UsageError
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.onnxruntime import CPU_OPTIONS
from dbench.runtimes.openvino import HARDWARE_DEVICE, OPTION_VALUES, check_properties
from dbench.runtimes.ort_plugin import OrtPluginRuntime

PINNED_PRECISION = "f32"
FLOAT_PRECISIONS = ("fp32", "fp16", "bf16")
"""Graph precisions whose math INFERENCE_PRECISION_HINT governs."""


class OrtOpenVino(OrtPluginRuntime):
    """ONNX Runtime, OpenVINOExecutionProvider as a plugin; `--device CPU|GPU|GPU.N|NPU` (CPU by default);
    `--option KEY=VALUE` an OpenVINO property, passed in load_config (`use_arena` is the CPU provider's)."""

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
    provider_option_names: ClassVar[frozenset[str]] = frozenset(OPTION_VALUES) | frozenset(CPU_OPTIONS)

    device_name: str | None = None
    """The OpenVINO device of the plugin device the last session was attached to (`GPU.0`)."""

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        super().validate_values(options)
        if options.device is not None and not HARDWARE_DEVICE.match(options.device):
            raise UsageError(f"--device {options.device} is not an OpenVINO device; use CPU, GPU, GPU.N or NPU")
        check_properties(
            {k: v for k, v in options.extra.items() if k not in CPU_OPTIONS}, options.allow_runtime_precision
        )

    @property
    def ov_device(self) -> str:
        return self.options.device or "CPU"

    def select_device(self, devices: list[Any]) -> Any:
        """The plugin's device whose `ov_device` is `--device` (`GPU` takes the first GPU)."""
        for device in devices:
            name = device.ep_metadata.get("ov_device", "")
            if name == self.ov_device or (self.ov_device == "GPU" and name.startswith("GPU")):
                self.device_name = name
                return device
        offered = ", ".join(d.ep_metadata.get("ov_device", "?") for d in devices)
        raise UsageError(f"--device {self.ov_device}: the OpenVINO provider offers {offered} here")

    def properties(self) -> dict[str, str]:
        """The OpenVINO properties given to the device: threads (all requests' for --streams), streams,
        the pinned precision unless --allow-runtime-precision, then the user's `--option`s."""
        requests = self.concurrency["requests"] if self.concurrency else 1
        properties = {
            "INFERENCE_NUM_THREADS": str(self.options.thread_count * requests),
            "NUM_STREAMS": str(requests),
            **({} if self.options.allow_runtime_precision else {"INFERENCE_PRECISION_HINT": PINNED_PRECISION}),
        }
        properties.update({k: v for k, v in self.options.extra.items() if k not in CPU_OPTIONS})
        return properties

    def provider_options(self) -> dict[str, str]:
        return {"load_config": json.dumps({self.device_name or self.ov_device: self.properties()})}

    def provider_precision(self, graph_precision: str) -> str:
        """fp32 for a floating-point graph where INFERENCE_PRECISION_HINT is f32 (dbench's pin, or the
        user's own); unknown otherwise (the hint governs float math: a quantized graph's int8 layers
        keep their own precision, which ONNX Runtime's profile does not show)."""
        pinned = self.properties().get("INFERENCE_PRECISION_HINT", "").lower() == PINNED_PRECISION
        return "fp32" if pinned and graph_precision in FLOAT_PRECISIONS else ""

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "device": self.device_name or self.ov_device,
            "precision": (
                "f32, pinned by OpenVINO's INFERENCE_PRECISION_HINT in the provider's load_config"
                if not self.options.allow_runtime_precision
                else "the provider's choice (--allow-runtime-precision)"
            ),
            "threads_honoured": (
                "INFERENCE_NUM_THREADS in the provider's load_config (ONNX Runtime does not read OpenVINO's "
                "compiled properties back); intra_op_num_threads for the nodes on CPUExecutionProvider"
            ),
        }
