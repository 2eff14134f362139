"""OpenVINO adapter. Compiles with the LATENCY hint, one stream and INFERENCE_PRECISION_HINT pinned to
the graph's own precision (left alone, OpenVINO runs fp32 graphs in bf16 on CPUs that have it), checks
that the compiled model kept that precision, binds inputs once into the request's own tensors, and
profiles with PERF_COUNT: per-layer kernel names (`exec_type`) and the precision they ran in.
Throughput rows compile NUM_STREAMS streams sharing INFERENCE_NUM_THREADS = streams x threads and no
performance hint (benchmark_app's `-hint none -nstreams N -nthreads T`), one infer request per stream."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from functools import cache, cached_property, partial
from typing import Any, ClassVar

import numpy as np
import onnx

from dbench.errors import DbenchError, OutOfMemory, RuntimeSetupError, UnsupportedError, UsageError
from dbench.executed import ExecutedGraph
from dbench.gen.graph import GraphSpec
from dbench.gen.precision import DTYPES, pack_4bit
from dbench.gen.weights import embed_weights
from dbench.runtimes.base import ConcurrentSession, NodeProfile, Profile, Runtime, RuntimeOptions, Session, typical_runs
from dbench.runtimes.pages import HUGE_PAGE, huge_page_array

DEFAULT_DEVICE = "CPU"
# Devices that schedule onto other devices: they take the hardware devices' config keys but do not
# list them (or report them back) themselves.
VIRTUAL_DEVICES = ("AUTO", "MULTI", "HETERO", "BATCH")
HARDWARE_DEVICE = re.compile(r"^(CPU|GPU|NPU)(\.\d+)?$")
# `--option` keys dbench passes to compile_model, with the values it accepts where a cheap check
# catches a typo before the run (OpenVINO itself would refuse them for every graph). Other keys are
# listed with None: any value, OpenVINO checks it.
YES_NO = ("YES", "NO", "TRUE", "FALSE")
INTEGER = "integer"
OPTION_VALUES: dict[str, tuple[str, ...] | str | None] = {
    "NUM_STREAMS": ("AUTO", "NUMA", INTEGER),
    "INFERENCE_NUM_THREADS": INTEGER,
    "COMPILATION_NUM_THREADS": INTEGER,
    "PERFORMANCE_HINT_NUM_REQUESTS": INTEGER,
    "PERFORMANCE_HINT": ("LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT"),
    "INFERENCE_PRECISION_HINT": ("f32", "f16", "bf16"),
    "EXECUTION_MODE_HINT": ("PERFORMANCE", "ACCURACY"),
    "SCHEDULING_CORE_TYPE": ("ANY_CORE", "PCORE_ONLY", "ECORE_ONLY"),
    "LOG_LEVEL": ("LOG_NONE", "LOG_ERROR", "LOG_WARNING", "LOG_INFO", "LOG_DEBUG", "LOG_TRACE"),
    "MODEL_PRIORITY": ("LOW", "MEDIUM", "HIGH"),
    "CACHE_MODE": ("OPTIMIZE_SIZE", "OPTIMIZE_SPEED"),
    **{
        key: YES_NO
        for key in (
            "PERF_COUNT",
            "ENABLE_CPU_PINNING",
            "ENABLE_CPU_RESERVATION",
            "ENABLE_HYPER_THREADING",
            "CPU_DENORMALS_OPTIMIZATION",
            "ENABLE_TENSOR_PARALLEL",
            "ENABLE_MMAP",
            "ENABLE_WEIGHTLESS",
            "ENABLE_STARTUP_FALLBACK",
            "ENABLE_RUNTIME_FALLBACK",
            "EXCLUSIVE_ASYNC_REQUESTS",
            "GPU_ENABLE_LOOP_UNROLLING",
            "GPU_DISABLE_WINOGRAD_CONVOLUTION",
            "NPU_TURBO",
        )
    },
    **{
        key: None
        for key in (
            "DEVICE_ID",
            "MODEL_DISTRIBUTION_POLICY",
            "TBB_PARTITIONER",
            "DYNAMIC_QUANTIZATION_GROUP_SIZE",
            "KV_CACHE_PRECISION",
            "KEY_CACHE_PRECISION",
            "VALUE_CACHE_PRECISION",
            "KEY_CACHE_GROUP_SIZE",
            "VALUE_CACHE_GROUP_SIZE",
            "CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE",
            "WEIGHTS_PATH",
            "CACHE_DIR",
            "MULTI_DEVICE_PRIORITIES",
            "SCHEDULE_POLICY",
            "GPU_HOST_TASK_PRIORITY",
            "GPU_QUEUE_PRIORITY",
            "GPU_QUEUE_THROTTLE",
            "NPU_COMPILATION_MODE_PARAMS",
            "NPU_TILES",
            "NPU_DPU_GROUPS",
            "NPU_DMA_ENGINES",
            "NPU_COMPILER_TYPE",
            "NPU_MAX_TILES",
            "WORKLOAD_TYPE",
        )
    },
}
# A graph's precision -> (INFERENCE_PRECISION_HINT, OPTIMIZATION_CAPABILITIES entry it needs).
# int8 (Q/DQ) graphs: quantised layers run int8 kernels; the float parts around them stay f32.
# fp64 (a foreign model's): OpenVINO has no f64 inference precision and computes such graphs in f32,
# which the row's executed precision then says.
PINNED = {
    "fp32": ("f32", "FP32"),
    "fp16": ("f16", "FP16"),
    "bf16": ("bf16", "BF16"),
    "int8": ("f32", "INT8"),
    "fp64": ("f32", "FP32"),
    "int4": ("f32", "FP32"),
}
# Weight-only graphs (int4) ask for fp32 compute: OpenVINO's CPU plugin otherwise quantises the
# activations of a compressed-weight layer to int8 in groups (DYNAMIC_QUANTIZATION_GROUP_SIZE, 32 by
# default), with kernel names that still end in f32; dbench pins it off, or states int8 compute.
DYNAMIC_QUANTIZATION = "DYNAMIC_QUANTIZATION_GROUP_SIZE"
# Element types of a compressed weight (a float layer's integer weight input) -> our precision name.
WEIGHT_TYPES = {"i4": "int4", "u4": "int4", "i8": "int8", "u8": "int8", "nf4": "nf4", "f4e2m1": "fp4"}
FLOAT_TYPES = {"f32", "f16", "bf16"}
# Suffix of an exec_type (`brgemm_avx512_f32`, `jit_avx512_I8`) -> our precision name.
KERNEL_PRECISION = {
    "f32": "fp32",
    "f16": "fp16",
    "bf16": "bf16",
    "f64": "fp64",
    "i8": "int8",
    "u8": "int8",
    "i32": "int32",
    "i64": "int64",
}
# Layers that move, convert or reshape data: their kernel's type says nothing about the math.
NON_COMPUTE_TYPES = {
    "Parameter",
    "Result",
    "Constant",
    "Input",
    "Output",
    "Reorder",
    "Convert",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Concatenation",
    "Split",
    "VariadicSplit",
    "StridedSlice",
    "Slice",
    "Gather",
    "Broadcast",
    "ShapeOf",
    "Tile",
    "Pad",
}
# Control flow (an ONNX Scan becomes a TensorIterator or Loop): its kernel name carries the trip
# counter's type (`unknown_i32`); its body's layers are not profiled, so no precision is claimed.
CONTROL_FLOW_TYPES = {"TensorIterator", "Loop", "If"}
# Conversions fused into a `Subgraph` layer do no math of the kernel's precision: the graph's own
# Q/DQ and Cast nodes, and the Converts/FakeQuantizes OpenVINO inserts (auto-named `Convert_<n>`).
CONVERSION_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Cast"}
INSERTED_CONVERSION = re.compile(r"^(Convert|FakeQuantize)_\d+$")
# Compiled-model properties not worth a place in every row (the rest are read back: what is in force).
NOT_READ_BACK = ("SUPPORTED_PROPERTIES", "NETWORK_NAME")
OOM_WORDS = ("bad_alloc", "out of memory", "failed to allocate")
"""OpenVINO raises allocation failures as plain RuntimeErrors: only its message tells them apart."""
REFUSAL_WORDS = ("not supported", "not implemented", "unsupported")
"""Nor does it type a refusal of a feature at run time: its message says it."""
SOURCE_LOCATION = re.compile(r"Check '[^']*' failed at \S+:\d+:\s*")


def _ov():
    import openvino

    return openvino


@cache
def _core():
    """One OpenVINO Core per process (creating one loads the plugin list)."""
    return _ov().Core()


def _message(err: BaseException) -> str:
    """OpenVINO's own message on one line, without its source locations (`Exception from src/...`,
    `Check 'x' failed at src/...:151:`)."""
    lines = [line.strip() for line in str(err).splitlines()]
    text = " ".join(line for line in lines if line and not line.startswith("Exception from "))
    return SOURCE_LOCATION.sub("", text)[:500] or type(err).__name__


def _text(value: Any) -> str:
    """A property value as plain text: `f32`, `LATENCY`, `CPU`, `1`."""
    ov = _ov()
    if isinstance(value, ov.Type):
        return value.to_string()
    if isinstance(value, (list, tuple, set)):
        return ",".join(_text(v) for v in value)
    if hasattr(value, "name") and not isinstance(value, str):
        return value.name
    return str(value)


def source_types(model: onnx.ModelProto) -> dict[str, str]:
    """ONNX op type by node name and by output name (OpenVINO names layers after either)."""
    return {key: node.op_type for node in model.graph.node for key in (node.name, *node.output) if key}


def kernel_precision(
    node_type: str, exec_type: str, fused: tuple[str, ...] = (), sources: dict[str, str] | None = None
) -> str:
    """Our precision name for a layer from its kernel name (`brgemm_avx512_bf16` -> bf16); empty for
    layers that do no math (data movement, a Subgraph of conversions only), control flow, or kernel
    names that carry no precision. `fused`: the original layers a Subgraph was made of; `sources`: the
    ONNX graph's op types by name."""
    if node_type in NON_COMPUTE_TYPES | CONTROL_FLOW_TYPES:
        return ""
    sources = sources or {}
    if (
        node_type == "Subgraph"
        and fused
        and all(sources.get(name) in CONVERSION_OPS or INSERTED_CONVERSION.match(name) for name in fused)
    ):
        return ""
    return KERNEL_PRECISION.get(exec_type.rsplit("_", 1)[-1].lower(), "")


