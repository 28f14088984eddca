"""Wall-clock timing of MLX ops on the GPU.

MLX is lazy and the GPU asynchronous, so each sample evaluates (and so waits
for) the outputs it times; the reported time is the median over samples, after
warm-up runs that absorb kernel compilation and allocation. Two ways of calling
(:data:`CALLS`, the benchmarks' ``calls`` column):

* ``"one at a time"`` (:func:`one_call_seconds`): each sample builds one
  product, evaluates it and waits for the GPU, as a user's call does; the
  figure includes the launch and the wait.
* ``"independent"`` (:func:`median_seconds`): each sample builds several
  products and evaluates them together (by default as many as last about
  ``min_sample_s``, which keeps launch latency and timer resolution out). They
  share no data, so MLX's CUDA graph lets the GPU overlap them: a throughput,
  which flatters a kernel that leaves SMs idle (docs/performance-log.md, "One
  product at a time: what the suite's loop had hidden").
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Callable

import mlx.core as mx


ONE_AT_A_TIME, INDEPENDENT = "one at a time", "independent"
CALLS = (ONE_AT_A_TIME, INDEPENDENT)
# Each way in words, after "timed", for captions and notes.
TIMED = {ONE_AT_A_TIME: "one at a time (one product per evaluation, waited for)",
         INDEPENDENT: "as independent calls (several products per evaluation, which the GPU may overlap)"}


def median_seconds(
    fn: Callable[[], mx.array],
    *,
    warmup: int = 3,
    repeats: int = 20,
    min_sample_s: float = 0.005,
    per_evaluation: int | None = None,
) -> float:
    """Median seconds of one call of ``fn`` (which returns an mx.array), timed
    as independent calls: ``per_evaluation`` of them evaluated together a
    sample (None: as many as last about ``min_sample_s``)."""
    for _ in range(warmup):
        mx.eval(fn())
    start = time.perf_counter()
    mx.eval(fn())
    once = time.perf_counter() - start
    inner = per_evaluation or max(1, math.ceil(min_sample_s / max(once, 1e-9)))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        mx.eval(*[fn() for _ in range(inner)])
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def one_call_seconds(fn: Callable[[], mx.array], *, warmup: int = 3, repeats: int = 20) -> float:
    """Median seconds of one call of ``fn`` (which returns an mx.array), timed
    one at a time: each sample builds one call, evaluates it and waits for
    the device (``mx.synchronize``: nothing of the call left running when the
    clock stops), so no two calls overlap and each pays its launch."""
    for _ in range(warmup):
        mx.eval(fn())
    mx.synchronize()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        mx.eval(fn())
        mx.synchronize()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def call_seconds(fn: Callable[[], mx.array], *, repeats: int, calls: str = INDEPENDENT,
                 per_evaluation: int | None = None) -> float:
    """``fn``'s median seconds timed the way ``calls`` (one of :data:`CALLS`) says."""
    if calls == ONE_AT_A_TIME:
        return one_call_seconds(fn, repeats=repeats)
    if calls != INDEPENDENT:
        raise ValueError(f"calls must be one of {CALLS}, got {calls!r}")
    return median_seconds(fn, repeats=repeats, per_evaluation=per_evaluation)


def alternating_rounds(
    fns: dict[str, Callable[[], mx.array]], *, rounds: int = 3, repeats: int = 10,
    calls: str = INDEPENDENT, per_evaluation: int | None = None,
) -> dict[str, list[float]]:
    """:func:`call_seconds` of each function, taken in ``rounds`` that visit
    them in turn: each function's round medians. A drift of the GPU's or the
    host's speed during one measurement then lands on all of them (measured on
    an H200: the same small call 62 us in one run, 79 in the next). ``calls``
    defaults to independent, the way the other benchmark scripts were recorded."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(call_seconds(fn, repeats=repeats, calls=calls, per_evaluation=per_evaluation))
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
    :func:`one_call_seconds` keeps them apart by evaluating each alone, which
    adds a launch and a wait to every call; chaining keeps them apart inside
    one evaluation (``benchmarks/small_m_variants.py --one-at-a-time``).
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
