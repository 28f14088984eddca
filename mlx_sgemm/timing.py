"""Wall-clock timing of MLX ops on the GPU.

MLX is lazy and the GPU asynchronous, so each sample evaluates (and so waits
for) the outputs it times. Short products are repeated inside one sample until a
sample lasts about ``min_sample_s``, which keeps launch latency and timer
resolution out of the figure; the reported time is the median over samples,
after warm-up runs that absorb kernel compilation and allocation.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Callable

import mlx.core as mx


def median_seconds(
    fn: Callable[[], mx.array],
    *,
    warmup: int = 3,
    repeats: int = 20,
    min_sample_s: float = 0.005,
) -> float:
    """Median seconds of one call of ``fn`` (which returns an mx.array)."""
    for _ in range(warmup):
        mx.eval(fn())
    start = time.perf_counter()
    mx.eval(fn())
    once = time.perf_counter() - start
    inner = max(1, math.ceil(min_sample_s / max(once, 1e-9)))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        mx.eval(*[fn() for _ in range(inner)])
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def gflops(m: int, n: int, k: int, seconds: float, batch: int = 1) -> float:
    return 2.0 * m * n * k * batch / seconds / 1e9
