"""ONNX Runtime adapters: CPU, CUDA and TensorRT execution providers. Inputs and outputs are bound
once as OrtValues through IOBinding, so a timed call is `run_with_iobinding` and nothing else.
Constant weights reach the session as external initializers made from the caller's arrays
(`add_external_initializers`), not through the model's protobuf, which for the multi-GB GEMMs cost
more than timing them (ONNX Runtime 1.31 still copies them once into the session, then pre-packs).
Throughput rows run concurrent Run calls on one session, each request with its own IOBinding."""

from __future__ import annotations

import bisect
import functools
import json
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar

import numpy as np
import onnx

from dbench.errors import DbenchError, OutOfMemory, UnsupportedError, UsageError
from dbench.executed import ExecutedGraph
from dbench.gen.graph import GraphSpec
from dbench.gen.precision import DTYPES
from dbench.gen.weights import embed_weights
from dbench.runtimes.base import ConcurrentSession, NodeProfile, Profile, Runtime, RuntimeOptions, Session, typical_runs
from dbench.runtimes.pages import on_huge_pages

# ONNX Runtime's profiler type names -> our precision names.
ORT_TYPE_PRECISION = {
    "float": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "double": "fp64",
    "int8": "int8",
    "uint8": "int8",
    "int32": "int32",
    "int64": "int64",
}
OPT_LEVELS = ("disable", "basic", "extended", "all")
# ort-cpu's `--option` keys and their values. ONNX Runtime's Python API builds the CPU execution provider
# from the SessionOptions and drops the provider options given for it without a word (any key, any
# value: `use_arena=banana` ran), so they are applied as the session options they stand for.
CPU_OPTIONS = {"use_arena": ("0", "1"), "qdq_matmulnbits_accuracy_level": ("0", "1", "2", "3", "4")}
MATMULNBITS_LEVEL = "qdq_matmulnbits_accuracy_level"
PINNED_MATMULNBITS_LEVEL = "1"
"""The accuracy_level ONNX Runtime gives the MatMulNBits it fuses from DequantizeLinear(4-bit) -> MatMul:
pinned to 1 (fp32 compute, as the graph's float MatMul asks); ONNX Runtime's own default, 4, quantises
the activations to int8 per block (`--option qdq_matmulnbits_accuracy_level=4` runs it, stated as int8 compute)."""
INT8_COMPUTE_LEVEL = 4
"""MatMulNBits' accuracy_level that computes with int8 activations (MLAS' CompInt8)."""
FOUR_BIT_TYPES = (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)
# ORT's words for an allocation failure inside a running kernel, which it raises as a plain
# RuntimeException/Fail (std::bad_alloc at the Python boundary arrives as MemoryError).
OOM_WORDS = ("bad_alloc", "failed to allocate memory", "out of memory")
# ORT states a feature its kernels lack in the text of a FAIL status, not as NOT_IMPLEMENTED ("Batchwise
# recurrent operations (layout == 1) are not supported", "Non per-tensor quantization is not supported now"),
# and an op it does not know at all likewise ("ai.onnx.preview.training:Adam(-1) is not a registered function/op").
REFUSAL_WORDS = ("not supported", "not implemented", "unsupported", "is not a registered function/op")
# Nodes that move or reshape data, not compute: their input type says nothing about the math.
NON_COMPUTE_OPS = {
    "Cast",
    "Transpose",
    "Slice",
    "Reshape",
    "Constant",
    "Identity",
    "MemcpyToHost",
    "MemcpyFromHost",
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "Squeeze",
    "Unsqueeze",
    "ReorderInput",
    "ReorderOutput",
    "Gather",
    "Concat",
    "Split",
    "Expand",
    "Pad",
    "Shape",
}
# Control flow: the profiler times the node and, separately, every node of its body.
CONTROL_FLOW_OPS = {"Loop", "If", "Scan"}


class GraphLoadError(DbenchError):
    """The runtime could not load a graph for a reason other than missing support (a corrupt file)."""


