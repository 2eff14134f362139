"""`--option key=value` settings of the TensorRT runtimes (native and ONNX Runtime's TensorRT EP),
checked in the parent without importing TensorRT; one UsageError line per bad key or value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from dbench.errors import UsageError

FLAGS = ("0", "1")


@dataclass(frozen=True)
class TensorrtOptions:
    """builder_optimization_level: TensorRT's 0-5 (3 is its default); workspace_mb: the builder's
    workspace pool limit (None: TensorRT's default, the device's memory); cuda_graph: replay one
    captured CUDA graph per run; engine_cache: reuse engines built before with the same key."""

    builder_optimization_level: int = 3
    workspace_mb: int | None = None
    cuda_graph: bool = False
    engine_cache: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _flag(key: str, value: str) -> bool:
    if value not in FLAGS:
        raise UsageError(f"--option {key}={value}: use {key}=0 or {key}=1")
    return value == "1"


def _int(key: str, value: str, low: int, high: int) -> int:
    if not value.isdigit() or not low <= int(value) <= high:
        raise UsageError(f"--option {key}={value}: use an integer from {low} to {high}")
    return int(value)


def parse_tensorrt_options(extra: Mapping[str, str]) -> TensorrtOptions:
    """The TensorRT settings in `--option` pairs; UsageError naming an unknown key and the known ones."""
    known = ("builder_optimization_level", "workspace_mb", "cuda_graph", "engine_cache")
    for key in extra:
        if key not in known:
            raise UsageError(f"--option {key} is not a TensorRT option; known: {', '.join(known)}")
    return TensorrtOptions(
        builder_optimization_level=_int(
            "builder_optimization_level", extra.get("builder_optimization_level", "3"), 0, 5
        ),
        workspace_mb=_int("workspace_mb", extra["workspace_mb"], 1, 1 << 24) if "workspace_mb" in extra else None,
        cuda_graph=_flag("cuda_graph", extra.get("cuda_graph", "0")),
        engine_cache=_flag("engine_cache", extra.get("engine_cache", "1")),
    )


CUDNN_ALGO_SEARCH = ("EXHAUSTIVE", "HEURISTIC", "DEFAULT")


@dataclass(frozen=True)
class CudaOptions:
    """ONNX Runtime CUDA EP settings: cuDNN's convolution algorithm search, TF32 (lets fp32 math run
    in TF32, so it needs --allow-runtime-precision), and CUDA graph replay."""

    cudnn_conv_algo_search: str = "EXHAUSTIVE"
    use_tf32: bool = False
    cuda_graph: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_cuda_options(extra: Mapping[str, str], allow_runtime_precision: bool) -> CudaOptions:
    """The CUDA EP settings in `--option` pairs; UsageError for an unknown key, a bad value, or TF32
    asked for without --allow-runtime-precision (it would report fp32 for TF32 math)."""
    known = ("cudnn_conv_algo_search", "use_tf32", "cuda_graph")
    for key in extra:
        if key not in known:
            raise UsageError(f"--option {key} is not an ort-cuda option; known: {', '.join(known)}")
    search = extra.get("cudnn_conv_algo_search", "EXHAUSTIVE").upper()
    if search not in CUDNN_ALGO_SEARCH:
        raise UsageError(
            f"--option cudnn_conv_algo_search={extra['cudnn_conv_algo_search']}: use one of "
            f"{', '.join(CUDNN_ALGO_SEARCH)}"
        )
    tf32 = _flag("use_tf32", extra.get("use_tf32", "0"))
    if tf32 and not allow_runtime_precision:
        raise UsageError(
            "--option use_tf32=1 runs fp32 graphs' matrix math in TF32: add --allow-runtime-precision to allow it"
        )
    return CudaOptions(search, tf32, _flag("cuda_graph", extra.get("cuda_graph", "0")))