def fused_layers(compiled) -> dict[str, tuple[str, ...]]:
    """Each executed layer's original layers, from the compiled model's runtime graph."""
    fused = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        if "originalLayersNames" in info:
            names = info["originalLayersNames"].astype(str)
            fused[op.get_friendly_name()] = tuple(n for n in names.split(",") if n)
    return fused


def compressed_weights(compiled) -> dict[str, str]:
    """Executed layers that compute on float activations with integer weights (OpenVINO's compressed
    weights: `FullyConnected` with an i4/u4 weight input) -> the weights' precision, from the compiled
    model's runtime graph."""
    found = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        types = [port.get_element_type().to_string() for port in op.inputs()]
        if len(types) > 1 and types[0] in FLOAT_TYPES and types[1] in WEIGHT_TYPES:
            found[op.get_friendly_name()] = WEIGHT_TYPES[types[1]]
    return found


def cumulative_reports(device: str) -> bool:
    """Whether OpenVINO reports layer times on `device` as averages since compile (its CPU plugin)."""
    return all(d.split(".")[0] == "CPU" for d in device.split(","))


def warm_time_us(reported: list[float], cumulative: bool, warmup: int = 1, kept: list[int] | None = None) -> float:
    """One layer's time per run from its report after the last of `warmup` runs, then after each later
    run. OpenVINO's CPU plugin reports the average over every run since compile, so the later runs'
    mean is (N * last - warmup * first) / (N - warmup) over N runs in all; per-run reports (other
    devices) give the mean of the later runs listed in `kept` (all of them when None)."""
    if len(reported) < 2:
        return reported[0]
    if cumulative:
        total = warmup + len(reported) - 1
        return max(0.0, (total * reported[-1] - warmup * reported[0]) / (total - warmup))
    later = reported[1:]
    if kept is not None and all(i < len(later) for i in kept):  # a layer reported in every run
        later = [later[i] for i in kept]
    return float(np.mean(later))