def _ort():
    import onnxruntime

    return onnxruntime


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@contextmanager
def classified(loading: bool = False):
    """ONNX Runtime's typed exceptions as dbench's: NotImplemented, or a failure whose text states that
    a feature is not supported -> UnsupportedError (no kernel for this op, type or attribute), MemoryError
    or an allocation failure -> OutOfMemory, the rest -> DbenchError (GraphLoadError while `loading`).
    ORT's own types are imported here, when ORT is in use."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    try:
        yield
    except DbenchError:
        raise
    except MemoryError as err:
        raise OutOfMemory(f"out of memory: {_first_line(err)}") from None
    except state.NotImplemented as err:
        raise UnsupportedError(_first_line(err)) from None
    except (state.Fail, state.RuntimeException, state.EPFail) as err:
        message = _first_line(err)
        if any(word in message.lower() for word in OOM_WORDS):
            raise OutOfMemory(message) from None
        if any(word in message.lower() for word in REFUSAL_WORDS):
            raise UnsupportedError(message) from None
        raise (GraphLoadError if loading else DbenchError)(message) from None
    except (state.InvalidGraph, state.InvalidProtobuf, state.InvalidArgument, state.NoModel) as err:
        raise GraphLoadError(f"{type(err).__name__}: {_first_line(err)}") from None
    except RuntimeError as err:  # run_with_iobinding reports a kernel's failing status as a plain RuntimeError
        message = _first_line(err)
        if any(word in message.lower() for word in OOM_WORDS):
            raise OutOfMemory(message) from None
        raise (UnsupportedError if any(word in message.lower() for word in REFUSAL_WORDS) else DbenchError)(
            message
        ) from None


CORRUPT = ("InvalidProtobuf", "NoModel")
"""ONNX Runtime's error types for bytes that are not a model at all: failed, whatever ONNX says."""


def _as_checked(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model as ONNX's checker should see it: the constants dbench supplies in memory (declared
    external, NOT_ON_DISK) as the graph inputs they stand for (the checker would look for their files),
    and the output shapes dbench left to the runtime given back from ONNX's own inference (the checker
    requires a shape on the main graph's outputs; none where inference finds none)."""
    declared = [
        t
        for t in model.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL
        and any(e.key == "location" and e.value == NOT_ON_DISK for e in t.external_data)
    ]
    names = {t.name for t in declared}
    kept = [t for t in model.graph.initializer if t.name not in names]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    model.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in declared)
    open_outputs = [
        o for o in model.graph.output if o.type.HasField("tensor_type") and not o.type.tensor_type.HasField("shape")
    ]
    if open_outputs:
        inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.output}
        for output in open_outputs:
            found = inferred.get(output.name)
            if found is not None and found.type.tensor_type.HasField("shape"):
                output.type.tensor_type.shape.CopyFrom(found.type.tensor_type.shape)
            else:
                output.type.tensor_type.shape.SetInParent()
    return model


def refused(model_bytes: bytes, err: GraphLoadError) -> DbenchError:
    """What ONNX Runtime's refusal to create a session means: a model ONNX itself accepts (its checker,
    with strict shape inference) is one this runtime does not run, UnsupportedError with its reason (an
    LSTM without hidden_size, a shape its own inference cannot find, an op or opset it lacks); a model
    ONNX rejects too, or bytes that are no model, stay a failure, with ONNX's reason beside ORT's."""
    if str(err).startswith(CORRUPT):
        return err
    try:
        onnx.checker.check_model(_as_checked(onnx.load_model_from_string(model_bytes)), full_check=True)
    except Exception as invalid:  # noqa: BLE001 (any reason ONNX gives, or none it can give, keeps it a failure)
        reason = str(invalid).strip().splitlines()[0][:300] if str(invalid).strip() else type(invalid).__name__
        return GraphLoadError(f"{err} (ONNX's checker rejects the model too: {reason})")
    return UnsupportedError(f"ONNX Runtime refuses this valid model at session creation: {err}")


def _host_array(value, dtype: str) -> np.ndarray:
    """A copy of a CPU OrtValue's data as `dtype` (bfloat16 through its 16-bit words)."""
    import ctypes

    if dtype != "bfloat16":
        return value.numpy()
    shape = value.shape()
    words = np.empty(shape, dtype=np.uint16)
    ctypes.memmove(words.ctypes.data, value.data_ptr(), words.nbytes)
    return words.view(DTYPES["bfloat16"])


