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


def alternating_rounds(
    fns: dict[str, Callable[[], mx.array]], *, rounds: int = 3, repeats: int = 10,
) -> dict[str, list[float]]:
    """:func:`median_seconds` of each function, taken in ``rounds`` that visit
    them in turn: each function's round medians. A drift of the GPU's or the
    host's speed during one measurement then lands on all of them (measured on
    an H200: the same small call 62 us in one run, 79 in the next)."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(median_seconds(fn, repeats=repeats))
    return samples


def alternating_medians(fns: dict[str, Callable[[], mx.array]], **kwargs) -> dict[str, float]:
    """Each function's median round of :func:`alternating_rounds`."""
    return {name: statistics.median(times) for name, times in alternating_rounds(fns, **kwargs).items()}


def spread(times: list[float]) -> float:
    """How far a measurement's rounds lie apart: (slowest - fastest) / median.
    A ratio between two kernels is noise where it is within their spreads."""
    return (max(times) - min(times)) / statistics.median(times)


def one_at_a_time(product: Callable, a: mx.array, b: mx.array) -> Callable[[], mx.array]:
    """``product(a, b)`` as a call that waits for the previous call's result.

    :func:`median_seconds` builds many calls and evaluates them together.
    Independent calls may then run at once on the GPU (MLX's CUDA graph links
    only kernels that share data), and for a small memory-bound product that
    measures throughput, with the calls sharing B in L2, not the time of one
    product (docs/performance-log.md, "One product at a time: what the suite's
    loop had hidden"). Here each call's ``a`` gets 0 x a
    column of the previous call's output added: one small elementwise kernel,
    the same whatever ``product`` is, and a chain of calls that run in turn.
    """
    previous: list[mx.array] = []

    def call() -> mx.array:
        x = a + 0 * previous[0][..., :1] if previous else a
        previous[:] = [product(x, b)]
        return previous[0]

    return call


def gflops(m: int, n: int, k: int, seconds: float, batch: int = 1) -> float:
    return 2.0 * m * n * k * batch / seconds / 1e9
