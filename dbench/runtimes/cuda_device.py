"""Device buffers, a stream and CUDA-event timing through CuPy (from the `gpu`/`tensorrt*` extras),
for adapters that own their device memory (native TensorRT) or their stream (ONNX Runtime's CUDA
and TensorRT EPs given a user compute stream). Imported only by GPU sessions."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dbench.errors import DbenchError, OutOfMemory

DEVICE_TIME_ROUNDS = 5
"""Event-timed rounds per device-time measurement; the median round is reported."""


def _cupy():
    try:
        import cupy
    except ImportError:
        raise DbenchError("CuPy is not installed: pip install 'dbench[gpu]'") from None
    return cupy


class DeviceBuffers:
    """One device allocation per tensor, made once; host arrays go in and come out as raw bytes, so
    dtypes CuPy lacks (bfloat16) travel unchanged."""

    def __init__(self, device: int, sizes: dict[str, int]) -> None:
        cupy = _cupy()
        self.device = cupy.cuda.Device(device)
        self.device.use()
        try:
            self.arrays = {name: cupy.empty(max(nbytes, 1), dtype=cupy.uint8) for name, nbytes in sizes.items()}
        except cupy.cuda.memory.OutOfMemoryError as err:
            raise OutOfMemory(f"device {device}: {str(err).splitlines()[0]}") from None
        self.stream = cupy.cuda.Stream(non_blocking=True)

    def address(self, name: str) -> int:
        return int(self.arrays[name].data.ptr)

    def upload(self, name: str, array: np.ndarray) -> None:
        self.arrays[name][: array.nbytes].set(
            np.ascontiguousarray(array).reshape(-1).view(np.uint8), stream=self.stream
        )

    def download(self, name: str, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        host = self.arrays[name][:nbytes].get(stream=self.stream)
        self.stream.synchronize()
        return host.view(dtype).reshape(shape)

    def synchronize(self) -> None:
        self.stream.synchronize()

    def close(self) -> None:
        self.stream.synchronize()
        self.arrays = {}


def new_stream(device: int):
    """A non-blocking CuPy stream on `device` (its `.ptr` is the cudaStream_t to hand a runtime)."""
    cupy = _cupy()
    cupy.cuda.Device(device).use()
    return cupy.cuda.Stream(non_blocking=True)


def synchronize_device(device: int) -> None:
    """Wait until every stream of `device` is idle, host callbacks queued on them included (cudaDeviceSynchronize)."""
    cupy = _cupy()
    with cupy.cuda.Device(device):
        cupy.cuda.runtime.deviceSynchronize()


def device_time_us(enqueue: Callable[[], None], stream, iterations: int, warmup: int = 3) -> float:
    """Median over DEVICE_TIME_ROUNDS of the per-call time, in µs, between two CUDA events recorded on
    `stream` around `iterations` back-to-back `enqueue()` calls (after `warmup` untimed ones): the
    device's time per call with no host synchronisation inside the timed region, as trtexec measures."""
    cupy = _cupy()
    for _ in range(warmup):
        enqueue()
    stream.synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    rounds = []
    for _ in range(DEVICE_TIME_ROUNDS):
        start.record(stream)
        for _ in range(iterations):
            enqueue()
        end.record(stream)
        end.synchronize()
        rounds.append(cupy.cuda.get_elapsed_time(start, end) * 1000.0 / iterations)
    return float(np.median(rounds))


def gpu_identity(device: int) -> dict[str, str]:
    """Name, UUID and compute capability of `device` as the CUDA runtime reports them (engine keys)."""
    props = _cupy().cuda.runtime.getDeviceProperties(device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    uuid = props.get("uuid", b"")
    return {
        "gpu": name,
        "gpu_uuid": uuid.hex() if isinstance(uuid, bytes) else str(uuid),
        "compute_capability": f"{props['major']}.{props['minor']}",
    }