def parse_profile(
    samples: list[list[Any]],
    device: str,
    fused: dict[str, tuple[str, ...]],
    sources: dict[str, str],
    warmup: int = 1,
    latencies_us: list[float] | None = None,
    weights: dict[str, str] | None = None,
    dynamic_quantization: bool = False,
) -> Profile:
    """ProfilingInfo lists read after the last of `warmup` runs of a fresh request and after each later
    run -> one NodeProfile per executed layer with its time per later run (see `warm_time_us`), and
    the request's own mean latency over the same runs, so that layer times add up to at most the time
    per call, as each run's do. Devices that report per run keep only the typical runs
    (`typical_runs`, by latency); the CPU plugin's running averages cannot leave a run out. A layer in
    `weights` (compressed_weights) states its weights apart, and computes in int8 when the compiled
    model quantises activations dynamically (`dynamic_quantization`)."""
    weights = weights or {}
    times: dict[str, list[float]] = defaultdict(list)
    info: dict[str, Any] = {}
    executed = _ov().ProfilingInfo.Status.EXECUTED
    for run in samples:
        for layer in run:
            if layer.status != executed:
                continue
            times[layer.node_name].append(layer.real_time.total_seconds() * 1e6)
            info[layer.node_name] = layer
    cumulative = cumulative_reports(device)
    kept = typical_runs(latencies_us) if latencies_us and not cumulative else None
    nodes = [
        NodeProfile(
            name=name,
            op_type=layer.node_type,
            kernel=layer.exec_type,
            provider=device,
            precision="int8"
            if name in weights and dynamic_quantization
            else kernel_precision(layer.node_type, layer.exec_type, fused.get(name, ()), sources),
            weights=weights.get(name, ""),
            time_us=warm_time_us(times[name], cumulative, warmup, kept),
        )
        for name, layer in info.items()
    ]
    if not latencies_us:
        return Profile(nodes, None)
    return Profile(nodes, float(np.mean([latencies_us[i] for i in kept] if kept is not None else latencies_us)))