def _ortvalue(array: np.ndarray, device: str, device_id: int):
    """An OrtValue on `device` holding `array` (on the CPU it shares the array's memory); bfloat16 (no
    numpy type in ORT) goes in as raw 16-bit words tagged bfloat16."""
    ort = _ort()
    array = np.asarray(array, order="C")  # keeps a 0-d (scalar) input 0-d; ascontiguousarray makes it (1,)
    if array.dtype in (DTYPES["int4"], DTYPES["uint4"]):
        raise UnsupportedError(
            "ONNX Runtime's Python API makes no OrtValue of a 4-bit array, so a 4-bit input cannot be fed per "
            "call; run it with --weights const (the inference default), which puts it in the model"
        )
    if array.dtype != DTYPES["bfloat16"]:
        return ort.OrtValue.ortvalue_from_numpy(array, device, device_id)
    if device == "cpu":
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array.view(np.uint16), onnx.TensorProto.BFLOAT16)
    value = ort.OrtValue.ortvalue_from_shape_and_type(list(array.shape), onnx.TensorProto.BFLOAT16, device, device_id)
    value.update_inplace(array.view(np.uint16))
    return value


NOT_ON_DISK = "dbench-constant-supplied-in-memory"
"""External-data location of a constant weight's declaration; ORT never reads it, the OrtValue replaces it."""


def declare_constants(model: onnx.ModelProto, names: Iterable[str]) -> onnx.ModelProto:
    """A copy of `model` in which the named graph inputs become initializers with external data (their
    type and shape only), to be filled in memory by `SessionOptions.add_external_initializers`."""
    declared = onnx.ModelProto()
    declared.CopyFrom(model)
    graph = declared.graph
    names = set(names)
    constant = [i for i in graph.input if i.name in names]
    kept = [i for i in graph.input if i.name not in names]
    del graph.input[:]
    graph.input.extend(kept)
    for value in constant:
        tensor = graph.initializer.add(
            name=value.name,
            data_type=value.type.tensor_type.elem_type,
            dims=[d.dim_value for d in value.type.tensor_type.shape.dim],
            data_location=onnx.TensorProto.EXTERNAL,
        )
        tensor.external_data.add(key="location", value=NOT_ON_DISK)
    return declared


def _host_outputs(binding, spec: GraphSpec, on_cpu: bool) -> dict[str, np.ndarray]:
    """A binding's outputs as host arrays by name (bfloat16 viewed as such)."""
    if on_cpu and any(t.dtype == "bfloat16" for t in spec.outputs):
        # ORT has no numpy type for bfloat16 and refuses to copy such outputs: read their memory instead.
        return {t.name: _host_array(v, t.dtype) for t, v in zip(spec.outputs, binding.get_outputs())}
    arrays = binding.copy_outputs_to_cpu()  # host copies, from CPU or device memory alike
    return {t.name: a.view(DTYPES["bfloat16"]) if t.dtype == "bfloat16" else a for t, a in zip(spec.outputs, arrays)}


