"""TF32's accuracy against cuBLAS's: ``matmul(precision="tf32")`` and
``mx.matmul`` in a process with MLX_ENABLE_TF32=1 (cuBLAS's TF32) on the same
operands, normwise against float64 on sampled rows (:class:`measure.SampledReference`).

Inputs (:func:`accuracy.emulation_inputs`): "normal", and "positive" (uniform in
[0, 1)), where a rounding that always goes one way (the tensor cores truncate
the float32 they are given, and their adds round toward zero) is a bias that
grows with K instead of averaging out. ``benchmarks/tf32_accuracy.py`` records
the shape suite this way; the GPU tests ask :func:`error_rows` through
:func:`measure.in_tf32_process`.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from . import accuracy, measure

INPUTS = ("normal", "positive")


def error_row(batch, m: int, n: int, k: int, transposed: bool, inputs: str, seed: int) -> dict:
    """One case's errors (batched products: entry 0; ``transposed``: B a
    transposed view, x @ W.T), and the kernel matmul runs for it."""
    import mlx_sgemm

    batch = tuple(batch)
    rng = np.random.default_rng(seed)
    pairs = [accuracy.emulation_inputs(inputs, m, n, k, rng) for _ in range(int(np.prod(batch)))]
    a = mx.array(np.stack([x for x, _ in pairs]).reshape(*batch, m, k))
    w = np.stack([y for _, y in pairs]).reshape(*batch, k, n)
    b = mx.swapaxes(mx.array(np.ascontiguousarray(np.swapaxes(w, -1, -2))), -1, -2) if transposed else mx.array(w)
    first = (lambda x: x[0]) if batch else (lambda x: x)  # noqa: E731
    reference = measure.SampledReference(first(a), first(b), seed)
    ours = reference.error(first(mlx_sgemm.matmul(a, b, precision="tf32")))
    cublas = reference.error(first(mx.matmul(a, b)))
    chosen = mlx_sgemm.explain(a, b, precision="tf32")
    return {"batch": "x".join(map(str, batch)), "M": m, "N": n, "K": k, "b_transposed_view": transposed,
            "inputs": inputs, "kernel": chosen.kernel, "k_splits": chosen.k_splits,
            "error": ours, "mx_matmul_error": cublas, "error_over_cublas": ours / cublas if cublas else float("inf")}


def each_error_row(cases, inputs=INPUTS):
    """:func:`error_row` of each (batch, M, N, K, transposed) case on each kind of
    ``inputs`` (seeded by the case's place), one at a time; mx.matmul is at
    whatever precision this process's MLX_ENABLE_TF32 gives it."""
    for kind in inputs:
        for seed, (batch, m, n, k, transposed) in enumerate(cases):
            yield error_row(batch, m, n, k, transposed, kind, seed)


def error_rows(cases, inputs=INPUTS) -> list[dict]:
    """:func:`each_error_row`, as a list."""
    return list(each_error_row(cases, inputs))