def _host_array(tensor) -> np.ndarray:
    """A copy of an OpenVINO tensor's data; bf16 (which OpenVINO hands out as 16-bit words) as bfloat16."""
    data = np.array(tensor.data, copy=True)
    return data.view(DTYPES["bfloat16"]) if tensor.element_type == _ov().Type.bf16 else data


def _fill(tensor, array: np.ndarray) -> None:
    """Copy `array` into an OpenVINO tensor's own memory (bfloat16 as its raw 16-bit words; a 4-bit array
    packed two values a byte, as OpenVINO holds i4/u4)."""
    target = tensor.data
    source = np.asarray(array, order="C")  # keeps 0-d inputs 0-d
    if source.dtype in (DTYPES["int4"], DTYPES["uint4"]):
        packed = pack_4bit(source)
        if tuple(tensor.shape) != source.shape or target.size != packed.size:
            raise DbenchError(
                f"feed of shape {source.shape} ({source.dtype}) does not fit OpenVINO's "
                f"{tuple(tensor.shape)} {tensor.element_type.to_string()} input; regenerate the graph"
            )
        target.reshape(-1)[...] = packed.view(target.dtype)
        return
    if tuple(target.shape) != source.shape or target.dtype.itemsize != source.dtype.itemsize:
        raise DbenchError(
            f"feed of shape {source.shape} ({source.dtype}) does not fit OpenVINO's "
            f"{tuple(target.shape)} {tensor.element_type.to_string()} input; regenerate the graph"
        )
    target[...] = source.view(target.dtype)


def _fits(port, array: np.ndarray) -> bool:
    shape = port.get_partial_shape()
    return (
        shape.rank.is_static
        and len(shape) == array.ndim
        and all(d.is_dynamic or d.get_length() == n for d, n in zip(shape, array.shape))
        and port.get_element_type().size == array.dtype.itemsize
    )


def _port_feeds(ports, feeds: dict[str, np.ndarray]) -> dict:
    """Each compiled input port -> the feed it takes: by tensor name, else (a port OpenVINO renamed) the
    only feed left unclaimed that fits its shape and type. A port no feed fits is refused: running it
    unfed would read whatever its memory holds."""
    claimed = {port: next((n for n in feeds if n in port.get_names()), None) for port in ports}
    left = [n for n in feeds if n not in claimed.values()]
    for port, name in claimed.items():
        if name is None:
            fitting = [n for n in left if _fits(port, feeds[n])]
            if len(fitting) != 1:
                raise UnsupportedError(
                    f"OpenVINO's compiled input {sorted(port.get_names())} matches no graph input by name "
                    f"and {len(fitting)} by shape: it renamed an input dbench cannot place"
                )
            claimed[port] = fitting[0]
            left.remove(fitting[0])
    return claimed


def _constant(array: np.ndarray):
    """An OpenVINO Constant holding `array`: sharing its memory, or a copy for bfloat16 (no numpy type in OpenVINO)."""
    ov = _ov()
    if array.dtype == DTYPES["bfloat16"]:
        tensor = ov.Tensor(ov.Type.bf16, ov.Shape(list(array.shape)))
        _fill(tensor, array)
        return ov.op.Constant(tensor)
    if array.dtype in (DTYPES["int4"], DTYPES["uint4"]):
        tensor = ov.Tensor(ov.Type.i4 if array.dtype == DTYPES["int4"] else ov.Type.u4, ov.Shape(list(array.shape)))
        _fill(tensor, array)
        return ov.op.Constant(tensor)
    return ov.op.Constant(np.asarray(array, order="C"), shared_memory=True)