class OrtSession(Session):
    """One InferenceSession with its inputs and outputs bound once."""

    def __init__(
        self,
        runtime: OrtRuntime,
        model_bytes: bytes,
        spec: GraphSpec,
        constants: dict[str, Any],
        profiling: bool = False,
    ) -> None:
        self.runtime = runtime
        self.model_bytes = model_bytes
        self.spec = spec
        self.constants = constants  # OrtValues over the caller's arrays, kept for the profiling session
        self.session = runtime.make_session(model_bytes, constants, profiling=profiling)
        self.binding = None
        self.feeds: dict[str, np.ndarray] = {}

    def _bind(self, session, feeds: dict[str, np.ndarray]):
        binding = session.io_binding()
        device, device_id = self.runtime.io_device
        for name, array in feeds.items():
            binding.bind_ortvalue_input(name, _ortvalue(array, device, device_id))
        for output in self.spec.outputs:
            self._bind_output(binding, output, device, device_id)
        return binding

    def _bind_output(self, binding, output, device: str, device_id: int) -> None:
        """Bind one output where the runtime writes it (ORT allocates it on the first run)."""
        binding.bind_output(output.name, device, device_id)

    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        """Bind the feeds; on the CPU the session reads their memory, so each of a huge page or more is
        first copied onto huge pages (dbench.runtimes.pages), as a fresh numpy array of a user's usually is."""
        if self.runtime.io_device[0] == "cpu":
            feeds = {name: on_huge_pages(array) for name, array in feeds.items()}
        self.feeds = feeds
        self.binding = self._bind(self.session, feeds)

    def run(self) -> None:
        self.session.run_with_iobinding(self.binding)  # errors classified around the whole measurement: Runtime.errors

    def input_buffers(self) -> list[np.ndarray]:
        return list(self.feeds.values()) if self.runtime.io_device[0] == "cpu" else []

    def outputs(self) -> dict[str, np.ndarray]:
        return _host_outputs(self.binding, self.spec, self.runtime.io_device[0] == "cpu")

    def profile(self, runs: int, warmup: int = 1) -> Profile:
        self._drain()
        self.binding = self.session = None  # profiling is the last use: free the timed session's packed weights
        session = self.runtime.make_session(self.model_bytes, self.constants, profiling=True)
        binding = self._bind(session, self.feeds)
        for _ in range(warmup + runs):
            session.run_with_iobinding(binding)
        return _read_profile(session.end_profiling(), warmup, self.runtime.weight_only)

    def end_profiling(self, warmup: int) -> Profile:
        # ONNX Runtime stops profiling for good once the profile is written (a second end_profiling
        # returns no file): the timed calls after it run unprofiled in the same session.
        path = self.session.end_profiling()
        if not path:
            raise DbenchError("ONNX Runtime wrote no profile: the session was not made with profiling on")
        return _read_profile(path, warmup, self.runtime.weight_only)

    def device_memory(self) -> int | None:
        return self.runtime.device_memory()

    def executed_graph(self) -> ExecutedGraph:
        """The optimized model ONNX Runtime builds for this graph with these options, saved by a fresh
        session (its weights to a file beside it, removed with it) and read back as executed layers."""
        from dbench.runtimes.ort_execution import executed_graph

        folder = tempfile.mkdtemp(prefix="dbench-ort-graph-")
        try:
            path = os.path.join(folder, "optimized.onnx")
            self.runtime.make_session(self.model_bytes, self.constants, profiling=False, saved_to=path)
            optimized = onnx.load(path, load_external_data=False)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return executed_graph(optimized, self.runtime.name)

    def _drain(self) -> None:
        """Let the device finish what the session left queued before the session is freed (nothing on the CPU)."""

    def close(self) -> None:
        self._drain()
        self.binding = None
        self.session = None
        self.constants = {}


class OrtConcurrentSession(ConcurrentSession):
    """One InferenceSession shared by `requests` requests, each with its own IOBinding over its own
    copies of the inputs, run by concurrent Run calls (InferenceSession.Run is thread-safe; this is what
    onnxruntime_perf_test -c does). A session's intra-op pool is its own and every Run's calling thread
    works in it too, so the pool gets requests x (threads - 1) workers: the requests in flight use
    requests x threads threads in all, and at one thread each every Run runs alone on its own thread.
    The weights are held and pre-packed once, as OpenVINO's streams share theirs."""

    def __init__(
        self, runtime: OrtRuntime, model_bytes: bytes, spec: GraphSpec, constants: dict[str, Any], requests: int
    ) -> None:
        self.runtime = runtime
        self.spec = spec
        self.requests = requests
        self.constants = constants  # OrtValues over the caller's arrays: kept alive with the session
        self.session = runtime.make_session(
            model_bytes, constants, profiling=False, intra_threads=runtime.pool_threads(requests)
        )
        self.bindings: list[Any] = []
        self.feeds: list[dict[str, np.ndarray]] = []

    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        for _ in range(self.requests):
            own = {
                name: np.array(array, copy=True) for name, array in feeds.items()
            }  # no buffer shared between requests
            binding = self.session.io_binding()
            for name, array in own.items():
                binding.bind_ortvalue_input(name, _ortvalue(array, "cpu", 0))
            for output in self.spec.outputs:
                binding.bind_output(output.name, "cpu", 0)
            self.feeds.append(own)
            self.bindings.append(binding)

    def run(self, request: int) -> None:
        self.session.run_with_iobinding(self.bindings[request])

    def runner(self, request: int) -> Callable[[], None]:
        return functools.partial(self.session.run_with_iobinding, self.bindings[request])

    def outputs(self, request: int) -> dict[str, np.ndarray]:
        return _host_outputs(self.bindings[request], self.spec, self.runtime.io_device[0] == "cpu")

    def streams_executed(self) -> int | None:
        return self.requests

    def close(self) -> None:
        self.bindings = []
        self.session = None
        self.constants = {}


