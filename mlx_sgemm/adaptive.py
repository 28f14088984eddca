"""Which kernel ``mlx_sgemm.matmul`` runs for a shape, backend and precision.

The choice follows measurements on an H200 (benchmarks/NOTES.md): for
float32-accurate products the FMA kernel with register tiling (tile_threads,
~31 TFLOP/s at 8192^3) beats our 3xTF32 tensor-core pipeline (~19 TFLOP/s), so
it is the float32 choice on CUDA; TF32 runs the cp.async pipeline in its
single-pass mode. On Metal the pipelined simdgroup-matrix kernel is the float32
choice once it exists, else tile_simdgroup.
"""

from __future__ import annotations

import functools

from . import device, specs
from .problem import Plan

PRECISIONS = ("float32", "tf32")

# CUDA TF32: BK 32, 3 stages: 54.5 TFLOP/s at 8192^3 on an H200 (benchmarks/NOTES.md).
_CUDA_TF32 = specs.cuda_pipelined("matmul_tf32", SPLIT=False, BK=32, STAGES=3)


def check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")


def choose(backend: str, precision: str, p: Plan) -> specs.KernelSpec:
    """The kernel for one product. ``precision`` "tf32" is honoured on CUDA only;
    Metal has no TF32 mode, so there (and on the CPU) the product is float32,
    more accurate than asked, never less."""
    if backend == device.CUDA:
        return _CUDA_TF32 if precision == "tf32" else specs.spec("tile_threads", backend)
    try:
        return specs.spec("tile_async", backend)
    except ValueError:  # no pipelined kernel for this backend yet
        return specs.spec("tile_simdgroup", backend)


@functools.cache
def chooser(precision: str):
    return lambda backend, p: choose(backend, precision, p)


def variants(backend: str) -> list[specs.KernelSpec]:
    """Every kernel ``matmul`` may run on ``backend`` (the compile-count bound)."""
    found = []
    for precision in PRECISIONS:
        spec = choose(backend, precision, None)
        if spec not in found:
            found.append(spec)
    return found
