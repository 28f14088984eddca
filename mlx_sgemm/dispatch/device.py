"""Which backend runs a call: Metal, CUDA, or MLX's own matmul on the CPU."""

from __future__ import annotations

import ctypes
import functools

import mlx.core as mx

METAL, CUDA, CPU_FALLBACK = "metal", "cuda", "cpu-fallback"


def _device_of(stream) -> mx.Device:
    if stream is None:
        return mx.default_device()
    if isinstance(stream, mx.Stream):
        return stream.device
    if isinstance(stream, mx.Device):
        return stream
    if isinstance(stream, mx.DeviceType):
        return mx.Device(stream)
    raise TypeError(
        f"stream must be None, an mlx.core.Stream or an mlx.core.Device, "
        f"got {type(stream).__name__}"
    )


# MLX's Stream and Device objects compare by value but hash by identity, and
# a caller may hand over a new object for the same stream on every call
# (mx.Device(mx.gpu), mx.default_stream(...)). matmul keys its per-shape work
# by the stream: keyed by such objects as they come, every call would build
# and compile it anew. Each distinct stream is stood for by the first object
# seen for it.
_canonical_streams: list = []


def canonical(stream):
    """The object standing for ``stream`` in matmul's caches (None and device
    types stand for themselves); TypeError for what is not a stream."""
    if stream is None or isinstance(stream, mx.DeviceType):
        return stream
    _device_of(stream)  # the type check
    for known in _canonical_streams:
        if type(known) is type(stream) and known == stream:
            return known
    _canonical_streams.append(stream)
    return stream


def current_stream():
    """The default stream of the default device now (``mx.stream`` changes it
    in its block), as :func:`canonical` stands for it. Every matmul call asks:
    the stream the last call found is compared first (one comparison, where
    canonical's walk costs ~0.5 us)."""
    stream = mx.default_stream(mx.default_device())
    last = _current[0]
    if last is not None and last == stream:
        return last
    _current[0] = canonical(stream)
    return _current[0]


_current: list = [None]


def backend(stream=None) -> str:
    """The backend a call on ``stream`` (default: the default device) runs on.

    ``"metal"`` or ``"cuda"`` for a GPU stream with that MLX backend present,
    ``"cpu-fallback"`` otherwise: the ops then compute with ``mx.matmul``.
    """
    if _device_of(stream).type != mx.DeviceType.gpu:
        return CPU_FALLBACK
    return _gpu_backend()


@functools.cache
def _gpu_backend() -> str:
    if mx.metal.is_available():
        return METAL
    if mx.cuda.is_available():
        return CUDA
    return CPU_FALLBACK


# The GPU does not change within a process, and mx.device_info() is not free
# (on CUDA it also queries free memory): asked once, remembered.
@functools.cache
def cuda_compute_capability() -> tuple[int, int] | None:
    """(major, minor) of the CUDA GPU MLX runs on, or None without one."""
    if not mx.cuda.is_available():
        return None
    info = mx.device_info()
    try:
        return int(info["compute_capability_major"]), int(info["compute_capability_minor"])
    except (KeyError, TypeError, ValueError):  # an MLX that does not report it
        return None


_MULTIPROCESSOR_COUNT = 16  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT (cuda.h)


@functools.cache
def cuda_multiprocessors() -> int | None:
    """The streaming multiprocessors of CUDA device 0 (MLX's GPU unless told
    otherwise), from the CUDA driver; None without a GPU or a driver to ask.
    Kernels that keep a block an SM busy over many tiles size their grid by
    it: a wrong count costs speed, never a result."""
    if not mx.cuda.is_available():
        return None
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    handle, count = ctypes.c_int(), ctypes.c_int()
    if (driver.cuInit(0) != 0 or driver.cuDeviceGet(ctypes.byref(handle), 0) != 0
            or driver.cuDeviceGetAttribute(ctypes.byref(count), _MULTIPROCESSOR_COUNT, handle) != 0):
        return None
    return count.value if count.value > 0 else None


def has_mma_sync() -> bool:
    """mma.sync on float16 / bfloat16 (m16n8k16, compute capability 8.0 on:
    half_mma, half_gemv). An MLX that does not report the capability is taken
    to have it: a GPU without would fail to compile the kernel, loudly."""
    capability = cuda_compute_capability()
    return capability is None or capability >= (8, 0)


def has_wgmma() -> bool:
    """Hopper (compute capability 9.0): warpgroup MMA, which MLX's NVRTC build
    targets as sm_90a. Later architectures do not have wgmma."""
    return cuda_compute_capability() == (9, 0)


@functools.cache
def name() -> str:
    """The GPU's name as MLX reports it ("NVIDIA H200", "Apple M2 Max", ...)."""
    try:
        return str(mx.device_info().get("device_name", "unknown GPU"))
    except Exception:  # noqa: BLE001 - builds without device_info
        return "unknown GPU"