def _read_profile(path: str, warmup: int, weight_only: dict[str, tuple[str, str]] | None = None) -> Profile:
    """The profile ONNX Runtime wrote to `path` (removed after reading), its first `warmup` runs left out."""
    try:
        with open(path) as fh:
            events = json.load(fh)
    finally:
        os.unlink(path)
    return parse_profile(events, warmup, weight_only)


def weight_only_nodes(model: onnx.ModelProto, fused_level: str) -> dict[str, tuple[str, str]]:
    """Node name -> (weight precision, compute precision or "" for the profile's input type) of every
    node ONNX Runtime runs as a 4-bit weight-only MatMulNBits: the model's own (its bits and
    accuracy_level), and each MatMul whose weight is DequantizeLinear of 4-bit data, which ONNX Runtime
    fuses into one (keeping the MatMul's name) at `fused_level`. Applied only to nodes the profile
    names MatMulNBits: a MatMul left unfused reads float weights and says so."""
    compute = lambda level: "int8" if int(level) == INT8_COMPUTE_LEVEL else ""
    types = {t.name: t.data_type for t in model.graph.initializer}
    types.update({v.name: v.type.tensor_type.elem_type for v in model.graph.input})
    producers = {out: node for node in model.graph.node for out in node.output}
    found = {}
    for node in model.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "MatMulNBits":
            found[node.name] = (f"int{attrs.get('bits', 4)}", compute(attrs.get("accuracy_level", 0)))
        elif node.op_type == "MatMul" and len(node.input) > 1:
            dq = producers.get(node.input[1])
            if dq is not None and dq.op_type == "DequantizeLinear" and types.get(dq.input[0]) in FOUR_BIT_TYPES:
                found[node.name] = ("int4", compute(fused_level))
    return found


def _run_index(events: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """The start and end times of each `model_run` (one `Session.run`), in order."""
    runs = sorted(
        (int(e["ts"]), int(e["ts"]) + int(e.get("dur", 0)))
        for e in events
        if e.get("cat") == "Session" and e.get("name") == "model_run"
    )
    if not runs:
        raise DbenchError(
            "ONNX Runtime's profile holds no model_run events; this onnxruntime cannot be profiled by dbench"
        )
    return [start for start, _ in runs], [end for _, end in runs]


def weight_only_of(name: str, weight_only: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """What a profiled MatMulNBits read and computed in: its model node's entry (a later fusion appends to
    the name: `<node>/MatMulAddFusion`), or, for one ONNX Runtime made of nodes no entry names, the
    entry every weight-only node of the model shares; ("", "") when they differ."""
    for known in sorted(weight_only, key=len, reverse=True):
        if name == known or name.startswith(known + "/"):
            return weight_only[known]
    shared = set(weight_only.values())
    return shared.pop() if len(shared) == 1 else ("", "")


def parse_profile(
    events: list[dict[str, Any]], warmup: int = 1, weight_only: dict[str, tuple[str, str]] | None = None
) -> Profile:
    """ONNX Runtime profiler events -> one NodeProfile per node with its kernel time per run: the sum
    of its events within each `model_run` (a node inside a Loop body has one event per iteration),
    averaged over the typical runs (`typical_runs`; with the median count of events per run), and the
    mean `model_run` of those runs. The first `warmup` runs of the fresh profiling session are dropped
    when later ones exist. A control-flow node's time contains its body's nodes (listed too): it is a
    container. A MatMulNBits node named in `weight_only` (weight_only_nodes) states its weights and
    compute apart."""
    weight_only = weight_only or {}
    starts, ends = _run_index(events)
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(starts))
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * len(starts))
    info: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.get("cat") != "Node" or not event.get("name", "").endswith("_kernel_time"):
            continue
        run = bisect.bisect_right(starts, int(event["ts"])) - 1
        if run < 0 or int(event["ts"]) > ends[run]:
            continue  # outside every run: session set-up, not a kernel of a timed call
        name = event["name"][: -len("_kernel_time")]
        totals[name][run] += float(event.get("dur", 0))
        counts[name][run] += 1
        info[name] = event.get("args", {})
    warm = range(warmup, len(starts)) if len(starts) > warmup else range(len(starts))
    durations = [ends[run] - starts[run] for run in warm]
    kept = [warm[i] for i in typical_runs(durations)]
    nodes = []
    for name, args in info.items():
        types = [next(iter(t)) for t in args.get("input_type_shape", []) if t]
        op = args.get("op_name", "")
        container = op in CONTROL_FLOW_OPS
        # Data-movement nodes (inserted Casts, Transposes...) and control flow get no precision: no math.
        compute = types and op not in NON_COMPUTE_OPS and not container
        weights, computed = weight_only_of(name, weight_only) if op == "MatMulNBits" else ("", "")
        nodes.append(
            NodeProfile(
                name=name,
                op_type=op,
                kernel=f"{op}:{args.get('provider', '')}",
                provider=args.get("provider", ""),
                precision=(computed or ORT_TYPE_PRECISION.get(types[0], types[0])) if compute else "",
                weights=weights,
                time_us=float(np.mean([totals[name][run] for run in kept])),
                calls=int(np.median([counts[name][run] for run in kept])),
                container=container,
            )
        )
    return Profile(nodes, float(np.mean([ends[run] - starts[run] for run in kept])))