def make_constant(model, constants: Mapping[str, np.ndarray]) -> None:
    """Turn the model's parameters named in `constants` into Constants holding those arrays, in place
    (the weights never pass through the ONNX protobuf)."""
    for parameter in list(model.get_parameters()):
        name = parameter.get_friendly_name()
        if name in constants:
            parameter.output(0).replace(_constant(constants[name]).output(0))
            model.remove_parameter(parameter)
    model.validate_nodes_and_infer_types()


def frontend_constants(
    model: onnx.ModelProto, constants: Mapping[str, np.ndarray]
) -> tuple[onnx.ModelProto, Mapping[str, np.ndarray]]:
    """(model, the constants left to make after reading it): OpenVINO's ONNX frontend converts a
    com.microsoft op (MatMulNBits) only with its weight inputs constant in the file it reads, so the
    weights those ops read are embedded in the model first."""
    names = {name for node in model.graph.node if node.domain == "com.microsoft" for name in node.input[1:]}
    embedded = {name: value for name, value in constants.items() if name in names}
    if not embedded:
        return model, constants
    return embed_weights(model, embedded), {name: v for name, v in constants.items() if name not in embedded}


class OpenVinoSession(Session):
    """One compiled model and its infer request, inputs bound once into the request's tensors."""

    def __init__(
        self, runtime: OpenVino, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]
    ) -> None:
        self.runtime = runtime
        self.model_bytes = model.SerializeToString()
        self.constants = constants
        self.sources = source_types(model)
        self.spec = spec
        self.compiled = runtime.compile(self.model_bytes, spec, constants, perf_count=False)
        self.request = self.compiled.create_infer_request()
        self.feeds: dict[str, np.ndarray] = {}
        self.placed: list[np.ndarray] = []

    @staticmethod
    def _bind(compiled, request, feeds: dict[str, np.ndarray], place: bool = False) -> list[np.ndarray]:
        """Fill the inputs the compiled model has: OpenVINO drops a graph input that nothing reads, and
        renames one that flows straight to an output (after an Identity or an inference Dropout) to
        that output's name; such a port takes the one unnamed feed of its shape and type. `place`
        (the first bind) first gives each input of a huge page or more a tensor on huge pages
        (dbench.runtimes.pages): the plugin's own tensors sit on 4 KiB heap pages, a GEMV's streamed
        weight ran up to 1.7x slower from them than from benchmark_app's numpy-made tensors. Returns
        those buffers: the request does not own them, so the caller keeps them as long as it."""
        placed = []
        for port, name in _port_feeds(compiled.inputs, feeds).items():
            tensor = request.get_tensor(port)
            if place and feeds[name].nbytes >= HUGE_PAGE and tensor.element_type != _ov().Type.bf16:
                placed.append(huge_page_array(tuple(tensor.shape), tensor.data.dtype))
                tensor = _ov().Tensor(placed[-1], shared_memory=True)
                request.set_tensor(port, tensor)
            _fill(tensor, feeds[name])
        return placed

    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        self.feeds = feeds
        self.placed = self._bind(self.compiled, self.request, feeds, place=True)

    def input_buffers(self) -> list[np.ndarray]:
        """The request's input tensors: the call reads its inputs there, not from the feeds."""
        return [self.request.get_tensor(port).data for port in self.compiled.inputs]

    def run(self) -> None:
        # share_outputs: no copy of the outputs into new numpy arrays inside the timed call.
        self.request.infer(share_outputs=True)

    def refresh_inputs(self) -> None:
        """The inputs copied into the request's tensors again (that copy is what the call reads)."""
        self._bind(self.compiled, self.request, self.feeds)

    def runtime_latency_us(self) -> float | None:
        """InferRequest.latency: OpenVINO's own duration of the last infer (ms), in µs."""
        return float(self.request.latency) * 1e3

    def outputs(self) -> dict[str, np.ndarray]:
        return {t.name: _host_array(self.request.get_tensor(t.name)) for t in self.spec.outputs}

    def profile(self, runs: int, warmup: int = 1) -> Profile:
        self.request = self.compiled = None  # profiling is the last use: free the timed model's memory
        compiled = self.runtime.compile(self.model_bytes, self.spec, self.constants, perf_count=True)
        request = compiled.create_infer_request()
        self.placed = self._bind(compiled, request, self.feeds, place=True)
        device = self.runtime.properties.get("EXECUTION_DEVICES", self.runtime.device)
        if cumulative_reports(device):
            # Averages in whole µs: the later runs' mean amplifies their rounding by (N + warmup) / runs,
            # so no more warm-up than runs keeps it within 3 µs per layer (and `runs`, --profile-runs' cap, holds).
            warmup = min(warmup, runs)
        samples, latencies = [], []
        for call in range(warmup + runs):
            request.infer(share_outputs=True)
            if call >= warmup - 1:  # the report after the last warm-up run, then one per profiled run
                samples.append(request.get_profiling_info())
            if call >= warmup:
                latencies.append(float(request.latency) * 1e3)
        dynamic = self.runtime.properties.get(DYNAMIC_QUANTIZATION, "0") not in ("0", "")
        return parse_profile(
            samples,
            device,
            fused_layers(compiled),
            self.sources,
            warmup,
            latencies,
            compressed_weights(compiled),
            dynamic,
        )

    def executed_graph(self) -> ExecutedGraph:
        """The runtime graph of the model compiled for timing, each layer with the ONNX names it came from."""
        from dbench.runtimes.openvino_execution import executed_graph

        with self.runtime._classified():
            read = self.runtime.core.read_model(self.model_bytes, _ov().Tensor(np.empty(0, dtype=np.uint8)))
        return executed_graph(self.compiled, read, self.runtime.name)

    def close(self) -> None:
        self.request = None
        self.compiled = None
        self.constants = {}


