"""``mlx_sgemm.autotune``: time matmul's candidate kernels for a shape, keep the fastest.

kernel_choice.choose is a heuristic written from one GPU's measurements. The
autotuner measures instead: for the shape class of ``a @ b`` (sizes rounded up
to powers of two, see mlx_sgemm.dispatch.tuning_cache) it runs every candidate of
kernel_choice.candidates on ``a`` and ``b``, rejects any whose result is not
float32-accurate (or TF32-accurate for precision "tf32") against mx.matmul,
times the rest, and stores the winner in the cache. From then on matmul uses
the winner for every shape of that class on this device, in this process and
in later ones, and in others using the same cache file from the next shape they
have not called before (mlx_sgemm.dispatch.tuning_cache.entries).
"""

from __future__ import annotations

import mlx.core as mx

from .bench import accuracy, timing
from .build import launcher
from .dispatch import device, kernel_choice, tuning_cache
from .dispatch.problem import check_operand, plan

# Accept a candidate whose error is within this factor of mx.matmul's at the
# same precision (or of float32's unit roundoff, for tiny K).
ERROR_FACTOR = 4.0
UNIT_ROUNDOFF = {"float32": 2.0**-24, "tf32": 2.0**-11}


def autotune(
    a: mx.array, b: mx.array, *, precision: str = "float32", stream=None, repeats: int = 10,
) -> dict:
    """Tune ``matmul(a, b, precision=precision)`` for this shape class and device.

    Returns ``{"choice": key, "seconds": {key: median seconds}, "rejected":
    {key: error}}``; the choice is stored in the cache (``tuning_cache.cache_path()``,
    overridable with ``MLX_SGEMM_AUTOTUNE_CACHE``). Raises RuntimeError without
    a GPU backend: on the CPU matmul is mx.matmul and there is nothing to tune.
    """
    kernel_choice.check_precision(precision)
    check_operand(a, "a")
    check_operand(b, "b")
    p = plan(a.shape, b.shape)
    backend = device.backend(stream)
    if backend == device.CPU_FALLBACK:
        raise RuntimeError("autotune needs an MLX GPU backend (Metal or CUDA); "
                           "on the CPU, matmul computes with mx.matmul")
    if p.empty:
        raise ValueError(f"nothing to tune: {a.shape} @ {b.shape} has no work")
    reference = mx.matmul(a, b, stream=stream)
    bound = ERROR_FACTOR * max(accuracy.relative_error(reference, a, b), UNIT_ROUNDOFF[precision])
    seconds, rejected = {}, {}
    for launch in kernel_choice.candidates(backend, precision, p):
        def run(launch=launch):
            if kernel_choice.is_emulated(launch):
                return kernel_choice.emulation_op(launch)(a, b, stream=stream)
            return launcher.launch(launch.spec, a, b, stream, k_splits=launch.k_splits)
        error = accuracy.relative_error(run(), a, b)
        if not error <= bound:  # NaN fails too
            rejected[launch.key] = error
            continue
        seconds[launch.key] = timing.median_seconds(run, repeats=repeats)
    if not seconds:
        raise RuntimeError(f"no candidate kernel was accurate for {a.shape} @ {b.shape}: {rejected}")
    choice = min(seconds, key=seconds.get)
    tuning_cache.store(device.name(), precision, p, choice, seconds)
    return {"choice": choice, "seconds": seconds, "rejected": rejected}