class OrtRuntime(Runtime):
    """Shared ONNX Runtime adapter; subclasses choose the execution provider."""

    module: ClassVar[str] = "onnxruntime"
    distributions: ClassVar[tuple[str, ...]] = (
        "onnxruntime",
        "onnxruntime-gpu",
        "onnxruntime-openvino",
        "onnxruntime-directml",
        "onnxruntime-qnn",
    )
    extra: ClassVar[str] = "cpu"
    provider: ClassVar[str] = "CPUExecutionProvider"
    int8_form: ClassVar[str] = "qlinear"
    constants_in_memory: ClassVar[bool] = True
    """Constant weights as in-memory external initializers (else serialised into the model)."""
    session_class: ClassVar[type[OrtSession]] = OrtSession

    @property
    def io_device(self) -> tuple[str, int]:
        return "cpu", 0

    def provider_options(self) -> dict[str, str]:
        return dict(self.options.extra)

    supported_options: ClassVar[frozenset[str]] = frozenset({"threads", "graph_optimization", "extra"})
    provider_option_names: ClassVar[frozenset[str]] = frozenset(CPU_OPTIONS)

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        if options.graph_optimization not in OPT_LEVELS:
            raise UsageError(
                f"unknown graph optimisation level {options.graph_optimization!r}; valid: {', '.join(OPT_LEVELS)}"
            )
        unknown = sorted(set(options.extra) - cls.provider_option_names)
        if unknown:
            raise UsageError(
                f"--option {unknown[0]} is not a {cls.provider} option; known: "
                f"{', '.join(sorted(cls.provider_option_names))}"
            )

    def session_providers(self, options) -> list[tuple[str, dict[str, str]]] | None:
        """InferenceSession's `providers` for a session made with `options`: this provider and its options.
        A plugin provider attaches itself to `options` instead (dbench.runtimes.ort_plugin) and returns None."""
        return [(self.provider, self.provider_options())]

    def session_options(self, profiling: bool, intra_threads: int | None = None):
        ort = _ort()
        so = ort.SessionOptions()
        so.intra_op_num_threads = intra_threads or self.options.thread_count
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = {
            "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }[self.options.graph_optimization]
        so.log_severity_level = 3
        so.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", self.matmulnbits_level)
        if profiling:
            so.enable_profiling = True
            so.profile_file_prefix = os.path.join(tempfile.gettempdir(), f"dbench-ort-{os.getpid()}")
        return so

    def make_session(
        self,
        model_bytes: bytes,
        constants: dict[str, Any],
        profiling: bool,
        intra_threads: int | None = None,
        saved_to: str | None = None,
    ):
        """An InferenceSession; `constants` (name -> OrtValue) fill the model's external initializers;
        `intra_threads` replaces the thread count (a concurrent session's shared pool); `saved_to`: ONNX
        Runtime writes its optimized model there (weights in a file beside it)."""
        ort = _ort()
        options = self.session_options(profiling, intra_threads)
        if saved_to:
            options.optimized_model_filepath = saved_to
            options.add_session_config_entry(
                "session.optimized_model_external_initializers_file_name", os.path.basename(saved_to) + ".weights"
            )
            options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "64")
        if constants:
            options.add_external_initializers(list(constants), list(constants.values()))
        try:
            with classified(loading=True):
                return ort.InferenceSession(
                    model_bytes, options, providers=self.session_providers(options), enable_fallback=0
                )  # never retry a failed provider on the CPU
        except GraphLoadError as err:
            raise refused(model_bytes, err) from None

    def _model_and_constants(
        self, model: onnx.ModelProto, constants: Mapping[str, np.ndarray]
    ) -> tuple[bytes, dict[str, Any]]:
        """The serialised model a session loads and the OrtValues that fill its constant weights."""
        self.weight_only = weight_only_nodes(model, self.matmulnbits_level)
        four_bit = {name: a for name, a in constants.items() if a.dtype in (DTYPES["int4"], DTYPES["uint4"])}
        if four_bit:  # no OrtValue from a 4-bit numpy array: such weights go into the model itself
            model = embed_weights(model, four_bit)
            constants = {name: a for name, a in constants.items() if name not in four_bit}
        if not constants:
            return model.SerializeToString(), {}
        if not self.constants_in_memory:
            return embed_weights(model, constants).SerializeToString(), {}
        with classified():
            values = {name: _ortvalue(array, "cpu", 0) for name, array in constants.items()}
        return declare_constants(model, constants).SerializeToString(), values

    def prepare(self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]) -> Session:
        self.concurrency = None
        model_bytes, values = self._model_and_constants(model, constants)
        return self.session_class(self, model_bytes, spec, values)

    def errors(self) -> AbstractContextManager:
        return classified()

    def device_memory(self) -> int | None:
        return None

    concurrency: dict[str, Any] | None = None
    """How the last prepared session runs requests concurrently (None: one request at a time)."""
    weight_only: dict[str, tuple[str, str]] = {}
    """The last prepared model's 4-bit weight-only nodes (weight_only_nodes), for its profile."""

    @property
    def matmulnbits_level(self) -> str:
        """The accuracy_level of the MatMulNBits fused from DequantizeLinear(4-bit) -> MatMul."""
        return self.options.extra.get(MATMULNBITS_LEVEL, PINNED_MATMULNBITS_LEVEL)

    def pool_threads(self, requests: int) -> int:
        """intra_op_num_threads of a session shared by `requests` concurrent Run calls of `threads` each:
        the calling threads work in the pool too, so it holds requests x (threads - 1) workers."""
        return requests * (self.options.thread_count - 1) + 1

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "provider": self.provider,
            "provider_options": self.provider_options(),
            "intra_op_num_threads": self.concurrency["intra_op_num_threads"]
            if self.concurrency
            else self.options.thread_count,
            "inter_op_num_threads": 1,
            "execution_mode": "sequential",
            "graph_optimization_level": self.options.graph_optimization,
            "qdq_matmulnbits_accuracy_level": self.matmulnbits_level,
            **({"concurrency": self.concurrency} if self.concurrency else {}),
        }