class OpenVinoConcurrentSession(ConcurrentSession):
    """One model compiled with a stream per request, and one infer request per stream, inputs bound once
    into each request's own tensors. A request's synchronous `infer` from its own thread runs on the
    compiled model's streams as `start_async` from AsyncInferQueue does (benchmark_app's loop); threads
    let one measurement loop serve every runtime and the server scenario's queue."""

    def __init__(
        self,
        runtime: OpenVino,
        model: onnx.ModelProto,
        spec: GraphSpec,
        constants: Mapping[str, np.ndarray],
        requests: int,
    ) -> None:
        self.runtime = runtime
        self.spec = spec
        self.requests = requests
        self.constants = constants
        self.compiled = runtime.compile(model.SerializeToString(), spec, constants, perf_count=False, requests=requests)
        self.infer_requests = [self.compiled.create_infer_request() for _ in range(requests)]
        self.placed: list[list[np.ndarray]] = []

    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        self.placed = [OpenVinoSession._bind(self.compiled, r, feeds, place=True) for r in self.infer_requests]

    def run(self, request: int) -> None:
        self.infer_requests[request].infer(share_outputs=True)

    def runner(self, request: int) -> Callable[[], None]:
        return partial(self.infer_requests[request].infer, share_outputs=True)

    def outputs(self, request: int) -> dict[str, np.ndarray]:
        return {t.name: _host_array(self.infer_requests[request].get_tensor(t.name)) for t in self.spec.outputs}

    def streams_executed(self) -> int | None:
        streams = self.runtime.properties.get("NUM_STREAMS", "")
        return int(streams) if streams.isdigit() else None

    def close(self) -> None:
        self.infer_requests = []
        self.compiled = None
        self.constants = {}


def check_properties(properties: Mapping[str, str], allow_runtime_precision: bool) -> None:
    """Refuse, in one UsageError line, an `--option` that is no OpenVINO property dbench knows, a value
    outside its known ones, or INFERENCE_PRECISION_HINT without --allow-runtime-precision (it would
    override the precision dbench pins). Shared with ort-openvino, which passes them in load_config."""
    for key, value in properties.items():
        if key not in OPTION_VALUES:
            raise UsageError(
                f"--option {key} is not an OpenVINO property dbench knows; known: {', '.join(sorted(OPTION_VALUES))}"
            )
        valid = OPTION_VALUES[key]
        if valid is None or (INTEGER in valid and value.isdigit()) or value.upper() in (v.upper() for v in valid):
            continue
        words = [
            v if v != INTEGER else "a non-negative integer" for v in ((valid,) if isinstance(valid, str) else valid)
        ]
        raise UsageError(f"--option {key}={value} is not valid; use {' or '.join(words)}")
    if "INFERENCE_PRECISION_HINT" in properties and not allow_runtime_precision:
        raise UsageError(
            "--option INFERENCE_PRECISION_HINT overrides the precision dbench pins; "
            "add --allow-runtime-precision to run it (recorded as the runtime's choice)"
        )


