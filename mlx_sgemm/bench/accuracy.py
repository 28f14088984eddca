"""How far a product is from the exact one.

The error measure is ``||C - ref||_F / || |A| |B| ||_F`` with ``ref = A @ B`` in
float64. Dividing by the product of the absolute values (rather than by
``||ref||``) keeps the measure meaningful when long dot products cancel: any
float32 summation order lands near 1e-7, TF32 near 1e-4, an indexing bug near 1.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np


def reference(a, b) -> np.ndarray:
    """``a @ b`` in float64 with matmul's broadcasting."""
    return np.matmul(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def relative_error(c, a, b) -> float:
    """The error of ``c`` as a result of ``a @ b``; NaN anywhere in ``c`` gives inf."""
    c = np.asarray(c, dtype=np.float64)
    a64 = np.asarray(a, dtype=np.float64)
    b64 = np.asarray(b, dtype=np.float64)
    ref = np.matmul(a64, b64)
    if c.shape != ref.shape:
        raise ValueError(f"result shape {c.shape} != expected {ref.shape}")
    if not np.all(np.isfinite(c)):
        return float("inf")
    scale = np.linalg.norm(np.matmul(np.abs(a64), np.abs(b64)))
    diff = np.linalg.norm(c - ref)
    return float(diff / scale) if scale > 0 else float(diff)


def random_operands(shape_a, shape_b, seed=None):
    """Fresh random non-zero float32 operands (normal, shifted away from 0)."""
    rng = np.random.default_rng(seed)

    def draw(shape):
        x = rng.standard_normal(shape).astype(np.float32)
        return mx.array(np.where(np.abs(x) < 1e-3, 1e-3, x))

    return draw(shape_a), draw(shape_b)