class OrtCpu(OrtRuntime):
    """ONNX Runtime, CPUExecutionProvider; `--option use_arena=0|1` is SessionOptions.enable_cpu_mem_arena."""

    name: ClassVar[str] = "ort-cpu"
    reports_execution: ClassVar[bool] = True

    def prepare_profiling(
        self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]
    ) -> Session:
        self.concurrency = None
        model_bytes, values = self._model_and_constants(model, constants)
        return self.session_class(self, model_bytes, spec, values, profiling=True)

    def prepare_concurrent(
        self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray], requests: int
    ) -> ConcurrentSession:
        model_bytes, values = self._model_and_constants(model, constants)
        self.concurrency = {
            "requests": requests,
            "threads_per_request": self.options.thread_count,
            "intra_op_num_threads": self.pool_threads(requests),
            "layout": "one session, concurrent Run calls, one IOBinding per request",
        }
        return OrtConcurrentSession(self, model_bytes, spec, values, requests)

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        super().validate_values(options)
        for key, value in options.extra.items():
            if key in CPU_OPTIONS and value not in CPU_OPTIONS[key]:
                raise UsageError(f"--option {key}={value} is not valid; use {' or '.join(CPU_OPTIONS[key])}")

    @property
    def cpu_mem_arena(self) -> bool:
        """The CPU arena setting in force: ONNX Runtime's default (on) unless `--option use_arena=0`."""
        return self.options.extra.get("use_arena", "1") == "1"

    def provider_options(self) -> dict[str, str]:
        return {}  # the CPU provider reads none: its settings are session options (see CPU_OPTIONS)

    def session_options(self, profiling: bool, intra_threads: int | None = None):
        options = super().session_options(profiling, intra_threads)
        options.enable_cpu_mem_arena = self.cpu_mem_arena
        return options

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "enable_cpu_mem_arena": self.cpu_mem_arena}