class OpenVino(Runtime):
    """OpenVINO on a device (`CPU` by default; `GPU`, `NPU`, `AUTO`... passed through)."""

    name: ClassVar[str] = "openvino"
    module: ClassVar[str] = "openvino"
    distributions: ClassVar[tuple[str, ...]] = ("openvino", "openvino-nightly")
    extra: ClassVar[str] = "openvino"
    int8_form: ClassVar[str] = "qdq"
    supported_options: ClassVar[frozenset[str]] = frozenset({"threads", "device", "allow_runtime_precision", "extra"})
    reports_execution: ClassVar[bool] = True

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        """Device names by their form (whether OpenVINO sees them is checked in the worker), and known
        `--option` keys with sane values."""
        if options.device is not None:
            head, sep, tail = options.device.partition(":")
            names = [n.strip() for n in tail.split(",")] if head in VIRTUAL_DEVICES and sep else []
            if (head not in VIRTUAL_DEVICES and not HARDWARE_DEVICE.match(options.device)) or not all(
                HARDWARE_DEVICE.match(n) for n in names
            ):
                raise UsageError(
                    f"--device {options.device!r} is not an OpenVINO device name; use CPU, GPU, GPU.1, NPU, "
                    "AUTO or AUTO:GPU,CPU (also MULTI:, HETERO:, BATCH:)"
                )
        check_properties(options.extra, options.allow_runtime_precision)

    def __init__(self, options) -> None:
        super().__init__(options)
        self.properties: dict[str, str] = {}
        """The last compiled model's properties as read back (empty before `prepare`)."""
        self.requests: int | None = None
        """Requests in flight of the last prepared session (None: a latency session)."""

    @property
    def core(self):
        return _core()

    @property
    def device(self) -> str:
        return self.options.device or DEFAULT_DEVICE

    @cached_property
    def hardware(self) -> tuple[str, ...] | None:
        """The hardware device(s) the name stands for, checked against what OpenVINO sees; None for a
        virtual device with no explicit list (`AUTO` picks at compile time)."""
        seen = self.core.available_devices
        head, _, tail = self.device.partition(":")
        virtual = head in VIRTUAL_DEVICES
        names = [n.strip() for n in tail.split(",") if n.strip()] if virtual else [self.device]
        for name in names:
            if name not in seen and not any(d.split(".")[0] == name for d in seen):
                raise RuntimeSetupError(
                    f"OpenVINO device {name!r} is not available here; devices OpenVINO sees: "
                    f"{', '.join(seen) or 'none'} (and {', '.join(VIRTUAL_DEVICES)} over them)"
                )
        return tuple(names) if names else None

    def _supports(self, key: str) -> bool:
        """Whether every hardware device named takes a config key (virtual devices forward them)."""
        devices = self.hardware
        if devices is None:
            return True
        return all(key in self.core.get_property(d, "SUPPORTED_PROPERTIES") for d in devices)

    def config(self, precision: str | None, requests: int | None = None) -> dict[str, str]:
        """compile_model's config for a graph in `precision` (None: the device-level config only): the
        LATENCY hint and one stream, or with `requests` in flight a stream each, no hint, and the
        threads of every stream (INFERENCE_NUM_THREADS counts all of them)."""
        config = (
            {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1"} if requests is None else {"NUM_STREAMS": str(requests)}
        )
        if self._supports("INFERENCE_NUM_THREADS"):
            config["INFERENCE_NUM_THREADS"] = str(self.options.thread_count * (requests or 1))
        if precision is not None and not self.options.allow_runtime_precision:
            config["INFERENCE_PRECISION_HINT"] = PINNED[precision][0]
            if precision == "int4" and self._supports(DYNAMIC_QUANTIZATION):
                config[DYNAMIC_QUANTIZATION] = "0"
        return {**config, **self.options.extra}

    def compile(
        self,
        model_bytes: bytes,
        spec: GraphSpec,
        constants: Mapping[str, np.ndarray],
        perf_count: bool,
        requests: int | None = None,
    ):
        """Read a graph, make `constants` its constant weights, compile it (with a stream per request when
        `requests` are in flight), and check the compiled model kept the pinned precision. The timed
        model's (not the profiling one's) properties are kept for `describe`."""
        ov = _ov()
        config = self.config(spec.precision, requests)
        if perf_count:
            config["PERF_COUNT"] = "YES"
        with self._classified():
            model = self.core.read_model(model_bytes, ov.Tensor(np.empty(0, dtype=np.uint8)))
        make_constant(model, constants)
        with self._classified():
            compiled = self.core.compile_model(model, self.device, config)
        properties = self._read_back(compiled)
        if not self.options.allow_runtime_precision:
            self._check_precision(spec.precision, properties)
        if not perf_count:
            self.properties = properties
        return compiled

    @contextmanager
    def _classified(self):
        """Compilation errors (RuntimeError and OpenVINO's own types) as OutOfMemory or UnsupportedError."""
        try:
            yield
        except MemoryError as err:
            raise OutOfMemory(f"out of memory: {_message(err)}") from None
        except Exception as err:
            message = _message(err)
            if any(word in message.lower() for word in OOM_WORDS):
                raise OutOfMemory(message) from None
            raise UnsupportedError(f"OpenVINO cannot compile this graph on {self.device}: {message}") from None

    @contextmanager
    def errors(self):
        """Errors while binding, running or profiling: OutOfMemory when OpenVINO says it could not
        allocate, UnsupportedError when it says it does not support something, DbenchError with its
        message otherwise."""
        try:
            yield
        except DbenchError:
            raise
        except MemoryError as err:
            raise OutOfMemory(f"out of memory: {_message(err)}") from None
        except RuntimeError as err:
            message = _message(err)
            if any(w in message.lower() for w in OOM_WORDS):
                raise OutOfMemory(message) from None
            raise (UnsupportedError if any(w in message.lower() for w in REFUSAL_WORDS) else DbenchError)(
                message
            ) from None

    @staticmethod
    def _read_back(compiled) -> dict[str, str]:
        """Every property the compiled model reports, as text; a virtual device's per-device
        properties flattened as `DEVICE_PROPERTIES.CPU.INFERENCE_PRECISION_HINT`."""
        properties = {}

        def add(key: str, value: Any) -> None:
            if isinstance(value, dict):
                for name, inner in value.items():
                    if name not in NOT_READ_BACK:
                        add(f"{key}.{name}", inner)
            else:
                properties[key] = _text(value)

        for key in compiled.get_property("SUPPORTED_PROPERTIES"):
            if key not in NOT_READ_BACK:
                add(key, compiled.get_property(key))
        return properties

    def _check_precision(self, precision: str, properties: dict[str, str]) -> None:
        """UnsupportedError when the device cannot run `precision` or compiled another one instead:
        OpenVINO silently turns an f16 hint into bf16 on CPUs without f16, for example."""
        hint, capability = PINNED[precision]
        devices = properties.get("EXECUTION_DEVICES", self.device).split(",")
        missing = [d for d in devices if capability not in self.core.get_property(d, "OPTIMIZATION_CAPABILITIES")]
        compiled = ",".join(
            sorted(
                {
                    properties.get(
                        f"DEVICE_PROPERTIES.{d}.INFERENCE_PRECISION_HINT",
                        properties.get("INFERENCE_PRECISION_HINT", hint),
                    )
                    for d in devices
                }
            )
        )
        if missing or compiled != hint:
            capabilities = ", ".join(self.core.get_property(devices[0], "OPTIMIZATION_CAPABILITIES"))
            raise UnsupportedError(
                f"OpenVINO device {','.join(devices)} does not execute {precision} (capabilities: {capabilities}; "
                f"INFERENCE_PRECISION_HINT {hint} compiles as {compiled}); --allow-runtime-precision runs it "
                "in the precision OpenVINO picks, recorded as such"
            )

    def prepare(self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]) -> Session:
        self.requests = None
        model, constants = frontend_constants(model, constants)
        return OpenVinoSession(self, model, spec, constants)

    def prepare_concurrent(
        self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray], requests: int
    ) -> ConcurrentSession:
        self.requests = requests
        model, constants = frontend_constants(model, constants)
        return OpenVinoConcurrentSession(self, model, spec, constants, requests)

    def describe(self) -> dict[str, Any]:
        rule = (
            "runtime default"
            if self.options.allow_runtime_precision
            else "pinned to the graph's: " + ", ".join(f"{p}->{h}" for p, (h, _) in PINNED.items())
        )
        described = {
            **super().describe(),
            "build": _ov().__version__,
            "device": self.device,
            "config": self.config(None, self.requests),
            "inference_precision": rule,
        }
        if self.hardware:
            # What OpenVINO would pick by itself (bf16 on CPUs with bf16): the precision dbench overrides.
            described["device_default_precision"] = {
                d: _text(self.core.get_property(d, "INFERENCE_PRECISION_HINT")) for d in self.hardware
            }
        if self.properties:
            described["compiled"] = dict(self.properties)
        return described
